//! Transfer relation of the explicit-value analysis (seed 000 §II-B, item 3): expression
//! evaluation on machine integers, assignments, and assumptions that either decide the
//! condition or fix the one value a variable can take (`[x == 5]` sets `x`).
//!
//! The same function serves the analysis (followed by the precision operator) and the
//! full-precision replay of error paths, so both interpret operations identically.

use crate::analyses::value::state::{Cell, Saved, ValueState, DEFAULT};
use crate::cfa::{EdgeKind, Program};
use crate::cfa::{OpCtx, OpKind};
use crate::ir::{eval_binop, eval_unop, BinOp, Expr, IntTy, LValue, Stmt, UnOp, VarId, VarKind};

/// Evaluates an expression; `None` is ⊤ (some operand unknown, or undefined behaviour).
pub fn eval(e: &Expr, s: &ValueState) -> Option<i128> {
    match e {
        Expr::Const(v, _) => Some(*v),
        Expr::Var(v, _) => s.get(*v),
        Expr::Elem(v, i, _) => {
            let i = eval(i, s)?;
            s.get_elem(*v, i64::try_from(i).ok()?)
        }
        Expr::Unary(op, a, _) => {
            let x = eval(a, s)?;
            Some(eval_unop(*op, x, a.ty()))
        }
        Expr::Binary(op, a, b, t) => {
            let x = eval(a, s)?;
            let y = eval(b, s)?;
            eval_binop(*op, x, y, *t)
        }
        Expr::Cast(a, t) => eval(a, s).map(|x| t.wrap(x)),
        Expr::Ite(c, a, b, _) => {
            if eval(c, s)? != 0 {
                eval(a, s)
            } else {
                eval(b, s)
            }
        }
        Expr::Unknown(..) => None,
    }
}

fn array_len(p: &Program, v: VarId) -> Option<u64> {
    match &p.var(v).kind {
        VarKind::Array { len, .. } => *len,
        VarKind::Int(_) => None,
    }
}

/// Writes a value to an lvalue (⊤ when `val` is `None`).
fn write(p: &Program, s: &mut ValueState, lhs: &LValue, val: Option<i128>) {
    match lhs {
        LValue::Var(v) => s.set(*v, val),
        LValue::Elem(v, i) => match eval(i, s) {
            Some(i) if i >= 0 && array_len(p, *v).is_none_or(|n| (i as u128) < n as u128) => s.set_elem(*v, i as i64, val),
            // Unknown (or out-of-bounds) index: any element may have changed.
            _ => s.forget(*v),
        },
    }
}

/// The outcome of assuming a condition: infeasible, or the (possibly refined) state.
pub fn assume(s: &ValueState, cond: &Expr, truth: bool) -> Option<ValueState> {
    match eval(cond, s) {
        Some(v) => ((v != 0) == truth).then(|| s.clone()),
        None => {
            let mut out = s.clone();
            refine(&mut out, cond, truth).then_some(out)
        }
    }
}

/// Learns values from a condition with an unknown truth value. Returns false if the
/// condition is certainly violated (a value outside a variable's type would be needed).
fn refine(s: &mut ValueState, cond: &Expr, truth: bool) -> bool {
    match cond {
        Expr::Unary(UnOp::LNot, a, _) => refine(s, a, !truth),
        Expr::Binary(BinOp::Eq, a, b, _) if truth => equate(s, a, b),
        Expr::Binary(BinOp::Ne, a, b, _) if !truth => equate(s, a, b),
        Expr::Binary(BinOp::Eq, a, b, _) if !truth => exclude(s, a, b),
        Expr::Binary(BinOp::Ne, a, b, _) if truth => exclude(s, a, b),
        Expr::Binary(BinOp::BitAnd, a, b, _) if truth && is_boolean(a) && is_boolean(b) => refine(s, a, true) && refine(s, b, true),
        Expr::Cast(a, t) if widens(a.ty(), *t) => refine(s, a, truth),
        // `[x]` false means x == 0; true fixes `_Bool` variables to 1.
        e @ (Expr::Var(..) | Expr::Elem(..)) => {
            if !truth {
                assign_known(s, e, 0)
            } else if e.ty().boolean {
                assign_known(s, e, 1)
            } else {
                true
            }
        }
        _ => true,
    }
}

fn is_boolean(e: &Expr) -> bool {
    matches!(e, Expr::Binary(op, ..) if op.is_comparison()) || matches!(e, Expr::Unary(UnOp::LNot, ..))
}

/// True if every value of `from` is a value of `to` (the conversion is the identity).
fn widens(from: IntTy, to: IntTy) -> bool {
    if to.boolean {
        return false;
    }
    if from.boolean {
        return true;
    }
    (from.signed == to.signed && from.bits <= to.bits) || (!from.signed && to.signed && from.bits < to.bits)
}

/// `a != b` where one side is a `_Bool` variable (through widening casts) and the other is 0
/// or 1: the variable holds the other value (`switch` on a `_Bool`, `if (b != 0)`).
fn exclude(s: &mut ValueState, a: &Expr, b: &Expr) -> bool {
    for (x, y) in [(a, b), (b, a)] {
        let mut inner = x;
        while let Expr::Cast(i, t) = inner {
            if !widens(i.ty(), *t) {
                break;
            }
            inner = i;
        }
        if !inner.ty().boolean || !matches!(inner, Expr::Var(..) | Expr::Elem(..)) || eval(inner, s).is_some() {
            continue;
        }
        if let Some(c @ (0 | 1)) = eval(y, s) {
            return assign_known(s, inner, 1 - c);
        }
    }
    true
}

fn equate(s: &mut ValueState, a: &Expr, b: &Expr) -> bool {
    match (eval(a, s), eval(b, s)) {
        (Some(x), None) => assign_known(s, b, x),
        (None, Some(y)) => assign_known(s, a, y),
        _ => true,
    }
}

/// Makes `e == v` hold by fixing the variable `e` denotes (through widening casts).
fn assign_known(s: &mut ValueState, e: &Expr, v: i128) -> bool {
    match e {
        Expr::Var(x, t) => {
            if !t.contains(v) {
                return false;
            }
            s.set(*x, Some(v));
            true
        }
        Expr::Elem(x, i, t) => {
            if !t.contains(v) {
                return false;
            }
            if let Some(i) = eval(i, s).and_then(|i| i64::try_from(i).ok()) {
                if i >= 0 {
                    s.set_elem(*x, i, Some(v));
                }
            }
            true
        }
        Expr::Cast(a, t) if widens(a.ty(), *t) => {
            if !a.ty().contains(v) {
                return false;
            }
            assign_known(s, a, v)
        }
        _ => true,
    }
}

/// Executes a statement.
pub fn exec(p: &Program, s: &mut ValueState, stmt: &Stmt) {
    match stmt {
        Stmt::Assign(lhs, e) => {
            let v = eval(e, s);
            write(p, s, lhs, v);
        }
        Stmt::Input { lhs, .. } => write(p, s, lhs, None),
        Stmt::HavocMemory(_) => {
            for &v in &p.escaped {
                s.forget(v);
            }
        }
        Stmt::InitArray { var, zero } => {
            s.forget(*var);
            if *zero {
                s.cells.insert(Cell { var: *var, idx: DEFAULT }, 0);
            }
        }
        Stmt::Unsupported(_) => {
            // Anything may have happened to memory the program can name.
            for i in 0..p.globals.len() {
                s.forget(VarId::global(i));
            }
            for &v in &p.escaped {
                s.forget(v);
            }
        }
    }
}

/// The successor of a state along an operation (no precision applied), `None` if infeasible.
pub fn successor(p: &Program, s: &ValueState, op: &OpCtx) -> Option<ValueState> {
    match op.kind {
        OpKind::Edge(kind) => match kind {
            EdgeKind::Blank => Some(s.clone()),
            EdgeKind::Assume { cond, truth } => assume(s, cond, *truth),
            EdgeKind::Statement(st) | EdgeKind::Declaration(st) => {
                let mut out = s.clone();
                exec(p, &mut out, st);
                Some(out)
            }
            EdgeKind::Return(es) => {
                let cfa = p.cfa(op.from.func);
                let vals: Vec<Option<i128>> = es.iter().map(|e| eval(e, s)).collect();
                let mut out = s.clone();
                for (&rv, v) in cfa.ret.iter().zip(vals) {
                    out.set(rv, v);
                }
                Some(out)
            }
            EdgeKind::CallSummary(_) => unreachable!("calls are entered through call operations"),
        },
        OpKind::Call { call, callee, recursive } => {
            let cfa = p.cfa(callee);
            let vals: Vec<Option<i128>> = call.args.iter().map(|e| eval(e, s)).collect();
            let mut out = s.clone();
            if recursive {
                // Suspend the active frame of the callee: save and clear its locals.
                let cells: Vec<(Cell, i128)> =
                    out.cells.iter().filter(|(c, _)| c.var.func() == Some(callee)).map(|(c, v)| (*c, *v)).collect();
                for (c, _) in &cells {
                    out.cells.remove(c);
                }
                out.saved.push_back(Saved { func: callee, cells });
            }
            for (i, &param) in cfa.params.iter().enumerate() {
                if matches!(p.var(param).kind, VarKind::Array { .. }) {
                    out.forget(param);
                } else {
                    out.set(param, vals.get(i).copied().flatten());
                }
            }
            Some(out)
        }
        OpKind::Return { call, callee, recursive } => {
            let cfa = p.cfa(callee);
            let rets: Vec<Option<i128>> = cfa.ret.iter().map(|&r| s.get(r)).collect();
            let mut out = s.clone();
            // The callee's activation ends: its locals are dead.
            let dead: Vec<Cell> = out.cells.keys().filter(|c| c.var.func() == Some(callee)).copied().collect();
            for c in dead {
                out.cells.remove(&c);
            }
            if recursive {
                if let Some(frame) = out.saved.pop_back() {
                    for (c, v) in frame.cells {
                        // Escaped locals may have been written through pointers meanwhile.
                        if !p.escaped.contains(&c.var) {
                            out.cells.insert(c, v);
                        }
                    }
                }
            }
            for (lhs, v) in call.ret.iter().zip(rets) {
                write(p, &mut out, lhs, v);
            }
            Some(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(i: u32, t: IntTy) -> Expr {
        Expr::Var(VarId(i), t)
    }

    #[test]
    fn assume_fixes_the_only_value() {
        let s = ValueState::default();
        let c = Expr::Binary(BinOp::Eq, Box::new(var(0, IntTy::I32)), Box::new(Expr::int(0)), IntTy::INT);
        let t = assume(&s, &c, true).unwrap();
        assert_eq!(t.get(VarId(0)), Some(0));
        let f = assume(&s, &c, false).unwrap();
        assert_eq!(f.get(VarId(0)), None);
        assert!(assume(&t, &c, false).is_none(), "contradiction");
    }

    #[test]
    fn widening_casts_learn_and_refute() {
        let s = ValueState::default();
        let uc = Expr::Cast(Box::new(var(0, IntTy::U8)), IntTy::I32);
        let eq300 = Expr::Binary(BinOp::Eq, Box::new(uc.clone()), Box::new(Expr::int(300)), IntTy::INT);
        assert!(assume(&s, &eq300, true).is_none(), "an unsigned char is never 300");
        let eq7 = Expr::Binary(BinOp::Eq, Box::new(uc), Box::new(Expr::int(7)), IntTy::INT);
        assert_eq!(assume(&s, &eq7, true).unwrap().get(VarId(0)), Some(7));
    }

    #[test]
    fn a_bool_that_is_not_0_is_1() {
        let s = ValueState::default();
        let b = Expr::Cast(Box::new(var(0, IntTy::BOOL)), IntTy::I32);
        let eq0 = Expr::Binary(BinOp::Eq, Box::new(b.clone()), Box::new(Expr::int(0)), IntTy::INT);
        assert_eq!(assume(&s, &eq0, false).unwrap().get(VarId(0)), Some(1));
        let ne1 = Expr::Binary(BinOp::Ne, Box::new(Expr::int(1)), Box::new(b.clone()), IntTy::INT);
        assert_eq!(assume(&s, &ne1, true).unwrap().get(VarId(0)), Some(0));
        let one = assume(&s, &eq0, false).unwrap();
        let eq1 = Expr::Binary(BinOp::Eq, Box::new(b), Box::new(Expr::int(1)), IntTy::INT);
        assert!(assume(&one, &eq1, false).is_none(), "a _Bool is 0 or 1");
        let int = Expr::Binary(BinOp::Eq, Box::new(var(1, IntTy::I32)), Box::new(Expr::int(0)), IntTy::INT);
        assert_eq!(assume(&s, &int, false).unwrap().get(VarId(1)), None, "an int that is not 0 is not known");
    }

    #[test]
    fn machine_arithmetic() {
        let mut s = ValueState::default();
        s.set(VarId(0), Some(i32::MAX as i128));
        let inc = Expr::Binary(BinOp::Add, Box::new(var(0, IntTy::I32)), Box::new(Expr::int(1)), IntTy::I32);
        assert_eq!(eval(&inc, &s), Some(i32::MIN as i128), "signed overflow wraps");
        let div0 = Expr::Binary(BinOp::Div, Box::new(var(0, IntTy::I32)), Box::new(Expr::int(0)), IntTy::I32);
        assert_eq!(eval(&div0, &s), None, "division by zero has no value");
        let m = Expr::Binary(BinOp::Rem, Box::new(Expr::int(-7)), Box::new(Expr::int(2)), IntTy::I32);
        assert_eq!(eval(&m, &s), Some(-1), "remainder has the dividend's sign");
    }
}
