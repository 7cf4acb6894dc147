//! The concrete runs before the analyses (bug finding): the program runs on a few input
//! choices (zeros, boundary values, constants) with loop acceleration; a run that reaches a
//! property is confirmed by the bit-precise path check, or for long runs natively.
//!
//! A program that reads no input has one execution: when the first run reads none, makes no
//! choice, and ends (returns from its start function or calls `exit`/`abort`) without reaching
//! a property and without a value it cannot compute exactly (those stop the run), every
//! property is proved. Acceleration jumps only over iterations that provably follow the same
//! path, computed on exact integers, so the run is that execution. (In `combined`: an analysis
//! run alone, by name, proves what it proves by itself.)

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::cfa::{OpCtx, Program};
use crate::concrete::{self, Boundary, InputStrategy, RunEnd, RunLimits, Zeros};
use crate::config::{Analysis, NativeExecution, VerifyConfig};
use crate::core::Cancel;
use crate::properties::{Property, PropertyKey};
use crate::report::build;
use crate::report::outcome::Decision;
use crate::report::{Confirmation, Stats};
use crate::smt::path::{check_path, PathResult};

/// Inputs one concrete run may read (about 80 bytes each are kept for the replay).
const MAX_RUN_INPUTS: usize = 1 << 20;
/// Activations a concrete run may have at once (about 100 bytes each, plus the locals): more
/// than a native run of a small recursive function fits in an 8 MiB stack. A deeper run ends
/// "call stack too deep" (infinite recursion does, after well under a second).
const MAX_FRAMES: usize = 1 << 18;

/// Part of the phase's time one run after the first may take.
const RUN_SHARE: u32 = 8;
/// Time a run after the first may take at least.
const MIN_RUN_TIME: Duration = Duration::from_millis(20);
/// Runs after the first cut short by their time, after which the phase stops.
const MAX_CUT_RUNS: u32 = 2;

/// Runs the program concretely with a few input choices; records confirmed violations, and
/// the properties proved when the program's only execution ran to its end.
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    p: &Program,
    cfg: &VerifyConfig,
    cancel: &Cancel,
    props: &[Property],
    found: &mut BTreeMap<PropertyKey, Decision>,
    proved: &mut std::collections::BTreeSet<PropertyKey>,
    stats: &mut Stats,
    cap: Option<Duration>,
) {
    let budget = match cancel.remaining_ms() {
        Some(ms) => Duration::from_millis((ms as f64 * cfg.shares.concrete) as u64),
        None => cfg.concrete.time,
    };
    let budget = cap.map_or(budget, |c| budget.min(c));
    let phase = cancel.child(Some(budget));
    let limits = run_limits(cfg);
    let plan = concrete::Plan::new(p);
    // After the configured runs, a few with every input the same small value (2..=9).
    let extra = if cfg.concrete.runs > 0 { 8 } else { 0 };
    // The first run may take the whole phase (a long run without inputs is every run); each
    // later one a part of it, so that an input that keeps the program in an endless loop
    // does not take the time of the others.
    let per_run = (budget / RUN_SHARE).max(MIN_RUN_TIME);
    let mut cut = 0;
    for k in 0..cfg.concrete.runs + extra {
        if phase.check().is_err() || found.len() == props.len() {
            return;
        }
        let mut strategy: Box<dyn InputStrategy> = if k == 0 {
            Box::new(Zeros)
        } else if k < cfg.concrete.runs {
            Box::new(Boundary::new(k as u64))
        } else {
            Box::new(concrete::Constant((k - cfg.concrete.runs) as i128 + 2))
        };
        let t0 = Instant::now();
        let this = if k == 0 { phase.clone() } else { phase.child(Some(per_run)) };
        let run = concrete::run(p, &plan, strategy.as_mut(), &limits, &this);
        tracing::debug!("concrete run {}: {:?} after {} steps in {:?}", k, run.end, run.steps, t0.elapsed());
        if let RunEnd::Target(key) = &run.end {
            if !found.contains_key(key) {
                if let Some(decision) = confirm_concrete(p, &run, cfg.concrete.native, cancel, stats) {
                    found.insert(*key, decision);
                }
            }
        }
        if run.inputs.is_empty() && run.choices == 0 && !matches!(run.end, RunEnd::Cancelled) {
            // No input was read and no choice made: every run would be the same.
            // In `combined` only: an analysis asked for by name shows what it proves itself.
            if matches!(run.end, RunEnd::Exit | RunEnd::Aborted) && cfg.analysis == Analysis::Combined {
                tracing::debug!("the program's only execution ended after {} steps: every property is proved", run.steps);
                proved.extend(props.iter().map(|prop| prop.key).filter(|k| !found.contains_key(k)));
                stats.proved_by_execution = true;
            }
            return;
        }
        if k > 0 && matches!(run.end, RunEnd::Cancelled) && phase.check().is_ok() {
            cut += 1;
            if cut >= MAX_CUT_RUNS {
                tracing::debug!("concrete runs: {} runs out of their time, the others left to the analyses", cut);
                return;
            }
        }
    }
}

/// The limits of one concrete run (also of the fuzzing phase's replays).
pub(super) fn run_limits(cfg: &VerifyConfig) -> RunLimits {
    RunLimits {
        max_steps: cfg.concrete.steps,
        max_inputs: MAX_RUN_INPUTS,
        keep_ops: 50_000,
        trace_steps: 40,
        max_frames: MAX_FRAMES,
        accelerate: true,
    }
}

/// Confirms a concrete run that reached a violation: by the SMT path check when the run is
/// short, by a native run of the compiled program otherwise (then with the run's whole input
/// sequence, which the abridged trace does not show) unless `native` is off.
pub(super) fn confirm_concrete(
    p: &Program,
    run: &concrete::Run,
    native: NativeExecution,
    cancel: &Cancel,
    stats: &mut Stats,
) -> Option<Decision> {
    if let Some(ops) = &run.ops {
        let ctxs: Vec<OpCtx> = ops.iter().map(|&(op, rec)| crate::cfa::op_ctx(p, op, rec)).collect();
        match check_path(p, &ctxs, cancel) {
            PathResult::Feasible(values) => {
                let depths: Vec<(OpCtx, usize)> =
                    ctxs.iter().copied().zip(run.head.iter().chain(run.tail.iter()).map(|s| s.depth).chain(std::iter::repeat(0))).collect();
                return Some(Decision::Violated(build::trace(p, &depths, &values), Vec::new(), Confirmation::PathCheck));
            }
            PathResult::Infeasible => {
                tracing::warn!("a concrete run reached a violation the SMT path check refutes; not reported");
                return None;
            }
            PathResult::Imprecise(_) | PathResult::Unknown(_) => {}
        }
    }
    if native == NativeExecution::Off {
        tracing::debug!("a long concrete run reached a violation; native execution is off, so it stays unconfirmed");
        return None;
    }
    let include = std::path::Path::new(&*p.file).parent().map(|d| d.to_path_buf()).unwrap_or_else(|| ".".into());
    let defined: Vec<String> = p.functions.iter().map(|f| f.name.clone()).collect();
    let timeout = Duration::from_millis(cancel.remaining_ms().unwrap_or(10_000).clamp(1_000, 20_000));
    let cancelled = || cancel.check().is_err();
    match crate::harness::native_replay(
        &p.file,
        &p.source,
        &include,
        &run.inputs,
        &defined,
        p.data_model,
        timeout,
        &p.externals,
        crate::harness::Targets::of(p),
        &cancelled,
    ) {
        crate::harness::NativeResult::Reached(_) => {
            stats.native_runs += 1;
            let inputs = run.inputs.iter().map(|(f, _, v)| (f.clone(), *v)).collect();
            Some(Decision::Violated(build::concrete_trace(p, run), inputs, Confirmation::NativeRun))
        }
        other => {
            if matches!(other, crate::harness::NativeResult::NotReached(_)) {
                stats.native_runs += 1;
            }
            tracing::debug!("native replay did not confirm a concrete counterexample: {:?}", other);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::time::Duration;

    use crate::cfa::DataModel;
    use crate::config::{Analysis, NativeExecution, VerifyConfig};
    use crate::core::Cancel;
    use crate::frontend::SourceInput;
    use crate::report::Stats;

    /// The concrete phase on `text`: (properties proved, properties violated, properties).
    fn phase(text: &str) -> (usize, usize, usize) {
        let p = crate::load(&SourceInput { path: "run.c".into(), text: text.into() }, DataModel::Lp64).expect("loads");
        let props = crate::properties::properties(&p);
        let mut cfg = VerifyConfig::new(Analysis::Combined);
        cfg.concrete.native = NativeExecution::Off;
        let cancel = Cancel::new().child(Some(Duration::from_secs(60)));
        let (mut found, mut proved, mut stats) = (BTreeMap::new(), BTreeSet::new(), Stats::default());
        super::run(&p, &cfg, &cancel, &props, &mut found, &mut proved, &mut stats, None);
        assert_eq!(stats.proved_by_execution, !proved.is_empty());
        (proved.len(), found.values().filter(|d| d.is_violated()).count(), props.len())
    }

    const HEAD: &str = "extern void abort(void);\nextern int __VERIFIER_nondet_int(void);\n\
                        void reach_error(void) { abort(); }\nvoid __VERIFIER_assert(int c) { if (!c) reach_error(); }\n";

    #[test]
    fn a_program_without_inputs_is_proved_by_its_only_execution() {
        // 55 million iterations in two phases (jumped over), then a recursion of 20,000 calls.
        let text = format!(
            "{HEAD}int fib(int n) {{ return n < 2 ? n : fib(n - 1) + fib(n - 2); }}\n\
             int main(void) {{\n unsigned x = 0;\n while (x < 100000000) {{ if (x < 10000000) x++; else x += 2; }}\n\
             __VERIFIER_assert(x == 100000000);\n __VERIFIER_assert(fib(20) == 6765);\n\
             if (x == 3) __VERIFIER_assert(0);\n return 0;\n}}\n"
        );
        assert_eq!(phase(&text), (3, 0, 3));
    }

    #[test]
    fn an_execution_that_reaches_a_violation_proves_nothing() {
        let text = format!("{HEAD}int main(void) {{ int x = 5; __VERIFIER_assert(x == 4); __VERIFIER_assert(x == 5); return 0; }}\n");
        assert_eq!(phase(&text), (0, 1, 2));
    }

    #[test]
    fn a_program_that_reads_an_input_is_not_proved_by_a_run() {
        let text = format!("{HEAD}int main(void) {{ int x = __VERIFIER_nondet_int(); if (x == 123457) reach_error(); return 0; }}\n");
        assert_eq!(phase(&text).0, 0);
    }

    #[test]
    fn an_uninitialised_variable_is_not_one_value() {
        let text = format!("{HEAD}int main(void) {{ int x; if (x == 123457) reach_error(); return 0; }}\n");
        assert_eq!(phase(&text).0, 0);
    }

    #[test]
    fn entry_functions_are_a_choice_not_one_execution() {
        // No `main`: both functions are entries; a run takes one of them.
        let text = format!("{HEAD}void f(void) {{ int x = 1; __VERIFIER_assert(x == 1); }}\nvoid g(void) {{ reach_error(); }}\n");
        assert_eq!(phase(&text).0, 0);
    }
}
