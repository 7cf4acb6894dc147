//! Array properties through cell morphing (Monniaux and Gonnord, *Cell Morphing: From Array
//! Programs to Array-Free Horn Clauses*, SAS 2016, §3 and §4.2): on the program with each array
//! replaced by its cell at an arbitrary index `k` (`cfa::cells`), the quantified invariant an
//! array loop needs is a quantifier-free one over `k`: `k < 0 | k >= i | a_k == 42` stands for
//! `∀k. 0 <= k < i → a[k] == 42`. Candidates of that shape (the indices the program uses, the
//! values its writes put in a cell, what an assertion says of one cell), bounds of the
//! indices, and at the entry of a function with a target "the last read was not at `k`, or
//! the parameter is nonzero" are proposed at every cut point; the largest inductive subset is
//! kept (Houdini, bit-precise:
//! `invariants::inductive_subset`), and a property is proved when that annotation shows its
//! target unreachable in the cell-morphed program (`invariants::unreachable_targets`), which
//! over-approximates the program for every `k`.

use std::collections::BTreeSet;

use crate::cfa::cells::{dedup, strip, substitute, Cells};
use crate::cfa::{NodeId, Program};
use crate::core::Cancel;
use crate::invariants::{inductive_subset, unreachable_targets, Annotations};
use crate::ir::{BinOp, Expr, FuncId, IntTy, VarId, VarKind};
use crate::properties::{Property, PropertyKey};

/// Candidates per cut point at most (each costs a query per round of Houdini).
const MAX_CANDIDATES: usize = 400;

/// Guards (conditions over scalars that index nothing) a cell candidate is tried under.
const MAX_GUARDS: usize = 4;

/// The program with its arrays replaced by cells: `Ok(None)` for a program without arrays,
/// `Err` (why) when some array cannot be replaced.
fn morph(p: &Program) -> Result<Option<Cells>, &'static str> {
    if !has_arrays(p) {
        return Ok(None);
    }
    match crate::cfa::cells::abstract_arrays(p) {
        // (The memory model's own arrays stay: the candidates do not speak of them.)
        Some(c) if !has_arrays(&c.program) => Ok(Some(c)),
        None => Err("the program has arrays used other than element by element"),
        Some(_) => Err("the program has arrays that cells do not replace"),
    }
}

/// Whether a function reachable from the start, or the globals, have an array of the
/// program's own (not one of the memory model's).
fn has_arrays(p: &Program) -> bool {
    let array = |v: &crate::ir::VarInfo| matches!(v.kind, VarKind::Array { .. }) && !v.synthetic;
    let arrays = |f: FuncId| p.cfa(f).locals.iter().any(array);
    p.globals.iter().any(array) || p.reachable_functions(p.start).into_iter().any(arrays)
}

/// The open properties of a program with arrays that its cell-morphed form shows to hold.
pub fn prove_program(p: &Program, open: &[Property], cancel: &Cancel) -> BTreeSet<PropertyKey> {
    match morph(p) {
        Ok(Some(c)) => {
            let proved = prove(&c, open, cancel);
            tracing::debug!("cells: {} arrays as cells, {} of {} properties proved", c.arrays, proved.len(), open.len());
            proved
        }
        Ok(None) => BTreeSet::new(),
        Err(why) => {
            tracing::debug!("cells: nothing proved ({why})");
            BTreeSet::new()
        }
    }
}

/// The open properties the cell-morphed program `c` shows to hold.
fn prove(c: &Cells, open: &[Property], cancel: &Cancel) -> BTreeSet<PropertyKey> {
    let q = &c.program;
    let funcs = q.reachable_functions(q.start);
    let target_node = |k: &PropertyKey| q.cfa(k.func).node_ids().find(|&n| q.cfa(k.func).node(n).target == Some(k.target));
    let targets: BTreeSet<(FuncId, NodeId)> = open.iter().filter_map(|pr| Some((pr.key.func, target_node(&pr.key)?))).collect();
    if targets.is_empty() {
        return BTreeSet::new();
    }
    let mut cands = Annotations::new();
    for &f in &funcs {
        let cfa = q.cfa(f);
        let at_loops = loop_candidates(c, f);
        for n in cfa.loop_heads().filter(|&n| cfa.node(n).rpo != u32::MAX) {
            cands.insert((f, n), at_loops.clone());
        }
        if targets.iter().any(|(g, _)| *g == f) && f != q.start {
            let at_entry = entry_candidates(c, f);
            if !at_entry.is_empty() {
                cands.insert((f, cfa.entry), at_entry);
            }
        }
    }
    cands.retain(|_, v| !v.is_empty());
    if cands.is_empty() {
        return BTreeSet::new();
    }
    tracing::debug!("cells: {} candidates at {} cut points", cands.values().map(Vec::len).sum::<usize>(), cands.len());
    if tracing::enabled!(tracing::Level::TRACE) {
        for ((f, n), c) in &cands {
            let shown: Vec<String> = c.iter().map(|e| crate::cfa::pretty::expr(q, e, true)).collect();
            tracing::trace!("cells: candidates at {}@{}: {}", q.cfa(*f).name, n.0, shown.join(" ;; "));
        }
    }
    let inv = inductive_subset(q, cands, cancel);
    if cancel.check().is_err() {
        return BTreeSet::new();
    }
    if tracing::enabled!(tracing::Level::DEBUG) {
        for ((f, n), c) in &inv {
            let shown: Vec<String> = c.iter().map(|e| crate::cfa::pretty::expr(q, e, true)).collect();
            tracing::debug!("cells: inductive at {}@{}: {}", q.cfa(*f).name, n.0, shown.join(" && "));
        }
    }
    let shown = unreachable_targets(q, &inv, &targets, cancel);
    if cancel.check().is_err() {
        return BTreeSet::new();
    }
    open.iter().map(|pr| pr.key).filter(|k| target_node(k).is_some_and(|n| shown.contains(&(k.func, n)))).collect()
}

fn cmp(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::Binary(op, Box::new(a), Box::new(b), IntTy::INT)
}

fn or(a: Expr, b: Expr) -> Expr {
    Expr::Binary(BinOp::BitOr, Box::new(a), Box::new(b), IntTy::INT)
}

/// `v` as a `long long` expression.
fn wide(q: &Program, v: VarId) -> Expr {
    Expr::Var(v, q.var(v).int_ty()).cast(IntTy::I64)
}

/// Candidates at the loop heads of `f`: the bounds of the scalar variables of the indices and
/// of `f`'s branch conditions (`x >= 0`, `x <= C`, `x >= C` for the constants `C` of those
/// conditions, `x <= y` between them); for each bound `b` (an index the program uses, one of
/// those scalars or constants) and each value a write puts in a cell, `k < 0 | k >= b | a_k ==
/// v` (and with `k > b`), with a skipped cell left out, and what an assertion says of a cell
/// under a guard.
fn loop_candidates(c: &Cells, f: FuncId) -> Vec<Expr> {
    let q = &c.program;
    let k = Expr::Var(c.k, IntTy::I64);
    let in_scope = |v: VarId| v.func().is_none_or(|g| g == f);
    let mine = |list: &[(FuncId, Expr)]| -> Vec<Expr> {
        list.iter()
            .filter(|(g, e)| {
                let mut vs = Vec::new();
                e.vars(&mut vs);
                *g == f || vs.iter().all(|&v| v.func().is_none())
            })
            .map(|(_, e)| e.clone())
            .collect()
    };
    let indices = mine(&c.indices);
    // (A write's value mentions `k`, globals and the writing function's locals.)
    let writes = mine(&c.writes);
    let asserted = mine(&c.asserted);
    let conditions = mine(&c.conditions);
    // The scalars of the indices and conditions, and the constants of the conditions.
    let mut scalars: Vec<VarId> = Vec::new();
    let mut consts: Vec<i128> = Vec::new();
    for e in indices.iter().chain(&conditions) {
        let mut vs = Vec::new();
        e.vars(&mut vs);
        for v in vs {
            let scalar = matches!(q.var(v).kind, VarKind::Int(_));
            if scalar && in_scope(v) && v != c.k && v != c.at_k && !q.var(v).synthetic && !scalars.contains(&v) {
                scalars.push(v);
            }
        }
    }
    for e in &conditions {
        e.walk(&mut |x| {
            if let Expr::Const(v, _) = x {
                if !consts.contains(v) {
                    consts.push(*v);
                }
            }
        });
    }
    // A side of a condition's comparison that is neither a scalar nor a constant alone (`2 * N`
    // of `i <= 2 * N`): where an earlier loop's index ended, in the loop that reads its cells.
    let usable = |e: &Expr| {
        let mut vs = Vec::new();
        e.vars(&mut vs);
        !vs.is_empty() && vs.iter().all(|&v| matches!(q.var(v).kind, VarKind::Int(_)) && in_scope(v) && !q.var(v).synthetic)
    };
    let mut sides: Vec<Expr> = Vec::new();
    // The scalars a condition tells apart from an index (`z` of `i != z`, `i` an index and `z`
    // none): the one cell a loop skips.
    let mut indexing: Vec<VarId> = Vec::new();
    for e in &indices {
        e.vars(&mut indexing);
    }
    let mut skipped: Vec<VarId> = Vec::new();
    // The loops `i <= n` over two scalars.
    let mut inclusive: Vec<(VarId, VarId)> = Vec::new();
    for e in &conditions {
        e.walk(&mut |x| {
            if let Expr::Binary(op, a, b, _) = x {
                if !op.is_comparison() {
                    return;
                }
                for s in [a, b] {
                    if !matches!(strip(s), Expr::Var(..) | Expr::Const(..)) && usable(s) {
                        sides.push(s.as_ref().clone().cast(IntTy::I64));
                    }
                }
                if let (BinOp::Le | BinOp::Gt, Expr::Var(x, _), Expr::Var(y, _)) = (op, strip(a), strip(b)) {
                    if scalars.contains(x) && scalars.contains(y) && !inclusive.contains(&(*x, *y)) {
                        inclusive.push((*x, *y));
                    }
                }
                if let (BinOp::Ne | BinOp::Eq, Expr::Var(x, _), Expr::Var(y, _)) = (op, strip(a), strip(b)) {
                    for (i, z) in [(x, y), (y, x)] {
                        if indexing.contains(i) && !indexing.contains(z) && scalars.contains(z) && !skipped.contains(z) {
                            skipped.push(*z);
                        }
                    }
                }
            }
        });
    }
    let mut out: Vec<Expr> = Vec::new();
    for &x in &scalars {
        out.push(cmp(BinOp::Ge, wide(q, x), Expr::Const(0, IntTy::I64)));
        for &cst in &consts {
            for op in [BinOp::Le, BinOp::Ge] {
                out.push(cmp(op, wide(q, x), Expr::Const(cst, IntTy::I64)));
            }
        }
        for &y in scalars.iter().filter(|&&y| y != x) {
            out.push(cmp(BinOp::Le, wide(q, x), wide(q, y)));
        }
    }
    // Where a loop `i <= n` ends: `i <= n + 1`.
    for &(x, y) in &inclusive {
        out.push(cmp(
            BinOp::Le,
            wide(q, x),
            Expr::Binary(BinOp::Add, Box::new(wide(q, y)), Box::new(Expr::Const(1, IntTy::I64)), IntTy::I64),
        ));
    }
    // Where a cell's value is known up to: an index, a scalar or a constant of the conditions
    // (the bound of an earlier loop whose counter was reused).
    let mut bounds: Vec<Expr> = indices.clone();
    bounds.extend(scalars.iter().map(|&v| wide(q, v)));
    bounds.extend(consts.iter().map(|&c| Expr::Const(c, IntTy::I64)));
    bounds.extend(sides);
    dedup(&mut bounds);
    let writes = with_relations(writes);
    let below = cmp(BinOp::Lt, k.clone(), Expr::Const(0, IntTy::I64));
    for b in &bounds {
        for w in &writes {
            for op in [BinOp::Ge, BinOp::Gt] {
                out.push(or(or(below.clone(), cmp(op, k.clone(), b.clone())), w.clone()));
            }
        }
    }
    // The same with the skipped cell left out: `k < 0 | k >= i | k == z | a_k == b_k`.
    for &z in &skipped {
        let at_z = cmp(BinOp::Eq, k.clone(), wide(q, z));
        for b in &bounds {
            for w in &writes {
                out.push(or(or(or(below.clone(), cmp(BinOp::Ge, k.clone(), b.clone())), at_z.clone()), w.clone()));
            }
        }
    }
    // What an assertion says of a cell, under a guard: a branch in a loop body comparing
    // scalars that index nothing (`c <= 5` of `if (c <= 5) __VERIFIER_assert(s[i].n != 0)`,
    // where a loop fills the cells only when `c <= 5`): `!(c <= 5) | k < 0 | k >= b | s.n_k
    // != 0`. (Only the
    // assertions' facts, only under guards: with every write's value, or unguarded, the
    // candidates grew by a third to a half and Houdini ran out of time where it had not.)
    let guards: Vec<Expr> = mine(&c.guards)
        .into_iter()
        .filter(|e| {
            let mut vs = Vec::new();
            e.vars(&mut vs);
            matches!(strip(e), Expr::Binary(op, ..) if op.is_comparison())
                && !vs.is_empty()
                && vs.iter().all(|v| scalars.contains(v) && !indexing.contains(v))
        })
        .take(MAX_GUARDS)
        .collect();
    for g in guards {
        let unless = Expr::Unary(crate::ir::UnOp::LNot, Box::new(strip(&g).clone()), IntTy::INT);
        for b in &bounds {
            for w in &asserted {
                out.push(or(or(or(unless.clone(), below.clone()), cmp(BinOp::Ge, k.clone(), b.clone())), w.clone()));
            }
        }
    }
    dedup(&mut out);
    out.truncate(MAX_CANDIDATES);
    out
}

/// The writes' cell values, and the relations between cells that two writes of one value
/// give: `a[i] = x; b[i] = -x;` gives `b_k == -a_k` besides `a_k == x` and `b_k == -x` (the
/// value `x`, a variable of the loop's body, means nothing at the loop's head).
fn with_relations(writes: Vec<Expr>) -> Vec<Expr> {
    let mut out = writes.clone();
    for w in &writes {
        let Expr::Binary(BinOp::Eq, cell, v, _) = w else { continue };
        let (Expr::Var(..), Expr::Var(x, _)) = (strip(cell), strip(v)) else { continue };
        for other in writes.iter().filter(|&o| o != w) {
            let Expr::Binary(BinOp::Eq, cell2, v2, t) = other else { continue };
            let mut vs = Vec::new();
            v2.vars(&mut vs);
            if strip(cell2) == strip(cell) || !vs.contains(x) {
                continue;
            }
            let related = Expr::Binary(BinOp::Eq, cell2.clone(), Box::new(substitute(v2, *x, strip(cell))), *t);
            if !out.contains(&related) {
                out.push(related);
            }
        }
    }
    out
}

/// Candidates at the entry of a function with a target, for a call with an array read as its
/// argument (`__VERIFIER_assert(a[x] == 42)`): the last read was not at `k`, or the parameter
/// is nonzero.
fn entry_candidates(c: &Cells, f: FuncId) -> Vec<Expr> {
    let q = &c.program;
    let not_at_k = cmp(BinOp::Eq, Expr::Var(c.at_k, IntTy::INT), Expr::Const(0, IntTy::INT));
    q.cfa(f)
        .params
        .iter()
        .filter(|&&v| matches!(q.var(v).kind, VarKind::Int(_)))
        .map(|&v| or(not_at_k.clone(), cmp(BinOp::Ne, wide(q, v), Expr::Const(0, IntTy::I64))))
        .collect()
}

#[cfg(test)]
mod tests {
    /// How many of the program's properties the phase proves, of how many.
    fn proved(body: &str) -> (usize, usize) {
        crate::analyses::proved_in_main(body, super::prove_program)
    }

    /// `body` is proved whole, and with `from` replaced by `to` one property is not.
    fn proved_all_but_one_changed(body: &str, from: &str, to: &str) {
        let (p, all) = proved(body);
        assert_eq!(p, all, "{body}");
        let changed = body.replace(from, to);
        assert_ne!(changed, body);
        let (p, all) = proved(&changed);
        assert_eq!(p, all - 1, "{changed}");
    }

    const FILL: &str = "int a[100];\nfor (int i = 0; i < 100; i++) a[i] = 42;\n";
    const CHECK: &str = "for (int x = 0; x < 100; x++) __VERIFIER_assert(a[x] == 42);\n";

    #[test]
    fn a_filled_array_is_proved_element_by_element() {
        let (p, all) = proved(&format!("{FILL}{CHECK}"));
        assert_eq!(p, all);
    }

    #[test]
    fn a_copy_of_a_filled_array_is_proved() {
        let (p, all) = proved(&format!("{FILL}int b[100];\nfor (int i = 0; i < 100; i++) b[i] = a[i];\n{}", CHECK.replace("a[x]", "b[x]")));
        assert_eq!(p, all);
    }

    /// Two cells written per step up to `i <= N`, read up to `2 * N`: the second loop's bound
    /// is a condition's side, and the first loop's counter ends at `N + 1`.
    #[test]
    fn cells_written_two_per_step_are_proved() {
        let body = "int N = 1000;\nint a[2 * N + 2];\nint i;\nfor (i = 0; i <= N; i++) { a[2 * i] = 0; a[2 * i + 1] = 0; }\n\
                    for (i = 0; i <= 2 * N; i++) __VERIFIER_assert(a[i] == 0);\n";
        proved_all_but_one_changed(body, "a[2 * i + 1] = 0", "a[2 * i + 1] = 1");
    }

    /// A copy that skips one cell proves the cells it copied, not the one it skipped.
    #[test]
    fn a_copy_that_skips_a_cell_is_proved_elsewhere() {
        let body = "int a[100], b[100];\nint z = 50;\nfor (int i = 0; i < 100; i++) { a[i] = __VERIFIER_nondet_int(); b[i] = 0; }\n\
                    for (int i = 0; i < 100; i++) if (i != z) b[i] = a[i];\n\
                    for (int x = 0; x < 100; x++) if (x != z) __VERIFIER_assert(a[x] == b[x]);\n";
        proved_all_but_one_changed(body, "if (x != z) __VERIFIER", "__VERIFIER");
    }

    /// A loop that breaks halfway (`if (i > 50) break;`) and a check guarded by the same bound:
    /// the bound is a condition inside the loops' bodies, not at their heads.
    #[test]
    fn cells_written_until_a_break_are_proved() {
        let body = "int a[100];\nint i;\nfor (i = 0; i < 100; i++) { if (i > 50) break; a[i] = 10; }\n\
                    for (i = 0; i < 100; i++) if (i <= 50) __VERIFIER_assert(a[i] == 10);\n";
        proved_all_but_one_changed(body, "if (i <= 50)", "if (i <= 51)");
    }

    /// Cells filled with clamped values only when a flag says so, and checked under the same
    /// flag: what the assertion says of a cell holds under the guard (`!(c <= 5) | k < 0 |
    /// k >= 100 | a_k > 0`), not the written variable's value.
    #[test]
    fn cells_filled_under_a_flag_are_proved_under_it() {
        let body = "int a[100];\nint c = __VERIFIER_nondet_int();\nint i;\n\
                    for (i = 0; i < 100; i++) { if (c > 5) break; int x = __VERIFIER_nondet_int(); if (x < 1) x = 1; a[i] = x; }\n\
                    for (i = 0; i < 100; i++) if (c <= 5) __VERIFIER_assert(a[i] > 0);\n";
        proved_all_but_one_changed(body, "if (c <= 5)", "if (c <= 6)");
    }

    /// Two arrays written with one value (`a[i] = x; b[i] = -x;`) are related cell by cell.
    #[test]
    fn two_arrays_written_with_one_value_are_related() {
        let body = "int a[100], b[100], c[100];\nfor (int i = 0; i < 100; i++) { int x = __VERIFIER_nondet_int(); a[i] = x; b[i] = -x; }\n\
                    for (int i = 0; i < 100; i++) c[i] = a[i] + b[i];\n\
                    for (int i = 0; i < 100; i++) __VERIFIER_assert(c[i] == 0);\n";
        proved_all_but_one_changed(body, "b[i] = -x", "b[i] = 1 - x");
    }

    /// What fails for one element, one element short, or an element overwritten with an input
    /// is not proved (the bounds of the accesses are).
    #[test]
    fn an_element_that_differs_is_not_proved() {
        for wrong in [
            format!("{FILL}a[37] = 0;\n{CHECK}"),
            format!("{}{CHECK}", FILL.replace("i < 100", "i < 99")),
            format!("{FILL}int j = __VERIFIER_nondet_int();\nif (j >= 0 && j < 100) a[j] = __VERIFIER_nondet_int();\n{CHECK}"),
        ] {
            let (p, all) = proved(&wrong);
            assert_eq!(p, all - 1, "{wrong}");
        }
    }
}
