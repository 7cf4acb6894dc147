//! The fuzzing phase of `combined` (`crate::fuzz`): first, for a small share of the budget,
//! and again with the time left when the analyses end without deciding every property. The
//! program is compiled once for both (never run when native execution is off, when it calls
//! functions cpals does not run natively, or when it does not compile); the inputs of a run
//! that reaches a violation are minimised, replayed by the concrete interpreter to find the
//! property and confirmed as a concrete run's are (the bit-precise path check, or a native
//! replay of the unoptimised program): the optimised fuzzing run alone decides nothing.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::concrete::{confirm_concrete, run_limits};
use crate::cfa::SrcRange;
use crate::cfa::{EdgeKind, Program, TargetKind};
use crate::concrete::{self, RunEnd};
use crate::config::{NativeExecution, VerifyConfig};
use crate::core::Cancel;
use crate::fuzz::{Fuzzer, InputFn, Search};
use crate::ir::{InputSource, Stmt};
use crate::properties::{Property, PropertyKey};
use crate::report::build;
use crate::report::outcome::Decision;
use crate::report::{Confirmation, Stats, StepKind, TraceStep};

/// Runs the minimisation of one violation's inputs may make.
const MINIMISE_RUNS: u64 = 3_000;
/// Time the minimisation of one violation's inputs may take at most.
const MINIMISE_TIME: Duration = Duration::from_secs(2);
/// Time the concrete interpreter may take at most to replay fuzzed inputs.
const REPLAY_TIME: Duration = Duration::from_secs(3);
/// Violations found natively that the confirmation did not turn into a new decision, after
/// which a phase stops.
const MAX_UNCONFIRMED: u32 = 3;

/// The fuzzer of a run, kept between the two fuzzing phases.
#[derive(Default)]
pub(super) struct FuzzState {
    fuzzer: Option<Fuzzer>,
    /// The program is not fuzzed (native execution off, not compilable, …).
    unavailable: bool,
    /// Wall-clock time the phases took: their runs' CPU time, which the process's own CPU
    /// clock does not count.
    pub spent: Duration,
    /// Phases run so far.
    phases: u32,
}

/// The input functions of the program with their types: those the CFA reads (by the type
/// of the variable they assign; the command line model's included), then any other
/// `__VERIFIER_nondet_*` it declares. `Err`
/// when one returns something the harness cannot supply.
fn input_fns(p: &Program) -> Result<Vec<InputFn>, String> {
    let mut fns: Vec<InputFn> = Vec::new();
    for f in p.func_ids() {
        for e in &p.cfa(f).edges {
            let (EdgeKind::Statement(Stmt::Input { lhs, source: InputSource::Call(name) })
            | EdgeKind::Declaration(Stmt::Input { lhs, source: InputSource::Call(name) })) = &e.kind
            else {
                continue;
            };
            // The command line model's inputs are the harness's `main`'s (`fuzz::command_line`).
            let input = p.externals.contains(name) || crate::harness::is_args_input(name);
            if input && !fns.iter().any(|x| &x.name == name) {
                fns.push(InputFn { name: name.clone(), ty: p.var(lhs.var()).int_ty() });
            }
        }
    }
    for e in &p.externals {
        if e.starts_with("__VERIFIER_nondet_") && !fns.iter().any(|x| &x.name == e) {
            match crate::fuzz::type_by_name(e, p.data_model) {
                Some(ty) => fns.push(InputFn { name: e.clone(), ty }),
                None => return Err(format!("the program calls `{}`, whose values the fuzzer cannot supply", e)),
            }
        }
    }
    fns.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(fns)
}

/// One fuzzing phase of `budget` (wall-clock time); records confirmed violations in `found`.
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    p: &Program,
    cfg: &VerifyConfig,
    cancel: &Cancel,
    props: &[Property],
    found: &mut BTreeMap<PropertyKey, Decision>,
    stats: &mut Stats,
    state: &mut FuzzState,
    budget: Duration,
) {
    let open = props.iter().any(|p| !found.contains_key(&p.key));
    if cfg.concrete.native == NativeExecution::Off || state.unavailable || !open || budget.is_zero() {
        return;
    }
    if state.fuzzer.is_none() {
        // Compiled once, outside the phases' budgets (bounded by the run's).
        let t0 = Instant::now();
        match prepare(p, cfg, cancel) {
            Ok(f) => state.fuzzer = Some(f),
            Err(why) => {
                tracing::debug!("the program is not fuzzed: {}", why);
                // Cancelled while compiling: nothing more is run anyway.
                state.unavailable = true;
                return;
            }
        }
        state.spent += t0.elapsed();
    } else if let Some(f) = state.fuzzer.as_mut().filter(|f| !f.has_coverage() && !f.input_free && f.past_first_run()) {
        // A later phase: coverage-guided from here on.
        let t0 = Instant::now();
        let (include, defined) = build_inputs(p);
        if let Err(why) = f.add_coverage(&p.file, &p.source, &include, &defined, p.data_model, &|| cancel.check().is_err()) {
            tracing::debug!("no coverage-guided fuzzing: {}", why);
        }
        state.spent += t0.elapsed();
    }
    state.phases += 1;
    let started = Instant::now();
    let phase = cancel.child(Some(budget));
    let before = state.fuzzer.as_ref().map_or(0, |f| f.execs);
    search(p, cfg, cancel, &phase, props, found, stats, state, started + budget);
    let execs = state.fuzzer.as_ref().map_or(0, |f| f.execs) - before;
    stats.native_runs += execs;
    state.spent += started.elapsed();
    tracing::debug!("fuzzing: {} runs in {:?}", execs, started.elapsed());
}

impl FuzzState {
    /// Whether a later fuzzing phase may find what this one did not: the program is fuzzed,
    /// and reads inputs or did not finish its first run.
    pub(super) fn promising(&self) -> bool {
        !self.unavailable && self.fuzzer.as_ref().is_some_and(|f| !f.input_free)
    }
}

#[allow(clippy::too_many_arguments)]
fn search(
    p: &Program,
    cfg: &VerifyConfig,
    cancel: &Cancel,
    phase: &Cancel,
    props: &[Property],
    found: &mut BTreeMap<PropertyKey, Decision>,
    stats: &mut Stats,
    state: &mut FuzzState,
    deadline: Instant,
) {
    // A violation confirmed by a native replay alone has no trace but its end: in the first
    // phase only a program's only property is decided so (the analyses that follow give a
    // full counterexample for one of several), later any assertion the replay names.
    let by_line = state.phases > 1;
    let Some(fuzzer) = state.fuzzer.as_mut() else { return };
    let plan = concrete::Plan::new(p);
    let limits = run_limits(cfg);
    let mut unconfirmed = 0;
    while unconfirmed < MAX_UNCONFIRMED && found.len() < props.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || phase.check().is_err() {
            return;
        }
        let tape = match fuzzer.search(left, phase) {
            Ok(Search::Found(t)) => t,
            Ok(Search::Exhausted) => return,
            Err(why) => {
                tracing::debug!("fuzzing stopped: {}", why);
                state.unavailable = true;
                return;
            }
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let tape = fuzzer.minimise(tape, left.min(MINIMISE_TIME), MINIMISE_RUNS, phase);
        let inputs = fuzzer.inputs(&tape);
        let values: Vec<i128> = inputs.iter().map(|(_, _, v)| *v).collect();
        // The replay may take longer than the phase: the native run took a fraction of it.
        let replay_time = (fuzzer.last_run * 20).clamp(Duration::from_millis(300), REPLAY_TIME);
        let replay_time = cancel.remaining_ms().map_or(replay_time, |ms| Duration::from_millis(ms / 4).min(replay_time));
        let run = concrete::run(p, &plan, &mut concrete::Replay::new(values), &limits, &cancel.child(Some(replay_time)));
        tracing::trace!("the replay of a fuzzing run on the CFA ended with {:?}", run.end);
        let decision = match &run.end {
            RunEnd::Target(key) if !found.contains_key(key) => {
                confirm_concrete(p, &run, cfg.concrete.native, cancel, stats).map(|d| (*key, d))
            }
            RunEnd::Cancelled | RunEnd::StepLimit if cancel.check().is_ok() => {
                confirm_natively(p, props, found, by_line, &run, &inputs, cancel, stats)
            }
            // Values the interpreter does not track (arbitrary array contents: any value, as
            // for an uninitialised local), functions it does not model, deep recursion: the
            // native run is the program's; undefined behaviour the interpreter saw is not.
            RunEnd::Stuck(why)
                if cancel.check().is_ok()
                    && ["arbitrary contents", "uninitialised array element", "not modelled", "call stack too deep", "passed by value"]
                        .iter()
                        .any(|w| why.contains(w)) =>
            {
                confirm_natively(p, props, found, by_line, &run, &inputs, cancel, stats)
            }
            other => {
                tracing::debug!("a fuzzing run reached a violation; its replay on the CFA ended with {:?}", other);
                None
            }
        };
        match decision {
            Some((key, decision)) => {
                found.insert(key, decision);
                // The other properties are left to the analyses (and to a later phase).
                return;
            }
            None => unconfirmed += 1,
        }
    }
}

/// The only property a native run shows (an assertion, `reach_error()`, an `ERROR:` label)
/// that is not proved, if there is exactly one: the properties of `props` (those the phase
/// searches, every one in the first phase, the open ones later) and those `found` violated;
/// a proved property's target no run reaches, so a run that reports one reached this one.
fn only_property(p: &Program, props: &[Property], found: &BTreeMap<PropertyKey, Decision>) -> Option<Property> {
    let mut shown: Vec<Property> =
        shown_properties(p).into_iter().filter(|pr| found.contains_key(&pr.key) || props.iter().any(|q| q.key == pr.key)).collect();
    (shown.len() == 1).then(|| shown.remove(0))
}

/// The properties a native run shows (assertions, `reach_error()`, `ERROR:` labels).
fn shown_properties(p: &Program) -> Vec<Property> {
    crate::properties::properties(p)
        .into_iter()
        .filter(|pr| matches!(pr.kind, TargetKind::Assert | TargetKind::ReachError | TargetKind::ErrorLabel))
        .collect()
}

/// The property a native replay reached, from the harness's report line: the only property
/// a native run shows that is not proved ([`only_property`]), else, when `by_line`, the only
/// assertion written at the reported line of the program's file in the reported function
/// (`FILE:LINE: FUNCTION: assertion ...`, `__assert_fail`'s arguments).
fn reached_property(
    p: &Program,
    props: &[Property],
    found: &BTreeMap<PropertyKey, Decision>,
    report: &str,
    by_line: bool,
) -> Option<Property> {
    if let Some(only) = only_property(p, props, found) {
        return Some(only);
    }
    if !by_line {
        return None;
    }
    // The native program's file name is `#line 1 "FILE"` (quotes removed): `harness::native_replay`.
    let rest = report.strip_prefix(&format!("{}:", p.file.replace('"', "")))?;
    let (line, rest) = rest.split_once(": ")?;
    let line: u32 = line.parse().ok()?;
    let (function, _) = rest.split_once(": assertion ")?;
    let mut at = shown_properties(p).into_iter().filter(|pr| {
        pr.kind == TargetKind::Assert && pr.range.line == line && *pr.range.file == *p.file && p.func(pr.function).name == function
    });
    let prop = at.next()?;
    at.next().is_none().then_some(prop)
}

/// Confirms inputs whose replay on the CFA ran out of time before it ended (a run too long
/// for the interpreter, such as hundreds of millions of loop iterations through calls) by a
/// native replay of the unoptimised program, as a long concrete run's counterexample is
/// ([`confirm_concrete`]); the property is the one the replay's report names
/// ([`reached_property`]: every way the harness sees a violation is a target of the CFA), if
/// it is not decided yet. The trace is the replay's first steps, then the violation.
#[allow(clippy::too_many_arguments)]
fn confirm_natively(
    p: &Program,
    props: &[Property],
    found: &BTreeMap<PropertyKey, Decision>,
    by_line: bool,
    run: &concrete::Run,
    inputs: &[(String, crate::ir::IntTy, i128)],
    cancel: &Cancel,
    stats: &mut Stats,
) -> Option<(PropertyKey, Decision)> {
    if !by_line && only_property(p, props, found).is_none() {
        // No report could name one property: the replay would decide nothing.
        return None;
    }
    let (include, defined) = build_inputs(p);
    let timeout = Duration::from_millis(cancel.remaining_ms().unwrap_or(10_000).clamp(1_000, 20_000));
    let cancelled = || cancel.check().is_err();
    let result = crate::harness::native_replay(
        &p.file,
        &p.source,
        &include,
        inputs,
        &defined,
        p.data_model,
        timeout,
        &p.externals,
        crate::harness::Targets::of(p),
        &cancelled,
    );
    if !matches!(result, crate::harness::NativeResult::Unavailable(_)) {
        stats.native_runs += 1;
    }
    let crate::harness::NativeResult::Reached(report) = &result else {
        tracing::debug!("the native replay of fuzzed inputs did not confirm them: {:?}", result);
        return None;
    };
    let Some(prop) = reached_property(p, props, found, report, by_line).filter(|prop| !found.contains_key(&prop.key)) else {
        tracing::debug!("the native replay reached `{}`, which is no single open property", report);
        return None;
    };
    let mut head = run.clone();
    head.tail.clear();
    let mut trace = build::concrete_trace(p, &head);
    let depth = trace.last().map_or(0, |s| s.depth);
    trace.push(TraceStep {
        range: SrcRange { file: p.file.clone(), line: 0, col: 0, end_line: 0, end_col: 0 },
        function: String::new(),
        text: "… the rest of the run, not shown (confirmed by running the program natively) …".into(),
        kind: StepKind::Omitted { steps: run.steps.saturating_sub(head.head.len() as u64) },
        values: Vec::new(),
        input: None,
        depth,
    });
    trace.push(TraceStep {
        range: prop.range.clone(),
        function: p.func(prop.function).name.clone(),
        text: prop.condition.as_ref().map_or_else(|| "the violation is reached".to_string(), |c| format!("`{}` does not hold", c)),
        kind: StepKind::Other,
        values: Vec::new(),
        input: None,
        depth: 0,
    });
    let inputs = inputs.iter().map(|(f, _, v)| (f.clone(), *v)).collect();
    Some((prop.key, Decision::Violated(trace, inputs, Confirmation::NativeRun)))
}

/// The fuzzer of a program, compiled; `Err` when the program is not fuzzed.
fn prepare(p: &Program, cfg: &VerifyConfig, cancel: &Cancel) -> Result<Fuzzer, String> {
    if cfg.entry.as_deref().is_some_and(|e| e != "main") || !p.by_name.contains_key("main") {
        return Err("a native run starts at `main`".into());
    }
    crate::harness::safe_to_run(&p.externals)?;
    let fns = input_fns(p)?;
    let (include, defined) = build_inputs(p);
    Fuzzer::compile(&p.file, &p.source, &include, fns, &defined, p.data_model, crate::harness::Targets::of(p), &|| cancel.check().is_err())
}

/// The folder includes are resolved against, and the functions the program defines.
fn build_inputs(p: &Program) -> (std::path::PathBuf, Vec<String>) {
    let include = std::path::Path::new(&*p.file).parent().map(|d| d.to_path_buf()).unwrap_or_else(|| ".".into());
    (include, p.functions.iter().map(|f| f.name.clone()).collect())
}

#[cfg(test)]
mod tests {
    use super::reached_property;

    /// The harness's report names the assertion by file, line and function; a report that
    /// names no single assertion of the program (another file, an unknown line, a line with
    /// two) names no property.
    #[test]
    fn a_native_report_names_the_assertion_at_its_line() {
        let text = "#include <assert.h>\nint f(int x) {\n  assert(x != 1);\n  return x;\n}\n\
                    int main(void) {\n  int y = f(2);\n  assert(y != 2); assert(y != 3);\n  assert(y > 0);\n  return 0;\n}\n";
        let input = crate::frontend::SourceInput { path: "report.c".into(), text: text.into() };
        let p = crate::load(&input, crate::cfa::DataModel::Lp64).expect("loads");
        let all = crate::properties::properties(&p);
        let none = std::collections::BTreeMap::new();
        let line =
            |report: &str| reached_property(&p, &all, &none, report, true).map(|pr| (pr.range.line, p.func(pr.function).name.clone()));
        assert_eq!(line("report.c:9: main: assertion `y > 0' failed"), Some((9, "main".to_string())));
        assert_eq!(line("report.c:3: f: assertion `x != 1' failed"), Some((3, "f".to_string())));
        assert_eq!(line("report.c:8: main: assertion `y != 2' failed"), None, "two assertions on line 8");
        assert_eq!(line("report.c:3: main: assertion `x != 1' failed"), None, "not in `main`");
        assert_eq!(line("other.c:9: main: assertion `y > 0' failed"), None, "another file");
        assert_eq!(line("reach_error"), None);
        assert!(reached_property(&p, &all, &none, "report.c:9: main: assertion `y > 0'", false).is_none(), "only by line");
    }

    /// Of two `reach_error()` calls, a run that reports one reached the one not proved: the
    /// proved one's target no run reaches. While both are open, or when the other one is a
    /// violation already found (a run may reach it again), the report names neither.
    #[test]
    fn a_reach_error_report_names_the_only_call_not_proved() {
        use crate::cfa::TargetKind;
        use crate::report::outcome::Decision;
        use crate::report::Confirmation;
        let text = "void reach_error(void);\nint __VERIFIER_nondet_int(void);\nint main(void) {\n\
                    int x = __VERIFIER_nondet_int();\n  if (x == 1) reach_error();\n  if (x == 2) reach_error();\n  return 0;\n}\n";
        let input = crate::frontend::SourceInput { path: "calls.c".into(), text: text.into() };
        let p = crate::load(&input, crate::cfa::DataModel::Lp64).expect("loads");
        let all = crate::properties::properties(&p);
        let calls: Vec<_> = all.iter().filter(|pr| pr.kind == TargetKind::ReachError).cloned().collect();
        assert_eq!(calls.len(), 2);
        let none = std::collections::BTreeMap::new();
        assert!(reached_property(&p, &all, &none, "reach_error", false).is_none(), "both open");
        let open = [calls[1].clone()];
        assert_eq!(reached_property(&p, &open, &none, "reach_error", false).map(|pr| pr.key), Some(calls[1].key));
        let found = std::collections::BTreeMap::from([(calls[0].key, Decision::Violated(Vec::new(), Vec::new(), Confirmation::NativeRun))]);
        assert!(reached_property(&p, &open, &found, "reach_error", false).is_none(), "the other one is violated");
    }
}
