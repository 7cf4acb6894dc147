//! Predicate abstraction with interpolant-based transition relation approximation (Jhala &
//! McMillan, seed 003 §4 and §6.1, Fig. 1; extraction seeds-002-003.md part B): instead of
//! computing abstract images (exactly, or Cartesian as Slam and Blast do), every operation
//! `r` has a propositional approximation `T̂(r)` over the predicate Booleans of its source
//! and target, starting from `true`, and the approximate program is model-checked with BDDs.
//!
//! - **Model checking** the approximate program: breadth-first BDD reachability over
//!   locations × valuations of the predicates; a location is a CFA node with the call
//!   sites above it (non-recursive programs; 003 has no procedures, and recursion is the
//!   summary analysis's job). A reached target gives one abstract path (§6.1: one path per
//!   iteration).
//! - **Refinement of the approximation**: the path is checked in the exact abstraction
//!   (`smt::tra::transition_interpolants`, concrete symbols hidden per step); if it is
//!   infeasible there, the symmetric transition interpolants are conjoined to `T̂` of every
//!   operation of the path (all occurrences), which rules the path out for good.
//! - **Predicate refinement** (§8: Blast falls back to HJMM04): a path feasible in the exact
//!   abstraction is checked concretely, bit-precisely; a feasible one is a confirmed
//!   violation (soundness rule 1), an infeasible one adds predicates from interpolants.
//!   Learned transition interpolants stay valid when predicates are added (B.1.10).
//!
//! A target the approximate program cannot reach is unreachable in the program: `T̂` is
//! implied by the exact abstraction, which over-approximates the C semantics.

pub mod smt;

use std::collections::{BTreeMap, HashMap};

use biodivine_lib_bdd::{Bdd, BddVariable, BddVariableSet};

use crate::analyses::tra::smt::{discover, transition_interpolants, Clause, Lit, PathCheck, Predicates};
use crate::cfa::CallSite;
use crate::cfa::OpCtx;
use crate::cfa::{EdgeKind, NodeId, Program};
use crate::core::Limit;
use crate::core::{Cancel, Op};
use crate::ir::FuncId;
use crate::properties::PropertyKey;
use crate::report::UnknownReason;
use crate::smt::interpolate::Strategy;
use crate::smt::path::{check_path, PathResult, Violation};

/// Locations (CFA node and call sites) the analysis may have.
pub const MAX_LOCATIONS: usize = 200_000;

/// Predicates a run may have (each is two BDD variables).
pub const MAX_PREDICATES: usize = 40;

/// Options of the analysis.
#[derive(Clone, Debug)]
pub struct TraConfig {
    pub max_refinements: u64,
    pub interpolation: Vec<Strategy>,
}

/// What the analysis ends with. Properties neither violated nor unknown are proved when
/// `open_reason` is `None`.
pub struct TraResult<'p> {
    pub violated: BTreeMap<PropertyKey, Violation<'p>>,
    pub unknown: BTreeMap<PropertyKey, UnknownReason>,
    pub open_reason: Option<UnknownReason>,
    /// Refinements of the approximation (transition interpolants learned from one path).
    pub approximation_refinements: u64,
    /// Refinements that added predicates.
    pub predicate_refinements: u64,
    pub smt_queries: u64,
    /// Abstract states (location, valuation) of the last round, counted as BDD minterms.
    pub states: u64,
    pub predicates: Vec<String>,
    /// The learned approximations, one line per operation with a non-trivial one.
    pub approximations: Vec<String>,
}

struct Location {
    stack: Vec<CallSite>,
    func: FuncId,
    node: NodeId,
}

/// The locations the start function reaches, with their operations.
struct Graph {
    locs: Vec<Location>,
    succ: Vec<Vec<(Op, usize)>>,
    pred: Vec<Vec<(Op, usize)>>,
}

impl Graph {
    fn build(p: &Program, cancel: &Cancel) -> Result<Graph, UnknownReason> {
        let mut g = Graph { locs: Vec::new(), succ: Vec::new(), pred: Vec::new() };
        let mut ids: HashMap<(Vec<CallSite>, FuncId, NodeId), usize> = HashMap::new();
        let mut intern = |g: &mut Graph, stack: Vec<CallSite>, func: FuncId, node: NodeId| -> Result<usize, UnknownReason> {
            if let Some(&i) = ids.get(&(stack.clone(), func, node)) {
                return Ok(i);
            }
            if g.locs.len() >= MAX_LOCATIONS {
                return Err(UnknownReason::Limit(Limit::Bound(format!("more than {MAX_LOCATIONS} locations once calls are expanded"))));
            }
            ids.insert((stack.clone(), func, node), g.locs.len());
            g.locs.push(Location { stack, func, node });
            g.succ.push(Vec::new());
            g.pred.push(Vec::new());
            Ok(g.locs.len() - 1)
        };
        let start = intern(&mut g, Vec::new(), p.start, p.cfa(p.start).entry)?;
        let mut work = vec![start];
        let mut done = vec![false];
        while let Some(l) = work.pop() {
            if std::mem::replace(&mut done[l], true) {
                continue;
            }
            cancel.check().map_err(UnknownReason::from)?;
            let (stack, f, n) = (g.locs[l].stack.clone(), g.locs[l].func, g.locs[l].node);
            let cfa = p.cfa(f);
            let mut out: Vec<(Op, usize)> = Vec::new();
            for (e, edge) in cfa.out_edges(n) {
                if let EdgeKind::CallSummary(call) = &edge.kind {
                    let callee = call.callee;
                    if callee == f || stack.iter().any(|(h, _)| *h == callee) {
                        return Err(UnknownReason::NotProved(format!(
                            "recursion ({} calls itself); the summary analysis handles recursion",
                            p.cfa(callee).name
                        )));
                    }
                    let mut inner = stack.clone();
                    inner.push((f, e));
                    out.push((Op::Call(f, e), intern(&mut g, inner, callee, p.cfa(callee).entry)?));
                } else {
                    out.push((Op::Edge(f, e), intern(&mut g, stack.clone(), f, edge.dst)?));
                }
            }
            if n == cfa.exit {
                if let Some(&(h, e)) = stack.last() {
                    let dst = p.cfa(h).edge(e).dst;
                    out.push((Op::Return(h, e), intern(&mut g, stack[..stack.len() - 1].to_vec(), h, dst)?));
                }
            }
            for &(op, to) in &out {
                g.pred[to].push((op, l));
                if done.len() <= to {
                    done.resize(to + 1, false);
                }
                work.push(to);
            }
            g.succ[l] = out;
        }
        Ok(g)
    }

    fn property(&self, p: &Program, l: usize) -> Option<PropertyKey> {
        let loc = &self.locs[l];
        let cfa = p.cfa(loc.func);
        let t = cfa.node(loc.node).target?;
        let site = if cfa.assert_helper { loc.stack.last().copied() } else { None };
        Some(PropertyKey { func: loc.func, target: t, site })
    }
}

/// BDDs over the predicate Booleans: variable `2j` is predicate `j` now, `2j+1` next.
struct Space {
    vars: BddVariableSet,
    n: usize,
}

impl Space {
    fn new(n: usize) -> Space {
        Space { vars: BddVariableSet::new_anonymous((2 * n) as u16), n }
    }

    fn var(&self, pred: usize, next: bool) -> BddVariable {
        BddVariable::from_index(2 * pred + next as usize)
    }

    fn clauses(&self, cs: &[Clause]) -> Bdd {
        let mut r = self.vars.mk_true();
        for c in cs {
            let mut d = self.vars.mk_false();
            for l in c {
                d = d.or(&self.vars.mk_literal(self.var(l.pred as usize, l.next), l.positive));
            }
            r = r.and(&d);
        }
        r
    }

    fn current(&self) -> Vec<BddVariable> {
        (0..self.n).map(|j| self.var(j, false)).collect()
    }

    fn next(&self) -> Vec<BddVariable> {
        (0..self.n).map(|j| self.var(j, true)).collect()
    }

    /// `post(states)` under a transition relation, over the current variables.
    fn image(&self, states: &Bdd, t: &Bdd) -> Bdd {
        let mut r = states.and(t).exists(&self.current());
        for j in 0..self.n {
            r = r.substitute(self.var(j, true), &self.vars.mk_var(self.var(j, false)));
        }
        r
    }

    /// One valuation of `states` (the first in variable order: deterministic), as a minterm
    /// over the current (or, with `next`, the next-state) variables.
    fn pick(&self, states: &Bdd, next: bool) -> Option<Bdd> {
        let v = states.exists(&self.next()).first_valuation()?;
        let mut m = self.vars.mk_true();
        for j in 0..self.n {
            m = m.and(&self.vars.mk_literal(self.var(j, next), v.value(self.var(j, false))));
        }
        Some(m)
    }
}

/// Runs the analysis on every property not in `decided`.
pub fn run<'p>(p: &'p Program, cfg: &TraConfig, cancel: &Cancel, decided: &[PropertyKey]) -> TraResult<'p> {
    let mut result = TraResult {
        violated: BTreeMap::new(),
        unknown: BTreeMap::new(),
        open_reason: None,
        approximation_refinements: 0,
        predicate_refinements: 0,
        smt_queries: 0,
        states: 0,
        predicates: Vec::new(),
        approximations: Vec::new(),
    };
    let graph = match Graph::build(p, cancel) {
        Ok(g) => g,
        Err(why) => {
            result.open_reason = Some(why);
            return result;
        }
    };
    let mut preds = Predicates::default();
    let mut approx: HashMap<Op, Vec<Clause>> = HashMap::new();
    loop {
        if let Err(i) = cancel.check() {
            result.open_reason = Some(UnknownReason::from(i));
            break;
        }
        let done = |k: &PropertyKey| decided.contains(k) || result.violated.contains_key(k) || result.unknown.contains_key(k);
        let space = Space::new(preds.len());
        let (path, key) = match reach(p, &graph, &space, &approx, &done, &mut result.states, cancel) {
            Ok(None) => break,
            Ok(Some(found)) => found,
            Err(why) => {
                result.open_reason = Some(why);
                break;
            }
        };
        if result.approximation_refinements + result.predicate_refinements >= cfg.max_refinements {
            result.open_reason = Some(UnknownReason::Limit(Limit::Refinements(cfg.max_refinements)));
            break;
        }
        let steps: Vec<(OpCtx<'p>, usize)> =
            path.iter().map(|&(op, l)| (crate::cfa::op_ctx(p, op, false), graph.locs[l].stack.len())).collect();
        let ctxs: Vec<OpCtx<'p>> = steps.iter().map(|(o, _)| *o).collect();
        let current: Vec<&[Clause]> = path.iter().map(|(op, _)| approx.get(op).map_or(&[][..], |v| v.as_slice())).collect();
        match transition_interpolants(p, &preds, &ctxs, &current, &mut result.smt_queries, cancel) {
            PathCheck::Refuted(itps) => {
                let mut learned = 0;
                for ((op, _), cs) in path.iter().zip(itps) {
                    let known = approx.entry(*op).or_default();
                    for c in cs {
                        if !known.contains(&c) {
                            known.push(c);
                            learned += 1;
                        }
                    }
                }
                if learned == 0 {
                    // Cannot happen (the path was feasible under the old approximation);
                    // stop rather than loop.
                    result.unknown.insert(
                        key,
                        UnknownReason::RefinementFailed("the transition interpolants did not refine the approximation".into()),
                    );
                    continue;
                }
                result.approximation_refinements += 1;
                tracing::debug!("tra: path of {} operations refuted in the exact abstraction; {} clauses learned", path.len(), learned);
            }
            PathCheck::Feasible => {
                result.smt_queries += 1;
                match check_path(p, &ctxs, cancel) {
                    PathResult::Feasible(values) => {
                        result.violated.insert(key, Violation { steps, values });
                    }
                    PathResult::Infeasible => match discover(p, &ctxs, &mut preds, &cfg.interpolation, MAX_PREDICATES, cancel) {
                        Ok(n) if n > 0 => {
                            result.predicate_refinements += 1;
                            tracing::debug!(
                                "tra: {} predicates: {}",
                                preds.len(),
                                (0..preds.len()).map(|i| preds.text(i)).collect::<Vec<_>>().join(", ")
                            );
                        }
                        Ok(_) if preds.len() >= MAX_PREDICATES => {
                            result.unknown.insert(key, UnknownReason::Limit(Limit::Predicates(MAX_PREDICATES)));
                        }
                        Ok(_) => {
                            result.unknown.insert(
                                key,
                                UnknownReason::RefinementFailed("an infeasible error path could not be refined with new predicates".into()),
                            );
                        }
                        Err(e) => {
                            result.unknown.insert(
                                key,
                                UnknownReason::RefinementFailed(format!("an infeasible error path could not be refined ({e})")),
                            );
                        }
                    },
                    PathResult::Imprecise(why) => {
                        result.unknown.insert(key, UnknownReason::Imprecision(why));
                    }
                    PathResult::Unknown(why) => {
                        result.unknown.insert(key, UnknownReason::Solver(why));
                    }
                }
            }
            PathCheck::Unknown(why) => {
                if let Err(i) = cancel.check() {
                    result.open_reason = Some(UnknownReason::from(i));
                    break;
                }
                result.unknown.insert(key, UnknownReason::RefinementFailed(why));
            }
        }
    }
    result.predicates = (0..preds.len()).map(|i| preds.text(i).to_string()).collect();
    result.approximations = describe(p, &preds, &approx);
    result
}

/// One round of model checking: the first target (in breadth-first order) of a property not
/// `done` that the approximate program reaches, with the path to it as (operation, source
/// location) pairs; `None` if no such target is reachable.
#[allow(clippy::type_complexity)]
fn reach(
    p: &Program,
    g: &Graph,
    space: &Space,
    approx: &HashMap<Op, Vec<Clause>>,
    done: &dyn Fn(&PropertyKey) -> bool,
    states: &mut u64,
    cancel: &Cancel,
) -> Result<Option<(Vec<(Op, usize)>, PropertyKey)>, UnknownReason> {
    let mut relations: HashMap<Op, Bdd> = HashMap::new();
    let mut relation =
        |op: Op| -> Bdd { relations.entry(op).or_insert_with(|| space.clauses(approx.get(&op).map_or(&[][..], |v| v.as_slice()))).clone() };
    let mut reached: Vec<Bdd> = vec![space.vars.mk_false(); g.locs.len()];
    reached[0] = space.vars.mk_true();
    // Layer t: the states first reached after t operations, by location.
    let mut layers: Vec<BTreeMap<usize, Bdd>> = vec![BTreeMap::from([(0, space.vars.mk_true())])];
    loop {
        let frontier = layers.last().expect("one layer at least");
        if frontier.is_empty() {
            *states = reached.iter().map(|b| b.cardinality() as u64 >> space.n).sum();
            return Ok(None);
        }
        for (&l, s) in frontier {
            if let Some(key) = g.property(p, l).filter(|k| !done(k)) {
                return Ok(Some((backtrack(g, space, &layers, l, s, &mut relation), key)));
            }
        }
        cancel.check().map_err(UnknownReason::from)?;
        let mut next: BTreeMap<usize, Bdd> = BTreeMap::new();
        for (&l, s) in frontier {
            for &(op, to) in &g.succ[l] {
                let img = space.image(s, &relation(op));
                let new = img.and_not(&reached[to]);
                if !new.is_false() {
                    reached[to] = reached[to].or(&new);
                    let e = next.entry(to).or_insert_with(|| space.vars.mk_false());
                    *e = e.or(&new);
                }
            }
        }
        layers.push(next);
    }
}

/// A path from the start to `(l, states)` of the last layer, state by state backwards: each
/// state of layer `t` has a predecessor in layer `t-1`.
fn backtrack(
    g: &Graph,
    space: &Space,
    layers: &[BTreeMap<usize, Bdd>],
    l: usize,
    states: &Bdd,
    relation: &mut dyn FnMut(Op) -> Bdd,
) -> Vec<(Op, usize)> {
    let mut path = Vec::new();
    let (mut loc, mut state) = (l, space.pick(states, false).expect("a non-empty layer"));
    for t in (1..layers.len()).rev() {
        // The state as a next-state minterm, to take its pre-image.
        let target = space.pick(&state, true).expect("a minterm");
        let step = g.pred[loc].iter().find_map(|&(op, from)| {
            let before = layers[t - 1].get(&from)?;
            let pre = relation(op).and(&target).exists(&space.next()).and(before);
            (!pre.is_false()).then_some((op, from, pre))
        });
        let (op, from, pre) = step.expect("a state first reached in layer t has a predecessor in layer t-1");
        path.push((op, from));
        loc = from;
        state = space.pick(&pre, false).expect("a non-empty pre-image");
    }
    path.reverse();
    path
}

/// The learned approximations as text, for the report.
fn describe(p: &Program, preds: &Predicates, approx: &HashMap<Op, Vec<Clause>>) -> Vec<String> {
    let lit = |l: &Lit| format!("{}({}){}", if l.positive { "" } else { "!" }, preds.text(l.pred as usize), if l.next { "'" } else { "" });
    let mut out: Vec<(Op, String)> = approx
        .iter()
        .filter(|(_, cs)| !cs.is_empty())
        .map(|(op, cs)| {
            let (f, e) = match *op {
                Op::Edge(f, e) | Op::Call(f, e) | Op::Return(f, e) => (f, e),
            };
            let line = p.func(f).abs(p.cfa(f).edge(e).span).line;
            let body: Vec<String> = cs
                .iter()
                .map(|c| if c.is_empty() { "false".to_string() } else { c.iter().map(lit).collect::<Vec<_>>().join(" || ") })
                .collect();
            (*op, format!("line {}: {}", line, body.join(" && ")))
        })
        .collect();
    out.sort_by_key(|(op, _)| *op);
    out.into_iter().map(|(_, s)| s).collect()
}
