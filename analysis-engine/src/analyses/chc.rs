//! The whole program as constrained Horn clauses, solved by Spacer (issue 27, Build 2): one
//! unknown relation per control point of every function, one clause per CFA edge (a step, the
//! push into a callee's entry, the return with the callee's exit relation as its effect), and
//! `R_t → false` for each target. This is the encoding of Bjørner, Gurfinkel, McMillan and
//! Rybalchenko, *Horn Clause Solvers for Program Verification* (2015, §3: procedures by
//! summaries over entry copies), solved by Spacer (Komuravelli, Gurfinkel, Chaki, *SMT-Based
//! Model Checking for Recursive Programs*, CAV 2014). The clause of each kind is the summary
//! analysis's rule (`summaries::horn::encode_arc`), so recursion needs nothing more.
//!
//! Spacer solves the clauses over mathematical integers (then over C's ranges with
//! wrap-around); nothing rests on that: the atoms of its solution at function entries and loop
//! heads are candidates, of which only the largest subset inductive in the bit-precise
//! semantics is kept (`invariants::inductive_subset`), and a property is proved only when that
//! annotation shows its target unreachable, again bit-precisely
//! (`invariants::unreachable_targets`). The phase proves or stays silent.

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use crate::analyses::summaries::horn::{dag_solution, Clause, DagArc, DagFailure, DagNode};
use crate::analyses::summaries::program::{copies_of, with_entry_copies};
use crate::analyses::template::templates::{constraint_expr, wide_sum};
use crate::analyses::template::LinearForm;
use crate::cfa::{EdgeKind, NodeId, Program};
use crate::core::Cancel;
use crate::invariants::{inductive_subset, unreachable_targets, Annotations};
use crate::ir::{BinOp, Expr, FuncId, IntTy, VarKind};
use crate::properties::{Property, PropertyKey};
use crate::smt::linpred::{LinPred, Rel};

/// Control points at most: beyond this the clauses are left to the other phases (one relation
/// per point; Spacer's time grows with them).
const MAX_POINTS: usize = 4_000;

/// What the phase found.
#[derive(Default)]
pub struct ChcResult {
    /// Properties shown to hold.
    pub proved: BTreeSet<PropertyKey>,
    /// The inductive annotation at loop heads over the program's own variables (entry copies
    /// left out), checked inductive on its own.
    pub invariants: Annotations,
    /// Why nothing was proved, when nothing was.
    pub why_not: Option<String>,
}

/// Solves the program's clauses for the properties in `open` (the others are decided: their
/// targets are left out of the clauses where that is possible).
pub fn run(p: &Program, open: &[Property], decided: &BTreeSet<PropertyKey>, cancel: &Cancel, limit_ms: u64) -> ChcResult {
    let t0 = Instant::now();
    let r = solve(p, open, decided, cancel, limit_ms);
    match &r.why_not {
        None => tracing::debug!("chc: {} properties proved in {:?}", r.proved.len(), t0.elapsed()),
        Some(why) => tracing::debug!("chc: nothing proved ({}) in {:?}", why, t0.elapsed()),
    }
    r
}

fn solve(p: &Program, open: &[Property], decided: &BTreeSet<PropertyKey>, cancel: &Cancel, limit_ms: u64) -> ChcResult {
    let gave_up = |why: &str| ChcResult { why_not: Some(why.to_string()), ..ChcResult::default() };
    if open.is_empty() {
        return gave_up("no property open");
    }
    let funcs = p.reachable_functions(p.start);
    // Arrays stay out: Spacer's model-based projection over arrays aborts the process in Z3
    // 4.8.12 (docs/benchmarks.md), and the relations would not carry their contents anyway.
    let arrays = |f: FuncId| p.cfa(f).locals.iter().any(|v| matches!(v.kind, VarKind::Array { .. }));
    if p.globals.iter().any(|v| matches!(v.kind, VarKind::Array { .. })) || funcs.iter().any(|&f| arrays(f)) {
        return gave_up("the program has arrays");
    }
    // A target is left out only if none of its properties is open: a helper's target is
    // shared by its call sites.
    let open_targets: BTreeSet<(FuncId, u32)> = open.iter().map(|pr| (pr.key.func, pr.key.target)).collect();
    // 4.8.12's Spacer, in this process, solves few of these clauses and may abort on them.
    if crate::smt::external::solver_path().is_none() {
        return gave_up("no Z3 4.9 or later to solve Horn clauses with (see smt::external)");
    }
    let w = with_entry_copies(p);
    let wp = &w.program;
    // One DAG node per reachable control point.
    let mut index: HashMap<(FuncId, NodeId), usize> = HashMap::new();
    let mut nodes: Vec<DagNode> = Vec::new();
    for &f in &funcs {
        let cfa = wp.cfa(f);
        for n in cfa.node_ids().filter(|&n| cfa.node(n).rpo != u32::MAX) {
            let target = cfa.node(n).target.is_some_and(|t| open_targets.contains(&(f, t)));
            index.insert((f, n), nodes.len());
            nodes.push(DagNode { func: f, node: n, arcs: Vec::new(), target });
        }
    }
    if nodes.len() > MAX_POINTS {
        return gave_up("too many control points for the clauses");
    }
    if !nodes.iter().any(|n| n.target) {
        return gave_up("no target left");
    }
    if let Some(&i) = index.get(&(wp.start, wp.cfa(wp.start).entry)) {
        nodes[i].arcs.push(DagArc::Init);
    }
    for &f in &funcs {
        let cfa = wp.cfa(f);
        for (eid, e) in cfa.edges.iter().enumerate() {
            let eid = crate::cfa::EdgeId(eid as u32);
            let (Some(&src), Some(&dst)) = (index.get(&(f, e.src)), index.get(&(f, e.dst))) else { continue };
            match &e.kind {
                EdgeKind::CallSummary(call) => {
                    let callee = wp.cfa(call.callee);
                    if let Some(&entry) = index.get(&(call.callee, callee.entry)) {
                        nodes[entry].arcs.push(DagArc::Call(src, eid));
                    }
                    if let Some(&exit) = index.get(&(call.callee, callee.exit)) {
                        nodes[dst].arcs.push(DagArc::Return { caller: src, exit, edge: eid });
                    }
                }
                _ => nodes[dst].arcs.push(DagArc::Step(src, eid)),
            }
        }
    }
    let copies = |f: FuncId| copies_of(&w, f).to_vec();
    let solution = match dag_solution(wp, &nodes, &copies, cancel, limit_ms, true) {
        Ok(a) => a,
        Err(DagFailure::Feasible) => return gave_up("a target is reachable in the clauses"),
        Err(DagFailure::GaveUp(why)) => return gave_up(&why),
    };
    // Candidates at function entries and loop heads.
    let mut cands = Annotations::new();
    for (node, clauses) in nodes.iter().zip(&solution) {
        let cfa = wp.cfa(node.func);
        if node.node != cfa.entry && !cfa.node(node.node).loop_head {
            continue;
        }
        let exprs = candidates(wp, clauses);
        if !exprs.is_empty() {
            cands.insert((node.func, node.node), exprs);
        }
    }
    let shown_cands = |a: &Annotations| {
        a.iter()
            .map(|((f, n), c)| {
                format!(
                    "{}@{}: {}",
                    wp.cfa(*f).name,
                    n.0,
                    c.iter().map(|e| crate::cfa::pretty::expr(wp, e, true)).collect::<Vec<_>>().join(" && ")
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    if tracing::enabled!(tracing::Level::DEBUG) {
        tracing::debug!("chc: candidates {}", shown_cands(&cands));
    }
    let inv = inductive_subset(wp, cands, cancel);
    if tracing::enabled!(tracing::Level::DEBUG) {
        tracing::debug!("chc: inductive {}", shown_cands(&inv));
    }
    let targets: BTreeSet<(FuncId, NodeId)> = nodes.iter().filter(|n| n.target).map(|n| (n.func, n.node)).collect();
    let shown = unreachable_targets(wp, &inv, &targets, cancel);
    let target_node = |k: &PropertyKey| wp.cfa(k.func).node_ids().find(|&n| wp.cfa(k.func).node(n).target == Some(k.target));
    let proved: BTreeSet<PropertyKey> = open
        .iter()
        .map(|pr| pr.key)
        .filter(|k| !decided.contains(k) && target_node(k).is_some_and(|n| shown.contains(&(k.func, n))))
        .collect();
    if proved.is_empty() {
        return gave_up("the solution does not hold bit-precisely");
    }
    // What is shown: the loop heads' conjuncts over the program's own variables, inductive on
    // their own (without the entry copies they may lean on).
    // (Loop heads only: a function's entry in `wp` is the first of its entry copies, a node
    // the program does not have.)
    let own: Annotations = inv
        .iter()
        .filter(|((f, n), _)| wp.cfa(*f).node(*n).loop_head)
        .map(|(&(f, n), c)| {
            let synthetic = |e: &Expr| mentions_synthetic(p, e);
            ((f, n), c.iter().filter(|e| !synthetic(e)).cloned().collect::<Vec<_>>())
        })
        .filter(|(_, c)| !c.is_empty())
        .collect();
    let invariants = inductive_subset(p, own, cancel);
    ChcResult { proved, invariants, why_not: None }
}

/// The candidates of one relation's solution: each conjunct as a C condition (a disjunction
/// as `|` of comparisons), and for a bound `Σ c·x + k <= 0` also the equalities at its two
/// boundaries (`Σ c·x + k == 0` and `== 1`): a solution on mathematical integers often
/// bounds one side only where C's wrap-around needs both (`k >= i` of a loop that counts
/// `i` and `k` alike, where `k == i` is what is inductive bit-precisely).
fn candidates(p: &Program, clauses: &[Clause]) -> Vec<Expr> {
    let mut out: Vec<Expr> = Vec::new();
    for clause in clauses {
        match &clause[..] {
            [] => {}
            [lit] => {
                out.extend(linpred_exprs(p, lit));
                if lit.rel == Rel::Le {
                    for d in [0, -1] {
                        if let Some(eq) = LinPred::new(lit.terms.clone(), lit.constant + d, Rel::Eq) {
                            out.extend(linpred_exprs(p, &eq));
                        }
                    }
                }
            }
            lits => {
                let parts: Option<Vec<Expr>> = lits.iter().map(|l| one_expr(linpred_exprs(p, l))).collect();
                if let Some(e) =
                    parts.and_then(|ps| ps.into_iter().reduce(|a, b| Expr::Binary(BinOp::BitOr, Box::new(a), Box::new(b), IntTy::INT)))
                {
                    out.push(e);
                }
            }
        }
    }
    out.dedup();
    out
}

/// The conjunction of comparisons (each an `int` 0 or 1) as one: `a & b`.
fn one_expr(parts: Vec<Expr>) -> Option<Expr> {
    parts.into_iter().reduce(|a, b| Expr::Binary(BinOp::BitAnd, Box::new(a), Box::new(b), IntTy::INT))
}

/// Whether `e` reads a variable the program does not have (an entry copy).
fn mentions_synthetic(p: &Program, e: &Expr) -> bool {
    let mut vars = Vec::new();
    e.vars(&mut vars);
    vars.iter().any(|v| v.func().is_some_and(|f| v.index() >= p.cfa(f).locals.len()))
}

/// `pred` as IR conditions that C's arithmetic computes exactly (one for `<=` and `%`, two
/// for `==`); none when the coefficients or constants are too large for that.
fn linpred_exprs(p: &Program, pred: &LinPred) -> Vec<Expr> {
    let Some(terms) = pred.terms.iter().map(|&(v, c)| i64::try_from(c).ok().map(|c| (v, c))).collect::<Option<Vec<_>>>() else {
        return Vec::new();
    };
    let form = LinearForm::new(terms);
    let neg = LinearForm::new(form.terms.iter().map(|&(v, c)| (v, -c)).collect());
    match pred.rel {
        Rel::Le => constraint_expr(p, &form, -pred.constant).into_iter().collect(),
        Rel::Eq => [constraint_expr(p, &form, -pred.constant), constraint_expr(p, &neg, pred.constant)].into_iter().flatten().collect(),
        Rel::Mod(m) => {
            // `Σ c·x + k ≡ 0 (mod m)` as `(Σ c·x + k) % m == 0` in `long long` (C's `%` keeps
            // the dividend's sign; zero is zero either way).
            let wide = IntTy::I64;
            if pred.constant.abs() >= 1 << 40 || m <= 0 || m >= 1 << 40 {
                return Vec::new();
            }
            let Some(sum) = wide_sum(p, &form) else { return Vec::new() };
            let k = |c: i128| Box::new(Expr::Const(c, wide));
            let shifted = Expr::Binary(BinOp::Add, Box::new(sum), k(pred.constant), wide);
            let rem = Expr::Binary(BinOp::Rem, Box::new(shifted), k(m), wide);
            vec![Expr::Binary(BinOp::Eq, Box::new(rem), k(0), IntTy::INT)]
        }
    }
}
