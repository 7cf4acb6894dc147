//! `cpals check --format sarif` (issue 26, build item 5): one SARIF 2.1.0 log for several
//! files, validated against the OASIS schema as published in the npm package
//! `@microsoft/jest-sarif` 1.0.0-beta.0 (`lib/schemas/sarif-2.1.0-rtm.5.json`, fetched by
//! `.ci/run` into `~/.cache/cpals/sarif`, or `CPALS_SARIF_SCHEMA`), and read back as GitHub
//! code scanning would: rule, level, place, and the counterexample as a code flow.

use std::path::PathBuf;
use std::process::Command;

use cpals_tests::{cpals_bin, python_with, root, temp_dir};
use serde_json::Value;

fn schema() -> PathBuf {
    let path = std::env::var_os("CPALS_SARIF_SCHEMA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/cpals/sarif/sarif-2.1.0-rtm.5.json"));
    assert!(
        path.is_file(),
        "the SARIF schema is missing at {}: run .ci/run, or `npm pack @microsoft/jest-sarif@1.0.0-beta.0` and extract \
         package/lib/schemas/sarif-2.1.0-rtm.5.json there (or set CPALS_SARIF_SCHEMA)",
        path.display()
    );
    path
}

const VALIDATE: &str = r#"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1], encoding="utf-8"))
log = json.load(open(sys.argv[2], encoding="utf-8"))
cls = jsonschema.validators.validator_for(schema)
cls.check_schema(schema)
errors = sorted(cls(schema).iter_errors(log), key=lambda e: list(e.path))
for e in errors[:10]:
    print("/".join(map(str, e.path)), ":", e.message)
sys.exit(1 if errors else 0)
"#;

#[test]
fn sarif_for_several_files_validates_and_carries_the_counterexample() {
    // A file with a proved and a violated assertion, and one whose property is proved.
    let violated = root().join("fixtures/lsp/loops.c");
    let proved = root().join("fixtures/seed000/fig1_harness.c");
    let out = Command::new(cpals_bin())
        .args(["check", "--format", "sarif", "--timeout", "60"])
        .arg(&violated)
        .arg(&proved)
        .output()
        .expect("cpals runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "a violation in one of the files: exit 1\n{}", String::from_utf8_lossy(&out.stderr));
    let log: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));

    let dir = temp_dir("sarif");
    let file = dir.join("cpals.sarif");
    std::fs::write(&file, stdout.as_bytes()).unwrap();
    let v = Command::new(python_with(&["jsonschema"])).args(["-c", VALIDATE]).arg(schema()).arg(&file).output().unwrap();
    assert!(v.status.success(), "the log does not validate:\n{}{}", String::from_utf8_lossy(&v.stdout), String::from_utf8_lossy(&v.stderr));

    let run = &log["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "cpals");
    let uris: Vec<&str> = run["artifacts"].as_array().unwrap().iter().map(|a| a["location"]["uri"].as_str().unwrap()).collect();
    assert_eq!(uris.len(), 2, "{uris:?}");
    assert!(uris[0].ends_with("fixtures/lsp/loops.c") && uris[1].ends_with("fixtures/seed000/fig1_harness.c"), "{uris:?}");
    let results = run["results"].as_array().unwrap();
    let in_file = |k: usize| results.iter().filter(move |r| r["locations"][0]["physicalLocation"]["artifactLocation"]["index"] == k);

    // The violation of the first file: an error with its place and a code flow ending there.
    let fail: Vec<&Value> = in_file(0).filter(|r| r["kind"] == "fail").collect();
    assert_eq!(fail.len(), 1, "{results:#?}");
    let fail = fail[0];
    assert_eq!(fail["level"], "error");
    assert!(["assert", "unreach-call"].contains(&fail["ruleId"].as_str().unwrap()), "{fail}");
    let line = fail["locations"][0]["physicalLocation"]["region"]["startLine"].as_u64().unwrap();
    let steps = fail["codeFlows"][0]["threadFlows"][0]["locations"].as_array().unwrap();
    assert!(steps.len() >= 2, "{fail}");
    let last = &steps.last().unwrap()["location"]["physicalLocation"]["region"]["startLine"];
    assert_eq!(last.as_u64(), Some(line), "the code flow ends at the violation");
    assert!(steps.iter().any(|s| s.get("state").is_some()), "steps carry the values: {steps:#?}");
    // The same run as text says the same.
    let text = Command::new(cpals_bin()).args(["check", "--timeout", "60"]).arg(&violated).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&format!(":{line}:")) && text.contains(": false: "), "{text}");

    assert!(in_file(0).any(|r| r["kind"] == "pass"), "the proved assertion is a result too: {results:#?}");
    // The second file: proved, nothing fails.
    assert!(in_file(1).all(|r| r["kind"] == "pass" && r["level"] == "none"), "{results:#?}");
    assert!(in_file(1).count() >= 1 && results.iter().all(|r| r["message"]["text"].as_str().is_some_and(|m| !m.is_empty())));
}
