//! Loop invariants (soundness rule 4): candidate conjuncts at cut points (function entries and
//! loop heads) from any analysis, of which only the largest inductive subset is kept
//! (Houdini): every conjunct at a cut point must follow from the annotation at each cut point
//! before it, along the block formula between them, and at each call site for the callee's
//! entry. What survives is an inductive annotation, checked by SMT queries independent of the
//! analysis that proposed it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use z3::ast::Bool;
use z3::Solver;

use crate::cfa::{NodeId, Program};
use crate::core::Cancel;
use crate::ir::{Expr, FuncId, VarId};
use crate::smt::block::{bind_params, encode_block, modified_by, Block};
use crate::smt::encode::{Encoder, Theory};
use crate::smt::{check, solver, Sat};

/// Candidate conjuncts per cut point.
pub type Annotations = BTreeMap<(FuncId, NodeId), Vec<Expr>>;

/// Per-query limit for inductiveness checks.
const QUERY_MS: u64 = 2_000;
/// Per-query limit in the shared incremental solver, before the query is asked again of a
/// fresh one ([`decide`]).
const INCREMENTAL_MS: u64 = 200;

/// Whether the assertions of `s` are unsatisfiable: asked of `s` itself (incremental, cheap
/// for easy queries), and when that gives up, of a fresh solver with the same assertions.
/// Z3 solves bit-vector queries in a solver that has seen `push` with its incremental core,
/// which can take seconds where a fresh solver's bit-blasting takes milliseconds.
fn decide(s: &Solver, cancel: &Cancel) -> Sat {
    match check(s) {
        Sat::Unknown(_) if cancel.check().is_ok() => {
            let fresh = solver(cancel, QUERY_MS);
            for a in s.get_assertions() {
                fresh.assert(&a);
            }
            check(&fresh)
        }
        r => r,
    }
}

/// The cut points of `f` the entry reaches: its entry and its loop heads.
fn cut_points(p: &Program, f: FuncId) -> Vec<NodeId> {
    let cfa = p.cfa(f);
    std::iter::once(cfa.entry).chain(cfa.loop_heads()).filter(|&c| cfa.node(c).rpo != u32::MAX).collect()
}

/// What each of `funcs` may modify ([`modified_by`]), for the blocks' calls.
fn modified_table(p: &Program, funcs: &[FuncId]) -> HashMap<FuncId, BTreeSet<VarId>> {
    funcs.iter().map(|&f| (f, modified_by(p, f))).collect()
}

/// Keeps the largest inductive subset of `cands`. Cut points without candidates hold `true`.
pub fn inductive_subset(p: &Program, mut cands: Annotations, cancel: &Cancel) -> Annotations {
    if cands.values().all(|c| c.is_empty()) {
        return Annotations::new();
    }
    let funcs = p.reachable_functions(p.start);
    let mods_cache = modified_table(p, &funcs);
    let mods = |f: FuncId| mods_cache.get(&f).cloned().unwrap_or_default();
    // One encoder and block per cut point, in the functions that have candidates (a block
    // only checks candidates of its own function; the others would hold `true` throughout).
    // The callers of a function with an entry candidate are encoded too: their call sites are
    // where that candidate is checked.
    let mut with_candidates: BTreeSet<FuncId> = cands.iter().filter(|(_, c)| !c.is_empty()).map(|((f, _), _)| *f).collect();
    let entries: BTreeSet<FuncId> =
        cands.iter().filter(|((f, n), c)| !c.is_empty() && p.cfa(*f).entry == *n).map(|((f, _), _)| *f).collect();
    with_candidates.extend(funcs.iter().copied().filter(|&g| p.cfa(g).callees().iter().any(|c| entries.contains(c))));
    let mut blocks: Vec<(Encoder, Block)> = Vec::new();
    for &f in funcs.iter().filter(|f| with_candidates.contains(f)) {
        let cfa = p.cfa(f);
        for c in cut_points(p, f) {
            let mut enc = Encoder::new(p, Theory::BitVec, false);
            let is_cut = |n: NodeId| cfa.node(n).loop_head || n == cfa.exit;
            let b = encode_block(&mut enc, p, f, c, &is_cut, &mods);
            blocks.push((enc, b));
        }
    }
    // Cut points that are not function entries or loop heads keep no candidates.
    cands.retain(|(f, n), _| funcs.contains(f) && (p.cfa(*f).node(*n).loop_head || p.cfa(*f).entry == *n));
    // One solver for all of it, each block's query in a scope of its own (the blocks'
    // encoders name their symbols alike): a fresh Z3 solver costs more than these queries.
    let s: Solver = solver(cancel, INCREMENTAL_MS);
    loop {
        if cancel.check().is_err() {
            return Annotations::new();
        }
        let mut changed = false;
        for (enc, b) in blocks.iter_mut() {
            let pre = cands.get(&(b.func, b.start)).cloned().unwrap_or_default();
            enc.cur = b.start_ssa.clone();
            let pre_terms: Vec<Bool> = pre.iter().map(|e| enc.cond(e).0).collect();
            s.push();
            for c in &enc.constraints {
                s.assert(c);
            }
            for t in &pre_terms {
                s.assert(t);
            }
            // Exits to annotated cut points.
            for ex in &b.exits {
                let key = (b.func, ex.node);
                let Some(post) = cands.get(&key).cloned() else { continue };
                let mut keep = Vec::new();
                for phi in post {
                    enc.cur = ex.ssa.clone();
                    let n0 = enc.constraints.len();
                    let (t, _) = enc.cond(&phi);
                    s.push();
                    s.assert(&ex.reach);
                    s.assert(t.not());
                    for c in &enc.constraints[n0..] {
                        s.assert(c);
                    }
                    let holds = decide(&s, cancel) == Sat::Unsat;
                    s.pop(1);
                    if holds {
                        keep.push(phi);
                    } else {
                        changed = true;
                    }
                }
                cands.insert(key, keep);
            }
            // Calls: the callee's entry annotation must hold for the arguments.
            for site in &b.calls {
                let callee = site.call.callee;
                let key = (callee, p.cfa(callee).entry);
                let Some(post) = cands.get(&key).cloned() else { continue };
                let n_before = enc.constraints.len();
                let ssa = bind_params(enc, p, site);
                for c in &enc.constraints[n_before..] {
                    s.assert(c);
                }
                let mut keep = Vec::new();
                for phi in post {
                    enc.cur = ssa.clone();
                    let n0 = enc.constraints.len();
                    let (t, _) = enc.cond(&phi);
                    s.push();
                    s.assert(&site.reach);
                    s.assert(t.not());
                    for c in &enc.constraints[n0..] {
                        s.assert(c);
                    }
                    let holds = decide(&s, cancel) == Sat::Unsat;
                    s.pop(1);
                    if holds {
                        keep.push(phi);
                    } else {
                        changed = true;
                    }
                }
                cands.insert(key, keep);
            }
            s.pop(1);
        }
        if !changed {
            break;
        }
    }
    cands.retain(|_, v| !v.is_empty());
    cands
}

/// The targets an inductive annotation (`inductive_subset`'s result) shows unreachable: per
/// function, no block from its entry or a loop head, started in the annotation there, reaches
/// the target. Each target node is judged for every context at once (a target in an
/// assertion helper holds for every call site or for none); `targets` lists the candidates.
pub fn unreachable_targets(
    p: &Program,
    inv: &Annotations,
    targets: &BTreeSet<(FuncId, NodeId)>,
    cancel: &Cancel,
) -> BTreeSet<(FuncId, NodeId)> {
    let funcs = p.reachable_functions(p.start);
    let mods_cache = modified_table(p, &funcs);
    let mods = |f: FuncId| mods_cache.get(&f).cloned().unwrap_or_default();
    let s: Solver = solver(cancel, INCREMENTAL_MS);
    let mut shown = BTreeSet::new();
    for &f in funcs.iter().filter(|f| targets.iter().any(|(g, _)| g == *f)) {
        let cfa = p.cfa(f);
        let mine: BTreeSet<NodeId> = targets.iter().filter(|(g, _)| *g == f).map(|(_, n)| *n).collect();
        let mut reached: BTreeSet<NodeId> = BTreeSet::new();
        for c in cut_points(p, f) {
            if cancel.check().is_err() {
                return BTreeSet::new();
            }
            let mut enc = Encoder::new(p, Theory::BitVec, false);
            let is_cut = |n: NodeId| cfa.node(n).loop_head || n == cfa.exit || mine.contains(&n);
            let b = encode_block(&mut enc, p, f, c, &is_cut, &mods);
            enc.cur = b.start_ssa.clone();
            let pre: Vec<Bool> = inv.get(&(f, c)).map(|v| v.iter().map(|e| enc.cond(e).0).collect()).unwrap_or_default();
            s.push();
            for t in enc.constraints.iter().chain(&pre) {
                s.assert(t);
            }
            for ex in b.exits.iter().filter(|ex| mine.contains(&ex.node)) {
                if reached.contains(&ex.node) {
                    continue;
                }
                s.push();
                s.assert(&ex.reach);
                if decide(&s, cancel) != Sat::Unsat {
                    reached.insert(ex.node);
                }
                s.pop(1);
            }
            s.pop(1);
        }
        shown.extend(mine.difference(&reached).map(|&n| (f, n)));
    }
    shown
}
