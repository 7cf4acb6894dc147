//! The portfolio's phases that run one analysis module as a whole: the summary analysis
//! (seed 002), transition-relation approximation (seed 003) and the template analysis
//! (seed 004), each given its part of the configuration and turned into an [`Outcome`].

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::analyses::summaries;
use crate::analyses::template::{self, TemplateConfig, TemplateResult};
use crate::analyses::tra;
use crate::cfa::Program;
use crate::config::{Strategy, TemplateMode, VerifyConfig};
use crate::core::Cancel;
use crate::properties::{properties, Property, PropertyKey};
use crate::report::build;
use crate::report::outcome::{Decision, Outcome};
use crate::report::{Confirmation, Report, Stats, UnknownReason};
use crate::smt::path::Violation;

/// The summary analysis (seed 002) on the properties not yet violated: its confirmed
/// violations, and the properties it proves.
pub(super) fn summaries(
    p: &Program,
    cfg: &VerifyConfig,
    cancel: &Cancel,
    props: &[Property],
    stats: &mut Stats,
    decisions: BTreeMap<PropertyKey, Decision>,
) -> Outcome {
    let w = summaries::program::with_entry_copies(p);
    let decided: Vec<PropertyKey> = decisions.keys().copied().collect();
    // Farkas first: its interpolants come from one certificate for the whole path and relate
    // a callee's result to its entry values (`__retval == x@entry`) where QE's name the values
    // of one unrolling (`__retval == 0`), which diverges on recursion.
    let mut order = vec![Strategy::Farkas];
    order.extend(cfg.predicate.interpolation.iter().copied().filter(|s| *s != Strategy::Farkas));
    let scfg = summaries::SummaryConfig {
        max_refinements: cfg.limits.max_refinements.min(500),
        interpolation: order,
        dag: cfg.summaries.dag_refinement,
        family: cfg.summaries.dag_interpolants,
        scope: cfg.summaries.scope,
        form: cfg.summaries.form,
    };
    let r = summaries::run(&w, &scfg, cancel, &decided);
    stats.refinements += r.refinements;
    stats.smt_queries += r.smt_queries;
    stats.states += r.facts;
    stats.predicates.extend(r.predicates.iter().cloned());
    path_analysis_result(&w.program, props, decisions, &r.violated, &r.unknown, r.open_reason)
}

/// The result of an analysis that reports violations as confirmed paths and the rest as
/// unknown with a reason (summaries, tra): properties left are proved if it ended closed.
fn path_analysis_result(
    p: &Program,
    props: &[Property],
    mut decisions: BTreeMap<PropertyKey, Decision>,
    violated: &BTreeMap<PropertyKey, Violation>,
    unknown: &BTreeMap<PropertyKey, UnknownReason>,
    open_reason: Option<UnknownReason>,
) -> Outcome {
    for (key, v) in violated {
        decisions.insert(*key, Decision::Violated(build::trace(p, &v.steps, &v.values), Vec::new(), Confirmation::PathCheck));
    }
    for (key, why) in unknown {
        decisions.entry(*key).or_insert_with(|| Decision::Unknown(why.clone()));
    }
    let proved = if open_reason.is_none() {
        props.iter().map(|pr| pr.key).filter(|k| !decisions.contains_key(k)).collect()
    } else {
        BTreeSet::new()
    };
    Outcome { decisions, open_reason, proved, ..Outcome::default() }
}

/// The transition-relation-approximation analysis (seed 003) alone.
pub(super) fn tra(
    p: &Program,
    cfg: &VerifyConfig,
    cancel: &Cancel,
    props: &[Property],
    stats: &mut Stats,
    decisions: BTreeMap<PropertyKey, Decision>,
) -> Outcome {
    let decided: Vec<PropertyKey> = decisions.keys().copied().collect();
    let tcfg =
        tra::TraConfig { max_refinements: cfg.limits.max_refinements.min(2_000), interpolation: cfg.predicate.interpolation.clone() };
    let r = tra::run(p, &tcfg, cancel, &decided);
    stats.refinements += r.approximation_refinements + r.predicate_refinements;
    stats.smt_queries += r.smt_queries;
    stats.states += r.states;
    stats.predicates.extend(r.predicates.iter().cloned());
    stats.transition_interpolants.extend(r.approximations.iter().cloned());
    path_analysis_result(p, props, decisions, &r.violated, &r.unknown, r.open_reason)
}

/// The template ladder in `combined` with `budget`, on a thread of its own and so with a Z3
/// context of its own: how far the ladder got before its budget ran out must not change
/// what the solver does for the analyses after it. `None` if it panicked.
pub(super) fn templates(program: &Program, cancel: &Cancel, budget: Duration) -> Option<TemplateResult> {
    let tcancel = cancel.child(Some(budget));
    on_own_thread("the template analysis", || template::template_invariants(program, &TemplateConfig::ladder(), &tcancel))
}

/// Runs `phase` on a thread of its own, and so with a Z3 context of its own: what it asked
/// the solver must not change what the solver does for the phases after it. `None` if it
/// panicked (`what` names it in the warning).
pub(super) fn on_own_thread<T: Send>(what: &str, phase: impl FnOnce() -> T + Send) -> Option<T> {
    // The analyses recurse over expressions as deep as the program's (Csmith's nest hundreds
    // of operators): the default 2 MiB of a new thread overflowed, aborting the process.
    let joined = std::thread::scope(|s| {
        std::thread::Builder::new().name("cpals-phase".into()).stack_size(PHASE_STACK).spawn_scoped(s, phase).map(|h| h.join())
    });
    match joined {
        Ok(Ok(t)) => Some(t),
        Ok(Err(_)) => {
            tracing::warn!("{} panicked; the combination goes on without it", what);
            None
        }
        Err(e) => {
            tracing::warn!("{} could not start a thread ({}); the combination goes on without it", what, e);
            None
        }
    }
}

/// The stack of a phase's thread (reserved, not committed: what deep recursion needs).
const PHASE_STACK: usize = 256 << 20;

/// `cpals check --analysis templates…`: the template analysis alone.
pub(super) fn templates_alone(program: &Program, config: &VerifyConfig, mode: TemplateMode, cancel: &Cancel) -> Report {
    let started = Instant::now();
    let cancel = cancel.child(config.timeout);
    let restricted = program.for_entry(config.entry.as_deref());
    let program: &Program = &restricted;
    let res = template::template_invariants(program, &TemplateConfig::for_mode(mode), &cancel);
    let props = properties(program);
    let mut outcome = Outcome { proved: res.proved.clone(), ..Outcome::default() };
    for p in &props {
        if !res.proved.contains(&p.key) {
            let why = res
                .unproved
                .get(&p.key)
                .cloned()
                .unwrap_or_else(|| UnknownReason::NotProved("not proved by the template invariants".into()));
            outcome.decisions.insert(p.key, Decision::Unknown(why));
        }
    }
    outcome.invariants = res.invariants.iter().map(template::LoopInvariant::found).collect();
    let stats = Stats {
        time_ms: started.elapsed().as_millis() as u64,
        smt_queries: res.stats.lp_queries + res.stats.sat_queries + res.stats.check_queries,
        abstractions: res.stats.abstractions,
        states: res.stats.points,
        precision: res.stats.templates,
        covered: res.stats.covered,
        expanded: res.stats.iterations,
        lp_queries: res.stats.lp_queries,
        value_determinations: res.stats.value_determinations,
        ..Default::default()
    };
    let steps = res.steps.iter().map(|s| s.name).collect::<Vec<_>>().join(", ");
    build::assemble_templates(program, &props, outcome, config.analysis, stats, &steps)
}
