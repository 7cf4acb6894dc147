//! Semantics that a fixture cannot hold because gcc 12 rejects the program: enumerations as
//! C23 and gcc 13 type them, checked through the engine's public API (load, verify).

use analysis_engine::cfa::DataModel;
use analysis_engine::frontend::SourceInput;
use analysis_engine::report::Verdict;
use analysis_engine::{Analysis, Cancel, VerifyConfig};

/// Verdicts of the value analysis on a program text, by line.
fn verdicts(text: &str, model: DataModel) -> Vec<(u32, Verdict)> {
    let input = SourceInput { path: "/tmp/cpals-semantics-test.c".into(), text: text.into() };
    let program = analysis_engine::load(&input, model).expect("builds");
    let report = analysis_engine::verify(&program, &VerifyConfig::new(Analysis::Value), &Cancel::new());
    report.properties.iter().map(|p| (p.range.line, p.verdict)).collect()
}

#[test]
fn an_enumerator_after_int_max_widens() {
    // gcc 12 rejects this (`overflow in enumeration values`); C23 and gcc 13 give `C` the
    // value 2^31, and the completed enumeration's type (`unsigned int`).
    let text = "#include <assert.h>\nenum F { B = 2147483647, C };\nint main(void) {\n  assert(C == 2147483648 && sizeof(C) == 4 && C > 0);\n  assert(sizeof(enum F) == 4 && B + 1 == C);\n  return 0;\n}\n";
    assert_eq!(verdicts(text, DataModel::Lp64), vec![(4, Verdict::True), (5, Verdict::True)]);
}

#[test]
fn enumerations_take_gcc_types() {
    let text = "#include <assert.h>\nenum N { M = -1, P = 4294967295 };\nenum U { V = 1 };\nint main(void) {\n  enum U u = V;\n  assert(sizeof(enum N) == 8 && P == 4294967295 && sizeof(M) == 4 && sizeof(P) == 8);\n  assert(u - 2 > 0);\n  return 0;\n}\n";
    assert_eq!(verdicts(text, DataModel::Lp64), vec![(6, Verdict::True), (7, Verdict::True)]);
    assert_eq!(verdicts(text, DataModel::Ilp32), vec![(6, Verdict::True), (7, Verdict::True)]);
}
