//! Built-in functions lowered in place rather than called: `__builtin_expect`, `abs` and its
//! kin, the `va_*` built-ins, gcc's overflow built-ins (`__builtin_add_overflow` and friends),
//! the front end's spellings of labels as values, and calls of constructs that are not
//! modelled (threads, `setjmp`, signals).

use lang_c::ast::{CallExpression, Expression, UnaryOperator};
use lang_c::span::{Node, Span as LSpan};

use super::{Place, Value};
use crate::cfa::build::func::FnBuilder;
use crate::cfa::build::types::CType;
use crate::cfa::build::BResult;
use crate::cfa::EdgeKind;
use crate::frontend::rewrite::{COMPUTED_GOTO, LABEL_ADDRESS, TYPES_COMPATIBLE};
use crate::ir::{BinOp, Expr, Imprecision, IntTy, Stmt, UnOp};

/// Calls of the C library cpals does not model, and whether their effects happen elsewhere
/// than at the call (a thread runs and a handler is called at any later point, `setjmp`
/// returns again when `longjmp` is called): then a havoc at the call is not an
/// over-approximation.
fn is_unsupported_call(name: &str) -> Option<(&'static str, bool)> {
    match name {
        "pthread_create" | "thrd_create" => Some(("threads and processes", true)),
        "fork" => Some(("threads and processes", false)),
        "setjmp" | "_setjmp" | "longjmp" | "siglongjmp" | "sigsetjmp" => Some(("setjmp/longjmp", true)),
        "signal" | "sigaction" => Some(("signal handlers", true)),
        _ => None,
    }
}

/// One of gcc's overflow built-ins: the operation, whether it is a `_p` variant (the third
/// argument only gives the result type) and the type of a typed variant (`__builtin_sadd_overflow`).
#[derive(Clone, Copy, Debug)]
struct OverflowOp {
    op: BinOp,
    predicate: bool,
    /// `(signed, rank)` with rank 0 `int`, 1 `long`, 2 `long long`.
    typed: Option<(bool, u8)>,
}

fn overflow_builtin(name: &str) -> Option<OverflowOp> {
    let rest = name.strip_prefix("__builtin_")?;
    let op_of = |s: &str| match s {
        "add" => Some(BinOp::Add),
        "sub" => Some(BinOp::Sub),
        "mul" => Some(BinOp::Mul),
        _ => None,
    };
    if let Some(r) = rest.strip_suffix("_overflow_p") {
        return Some(OverflowOp { op: op_of(r)?, predicate: true, typed: None });
    }
    let r = rest.strip_suffix("_overflow")?;
    if let Some(op) = op_of(r) {
        return Some(OverflowOp { op, predicate: false, typed: None });
    }
    let (signed, r) = match r.as_bytes().first()? {
        b's' => (true, &r[1..]),
        b'u' => (false, &r[1..]),
        _ => return None,
    };
    let (opname, rank) = match r.len() {
        3 => (r, 0),
        4 if r.ends_with('l') => (&r[..3], 1),
        5 if r.ends_with("ll") => (&r[..3], 2),
        _ => return None,
    };
    Some(OverflowOp { op: op_of(opname)?, predicate: false, typed: Some((signed, rank)) })
}

impl<'a, 'p> FnBuilder<'a, 'p> {
    /// `goto *p`: a jump to one of the labels whose address the program takes (any other
    /// target is undefined behaviour). Which one is not modelled: the choice is a branch on
    /// unknown conditions, so a proof covers every target and a counterexample through it is
    /// not confirmed.
    fn computed_goto(&mut self, span: LSpan) {
        let sp = self.span(span);
        let pp = &self.cx.parsed.pp;
        let pat = format!("{}(", LABEL_ADDRESS);
        let mut names: Vec<String> = pp
            .match_indices(&pat)
            .filter_map(|(i, _)| {
                let rest = &pp[i + pat.len()..];
                let name = rest[..rest.find(')')?].trim();
                (!name.is_empty()).then(|| name.to_string())
            })
            .collect();
        names.sort();
        names.dedup();
        let mut cur = self.st.cur;
        for (k, name) in names.iter().enumerate() {
            let target = match self.st.labels.get(name) {
                Some(&n) => n,
                None => {
                    let n = self.new_node();
                    self.st.labels.insert(name.clone(), n);
                    n
                }
            };
            if k + 1 == names.len() {
                let choose = Expr::Unknown(IntTy::INT, Imprecision::Other);
                self.edge(cur, target, EdgeKind::Assume { cond: choose, truth: true }, sp);
            } else {
                let next = self.new_node();
                let choose = Expr::Unknown(IntTy::INT, Imprecision::Other);
                self.edge(cur, target, EdgeKind::Assume { cond: choose.clone(), truth: true }, sp);
                self.edge(cur, next, EdgeKind::Assume { cond: choose, truth: false }, sp);
                cur = next;
            }
        }
        self.dead();
    }

    /// `__builtin_add_overflow(a, b, &r)` and friends: `r` receives the infinitely precise
    /// result wrapped to `r`'s type, and the call returns whether that result does not fit.
    fn overflow(&mut self, o: OverflowOp, call: &CallExpression, span: LSpan) -> BResult<Value> {
        let args = &call.arguments;
        let res_ty = match o.typed {
            Some((signed, rank)) => {
                let bits = match rank {
                    0 => 32,
                    1 => self.cx.types.model.long_bits(),
                    _ => 64,
                };
                CType::Int(IntTy::new(bits, signed))
            }
            None if o.predicate => self.type_of(&args[2])?.decay(),
            None => match self.type_of(&args[2])?.decay() {
                CType::Ptr(t) => *t,
                _ => CType::Void,
            },
        };
        let mut a = self.value(&args[0])?;
        let mut b = self.value(&args[1])?;
        if o.typed.is_some() {
            a = self.convert(a, &res_ty);
            b = self.convert(b, &res_ty);
        }
        let t = match &res_ty {
            CType::Int(t) if !t.boolean => Some(*t),
            _ => None,
        };
        let (flag, wrapped) = match (a, b, t) {
            (Value::Int(ea, CType::Int(ta)), Value::Int(eb, CType::Int(tb)), Some(t)) => {
                let wrapped = Expr::Binary(o.op, Box::new(ea.clone().cast(t)), Box::new(eb.clone().cast(t)), t);
                // The exact result of operands of at most 64 bits fits in 96 bits, except a
                // product of two wide operands: its overflow is not modelled.
                let flag = if o.op == BinOp::Mul && ta.bits.max(tb.bits) > 32 {
                    Expr::Unknown(IntTy::INT, Imprecision::Other)
                } else {
                    let w = IntTy::new(96, true);
                    let exact = Expr::Binary(o.op, Box::new(ea.cast(w)), Box::new(eb.cast(w)), w);
                    let below = Expr::Binary(BinOp::Lt, Box::new(exact.clone()), Box::new(Expr::Const(t.min(), w)), IntTy::INT);
                    let above = Expr::Binary(BinOp::Gt, Box::new(exact), Box::new(Expr::Const(t.max(), w)), IntTy::INT);
                    Expr::Binary(BinOp::BitOr, Box::new(below), Box::new(above), IntTy::INT)
                };
                (flag, Some(Value::Int(wrapped, CType::Int(t))))
            }
            _ => {
                self.note(span, "overflow built-in on operands that are not integers is not modelled");
                (Expr::Unknown(IntTy::INT, Imprecision::Other), t.map(|t| Value::Int(Expr::Unknown(t, Imprecision::Other), CType::Int(t))))
            }
        };
        if !o.predicate {
            let dest = match &args[2].node {
                Expression::UnaryOperator(u) if u.node.operator.node == UnaryOperator::Address => self.place(&u.node.operand)?,
                _ => {
                    self.effect(&args[2])?;
                    Place::Mem(res_ty.clone())
                }
            };
            let v = wrapped.unwrap_or_else(|| self.unknown_of(&res_ty, Imprecision::Other));
            self.write(&dest, v, span)?;
        }
        Ok(Value::Int(flag.cast(IntTy::BOOL), CType::Int(IntTy::BOOL)))
    }

    /// Built-ins lowered in place (`__builtin_expect`, `abs` and its kin) and calls of
    /// constructs that are not modelled (threads, `setjmp`, signals). `None` for others.
    pub(super) fn call_builtin(&mut self, name: &str, call: &CallExpression, span: LSpan) -> BResult<Option<Value>> {
        let v = self.builtin(name, call, span)?;
        // A built-in lowered in place is no external function of the program (a native replay
        // compiles it with gcc, which has it); the unsupported constructs stay external.
        if v.is_some() && is_unsupported_call(name).is_none() && !self.cx.func_ids.contains_key(name) {
            self.cx.externals.remove(name);
        }
        Ok(v)
    }

    fn builtin(&mut self, name: &str, call: &CallExpression, span: LSpan) -> BResult<Option<Value>> {
        if matches!(name, "__builtin_expect" | "__builtin_expect_with_probability") && !call.arguments.is_empty() {
            let v = self.value(&call.arguments[0])?;
            for a in &call.arguments[1..] {
                self.effect(a)?;
            }
            return Ok(Some(v));
        }
        if name == "__cpals_unspecified_int" && call.arguments.is_empty() && self.cx.models.contains_key("__cpals_compare_result") {
            // The library models' value of which only a sign is specified (`__cpals_compare_result`).
            return Ok(Some(self.unknown_of(&CType::Int(IntTy::INT), Imprecision::Sign)));
        }
        if matches!(name, "abs" | "labs" | "llabs") && call.arguments.len() == 1 && !self.cx.func_ids.contains_key(name) {
            return self.abs(name, &call.arguments[0]).map(Some);
        }
        if matches!(name, "__builtin_va_start" | "__builtin_va_end" | "__builtin_va_copy" | "__builtin_c23_va_start") {
            // The list's contents are never read by what is modelled: `va_arg` yields any value.
            for a in &call.arguments {
                self.effect(a)?;
            }
            return Ok(Some(Value::Void));
        }
        if name == LABEL_ADDRESS {
            // `&&label`: some address; a `goto *` to it is not modelled (below).
            return Ok(Some(self.unknown_ptr(CType::Void, Imprecision::Address)));
        }
        if name == TYPES_COMPATIBLE && call.arguments.len() == 2 {
            // The front end's spelling of `__builtin_types_compatible_p` (see there).
            let v = self.value(&call.arguments[0])?;
            let exact = crate::cfa::build::consts::eval(self.cx, &call.arguments[1].node).unwrap_or(2);
            let answer = match &v {
                Value::Int(Expr::Const(a, _), _) => Some(*a),
                _ => None,
            };
            let t = CType::Int(IntTy::INT);
            return Ok(Some(match (answer, exact) {
                (Some(a), 0) => Value::Int(Expr::Const(a, IntTy::INT), t),
                (Some(0), 1) => Value::Int(Expr::Const(0, IntTy::INT), t),
                _ => {
                    self.note(span, "`__builtin_types_compatible_p` of these types is not modelled");
                    Value::Int(Expr::Unknown(IntTy::INT, Imprecision::Other), t)
                }
            }));
        }
        if name == COMPUTED_GOTO {
            for a in &call.arguments {
                self.effect(a)?;
            }
            self.computed_goto(span);
            return Ok(Some(Value::Void));
        }
        if let Some(op) = overflow_builtin(name) {
            if call.arguments.len() == 3 {
                return self.overflow(op, call, span).map(Some);
            }
        }
        if let Some((what, elsewhere)) = is_unsupported_call(name) {
            let sp = self.span(span);
            for a in &call.arguments {
                self.effect(a)?;
            }
            self.note(span, format!("{} are not modelled", what));
            if elsewhere && self.st.dry == 0 && self.cx.asynchronous.is_none() {
                let pos = self.cx.range(span);
                self.cx.asynchronous = Some(crate::cfa::BuildNote { pos, message: format!("`{}` ({})", name, what) });
            }
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
