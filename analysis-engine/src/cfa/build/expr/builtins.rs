//! Built-in functions lowered in place rather than called: `__builtin_expect`, `abs` and its
//! kin, and calls of constructs that are not modelled (threads, `setjmp`, signals).

use lang_c::ast::{CallExpression, Expression};
use lang_c::span::{Node, Span as LSpan};

use super::Value;
use crate::cfa::build::func::FnBuilder;
use crate::cfa::build::types::CType;
use crate::cfa::build::BResult;
use crate::ir::{BinOp, Expr, Imprecision, IntTy, Stmt, UnOp};

fn is_unsupported_call(name: &str) -> Option<&'static str> {
    match name {
        "pthread_create" | "thrd_create" | "fork" => Some("threads and processes"),
        "setjmp" | "_setjmp" | "longjmp" | "siglongjmp" | "sigsetjmp" => Some("setjmp/longjmp"),
        "signal" | "sigaction" => Some("signal handlers"),
        _ => None,
    }
}

impl<'a, 'p> FnBuilder<'a, 'p> {
    /// Built-ins lowered in place (`__builtin_expect`, `abs` and its kin) and calls of
    /// constructs that are not modelled (threads, `setjmp`, signals). `None` for others.
    pub(super) fn call_builtin(&mut self, name: &str, call: &CallExpression, span: LSpan) -> BResult<Option<Value>> {
        if name == "__builtin_expect" && !call.arguments.is_empty() {
            let v = self.value(&call.arguments[0])?;
            for a in &call.arguments[1..] {
                self.effect(a)?;
            }
            return Ok(Some(v));
        }
        if matches!(name, "abs" | "labs" | "llabs") && call.arguments.len() == 1 && !self.cx.func_ids.contains_key(name) {
            return self.abs(name, &call.arguments[0]).map(Some);
        }
        if let Some(what) = is_unsupported_call(name) {
            let sp = self.span(span);
            for a in &call.arguments {
                self.effect(a)?;
            }
            self.note(span, format!("{} are not modelled", what));
            self.stmt_edge(Stmt::Unsupported(what.to_string()), sp);
            return Ok(Some(Value::Int(Expr::Unknown(IntTy::INT, Imprecision::Other), CType::Int(IntTy::INT))));
        }
        Ok(None)
    }

    /// `abs(x)`, `labs(x)`, `llabs(x)` as `x < 0 ? -x : x` in the function's type.
    fn abs(&mut self, name: &str, arg: &Node<Expression>) -> BResult<Value> {
        let t = match name {
            "abs" => IntTy::INT,
            "labs" => self.cx.types.long(true),
            _ => IntTy::I64,
        };
        let v = self.value(arg)?;
        let x = match self.convert(v, &CType::Int(t)) {
            Value::Int(e, _) => e,
            _ => Expr::Unknown(t, Imprecision::Float),
        };
        let neg = Expr::Binary(BinOp::Lt, Box::new(x.clone()), Box::new(Expr::Const(0, t)), IntTy::INT);
        let e = Expr::Ite(Box::new(neg), Box::new(Expr::Unary(UnOp::Neg, Box::new(x.clone()), t)), Box::new(x), t);
        Ok(Value::Int(e, CType::Int(t)))
    }
}
