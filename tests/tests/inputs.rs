//! Standard input and the command line as inputs of the program (issue 23): a counterexample
//! through `scanf`, `fgets` or `getchar` says what to type (`stdin: "5\n7\n"` in the message,
//! `stdin` in the JSON), one through `main`'s `argv` the command line (`argv[1] = "48"`, `argv`
//! in the JSON), and the harness `check --harness` writes feeds that text to the program or
//! passes that command line to `main`, so that `cpals replay` (a native run in the sandbox)
//! reaches the violation.

use std::path::Path;
use std::process::Command;

use cpals_tests::{cpals_bin, root, temp_dir};
use serde_json::Value;

/// Checks `fixtures/inputs/NAME.c`: the violated assertion at `line`, what it reads from
/// standard input (as `check --json` gives it), and that the harness replays it natively.
fn violated_with_input(name: &str, line: u64) -> String {
    let file = root().join("fixtures/inputs").join(format!("{name}.c"));
    let dir = temp_dir(&format!("inputs-{name}"));
    let harness = dir.join("harness.c");
    let out = Command::new(cpals_bin())
        .args(["check", "--json", "--timeout", "120", "--harness"])
        .arg(&harness)
        .arg(&file)
        .output()
        .expect("cpals runs");
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let props = report["properties"].as_array().expect("properties");
    let prop =
        props.iter().find(|p| p["line"] == line && p["kind"] != "out_of_bounds").unwrap_or_else(|| panic!("no property at line {line}"));
    assert_eq!(prop["verdict"], "false", "{name}: {prop}");
    let stdin = prop["stdin"].as_str().unwrap_or_else(|| panic!("{name}: no standard input shown: {prop}")).to_string();
    // The text output says it the way a user types it.
    let text = Command::new(cpals_bin()).args(["check", "--timeout", "120"]).arg(&file).output().expect("cpals runs");
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    if stdin.chars().all(|c| c == '\n' || (' '..='~').contains(&c)) {
        let quoted = format!("{:?}", stdin);
        assert!(text.contains(&format!("stdin: {}", quoted)), "{name}: {quoted} not in\n{text}");
    } else {
        assert!(text.contains("stdin: \""), "{name}: no standard input in\n{text}");
    }
    replays(&file, &harness, "fmemopen");
    stdin
}

/// The properties `check --json` reports for `source`, written to `dir/name`.
fn properties_of(dir: &Path, name: &str, source: &str) -> Vec<Value> {
    let file = dir.join(name);
    std::fs::write(&file, source).unwrap();
    let out = Command::new(cpals_bin()).args(["check", "--json", "--timeout", "60"]).arg(&file).output().expect("cpals runs");
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    report["properties"].as_array().expect("properties").clone()
}

/// Replays `harness` (which must contain `feature`: what feeds the input) against `file`.
fn replays(file: &Path, harness: &Path, feature: &str) {
    let h = std::fs::read_to_string(harness).expect("harness written");
    assert!(h.contains(feature), "the harness supplies the input ({feature}):\n{h}");
    let out = Command::new(cpals_bin()).arg("replay").arg(file).arg(harness).output().expect("cpals replay runs");
    assert_eq!(out.status.code(), Some(1), "replay reaches the violation: {}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn scanf_counterexample_is_the_line_to_type() {
    assert_eq!(violated_with_input("scanf", 15), "5\n7\n");
}

#[test]
fn getchar_counterexample_is_the_shortest_input() {
    assert_eq!(violated_with_input("getchar", 18), "++++++++");
}

#[test]
fn fgets_counterexample_starts_with_the_parsed_line() {
    let stdin = violated_with_input("fgets", 15);
    assert!(stdin.starts_with("ok!"), "{stdin:?}");
}

#[test]
fn fread_counterexample_is_the_bytes_read() {
    assert_eq!(violated_with_input("fread", 14), "abc");
}

#[test]
fn fread_into_objects_that_are_not_bytes_is_unsupported() {
    // The typed memory could not follow bytes into an `int`, and the stream would not be exact.
    let props = properties_of(
        &temp_dir("inputs-fread-int"),
        "i.c",
        "#include <assert.h>\n#include <stdio.h>\nint main(void) {\n  int v[2] = {0, 0};\n  \
         fread(v, sizeof v[0], 2, stdin);\n  assert(v[0] != 7);\n  return 0;\n}\n",
    );
    let p = props.iter().find(|p| p["line"] == 6 && p["kind"] != "out_of_bounds").expect("the assertion");
    assert_eq!(p["verdict"], "unknown", "{p}");
}

#[test]
fn scanf_of_floats_stays_unknown_and_other_streams_are_external() {
    let props = properties_of(
        &temp_dir("inputs-float"),
        "f.c",
        "#include <assert.h>\n#include <stdio.h>\nint main(void) {\n  double d = 0; int x = 0;\n  scanf(\"%lf\", &d);\n  if (d > 1.0) assert(0);\n  \
         FILE *f = stdin;\n  fscanf(f, \"%d\", &x);\n  if (x == 3) assert(0);\n  return 0;\n}\n",
    );
    for p in props.iter().filter(|p| p["kind"] != "out_of_bounds") {
        assert_eq!(p["verdict"], "unknown", "{p}");
    }
}

#[test]
fn standard_input_read_where_the_models_do_not_see_it_is_not_modelled() {
    // `ungetc` puts a byte back: the models' view of the stream would be wrong, so the `getchar`
    // after it is an external and the (impossible) violation is never reported.
    let dir = temp_dir("inputs-ungetc");
    let props = properties_of(
        &dir,
        "u.c",
        "#include <assert.h>\n#include <stdio.h>\nint main(void) {\n  int c = getchar();\n  if (c == EOF) return 0;\n  \
         ungetc('x', stdin);\n  assert(getchar() == 'x');\n  return 0;\n}\n",
    );
    let p = props.iter().find(|p| p["line"] == 7).expect("the assertion");
    assert_eq!(p["verdict"], "unknown", "{p}");
    // `puts` does not touch standard input: `scanf` stays modelled.
    let props = properties_of(
        &dir,
        "f.c",
        "#include <assert.h>\n#include <stdio.h>\nint main(void) {\n  unsigned u = 0;\n  puts(\"hex?\");\n  \
         if (scanf(\"%x\", &u) == 1)\n    assert(u != 0xbeef);\n  return 0;\n}\n",
    );
    let p = props.iter().find(|p| p["line"] == 7).expect("the assertion");
    assert_eq!(p["verdict"], "false", "{p}");
    assert_eq!(p["stdin"], "beef\n", "{p}");
}

/// Checks `fixtures/inputs/NAME.c`: the properties at `bounded` hold for the modelled command
/// lines, which is `unknown` with the bounds as its reason (longer ones are not modelled), the
/// one at `line` violated with the command line `argv` (as `check --json` gives it and as the
/// text says it), the bounds stated, and that the harness passes that command line natively.
fn violated_with_args(name: &str, bounded: &[u64], line: u64, argv: &[&str]) {
    let file = root().join("fixtures/inputs").join(format!("{name}.c"));
    let dir = temp_dir(&format!("inputs-{name}"));
    let harness = dir.join("harness.c");
    let out = Command::new(cpals_bin())
        .args(["check", "--json", "--timeout", "120", "--harness"])
        .arg(&harness)
        .arg(&file)
        .output()
        .expect("cpals runs");
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let props = report["properties"].as_array().expect("properties");
    let at = |line: u64| props.iter().find(|p| p["line"] == line && p["kind"] != "out_of_bounds").expect("a property");
    for &l in bounded {
        assert_eq!(at(l)["verdict"], "unknown", "{name}: {}", at(l));
        let reason = at(l)["reason"].as_str().unwrap_or("").to_string();
        assert!(reason.contains("holds for command lines of at most 2 arguments of at most 8 bytes"), "{name}: {}", at(l));
    }
    let prop = at(line);
    assert_eq!(prop["verdict"], "false", "{name}: {prop}");
    assert_eq!(prop["argv"], serde_json::json!(argv), "{name}: {prop}");
    assert!(prop.get("stdin").is_none(), "{prop}");
    let notes = report["notes"].as_array().expect("notes");
    assert!(notes.iter().any(|n| n["message"].as_str().unwrap_or("").contains("at most 2 arguments")), "the bounds are stated: {notes:?}");
    let text = Command::new(cpals_bin()).args(["check", "--timeout", "120"]).arg(&file).output().expect("cpals runs");
    let shown: Vec<String> = argv.iter().enumerate().map(|(k, a)| format!("argv[{k}] = {a:?}")).collect();
    let shown = format!("argc = {}, {}", argv.len(), shown.join(", "));
    assert!(String::from_utf8_lossy(&text.stdout).contains(&shown), "{name}: {shown} not in {:?}", text);
    assert!(
        String::from_utf8_lossy(&text.stderr).contains("what holds for such command lines is reported `unknown`, not proved"),
        "{text:?}"
    );
    replays(&file, &harness, "__wrap_main");
}

#[test]
fn argv_counterexample_is_the_command_line_to_type() {
    // argc >= 1 holds for every modelled command line; the shortest strings: the program's
    // name empty, the argument exactly "48".
    violated_with_args("argv", &[20], 23, &["", "48"]);
}

#[test]
fn sscanf_of_the_command_line() {
    violated_with_args("sscanf", &[19, 20], 22, &["", "ok"]);
}

#[test]
fn main_without_parameters_has_no_command_line() {
    let props = properties_of(
        &temp_dir("inputs-noargv"),
        "m.c",
        "#include <assert.h>\nint __VERIFIER_nondet_int(void);\nint main(void) {\n  int x = __VERIFIER_nondet_int();\n  assert(x != 3);\n  return 0;\n}\n",
    );
    let p = props.iter().find(|p| p["line"] == 5).expect("the assertion");
    assert_eq!(p["verdict"], "false", "{p}");
    assert!(p.get("argv").is_none(), "{p}");
}

#[test]
fn sscanf_scan_set_of_the_command_line() {
    // `%2[a-z]` takes at most two lower-case letters: the shortest command line is "hi".
    let props = properties_of(
        &temp_dir("inputs-scanset"),
        "set.c",
        "#include <assert.h>\n#include <stdio.h>\nint main(int argc, char **argv) {\n  char w[4] = {0};\n  \
         if (argc > 1 && sscanf(argv[1], \"%2[a-z]\", w) == 1 && w[0] == 'h')\n    assert(w[1] != 'i');\n  return 0;\n}\n",
    );
    let p = props.iter().find(|p| p["line"] == 6 && p["kind"] != "out_of_bounds").expect("the assertion");
    assert_eq!(p["verdict"], "false", "{p}");
    assert_eq!(p["argv"], serde_json::json!(["", "hi"]), "{p}");
}

#[test]
fn argv_parsed_with_atoi_gives_the_command_line_the_fuzzer_found() {
    // `percent >= 0` holds for every modelled command line; "100" is the value the clamping
    // lets through (the fuzzer tries the program's constants in decimal, the native replay
    // confirms it).
    violated_with_args("argv_atoi", &[22], 23, &["", "100"]);
}
