//! The `cpals` binary as users and scripts run it: output format, JSON, exit codes, and bad
//! input (binary files, truncated C, huge or deeply nested input, missing files; issue 24's
//! timeouts out of range, NUL bytes, FIFOs and devices, included files that are not C, evidence
//! that cannot be written, script text in the HTML report), which must end with a clear error
//! or `unknown`, never a crash or a hang.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cpals_tests::{cpals_bin, root, temp_dir, SCRIPT_STRINGS_PROGRAM};

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `cpals` with a wall-clock limit; a run over the limit fails the test as a hang.
fn cpals(args: &[&str], limit: Duration) -> Outcome {
    let mut child = Command::new(cpals_bin()).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("cpals runs");
    let started = Instant::now();
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("cpals {:?} did not finish within {:?}", args, limit);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Outcome { code: status.code(), stdout: reader.join().unwrap_or_default(), stderr: err_reader.join().unwrap_or_default() }
}

fn fixture(rel: &str) -> String {
    root().join("fixtures").join(rel).display().to_string()
}

fn temp_file(name: &str, bytes: &[u8]) -> String {
    let dir = std::env::temp_dir().join(format!("cpals-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write temp file");
    p.display().to_string()
}

#[test]
fn text_output_has_one_line_per_property_and_the_result_line() {
    let o = cpals(&["check", &fixture("constructs/helpers.c")], Duration::from_secs(60));
    assert_eq!(o.code, Some(1), "a violation exits with 1: {}", o.stdout);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.last(), Some(&"Verification result: FALSE(unreach-call)"));
    let props: Vec<&&str> = lines.iter().filter(|l| l.contains("helpers.c:")).collect();
    assert_eq!(props.len(), 3, "{}", o.stdout);
    assert!(props[2].contains(":15:3: false:"), "{}", props[2]);
    assert!(props[1].contains(": true:"), "{}", props[1]);
}

#[test]
fn json_report_follows_the_interface() {
    let o = cpals(&["check", "--json", &fixture("constructs/externals.c")], Duration::from_secs(60));
    let v: serde_json::Value = serde_json::from_str(&o.stdout).expect("one JSON object");
    assert_eq!(v["verdict"], "false");
    let p = &v["properties"][0];
    assert_eq!(p["kind"], "assert");
    assert_eq!(p["verdict"], "false");
    assert_eq!(p["line"], 16);
    let trace = p["trace"].as_array().expect("a trace");
    let input = trace.iter().find(|s| s["kind"] == "input" && s["values"].get("n").is_some()).expect("an input step");
    assert_eq!(input["values"]["n"], "3", "the input function's value");
    let unknown = v["properties"].as_array().expect("properties").iter().find(|q| q["line"] == 19).expect("the third assertion");
    assert_eq!(unknown["verdict"], "unknown", "it fails only for some results of an unmodelled function");
    assert!(unknown["reason"].as_str().is_some_and(|r| r.contains("`rand`")), "{}", unknown);
    assert!(v["stats"]["time_ms"].is_number());
}

/// A list built with `malloc` and never checked for null: by default a failed allocation
/// makes the read through it invalid (a run cpals does not confirm: `unknown`); with
/// `--assume-allocations-succeed` the program is proved, and the report says what was assumed.
/// A real bug stays a violation either way.
#[test]
fn allocations_assumed_to_succeed_are_stated() {
    let program = b"#include <stdlib.h>\n#include <assert.h>\nstruct node { int v; struct node *next; };\n\
int main(void) {\n  struct node *head = 0;\n  for (int i = 0; i < 3; i++) {\n    struct node *n = malloc(sizeof *n);\n\
    n->v = i;\n    n->next = head;\n    head = n;\n  }\n  assert(head->v == 2);\n  return 0;\n}\n";
    let file = temp_file("unchecked_malloc.c", program);
    let by_default = cpals(&["check", "--json", "--timeout", "30", &file], Duration::from_secs(120));
    let v: serde_json::Value = serde_json::from_str(&by_default.stdout).expect("one JSON object");
    assert_eq!(v["verdict"], "unknown", "{}", by_default.stdout);
    assert!(!by_default.stdout.contains("allocations are assumed"), "{}", by_default.stdout);
    let assumed = cpals(&["check", "--timeout", "30", "--assume-allocations-succeed", &file], Duration::from_secs(120));
    assert_eq!(assumed.code, Some(0), "{}{}", assumed.stdout, assumed.stderr);
    assert!(assumed.stderr.contains("allocations are assumed to succeed"), "{}", assumed.stderr);
    let wrong =
        temp_file("unchecked_malloc_wrong.c", &String::from_utf8_lossy(program).replace("head->v == 2", "head->v == 1").into_bytes());
    let still = cpals(&["check", "--timeout", "30", "--assume-allocations-succeed", &wrong], Duration::from_secs(120));
    assert_eq!(still.code, Some(1), "{}{}", still.stdout, still.stderr);
}

#[test]
fn proofs_and_invariants_are_printed() {
    let o = cpals(&["check", &fixture("seed000/fig1_harness.c")], Duration::from_secs(60));
    assert_eq!(o.code, Some(0));
    assert!(o.stdout.contains(": true: "), "{}", o.stdout);
    assert!(o.stdout.contains("invariant: flag == 0"), "{}", o.stdout);
    assert!(o.stdout.ends_with("Verification result: TRUE\n"));
}

/// A counting loop's invariant as a person writes it: the template analysis reports
/// `done >= 0 && items - done >= -2147483648 && written - read == 0`; the text output drops
/// the bound at `int`'s limit and writes the rest `0 <= done && written == read` (one line per
/// loop). `--json` keeps the analysis's own form.
#[test]
fn invariants_are_printed_without_type_bounds() {
    let file = fixture("lsp/progressive.c");
    let o = cpals(&["check", "--analysis", "templates", "--timeout", "60", &file], Duration::from_secs(300));
    let inv: Vec<&str> = o.stdout.lines().filter(|l| l.contains(": invariant: ")).collect();
    assert_eq!(inv, [format!("{file}:27:3: invariant: 0 <= done && written == read (lpi)")], "{}", o.stdout);
    let o =
        cpals(&["check", "--analysis", "templates", "--timeout", "60", &fixture("constructs/counting_loop.c")], Duration::from_secs(300));
    assert!(o.stdout.contains("counting_loop.c:14:3: invariant: 0 <= n && 0 <= i && i <= n (lpi)\n"), "{}", o.stdout);
    let o = cpals(&["check", "--json", "--analysis", "templates", "--timeout", "60", &file], Duration::from_secs(300));
    let v: serde_json::Value = serde_json::from_str(&o.stdout).expect("one JSON object");
    assert_eq!(v["invariants"][0]["expr"], "done >= 0 && items - done >= -2147483648 && written - read == 0");
}

/// An invariant over memory is written as C: a read through a pointer variable is `*pa`, and
/// what the memory model made up (object sizes, its arrays) is not shown.
#[test]
fn invariants_over_memory_are_printed_as_dereferences() {
    let file = fixture("memory/bound_through_pointer.c");
    let o = cpals(&["check", "--timeout", "60", &file], Duration::from_secs(300));
    // (Its second call of `check` is a violation.)
    assert_eq!(o.code, Some(1), "{}{}", o.stdout, o.stderr);
    let inv: Vec<&str> = o.stdout.lines().filter(|l| l.contains(": invariant: ")).collect();
    assert!(inv.iter().any(|l| l.contains("i <= *pa")), "{}", o.stdout);
    assert!(inv.iter().all(|l| !l.contains("__")), "{}", o.stdout);
}

#[test]
fn cfa_dot_is_graphviz() {
    let o = cpals(&["cfa", "--dot", &fixture("constructs/loops.c")], Duration::from_secs(30));
    assert_eq!(o.code, Some(0));
    assert!(o.stdout.starts_with("digraph cfa {"));
    assert!(o.stdout.contains("doublecircle"), "loop heads are marked");
    assert!(o.stdout.trim_end().ends_with('}'));
}

#[test]
fn missing_file_and_bad_arguments_are_errors() {
    let o = cpals(&["check", "/nonexistent/nothing.c"], Duration::from_secs(10));
    assert_eq!(o.code, Some(3));
    assert!(o.stderr.contains("cannot read"), "{}", o.stderr);
    let o = cpals(&["check", "--analysis", "nonsense", &fixture("constructs/loops.c")], Duration::from_secs(10));
    assert_eq!(o.code, Some(3));
    assert!(o.stderr.contains("unknown analysis"), "{}", o.stderr);
    let o = cpals(&["check", "--timeout", "-4", &fixture("constructs/loops.c")], Duration::from_secs(10));
    assert_eq!(o.code, Some(3));
    // Whole-formula predicates come from the interpolant families only.
    let o = cpals(
        &["check", "--analysis", "summaries", "--summary-predicates", "formulas", &fixture("constructs/loops.c")],
        Duration::from_secs(10),
    );
    assert_eq!(o.code, Some(3));
    assert!(o.stderr.contains("needs `--dag-interpolants"), "{}", o.stderr);
    // A phase's share of the time is a known phase and a fraction from 0 to 1.
    for (share, says) in [("cells=2", "from 0 to 1"), ("cells", "expected PHASE=FRACTION"), ("nothing=0.3", "unknown phase")] {
        let o = cpals(&["check", "--share", share, &fixture("constructs/loops.c")], Duration::from_secs(10));
        assert_eq!(o.code, Some(3), "--share {share}");
        assert!(o.stderr.contains(says), "--share {share}: {}", o.stderr);
    }
}

/// Garbage must end with an error (exit 3) or unknown (exit 2): never a signal, never a hang.
fn assert_handled(name: &str, bytes: &[u8]) -> Outcome {
    let path = temp_file(name, bytes);
    let o = cpals(&["check", "--timeout", "20", &path], Duration::from_secs(90));
    assert!(matches!(o.code, Some(0..=3)), "{name}: exited with {:?}\n{}", o.code, o.stderr);
    assert!(!o.stderr.contains("panicked"), "{name}: {}", o.stderr);
    o
}

#[test]
fn binary_input_is_refused() {
    let mut bytes: Vec<u8> = (0..200_000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    bytes[7] = 0;
    let o = assert_handled("binary.c", &bytes);
    assert_eq!(o.code, Some(3));
}

#[test]
fn truncated_c_reports_the_position() {
    let o = assert_handled("truncated.c", b"int main(void) {\n  int x = 0;\n  while (x < 10) {\n    x++;\n");
    assert_eq!(o.code, Some(3));
    assert!(o.stderr.contains("truncated.c:4:") && o.stderr.contains("syntax error"), "{}", o.stderr);
}

#[test]
fn a_megabyte_of_random_tokens_is_refused() {
    let toks = ["int", "x", "(", ")", "{", "}", ";", "+", "if", "while", "return", "=", "1", "a", "[", "]", ",", "->", "&&"];
    let mut s = String::new();
    let mut state = 12345u64;
    while s.len() < 1 << 20 {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        s.push_str(toks[(state >> 33) as usize % toks.len()]);
        s.push(' ');
    }
    let o = assert_handled("tokens.c", s.as_bytes());
    assert_eq!(o.code, Some(3));
}

#[test]
fn deeply_nested_expressions_are_refused_or_handled() {
    let parens = format!("int main(void) {{ int x = {}1{}; return x; }}\n", "(".repeat(20_000), ")".repeat(20_000));
    assert_eq!(assert_handled("parens.c", parens.as_bytes()).code, Some(3));
    let chain = format!("int main(void) {{ int x = {}; return x; }}\n", vec!["1"; 200_000].join("+"));
    assert_eq!(assert_handled("chain.c", chain.as_bytes()).code, Some(3));
    let blocks = format!("int main(void) {{ {} {} return 0; }}\n", "{".repeat(100), "}".repeat(100));
    assert_eq!(assert_handled("blocks.c", blocks.as_bytes()).code, Some(0));
}

#[test]
fn empty_and_whitespace_files_have_nothing_to_prove() {
    let o = assert_handled("empty.c", b"");
    assert_eq!(o.code, Some(0), "no property: vacuously true\n{}", o.stdout);
    let _ = Path::new("");
}

/// Seed 002 Fig. 8 (the "level" example) for depth `n`: level1 .. level_{n-1} call the next
/// level twice, level_n toggles G (or, `changed`, the paper's modified level_n).
fn level_program(n: usize, changed: bool) -> String {
    let toggle = if changed { "if (G == 0) G = 1; else G = 0;" } else { "if (G == 1) G = 0; else G = 1;" };
    let mut s = format!("extern void reach_error(void);\n_Bool G;\nvoid level{n}(void) {{ {toggle} }}\n");
    for i in (1..n).rev() {
        s += &format!("void level{i}(void) {{ level{}(); level{}(); }}\n", i + 1, i + 1);
    }
    s += "int main(void) { G = 1; level1(); level1(); if (G == 0) reach_error(); return 0; }\n";
    s
}

/// The JSON report of the summary analysis on `file` with these extra options.
fn summaries_json(file: &str, options: &[&str]) -> serde_json::Value {
    let mut args = vec!["check", "--json", "--analysis", "summaries"];
    args.extend_from_slice(options);
    args.push(file);
    let o = cpals(&args, Duration::from_secs(120));
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("JSON ({e}): {}{}", o.stdout, o.stderr))
}

fn summaries_refinements(file: &str, refine: &str) -> (String, u64) {
    let v = summaries_json(file, &["--refine", refine]);
    (v["verdict"].as_str().unwrap_or_default().to_string(), v["stats"]["refinements"].as_u64().unwrap_or(u64::MAX))
}

/// Seed 002 Table 6: the summary analysis proves the level example with exactly one
/// refinement for every n, on the original and the modified level_n, because the whole
/// counterexample DAG (with level_n's facts shared by its 2^n invocations) is refined at
/// once; one path at a time needs more.
#[test]
fn seed002_level_example_needs_one_dag_refinement_at_every_n() {
    for n in 1..=6 {
        for changed in [false, true] {
            let file = temp_file(&format!("level{n}{}.c", if changed { "_changed" } else { "" }), level_program(n, changed).as_bytes());
            let (verdict, refinements) = summaries_refinements(&file, "dag");
            assert_eq!((verdict.as_str(), refinements), ("true", 1), "n = {n}, changed = {changed}");
        }
    }
    let file = temp_file("level3_path.c", level_program(3, false).as_bytes());
    let (verdict, refinements) = summaries_refinements(&file, "path");
    assert_eq!(verdict, "true");
    assert!(refinements > 1, "one path at a time: {refinements} refinements");
}

/// Seed 002 §4.1 (and Fig. 1): the one spurious trace `X := true; Y := X; assume(!Y && Z)`
/// is refined once with each interpolant family; the weakest interpolants (`X ∨ ¬Z`,
/// `Y ∨ ¬Z`) mention Z, the conciliated ones (`X`, `Y`) do not.
#[test]
fn seed002_interpolant_families_differ_on_the_three_statements() {
    let file = fixture("seed002/s4_1_three_statements.c");
    let mut preds = std::collections::BTreeMap::new();
    for family in ["conciliated", "weakest", "strongest"] {
        let v = summaries_json(&file, &["--dag-interpolants", family]);
        assert_eq!((v["verdict"].as_str(), v["stats"]["refinements"].as_u64()), (Some("true"), Some(1)), "{family}: {v}");
        let list: Vec<String> =
            v["stats"]["predicates"].as_array().expect("predicates").iter().map(|p| p.as_str().unwrap_or_default().to_string()).collect();
        preds.insert(family, list);
    }
    let mentions = |family: &str, var: &str| preds[family].iter().any(|p| p.split(": ").nth(1).is_some_and(|f| f.contains(var)));
    assert!(mentions("weakest", "Z"), "{preds:?}");
    assert!(!mentions("conciliated", "Z"), "{preds:?}");
    assert!(mentions("conciliated", "X") && mentions("conciliated", "Y"), "{preds:?}");
}

/// Seed 002 Fig. 5 and Fig. 8: the DAG of all spurious paths (2^3 through the diamonds, 2^3
/// invocations of level_3) is refined at once with every interpolant family, whether the
/// predicates are tracked per procedure or, as in the paper, per control point, and whether
/// an interpolant adds its atoms or, as in the paper, itself.
#[test]
fn seed002_dag_examples_need_one_refinement_with_every_family() {
    let level = temp_file("level3_families.c", level_program(3, false).as_bytes());
    for file in [fixture("seed002/fig5_diamonds.c"), level] {
        for scope in ["function", "location"] {
            for form in ["atoms", "formulas"] {
                for family in ["conciliated", "weakest", "strongest"] {
                    let v =
                        summaries_json(&file, &["--dag-interpolants", family, "--summary-precision", scope, "--summary-predicates", form]);
                    let got = (v["verdict"].as_str(), v["stats"]["refinements"].as_u64());
                    assert_eq!(got, (Some("true"), Some(1)), "{file} with {family} per {scope}, {form}");
                }
            }
        }
    }
}

/// Seed 002 Tables 2 and 3, in the paper's setting (predicates per control point, each DAG
/// node's whole interpolant one predicate): conciliated interpolants prove the locking
/// (Fig. 9) and equality-tracking (Fig. 10) examples in fewer refinement cycles than weakest
/// ones, because conciliation drops what the property does not depend on (`f->pos`, `Z`);
/// on Fig. 10 in the paper's 3 cycles. The paper checks no array bounds (Fig. 10 writes
/// `Q[P]`), hence `--assume-in-bounds`: with the bounds check as a property of its own,
/// conciliated takes 5 cycles and weakest 6.
#[test]
fn seed002_conciliated_interpolants_need_fewer_refinements_than_weakest() {
    let refinements = |file: &str, family: &str| -> u64 {
        let mut args =
            vec!["check", "--json", "--analysis", "summaries", "--timeout", "240", "--assume-in-bounds", "--dag-interpolants", family];
        args.extend_from_slice(&["--summary-precision", "location", "--summary-predicates", "formulas", file]);
        // The limit that matters is each run's own CPU time (240 s); the wall-clock net is for a
        // hang only: four runs share two cores, with whatever else the machine runs (a CI run
        // beside a build once took more than 300 s of wall-clock time for one of them).
        let o = cpals(&args, Duration::from_secs(1200));
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("JSON ({e}): {}{}", o.stdout, o.stderr));
        assert_eq!(v["verdict"].as_str(), Some("true"), "{file} with {family}: {}", o.stdout);
        v["stats"]["refinements"].as_u64().expect("a refinement count")
    };
    let (fig10, fig9) = (fixture("seed002/fig10_equality.c"), fixture("seed002/fig9_file_locking.c"));
    // The four runs at once (minutes of CPU time each in a debug build; each process's limit is
    // its own CPU time, so running them side by side changes no result).
    let runs = [(&fig10, "conciliated"), (&fig10, "weakest"), (&fig9, "conciliated"), (&fig9, "weakest")];
    let counts: Vec<u64> = std::thread::scope(|s| {
        let running: Vec<_> = runs.iter().map(|&(file, family)| s.spawn(move || refinements(file, family))).collect();
        running.into_iter().map(|r| r.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    });
    let (conciliated, weakest) = (counts[0], counts[1]);
    assert_eq!(conciliated, 3, "Fig. 10 with conciliated interpolants (weakest: {weakest})");
    assert!(weakest > conciliated, "Fig. 10: weakest {weakest}, conciliated {conciliated}");
    let (conciliated, weakest) = (counts[2], counts[3]);
    assert!(weakest > conciliated, "Fig. 9: weakest {weakest}, conciliated {conciliated}");
}

/// With a benchmark property, a confirmed violation of it decides the task: the bounds checks
/// still open are not analysed further (CPAchecker's regression task, whose `assert` fails on
/// an input while the loop's bounds checks take the analyses long), so the verdict comes at
/// once and says why those checks are unknown.
#[test]
fn a_violation_of_the_task_property_ends_the_run() {
    let task = cpals_tests::root()
        .parent()
        .unwrap()
        .join("shared/bench/cpachecker-regression/smg2_tests/symbolic-execution/reachsafety_heap_array_read_value_unsafe1.c");
    let label = cpals_tests::root().parent().unwrap().join("shared/bench/cpachecker-regression/properties/unreach-label.prp");
    let (task, label) = (task.display().to_string(), label.display().to_string());
    let o = cpals(&["check", "--json", "--data-model", "ILP32", "--timeout", "15", "--property", &label, &task], Duration::from_secs(60));
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("JSON ({e}): {}{}", o.stdout, o.stderr));
    assert_eq!(v["verdict"].as_str(), Some("false"), "{}", o.stdout);
    let props = v["properties"].as_array().expect("properties");
    assert!(props.iter().any(|p| p["kind"] == "assert" && p["verdict"] == "false"), "{}", o.stdout);
    let left: Vec<&serde_json::Value> = props.iter().filter(|p| p["verdict"] == "unknown").collect();
    assert!(!left.is_empty(), "{}", o.stdout);
    for p in left {
        assert_eq!(p["kind"], "out_of_bounds", "{}", o.stdout);
        assert!(p["reason"].as_str().is_some_and(|r| r.contains("decides its verdict")), "{}", o.stdout);
    }
}

/// `--property FILE.prp` reads SV-COMP property files; a file cpals cannot read or a property
/// it does not check is an error (exit 3) naming the problem, and so is an unknown `--function`.
#[test]
fn property_files_and_entries_are_checked() {
    let regression = cpals_tests::root().parent().unwrap().join("shared/bench/cpachecker-regression/properties");
    let label = regression.join("unreach-label.prp").display().to_string();
    let file = fixture("properties/unreach_label_ignores_reach_error.c");
    let o = cpals(&["check", "--property", &label, &file], Duration::from_secs(60));
    assert_eq!(o.code, Some(1), "{}{}", o.stdout, o.stderr);
    assert!(o.stdout.contains("Verification result: FALSE(unreach-label)"), "{}", o.stdout);

    let bad = temp_file("memsafety.prp", b"CHECK( init(main()), LTL(G valid-free) )\n");
    let o = cpals(&["check", "--property", &bad, &file], Duration::from_secs(10));
    assert_eq!(o.code, Some(3), "{}", o.stdout);
    assert!(o.stderr.contains("does not check the property `Gvalid-free`"), "{}", o.stderr);
    let garbage = temp_file("garbage.prp", b"hello\n");
    let o = cpals(&["check", "--property", &garbage, &file], Duration::from_secs(10));
    assert_eq!(o.code, Some(3));
    assert!(o.stderr.contains("not a property"), "{}", o.stderr);
    let o = cpals(&["check", "--property", "/nonexistent/unreach-call.prp", &file], Duration::from_secs(10));
    assert_eq!(o.code, Some(3));
    assert!(o.stderr.contains("cannot read the property file"), "{}", o.stderr);

    let o = cpals(&["check", "--function", "nosuch", &fixture("properties/function_flag.c")], Duration::from_secs(10));
    assert_eq!(o.code, Some(3));
    assert!(o.stderr.contains("no function `nosuch`"), "{}", o.stderr);
}

/// An entry's arguments are inputs no input function supplies: a counterexample that depends
/// on one is reported at the assertion, and no harness is written for it.
#[test]
fn an_uncalled_function_is_verified_with_arbitrary_arguments() {
    let harness = temp_file("entry.harness.c", b"");
    let _ = std::fs::remove_file(&harness);
    let o = cpals(&["check", "--harness", &harness, &fixture("properties/uncalled_function.c")], Duration::from_secs(60));
    assert_eq!(o.code, Some(1), "{}", o.stdout);
    assert!(o.stdout.contains("uncalled_function.c:21:3: false: assertion `x != 7` can fail"), "{}", o.stdout);
    assert!(o.stderr.contains("depends on the argument `x` of check (an entry's argument)"), "{}", o.stderr);
    assert!(!std::path::Path::new(&harness).exists());

    // Without arguments the harness replays it, but an SV-COMP witness (whose task starts at
    // main) is not written for a violation main does not reach.
    let file = temp_file(
        "entry_without_arguments.c",
        b"#include <assert.h>\nextern int __VERIFIER_nondet_int(void);\nvoid check(void) {\n  int v = __VERIFIER_nondet_int();\n  assert(v != 3);\n}\nint main(void) { return 0; }\n",
    );
    let witness = temp_file("entry.witness.yml", b"");
    let _ = std::fs::remove_file(&witness);
    let o = cpals(&["check", "--witness", &witness, "--harness", &harness, &file], Duration::from_secs(60));
    assert_eq!(o.code, Some(1), "{}", o.stdout);
    assert!(o.stdout.contains(":5:3: false:"), "{}", o.stdout);
    assert!(o.stderr.contains("the violation is in `check`, an entry of its own that `main` does not reach"), "{}", o.stderr);
    assert!(!std::path::Path::new(&witness).exists());
    assert!(std::path::Path::new(&harness).exists(), "{}", o.stderr);
}

// Issue 24, the small items.

#[test]
fn timeouts_out_of_range_are_refused_not_a_panic() {
    let file = fixture("constructs/loops.c");
    for t in ["1e20", "1000001", "NaN", "inf", "-inf", "0", "-1"] {
        for cmd in ["check", "report"] {
            let timeout = format!("--timeout={t}");
            let mut args = vec![cmd, &timeout, &file];
            if cmd == "report" {
                args.extend(["-o", "/nonexistent-dir/r.html"]);
            }
            let o = cpals(&args, Duration::from_secs(30));
            assert_eq!(o.code, Some(3), "{cmd} {timeout}: {}", o.stderr);
            assert!(
                o.stderr.contains("the timeout must be a number of seconds greater than 0 and at most 1000000"),
                "{cmd} {timeout}: {}",
                o.stderr
            );
        }
        let o = cpals(&["replay", &file, &file, &format!("--timeout={t}")], Duration::from_secs(30));
        assert_eq!(o.code, Some(3), "replay --timeout={t}: {}", o.stderr);
        assert!(o.stderr.contains("the timeout must be"), "replay --timeout={t}: {}", o.stderr);
    }
    // The largest accepted is a working limit.
    let o = cpals(&["check", "--timeout", "1000000", &fixture("seed000/fig1_harness.c")], Duration::from_secs(60));
    assert_eq!(o.code, Some(0), "{}", o.stderr);
}

#[test]
fn nul_bytes_are_refused_with_their_position() {
    let file = temp_file("nul.c", b"int main(void) {\n  int x = 0;\0\n  return x;\n}\n");
    let o = cpals(&["check", &file], Duration::from_secs(30));
    assert_eq!(o.code, Some(3), "{}{}", o.stdout, o.stderr);
    assert!(o.stderr.contains(&format!("{file}:2:13: input contains NUL bytes")), "{}", o.stderr);
}

#[test]
fn evidence_that_cannot_be_written_is_an_error() {
    let file = temp_file("evidence.c", SCRIPT_STRINGS_PROGRAM.as_bytes());
    let o = cpals(&["check", &file, "--witness", "/nonexistent-dir/w.yml"], Duration::from_secs(60));
    assert_eq!(o.code, Some(3), "{}{}", o.stdout, o.stderr);
    assert!(o.stdout.contains("Verification result: FALSE(unreach-call)"), "the verdict is still printed: {}", o.stdout);
    assert!(o.stderr.contains("cannot write /nonexistent-dir/w.yml"), "{}", o.stderr);
    let o = cpals(&["check", &file, "--harness", "/nonexistent-dir/h.c"], Duration::from_secs(60));
    assert_eq!(o.code, Some(3), "{}{}", o.stdout, o.stderr);
    assert!(o.stderr.contains("cannot write /nonexistent-dir/h.c"), "{}", o.stderr);
    // A correctness witness too.
    let o = cpals(&["check", &fixture("seed000/fig1_harness.c"), "--witness", "/nonexistent-dir/w.yml"], Duration::from_secs(60));
    assert_eq!(o.code, Some(3), "{}{}", o.stdout, o.stderr);
    // Written, they do not change the exit code.
    let dir = std::path::Path::new(&file).parent().unwrap().to_path_buf();
    let (w, h) = (dir.join("w.yml"), dir.join("h.c"));
    let o = cpals(&["check", &file, "--witness", w.to_str().unwrap(), "--harness", h.to_str().unwrap()], Duration::from_secs(60));
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert!(w.is_file() && h.is_file());
}

#[test]
fn errors_in_included_files_do_not_echo_their_contents() {
    let secret = temp_file("secret.txt", b"SECRET hunter2secret\n");
    let hash_error = temp_file("error.h", b"#error hunter2secret\n");
    let cases = [("passwd.c", "/etc/passwd".to_string(), "root:x"), ("secret.c", secret, "hunter2"), ("error.c", hash_error, "hunter2")];
    for (name, included, content) in cases {
        let file = temp_file(name, format!("#include \"{included}\"\nint main(void) {{ return 0; }}\n").as_bytes());
        let o = cpals(&["check", &file], Duration::from_secs(30));
        assert_eq!(o.code, Some(3), "{name}: {}{}", o.stdout, o.stderr);
        assert!(!o.stderr.contains(content) && !o.stdout.contains(content), "{name} echoes the included file: {}", o.stderr);
        assert!(o.stderr.contains(&format!("included file {included}, line 1")), "{name} does not name the file: {}", o.stderr);
    }
}

#[test]
fn the_report_escapes_script_text_from_the_program() {
    let file = temp_file("script.c", SCRIPT_STRINGS_PROGRAM.as_bytes());
    let page = std::path::Path::new(&file).with_extension("html");
    let o = cpals(&["report", &file, "-o", page.to_str().unwrap()], Duration::from_secs(60));
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    let html = std::fs::read_to_string(&page).expect("the page");
    let start = html.find(r#"<script type="application/json" id="cpals-data">"#).expect("the data element") + 48;
    let data = &html[start..start + html[start..].find("</script>").expect("its end")];
    for raw in ["<!--", "<script", "</script"] {
        assert!(!data.contains(raw), "raw `{raw}` in the page's data: {data}");
    }
    // The page has its own two script elements only, and the data still says what the program does.
    assert_eq!(html.matches("<script").count(), 2);
    let v: serde_json::Value = serde_json::from_str(data).expect("the data is JSON");
    let texts: Vec<&str> = v["properties"][0]["trace"].as_array().expect("a trace").iter().filter_map(|s| s["text"].as_str()).collect();
    assert!(texts.iter().any(|t| t.contains(r#""<!--<script>""#)), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains(r#""</script>""#)), "{texts:?}");
}

/// The preprocessor runs under limits (address space, CPU time, output size, wall clock): a
/// file that includes `/dev/zero` or expands a macro bomb ends at once with a clear error
/// instead of growing `cc1` to gigabytes or running for minutes.
#[test]
fn the_preprocessor_is_bounded() {
    let zero = temp_file("zero.c", b"#include \"/dev/zero\"\nint main(void) { return 0; }\n");
    let mut bomb = String::from("#define A0 x x x x x x x x x x\n");
    for k in 1..9 {
        bomb.push_str(&format!("#define A{k} {}\n", vec![format!("A{}", k - 1); 10].join(" ")));
    }
    bomb.push_str("int main(void) { A8; return 0; }\n");
    let bomb_file = temp_file("bomb.c", bomb.as_bytes());
    for (file, says) in
        [(&zero, "the C preprocessor was stopped: it ran out of memory"), (&bomb_file, "the preprocessed input exceeds the limit")]
    {
        let started = std::time::Instant::now();
        let o = cpals(&["check", file], Duration::from_secs(90));
        assert_eq!(o.code, Some(3), "{file}: {}", o.stderr);
        assert!(o.stdout.contains(says) || o.stderr.contains(says), "{file}: {}{}", o.stdout, o.stderr);
        assert!(started.elapsed() < Duration::from_secs(30), "{file} took {:?}", started.elapsed());
    }
}

/// A program whose property holds but needs a polynomial invariant (the sum of the first `n`
/// cubes): cpals runs until its time limit.
const LONG_RUNNING: &str = "extern short __VERIFIER_nondet_short(void);
extern void reach_error(void);

int main(void) {
  short n = __VERIFIER_nondet_short();
  if (n < 0 || n > 256) return 0;
  long long i = 0, s = 0;
  while (i < n) {
    i = i + 1;
    s = s + i * i * i;
    if (4 * s != i * i * (i + 1) * (i + 1)) reach_error();
  }
  return 0;
}
";

/// `--timeout` holds whatever the analysis does: a run that does not finish ends with every
/// open property `unknown` (timeout), as text and as JSON (a watchdog ends it at the limit plus
/// 2 s if the analysis does not stop itself, e.g. a solver that hangs). The limit is CPU time,
/// so the wall-clock bound here is generous (the machine may be busy).
#[test]
fn a_long_run_ends_at_its_time_limit_with_unknown_verdicts() {
    let file = temp_file("long_running.c", LONG_RUNNING.as_bytes());
    let started = Instant::now();
    let o = cpals(&["check", "--timeout", "2", &file], Duration::from_secs(60));
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
    assert_eq!(o.code, Some(2), "{}{}", o.stdout, o.stderr);
    assert!(o.stdout.contains(":11:45: unknown: call to reach_error(): timeout"), "{}", o.stdout);
    assert!(o.stdout.ends_with("Verification result: UNKNOWN\n"), "{}", o.stdout);
    assert!(!o.stderr.contains("no --timeout given"), "{}", o.stderr);

    let o = cpals(&["check", "--timeout", "2", "--json", &file], Duration::from_secs(60));
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).expect("one JSON object");
    assert_eq!(v["verdict"], "unknown");
    let props = v["properties"].as_array().expect("properties");
    assert_eq!(props.len(), 1);
    assert_eq!(props[0]["verdict"], "unknown");
    assert_eq!(props[0]["reason"], "timeout");
}

/// Without `--timeout`, `check` runs for at most 60 s of CPU time and says so.
#[test]
fn check_has_a_default_time_limit() {
    let o = cpals(&["check", &fixture("constructs/loops.c")], Duration::from_secs(120));
    assert!(o.stderr.contains("cpals: no --timeout given, using 60 s"), "{}", o.stderr);
    assert!(o.stdout.contains("Verification result:"), "{}", o.stdout);
}

/// The preprocessor runs under the job's deadline: an included FIFO (which `cc -E` waits on
/// forever) and a macro bomb in an `#if` (minutes of CPU time and gigabytes before it fails)
/// end at `--timeout` with a clear error, not at the preprocessor's own 60 s limit.
#[test]
fn the_preprocessor_stops_at_the_time_limit() {
    let dir = temp_dir("cli-fifo-include");
    let fifo = dir.join("pipe.h");
    assert!(Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs").success());
    let includes_fifo = dir.join("includes_fifo.c");
    std::fs::write(&includes_fifo, format!("#include \"{}\"\nint main(void) {{ return 0; }}\n", fifo.display())).expect("write");
    let mut bomb = String::from("#define A0 1+1+1+1+1+1+1+1+1+1\n");
    for k in 1..9 {
        bomb.push_str(&format!("#define A{k} {}\n", vec![format!("A{}", k - 1); 10].join("+")));
    }
    bomb.push_str("#if A8\nint x;\n#endif\nint main(void) { return 0; }\n");
    let bomb_file = dir.join("if_bomb.c");
    std::fs::write(&bomb_file, bomb).expect("write");
    for file in [&includes_fifo, &bomb_file] {
        let started = Instant::now();
        let o = cpals(&["check", "--timeout", "2", &file.display().to_string()], Duration::from_secs(90));
        let took = started.elapsed();
        assert_eq!(o.code, Some(3), "{}: {}", file.display(), o.stderr);
        assert!(o.stderr.contains("the C preprocessor was stopped: the time limit ran out before it finished"), "{}", o.stderr);
        assert!(took < Duration::from_secs(20), "{} took {took:?}", file.display());
    }
}

#[test]
fn only_regular_files_are_read() {
    let dir = temp_dir("cli-fifo");
    let fifo = dir.join("input.c");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(made.success());
    let fifo = fifo.display().to_string();
    let dir = dir.display().to_string();
    // Each must fail at once (a FIFO without a writer used to block forever).
    for (path, what) in [(fifo.as_str(), "a FIFO"), ("/dev/zero", "a device"), (dir.as_str(), "a directory")] {
        let o = cpals(&["check", path], Duration::from_secs(10));
        assert_eq!(o.code, Some(3), "{path}: {}", o.stderr);
        assert!(o.stderr.contains(&format!("cannot read {path}: it is {what}; only regular files are read")), "{}", o.stderr);
        let o = cpals(&["check", "--property", path, &fixture("constructs/loops.c")], Duration::from_secs(10));
        assert_eq!(o.code, Some(3), "--property {path}: {}", o.stderr);
        assert!(o.stderr.contains(&format!("it is {what}")), "{}", o.stderr);
    }
}

/// A project with a compilation database (issue 23, Build 4): `src/main.c` includes a header
/// from an `-I` folder and uses a `-D` macro; the database is found as clangd finds it (in a
/// parent folder) or named with `--compile-commands`, and a database without an entry for the
/// file is an error when named. `clamp`, defined in the project's other file, is linked in: an
/// assertion on its result is proved, another fails with a trace through it.
#[test]
fn a_project_is_verified_with_its_compilation_database() {
    let project = root().join("tests/projects/three-files");
    let main = project.join("src/main.c").display().to_string();
    let found = cpals(&["check", "--timeout", "30", "--json", &main], Duration::from_secs(240));
    assert_eq!(found.code, Some(1), "{}{}", found.stdout, found.stderr);
    assert!(found.stderr.contains("preprocessor flags from") && found.stderr.contains("-DLIMIT=8"), "{}", found.stderr);
    let report: serde_json::Value = serde_json::from_str(&found.stdout).expect("JSON report");
    let property =
        |line: u64| report["properties"].as_array().unwrap().iter().find(|p| p["line"] == line && p["kind"] == "assert").unwrap().clone();
    let verdicts = [14, 15, 17, 19].map(|l| property(l)["verdict"].as_str().unwrap_or_default().to_string());
    assert_eq!(verdicts, ["true", "true", "true", "false"], "{}", found.stdout);
    let through_clamp = property(19)["trace"].as_array().unwrap().iter().any(|s| s["text"].as_str().unwrap_or_default().contains("x > 8"));
    assert!(through_clamp, "the counterexample goes through `clamp`: {}", found.stdout);
    let db = project.join("compile_commands.json").display().to_string();
    let named = cpals(&["check", "--timeout", "30", "--compile-commands", &db, &main], Duration::from_secs(240));
    assert_eq!(named.code, Some(1), "{}{}", named.stdout, named.stderr);
    let other = temp_file("not-in-db.c", b"int main(void) { return 0; }\n");
    let missing = cpals(&["check", "--timeout", "30", "--compile-commands", &db, &other], Duration::from_secs(60));
    assert_eq!(missing.code, Some(3), "{}", missing.stderr);
    assert!(missing.stderr.contains("has no entry for"), "{}", missing.stderr);
}
