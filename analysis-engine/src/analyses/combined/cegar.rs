//! CEGAR with explicit values and predicates (`value`, `predicate`, `combined`): the CPA of
//! [`super::CombinedCpa`] in the composite with location and call stack, explored by
//! [`crate::core::cegar`] with the refiner below. An error path is replayed with explicit
//! values first (seed 000); one they cannot refute must pass the bit-precise SMT check,
//! which confirms it or shows it infeasible, and then predicates are refined by
//! interpolation (seed 000 §III-F d, seed 001 §6.3). A path nothing refutes or confirms is
//! blocked: its property stays open and ends `unknown` unless another path violates it.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use super::{CPrecision, CombinedCpa, PredicateConfig};
use crate::analyses::composite::CompositeCpa;
use crate::analyses::predicate::precision::PredPrecision;
use crate::analyses::predicate::refiner::{self as pred_refiner, Cut, PredRefinement};
use crate::analyses::value::precision::ValuePrecision;
use crate::analyses::value::refiner::{self as value_refiner, PathNode, Policy, ValueRefinement};
use crate::analyses::value::state::ValueState;
use crate::cfa::block::Block;
use crate::cfa::{Loc, Op, OpCtx, OpKind, Program};
use crate::config::{Abstraction, Analysis, PrecisionHint, VerifyConfig};
use crate::core::algorithm::{Exploration, Limits};
use crate::core::arg::ArgId;
use crate::core::cegar::{self, Refinement, Refiner, Settle};
use crate::core::{Cancel, Interrupt, Limit};
use crate::invariants::{inductive_subset, Annotations};
use crate::ir::{BinOp, Expr, VarId, VarKind};
use crate::properties::PropertyKey;
use crate::report::build;
use crate::report::outcome::{Decision, Outcome};
use crate::report::{Confirmation, InvariantSource, Stats, TraceStep, UnknownReason};
use crate::smt::path::{check_blocks, check_path, BlocksResult, PathResult};

type Cegar<'p> = CompositeCpa<'p, CombinedCpa<'p>>;

/// What the refiner settles an error path with.
pub enum Settled {
    /// A confirmed counterexample.
    Violation(Vec<TraceStep>),
    /// Neither confirmed nor refuted.
    Blocked(UnknownReason),
}

/// CEGAR with the configured combination of explicit values and predicates; `decisions`
/// holds the violations earlier phases confirmed.
pub fn run(p: &Program, cfg: &VerifyConfig, cancel: &Cancel, stats: &mut Stats, decisions: BTreeMap<PropertyKey, Decision>) -> Outcome {
    let predicates = cfg
        .analysis
        .predicates()
        .then(|| PredicateConfig { cartesian: cfg.predicate.abstraction == Abstraction::Cartesian, blocks: cfg.predicate.blocks });
    let threshold = (cfg.analysis == Analysis::Combined).then_some(cfg.cegar.threshold);
    let prec = CPrecision { value: Arc::new(start_precision(p, cfg)), pred: Arc::new(PredPrecision::default()) };
    let data = CombinedCpa::new(p, predicates, threshold, prec.clone(), cancel.clone(), cfg.cegar.value_merge);
    let cpa = CompositeCpa::new(p, data, cfg.limits.max_call_depth);
    for k in decisions.keys() {
        cpa.decide(*k);
    }
    let mut ex = Exploration::new(&cpa, crate::core::waitlist::Waitlist::new(cfg.cegar.order));
    let limits = Limits { max_states: cfg.limits.max_states, max_memory: cfg.limits.max_memory };
    let mut refiner = CombinedRefiner { p, cfg, cancel, prec, decisions, blocked: BTreeMap::new(), stats };
    let mut refinements = refiner.stats.refinements;
    let interrupted = cegar::run(&cpa, &mut ex, &mut refiner, cancel, &limits, cfg.limits.max_refinements, &mut refinements);
    let CombinedRefiner { prec, mut decisions, blocked, stats, .. } = refiner;
    stats.refinements = refinements;
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
    let open_reason = match (interrupted, incomplete.is_empty()) {
        (Some(i), _) => Some(UnknownReason::from(i)),
        (None, false) => Some(if incomplete.len() == 1 {
            incomplete.into_iter().next().expect("one reason")
        } else {
            UnknownReason::Several(incomplete)
        }),
        (None, true) => None,
    };
    let mut outcome = Outcome { decisions, open_reason, precision: Arc::new(hint), ..Outcome::default() };
    if outcome.open_reason.is_none() {
        let cands = value_candidates(p, &ex);
        let inv = inductive_subset(p, cands, cancel);
        outcome.invariants = build::loop_invariants(p, &inv, InvariantSource::Analysis(cfg.analysis));
        outcome.reached = Some(ex.arg.live_nodes().map(|id| ex.arg.node(id).state.loc).collect::<HashSet<Loc>>());
    }
    outcome
}

/// A variable's name that survives re-parsing (`function::name` for locals).
fn qualified_name(p: &Program, v: VarId) -> String {
    match v.func() {
        Some(f) => format!("{}::{}", p.cfa(f).name, p.var(v).name),
        None => p.var(v).name.clone(),
    }
}

/// The start precision of the value analysis: empty, or the variables of an earlier run.
fn start_precision(p: &Program, cfg: &VerifyConfig) -> ValuePrecision {
    let mut start = ValuePrecision::default();
    if let Some(hint) = &cfg.reuse {
        for f in p.func_ids() {
            for i in 0..p.cfa(f).locals.len() {
                let v = VarId::local(f, i);
                if hint.tracked.contains(&qualified_name(p, v)) {
                    start.everywhere.insert(v);
                }
            }
        }
        for i in 0..p.globals.len() {
            let v = VarId::global(i);
            if hint.tracked.contains(&qualified_name(p, v)) {
                start.everywhere.insert(v);
            }
        }
    }
    start
}

/// The refiner of explicit values and predicates, with the driver's precision and what the
/// run decided so far.
struct CombinedRefiner<'p, 'a> {
    p: &'p Program,
    cfg: &'a VerifyConfig,
    cancel: &'a Cancel,
    prec: CPrecision,
    decisions: BTreeMap<PropertyKey, Decision>,
    /// Properties with an error path that could not be decided, and why.
    blocked: BTreeMap<PropertyKey, UnknownReason>,
    stats: &'a mut Stats,
}

impl<'p> Refiner<Cegar<'p>> for CombinedRefiner<'p, '_> {
    type Settled = Settled;

    fn refine(&mut self, cpa: &Cegar<'p>, ex: &Exploration<Cegar<'p>>, target: ArgId) -> Refinement<CPrecision, Settled> {
        let (nodes, ops) = path_ops(cpa, ex, target);
        // Precision changes made during exploration (dynamic adjustment) join the driver's
        // precision before it is refined.
        self.prec.pred = cpa.data.current_predicates(&self.prec.pred);
        let mut value_stuck = None;
        if self.cfg.analysis.values() {
            let path: Vec<PathNode> = nodes[1..]
                .iter()
                .map(|&id| {
                    let n = ex.arg.node(id);
                    PathNode { id, loc: n.state.loc, precision: n.prec.value.clone() }
                })
                .collect();
            let predicates = self.cfg.analysis.predicates();
            let abandoned = |v| cpa.data.is_abandoned(v);
            let policy = Policy { scoped: self.cfg.cegar.scoped_precision, predicates };
            match value_refiner::refine(self.p, &ops, &path, &self.prec.value, abandoned, policy, self.cancel) {
                ValueRefinement::Spurious { precision, pivot } => {
                    return Refinement::Spurious {
                        precision: CPrecision { value: Arc::new(precision), pred: self.prec.pred.clone() },
                        pivot,
                    };
                }
                ValueRefinement::Interrupted(i) => return Refinement::Interrupted(i),
                ValueRefinement::Stuck => {
                    value_stuck = Some("the refinement of an infeasible error path made no progress");
                    if !predicates {
                        return Refinement::Settled(Settled::Blocked(UnknownReason::RefinementFailed(
                            value_stuck.unwrap_or_default().into(),
                        )));
                    }
                }
                ValueRefinement::NotRefuted => {}
            }
        }
        self.check_path(cpa, ex, &nodes, &ops, value_stuck)
    }

    fn adopt(&mut self, cpa: &Cegar<'p>, precision: &CPrecision) {
        self.prec = precision.clone();
        cpa.data.set_predicates(self.prec.pred.clone());
    }

    fn settle(&mut self, cpa: &Cegar<'p>, ex: &Exploration<Cegar<'p>>, target: ArgId, settled: Settled) -> Settle {
        let state = &ex.arg.node(target).state;
        if state.too_deep {
            // The pseudo-target of a call beyond the recursion bound.
            cpa.recursion_bound_reached();
            return Settle::Keep;
        }
        let Some(key) = cpa.property_of(state).filter(|k| !cpa.is_decided(k)) else {
            // The pseudo-target before a construct cpals does not model, reachable as far as
            // the refiner can tell: the exploration is incomplete, and goes on past it for the
            // properties' own violations.
            cpa.unsupported_reached(state.loc);
            return Settle::Requeue;
        };
        match settled {
            Settled::Violation(trace) => {
                self.decisions.insert(key, Decision::Violated(trace, Vec::new(), Confirmation::PathCheck));
                cpa.decide(key);
            }
            Settled::Blocked(reason) => {
                // This path is blocked; other paths may still violate the property, so it
                // stays open. Without a violation it ends unknown for this reason.
                self.blocked.entry(key).or_insert(reason);
                if self.cfg.cegar.stop_when_blocked {
                    return Settle::Stop(Interrupt::Limit(Limit::Bound("an error path could not be refuted".into())));
                }
            }
        }
        // Execution goes on past an `ERROR:` label.
        Settle::Requeue
    }
}

impl<'p> CombinedRefiner<'p, '_> {
    /// The bit-precise check of an error path the values did not refute. The abstract
    /// path's blocks (predicate analyses) may reach the error along other paths than the
    /// ARG's first parents: all are checked at once and a feasible one, if any, is the
    /// candidate counterexample.
    fn check_path(
        &mut self,
        cpa: &Cegar<'p>,
        ex: &Exploration<Cegar<'p>>,
        nodes: &[ArgId],
        ops: &[OpCtx<'p>],
        value_stuck: Option<&str>,
    ) -> Refinement<CPrecision, Settled> {
        let p = self.p;
        let target = ex.arg.node(*nodes.last().expect("a path"));
        let blocks: Option<Vec<Block>> =
            target.state.data.pred.as_ref().map(|s| s.abstract_path().iter().map(|a| a.block.clone()).collect());
        let root_depth = ex.arg.node(nodes[0]).state.stack.depth();
        let mut candidate: Vec<(OpCtx, usize)> =
            ops.iter().enumerate().map(|(i, o)| (*o, ex.arg.node(nodes[i]).state.stack.depth())).collect();
        if let Some(bl) = blocks.as_ref().filter(|bl| bl.iter().any(|b| b.linear().is_none())) {
            self.stats.smt_queries += 1;
            match check_blocks(p, bl, self.cancel) {
                BlocksResult::Infeasible => return self.refine_predicates(cpa, ex, nodes, bl),
                BlocksResult::Path(path) => candidate = with_depths(p, &path, root_depth),
                BlocksResult::Unknown(why) => return self.gave_up(UnknownReason::Solver(why)),
            }
        }
        let candidate_ops: Vec<OpCtx> = candidate.iter().map(|(o, _)| *o).collect();
        self.stats.smt_queries += 1;
        let blocked = |why: UnknownReason| Refinement::Settled(Settled::Blocked(why));
        match check_path(p, &candidate_ops, self.cancel) {
            PathResult::Feasible(v) => Refinement::Settled(Settled::Violation(build::trace(p, &candidate, &v))),
            PathResult::Infeasible if self.cfg.analysis.predicates() => match &blocks {
                Some(bl) if bl.iter().all(|b| b.linear().is_some()) => self.refine_predicates(cpa, ex, nodes, bl),
                _ => blocked(UnknownReason::RefinementFailed("the bit-precise checks of the error paths disagree".into())),
            },
            PathResult::Infeasible => blocked(UnknownReason::RefinementFailed(
                value_stuck
                    .unwrap_or(
                        "an error path is infeasible, but the explicit-value analysis cannot refute it \
                         (it needs relations between variables)",
                    )
                    .into(),
            )),
            PathResult::Imprecise(why) => blocked(UnknownReason::Imprecision(why)),
            PathResult::Unknown(why) => self.gave_up(UnknownReason::Solver(why)),
        }
    }

    /// A query gave up: because time ran out, or on its own.
    fn gave_up(&self, why: UnknownReason) -> Refinement<CPrecision, Settled> {
        match self.cancel.check() {
            Err(i) => Refinement::Interrupted(i),
            Ok(()) => Refinement::Settled(Settled::Blocked(why)),
        }
    }

    /// Predicates from interpolants at the path's abstraction states (cut after every
    /// abstraction state strictly inside the path).
    fn refine_predicates(
        &mut self,
        cpa: &Cegar<'p>,
        ex: &Exploration<Cegar<'p>>,
        nodes: &[ArgId],
        blocks: &[Block],
    ) -> Refinement<CPrecision, Settled> {
        let cuts: Vec<Cut> = nodes[1..nodes.len() - 1]
            .iter()
            .filter(|&&id| ex.arg.node(id).state.data.pred.as_ref().is_some_and(|s| s.is_abstraction()))
            .map(|&id| {
                let n = ex.arg.node(id);
                Cut { id, loc: n.state.loc, precision: &n.prec.pred }
            })
            .collect();
        match pred_refiner::refine(self.p, &cpa.data.table, &cuts, blocks, &self.prec.pred, &self.cfg.predicate.interpolation, self.cancel)
        {
            PredRefinement::Spurious { precision, pivot } => {
                Refinement::Spurious { precision: CPrecision { value: self.prec.value.clone(), pred: Arc::new(precision) }, pivot }
            }
            PredRefinement::Failed(why) => Refinement::Settled(Settled::Blocked(why)),
            PredRefinement::Interrupted(i) => Refinement::Interrupted(i),
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

/// The operations of a path with the call depth before each.
fn with_depths<'p>(p: &'p Program, path: &[(Op, bool)], start: usize) -> Vec<(OpCtx<'p>, usize)> {
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

/// Candidate invariants from the final ARG: at each cut point, the values every reached state
/// agrees on, or their range.
fn value_candidates<'p>(p: &Program, ex: &Exploration<Cegar<'p>>) -> Annotations {
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
    let mut out = Annotations::new();
    for ((f, node), states) in at {
        let mut conj = Vec::new();
        let Some(first) = states.first() else { continue };
        for v in first.vars() {
            let info = p.var(v);
            if info.synthetic || info.pointer || !matches!(info.kind, VarKind::Int(_)) {
                continue;
            }
            if v.func().is_some_and(|g| g != f) {
                continue;
            }
            let vals: Option<BTreeSet<i128>> = states.iter().map(|s| s.get(v)).collect();
            let Some(vals) = vals else { continue };
            let t = info.int_ty();
            let var = Expr::Var(v, t);
            let cmp = |op, c: i128| Expr::Binary(op, Box::new(var.clone()), Box::new(Expr::Const(c, t)), crate::ir::IntTy::INT);
            let (lo, hi) = (*vals.iter().next().expect("non-empty"), *vals.iter().next_back().expect("non-empty"));
            if lo == hi {
                conj.push(cmp(BinOp::Eq, lo));
            } else {
                // `lo <= v && v <= hi`, the way people write ranges.
                conj.push(Expr::Binary(BinOp::Le, Box::new(Expr::Const(lo, t)), Box::new(var.clone()), crate::ir::IntTy::INT));
                conj.push(cmp(BinOp::Le, hi));
            }
        }
        if !conj.is_empty() {
            out.insert((f, node), conj);
        }
    }
    out
}
