//! Loop invariants guessed from the program's own text and kept only where they are inductive
//! (Houdini: Flanagan and Leino, *Houdini, an Annotation Assistant for ESC/Java*, FME 2001,
//! §2): at every loop head, the conditions the function asserts (an assertion at the top of a
//! loop body is often the loop's invariant: the polynomial equalities of SV-COMP's
//! `nla-digbench`, such as `y*y - 2*x + y == 0`), equalities and orderings between its scalar
//! variables, and "`x` is at most `y`, or still zero" (a counter bounded by a variable the loop
//! may never reach); at an assertion helper's entry, that its parameter is nonzero. The
//! largest inductive subset is kept (bit-precise, `invariants::inductive_subset`, where a
//! polynomial identity is normalised to a sum of monomials), and a property is proved when
//! that annotation shows its target unreachable (`invariants::unreachable_targets`). It runs
//! only for a program that asserts a condition beyond linear arithmetic (products of
//! variables, bitwise operations, division): linear invariants are the template and Horn
//! clause phases'.

use std::collections::BTreeSet;

use crate::cfa::{EdgeKind, NodeId, Program};
use crate::core::Cancel;
use crate::invariants::{inductive_subset, unreachable_targets, Annotations};
use crate::ir::{BinOp, Expr, FuncId, IntTy, UnOp, VarId, VarKind};
use crate::properties::{Property, PropertyKey};

/// Candidates per loop head at most (each costs a query per round of Houdini).
const MAX_CANDIDATES: usize = 300;
/// Scalars per function the pairwise candidates range over (their number is quadratic).
const MAX_SCALARS: usize = 12;

/// The open properties the guessed invariants show to hold.
pub fn prove_program(p: &Program, open: &[Property], cancel: &Cancel) -> BTreeSet<PropertyKey> {
    let target_node = |k: &PropertyKey| p.cfa(k.func).node_ids().find(|&n| p.cfa(k.func).node(n).target == Some(k.target));
    let targets: BTreeSet<(FuncId, NodeId)> = open.iter().filter_map(|pr| Some((pr.key.func, target_node(&pr.key)?))).collect();
    if targets.is_empty() {
        return BTreeSet::new();
    }
    // Linear invariants are the template and Horn clause phases' (cheaper there): this phase
    // is for programs that assert a condition beyond linear arithmetic.
    let funcs = p.reachable_functions(p.start);
    if !funcs.iter().any(|&f| asserted(p, f).iter().any(beyond_linear)) {
        tracing::debug!("guesses: no assertion beyond linear arithmetic");
        return BTreeSet::new();
    }
    let mut cands = Annotations::new();
    for f in funcs {
        let cfa = p.cfa(f);
        let heads: Vec<NodeId> = cfa.loop_heads().filter(|&n| cfa.node(n).rpo != u32::MAX).collect();
        if heads.is_empty() {
            continue;
        }
        let at_loops = candidates(p, f);
        for n in heads {
            cands.insert((f, n), at_loops.clone());
        }
    }
    // At the entry of an assertion helper with a target: its parameters are nonzero.
    for &(f, _) in &targets {
        let cfa = p.cfa(f);
        if cfa.assert_helper && f != p.start {
            let nonzero: Vec<Expr> = cfa
                .params
                .iter()
                .filter(|&&v| matches!(p.var(v).kind, VarKind::Int(_)))
                .map(|&v| binary(BinOp::Ne, wide(p, v), Expr::Const(0, IntTy::I64)))
                .collect();
            cands.insert((f, cfa.entry), nonzero);
        }
    }
    cands.retain(|_, v| !v.is_empty());
    let before: usize = cands.values().map(Vec::len).sum();
    refute_by_runs(p, &mut cands, cancel);
    cands.retain(|_, v| !v.is_empty());
    if cands.is_empty() {
        return BTreeSet::new();
    }
    tracing::debug!("guesses: {} of {} candidates survive the runs", cands.values().map(Vec::len).sum::<usize>(), before);
    tracing::debug!("guesses: {} candidates at {} cut points", cands.values().map(Vec::len).sum::<usize>(), cands.len());
    if tracing::enabled!(tracing::Level::TRACE) {
        for ((f, n), c) in &cands {
            let shown: Vec<String> = c.iter().map(|e| crate::cfa::pretty::expr(p, e, true)).collect();
            tracing::trace!("guesses: candidates at {}@{}: {}", p.cfa(*f).name, n.0, shown.join(" ; "));
        }
    }
    let inv = inductive_subset(p, cands, cancel);
    if cancel.check().is_err() || inv.is_empty() {
        tracing::debug!("guesses: nothing inductive{}", if cancel.check().is_err() { " (out of time)" } else { "" });
        return BTreeSet::new();
    }
    if tracing::enabled!(tracing::Level::DEBUG) {
        for ((f, n), c) in &inv {
            let shown: Vec<String> = c.iter().map(|e| crate::cfa::pretty::expr(p, e, true)).collect();
            tracing::debug!("guesses: inductive at {}@{}: {}", p.cfa(*f).name, n.0, shown.join(" && "));
        }
    }
    let shown = unreachable_targets(p, &inv, &targets, cancel);
    if cancel.check().is_err() {
        return BTreeSet::new();
    }
    let proved: BTreeSet<PropertyKey> =
        open.iter().map(|pr| pr.key).filter(|k| target_node(k).is_some_and(|n| shown.contains(&(k.func, n)))).collect();
    tracing::debug!("guesses: {} of {} properties proved", proved.len(), open.len());
    proved
}

/// Whether `e` is beyond what the linear phases express: a product of variables, a division or
/// remainder, a bitwise operation or a shift (`y*y == 2*x + 1`, `(x & 5) == 5`).
fn beyond_linear(e: &Expr) -> bool {
    let mut found = crate::invariants::nonlinear(e);
    e.walk(&mut |x| {
        found |=
            matches!(x, Expr::Binary(BinOp::Div | BinOp::Rem | BinOp::Shl | BinOp::Shr | BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor, ..));
    });
    found
}

/// Runs of the program whose loop-head states refute candidates (a few steps each).
const RUNS: u64 = 12;
const RUN_STEPS: u64 = 20_000;
/// Loop-head states looked at per loop head and run at most.
const STATES_PER_HEAD: u32 = 200;

/// Drops the candidates some concrete run's state at their loop head refutes (Ernst et al.'s
/// Daikon, and DIG for `nla-digbench`, learn invariants from such states): an invariant holds
/// in every state a run reaches, so what remains is what Houdini has to check.
fn refute_by_runs(p: &Program, cands: &mut Annotations, cancel: &Cancel) {
    struct Refuter<'a> {
        cands: &'a mut Annotations,
        seen: std::collections::HashMap<(FuncId, NodeId), u32>,
    }
    impl crate::concrete::HeadObserver for Refuter<'_> {
        fn at_head(&mut self, func: FuncId, node: NodeId, eval: &mut dyn FnMut(&Expr) -> Option<i128>) {
            let Some(list) = self.cands.get_mut(&(func, node)) else { return };
            let seen = self.seen.entry((func, node)).or_default();
            *seen += 1;
            if *seen <= STATES_PER_HEAD {
                list.retain(|e| eval(e) != Some(0));
            }
        }
    }
    let plan = crate::concrete::Plan::new(p);
    let limits = crate::concrete::RunLimits {
        max_steps: RUN_STEPS,
        max_inputs: 10_000,
        keep_ops: 0,
        trace_steps: 2,
        max_frames: 10_000,
        accelerate: false,
    };
    for k in 0..RUNS {
        if cancel.check().is_err() {
            return;
        }
        let mut strategy: Box<dyn crate::concrete::InputStrategy> = match k {
            0 => Box::new(crate::concrete::Zeros),
            1..=4 => Box::new(crate::concrete::Boundary::new(k)),
            _ => Box::new(crate::concrete::Constant(k as i128 - 3)),
        };
        let mut r = Refuter { cands: &mut *cands, seen: Default::default() };
        let run = crate::concrete::run_observed(p, &plan, strategy.as_mut(), &limits, cancel, &mut r);
        if run.inputs.is_empty() && run.choices == 0 {
            // Every run would be this one.
            return;
        }
    }
}

fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::Binary(op, Box::new(a), Box::new(b), IntTy::INT)
}

/// `v` as a `long long` expression.
fn wide(p: &Program, v: VarId) -> Expr {
    Expr::Var(v, p.var(v).int_ty()).cast(IntTy::I64)
}

/// The candidates at the loop heads of `f`: its asserted conditions, then the pairwise ones
/// over its scalars.
fn candidates(p: &Program, f: FuncId) -> Vec<Expr> {
    let mut out: Vec<Expr> = Vec::new();
    let push = |out: &mut Vec<Expr>, e: Expr| {
        if !out.contains(&e) {
            out.push(e);
        }
    };
    for e in asserted(p, f) {
        push(&mut out, e);
    }
    let scalars = scalars(p, f);
    let zero = Expr::Const(0, IntTy::I64);
    for (i, &x) in scalars.iter().enumerate() {
        for &y in &scalars[i + 1..] {
            push(&mut out, binary(BinOp::Eq, wide(p, x), wide(p, y)));
        }
        for &y in scalars.iter().filter(|&&y| y != x) {
            push(&mut out, binary(BinOp::Le, wide(p, x), wide(p, y)));
            let still_zero = binary(BinOp::Eq, wide(p, x), zero.clone());
            push(&mut out, binary(BinOp::BitOr, binary(BinOp::Le, wide(p, x), wide(p, y)), still_zero));
        }
    }
    out.truncate(MAX_CANDIDATES);
    out
}

/// The conditions `f` asserts, over its own variables and the globals: the arguments of its
/// calls to assertion helpers (`__VERIFIER_assert(c)`: `c != 0`), and the condition of each
/// branch that avoids a target (`if (!(c)) reach_error();`, `assert(c)`).
fn asserted(p: &Program, f: FuncId) -> Vec<Expr> {
    let cfa = p.cfa(f);
    let mut out = Vec::new();
    for e in &cfa.edges {
        match &e.kind {
            EdgeKind::CallSummary(call) if p.cfa(call.callee).assert_helper => {
                for a in call.args.iter().filter(|a| !mentions_synthetic(p, a)) {
                    out.push(match a {
                        // A comparison is its own truth value.
                        Expr::Binary(op, ..) if op.is_comparison() => a.clone(),
                        _ => binary(BinOp::Ne, a.clone(), Expr::Const(0, a.ty())),
                    });
                }
            }
            EdgeKind::Assume { cond, truth } if cfa.node(e.dst).target.is_some() && !mentions_synthetic(p, cond) => {
                // The branch to the target is taken when `cond == truth`: the other one holds.
                out.push(if *truth { Expr::Unary(UnOp::LNot, Box::new(cond.clone()), IntTy::INT) } else { cond.clone() });
            }
            _ => {}
        }
    }
    out
}

/// Whether `e` reads a variable the front end made up (its value at a loop head means
/// nothing).
fn mentions_synthetic(p: &Program, e: &Expr) -> bool {
    let mut vs = Vec::new();
    e.vars(&mut vs);
    vs.iter().any(|&v| p.var(v).synthetic)
}

/// The integer scalars of `f` its edges assign or compare (locals and globals, not made up by
/// the front end), at most [`MAX_SCALARS`] in order of first use.
fn scalars(p: &Program, f: FuncId) -> Vec<VarId> {
    let cfa = p.cfa(f);
    let mut out: Vec<VarId> = Vec::new();
    let add = |v: VarId, out: &mut Vec<VarId>| {
        if matches!(p.var(v).kind, VarKind::Int(_)) && !p.var(v).synthetic && !out.contains(&v) && v.func().is_none_or(|g| g == f) {
            out.push(v);
        }
    };
    for e in &cfa.edges {
        let mut vs = Vec::new();
        match &e.kind {
            EdgeKind::Assume { cond, .. } => cond.vars(&mut vs),
            EdgeKind::Statement(crate::ir::Stmt::Assign(lhs, x)) | EdgeKind::Declaration(crate::ir::Stmt::Assign(lhs, x)) => {
                vs.push(lhs.var());
                x.vars(&mut vs);
            }
            _ => {}
        }
        for v in vs {
            add(v, &mut out);
        }
    }
    out.truncate(MAX_SCALARS);
    out
}

#[cfg(test)]
mod tests {
    /// How many of the program's properties the phase proves, of how many.
    fn proved(body: &str) -> (usize, usize) {
        crate::analyses::proved_in_main(body, super::prove_program)
    }

    /// `nla-digbench/ps2-ll.c`'s loop: the asserted polynomial equality is inductive modulo
    /// 2^64 (its step is a polynomial identity).
    const SQUARES: &str = "int k = __VERIFIER_nondet_int();\nlong long y = 0, x = 0, c = 0;\n\
                           while (1) {\n__VERIFIER_assert(y * y - 2 * x + y == 0);\nif (!(c < k)) break;\n\
                           c = c + 1;\ny = y + 1;\nx = y + x;\n}\n";

    #[test]
    fn an_asserted_polynomial_equality_is_the_loops_invariant() {
        let (p, all) = proved(&format!("{SQUARES}__VERIFIER_assert(y * y - 2 * x + y == 0);\n"));
        assert_eq!(p, all);
    }

    #[test]
    fn a_wrong_equality_is_not_proved() {
        // One step off: `y*y - 2*x + y == 0` fails after the first iteration.
        let (p, _) = proved(&SQUARES.replace("x = y + x", "x = y + x + 1"));
        assert_eq!(p, 0);
    }

    #[test]
    fn counters_are_equal_and_bounded_by_their_limit_or_zero() {
        // `c == y` and `c <= k | c == 0` at the head (with the asserted equality).
        let (p, all) = proved(&format!("{SQUARES}__VERIFIER_assert(y == c);\n__VERIFIER_assert(y <= k || y == 0);\n"));
        assert_eq!((p, all), (3, 3));
    }
}
