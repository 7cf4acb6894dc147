//! Snapshots (insta, `tests/tests/snapshots/`) of what `cpals check` prints for representative
//! fixtures: the JSON report (`--json`, timing redacted) and counterexample traces (`--trace`),
//! so that any change to verdicts, traces, invariants or statistics shows as a reviewed diff
//! (`cargo insta review`, or `INSTA_UPDATE=always cargo test -p cpals-tests --test snapshots`).

use std::process::Command;

use cpals_tests::{cpals_bin, root};
use serde_json::Value;

/// `cpals check ARGS… fixtures/FIXTURE` run from the workspace root (so that the report names
/// the file as `fixtures/…` on every machine); (exit code, stdout).
fn check(fixture: &str, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(cpals_bin())
        .arg("check")
        .args(args)
        .arg(format!("fixtures/{fixture}"))
        .current_dir(root())
        .output()
        .expect("cpals runs");
    (out.status.code(), String::from_utf8(out.stdout).expect("UTF-8 output"))
}

/// Replaces every value of a field that measures time (`time_ms`: every `*_ms`) by a placeholder.
fn redact_times(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if k.ends_with("_ms") {
                    *x = Value::String("[redacted]".into());
                } else {
                    redact_times(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(redact_times),
        _ => {}
    }
}

fn json_report(fixture: &str, want_code: i32) -> String {
    // No native runs: the fuzzing phase's number of runs depends on the time it gets.
    let (code, stdout) = check(fixture, &["--json", "--native", "off"]);
    assert_eq!(code, Some(want_code), "exit code of cpals check --json {fixture}: {stdout}");
    let mut v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not one JSON object ({e}): {stdout}"));
    assert!(v["stats"]["time_ms"].is_u64(), "the report has its time: {stdout}");
    redact_times(&mut v);
    serde_json::to_string_pretty(&v).expect("JSON")
}

/// A proof, a violation with its 41-step trace, a loop invariant and dead code.
#[test]
fn json_report_of_lsp_loops() {
    insta::assert_snapshot!("json_lsp_loops", json_report("lsp/loops.c", 1));
}

/// seed 000 Fig. 1 (the harness form): a proof and the invariant the value analysis found.
#[test]
fn json_report_of_seed000_fig1_harness() {
    insta::assert_snapshot!("json_seed000_fig1_harness", json_report("seed000/fig1_harness.c", 0));
}

/// A counterexample through recursive calls (the summary analysis), as `--trace` prints it.
#[test]
fn trace_of_seed002_rec_sum_unsafe() {
    let (code, stdout) = check("seed002/rec_sum_unsafe.c", &["--trace"]);
    assert_eq!(code, Some(1), "a violation: {stdout}");
    insta::assert_snapshot!("trace_seed002_rec_sum_unsafe", stdout);
}

/// Two proofs and a counterexample through calls of `__VERIFIER_assert`, as `--trace` prints
/// them.
#[test]
fn trace_of_constructs_helpers() {
    let (code, stdout) = check("constructs/helpers.c", &["--trace"]);
    assert_eq!(code, Some(1), "a violation: {stdout}");
    insta::assert_snapshot!("trace_constructs_helpers", stdout);
}
