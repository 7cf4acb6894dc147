//! Loop invariants (soundness rule 4): candidate conjuncts at cut points (function entries and
//! loop heads) from any analysis, of which only the largest inductive subset is kept
//! (Houdini): every conjunct at a cut point must follow from the annotation at each cut point
//! before it, along the block formula between them (small loop-free callees entered, others
//! havocking what they may modify), and at each call site for the callee's entry. What
//! survives is an inductive annotation, checked by SMT queries independent of the analysis
//! that proposed it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use z3::ast::Bool;
use z3::Solver;

use crate::cfa::{NodeId, Program};
use crate::core::Cancel;
use crate::ir::{Expr, FuncId, VarId};
use crate::smt::block::{bind_params, encode_block, modified_by, Block, INLINE_DEPTH};
use crate::smt::encode::{Encoder, Theory};
use crate::smt::{check, solver_by_work, Sat};

/// Candidate conjuncts per cut point.
pub type Annotations = BTreeMap<(FuncId, NodeId), Vec<Expr>>;

/// Per-query limit for inductiveness checks.
const QUERY_MS: u64 = 2_000;
/// Per-query limit in the shared incremental solver, before the query is asked again of a
/// fresh one ([`decide`]).
const INCREMENTAL_MS: u64 = 200;

/// Whether the assertions of `s` are unsatisfiable: for a query with products of variables
/// (looked for only when the program has one, `products`), first with the products abstracted
/// ([`products_abstracted`]); then asked of `s` itself (incremental, cheap for easy queries),
/// and when that gives up, of a fresh solver with the same assertions. Z3 solves bit-vector
/// queries in a solver that has seen `push` with its incremental core, which can take seconds
/// where a fresh solver's bit-blasting takes milliseconds. Before the fresh solver, a query
/// with products goes to the external Z3, which substitutes the block's equations and
/// normalises every term to a sum of monomials (`smt::external::polynomial_unsat`): a
/// polynomial identity modulo 2^64 is then plain, where bit-blasting 64-bit products does not
/// end. (4.8.12's own normalisation, as a tactic in this process, misses most of these and was
/// seen to crash under interruption.)
pub(crate) fn decide(s: &Solver, products: bool, cancel: &Cancel) -> Sat {
    decide_with(s, products, cancel, true)
}

/// [`decide`]; when not `thorough`, without the external and the fresh solver's tries (for a
/// query that is one of several ways to settle a candidate).
fn decide_with(s: &Solver, products: bool, cancel: &Cancel, thorough: bool) -> Sat {
    let again = |fresh: Solver| {
        for a in s.get_assertions() {
            fresh.assert(&a);
        }
        check(&fresh)
    };
    // A product of two terms that are not constants: bit-blasting it costs every query its
    // limit, where most candidates follow without what the product is (products abstracted,
    // tried first), and a polynomial identity once normalised.
    let abstracted = if products { products_abstracted(s, cancel) } else { None };
    if abstracted == Some(Sat::Unsat) {
        return Sat::Unsat;
    }
    let products = abstracted.is_some();
    let first = check(s);
    if !matches!(first, Sat::Unknown(_)) || !thorough || cancel.check().is_err() {
        return first;
    }
    if products {
        if let Some(path) = crate::smt::external::solver_path() {
            if crate::smt::external::polynomial_unsat(path, s, cancel, EXTERNAL_MS) == Some(true) {
                return Sat::Unsat;
            }
        }
    }
    again(solver_by_work(cancel, QUERY_MS))
}

/// Whether the assertions of `s` are unsatisfiable with every product of two non-constant
/// terms replaced by a variable of its own (the same product by the same variable): more
/// models than before, so unsatisfiable means unsatisfiable before. A query whose products
/// only need to be equal to themselves (an assertion's argument `y*y - 2*x == 0` under the
/// same conjunct at the loop head) is then decided without bit-blasting a multiplier. `None`
/// when the query has no such product.
fn products_abstracted(s: &Solver, cancel: &Cancel) -> Option<Sat> {
    use z3::ast::{Ast, Dynamic};
    use z3::DeclKind;
    let assertions = s.get_assertions();
    let mut products: Vec<(Dynamic, Dynamic)> = Vec::new();
    let mut seen: std::collections::HashSet<Dynamic> = std::collections::HashSet::new();
    let mut stack: Vec<Dynamic> = assertions.iter().map(|a| Dynamic::from_ast(a)).collect();
    while let Some(t) = stack.pop() {
        if !t.is_app() || !seen.insert(t.clone()) {
            continue;
        }
        let kids = t.children();
        if t.decl().kind() == DeclKind::Bmul && kids.iter().filter(|k| k.kind() != z3::AstKind::Numeral).count() >= 2 {
            if let Some(bv) = t.as_bv() {
                let fresh = z3::ast::BV::fresh_const("product", bv.get_size());
                products.push((t.clone(), Dynamic::from_ast(&fresh)));
            }
            continue;
        }
        stack.extend(kids);
    }
    if products.is_empty() {
        return None;
    }
    let pairs: Vec<(&Dynamic, &Dynamic)> = products.iter().map(|(a, b)| (a, b)).collect();
    let fresh = solver_by_work(cancel, ABSTRACT_MS);
    for a in &assertions {
        fresh.assert(a.substitute(&pairs));
    }
    Some(check(&fresh))
}

/// Per-query work of the try with products abstracted ([`products_abstracted`]).
const ABSTRACT_MS: u64 = 200;

/// Per-query limit of the external solver's try at a nonlinear query ([`decide`]).
const EXTERNAL_MS: u64 = 1_000;

/// Whether the query in `s` (the block and the negated candidate) is unsatisfiable under the
/// annotation at the block's start: first under its linear conjuncts `light` and `own` (the
/// candidate's own nonlinear conjunct, if any: a polynomial identity is usually inductive by
/// itself), then under every conjunct (`heavy` added). Without nonlinear conjuncts this is one
/// [`decide`]; with them, only a candidate's own identity (and a call site's query, when
/// `thorough`) gets the slow tries (a query over products that is satisfiable can take each
/// of them to its limit). Each query assumes part
/// of the annotation: what follows from it follows from the whole.
fn staged(s: &Solver, own: Option<&Bool>, light: &[Bool], heavy: &[Bool], thorough: bool, products: bool, cancel: &Cancel) -> bool {
    s.push();
    for t in light.iter().chain(own) {
        s.assert(t);
    }
    let mut r = decide_with(s, products, cancel, heavy.is_empty() || own.is_some()) == Sat::Unsat;
    if !r && !heavy.is_empty() && cancel.check().is_ok() {
        for t in heavy {
            s.assert(t);
        }
        r = decide_with(s, products, cancel, thorough) == Sat::Unsat;
    }
    s.pop(1);
    r
}

/// Whether the block and its exit (asserted in `s`, with the candidate's negation there) keep
/// a linear equality `phi` that holds at the block's start (`at_start`) on its own, without the
/// other conjuncts: the step of an equality learned in the variables' own wrap-around
/// arithmetic (`a + b - 3*i == 0` under `a += 1; b += 2; i++`) is an identity, decided at once,
/// where the same query with the annotation's inequalities bit-blasts 64-bit comparisons for
/// seconds. Unsatisfiable alone means unsatisfiable with more assumptions.
fn kept_alone(
    s: &Solver,
    enc: &mut Encoder,
    phi: &Expr,
    start: &HashMap<VarId, u32>,
    at_start: bool,
    products: bool,
    cancel: &Cancel,
) -> bool {
    if !at_start || nonlinear(phi) || !matches!(phi, Expr::Binary(crate::ir::BinOp::Eq, ..)) {
        return false;
    }
    let saved = std::mem::replace(&mut enc.cur, start.clone());
    let n0 = enc.constraints.len();
    let (t, _) = enc.cond(phi);
    enc.cur = saved;
    s.push();
    s.assert(&t);
    for c in &enc.constraints[n0..] {
        s.assert(c);
    }
    let kept = decide_with(s, products, cancel, false) == Sat::Unsat;
    s.pop(1);
    kept
}

/// Whether the block (asserted in `s`) keeps the difference of the sides of `phi` between its
/// start and the exit reached under `reach` ([`negated_identity`]), as the external solver
/// shows it (`false` without one).
fn keeps_difference(
    s: &Solver,
    enc: &mut Encoder,
    phi: &Expr,
    start: &HashMap<VarId, u32>,
    exit: &HashMap<VarId, u32>,
    reach: &Bool,
    cancel: &Cancel,
) -> bool {
    let Some(path) = crate::smt::external::solver_path() else { return false };
    let n0 = enc.constraints.len();
    let Some(negated) = negated_identity(enc, phi, start, exit) else { return false };
    s.push();
    s.assert(reach);
    s.assert(&negated);
    for c in &enc.constraints[n0..] {
        s.assert(c);
    }
    let kept = crate::smt::external::polynomial_unsat(path, s, cancel, EXTERNAL_MS) == Some(true);
    s.pop(1);
    kept
}

/// For a candidate `a == b` with products that also holds at the start of a block: the
/// negation of "the block keeps `a - b` as it was" (`(a' - b') - (a - b) == 0`, with `a'`, `b'`
/// at the exit's `exit` versions and `a`, `b` at the start's `start`), or `None` for another
/// candidate. When its negation is unsatisfiable (with the block), the candidate holds at the
/// exit because it held at the start: the step of a polynomial invariant such as
/// `y*y - 2*x + y == 0` under `y += 1; x += y` is such an identity, which Z3 sees at once after
/// normalising the difference to a sum of monomials (asked as `a' == b'` under `a == b`, the
/// two sides are normalised apart and the products get bit-blasted: seconds).
fn negated_identity(enc: &mut Encoder, phi: &Expr, start: &HashMap<VarId, u32>, exit: &HashMap<VarId, u32>) -> Option<Bool> {
    let Expr::Binary(crate::ir::BinOp::Eq, a, b, _) = phi else { return None };
    if !nonlinear(phi) {
        return None;
    }
    let diff = |enc: &mut Encoder, ssa: &HashMap<VarId, u32>| -> Option<z3::ast::BV> {
        let saved = std::mem::replace(&mut enc.cur, ssa.clone());
        let (x, y) = (enc.expr(a).t.as_bv(), enc.expr(b).t.as_bv());
        enc.cur = saved;
        Some(x?.bvsub(&y?))
    };
    let before = diff(enc, start)?;
    let after = diff(enc, exit)?;
    let zero = z3::ast::BV::from_u64(0, before.get_size());
    Some(after.bvsub(&before).eq(&zero).not())
}

/// Whether `e` multiplies, divides or takes the remainder of two non-constant operands.
pub fn nonlinear(e: &Expr) -> bool {
    let mut found = false;
    e.walk(&mut |x| found |= product(x));
    found
}

/// Whether `e` itself multiplies, divides or takes the remainder of two non-constant operands.
fn product(e: &Expr) -> bool {
    fn constant(y: &Expr) -> bool {
        match y {
            Expr::Const(..) => true,
            Expr::Cast(z, _) => constant(z),
            _ => false,
        }
    }
    matches!(e, Expr::Binary(crate::ir::BinOp::Mul | crate::ir::BinOp::Div | crate::ir::BinOp::Rem, a, b, _) if !constant(a) && !constant(b))
}

/// Whether a function of `funcs` has a product of two non-constant operands ([`product`]):
/// only then may a query have products to abstract or normalise ([`decide_with`]).
pub(crate) fn has_products(p: &Program, funcs: &[FuncId]) -> bool {
    funcs.iter().any(|&f| {
        p.cfa(f).edges.iter().any(|e| {
            let mut found = false;
            crate::cfa::cells::for_each_expr(&e.kind, &mut |x| found |= product(x));
            found
        })
    })
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
    let products = has_products(p, &funcs);
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
            let b = encode_block(&mut enc, p, f, c, &is_cut, &mods, INLINE_DEPTH);
            blocks.push((enc, b));
        }
    }
    // Cut points that are not function entries or loop heads keep no candidates.
    cands.retain(|(f, n), _| funcs.contains(f) && (p.cfa(*f).node(*n).loop_head || p.cfa(*f).entry == *n));
    // One solver for all of it, each block's query in a scope of its own (the blocks'
    // encoders name their symbols alike): a fresh Z3 solver costs more than these queries.
    let s: Solver = solver_by_work(cancel, INCREMENTAL_MS);
    let started = std::time::Instant::now();
    for round in 0.. {
        if cancel.check().is_err() {
            return Annotations::new();
        }
        tracing::debug!(
            "inductive subset: round {} at {:?}, {} candidates",
            round,
            started.elapsed(),
            cands.values().map(Vec::len).sum::<usize>()
        );
        let mut changed = false;
        for (enc, b) in blocks.iter_mut() {
            let pre = cands.get(&(b.func, b.start)).cloned().unwrap_or_default();
            enc.cur = b.start_ssa.clone();
            // The nonlinear conjuncts are left out of a first query (a weaker assumption:
            // what follows without them follows with them); their products make every query
            // bit-blast them, where most candidates follow from the linear ones.
            let (mut light, mut heavy): (Vec<Bool>, Vec<Bool>) = (Vec::new(), Vec::new());
            for e in &pre {
                let t = enc.cond(e).0;
                if nonlinear(e) {
                    heavy.push(t);
                } else {
                    light.push(t);
                }
            }
            s.push();
            for c in &enc.constraints {
                s.assert(c);
            }
            // A candidate's own conjunct at the start of the block, when it is nonlinear.
            let own = |enc: &mut Encoder, phi: &Expr| -> Option<Bool> {
                let mine = b.start_ssa.clone();
                (nonlinear(phi) && pre.contains(phi)).then(|| {
                    let saved = std::mem::replace(&mut enc.cur, mine);
                    let t = enc.cond(phi).0;
                    enc.cur = saved;
                    t
                })
            };
            // Exits to annotated cut points.
            for ex in &b.exits {
                let key = (b.func, ex.node);
                let Some(post) = cands.get(&key).cloned() else { continue };
                let mut keep = Vec::new();
                for phi in post {
                    let mine = own(enc, &phi);
                    if mine.is_some() && keeps_difference(&s, enc, &phi, &b.start_ssa, &ex.ssa, &ex.reach, cancel) {
                        keep.push(phi);
                        continue;
                    }
                    enc.cur = ex.ssa.clone();
                    let n0 = enc.constraints.len();
                    let (t, _) = enc.cond(&phi);
                    s.push();
                    s.assert(&ex.reach);
                    s.assert(t.not());
                    for c in &enc.constraints[n0..] {
                        s.assert(c);
                    }
                    let holds = kept_alone(&s, enc, &phi, &b.start_ssa, pre.contains(&phi), products, cancel)
                        || staged(&s, mine.as_ref(), &light, &heavy, false, products, cancel);

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
                    // (A call's argument is often a conjunct itself: `__VERIFIER_assert(y*y == x)`.)
                    let holds = staged(&s, None, &light, &heavy, true, products, cancel);
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
    let products = has_products(p, &funcs);
    let mods_cache = modified_table(p, &funcs);
    let mods = |f: FuncId| mods_cache.get(&f).cloned().unwrap_or_default();
    let s: Solver = solver_by_work(cancel, INCREMENTAL_MS);
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
            let b = encode_block(&mut enc, p, f, c, &is_cut, &mods, INLINE_DEPTH);
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
                if decide(&s, products, cancel) != Sat::Unsat {
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

#[cfg(test)]
mod tests {
    use z3::ast::BV;

    use super::*;

    /// 64-bit variables `y` and `x`, and `y*y + x`.
    fn terms() -> (BV, BV, BV) {
        let (y, x) = (BV::new_const("y", 64), BV::new_const("x", 64));
        let sum = y.bvmul(&y).bvadd(&x);
        (y, x, sum)
    }

    /// What follows whatever the product is, is shown with the product abstracted.
    #[test]
    fn a_product_equal_to_itself_is_decided_abstracted() {
        let (_, _, sum) = terms();
        let s = Solver::new();
        let five = BV::from_u64(5, 64);
        s.assert(sum.eq(&five));
        s.assert(sum.eq(&five).ite(&BV::from_u64(1, 32), &BV::from_u64(0, 32)).eq(BV::from_u64(0, 32)));
        assert_eq!(products_abstracted(&s, &Cancel::new()), Some(Sat::Unsat));
    }

    /// What needs the product's value is not shown (the abstraction has more models), and no
    /// product means nothing to abstract.
    #[test]
    fn what_needs_the_products_value_is_not_shown_abstracted() {
        let (y, _, _) = terms();
        let s = Solver::new();
        s.assert(y.bvmul(&y).eq(BV::from_u64(4, 64)));
        s.assert(y.eq(BV::from_u64(3, 64)));
        assert_eq!(check(&s), Sat::Unsat);
        assert_ne!(products_abstracted(&s, &Cancel::new()), Some(Sat::Unsat));
        let linear = Solver::new();
        linear.assert(y.bvadd(&y).eq(BV::from_u64(4, 64)));
        assert_eq!(products_abstracted(&linear, &Cancel::new()), None);
    }
}
