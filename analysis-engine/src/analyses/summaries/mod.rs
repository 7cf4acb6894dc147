//! Interprocedural predicate abstraction with procedure summaries, after seed 002 (Esparza,
//! Kiefer, Schwoon, "Abstraction Refinement with Craig Interpolation and Symbolic Pushdown
//! Systems", §3–§5): recursion is handled by summaries instead of a call stack.
//!
//! - **Abstract program** (§5): a Boolean program over the current predicates, one predicate
//!   list per control point ([`precision`]: a procedure's points share their predicates by
//!   default; `Scope::Location` keeps each where it was found, as the paper does).
//!   Predicates are relative to the procedure's entry values (the
//!   `x@entry` copies of [`program`], §4.3), so a valuation at the exit is a procedure-effect
//!   (summary) valuation. Abstract rules are exact existential abstractions computed on
//!   demand (`smt::summary`): intraprocedural edges, push (callee entry from the caller's
//!   valuation) and eval (caller after the call from its valuation at the call and the
//!   callee's exit valuation).
//! - **Reachability** (A.1.5 of seeds-002-003.md): summary tabulation (path edges relative to
//!   the procedure's entry valuation, summaries per entry valuation), which handles
//!   recursion; every derived fact keeps its witness (the rule and the facts it came from),
//!   Moped's witness graph, in which recursive invocations are distinct nodes.
//! - **Counterexamples**: the witness of an error fact, expanded into an interprocedural
//!   path (a callee's sub-path is inlined at each eval), is checked by the same bit-precise
//!   path check as every other violation (soundness rule 1) and reported with the call depth
//!   of each step.
//! - **Refinement**: an infeasible path gives sequence interpolants (Spacer / QE / Farkas of
//!   `smt::interpolate`); their atoms become predicates at the cut's control point,
//!   rewritten relative to its procedure's entry. The counterexample DAG of a round is
//!   refined first (§4.2–§4.3): with Spacer's solution of its Horn clauses (`smt::horn`), or with the
//!   strongest, weakest or conciliated interpolants of §2 by quantifier elimination
//!   (`smt::families`, `SummaryConfig::family`), whose atoms or (`Form::Formulas`, the
//!   paper's setting) whole formulas ([`formula`]) become predicates. Their BDD
//!   counterparts are in [`interpolants`].

pub mod families;
pub mod formula;
pub mod horn;
pub mod interpolants;
pub mod precision;
pub mod program;
mod round;
pub mod rules;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use crate::analyses::summaries::families::family_predicates;
use crate::analyses::summaries::horn::{dag_predicates, DagArc, DagFailure, DagNode};
use crate::analyses::summaries::rules::{call_image, initial_image, redundant_boolean, return_image, EdgeRule, Image, Valuation};
use crate::cfa::CallSite;
use crate::cfa::{EdgeId, EdgeKind, NodeId, Program};
use crate::cfa::{OpCtx, OpKind};
use crate::core::Limit;
use crate::core::{Cancel, Interrupt, Op};
use crate::ir::{FuncId, Stmt, VarId};
use crate::properties::PropertyKey;
use crate::report::UnknownReason;
use crate::smt::interpolate::Strategy;
use crate::smt::linpred::LinPred;
use crate::smt::path::Violation;
use formula::{Form, Pred};
use precision::{Added, Precision, Scope};

/// Facts the tabulation may derive in one round.
pub const MAX_FACTS: usize = 400_000;

/// Operations a counterexample may have once sub-paths are inlined.
pub const MAX_PATH: usize = 200_000;

/// Nodes of a counterexample DAG refined as a whole (larger ones: one path at a time).
pub const MAX_DAG_NODES: usize = 3_000;

/// Facts a round derives beyond twice the count at its first target (see `tabulate`).
const DAG_HORIZON: usize = 1_000;

/// Options of the summary analysis.
#[derive(Clone, Debug)]
pub struct SummaryConfig {
    pub max_refinements: u64,
    pub interpolation: Vec<Strategy>,
    /// Refine from the counterexample DAG of a round (seed 002 §4.2), falling back to one
    /// path; `false`: one path per round.
    pub dag: bool,
    /// The interpolant family a DAG is refined with (seed 002 §2, by quantifier
    /// elimination), falling back to Spacer's solution; `None`: Spacer's solution.
    pub family: Option<interpolants::Kind>,
    /// Where an interpolant's atoms are tracked: in the whole procedure or at their point.
    pub scope: Scope,
    /// Whether a family interpolant of a DAG node adds its atoms or itself.
    pub form: Form,
}

impl Default for SummaryConfig {
    fn default() -> Self {
        SummaryConfig {
            max_refinements: 200,
            interpolation: Strategy::ALL.to_vec(),
            dag: true,
            family: None,
            scope: Scope::Function,
            form: Form::Atoms,
        }
    }
}

/// What the analysis ends with. Properties that are neither violated nor unknown are proved
/// when `open_reason` is `None`.
pub struct SummaryResult<'p> {
    pub violated: BTreeMap<PropertyKey, Violation<'p>>,
    pub unknown: BTreeMap<PropertyKey, UnknownReason>,
    pub open_reason: Option<UnknownReason>,
    pub refinements: u64,
    pub smt_queries: u64,
    /// Facts of the last tabulation.
    pub facts: u64,
    /// The final predicates, as `function: predicate`.
    pub predicates: Vec<String>,
}

/// The calling context of a fact: the procedure's valuation at its entry, and the call site
/// for `__VERIFIER_assert`-style helpers (whose properties are per call site).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
struct Ctx {
    site: Option<CallSite>,
    entry: Valuation,
}

/// A path edge: at `node` of `func`, in context `ctx`, the predicates have valuation `val`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
struct Fact {
    func: FuncId,
    node: NodeId,
    ctx: Ctx,
    val: Valuation,
}

/// How a fact was first derived (the witness graph).
#[derive(Copy, Clone, Debug)]
enum Why {
    Init,
    Step(Fact, EdgeId),
    /// Entry of a callee, from the caller's fact at the call.
    Call(Fact, EdgeId),
    /// After a call: the caller's fact at the call and the callee's exit fact.
    Return(Fact, Fact, EdgeId),
}

/// The state of one round of tabulation.
struct Tabulation {
    why: HashMap<Fact, Why>,
    /// The order in which facts were derived.
    order: HashMap<Fact, usize>,
    /// Derivations of a fact after its first one, from facts derived before it (the witness
    /// graph with all of them is the counterexample DAG; the order keeps it acyclic).
    more: HashMap<Fact, Vec<Why>>,
    /// Facts at the targets of undecided properties, in the order they were reached.
    targets: Vec<(Fact, PropertyKey)>,
    work: VecDeque<Fact>,
    callers: HashMap<(FuncId, Ctx), Vec<(Fact, EdgeId)>>,
    exits: HashMap<(FuncId, Ctx), Vec<Fact>>,
}

enum RoundEnd {
    /// Every fact derived; no undecided property reachable.
    Exhausted,
    /// Facts at targets of undecided properties (`Tabulation::targets`) were reached.
    Targets,
    GaveUp(UnknownReason),
    Interrupted(Interrupt),
}

struct Analysis<'a, 'p> {
    p: &'p Program,
    copies: &'a program::WithCopies,
    cancel: &'a Cancel,
    prec: Precision,
    edge_cache: HashMap<(FuncId, EdgeId, Valuation), Vec<Valuation>>,
    rules: HashMap<(FuncId, EdgeId), EdgeRule>,
    call_cache: HashMap<(FuncId, EdgeId, Valuation), Vec<Valuation>>,
    ret_cache: HashMap<(FuncId, EdgeId, Valuation, Valuation), Vec<Valuation>>,
    queries: u64,
    unsupported: Option<UnknownReason>,
}

impl<'a, 'p> Analysis<'a, 'p> {
    /// The predicates at the source and at the target of edge `e` of `f`.
    fn around(&self, f: FuncId, e: EdgeId) -> (Vec<Pred>, Vec<Pred>) {
        let edge = self.p.cfa(f).edge(e);
        (self.prec.at(f, edge.src), self.prec.at(f, edge.dst))
    }

    fn image(&mut self, r: Image) -> Result<Vec<Valuation>, String> {
        self.queries += 1;
        match r {
            Image::Valuations(v) => Ok(v),
            Image::GaveUp(why) => Err(why),
        }
    }

    fn edge(&mut self, f: FuncId, e: EdgeId, val: Valuation) -> Result<Vec<Valuation>, String> {
        if let Some(v) = self.edge_cache.get(&(f, e, val)) {
            return Ok(v.clone());
        }
        if !self.rules.contains_key(&(f, e)) {
            let (pre, post) = self.around(f, e);
            let rule = EdgeRule::new(self.p, f, e, &pre, &post, self.cancel);
            self.rules.insert((f, e), rule);
        }
        let r = self.rules[&(f, e)].image(val);
        let v = self.image(r)?;
        self.edge_cache.insert((f, e, val), v.clone());
        Ok(v)
    }

    fn call(&mut self, f: FuncId, e: EdgeId, g: FuncId, val: Valuation) -> Result<Vec<Valuation>, String> {
        if let Some(v) = self.call_cache.get(&(f, e, val)) {
            return Ok(v.clone());
        }
        let pre = self.prec.at(f, self.p.cfa(f).edge(e).src);
        let post = self.prec.at(g, self.p.cfa(g).entry);
        let r = call_image(self.p, f, e, &pre, val, &post, self.cancel);
        let v = self.image(r)?;
        self.call_cache.insert((f, e, val), v.clone());
        Ok(v)
    }

    fn ret(&mut self, f: FuncId, e: EdgeId, g: FuncId, val: Valuation, exit: Valuation) -> Result<Vec<Valuation>, String> {
        if let Some(v) = self.ret_cache.get(&(f, e, val, exit)) {
            return Ok(v.clone());
        }
        let (pre, post) = self.around(f, e);
        let callee = self.prec.at(g, self.p.cfa(g).exit);
        let copies = program::copies_of(self.copies, g).to_vec();
        let r = return_image(self.p, f, e, &pre, val, &callee, &copies, exit, &post, self.cancel);
        let v = self.image(r)?;
        self.ret_cache.insert((f, e, val, exit), v.clone());
        Ok(v)
    }

    fn property(&self, fact: &Fact) -> Option<PropertyKey> {
        let cfa = self.p.cfa(fact.func);
        let t = cfa.node(fact.node).target?;
        let site = if cfa.assert_helper { fact.ctx.site } else { None };
        Some(PropertyKey { func: fact.func, target: t, site })
    }

    fn add(&self, tab: &mut Tabulation, fact: Fact, why: Why) {
        match tab.why.entry(fact) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(why);
                tab.order.insert(fact, tab.order.len());
                tab.work.push_back(fact);
            }
            std::collections::hash_map::Entry::Occupied(_) => {
                let k = tab.order[&fact];
                if why_sources(&why).iter().all(|s| tab.order.get(s).is_some_and(|&j| j < k)) {
                    tab.more.entry(fact).or_default().push(why);
                }
            }
        }
    }

    /// One round of tabulation under the current predicates. Facts at the target of a
    /// property not in `decided` are collected (not expanded); once one is reached, the
    /// round goes on for at most as many facts again (plus `DAG_HORIZON`), so that the
    /// counterexample DAG holds the other error paths of about the same length.
    fn tabulate(&mut self, decided: &dyn Fn(&PropertyKey) -> bool) -> (Tabulation, RoundEnd) {
        let mut tab = Tabulation {
            why: HashMap::new(),
            order: HashMap::new(),
            more: HashMap::new(),
            targets: Vec::new(),
            work: VecDeque::new(),
            callers: HashMap::new(),
            exits: HashMap::new(),
        };
        let mut horizon = usize::MAX;
        let start = self.p.start;
        let init = match initial_image(self.p, &self.prec.at(start, self.p.cfa(start).entry), self.cancel) {
            Image::Valuations(v) => v,
            Image::GaveUp(why) => return (tab, RoundEnd::GaveUp(UnknownReason::Solver(why))),
        };
        let entry = self.p.cfa(start).entry;
        for val in init {
            let ctx = Ctx { site: None, entry: val };
            self.add(&mut tab, Fact { func: start, node: entry, ctx, val }, Why::Init);
        }
        while let Some(fact) = tab.work.pop_front() {
            if let Err(i) = self.cancel.check() {
                return (tab, RoundEnd::Interrupted(i));
            }
            if tab.why.len() > MAX_FACTS {
                if !tab.targets.is_empty() {
                    break;
                }
                return (tab, RoundEnd::GaveUp(UnknownReason::Limit(Limit::Bound(format!("more than {} abstract facts", MAX_FACTS)))));
            }
            if tab.why.len() > horizon {
                break;
            }
            if let Some(key) = self.property(&fact) {
                if !decided(&key) {
                    if tab.targets.is_empty() {
                        horizon = 2 * tab.why.len() + DAG_HORIZON;
                    }
                    tab.targets.push((fact, key));
                    continue;
                }
            }
            let cfa = self.p.cfa(fact.func);
            if fact.node == cfa.exit {
                let key = (fact.func, fact.ctx);
                tab.exits.entry(key).or_default().push(fact);
                let callers = tab.callers.get(&key).cloned().unwrap_or_default();
                for (caller, e) in callers {
                    let dst = self.p.cfa(caller.func).edge(e).dst;
                    let vals = match self.ret(caller.func, e, fact.func, caller.val, fact.val) {
                        Ok(v) => v,
                        Err(why) => return (tab, self.gave_up(why)),
                    };
                    for v in vals {
                        self.add(&mut tab, Fact { func: caller.func, node: dst, ctx: caller.ctx, val: v }, Why::Return(caller, fact, e));
                    }
                }
            }
            for &e in &cfa.node(fact.node).out {
                let edge = cfa.edge(e);
                match &edge.kind {
                    EdgeKind::CallSummary(call) => {
                        let g = call.callee;
                        let gcfa = self.p.cfa(g);
                        let entries = match self.call(fact.func, e, g, fact.val) {
                            Ok(v) => v,
                            Err(why) => return (tab, self.gave_up(why)),
                        };
                        for ev in entries {
                            let ctx = Ctx { site: gcfa.assert_helper.then_some((fact.func, e)), entry: ev };
                            let key = (g, ctx);
                            let list = tab.callers.entry(key).or_default();
                            if !list.iter().any(|(c, x)| *c == fact && *x == e) {
                                list.push((fact, e));
                            }
                            self.add(&mut tab, Fact { func: g, node: gcfa.entry, ctx, val: ev }, Why::Call(fact, e));
                            let exits = tab.exits.get(&key).cloned().unwrap_or_default();
                            for x in exits {
                                let vals = match self.ret(fact.func, e, g, fact.val, x.val) {
                                    Ok(v) => v,
                                    Err(why) => return (tab, self.gave_up(why)),
                                };
                                for v in vals {
                                    self.add(
                                        &mut tab,
                                        Fact { func: fact.func, node: edge.dst, ctx: fact.ctx, val: v },
                                        Why::Return(fact, x, e),
                                    );
                                }
                            }
                        }
                    }
                    kind => {
                        if let EdgeKind::Statement(Stmt::Unsupported(why)) | EdgeKind::Declaration(Stmt::Unsupported(why)) = kind {
                            self.unsupported.get_or_insert_with(|| UnknownReason::NotProved(format!("unsupported construct: {}", why)));
                        }
                        let vals = match self.edge(fact.func, e, fact.val) {
                            Ok(v) => v,
                            Err(why) => return (tab, self.gave_up(why)),
                        };
                        for v in vals {
                            self.add(&mut tab, Fact { func: fact.func, node: edge.dst, ctx: fact.ctx, val: v }, Why::Step(fact, e));
                        }
                    }
                }
            }
        }
        let end = if tab.targets.is_empty() { RoundEnd::Exhausted } else { RoundEnd::Targets };
        (tab, end)
    }

    /// Forgets the abstract rules after predicates were added.
    fn new_precision(&mut self) {
        if tracing::enabled!(tracing::Level::DEBUG) {
            let all = self.prec.all();
            for f in self.p.func_ids() {
                let shown: Vec<String> = all.iter().filter(|(g, _)| *g == f).map(|(_, x)| x.display(self.p).to_string()).collect();
                if !shown.is_empty() {
                    tracing::debug!("summaries: predicates of {}: {}", self.p.cfa(f).name, shown.join(", "));
                }
            }
        }
        self.edge_cache.clear();
        self.rules.clear();
        self.call_cache.clear();
        self.ret_cache.clear();
    }

    fn gave_up(&self, why: String) -> RoundEnd {
        // A query that ran into the run's deadline is the deadline's doing.
        if self.cancel.remaining_ms().is_some_and(|ms| ms < 100) {
            std::thread::sleep(std::time::Duration::from_millis(self.cancel.remaining_ms().unwrap_or(0) + 1));
        }
        match self.cancel.check() {
            Err(i) => RoundEnd::Interrupted(i),
            Ok(()) => RoundEnd::GaveUp(UnknownReason::Solver(why)),
        }
    }
}

/// The facts a derivation comes from.
fn why_sources(why: &Why) -> Vec<Fact> {
    match *why {
        Why::Init => Vec::new(),
        Why::Step(f, _) | Why::Call(f, _) => vec![f],
        Why::Return(c, x, _) => vec![c, x],
    }
}

/// Every derivation of a fact: the first, then the later ones from earlier facts.
fn derivations<'t>(tab: &'t Tabulation, f: &Fact) -> impl Iterator<Item = &'t Why> {
    tab.why.get(f).into_iter().chain(tab.more.get(f).into_iter().flatten())
}

/// The counterexample DAG of a round (seed 002 §4.2–§4.3): the facts from which a target
/// fact derives, with all their derivations (`None` beyond `limit` nodes).
fn counterexample_dag(tab: &Tabulation, limit: usize) -> Option<Vec<DagNode>> {
    let mut seen: HashSet<Fact> = HashSet::new();
    let mut facts: Vec<Fact> = Vec::new();
    let mut stack: Vec<Fact> = tab.targets.iter().map(|(f, _)| *f).collect();
    while let Some(f) = stack.pop() {
        if !seen.insert(f) {
            continue;
        }
        if facts.len() >= limit {
            return None;
        }
        facts.push(f);
        for w in derivations(tab, &f) {
            stack.extend(why_sources(w));
        }
    }
    // Earlier facts first (the order of derivation is a topological order).
    facts.sort_by_key(|f| tab.order[f]);
    let index: HashMap<Fact, usize> = facts.iter().enumerate().map(|(i, f)| (*f, i)).collect();
    let nodes = facts
        .iter()
        .map(|f| {
            let arcs = derivations(tab, f)
                .map(|w| match *w {
                    Why::Init => DagArc::Init,
                    Why::Step(s, e) => DagArc::Step(index[&s], e),
                    Why::Call(c, e) => DagArc::Call(index[&c], e),
                    Why::Return(c, x, e) => DagArc::Return { caller: index[&c], exit: index[&x], edge: e },
                })
                .collect();
            DagNode { func: f.func, node: f.node, arcs, target: tab.targets.iter().any(|(t, _)| t == f) }
        })
        .collect();
    Some(nodes)
}

/// The interprocedural path the witness of `fact` stands for: a callee's sub-path (from its
/// entry fact to its exit fact) is inlined at each eval. `None` if it is too long.
fn witness_path(tab: &Tabulation, fact: Fact) -> Option<Vec<Op>> {
    enum Task {
        Expand(Fact, bool),
        Emit(Op),
    }
    let mut out = Vec::new();
    let mut stack = vec![Task::Expand(fact, false)];
    while let Some(t) = stack.pop() {
        if out.len() > MAX_PATH || stack.len() > MAX_PATH {
            return None;
        }
        match t {
            Task::Emit(op) => out.push(op),
            Task::Expand(f, sub) => match tab.why.get(&f)? {
                Why::Init => {}
                Why::Step(prev, e) => {
                    stack.push(Task::Emit(Op::Edge(prev.func, *e)));
                    stack.push(Task::Expand(*prev, sub));
                }
                Why::Call(caller, e) => {
                    // Inside a sub-path, the callee's entry is where the sub-path starts.
                    if !sub {
                        stack.push(Task::Emit(Op::Call(caller.func, *e)));
                        stack.push(Task::Expand(*caller, false));
                    }
                }
                Why::Return(caller, exit, e) => {
                    stack.push(Task::Emit(Op::Return(caller.func, *e)));
                    stack.push(Task::Expand(*exit, true));
                    stack.push(Task::Emit(Op::Call(caller.func, *e)));
                    stack.push(Task::Expand(*caller, sub));
                }
            },
        }
    }
    Some(out)
}

/// The operations of a path with their recursion flags and the call depth before each.
fn with_context<'p>(p: &'p Program, ops: &[Op]) -> Vec<(OpCtx<'p>, usize)> {
    let mut stack: Vec<FuncId> = vec![p.start];
    let mut out = Vec::with_capacity(ops.len());
    for &op in ops {
        let depth = stack.len() - 1;
        let recursive = match op {
            Op::Edge(..) => false,
            Op::Call(f, e) => {
                let g = p.cfa(f).edge(e).kind.callee().unwrap_or(f);
                let r = stack.contains(&g);
                stack.push(g);
                r
            }
            Op::Return(f, e) => {
                let g = p.cfa(f).edge(e).kind.callee().unwrap_or(f);
                stack.pop();
                stack.contains(&g)
            }
        };
        out.push((crate::cfa::op_ctx(p, op, recursive), depth));
    }
    out
}

/// The branch conditions of a path, per function (the fallback predicates, seed 001's
/// InferPred, as in the predicate analysis).
fn path_conditions(ops: &[(OpCtx, usize)]) -> Vec<(FuncId, LinPred)> {
    let mut out = Vec::new();
    for (op, _) in ops {
        if let OpKind::Edge(EdgeKind::Assume { cond, .. }) = op.kind {
            if let Some(pred) = crate::smt::linpred::from_condition(cond) {
                if pred.vars().all(|v| v.func().is_none() || v.func() == Some(op.from.func)) {
                    let e = (op.from.func, pred);
                    if !out.contains(&e) {
                        out.push(e);
                    }
                }
            }
        }
    }
    out
}

/// Adds a predicate at `node` of `f` (see [`Precision::add`]) unless it is trivial, known,
/// or the list is full (then sets `full`); counts it in `added`.
fn add_predicate(a: &mut Analysis, f: FuncId, node: Option<NodeId>, pred: Pred, added: &mut usize, full: &mut bool) {
    if pred.atom().is_some_and(|atom| trivial(a.p, atom)) {
        return;
    }
    if pred.atom().is_none() {
        // Formulas with the same Boolean differ in shape; the paper's BDDs are canonical.
        let known: Vec<Pred> = match node {
            Some(n) => a.prec.at(f, n),
            None => a.prec.all().into_iter().filter(|(g, _)| *g == f).map(|(_, q)| q).collect(),
        };
        if redundant_boolean(a.p, &pred, &known, a.cancel) {
            return;
        }
    }
    let wrapped = pred.atom().and_then(|atom| wrapped_equality(a.p, atom));
    match a.prec.add(f, node, pred) {
        Added::Known => return,
        Added::Full => {
            *full = true;
            return;
        }
        Added::New => *added += 1,
    }
    if let Some(w) = wrapped {
        add_predicate(a, f, node, w.into(), added, full);
    }
}

/// For an equality over unsigned variables of one width `w` that wrap-around can break
/// (`x == y + z`), the congruence modulo `2^w` that C's arithmetic keeps (`x ≡ y + z`):
/// `x = x + z; y = y + z` keeps `x == y` but not `x == y + z` when a sum wraps.
fn wrapped_equality(p: &Program, pred: &LinPred) -> Option<LinPred> {
    use crate::smt::linpred::Rel;
    if pred.rel != Rel::Eq || pred.terms.len() < 2 {
        return None;
    }
    let tys: Vec<_> = pred.vars().map(|v| p.var(v).int_ty()).collect();
    let w = tys[0].bits;
    if tys.iter().any(|t| t.signed || t.boolean || t.bits != w) || w >= 64 {
        return None;
    }
    // `x == y` is its own congruence on one width.
    if let [(_, 1), (_, -1)] | [(_, -1), (_, 1)] = pred.terms.as_slice() {
        if pred.constant == 0 {
            return None;
        }
    }
    LinPred::new(pred.terms.clone(), pred.constant, Rel::Mod(1i128 << u32::from(w)))
}

/// True if the predicate's truth follows from its variable's C type alone (a bound every
/// value satisfies, or none does): such predicates only multiply valuations.
fn trivial(p: &Program, pred: &LinPred) -> bool {
    use crate::smt::linpred::Rel;
    let [(v, c)] = pred.terms.as_slice() else { return false };
    let ty = p.var(*v).int_ty();
    let (lo, hi) = if *c > 0 { (c * ty.min(), c * ty.max()) } else { (c * ty.max(), c * ty.min()) };
    match pred.rel {
        // c·x + k <= 0 always (hi + k <= 0) or never (lo + k > 0).
        Rel::Le => hi + pred.constant <= 0 || lo + pred.constant > 0,
        Rel::Eq => lo + pred.constant > 0 || hi + pred.constant < 0,
        Rel::Mod(_) => false,
    }
}

/// Runs the summary analysis on `w.program` (the program with entry copies) for every
/// property not in `decided` (those are skipped: already violated or decided elsewhere).
/// Each round tabulates under the current predicates and, if an undecided target is
/// reached, checks and refines its counterexample (`round.rs`).
pub fn run<'p>(w: &'p program::WithCopies, cfg: &SummaryConfig, cancel: &Cancel, decided: &[PropertyKey]) -> SummaryResult<'p> {
    let p = &w.program;
    let mut a = Analysis {
        p,
        copies: w,
        cancel,
        prec: Precision::new(p.functions.len(), cfg.scope),
        edge_cache: HashMap::new(),
        rules: HashMap::new(),
        call_cache: HashMap::new(),
        ret_cache: HashMap::new(),
        queries: 0,
        unsupported: None,
    };
    let mut result = SummaryResult {
        violated: BTreeMap::new(),
        unknown: BTreeMap::new(),
        open_reason: None,
        refinements: 0,
        smt_queries: 0,
        facts: 0,
        predicates: Vec::new(),
    };
    let mut dag_limit = MAX_DAG_NODES;
    loop {
        let done = |k: &PropertyKey| decided.contains(k) || result.violated.contains_key(k) || result.unknown.contains_key(k);
        let (tab, end) = a.tabulate(&done);
        result.facts = tab.why.len() as u64;
        let (fact, key) = match end {
            RoundEnd::Exhausted => break,
            RoundEnd::Interrupted(i) => {
                result.open_reason = Some(UnknownReason::from(i));
                break;
            }
            RoundEnd::GaveUp(why) => {
                result.open_reason = Some(why);
                break;
            }
            RoundEnd::Targets => tab.targets[0],
        };
        let flow = match round::check_witness(p, &tab, fact, key, &mut result, cancel) {
            round::Witness::Spurious(path) => round::refine(&mut a, &tab, &path, cfg, &mut dag_limit, &mut result),
            round::Witness::Done(flow) => flow,
        };
        if flow == round::Flow::Stop {
            break;
        }
    }
    if result.open_reason.is_none() {
        result.open_reason = a.unsupported.clone();
    }
    result.smt_queries += a.queries;
    for (f, pred) in a.prec.all() {
        result.predicates.push(format!("{}: {}", p.cfa(f).name, pred.display(p)));
    }
    result
}

/// Per node of a counterexample DAG, the predicates of its interpolant: of `family` if it is
/// set and computable (its atoms or itself, by `form`), else the atoms of Spacer's solution.
fn refine_dag(
    p: &Program,
    dag: &[DagNode],
    copies: &dyn Fn(FuncId) -> Vec<(VarId, VarId)>,
    family: Option<interpolants::Kind>,
    form: Form,
    cancel: &Cancel,
) -> Result<Vec<Vec<Pred>>, DagFailure> {
    if let Some(kind) = family {
        match family_predicates(p, dag, copies, kind, form, cancel) {
            Ok(preds) => return Ok(preds),
            Err(why) => tracing::debug!("summaries: no {:?} interpolants for the DAG ({:?}); Spacer instead", kind, why),
        }
    }
    let atoms = dag_predicates(p, dag, copies, cancel, horn::DAG_MS)?;
    Ok(atoms.into_iter().map(|node| node.into_iter().map(Pred::from).collect()).collect())
}

/// True if the program has a recursive function reachable from its start.
pub fn has_recursion(p: &Program) -> bool {
    let reach = p.reachable_functions(p.start);
    p.recursive_functions().iter().any(|f| reach.binary_search(f).is_ok())
}
