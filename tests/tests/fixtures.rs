//! Runs every annotated program under `fixtures/` with the analyses it lists and compares each
//! property's verdict, the statistics, trace values and unreachable lines it expects: one trial
//! per fixture and analysis (`seed000/fig1_harness.c::value`), run in parallel and selectable by
//! name (`cargo test -p cpals-tests --test fixtures -- seed002`), plus the determinism and
//! merge-operator tests. `CPALS_FIXTURE_TIMES=1` prints each run's time, states, refinements and
//! verdicts (to choose budgets).

use std::time::{Duration, Instant};

use analysis_engine::cfa::{DataModel, TargetKind};
use analysis_engine::frontend::SourceInput;
use analysis_engine::report::{Report, Verdict};
use analysis_engine::{Analysis, Cancel, VerifyConfig};
use cpals_tests::{fixtures, parse_fixture, Fixture};
use libtest_mimic::{Arguments, Failed, Trial};

/// A run that has not ended after this long is stopped and fails: every run is bounded by work
/// (or by its fixture's `TIMEOUT`), so only a hang gets here, and it fails instead of hanging.
const HANG_GUARD: Duration = Duration::from_secs(300);

/// The configuration a fixture runs with: the analysis's defaults, bounded by work rather than
/// time so that a verdict does not depend on how busy the machine is. Without a time limit the
/// engine gives its phases fixed shares (concrete runs 3 s, `combined`'s value slice 10 s);
/// the concrete runs are bounded by steps instead (the longest run that reaches a violation in
/// the fixtures takes under a thousand steps). The state and refinement limits are far above
/// what any fixture needs (at most 34 000 states and 8 refinements) and only end a run that
/// went astray. A fixture whose analysis does not end by itself sets a wall-clock limit
/// (`TIMEOUT[analysis]: seconds`). What stays timed: `combined`'s first value slice, which ends by
/// time on `seed001/t4_ex1.c` and `seed002/fig9_file_locking.c` (their value analysis alone does
/// not end); the combination then goes on from the precision it reached.
fn config(f: &Fixture, analysis: &str) -> VerifyConfig {
    let mut cfg = VerifyConfig::new(Analysis::parse(analysis).expect("known analysis"));
    cfg.timeout = f.timeouts.get(analysis).map(|s| Duration::from_secs(*s));
    cfg.limits.max_states = 200_000;
    cfg.limits.max_refinements = 100;
    cfg.concrete.steps = 100_000;
    cfg.concrete.time = HANG_GUARD;
    cfg
}

fn run(f: &Fixture, analysis: &str) -> Report {
    let model = if f.args.windows(2).any(|w| w[0] == "--data-model" && w[1] == "ILP32") { DataModel::Ilp32 } else { DataModel::Lp64 };
    let input = SourceInput::read(&f.path).expect("fixture readable");
    let program = analysis_engine::load_with(&input, model, &f.build_options()).unwrap_or_else(|e| panic!("{}: {}", f.path.display(), e));
    let errs = analysis_engine::cfa::check::check_program(&program);
    assert!(errs.is_empty(), "{}: malformed CFA: {:?}", f.path.display(), errs);
    let cfg = config(f, analysis);
    // The guard cancels the run from another thread (a deadline would change the engine's
    // time shares, which are fractions of the time left when there is a time limit). A run that
    // does not even stop then is stuck where cancelling does not reach (a deadlock inside Z3):
    // the test binary exits, failing, rather than hang.
    let cancel = Cancel::new();
    let (done, stop) = std::sync::mpsc::channel::<()>();
    let guard = {
        let cancel = cancel.clone();
        let what = format!("{} [{analysis}]", name(f));
        std::thread::spawn(move || {
            use std::sync::mpsc::RecvTimeoutError::Timeout;
            if stop.recv_timeout(HANG_GUARD) == Err(Timeout) {
                cancel.cancel();
                if stop.recv_timeout(Duration::from_secs(60)) == Err(Timeout) {
                    eprintln!("{what} did not end within {HANG_GUARD:?} and does not stop when cancelled: exiting");
                    std::process::exit(101);
                }
            }
        })
    };
    let started = Instant::now();
    let r = analysis_engine::verify(&program, &cfg, &cancel);
    let _ = done.send(());
    guard.join().expect("the guard thread");
    assert!(!cancel.is_cancelled(), "{} [{analysis}] did not end within {HANG_GUARD:?}", f.path.display());
    if std::env::var_os("CPALS_FIXTURE_TIMES").is_some() {
        let why: Vec<String> = r
            .properties
            .iter()
            .map(|p| format!("{}:{}{}", p.range.line, p.verdict.as_str(), p.reason.as_ref().map(|s| format!("({s})")).unwrap_or_default()))
            .collect();
        eprintln!(
            "TIME\t{}\t{analysis}\t{:.1}\tstates={} refinements={}\t{}\t{}",
            name(f),
            started.elapsed().as_secs_f64(),
            r.stats.states,
            r.stats.refinements,
            why.join(" "),
            r.stats.phases.iter().map(|p| format!("{}:{}ms:{}", p.name, p.ms, p.decided)).collect::<Vec<_>>().join(" ")
        );
    }
    r
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::True => "SAFE",
        Verdict::False => "UNSAFE",
        Verdict::Unknown => "UNKNOWN",
    }
}

/// The fixture's path below `fixtures/` (`seed000/fig1_harness.c`).
fn name(f: &Fixture) -> String {
    let dir = cpals_tests::root().join("fixtures");
    f.path.strip_prefix(&dir).unwrap_or(&f.path).display().to_string()
}

/// Every way the report of `analysis` on `f` differs from what the fixture expects.
fn mismatches(f: &Fixture, analysis: &str, report: &Report) -> Vec<String> {
    let name = format!("fixtures/{}", name(f));
    let mut failures = Vec::new();
    // Out-of-bounds checks: proved unless the line says otherwise (`// BOUNDS-UNSAFE`).
    for p in report.properties.iter().filter(|p| p.kind == TargetKind::OutOfBounds) {
        let want = f.expectations.iter().find(|e| e.line == p.range.line).and_then(|e| e.bounds_for(analysis)).unwrap_or("SAFE");
        if verdict_word(p.verdict) != want {
            let reason = p.reason.as_ref().map(ToString::to_string).unwrap_or_default();
            failures.push(format!(
                "{name}:{}: [{analysis}] expected the array access to be BOUNDS-{want}, got {} ({reason})",
                p.range.line,
                verdict_word(p.verdict)
            ));
        }
    }
    for e in &f.expectations {
        let Some(want) = e.for_analysis(analysis) else { continue };
        let got: Vec<&str> = report
            .properties
            .iter()
            .filter(|p| p.range.line == e.line && p.kind != TargetKind::OutOfBounds)
            .map(|p| verdict_word(p.verdict))
            .collect();
        match got.as_slice() {
            [] => failures.push(format!("{name}:{}: [{analysis}] expected {want}, but no property is reported there", e.line)),
            [g] if *g == want => {}
            g => {
                let reason = report
                    .properties
                    .iter()
                    .find(|p| p.range.line == e.line && p.kind != TargetKind::OutOfBounds)
                    .and_then(|p| p.reason.as_ref().map(ToString::to_string))
                    .unwrap_or_default();
                failures.push(format!("{name}:{}: [{analysis}] expected {want}, got {:?} ({reason})", e.line, g))
            }
        }
    }
    for p in &report.properties {
        if p.kind != TargetKind::OutOfBounds && !f.expectations.iter().any(|e| e.line == p.range.line && !e.verdicts.is_empty()) {
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
    for (line, want) in f.trace_text.get(analysis).into_iter().flatten() {
        let got: Vec<&str> = report
            .properties
            .iter()
            .map(|p| p.trace.iter().filter(|s| s.range.line == *line).map(|s| s.text.as_str()).collect::<Vec<_>>())
            .find(|t| !t.is_empty())
            .unwrap_or_default();
        if got != *want {
            failures.push(format!("{name}:{line}: [{analysis}] expected the trace steps {want:?}, got {got:?}"));
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
    failures
}

/// One fixture with one of its analyses: every expectation holds.
fn check_fixture(f: &Fixture, analysis: &str) -> Result<(), Failed> {
    // The analyses recurse over expressions: they run on a thread with the stack the language
    // server's workers have (64 MiB), not on the test runner's (2 MiB, in a debug build).
    let (f2, a2) = (f.clone(), analysis.to_string());
    let report = std::thread::Builder::new()
        .name(format!("fixture {}", name(f)))
        .stack_size(64 << 20)
        .spawn(move || run(&f2, &a2))
        .map_err(|e| Failed::from(format!("cannot start the trial's thread: {e}")))?
        .join()
        .map_err(|p| {
            let what = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            Failed::from(format!("the analysis panicked: {}", what.unwrap_or_default()))
        })?;
    let failures = mismatches(f, analysis, &report);
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{} mismatches:\n{}", failures.len(), failures.join("\n")).into())
    }
}

/// Same input, same configuration: same verdicts and the same traces.
fn verdicts_are_deterministic() -> Result<(), Failed> {
    for name in ["constructs/recursion.c", "constructs/externals.c", "seed000/fig1_harness.c"] {
        let f = parse_fixture(&cpals_tests::root().join("fixtures").join(name));
        let a = run(&f, "value");
        let b = run(&f, "value");
        assert_eq!(a.properties, b.properties, "{name}: verdicts or traces differ between runs");
    }
    Ok(())
}

/// seed 001 Fig. 3.2 (fixture T2): constant propagation with merge-join joins
/// {x=1,y=1,z=0} and {x=0,z=1} into nothing at the assertion and cannot prove x != z;
/// merge-sep keeps both states and proves it.
fn merge_join_loses_what_merge_sep_proves() -> Result<(), Failed> {
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
    Ok(())
}

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let all = fixtures();
    let count = all.len();
    let mut trials = vec![
        Trial::test(
            "fixtures_are_found",
            move || {
                if count >= 20 {
                    Ok(())
                } else {
                    Err(format!("fixtures missing: found {count}").into())
                }
            },
        ),
        Trial::test("verdicts_are_deterministic", verdicts_are_deterministic),
        Trial::test("merge_join_loses_what_merge_sep_proves", merge_join_loses_what_merge_sep_proves),
    ];
    for path in &all {
        let f = parse_fixture(path);
        if f.expectations.is_empty() {
            let msg = format!("{} has no expected verdicts", path.display());
            trials.push(Trial::test(name(&f), move || Err(msg.into())));
            continue;
        }
        for a in &f.analyses {
            let (f, a) = (f.clone(), a.clone());
            trials.push(Trial::test(format!("{}::{a}", name(&f)), move || check_fixture(&f, &a)));
        }
    }
    libtest_mimic::run(&args, trials).exit_code()
}
