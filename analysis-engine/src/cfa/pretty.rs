//! Prints IR expressions, statements and edges as C, with the program's variable names and
//! only the parentheses C's precedence needs (for DOT labels, invariants and traces).

use crate::cfa::{EdgeKind, Program};
use crate::ir::{BinOp, Expr, InputSource, IntTy, LValue, Stmt, UnOp};

fn prec(op: BinOp) -> u8 {
    match op {
        BinOp::Mul | BinOp::Div | BinOp::Rem => 10,
        BinOp::Add | BinOp::Sub => 9,
        BinOp::Shl | BinOp::Shr => 8,
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 7,
        BinOp::Eq | BinOp::Ne => 6,
        BinOp::BitAnd => 5,
        BinOp::BitXor => 4,
        BinOp::BitOr => 3,
    }
}

/// Prints a constant of a type as a C literal.
pub fn literal(v: i128, ty: IntTy) -> String {
    if ty.bits == 64 && !ty.signed {
        format!("{}ULL", v)
    } else if ty.bits == 64 && v == i64::MIN as i128 {
        "(-9223372036854775807LL - 1)".into()
    } else if ty.bits == 32 && ty.signed && v == i32::MIN as i128 {
        "(-2147483647 - 1)".into()
    } else if ty.bits == 64 && !ty.boolean && !IntTy::I32.contains(v) {
        format!("{}LL", v)
    } else if ty.bits == 32 && !ty.signed && v > i32::MAX as i128 {
        format!("{}U", v)
    } else {
        v.to_string()
    }
}

/// Prints an expression; `hide_casts` omits conversions (for compact display only).
pub fn expr(p: &Program, e: &Expr, hide_casts: bool) -> String {
    let mut s = String::new();
    write_expr(p, e, 0, hide_casts, &mut s);
    s
}

fn write_expr(p: &Program, e: &Expr, ctx: u8, hide: bool, out: &mut String) {
    match e {
        Expr::Const(v, t) => {
            let lit = literal(*v, *t);
            if *v < 0 && ctx >= 11 {
                out.push('(');
                out.push_str(&lit);
                out.push(')');
            } else {
                out.push_str(&lit);
            }
        }
        Expr::Var(v, _) => out.push_str(p.var_name(*v)),
        Expr::Elem(v, i, _) => {
            out.push_str(p.var_name(*v));
            out.push('[');
            write_expr(p, i, 0, hide, out);
            out.push(']');
        }
        Expr::Unary(op, a, _) => {
            let paren = ctx > 11;
            if paren {
                out.push('(');
            }
            out.push_str(match op {
                UnOp::Neg => "-",
                UnOp::BitNot => "~",
                UnOp::LNot => "!",
            });
            write_expr(p, a, 11, hide, out);
            if paren {
                out.push(')');
            }
        }
        Expr::Binary(op, a, b, _) => {
            let pr = prec(*op);
            let paren = ctx > pr;
            if paren {
                out.push('(');
            }
            write_expr(p, a, pr, hide, out);
            out.push(' ');
            out.push_str(op.symbol());
            out.push(' ');
            write_expr(p, b, pr + 1, hide, out);
            if paren {
                out.push(')');
            }
        }
        Expr::Cast(a, t) => {
            if hide {
                write_expr(p, a, ctx, hide, out);
            } else {
                let paren = ctx > 11;
                if paren {
                    out.push('(');
                }
                out.push('(');
                out.push_str(t.c_name());
                out.push(')');
                write_expr(p, a, 11, hide, out);
                if paren {
                    out.push(')');
                }
            }
        }
        Expr::Ite(c, a, b, _) => {
            let paren = ctx > 1;
            if paren {
                out.push('(');
            }
            write_expr(p, c, 2, hide, out);
            out.push_str(" ? ");
            write_expr(p, a, 2, hide, out);
            out.push_str(" : ");
            write_expr(p, b, 1, hide, out);
            if paren {
                out.push(')');
            }
        }
        Expr::Unknown(t, _) => {
            out.push_str("__cpals_any_");
            out.push_str(&t.c_name().replace(' ', "_"));
            out.push_str("()");
        }
    }
}

pub fn lvalue(p: &Program, l: &LValue) -> String {
    match l {
        LValue::Var(v) => p.var_name(*v).to_string(),
        LValue::Elem(v, i) => format!("{}[{}]", p.var_name(*v), expr(p, i, true)),
    }
}

pub fn stmt(p: &Program, s: &Stmt) -> String {
    match s {
        Stmt::Assign(l, e) => format!("{} = {}", lvalue(p, l), expr(p, e, true)),
        Stmt::Input { lhs, source } => match source {
            InputSource::Call(f) if f.starts_with("argument ") => format!("{} = <{}>", lvalue(p, lhs), f),
            InputSource::Call(f) | InputSource::External(f) => format!("{} = {}()", lvalue(p, lhs), f),
            InputSource::ExternObject(x) => format!("{} = <extern {}>", lvalue(p, lhs), x),
            InputSource::Uninitialised => format!("{} = <uninitialised>", lvalue(p, lhs)),
        },
        Stmt::HavocMemory(why) => format!("havoc memory ({})", why.describe()),
        Stmt::InitArray { var, zero: true } => format!("{} = {{0}}", p.var_name(*var)),
        Stmt::InitArray { var, zero: false } => format!("{} = <uninitialised>", p.var_name(*var)),
        Stmt::Unsupported(what) => format!("unsupported: {}", what),
    }
}

/// A one-line label for an edge.
pub fn edge(p: &Program, k: &EdgeKind) -> String {
    match k {
        EdgeKind::Blank => String::new(),
        EdgeKind::Assume { cond, truth: true } => format!("[{}]", expr(p, cond, true)),
        EdgeKind::Assume { cond, truth: false } => format!("[!({})]", expr(p, cond, true)),
        EdgeKind::Statement(s) | EdgeKind::Declaration(s) => stmt(p, s),
        EdgeKind::Return(es) if es.is_empty() => "return".into(),
        EdgeKind::Return(es) => format!("return {}", es.iter().map(|e| expr(p, e, true)).collect::<Vec<_>>().join(", ")),
        EdgeKind::CallSummary(c) => {
            let args = c.args.iter().map(|e| expr(p, e, true)).collect::<Vec<_>>().join(", ");
            let call = format!("{}({})", p.cfa(c.callee).name, args);
            match c.ret.as_slice() {
                [] => call,
                [l] => format!("{} = {}", lvalue(p, l), call),
                ls => format!("({}) = {}", ls.iter().map(|l| lvalue(p, l)).collect::<Vec<_>>().join(", "), call),
            }
        }
    }
}
