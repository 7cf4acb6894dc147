//! `verify`: runs the configured analysis on a program and turns its outcome into a
//! [`Report`]. Implements the CEGAR loop of seed 000 (Alg. 2 with the lazy refinement of
//! §III-F a) over all properties at once: a confirmed violation is recorded and the search
//! goes on for the other properties; a spurious error path refines the precision and the
//! ARG is re-explored from the refinement root.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::analyses::combined::{CPrecision, CombinedCpa, PredicateConfig};
use crate::analyses::composite::CompositeCpa;
use crate::analyses::predicate::precision::PredPrecision;
use crate::analyses::value::interpolation::{interpolate_path, replay};
use crate::analyses::value::precision::ValuePrecision;
use crate::analyses::value::state::ValueState;
use crate::cfa::block::Block;
use crate::cfa::Loc;
use crate::cfa::{EdgeKind, Program, SrcRange};
use crate::cfa::{OpCtx, OpKind};
use crate::concrete::{self, Boundary, InputStrategy, RunEnd, RunLimits, Zeros};
use crate::core::algorithm::{Exploration, Limits, Outcome};
use crate::core::arg::ArgId;
use crate::core::waitlist::{Order, Waitlist};
use crate::core::{Cancel, Interrupt, Op};
use crate::ir::{InputSource, Stmt};
use crate::properties::{properties, Property, PropertyKey};
use crate::report::{InvariantReport, PropertyReport, Report, Stats, StepKind, TraceStep, Verdict};
use crate::smt::interpolate::sequence_interpolants;
use crate::smt::path::{check_blocks, check_path, BlocksResult, PathResult, StepValues};

/// Which analysis `verify` runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Analysis {
    /// Explicit-value analysis with CEGAR and explicit-value interpolation (seed 000).
    Value,
    /// Predicate abstraction with lazy abstraction and interpolation (seed 001).
    Predicate,
    /// Explicit values and predicates, both refined, with dynamic precision adjustment
    /// (seed 001 §4.4.5, seed 000 §III-F d). The default; for programs with recursion it
    /// runs the summary analysis first.
    Combined,
    /// Local policy iteration over template domains alone (seed 004): invariants and proofs,
    /// never violations (`cpa::template`).
    Templates(crate::analyses::template::TemplateMode),
    /// Predicate abstraction with procedure summaries over a Boolean program (seed 002):
    /// recursion without a call-depth bound.
    Summaries,
    /// Predicate abstraction with interpolant-based transition relation approximation
    /// (seed 003): BDD model checking of propositional approximations of the operations,
    /// refined by transition interpolants (`tra`).
    Tra,
}

impl Analysis {
    pub fn name(self) -> &'static str {
        match self {
            Analysis::Value => "value",
            Analysis::Predicate => "predicate",
            Analysis::Combined => "combined",
            Analysis::Templates(m) => m.name(),
            Analysis::Summaries => "summaries",
            Analysis::Tra => "tra",
        }
    }

    pub fn parse(s: &str) -> Option<Analysis> {
        match s {
            "value" | "explicit" => Some(Analysis::Value),
            "predicate" | "predicates" => Some(Analysis::Predicate),
            "combined" | "default" => Some(Analysis::Combined),
            "summaries" | "summary" => Some(Analysis::Summaries),
            "tra" => Some(Analysis::Tra),
            _ => crate::analyses::template::TemplateMode::parse(s).map(Analysis::Templates),
        }
    }

    fn values(self) -> bool {
        !matches!(self, Analysis::Predicate | Analysis::Summaries | Analysis::Tra)
    }

    fn predicates(self) -> bool {
        self != Analysis::Value
    }
}

/// Everything a run depends on besides the program.
#[derive(Clone, Debug)]
pub struct VerifyConfig {
    pub analysis: Analysis,
    pub timeout: Option<Duration>,
    pub order: Order,
    /// Abstract states kept at most (bounds memory).
    pub max_states: usize,
    /// Resident memory at which the exploration stops (bytes).
    pub max_memory: u64,
    /// Calls deeper than this are not explored (recursion).
    pub max_call_depth: usize,
    pub max_refinements: u64,
    /// Scoped precision refinement (seed 000 §III-F b).
    pub scoped_precision: bool,
    /// Verify only this root function (by name; `None`: the whole program from `main`, or
    /// every uncalled function when there is no `main`).
    pub entry: Option<String>,
    /// Variables to track from the start (precision reuse from an earlier run).
    pub reuse: Option<Arc<PrecisionHint>>,
    /// Merge operator of the value analysis (merge-sep builds an ARG; merge-join is
    /// data-flow constant propagation, for comparison).
    pub value_merge: crate::core::cpa::MergeOp,
    /// Cartesian instead of Boolean predicate abstraction.
    pub cartesian: bool,
    /// Where predicate abstraction happens.
    pub blocks: crate::analyses::combined::BlockEncoding,
    /// Interpolation strategies, in the order they are tried.
    pub interpolation: Vec<crate::smt::interpolate::Strategy>,
    /// The summary analysis refines all error paths of a round together, from their
    /// counterexample DAG (seed 002 §4.2); `false`: one path per round.
    pub dag_refinement: bool,
    /// The seed 002 interpolant family the DAG is refined with (quantifier elimination),
    /// falling back to Spacer's solution; `None`: Spacer's solution.
    pub dag_interpolants: Option<crate::analyses::summaries::interpolants::Kind>,
    /// Where the summary analysis tracks an interpolant's atoms (per procedure or per
    /// control point, seed 002 A.1.8).
    pub summary_scope: crate::analyses::summaries::precision::Scope,
    /// Whether a DAG node's family interpolant becomes predicates one atom each or one
    /// predicate as a whole (seed 002 A.1.6).
    pub summary_form: crate::analyses::summaries::formula::Form,
    /// Distinct values at a loop head after which the combination hands a variable from the
    /// value analysis to the predicate analysis.
    pub threshold: usize,
    /// `combined` first runs the explicit-value analysis alone with this share of the time
    /// left (10 s without a time limit; in two slices when the template analysis runs, see
    /// `VALUE_SLICE`); the combination then starts from its precision (0 disables).
    pub value_first: f64,
    /// For programs with recursion, `combined` first runs the summary analysis with this share
    /// of the time left (20 s without a time limit; 0 disables).
    pub summaries_first: f64,
    /// Stop at the first error path whose refinement fails instead of going on past it.
    pub stop_when_blocked: bool,
    /// Concrete runs with chosen inputs before the analysis (bug finding; 0 disables).
    pub concrete_runs: u32,
    /// Share of the time limit the concrete runs may use (at most `concrete_time` without one).
    pub concrete_share: f64,
    pub concrete_time: Duration,
    /// Steps one concrete run may take.
    pub concrete_steps: u64,
    /// `combined` runs the template analysis (local policy iteration, `cpa::template`) after
    /// the first value slice, with this share of the time left (at most 10 s without a time
    /// limit): its invariants are reported and a property it proves is proved (0 disables).
    pub templates: f64,
}

impl VerifyConfig {
    pub fn new(analysis: Analysis) -> VerifyConfig {
        VerifyConfig {
            analysis,
            timeout: None,
            // Predicate blocks merge at joins, so their states are best expanded in the CFA's
            // topological order (all paths into a join before it).
            order: if analysis == Analysis::Value { Order::Dfs } else { Order::ReversePostorder },
            max_states: 2_000_000,
            max_memory: 3 << 30,
            max_call_depth: 256,
            max_refinements: 20_000,
            scoped_precision: true,
            entry: None,
            reuse: None,
            value_merge: crate::core::cpa::MergeOp::Sep,
            cartesian: false,
            blocks: crate::analyses::combined::BlockEncoding::LoopsAndFunctions,
            interpolation: crate::smt::interpolate::Strategy::ALL.to_vec(),
            dag_refinement: true,
            dag_interpolants: None,
            summary_scope: crate::analyses::summaries::precision::Scope::Function,
            summary_form: crate::analyses::summaries::formula::Form::Atoms,
            threshold: 12,
            value_first: 0.35,
            summaries_first: 0.4,
            stop_when_blocked: false,
            concrete_runs: 12,
            concrete_share: 0.3,
            concrete_time: Duration::from_secs(3),
            concrete_steps: 2_000_000_000,
            templates: 0.25,
        }
    }
}

/// The precision a run ended with, by variable names (`function::name` for locals) so that
/// it survives re-parsing: the next run of the same code starts from it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PrecisionHint {
    pub tracked: BTreeSet<String>,
}

fn qualified_name(p: &Program, v: crate::ir::VarId) -> String {
    match v.func() {
        Some(f) => format!("{}::{}", p.cfa(f).name, p.var(v).name),
        None => p.var(v).name.clone(),
    }
}

/// What one property ended with.
#[derive(Clone, Debug)]
enum Decision {
    /// The trace, and the full input sequence when the trace does not show it.
    Violated(Vec<TraceStep>, Vec<(String, i128)>),
    Unknown(String),
}

/// Runs the configured analysis and reports on every property.
pub fn verify(program: &Program, config: &VerifyConfig, cancel: &Cancel) -> Report {
    if let Analysis::Templates(mode) = config.analysis {
        return crate::analyses::template::verify_templates(program, config, mode, cancel);
    }
    let started = Instant::now();
    let cancel = cancel.child(config.timeout);
    let restricted = program.for_entry(config.entry.as_deref());
    let program: &Program = &restricted;
    let props = properties(program);
    let mut stats = Stats::default();
    // The template analysis (issue 5) runs inside the combination, after a short slice of the
    // value analysis: invariants for every loop, and proofs where they suffice.
    let mut templates: Option<crate::analyses::template::TemplateResult> = None;
    let mut all_by_templates = false;
    let run = crate::smt::interruptible(&cancel, || {
        let mut found = BTreeMap::new();
        if config.concrete_runs > 0 && !props.is_empty() {
            concrete_phase(program, config, &cancel, &props, &mut found);
        }
        if config.analysis == Analysis::Tra {
            return run_tra(program, config, &cancel, &props, &mut stats, found);
        }
        let summaries = config.analysis == Analysis::Summaries
            || (config.analysis == Analysis::Combined
                && config.summaries_first > 0.0
                && crate::analyses::summaries::has_recursion(program));
        let mut proved = BTreeSet::new();
        if summaries {
            let alone = config.analysis == Analysis::Summaries;
            let phase = if alone {
                cancel.clone()
            } else {
                let budget = cancel
                    .remaining_ms()
                    .map_or(Duration::from_secs(20), |ms| Duration::from_millis((ms as f64 * config.summaries_first) as u64));
                cancel.child(Some(budget))
            };
            let r = run_summaries(program, config, &phase, &props, &mut stats, found.clone());
            let violated = |k: &PropertyKey| matches!(r.decisions.get(k), Some(Decision::Violated(..)));
            if alone
                || cancel.check().is_err()
                || props.iter().all(|p| violated(&p.key))
                || (r.open_reason.is_none() && r.decisions.values().all(|d| matches!(d, Decision::Violated(..))))
            {
                return r;
            }
            tracing::debug!("the summary analysis ends open ({:?}); the combination continues", r.open_reason);
            proved = r.proved.clone();
            found = r.decisions.into_iter().filter(|(_, d)| matches!(d, Decision::Violated(..))).collect();
        }
        let combined = config.analysis == Analysis::Combined;
        let with_templates = combined && config.templates > 0.0;
        let mut config = std::borrow::Cow::Borrowed(config);
        // The explicit-value analysis alone first (a sequential combination, as in
        // CPAchecker's competition configurations): it is the fastest where it suffices. With
        // the template analysis on, it first gets a short slice (most of its answers take well
        // under a second, docs/benchmarks.md), so that a violated property is reported before
        // the template ladder spends its share on it; the rest of its share comes after the
        // templates.
        let mut value_slices: Vec<Duration> = Vec::new();
        if combined && config.value_first > 0.0 {
            let share =
                cancel.remaining_ms().map_or(Duration::from_secs(10), |ms| Duration::from_millis((ms as f64 * config.value_first) as u64));
            if with_templates && share > VALUE_SLICE {
                value_slices = vec![VALUE_SLICE, share - VALUE_SLICE];
            } else {
                value_slices = vec![share];
            }
        }
        for (i, budget) in value_slices.iter().enumerate() {
            if i == 1 {
                if let Some(t) = run_template_phase(program, &config, &cancel, &props, &found, &mut templates) {
                    all_by_templates = true;
                    return t.with_proved(proved);
                }
            }
            let first = cancel.child(Some(*budget));
            let mut cfg = config.clone().into_owned();
            cfg.analysis = Analysis::Value;
            cfg.order = Order::Dfs;
            cfg.stop_when_blocked = false;
            let r = run_cegar(program, &cfg, &first, &mut stats, found.clone());
            let violated = |k: &PropertyKey| matches!(r.decisions.get(k), Some(Decision::Violated(..)));
            let none_blocked = r.decisions.values().all(|d| matches!(d, Decision::Violated(..)));
            if cancel.check().is_err() || props.iter().all(|p| violated(&p.key)) || (r.open_reason.is_none() && none_blocked) {
                return r.with_proved(proved);
            }
            tracing::debug!("the value analysis alone ends open ({:?}); the combination continues", r.open_reason);
            found = r.decisions.into_iter().filter(|(_, d)| matches!(d, Decision::Violated(..))).collect();
            let mut next = config.into_owned();
            next.reuse = Some(r.precision.clone());
            config = std::borrow::Cow::Owned(next);
            // Only a slice that ran out of time gets a second one: an error path the values
            // could not refute stays so with more time.
            if first.check().is_ok() {
                break;
            }
        }
        if with_templates && templates.is_none() {
            if let Some(t) = run_template_phase(program, &config, &cancel, &props, &found, &mut templates) {
                all_by_templates = true;
                return t.with_proved(proved);
            }
        }
        run_cegar(program, &config, &cancel, &mut stats, found).with_proved(proved)
    });
    let mut run = run;
    if let Some(t) = &templates {
        stats.lp_queries += t.stats.lp_queries;
        stats.value_determinations += t.stats.value_determinations;
        stats.smt_queries += t.stats.lp_queries + t.stats.sat_queries + t.stats.check_queries;
        let mut inv = crate::analyses::template::invariant_reports(program, &t.invariants);
        inv.append(&mut run.invariants);
        run.invariants = inv;
    }
    stats.time_ms = started.elapsed().as_millis() as u64;
    let analysis = config.analysis.name().to_string();
    let properties: Vec<PropertyReport> = props
        .iter()
        .map(|prop| {
            let by_templates = templates.as_ref().is_some_and(|t| t.proved.contains(&prop.key));
            let (verdict, reason, trace, inputs) = match run.decisions.get(&prop.key) {
                Some(Decision::Violated(t, i)) => (Verdict::False, None, t.clone(), i.clone()),
                // Proved by the template invariants (checked inductive bit-precisely).
                _ if by_templates => (Verdict::True, None, Vec::new(), Vec::new()),
                // Proved by the summary analysis before the rest of the combination.
                _ if run.proved.contains(&prop.key) => (Verdict::True, None, Vec::new(), Vec::new()),
                Some(Decision::Unknown(r)) => (Verdict::Unknown, Some(r.clone()), Vec::new(), Vec::new()),
                None => match &run.open_reason {
                    None => (Verdict::True, None, Vec::new(), Vec::new()),
                    Some(r) => (Verdict::Unknown, Some(r.clone()), Vec::new(), Vec::new()),
                },
            };
            PropertyReport {
                kind: prop.kind,
                function: program.func(prop.function).name.clone(),
                range: prop.range.clone(),
                condition: prop_condition(program, prop),
                // Credited to the template analysis where the CEGAR run alone did not prove it.
                analysis: if by_templates && (all_by_templates || run.open_reason.is_some() || run.decisions.contains_key(&prop.key)) {
                    "templates".to_string()
                } else {
                    analysis.clone()
                },
                verdict,
                reason,
                trace,
                inputs,
            }
        })
        .collect();
    let mut semantics = vec![
        format!("data model {}", program.data_model.name()),
        "signed overflow modelled as wrap-around".to_string(),
        "counterexamples confirmed with a bit-precise SMT path check".to_string(),
    ];
    if !program.escaped.is_empty() {
        semantics.push("memory reached through pointers over-approximated".into());
    }
    if templates.is_some() {
        semantics.push("template invariants (local policy iteration) are linear constraints over mathematical integers, checked inductive bit-precisely".into());
    }
    Report {
        file: program.file.to_string(),
        verdict: Report::file_verdict(&properties),
        properties,
        invariants: run.invariants,
        unreachable: run.unreachable,
        analysis,
        semantics,
        notes: program.notes.iter().map(|n| (n.pos.clone(), n.message.clone())).collect(),
        stats,
        precision: Some(run.precision),
    }
}

/// The first slice of the value analysis in `combined` when the template analysis runs.
const VALUE_SLICE: Duration = Duration::from_secs(1);

/// The template ladder in `combined`, with its share of the time left (at most 10 s without
/// a time limit). Its result goes to `slot`; when its invariants prove every property not
/// already violated (`found`), the combination ends here with those violations.
fn run_template_phase(
    program: &Program,
    config: &VerifyConfig,
    cancel: &Cancel,
    props: &[Property],
    found: &BTreeMap<PropertyKey, Decision>,
    slot: &mut Option<crate::analyses::template::TemplateResult>,
) -> Option<RunResult> {
    let budget = cancel.remaining_ms().map_or(Duration::from_secs(10), |ms| Duration::from_millis((ms as f64 * config.templates) as u64));
    // On a thread of its own, so with a Z3 context of its own: how far the ladder got before
    // its budget ran out must not change what the solver does for the analyses after it.
    let tcancel = cancel.child(Some(budget));
    let t = std::thread::scope(|s| {
        s.spawn(|| crate::analyses::template::template_invariants(program, &crate::analyses::template::TemplateConfig::ladder(), &tcancel))
            .join()
    });
    let t = match t {
        Ok(t) => t,
        Err(_) => {
            tracing::warn!("the template analysis panicked; the combination goes on without it");
            return None;
        }
    };
    // Every property must be decided here: one without a decision would count as proved.
    let done =
        !props.is_empty() && props.iter().all(|p| t.proved.contains(&p.key) || matches!(found.get(&p.key), Some(Decision::Violated(..))));
    *slot = Some(t);
    done.then(|| RunResult {
        decisions: found.iter().filter(|(_, d)| matches!(d, Decision::Violated(..))).map(|(k, d)| (*k, d.clone())).collect(),
        open_reason: None,
        unreachable: Vec::new(),
        invariants: Vec::new(),
        precision: config.reuse.clone().unwrap_or_default(),
        proved: BTreeSet::new(),
    })
}

/// The condition text of a property: the assertion's string, or the helper call's argument.
fn prop_condition(p: &Program, prop: &Property) -> Option<String> {
    if prop.condition.is_some() {
        return prop.condition.clone();
    }
    let text = excerpt(p, &prop.range)?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    (close > open + 1).then(|| text[open + 1..close].trim().to_string())
}

struct RunResult {
    decisions: BTreeMap<PropertyKey, Decision>,
    /// Why properties without a decision are not proved (`None`: they are).
    open_reason: Option<String>,
    unreachable: Vec<SrcRange>,
    invariants: Vec<InvariantReport>,
    precision: Arc<PrecisionHint>,
    /// Properties an earlier phase proved (the summary analysis, before the combination).
    proved: BTreeSet<PropertyKey>,
}

impl RunResult {
    fn with_proved(mut self, proved: BTreeSet<PropertyKey>) -> RunResult {
        self.proved.extend(proved);
        self
    }
}

/// The summary analysis (seed 002) on the properties not yet violated: its confirmed
/// violations, and the properties it proves.
fn run_summaries(
    p: &Program,
    cfg: &VerifyConfig,
    cancel: &Cancel,
    props: &[Property],
    stats: &mut Stats,
    decisions: BTreeMap<PropertyKey, Decision>,
) -> RunResult {
    let w = crate::analyses::summaries::program::with_entry_copies(p);
    let decided: Vec<PropertyKey> = decisions.keys().copied().collect();
    // Farkas first: its interpolants come from one certificate for the whole path and relate
    // a callee's result to its entry values (`__retval == x@entry`) where QE's name the values
    // of one unrolling (`__retval == 0`), which diverges on recursion.
    let mut order = vec![crate::smt::interpolate::Strategy::Farkas];
    order.extend(cfg.interpolation.iter().copied().filter(|s| *s != crate::smt::interpolate::Strategy::Farkas));
    let scfg = crate::analyses::summaries::SummaryConfig {
        max_refinements: cfg.max_refinements.min(500),
        interpolation: order,
        dag: cfg.dag_refinement,
        family: cfg.dag_interpolants,
        scope: cfg.summary_scope,
        form: cfg.summary_form,
    };
    let r = crate::analyses::summaries::run(&w, &scfg, cancel, &decided);
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
    violated: &BTreeMap<PropertyKey, crate::smt::path::Violation>,
    unknown: &BTreeMap<PropertyKey, String>,
    open_reason: Option<String>,
) -> RunResult {
    for (key, v) in violated {
        decisions.insert(*key, Decision::Violated(build_trace(p, &v.steps, &v.values, None), Vec::new()));
    }
    for (key, why) in unknown {
        decisions.entry(*key).or_insert_with(|| Decision::Unknown(why.clone()));
    }
    let proved = if open_reason.is_none() {
        props.iter().map(|pr| pr.key).filter(|k| !decisions.contains_key(k)).collect()
    } else {
        BTreeSet::new()
    };
    RunResult {
        decisions,
        open_reason,
        unreachable: Vec::new(),
        invariants: Vec::new(),
        precision: Arc::new(PrecisionHint::default()),
        proved,
    }
}

/// The transition-relation-approximation analysis (seed 003) alone.
fn run_tra(
    p: &Program,
    cfg: &VerifyConfig,
    cancel: &Cancel,
    props: &[Property],
    stats: &mut Stats,
    decisions: BTreeMap<PropertyKey, Decision>,
) -> RunResult {
    let decided: Vec<PropertyKey> = decisions.keys().copied().collect();
    let tcfg =
        crate::analyses::tra::TraConfig { max_refinements: cfg.max_refinements.min(2_000), interpolation: cfg.interpolation.clone() };
    let r = crate::analyses::tra::run(p, &tcfg, cancel, &decided);
    stats.refinements += r.approximation_refinements + r.predicate_refinements;
    stats.smt_queries += r.smt_queries;
    stats.states += r.states;
    stats.predicates.extend(r.predicates.iter().cloned());
    stats.transition_interpolants.extend(r.approximations.iter().cloned());
    path_analysis_result(p, props, decisions, &r.violated, &r.unknown, r.open_reason)
}

type Cegar<'p> = CompositeCpa<'p, CombinedCpa<'p>>;

/// The start precision of the value analysis: empty, or the variables of an earlier run.
fn start_precision(p: &Program, cfg: &VerifyConfig) -> ValuePrecision {
    let mut start = ValuePrecision::default();
    if let Some(hint) = &cfg.reuse {
        for f in p.func_ids() {
            for i in 0..p.cfa(f).locals.len() {
                let v = crate::ir::VarId::local(f, i);
                if hint.tracked.contains(&qualified_name(p, v)) {
                    start.everywhere.insert(v);
                }
            }
        }
        for i in 0..p.globals.len() {
            let v = crate::ir::VarId::global(i);
            if hint.tracked.contains(&qualified_name(p, v)) {
                start.everywhere.insert(v);
            }
        }
    }
    start
}

/// CEGAR with the configured combination of explicit values and predicates.
fn run_cegar(
    p: &Program,
    cfg: &VerifyConfig,
    cancel: &Cancel,
    stats: &mut Stats,
    mut decisions: BTreeMap<PropertyKey, Decision>,
) -> RunResult {
    let predicates = cfg.analysis.predicates().then(|| PredicateConfig { cartesian: cfg.cartesian, blocks: cfg.blocks });
    let threshold = (cfg.analysis == Analysis::Combined).then_some(cfg.threshold);
    let mut prec = CPrecision { value: Arc::new(start_precision(p, cfg)), pred: Arc::new(PredPrecision::default()) };
    let data = CombinedCpa::new(p, predicates, threshold, prec.clone(), cancel.clone(), cfg.value_merge);
    let cpa = CompositeCpa::new(p, data, cfg.max_call_depth);
    for k in decisions.keys() {
        cpa.decide(*k);
    }
    let mut ex = Exploration::new(&cpa, Waitlist::new(cfg.order));
    let limits = Limits { max_states: cfg.max_states, max_memory: cfg.max_memory };
    let mut blocked: BTreeMap<PropertyKey, String> = BTreeMap::new();
    let interrupted = loop {
        match ex.run(&cpa, cancel, &limits) {
            Outcome::Exhausted => break None,
            Outcome::Interrupted(i) => break Some(i),
            Outcome::Target(t) => {
                let state = &ex.arg.node(t).state;
                // `None`: the pseudo-target of a call beyond the recursion bound.
                let key = if state.too_deep { None } else { cpa.property_of(state) };
                let (nodes, ops) = path_ops(&cpa, &ex, t);
                // Precision changes made during exploration (dynamic adjustment) join the
                // driver's precision before it is refined.
                prec.pred = cpa.data.current_predicates(&prec.pred);
                match refine(p, &cpa, &ex, &nodes, &ops, &prec, cfg, cancel, stats) {
                    Refinement::Spurious { precision, pivot } => {
                        stats.refinements += 1;
                        if stats.refinements > cfg.max_refinements {
                            break Some(Interrupt::Limit(format!("more than {} refinements", cfg.max_refinements)));
                        }
                        prec = precision;
                        cpa.data.set_predicates(prec.pred.clone());
                        for n in ex.prune(&cpa, pivot) {
                            ex.arg.node_mut(n).prec = prec.clone();
                        }
                    }
                    Refinement::Interrupted(i) => break Some(i),
                    outcome => match key {
                        None => cpa.recursion_bound_reached(),
                        Some(key) => {
                            match outcome {
                                Refinement::Feasible(values, with_depth) => {
                                    let trace = build_trace(p, &with_depth, &values, None);
                                    decisions.insert(key, Decision::Violated(trace, Vec::new()));
                                    cpa.decide(key);
                                }
                                Refinement::Unknown(reason) => {
                                    // This path is blocked; other paths may still violate the
                                    // property, so it stays open. Without a violation it ends
                                    // unknown for this reason.
                                    blocked.entry(key).or_insert(reason);
                                    if cfg.stop_when_blocked {
                                        break Some(Interrupt::Limit("an error path could not be refuted".into()));
                                    }
                                }
                                _ => unreachable!("handled above"),
                            }
                            // Execution goes on past an `ERROR:` label.
                            ex.requeue(&cpa, t);
                        }
                    },
                }
            }
        }
    };
    for (key, reason) in blocked {
        decisions.entry(key).or_insert(Decision::Unknown(reason));
    }
    stats.states += ex.arg.created() as u64;
    stats.expanded += ex.stats.expanded;
    stats.covered += ex.stats.covered;
    stats.precision = (prec.value.size() + prec.pred.size()) as u64;
    stats.tracked_variables = prec.value.variables().iter().map(|v| p.var_name(*v).to_string()).collect();
    stats.predicates = {
        let table = cpa.data.table.borrow();
        prec.pred.all().iter().map(|id| table.get(*id).display(p).to_string()).collect()
    };
    stats.abstractions += cpa.data.abstractions.get();
    let hint = PrecisionHint { tracked: prec.value.variables().iter().map(|v| qualified_name(p, *v)).collect() };
    let incomplete = cpa.incompleteness();
    let open_reason = match (&interrupted, incomplete.is_empty()) {
        (Some(i), _) => Some(i.describe()),
        (None, false) => Some(incomplete.join("; ")),
        (None, true) => None,
    };
    let (unreachable, invariants) = if open_reason.is_none() {
        let cands = value_candidates(p, &ex);
        let inv = crate::invariants::inductive_subset(p, cands, cancel);
        (unreachable_code(p, &ex), invariant_reports(p, &inv, cfg.analysis.name()))
    } else {
        (Vec::new(), Vec::new())
    };
    RunResult { decisions, open_reason, unreachable, invariants, precision: Arc::new(hint), proved: BTreeSet::new() }
}

/// Inputs one concrete run may read (about 80 bytes each are kept for the replay).
const MAX_RUN_INPUTS: usize = 1 << 20;

/// Runs the program concretely with a few input choices; records confirmed violations.
fn concrete_phase(p: &Program, cfg: &VerifyConfig, cancel: &Cancel, props: &[Property], found: &mut BTreeMap<PropertyKey, Decision>) {
    let budget = match cancel.remaining_ms() {
        Some(ms) => Duration::from_millis((ms as f64 * cfg.concrete_share) as u64),
        None => cfg.concrete_time,
    };
    let phase = cancel.child(Some(budget));
    let limits = RunLimits {
        max_steps: cfg.concrete_steps,
        max_inputs: MAX_RUN_INPUTS,
        keep_ops: 50_000,
        trace_steps: 40,
        max_frames: 10_000,
        accelerate: true,
    };
    let plan = concrete::Plan::new(p);
    // After the configured runs, a few with every input the same small value (2..=9).
    let extra = if cfg.concrete_runs > 0 { 8 } else { 0 };
    for k in 0..cfg.concrete_runs + extra {
        if phase.check().is_err() || found.len() == props.len() {
            return;
        }
        let mut strategy: Box<dyn InputStrategy> = if k == 0 {
            Box::new(Zeros)
        } else if k < cfg.concrete_runs {
            Box::new(Boundary::new(k as u64))
        } else {
            Box::new(concrete::Constant((k - cfg.concrete_runs) as i128 + 2))
        };
        let t0 = Instant::now();
        let run = concrete::run(p, &plan, strategy.as_mut(), &limits, &phase);
        tracing::debug!("concrete run {}: {:?} after {} steps in {:?}", k, run.end, run.steps, t0.elapsed());
        if let RunEnd::Target(key) = &run.end {
            if !found.contains_key(key) {
                if let Some((trace, inputs)) = confirm_concrete(p, &run, cancel) {
                    found.insert(*key, Decision::Violated(trace, inputs));
                }
            }
        }
        if run.inputs.is_empty() && !matches!(run.end, RunEnd::Cancelled) {
            // No input was read: every run would be the same.
            return;
        }
    }
}

/// Confirms a concrete run that reached a violation: by the SMT path check when the run is
/// short, by a native run of the compiled program otherwise (then with the run's whole input
/// sequence, which the abridged trace does not show).
fn confirm_concrete(p: &Program, run: &concrete::Run, cancel: &Cancel) -> Option<(Vec<TraceStep>, Vec<(String, i128)>)> {
    if let Some(ops) = &run.ops {
        let ctxs: Vec<OpCtx> = ops.iter().map(|&(op, rec)| crate::cfa::op_ctx(p, op, rec)).collect();
        match check_path(p, &ctxs, cancel) {
            PathResult::Feasible(values) => {
                let depths: Vec<(OpCtx, usize)> =
                    ctxs.iter().copied().zip(run.head.iter().chain(run.tail.iter()).map(|s| s.depth).chain(std::iter::repeat(0))).collect();
                return Some((build_trace(p, &depths, &values, None), Vec::new()));
            }
            PathResult::Infeasible => {
                tracing::warn!("a concrete run reached a violation the SMT path check refutes; not reported");
                return None;
            }
            PathResult::Imprecise(_) | PathResult::Unknown(_) => {}
        }
    }
    let include = std::path::Path::new(&*p.file).parent().map(|d| d.to_path_buf()).unwrap_or_else(|| ".".into());
    let defined: Vec<String> = p.functions.iter().map(|f| f.name.clone()).collect();
    let timeout = Duration::from_millis(cancel.remaining_ms().unwrap_or(10_000).clamp(1_000, 20_000));
    match crate::harness::native_replay(&p.file, &p.source, &include, &run.inputs, &defined, p.data_model, timeout, &p.externals) {
        crate::harness::NativeResult::Reached(_) => {
            let steps: Vec<&concrete::ConcreteStep> = run.head.iter().chain(run.tail.iter()).collect();
            let mut trace = Vec::new();
            for (i, s) in steps.iter().enumerate() {
                if i == run.head.len() && !run.tail.is_empty() {
                    let shown = steps.len() as u64;
                    trace.push(TraceStep {
                        range: SrcRange { file: p.file.clone(), line: 0, col: 0, end_line: 0, end_col: 0 },
                        function: String::new(),
                        text: format!("… {} operations not shown …", run.steps.saturating_sub(shown)),
                        kind: StepKind::Other,
                        values: Vec::new(),
                        input: None,
                        depth: s.depth,
                    });
                }
                let ctx = crate::cfa::op_ctx(p, s.op, s.recursive);
                if let Some(k) = s.accelerated {
                    let (f, _) = s.op.edge();
                    let func = p.func(f);
                    let head = func.cfa.edge(s.op.edge().1).src;
                    trace.push(TraceStep {
                        range: func.abs(func.cfa.node(head).span),
                        function: func.name.clone(),
                        text: format!("the loop runs {} more iterations (accelerated)", k),
                        kind: StepKind::Other,
                        values: s
                            .values
                            .iter()
                            .filter(|(v, _, _)| !p.var(*v).synthetic)
                            .map(|(v, i, x)| value_text(p, *v, *i, *x))
                            .collect(),
                        input: None,
                        depth: s.depth,
                    });
                    continue;
                }
                let assume = matches!(ctx.kind, OpKind::Edge(EdgeKind::Assume { .. }));
                let values = StepValues {
                    writes: if assume { Vec::new() } else { s.values.clone() },
                    reads: if assume { s.values.clone() } else { Vec::new() },
                    input: s.input,
                };
                trace.extend(build_trace(p, &[(ctx, s.depth)], &[values], None));
            }
            Some((trace, run.inputs.iter().map(|(f, _, v)| (f.clone(), *v)).collect()))
        }
        other => {
            tracing::debug!("native replay did not confirm a concrete counterexample: {:?}", other);
            None
        }
    }
}

/// The ARG path to a node as its nodes and the operations between them.
fn path_ops<'p>(cpa: &Cegar<'p>, ex: &Exploration<Cegar<'p>>, t: ArgId) -> (Vec<ArgId>, Vec<OpCtx<'p>>) {
    let path = ex.arg.path_to(t);
    let nodes: Vec<ArgId> = path.iter().map(|(n, _)| *n).collect();
    let mut ops = Vec::with_capacity(path.len());
    for w in path.windows(2) {
        let (prev, _) = w[0];
        let (next, op) = w[1];
        let op = op.expect("non-root nodes have an operation");
        let to = ex.arg.node(next).state.loc;
        ops.push(cpa.op_ctx(op, &ex.arg.node(prev).state, to));
    }
    (nodes, ops)
}

enum Refinement<'p> {
    Spurious {
        precision: CPrecision,
        pivot: ArgId,
    },
    /// A confirmed counterexample: its operations (with call depths) and values.
    Feasible(Vec<StepValues>, Vec<(OpCtx<'p>, usize)>),
    Unknown(String),
    Interrupted(Interrupt),
}

/// Checks an error path. Explicit replay first (seed 000): an infeasible path is refined
/// by explicit-value interpolation. A path the values cannot refute must pass the
/// bit-precise SMT check, which confirms it (giving the trace's values) or shows it
/// infeasible; then predicates are refined by interpolation (seed 000 §III-F d).
#[allow(clippy::too_many_arguments)]
fn refine<'p>(
    p: &'p Program,
    cpa: &Cegar<'p>,
    ex: &Exploration<Cegar<'p>>,
    nodes: &[ArgId],
    ops: &[OpCtx<'p>],
    prec: &CPrecision,
    cfg: &VerifyConfig,
    cancel: &Cancel,
    stats: &mut Stats,
) -> Refinement<'p> {
    let mut value_stuck = None;
    if cfg.analysis.values() {
        if replay(p, &ValueState::default(), ops).is_err() {
            let itps = match interpolate_path(p, ops, cancel) {
                Ok(i) => i,
                Err(i) => return Refinement::Interrupted(i),
            };
            let mut next = (*prec.value).clone();
            let mut pivot = None;
            let mut needs_abandoned = false;
            for (i, itp) in itps.iter().enumerate() {
                let node = nodes[i + 1];
                let n = ex.arg.node(node);
                let loc = n.state.loc;
                for v in itp.vars() {
                    if cpa.data.is_abandoned(v) {
                        needs_abandoned = true;
                        continue;
                    }
                    if pivot.is_none() && !n.prec.value.tracks(loc, v) {
                        pivot = Some(node);
                    }
                    if cfg.scoped_precision {
                        next.everywhere.insert(v);
                    } else {
                        next.at.entry(loc).or_default().insert(v);
                    }
                }
            }
            match pivot {
                Some(pivot) if !needs_abandoned || !cfg.analysis.predicates() => {
                    return Refinement::Spurious { precision: CPrecision { value: Arc::new(next), pred: prec.pred.clone() }, pivot };
                }
                _ => value_stuck = Some("the refinement of an infeasible error path made no progress"),
            }
            if !cfg.analysis.predicates() {
                return Refinement::Unknown(value_stuck.unwrap_or_default().into());
            }
        }
    }
    // The abstract path's blocks (predicate analyses). A block whose paths were merged may
    // reach the error along another path than the ARG's first parents: all are checked at
    // once and a feasible one, if any, is the candidate counterexample.
    let target = ex.arg.node(*nodes.last().expect("a path"));
    let blocks: Option<Vec<Block>> = target.state.data.pred.as_ref().map(|s| s.abstract_path().iter().map(|a| a.block.clone()).collect());
    let root_depth = ex.arg.node(nodes[0]).state.stack.depth();
    let mut candidate: Vec<(OpCtx, usize)> = ops.iter().enumerate().map(|(i, o)| (*o, ex.arg.node(nodes[i]).state.stack.depth())).collect();
    if let Some(bl) = blocks.as_ref().filter(|bl| bl.iter().any(|b| b.linear().is_none())) {
        stats.smt_queries += 1;
        match check_blocks(p, bl, cancel) {
            BlocksResult::Infeasible => return refine_predicates(p, cpa, ex, nodes, bl, prec, cfg, cancel),
            BlocksResult::Path(path) => candidate = with_depths(p, &path, root_depth),
            BlocksResult::Unknown(why) => {
                return match cancel.check() {
                    Err(i) => Refinement::Interrupted(i),
                    Ok(()) => Refinement::Unknown(why),
                }
            }
        }
    }
    let candidate_ops: Vec<OpCtx> = candidate.iter().map(|(o, _)| *o).collect();
    stats.smt_queries += 1;
    match check_path(p, &candidate_ops, cancel) {
        PathResult::Feasible(v) => Refinement::Feasible(v, candidate),
        PathResult::Infeasible if cfg.analysis.predicates() => match &blocks {
            Some(bl) if bl.iter().all(|b| b.linear().is_some()) => refine_predicates(p, cpa, ex, nodes, bl, prec, cfg, cancel),
            _ => Refinement::Unknown("the bit-precise checks of the error paths disagree".into()),
        },
        PathResult::Infeasible => Refinement::Unknown(
            value_stuck
                .unwrap_or(
                    "an error path is infeasible, but the explicit-value analysis cannot refute it \
                     (it needs relations between variables)",
                )
                .into(),
        ),
        PathResult::Imprecise(why) => Refinement::Unknown(why),
        PathResult::Unknown(why) => match cancel.check() {
            Err(i) => Refinement::Interrupted(i),
            Ok(()) => Refinement::Unknown(why),
        },
    }
}

/// The operations of a path with the call depth before each.
fn with_depths<'p>(p: &'p Program, path: &[(crate::core::Op, bool)], start: usize) -> Vec<(OpCtx<'p>, usize)> {
    let mut depth = start;
    path.iter()
        .map(|&(op, rec)| {
            let ctx = crate::cfa::op_ctx(p, op, rec);
            let here = depth;
            match ctx.kind {
                OpKind::Call { .. } => depth += 1,
                OpKind::Return { .. } => depth = depth.saturating_sub(1),
                OpKind::Edge(_) => {}
            }
            (ctx, here)
        })
        .collect()
}

/// Lazy abstraction refinement with predicates (seed 001 §6.3, Alg. 5.1): interpolants at
/// the path's abstraction states give predicates at their locations; the ARG is cut at the
/// first abstraction state whose location gained one.
#[allow(clippy::too_many_arguments)]
fn refine_predicates<'p>(
    p: &Program,
    cpa: &Cegar<'p>,
    ex: &Exploration<Cegar<'p>>,
    nodes: &[ArgId],
    blocks: &[Block],
    prec: &CPrecision,
    cfg: &VerifyConfig,
    cancel: &Cancel,
) -> Refinement<'p> {
    // Cut after every abstraction state strictly inside the path.
    let cuts: Vec<usize> =
        (1..nodes.len() - 1).filter(|&i| ex.arg.node(nodes[i]).state.data.pred.as_ref().is_some_and(|s| s.is_abstraction())).collect();
    if cuts.is_empty() {
        return Refinement::Unknown("the error path has no abstraction point to refine at".into());
    }
    if cuts.len() + 1 != blocks.len() {
        return Refinement::Unknown(format!(
            "internal error: {} abstraction points on the error path but {} blocks",
            cuts.len(),
            blocks.len()
        ));
    }
    let mut failures = Vec::new();
    for &strategy in &cfg.interpolation {
        let itps = match sequence_interpolants(p, blocks, &[strategy], cancel) {
            Ok(i) => i,
            Err(e) => {
                if let Err(i) = cancel.check() {
                    return Refinement::Interrupted(i);
                }
                failures.push(e);
                continue;
            }
        };
        let mut next = (*prec.pred).clone();
        let mut pivot = None;
        {
            let mut table = cpa.data.table.borrow_mut();
            for (j, atoms) in itps.cuts.iter().enumerate() {
                let node = nodes[cuts[j]];
                let n = ex.arg.node(node);
                let loc = n.state.loc;
                for atom in atoms {
                    let global_only = atom.vars().all(|v| v.func().is_none());
                    let Some(id) = table.intern(atom.clone()) else {
                        return Refinement::Unknown(format!(
                            "more than {} predicates",
                            crate::analyses::predicate::precision::MAX_PREDICATES
                        ));
                    };
                    next.add(loc, id, global_only);
                    if pivot.is_none() && !n.prec.pred.tracks(loc, id) {
                        pivot = Some(node);
                    }
                }
            }
        }
        if let Some(pivot) = pivot {
            if tracing::enabled!(tracing::Level::DEBUG) {
                let table = cpa.data.table.borrow();
                for (j, atoms) in itps.cuts.iter().enumerate() {
                    let shown: Vec<String> = atoms.iter().map(|a| a.display(p).to_string()).collect();
                    tracing::debug!("cut {} at {:?}: {}", j, ex.arg.node(nodes[cuts[j]]).state.loc, shown.join(", "));
                }
                drop(table);
            }
            return Refinement::Spurious { precision: CPrecision { value: prec.value.clone(), pred: Arc::new(next) }, pivot };
        }
        failures.push(format!("{}: no new predicate", strategy.name()));
    }
    // Last resort, seed 001's InferPred: the branch conditions of the path as predicates at
    // its abstraction points (where their variables are in scope). They carry facts no
    // interpolation strategy derives here, such as parities from non-linear arithmetic.
    let conditions = path_conditions(p, blocks);
    let mut next = (*prec.pred).clone();
    let mut pivot = None;
    {
        let mut table = cpa.data.table.borrow_mut();
        for &c in &cuts {
            let node = nodes[c];
            let n = ex.arg.node(node);
            let loc = n.state.loc;
            for atom in &conditions {
                if !atom.vars().all(|v| v.func().is_none() || v.func() == Some(loc.func)) {
                    continue;
                }
                let global_only = atom.vars().all(|v| v.func().is_none());
                let Some(id) = table.intern(atom.clone()) else { break };
                next.add(loc, id, global_only);
                if pivot.is_none() && !n.prec.pred.tracks(loc, id) {
                    pivot = Some(node);
                }
            }
        }
    }
    if let Some(pivot) = pivot {
        tracing::debug!("refinement by the path's conditions ({})", failures.join("; "));
        return Refinement::Spurious { precision: CPrecision { value: prec.value.clone(), pred: Arc::new(next) }, pivot };
    }
    Refinement::Unknown(format!("an infeasible error path could not be refined with predicates ({})", failures.join("; ")))
}

/// The predicates the branch conditions in `blocks` state.
fn path_conditions(p: &Program, blocks: &[Block]) -> Vec<crate::smt::linpred::LinPred> {
    let mut out = Vec::new();
    for b in blocks {
        for node in b.topological() {
            let Some(n) = node.node() else { continue };
            for (_, op, rec) in &n.preds {
                if let OpKind::Edge(EdgeKind::Assume { cond, .. }) = crate::cfa::op_ctx(p, *op, *rec).kind {
                    if let Some(pred) = crate::smt::linpred::from_condition(cond) {
                        if !out.contains(&pred) {
                            out.push(pred);
                        }
                    }
                }
            }
        }
    }
    out
}

/// The source text of a range (its first line), if it is in the main file.
pub fn excerpt(p: &Program, r: &SrcRange) -> Option<String> {
    if r.file != p.file || r.col == 0 {
        return None;
    }
    let line = p.source.lines().nth(r.line.checked_sub(1)? as usize)?;
    let start = (r.col as usize).checked_sub(1)?;
    let end = if r.end_line == r.line && r.end_col > r.col { (r.end_col as usize - 1).min(line.len()) } else { line.len() };
    let mut text = line.get(start..end)?.trim();
    // One statement: stop at a `;` outside parentheses (macro expansions span to the line's end).
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ';' if depth <= 0 => {
                text = text[..i].trim_end();
                break;
            }
            _ => {}
        }
    }
    if text.is_empty() {
        return None;
    }
    let mut t: String = text.chars().take(160).collect();
    if t.ends_with(';') {
        t.pop();
    }
    Some(t)
}

fn value_text(p: &Program, v: crate::ir::VarId, idx: Option<i64>, val: i128) -> (String, String) {
    let info = p.var(v);
    let name = match idx {
        Some(i) => format!("{}[{}]", info.name, i),
        None => info.name.clone(),
    };
    let shown = if info.pointer { format!("{:#x}", val) } else { val.to_string() };
    (name, shown)
}

/// Turns a confirmed path and its values into user-facing steps. `omitted` marks where a long
/// concrete run's middle was left out (and how many steps).
fn build_trace(p: &Program, ops: &[(OpCtx, usize)], values: &[StepValues], omitted: Option<(usize, u64)>) -> Vec<TraceStep> {
    let mut steps = Vec::new();
    for (i, (op, depth)) in ops.iter().enumerate() {
        if let Some((at, n)) = omitted {
            if i == at {
                steps.push(TraceStep {
                    range: SrcRange { file: p.file.clone(), line: 0, col: 0, end_line: 0, end_col: 0 },
                    function: String::new(),
                    text: format!("… {} steps omitted …", n),
                    kind: StepKind::Other,
                    values: Vec::new(),
                    input: None,
                    depth: *depth,
                });
            }
        }
        let vals = &values[i];
        let (f, e) = op.op.edge();
        let func = p.func(f);
        let edge = func.cfa.edge(e);
        let range = func.abs(edge.span);
        if range.col == 0 {
            continue;
        }
        let (kind, hide) = match (&op.op, op.kind) {
            (_, OpKind::Edge(EdgeKind::Blank)) => (StepKind::Other, true),
            (_, OpKind::Edge(EdgeKind::Assume { truth, .. })) => (StepKind::Assume { taken: *truth }, false),
            (_, OpKind::Edge(EdgeKind::Declaration(Stmt::Input { source: InputSource::Uninitialised, .. }))) => {
                (StepKind::Declaration, true)
            }
            (_, OpKind::Edge(EdgeKind::Statement(Stmt::Input { .. }) | EdgeKind::Declaration(Stmt::Input { .. }))) => {
                (StepKind::Input, false)
            }
            (_, OpKind::Edge(EdgeKind::Declaration(_))) => (StepKind::Declaration, false),
            (_, OpKind::Edge(_)) => (StepKind::Assign, false),
            (Op::Call(..), _) => (StepKind::Call, false),
            (Op::Return(..), _) => (StepKind::Return, false),
            _ => (StepKind::Other, false),
        };
        if hide {
            continue;
        }
        let shown: Vec<_> = match kind {
            StepKind::Assume { .. } => &vals.reads,
            _ => &vals.writes,
        }
        .iter()
        .filter(|(v, _, _)| !p.var(*v).synthetic)
        .map(|(v, i, x)| value_text(p, *v, *i, *x))
        .collect();
        let mut dedup: Vec<(String, String)> = Vec::new();
        for (n, v) in shown {
            if let Some(e) = dedup.iter_mut().find(|(m, _)| *m == n) {
                e.1 = v;
            } else {
                dedup.push((n, v));
            }
        }
        let input = match (&kind, op.kind) {
            (
                StepKind::Input,
                OpKind::Edge(EdgeKind::Statement(Stmt::Input { source, .. }) | EdgeKind::Declaration(Stmt::Input { source, .. })),
            ) => {
                let src = match source {
                    InputSource::Call(c) => c.clone(),
                    InputSource::Uninitialised => "uninitialised".into(),
                };
                vals.input.map(|v| (src, v.to_string()))
            }
            _ => None,
        };
        // Steps that only move values between the builder's temporaries say nothing.
        let writes_only_temps = !vals.writes.is_empty() && vals.writes.iter().all(|(v, _, _)| p.var(*v).synthetic);
        if matches!(kind, StepKind::Assign | StepKind::Declaration) && writes_only_temps && input.is_none() {
            continue;
        }
        let text = match op.op {
            Op::Return(..) => format!("return from {}", p.cfa(edge.kind.callee().expect("call edge")).name),
            // The start function has no text of its own (global initialisers, entry arguments).
            _ if f == p.start && kind == StepKind::Input => crate::cfa::pretty::edge(p, &edge.kind),
            _ => excerpt(p, &range).unwrap_or_else(|| crate::cfa::pretty::edge(p, &edge.kind)),
        };
        steps.push(TraceStep { range, function: func.name.clone(), text, kind, values: dedup, input, depth: *depth });
    }
    steps
}

/// Candidate invariants from the final ARG: at each cut point, the values every reached state
/// agrees on, or their range.
fn value_candidates<'p>(p: &Program, ex: &Exploration<Cegar<'p>>) -> crate::invariants::Annotations {
    let mut at: BTreeMap<(crate::ir::FuncId, crate::cfa::NodeId), Vec<&ValueState>> = BTreeMap::new();
    for id in ex.arg.live_nodes() {
        let n = ex.arg.node(id);
        if n.covered_by.is_some() || n.state.too_deep {
            continue;
        }
        let loc = n.state.loc;
        let cfa = p.cfa(loc.func);
        if cfa.node(loc.node).loop_head || cfa.entry == loc.node {
            at.entry((loc.func, loc.node)).or_default().push(&n.state.data.value);
        }
    }
    let mut out = crate::invariants::Annotations::new();
    for ((f, node), states) in at {
        let mut conj = Vec::new();
        let Some(first) = states.first() else { continue };
        for v in first.vars() {
            let info = p.var(v);
            if info.synthetic || info.pointer || !matches!(info.kind, crate::ir::VarKind::Int(_)) {
                continue;
            }
            if v.func().is_some_and(|g| g != f) {
                continue;
            }
            let vals: Option<BTreeSet<i128>> = states.iter().map(|s| s.get(v)).collect();
            let Some(vals) = vals else { continue };
            let t = info.int_ty();
            let var = crate::ir::Expr::Var(v, t);
            let cmp = |op, c: i128| {
                crate::ir::Expr::Binary(op, Box::new(var.clone()), Box::new(crate::ir::Expr::Const(c, t)), crate::ir::IntTy::INT)
            };
            let (lo, hi) = (*vals.iter().next().expect("non-empty"), *vals.iter().next_back().expect("non-empty"));
            if lo == hi {
                conj.push(cmp(crate::ir::BinOp::Eq, lo));
            } else {
                // `lo <= v && v <= hi`, the way people write ranges.
                conj.push(crate::ir::Expr::Binary(
                    crate::ir::BinOp::Le,
                    Box::new(crate::ir::Expr::Const(lo, t)),
                    Box::new(var.clone()),
                    crate::ir::IntTy::INT,
                ));
                conj.push(cmp(crate::ir::BinOp::Le, hi));
            }
        }
        if !conj.is_empty() {
            out.insert((f, node), conj);
        }
    }
    out
}

/// Reports the invariants at loop heads, as C expressions.
fn invariant_reports(p: &Program, inv: &crate::invariants::Annotations, source: &str) -> Vec<InvariantReport> {
    let mut out = Vec::new();
    for ((f, node), conj) in inv {
        let cfa = p.cfa(*f);
        if !cfa.node(*node).loop_head {
            continue;
        }
        let func = p.func(*f);
        let expr = conj.iter().map(|e| crate::cfa::pretty::expr(p, e, true)).collect::<Vec<_>>().join(" && ");
        out.push(InvariantReport {
            function: func.name.clone(),
            range: func.abs(cfa.node(*node).span),
            expr,
            source: source.to_string(),
            inductive: true,
        });
    }
    out.sort_by(|a, b| (a.range.line, a.range.col).cmp(&(b.range.line, b.range.col)));
    out
}

/// Code no explored state reaches, in functions the analysis entered.
fn unreachable_code<'p>(p: &Program, ex: &Exploration<Cegar<'p>>) -> Vec<SrcRange> {
    let mut reached: HashSet<Loc> = HashSet::new();
    for id in ex.arg.live_nodes() {
        reached.insert(ex.arg.node(id).state.loc);
    }
    let funcs: BTreeSet<_> = reached.iter().map(|l| l.func).collect();
    let mut out: Vec<SrcRange> = Vec::new();
    for f in funcs {
        if f == p.start {
            continue;
        }
        let func = p.func(f);
        for e in &func.cfa.edges {
            // Blank edges carry no code; an unreachable target is a proof, not dead code.
            if e.span.col == 0 || matches!(e.kind, EdgeKind::Blank) || func.cfa.node(e.dst).target.is_some() {
                continue;
            }
            if reached.contains(&Loc { func: f, node: e.src }) {
                continue;
            }
            let r = func.abs(e.span);
            if !out.contains(&r) {
                out.push(r);
            }
        }
    }
    // Drop ranges inside others, keep source order.
    out.sort_by_key(|r| (r.line, r.col, std::cmp::Reverse((r.end_line, r.end_col))));
    let mut merged: Vec<SrcRange> = Vec::new();
    for r in out {
        if let Some(last) = merged.last() {
            let inside = (r.line, r.col) >= (last.line, last.col) && (r.end_line, r.end_col) <= (last.end_line, last.end_col);
            if inside {
                continue;
            }
        }
        merged.push(r);
    }
    merged
}
