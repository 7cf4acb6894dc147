//! Runs every annotated program under `fixtures/` with the analyses it lists and compares each
//! property's verdict, the statistics, trace values and unreachable lines it expects.

use std::time::Duration;

use analysis_engine::cfa::DataModel;
use analysis_engine::frontend::SourceInput;
use analysis_engine::report::{Report, Verdict};
use analysis_engine::{Analysis, Cancel, VerifyConfig};
use cpals_tests::{fixtures, parse_fixture, Fixture};

fn run(f: &Fixture, analysis: &str) -> Report {
    let model = if f.args.windows(2).any(|w| w[0] == "--data-model" && w[1] == "ILP32") { DataModel::Ilp32 } else { DataModel::Lp64 };
    let input = SourceInput::read(&f.path).expect("fixture readable");
    let program = analysis_engine::load(&input, model).unwrap_or_else(|e| panic!("{}: {}", f.path.display(), e));
    let errs = analysis_engine::cfa::check::check_program(&program);
    assert!(errs.is_empty(), "{}: malformed CFA: {:?}", f.path.display(), errs);
    let mut cfg = VerifyConfig::new(Analysis::parse(analysis).expect("known analysis"));
    cfg.timeout = Some(Duration::from_secs(120));
    analysis_engine::verify(&program, &cfg, &Cancel::new())
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::True => "SAFE",
        Verdict::False => "UNSAFE",
        Verdict::Unknown => "UNKNOWN",
    }
}

fn check_fixture(f: &Fixture, analysis: &str, failures: &mut Vec<String>) {
    let name = f.path.strip_prefix(cpals_tests::root()).unwrap_or(&f.path).display().to_string();
    let report = run(f, analysis);
    for e in &f.expectations {
        let Some(want) = e.for_analysis(analysis) else { continue };
        let got: Vec<&str> = report.properties.iter().filter(|p| p.range.line == e.line).map(|p| verdict_word(p.verdict)).collect();
        match got.as_slice() {
            [] => failures.push(format!("{name}:{}: [{analysis}] expected {want}, but no property is reported there", e.line)),
            [g] if *g == want => {}
            g => {
                let reason = report
                    .properties
                    .iter()
                    .find(|p| p.range.line == e.line)
                    .and_then(|p| p.reason.as_ref().map(ToString::to_string))
                    .unwrap_or_default();
                failures.push(format!("{name}:{}: [{analysis}] expected {want}, got {:?} ({reason})", e.line, g))
            }
        }
    }
    for p in &report.properties {
        if !f.expectations.iter().any(|e| e.line == p.range.line) {
            failures.push(format!("{name}:{}: [{analysis}] property without an expectation ({})", p.range.line, p.verdict.as_str()));
        }
        if p.verdict == Verdict::False && p.trace.is_empty() {
            failures.push(format!("{name}:{}: [{analysis}] violation without a trace", p.range.line));
        }
    }
    if let Some(stats) = f.stats.get(analysis) {
        for (k, v) in stats {
            let got = match k.as_str() {
                "refinements" => report.stats.refinements.to_string(),
                "tracked" => report.stats.tracked_variables.join(","),
                "lp_queries" => report.stats.lp_queries.to_string(),
                "value_determinations" => report.stats.value_determinations.to_string(),
                other => format!("<unknown statistic {other}>"),
            };
            if &got != v {
                failures.push(format!("{name}: [{analysis}] statistic {k}: expected {v}, got {got}"));
            }
        }
    }
    if let Some(preds) = f.predicates.get(analysis) {
        for want in preds {
            if !report.stats.predicates.contains(want) {
                failures.push(format!("{name}: [{analysis}] predicate `{want}` not derived (got {:?})", report.stats.predicates));
            }
        }
    }
    if let Some(values) = f.trace.get(analysis) {
        for (var, val) in values {
            let shown = report
                .properties
                .iter()
                .flat_map(|p| p.trace.iter())
                .any(|s| s.values.iter().any(|(n, v)| n == var && v.to_string() == *val));
            if !shown {
                failures.push(format!("{name}: [{analysis}] no trace step shows {var} = {val}"));
            }
        }
    }
    if let Some(want) = f.invariants.get(analysis) {
        for (line, text) in want {
            let got: Vec<&str> = report.invariants.iter().filter(|i| i.range.line == *line).map(|i| i.expr.as_str()).collect();
            if got != [text.as_str()] {
                failures.push(format!("{name}:{line}: [{analysis}] expected the invariant `{text}`, got {:?}", got));
            }
        }
        // Every invariant shown is checked inductive (the report says so).
        if let Some(i) = report.invariants.iter().find(|i| !i.inductive) {
            failures.push(format!("{name}:{}: [{analysis}] invariant `{}` not checked inductive", i.range.line, i.expr));
        }
    }
    if let Some(lines) = &f.unreachable {
        let mut got: Vec<u32> = report.unreachable.iter().flat_map(|r| r.line..=r.end_line).collect();
        got.sort();
        got.dedup();
        if &got != lines {
            failures.push(format!("{name}: [{analysis}] unreachable lines: expected {:?}, got {:?}", lines, got));
        }
    }
}

#[test]
fn fixtures_have_their_expected_verdicts() {
    let all = fixtures();
    assert!(all.len() >= 20, "fixtures missing: found {}", all.len());
    let mut failures = Vec::new();
    for path in &all {
        let f = parse_fixture(path);
        assert!(!f.expectations.is_empty(), "{} has no expected verdicts", path.display());
        for a in &f.analyses {
            check_fixture(&f, a, &mut failures);
        }
    }
    assert!(failures.is_empty(), "{} fixture mismatches:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn verdicts_are_deterministic() {
    // Same input, same configuration: same verdicts and the same traces.
    for name in ["constructs/recursion.c", "constructs/externals.c", "seed000/fig1_harness.c"] {
        let f = parse_fixture(&cpals_tests::root().join("fixtures").join(name));
        let a = run(&f, "value");
        let b = run(&f, "value");
        assert_eq!(a.properties, b.properties, "{name}: verdicts or traces differ between runs");
    }
}

#[test]
fn merge_join_loses_what_merge_sep_proves() {
    // seed 001 Fig. 3.2 (fixture T2): constant propagation with merge-join joins
    // {x=1,y=1,z=0} and {x=0,z=1} into nothing at the assertion and cannot prove x != z;
    // merge-sep keeps both states and proves it.
    let f = parse_fixture(&cpals_tests::root().join("fixtures/seed001/t2_merge_sep.c"));
    let input = SourceInput::read(&f.path).expect("fixture");
    let program = analysis_engine::load(&input, DataModel::Lp64).expect("loads");
    let mut cfg = VerifyConfig::new(Analysis::Value);
    cfg.concrete.runs = 0;
    let sep = analysis_engine::verify(&program, &cfg, &Cancel::new());
    assert_eq!(sep.properties[0].verdict, Verdict::True);
    cfg.cegar.value_merge = analysis_engine::core::cpa::MergeOp::Join;
    let join = analysis_engine::verify(&program, &cfg, &Cancel::new());
    assert_eq!(join.properties[0].verdict, Verdict::Unknown, "a false alarm is never reported as a violation");
}
