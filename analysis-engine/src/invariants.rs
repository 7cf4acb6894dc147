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

/// Keeps the largest inductive subset of `cands`. Cut points without candidates hold `true`.
pub fn inductive_subset(p: &Program, mut cands: Annotations, cancel: &Cancel) -> Annotations {
    if cands.values().all(|c| c.is_empty()) {
        return Annotations::new();
    }
    let funcs = p.reachable_functions(p.start);
    let mut mods_cache: HashMap<FuncId, BTreeSet<VarId>> = HashMap::new();
    for &f in &funcs {
        mods_cache.insert(f, modified_by(p, f));
    }
    let mods = |f: FuncId| mods_cache.get(&f).cloned().unwrap_or_default();
    // One encoder and block per cut point, in the functions that have candidates (a block
    // only checks candidates of its own function; the others would hold `true` throughout).
    let with_candidates: BTreeSet<FuncId> = cands.iter().filter(|(_, c)| !c.is_empty()).map(|((f, _), _)| *f).collect();
    let mut blocks: Vec<(Encoder, Block)> = Vec::new();
    for &f in funcs.iter().filter(|f| with_candidates.contains(f)) {
        let cfa = p.cfa(f);
        let cuts: Vec<NodeId> = std::iter::once(cfa.entry).chain(cfa.loop_heads()).collect();
        for &c in &cuts {
            if cfa.node(c).rpo == u32::MAX {
                continue;
            }
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
    let s: Solver = solver(cancel, QUERY_MS);
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
                    let holds = check(&s) == Sat::Unsat;
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
                    let holds = check(&s) == Sat::Unsat;
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
