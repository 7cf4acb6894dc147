//! Calls in the expression lowering: property violations (`reach_error`, failed asserts),
//! assumptions, functions that end the path, a few built-ins, calls of defined functions
//! (call summary edges with copy-in/copy-out of by-reference structs) and external functions
//! (inputs, havocked memory).

use std::rc::Rc;

use lang_c::ast::{CallExpression, Expression, UnaryOperator};
use lang_c::span::{Node, Span as LSpan};

use super::{Place, Value};
use crate::cfa::build::func::FnBuilder;
use crate::cfa::build::types::{CType, FuncSig, Obj};
use crate::cfa::build::{BResult, Store, Sym};
use crate::cfa::{Call, EdgeKind, TargetKind};
use crate::ir::{BinOp, Expr, FuncId, Imprecision, InputSource, IntTy, LValue, Stmt, UnOp};

/// Functions whose call is a property violation.
pub fn target_kind(name: &str) -> Option<TargetKind> {
    match name {
        "reach_error" | "__VERIFIER_error" => Some(TargetKind::ReachError),
        "__assert_fail" | "__assert_perror_fail" | "__assert" | "__assert_rtn" => Some(TargetKind::Assert),
        _ => None,
    }
}

fn is_terminating(name: &str) -> bool {
    matches!(
        name,
        "abort"
            | "exit"
            | "_exit"
            | "_Exit"
            | "__VERIFIER_abort"
            | "__builtin_trap"
            | "__builtin_unreachable"
            | "pthread_exit"
            | "quick_exit"
    )
}

/// External functions known not to write through their pointer arguments.
fn is_pure_external(name: &str) -> bool {
    matches!(
        name,
        "printf"
            | "puts"
            | "putchar"
            | "strlen"
            | "strcmp"
            | "strncmp"
            | "memcmp"
            | "free"
            | "fprintf"
            | "fputs"
            | "__VERIFIER_atomic_begin"
            | "__VERIFIER_atomic_end"
            | "atoi"
            | "atol"
            | "strchr"
            | "isdigit"
            | "isalpha"
            | "isspace"
    )
}

fn is_allocator(name: &str) -> bool {
    matches!(name, "malloc" | "calloc" | "realloc" | "alloca" | "__builtin_alloca" | "valloc" | "strdup")
}

fn is_unsupported_call(name: &str) -> Option<&'static str> {
    match name {
        "pthread_create" | "thrd_create" | "fork" => Some("threads and processes"),
        "setjmp" | "_setjmp" | "longjmp" | "siglongjmp" | "sigsetjmp" => Some("setjmp/longjmp"),
        "signal" | "sigaction" => Some("signal handlers"),
        _ => None,
    }
}

/// The type of `__VERIFIER_nondet_X` when it is called without a declaration.
fn nondet_type(name: &str, long_bits: u8) -> Option<IntTy> {
    let suffix = name.strip_prefix("__VERIFIER_nondet_")?;
    Some(match suffix {
        "bool" | "_Bool" => IntTy::BOOL,
        "char" => IntTy::I8,
        "uchar" | "unsigned_char" => IntTy::U8,
        "short" => IntTy::I16,
        "ushort" | "unsigned_short" => IntTy::U16,
        "int" => IntTy::I32,
        "uint" | "unsigned_int" | "unsigned" | "u32" => IntTy::U32,
        "long" => IntTy::new(long_bits, true),
        "ulong" | "unsigned_long" | "size_t" | "pointer" => IntTy::new(long_bits, false),
        "longlong" | "long_long" => IntTy::I64,
        "ulonglong" | "unsigned_long_long" => IntTy::U64,
        _ => IntTy::I32,
    })
}

impl<'a, 'p> FnBuilder<'a, 'p> {
    /// Lowers a call. With `dest`, a scalar result may be written straight into it (the
    /// returned value is then `Void`).
    pub fn call(&mut self, c: &Node<CallExpression>, span: LSpan, dest: Option<&Place>) -> BResult<Value> {
        let call = &c.node;
        let Some(name) = self.callee_name(call) else { return self.call_through_pointer(call, span) };
        let sig = match self.cx.lookup(&name) {
            Some(Sym::Func(_, s)) => Some(s.clone()),
            _ => None,
        };
        if !self.cx.func_ids.contains_key(&name) && self.st.dry == 0 {
            self.cx.externals.insert(name.clone());
        }
        if let Some(v) = self.call_control(&name, sig.is_some(), call, span)? {
            return Ok(v);
        }
        if let Some(v) = self.call_builtin(&name, call, span)? {
            return Ok(v);
        }
        if let Some(&callee) = self.cx.func_ids.get(&name) {
            return self.call_defined(callee, &name, sig, call, span, dest);
        }
        self.call_external(name, sig, call, span, dest)
    }

    /// The name of the called function, unless the callee is an object (a function pointer).
    fn callee_name(&self, call: &CallExpression) -> Option<String> {
        match &call.callee.node {
            Expression::Identifier(id) => match self.cx.lookup(&id.node.name) {
                Some(Sym::Var(..)) | Some(Sym::Ref(..)) => None,
                _ => Some(id.node.name.clone()),
            },
            _ => None,
        }
    }

    /// A call through a function pointer: not modelled (an `Unsupported` edge), any result.
    fn call_through_pointer(&mut self, call: &CallExpression, span: LSpan) -> BResult<Value> {
        let sp = self.span(span);
        let _ = self.value(&call.callee)?;
        for a in &call.arguments {
            self.effect(a)?;
        }
        self.note(span, "call through a function pointer is not modelled");
        self.stmt_edge(Stmt::Unsupported("call through a function pointer".into()), sp);
        let ret = match self.type_of(&call.callee)? {
            CType::Ptr(p) => match *p {
                CType::Func(sig) => sig.ret.clone(),
                _ => CType::Int(IntTy::INT),
            },
            CType::Func(sig) => sig.ret.clone(),
            _ => CType::Int(IntTy::INT),
        };
        Ok(self.unknown_of(&ret, Imprecision::Other))
    }

    /// Calls that change the control flow: property violations, `assert` without a
    /// declaration, `__VERIFIER_assume`, and functions that end the path. `None` for others.
    fn call_control(&mut self, name: &str, declared: bool, call: &CallExpression, span: LSpan) -> BResult<Option<Value>> {
        if target_kind(name) == Some(TargetKind::ReachError)
            && !self.cx.props.counts(TargetKind::ReachError)
            && !self.cx.func_ids.contains_key(name)
        {
            // Not the property (`--property unreach-label`) and not defined: SV-COMP's
            // `reach_error` aborts, an external function may return. Neither is assumed.
            let sp = self.span(span);
            self.note(span, format!("`{}` is not the property and has no definition: whether it returns is not known", name));
            self.stmt_edge(Stmt::Unsupported(format!("a call of `{}`, which is not the property and has no definition", name)), sp);
            return Ok(Some(Value::Void));
        }
        // A defined `reach_error` that is not a property (`--property`) is an ordinary call.
        let target = target_kind(name).filter(|&k| self.cx.props.counts(k) || !self.cx.func_ids.contains_key(name));
        if let Some(kind) = target {
            let condition = match (kind, call.arguments.first().map(|a| &a.node)) {
                (TargetKind::Assert, Some(Expression::StringLiteral(s))) => {
                    let bytes = crate::cfa::build::consts::string_literal(&s.node);
                    Some(bytes.iter().filter_map(|&b| char::from_u32(b)).collect())
                }
                _ => None,
            };
            self.target(kind, span, condition);
            return Ok(Some(Value::Void));
        }
        if name == "assert" && !declared && !self.cx.func_ids.contains_key("assert") && call.arguments.len() == 1 {
            let (ok, bad) = (self.new_node(), self.new_node());
            self.cond(&call.arguments[0], ok, bad)?;
            self.st.cur = bad;
            self.target(TargetKind::Assert, span, None);
            self.st.cur = ok;
            return Ok(Some(Value::Void));
        }
        if name == "__VERIFIER_assume" && call.arguments.len() == 1 {
            let ok = self.new_node();
            let stop = self.terminal_node();
            self.cond(&call.arguments[0], ok, stop)?;
            self.st.cur = ok;
            return Ok(Some(Value::Void));
        }
        if is_terminating(name) && !self.cx.func_ids.contains_key(name) {
            for a in &call.arguments {
                self.effect(a)?;
            }
            self.terminate(span);
            return Ok(Some(Value::Void));
        }
        Ok(None)
    }

    /// Built-ins lowered in place (`__builtin_expect`, `abs` and its kin) and calls of
    /// constructs that are not modelled (threads, `setjmp`, signals). `None` for others.
    fn call_builtin(&mut self, name: &str, call: &CallExpression, span: LSpan) -> BResult<Option<Value>> {
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

    /// A call of an external function: any result, and it may write through pointer arguments.
    fn call_external(
        &mut self,
        name: String,
        sig: Option<Rc<FuncSig>>,
        call: &CallExpression,
        span: LSpan,
        dest: Option<&Place>,
    ) -> BResult<Value> {
        let sp = self.span(span);
        let mut writes = false;
        for a in &call.arguments {
            let v = self.value(a)?;
            if let Value::Int(_, t) = &v {
                writes |= t.is_pointer();
            }
        }
        if is_allocator(&name) {
            let pointee = CType::Void;
            return Ok(self.unknown_ptr(pointee, Imprecision::Allocation));
        }
        if writes && !is_pure_external(&name) {
            self.stmt_edge(Stmt::HavocMemory(Imprecision::ExternalWrite), sp);
        }
        let ret = match &sig {
            Some(s) => s.ret.clone(),
            None => match nondet_type(&name, self.cx.types.model.long_bits()) {
                Some(t) => CType::Int(t),
                None => CType::Int(IntTy::INT),
            },
        };
        match &ret {
            CType::Int(t) => {
                let t = *t;
                if let Some(lhs) = self.input_destination(dest, t) {
                    self.stmt_edge(Stmt::Input { lhs, source: InputSource::Call(name) }, sp);
                    return Ok(Value::Void);
                }
                let tmp = self.temp(t, false)?;
                self.stmt_edge(Stmt::Input { lhs: LValue::Var(tmp), source: InputSource::Call(name) }, sp);
                Ok(Value::Int(Expr::Var(tmp, t), ret.clone()))
            }
            CType::Ptr(_) => Ok(self.unknown_of(&ret, Imprecision::Address)),
            CType::Struct(_) => Ok(self.unknown_of(&ret, Imprecision::Other)),
            CType::Float(_) => Ok(Value::Float),
            _ => Ok(Value::Void),
        }
    }

    /// The variable or array element an external call's integer result of type `t` can be
    /// read into directly: `dest` if it is a scalar or fully subscripted element of that type.
    fn input_destination(&self, dest: Option<&Place>, t: IntTy) -> Option<LValue> {
        let Some(Place::Obj { obj, idx, ty: dty }) = dest else { return None };
        if self.cx.types.int_of(dty) != Some(t) || dty.is_pointer() {
            return None;
        }
        match &**obj {
            Obj::Scalar(v) if idx.is_empty() => Some(LValue::Var(*v)),
            Obj::Array(v, dims) => Self::linear_index(idx, dims).map(|i| LValue::Elem(*v, i)),
            _ => None,
        }
    }

    fn call_defined(
        &mut self,
        callee: FuncId,
        name: &str,
        sig: Option<Rc<FuncSig>>,
        call: &CallExpression,
        span: LSpan,
        dest: Option<&Place>,
    ) -> BResult<Value> {
        let sp = self.span(span);
        let params: Vec<CType> = sig.as_ref().map(|s| s.params.clone()).unwrap_or_default();
        let ret_ty = sig.as_ref().map(|s| s.ret.clone()).unwrap_or(CType::Int(IntTy::INT));
        let mut args = Vec::new();
        // Copies of by-reference arguments, assigned back after the return values.
        let mut copy_out: Vec<LValue> = Vec::new();
        for (i, a) in call.arguments.iter().enumerate() {
            let by_ref = self.cx.byref.contains(&(name.to_string(), i));
            if let Some(pointee) = params.get(i).and_then(|t| self.cx.types.by_reference_pointee(t)).filter(|_| by_ref) {
                let place = match &a.node {
                    Expression::UnaryOperator(u) if u.node.operator.node == UnaryOperator::Address => Some(self.place(&u.node.operand)?),
                    _ => self.by_reference(a),
                };
                let Some(Place::Obj { obj, idx, ty }) =
                    place.filter(|p| *p.ty() == pointee && matches!(p, Place::Obj { idx, .. } if idx.is_empty()))
                else {
                    return Err(self.err(a.span, "argument does not match the parameter's struct type"));
                };
                let mut vars = Vec::new();
                obj.vars(&mut vars);
                copy_out.extend(vars.into_iter().map(LValue::Var));
                let flat = self.flatten_value(Value::Agg(Place::Obj { obj, idx, ty }, pointee.clone()), &pointee, a.span)?;
                args.extend(flat);
                continue;
            }
            let v = self.value(a)?;
            match params.get(i) {
                Some(pt) => {
                    let flat = self.flatten_value(v, pt, a.span)?;
                    args.extend(flat);
                }
                None => {
                    // Extra (variadic or unprototyped) arguments: default promotions.
                    if let Value::Int(e, CType::Int(t)) = v {
                        if sig.as_ref().is_some_and(|s| s.unprototyped) {
                            args.push(e.cast(t.promote()));
                        }
                    } else if let Value::Int(e, _) = v {
                        if sig.as_ref().is_some_and(|s| s.unprototyped) {
                            args.push(e);
                        }
                    }
                }
            }
        }
        // The callee's own flattened parameters decide the arity; pad or cut.
        let ret_vals: Vec<LValue>;
        let mut result = Value::Void;
        match &ret_ty {
            CType::Void => ret_vals = Vec::new(),
            CType::Int(_) | CType::Ptr(_) => {
                let it = self.cx.types.int_of(&ret_ty).expect("scalar");
                let direct = match dest.filter(|_| copy_out.is_empty()) {
                    Some(Place::Obj { obj, idx, ty }) if self.cx.types.int_of(ty) == Some(it) && *ty == ret_ty => match &**obj {
                        Obj::Scalar(v) if idx.is_empty() => Some(LValue::Var(*v)),
                        _ => None,
                    },
                    _ => None,
                };
                match direct {
                    Some(l) => ret_vals = vec![l],
                    None => {
                        let tmp = self.temp(it, ret_ty.is_pointer())?;
                        ret_vals = vec![LValue::Var(tmp)];
                        result = Value::Int(Expr::Var(tmp, it), ret_ty.clone());
                    }
                }
            }
            CType::Struct(_) => {
                let obj = Rc::new(self.alloc("__ret", &ret_ty, Store::Local, true)?);
                let mut vars = Vec::new();
                obj.vars(&mut vars);
                ret_vals = vars.into_iter().map(LValue::Var).collect();
                result = Value::Agg(Place::Obj { obj, idx: Vec::new(), ty: ret_ty.clone() }, ret_ty.clone());
            }
            CType::Float(_) => {
                ret_vals = Vec::new();
                result = Value::Float;
            }
            _ => ret_vals = Vec::new(),
        }
        let mut ret_vals = ret_vals;
        ret_vals.extend(copy_out);
        self.emit(EdgeKind::CallSummary(Call { callee, args, ret: ret_vals }), sp);
        Ok(result)
    }
}
