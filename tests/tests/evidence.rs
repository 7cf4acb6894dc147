//! Evidence users and tools can check (issue 7): `cpals check --witness` writes SV-COMP
//! witnesses (format 2.0) that pass the schema in `tests/witness-schema`, and describe the
//! report's counterexample (its inputs, in order, and the violation) or its invariants;
//! `cpals check --harness` writes a C file that, compiled with the program by `cc` and run,
//! reaches the violated property; `cpals replay` does the same; an unknown verdict gives no
//! witness.

use std::path::{Path, PathBuf};
use std::process::Command;

use cpals_tests::{cpals_bin, fixtures, parse_fixture, root, temp_dir, validate_witnesses, yaml_as_json};
use serde_json::Value;

struct Run {
    code: Option<i32>,
    report: Value,
    stderr: String,
}

/// `cpals check --json` with a witness and a harness requested.
fn check(file: &Path, extra: &[&str], witness: &Path, harness: &Path) -> Run {
    let out = Command::new(cpals_bin())
        .arg("check")
        .arg("--json")
        .args(extra)
        .arg("--witness")
        .arg(witness)
        .arg("--harness")
        .arg(harness)
        .arg(file)
        .output()
        .expect("cpals runs");
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{}: no JSON ({e}): {}", file.display(), String::from_utf8_lossy(&out.stdout)));
    Run { code: out.status.code(), report, stderr: String::from_utf8_lossy(&out.stderr).into_owned() }
}

fn fixture(rel: &str) -> PathBuf {
    root().join("fixtures").join(rel)
}

/// The inputs of the first violated property's trace, as `(function, value)`.
fn trace_inputs(report: &Value) -> Vec<(String, String)> {
    let prop = report["properties"].as_array().unwrap().iter().find(|p| p["verdict"] == "false").expect("a violated property");
    prop["trace"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s.get("input").map(|i| (i["source"].as_str().unwrap().to_string(), i["value"].as_str().unwrap().to_string())))
        .collect()
}

fn waypoints(entry: &Value) -> Vec<Value> {
    entry["content"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|seg| seg["segment"].as_array().unwrap().iter().map(|w| w["waypoint"].clone()))
        .collect()
}

#[test]
fn violation_witness_is_the_counterexample_and_passes_the_schema() {
    let dir = temp_dir("witness-violation");
    let (w, h) = (dir.join("w.yml"), dir.join("h.c"));
    let file = fixture("lsp/loops.c");
    let run = check(&file, &[], &w, &h);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    validate_witnesses(std::slice::from_ref(&w)).unwrap_or_else(|e| panic!("schema validation failed: {e}"));
    let doc = yaml_as_json(&w);
    let entries = doc.as_array().unwrap();
    assert_eq!(entries.len(), 1, "one violated property, one violation_sequence");
    let entry = &entries[0];
    assert_eq!(entry["entry_type"], "violation_sequence");
    let task = &entry["metadata"]["task"];
    assert_eq!(task["input_files"][0], file.display().to_string());
    assert_eq!(task["data_model"], "LP64");
    let hash = task["input_file_hashes"][file.display().to_string()].as_str().unwrap();
    assert_eq!(hash.len(), 64);
    assert_eq!(task["specification"], "CHECK( init(main()), LTL(G ! call(__assert_fail())) )");

    // The waypoints: the trace's inputs as `\result == v` in order, then the target.
    let wps = waypoints(entry);
    let returns: Vec<String> =
        wps.iter().filter(|w| w["type"] == "function_return").map(|w| w["constraint"]["value"].as_str().unwrap().to_string()).collect();
    let inputs = trace_inputs(&run.report);
    assert!(!inputs.is_empty());
    assert_eq!(returns, inputs.iter().map(|(_, v)| format!("\\result == {v}")).collect::<Vec<_>>());
    // The input is read on line 12 (`  int n = __VERIFIER_nondet_int();`): the waypoint is at
    // the `)` that closes the call, column 33.
    let first = wps.iter().find(|w| w["type"] == "function_return").unwrap();
    assert_eq!((first["location"]["line"].as_u64(), first["location"]["column"].as_u64()), (Some(12), Some(33)));
    let target = wps.last().unwrap();
    assert_eq!(target["type"], "target");
    let violated = run.report["properties"].as_array().unwrap().iter().find(|p| p["verdict"] == "false").unwrap();
    assert_eq!(target["location"]["line"], violated["line"]);
    assert_eq!(target["location"]["column"], violated["column"]);
    // The branch of `if (n > 0 && n < 5)` is a conjunction: no waypoint for its parts; the
    // `if (mode == 2)` is decided by a whole condition and is not taken.
    let branches: Vec<(u64, String)> = wps
        .iter()
        .filter(|w| w["type"] == "branching")
        .map(|w| (w["location"]["line"].as_u64().unwrap(), w["constraint"]["value"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(branches, vec![(20, "false".to_string())]);
}

#[test]
fn correctness_witness_holds_the_reports_invariants() {
    let dir = temp_dir("witness-correctness");
    let (w, h) = (dir.join("w.yml"), dir.join("h.c"));
    let file = fixture("seed001/s3_loop100.c");
    // The program reads no input: its only execution, run to its end, proves it without an
    // invariant. That witness is valid too (an empty invariant set); the analyses' invariants
    // are what the rest of the test is about.
    let run = check(&file, &[], &w, &h);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.report["semantics"].to_string().contains("its only execution"), "{}", run.report["semantics"]);
    validate_witnesses(std::slice::from_ref(&w)).unwrap_or_else(|e| panic!("schema validation failed: {e}"));
    let run = check(&file, &["--without", "concrete"], &w, &h);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("no harness written"), "{}", run.stderr);
    assert!(!h.exists(), "no harness for a proof");
    validate_witnesses(std::slice::from_ref(&w)).unwrap_or_else(|e| panic!("schema validation failed: {e}"));
    let doc = yaml_as_json(&w);
    let report_invs: Vec<(u64, String)> = run.report["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["line"].as_u64().unwrap(), i["expr"].as_str().unwrap().to_string()))
        .collect();
    assert!(!report_invs.is_empty(), "the fixture has a loop invariant");
    let entry = &doc.as_array().unwrap()[0];
    assert_eq!(entry["entry_type"], "invariant_set");
    let witness_invs: Vec<(u64, String)> = entry["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert_eq!(c["invariant"]["type"], "loop_invariant");
            assert_eq!(c["invariant"]["format"], "c_expression");
            (c["invariant"]["location"]["line"].as_u64().unwrap(), c["invariant"]["value"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(witness_invs, report_invs);
}

#[test]
fn unknown_verdict_writes_no_witness_and_no_harness() {
    let dir = temp_dir("witness-unknown");
    let (w, h) = (dir.join("w.yml"), dir.join("h.c"));
    let run = check(&fixture("constructs/floats.c"), &[], &w, &h);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(!w.exists() && !h.exists());
    assert!(run.stderr.contains("no witness written: the verdict is unknown"), "{}", run.stderr);
}

#[test]
fn a_counterexample_that_reads_an_uninitialised_local_shows_it_and_gets_no_harness() {
    // The violation depends on the indeterminate value of `u`, which no harness can choose:
    // the trace shows the declaration as the input it is, and no harness that would not
    // replay is written.
    let dir = temp_dir("harness-uninitialised");
    let file = dir.join("uninit.c");
    std::fs::write(
        &file,
        "#include <assert.h>\nint main(void) {\n  int u;\n  int k = 0;\n  if (u < 0 || u > 10)\n    return 0;\n  k = u + 1;\n  assert(k != 11);\n  return 0;\n}\n",
    )
    .unwrap();
    let (w, h) = (dir.join("w.yml"), dir.join("h.c"));
    let run = check(&file, &[], &w, &h);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(trace_inputs(&run.report), vec![("uninitialised".to_string(), "10".to_string())]);
    let prop = run.report["properties"].as_array().unwrap().iter().find(|p| p["verdict"] == "false").unwrap();
    let first = &prop["trace"][0];
    assert_eq!((first["line"].as_u64(), first["text"].as_str()), (Some(3), Some("u = <uninitialised>")), "{first}");
    assert!(!h.exists(), "a harness was written for a counterexample it cannot replay");
    assert!(run.stderr.contains("no harness written: the counterexample reads uninitialised at line 3"), "{}", run.stderr);
}

#[test]
fn the_schema_rejects_what_the_format_forbids() {
    // A witness the validator must refuse, so that passing it means something: a target
    // waypoint with a constraint, a bad hash and a follow waypoint that is not last.
    let dir = temp_dir("witness-bad");
    let bad = dir.join("bad.yml");
    std::fs::write(
        &bad,
        r#"- entry_type: violation_sequence
  metadata:
    format_version: "2.0"
    uuid: "9d3c4b0e-1f2a-4c3b-8d4e-5f6a7b8c9d0e"
    creation_time: "2026-11-21T10:00:00Z"
    producer: { name: x, version: "1" }
    task:
      input_files: [a.c]
      input_file_hashes: { a.c: "12" }
      specification: "CHECK( init(main()), LTL(G ! call(reach_error())) )"
      data_model: LP64
      language: C
  content:
    - segment:
        - waypoint: { type: target, action: follow, constraint: { value: "1" }, location: { file_name: a.c, line: 3 } }
"#,
    )
    .unwrap();
    let err = validate_witnesses(&[bad]).expect_err("an invalid witness is refused");
    assert!(err.contains("invalid"), "{err}");
}

/// Every violated property of every fixture: the harness, compiled with the program by `cc`
/// (its `ERROR:` labels made observable) and run, reaches the violation; for `assert`
/// properties it reports the assertion's line.
#[test]
fn every_fixture_counterexample_replays_natively() {
    let dir = temp_dir("harness-fixtures");
    let mut failures = Vec::new();
    let mut replayed = 0;
    for path in fixtures() {
        let f = parse_fixture(&path);
        if !f.expectations.iter().any(|e| e.verdicts.values().any(|v| v == "UNSAFE")) {
            continue;
        }
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let (w, h) = (dir.join(format!("{name}.yml")), dir.join(format!("{name}.harness.c")));
        let analysis = f.analyses.first().cloned().unwrap_or_else(|| "value".into());
        let mut extra: Vec<&str> = vec!["--analysis", &analysis];
        extra.extend(f.args.iter().map(String::as_str));
        let run = check(&path, &extra, &w, &h);
        if run.report["verdict"] != "false" {
            continue;
        }
        if !h.exists() && !w.exists() && run.stderr.contains("depends on the argument") {
            // An entry's arguments (an uncalled function verified on its own) come from no
            // input function: no harness or witness can supply them.
            continue;
        }
        if let Err(e) = validate_witnesses(std::slice::from_ref(&w)) {
            failures.push(format!("{name}: witness: {e}"));
        }
        if !h.exists() {
            failures.push(format!("{name}: no harness: {}", run.stderr));
            continue;
        }
        let ilp32 = f.args.windows(2).any(|a| a == ["--data-model", "ILP32"]);
        match compile_and_run(&path, &h, ilp32, &dir.join(&name)) {
            Ok(reached) => {
                replayed += 1;
                let prop = run.report["properties"].as_array().unwrap().iter().find(|p| p["verdict"] == "false").unwrap();
                if prop["kind"] == "assert" && !reached.contains(&format!(":{}:", prop["line"])) {
                    failures.push(format!("{name}: the replay reached `{reached}`, not line {}", prop["line"]));
                }
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
        // `cpals replay` agrees.
        let mut cmd = Command::new(cpals_bin());
        cmd.arg("replay").arg(&path).arg(&h);
        if ilp32 {
            cmd.args(["--data-model", "ILP32"]);
        }
        let out = cmd.output().expect("cpals replay runs");
        if out.status.code() != Some(1) || !String::from_utf8_lossy(&out.stdout).starts_with("reached: ") {
            failures.push(format!(
                "{name}: cpals replay: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(replayed >= 5, "only {replayed} fixtures have a violation to replay");
}

/// Compiles the program (with `ERROR:` labels calling the harness) and the harness with `cc`
/// and runs the result; `Ok` with the harness's report line when it reached a violation.
fn compile_and_run(program: &Path, harness: &Path, ilp32: bool, work: &Path) -> Result<String, String> {
    std::fs::create_dir_all(work).unwrap();
    let text = std::fs::read_to_string(program).unwrap();
    let copy = work.join(program.file_name().unwrap());
    std::fs::write(&copy, analysis_engine::harness::instrument_targets(&text, analysis_engine::harness::Targets::ALL)).unwrap();
    let exe = work.join("replay");
    let mut cc = Command::new("cc");
    cc.args(["-w", "-std=gnu11", "-Wl,--wrap=__assert_fail"]).arg(&copy).arg(harness).arg("-o").arg(&exe);
    // A harness that passes a command line says so in its header (its `__wrap_main` calls the
    // program's `main`).
    if std::fs::read_to_string(harness).unwrap_or_default().contains("add -Wl,--wrap=main") {
        cc.arg("-Wl,--wrap=main");
    }
    if ilp32 {
        cc.arg("-m32");
    }
    let out = cc.output().map_err(|e| format!("cc: {e}"))?;
    if !out.status.success() {
        return Err(format!("cc failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let out = Command::new(&exe).output().map_err(|e| format!("run: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(86) => Ok(stderr.lines().find(|l| l.starts_with("cpals-harness: reached")).unwrap_or_default().to_string()),
        c => Err(format!("the harness run ended with {c:?}: {stderr}")),
    }
}
