//! Lowers C expressions into side-effect-free IR expressions, emitting the side effects
//! (assignments, increments, calls) as CFA edges before the value is used. Short-circuit and
//! conditional operators in value position become branches that assign a temporary.

use std::rc::Rc;

use lang_c::ast::{BinaryOperator, CallExpression, Constant, Expression, MemberOperator, Statement, UnaryOperator};
use lang_c::span::{Node, Span as LSpan};

use super::func::FnBuilder;
use super::types::{CType, Obj};
use super::{BResult, Scope, Sym};
use crate::cfa::{Call, EdgeKind, TargetKind};
use crate::ir::{BinOp, Expr, Imprecision, InputSource, IntTy, LValue, Stmt, UnOp};

/// The value of a lowered expression.
#[derive(Clone, Debug)]
pub enum Value {
    /// An integer or pointer value and its C type.
    Int(Expr, CType),
    Float,
    Void,
    /// A struct value stored at a place.
    Agg(Place, CType),
}

/// Where an lvalue lives.
#[derive(Clone, Debug)]
pub enum Place {
    /// Part of a named object: `idx` are the array subscripts applied so far.
    Obj { obj: Rc<Obj>, idx: Vec<Expr>, ty: CType },
    /// Somewhere a pointer points: not modelled.
    Mem(CType),
}

impl Place {
    pub fn ty(&self) -> &CType {
        match self {
            Place::Obj { ty, .. } | Place::Mem(ty) => ty,
        }
    }
}

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
    // ----- entry points -----------------------------------------------------------------

    /// Lowers an expression for its value.
    pub fn value(&mut self, e: &Node<Expression>) -> BResult<Value> {
        self.enter(e.span)?;
        let r = self.value_inner(e);
        self.leave();
        r
    }

    /// Lowers an expression for its side effects only.
    pub fn effect(&mut self, e: &Node<Expression>) -> BResult<()> {
        self.enter(e.span)?;
        let r = self.effect_inner(e);
        self.leave();
        r
    }

    /// The IR expression a scalar value stands for; non-integer values become unknowns.
    pub fn truth_value(&mut self, v: Value) -> Expr {
        match v {
            Value::Int(e, _) => e,
            Value::Float => Expr::Unknown(IntTy::INT, Imprecision::Float),
            Value::Void | Value::Agg(..) => Expr::Unknown(IntTy::INT, Imprecision::Other),
        }
    }

    fn effect_inner(&mut self, e: &Node<Expression>) -> BResult<()> {
        match &e.node {
            Expression::UnaryOperator(u)
                if matches!(
                    u.node.operator.node,
                    UnaryOperator::PostIncrement | UnaryOperator::PostDecrement | UnaryOperator::PreIncrement | UnaryOperator::PreDecrement
                ) =>
            {
                let inc = matches!(u.node.operator.node, UnaryOperator::PostIncrement | UnaryOperator::PreIncrement);
                self.increment(&u.node.operand, inc, e.span).map(|_| ())
            }
            Expression::Comma(items) => items.iter().try_for_each(|i| self.effect(i)),
            Expression::Cast(c) => self.effect(&c.node.expression),
            Expression::Call(c) => self.call(c, e.span, None).map(|_| ()),
            Expression::BinaryOperator(b) if b.node.operator.node == BinaryOperator::Assign => {
                self.assign(&b.node.lhs, &b.node.rhs, e.span).map(|_| ())
            }
            Expression::Conditional(c) => {
                let (t, f, j) = (self.new_node(), self.new_node(), self.new_node());
                self.cond(&c.node.condition, t, f)?;
                self.st.cur = t;
                self.effect(&c.node.then_expression)?;
                let cur = self.st.cur;
                self.edge(cur, j, EdgeKind::Blank, Default::default());
                self.st.cur = f;
                self.effect(&c.node.else_expression)?;
                let cur = self.st.cur;
                self.edge(cur, j, EdgeKind::Blank, Default::default());
                self.st.cur = j;
                Ok(())
            }
            Expression::BinaryOperator(b) if matches!(b.node.operator.node, BinaryOperator::LogicalAnd | BinaryOperator::LogicalOr) => {
                // `a && f()` as a statement: the call happens only when `a` holds.
                let (t, j) = (self.new_node(), self.new_node());
                if b.node.operator.node == BinaryOperator::LogicalAnd {
                    self.cond(&b.node.lhs, t, j)?;
                } else {
                    self.cond(&b.node.lhs, j, t)?;
                }
                self.st.cur = t;
                self.effect(&b.node.rhs)?;
                let cur = self.st.cur;
                self.edge(cur, j, EdgeKind::Blank, Default::default());
                self.st.cur = j;
                Ok(())
            }
            _ => self.value(e).map(|_| ()),
        }
    }

    fn value_inner(&mut self, e: &Node<Expression>) -> BResult<Value> {
        let span = e.span;
        match &e.node {
            Expression::Identifier(id) => {
                let name = &id.node.name;
                match self.cx.lookup(name).cloned() {
                    Some(Sym::Var(obj, ty)) => {
                        let p = Place::Obj { obj, idx: Vec::new(), ty };
                        Ok(self.read(&p, span))
                    }
                    // The by-reference pre-pass admits no such use; stay sound if one slips by.
                    Some(Sym::Ref(_, ty)) => Ok(self.unknown_of(&ty, Imprecision::Address)),
                    Some(Sym::EnumConst(v)) => Ok(Value::Int(Expr::Const(IntTy::INT.wrap(v), IntTy::INT), CType::Int(IntTy::INT))),
                    Some(Sym::Func(fname, sig)) => {
                        self.cx.address_taken_funcs.insert(fname);
                        Ok(self.unknown_ptr(CType::Func(sig), Imprecision::Address))
                    }
                    Some(Sym::Typedef(_)) => Err(self.err(span, format!("`{}` is a type, not a value", name))),
                    None => match name.as_str() {
                        "__func__" | "__FUNCTION__" | "__PRETTY_FUNCTION__" => {
                            Ok(self.unknown_ptr(CType::Int(IntTy::I8), Imprecision::Address))
                        }
                        _ => Err(self.err(span, format!("use of undeclared identifier `{}`", name))),
                    },
                }
            }
            Expression::Constant(c) => Ok(match &c.node {
                Constant::Integer(i) => {
                    let (v, t) = super::consts::int_literal(i, self.cx.types.model)
                        .ok_or_else(|| self.err(span, "integer constant is too large"))?;
                    Value::Int(Expr::Const(v, t), CType::Int(t))
                }
                Constant::Character(s) => Value::Int(Expr::Const(super::consts::char_literal(s), IntTy::INT), CType::Int(IntTy::INT)),
                Constant::Float(_) => Value::Float,
            }),
            Expression::StringLiteral(_) => Ok(self.unknown_ptr(CType::Int(IntTy::I8), Imprecision::Address)),
            Expression::Member(_) | Expression::BinaryOperator(_) if is_place_expr(&e.node) => {
                let p = self.place(e)?;
                Ok(self.read(&p, span))
            }
            Expression::Call(c) => self.call(c, span, None),
            Expression::CompoundLiteral(cl) => {
                let ty = self.cx.type_name(&cl.node.type_name.node, cl.node.type_name.span)?;
                let obj = Rc::new(self.alloc("__literal", &ty, super::Store::Local, true)?);
                let p = Place::Obj { obj, idx: Vec::new(), ty: ty.clone() };
                super::init::init_list(self, &p, &ty, &cl.node.initializer_list, span)?;
                Ok(self.read(&p, span))
            }
            Expression::SizeOfTy(s) => {
                let ty = self.cx.type_name(&s.node.0.node, s.node.0.span)?;
                self.size_value(&ty, span)
            }
            Expression::SizeOfVal(s) => {
                let ty = self.type_of(&s.node.0)?;
                self.size_value(&ty, span)
            }
            Expression::AlignOf(a) => {
                let ty = self.cx.type_name(&a.node.0.node, a.node.0.span)?;
                let n = self.cx.types.align_of(&ty).unwrap_or(1);
                let t = self.cx.types.long(false);
                Ok(Value::Int(Expr::Const(n as i128, t), CType::Int(t)))
            }
            Expression::UnaryOperator(u) => self.unary(u, span),
            Expression::Cast(c) => {
                let ty = self.cx.type_name(&c.node.type_name.node, c.node.type_name.span)?;
                let v = self.value(&c.node.expression)?;
                Ok(self.convert(v, &ty))
            }
            Expression::BinaryOperator(b) => self.binary(b, span),
            Expression::Conditional(c) => self.conditional(c, span),
            Expression::Comma(items) => {
                let (last, init) = items.split_last().expect("comma has operands");
                for i in init {
                    self.effect(i)?;
                }
                self.value(last)
            }
            Expression::Statement(s) => self.statement_expr(s),
            Expression::GenericSelection(g) => {
                let ty = self.type_of(&g.node.expression)?.decay();
                let mut chosen = None;
                let mut default = None;
                for a in &g.node.associations {
                    match &a.node {
                        lang_c::ast::GenericAssociation::Type(t) => {
                            let at = self.cx.type_name(&t.node.type_name.node, t.node.type_name.span)?;
                            if at == ty && chosen.is_none() {
                                chosen = Some(t.node.expression.clone());
                            }
                        }
                        lang_c::ast::GenericAssociation::Default(d) => default = Some(d.clone()),
                    }
                }
                match chosen.or(default) {
                    Some(x) => self.value(&x),
                    None => Err(self.err(span, "no `_Generic` association matches")),
                }
            }
            Expression::OffsetOf(_) => {
                let t = self.cx.types.long(false);
                Ok(Value::Int(Expr::Unknown(t, Imprecision::Other), CType::Int(t)))
            }
            Expression::VaArg(v) => {
                let ty = self.cx.type_name(&v.node.type_name.node, v.node.type_name.span)?;
                Ok(self.unknown_of(&ty, Imprecision::Other))
            }
            Expression::Member(_) => unreachable!("members are places"),
        }
    }

    fn size_value(&mut self, ty: &CType, span: LSpan) -> BResult<Value> {
        let t = self.cx.types.long(false);
        match self.cx.types.size_of(ty) {
            Some(n) => Ok(Value::Int(Expr::Const(n as i128, t), CType::Int(t))),
            None => {
                self.note(span, format!("size of `{}` is not known", self.cx.types.display(ty)));
                Ok(Value::Int(Expr::Unknown(t, Imprecision::Other), CType::Int(t)))
            }
        }
    }

    /// The type of an expression, computed without emitting anything.
    pub fn type_of(&mut self, e: &Node<Expression>) -> BResult<CType> {
        let cur = self.st.cur;
        self.st.dry += 1;
        let r = if is_place_expr(&e.node) || matches!(e.node, Expression::Identifier(_)) {
            match &e.node {
                Expression::Identifier(id) => match self.cx.lookup(&id.node.name) {
                    Some(Sym::Var(_, t)) | Some(Sym::Ref(_, t)) => Ok(t.clone()),
                    _ => self.value(e).map(|v| value_type(&v)),
                },
                _ => self.place(e).map(|p| p.ty().clone()),
            }
        } else if let Expression::StringLiteral(s) = &e.node {
            let n = super::consts::string_literal(&s.node).len() as u64 + 1;
            Ok(CType::Array(Box::new(CType::Int(IntTy::I8)), Some(n)))
        } else {
            self.value(e).map(|v| value_type(&v))
        };
        self.st.dry -= 1;
        self.st.cur = cur;
        r
    }

    // ----- places -----------------------------------------------------------------------

    /// Lowers an lvalue expression to the place it designates.
    pub fn place(&mut self, e: &Node<Expression>) -> BResult<Place> {
        self.enter(e.span)?;
        let r = self.place_inner(e);
        self.leave();
        r
    }

    fn place_inner(&mut self, e: &Node<Expression>) -> BResult<Place> {
        let span = e.span;
        match &e.node {
            Expression::Identifier(id) => match self.cx.lookup(&id.node.name).cloned() {
                Some(Sym::Var(obj, ty)) => Ok(Place::Obj { obj, idx: Vec::new(), ty }),
                Some(Sym::Ref(_, ty)) => Ok(Place::Mem(ty)),
                Some(_) => Err(self.err(span, format!("`{}` is not an object", id.node.name))),
                None => Err(self.err(span, format!("use of undeclared identifier `{}`", id.node.name))),
            },
            Expression::Member(m) => {
                let base = match m.node.operator.node {
                    MemberOperator::Direct => self.place(&m.node.expression)?,
                    MemberOperator::Indirect => match self.by_reference(&m.node.expression) {
                        Some(p) => p,
                        None => {
                            let v = self.value(&m.node.expression)?;
                            let pt = value_type(&v).pointee().cloned().unwrap_or(CType::Void);
                            Place::Mem(pt)
                        }
                    },
                };
                let fname = &m.node.identifier.node.name;
                let CType::Struct(sid) = base.ty().clone() else {
                    return Err(self.err(span, format!("member `{}` of something that is not a struct", fname)));
                };
                self.field_place(base, sid, fname, span)
            }
            Expression::BinaryOperator(b) if b.node.operator.node == BinaryOperator::Index => {
                // `a[i]` or `i[a]`.
                let lhs_ty = self.type_of(&b.node.lhs)?;
                let (arr, idx) = if matches!(lhs_ty, CType::Array(..) | CType::Ptr(_)) {
                    (&b.node.lhs, &b.node.rhs)
                } else {
                    (&b.node.rhs, &b.node.lhs)
                };
                let arr_ty = self.type_of(arr)?;
                let i = self.value(idx)?;
                let i = match i {
                    Value::Int(x, _) => x.cast(IntTy::I64),
                    _ => Expr::Unknown(IntTy::I64, Imprecision::Float),
                };
                match arr_ty {
                    CType::Array(elem, _) => match self.place(arr)? {
                        Place::Obj { obj, mut idx, .. } => {
                            idx.push(i);
                            Ok(Place::Obj { obj, idx, ty: *elem })
                        }
                        Place::Mem(_) => Ok(Place::Mem(*elem)),
                    },
                    CType::Ptr(elem) => {
                        let _ = self.value(arr)?;
                        Ok(Place::Mem(*elem))
                    }
                    _ => Err(self.err(span, "subscript of something that is not an array or pointer")),
                }
            }
            Expression::UnaryOperator(u) if u.node.operator.node == UnaryOperator::Indirection => {
                if let Some(p) = self.by_reference(&u.node.operand) {
                    return Ok(p);
                }
                let inner_ty = self.type_of(&u.node.operand)?;
                match inner_ty {
                    // `*a` on an array is `a[0]`.
                    CType::Array(elem, _) => match self.place(&u.node.operand)? {
                        Place::Obj { obj, mut idx, .. } => {
                            idx.push(Expr::Const(0, IntTy::I64));
                            Ok(Place::Obj { obj, idx, ty: *elem })
                        }
                        Place::Mem(_) => Ok(Place::Mem(*elem)),
                    },
                    CType::Ptr(p) => {
                        let _ = self.value(&u.node.operand)?;
                        Ok(Place::Mem(*p))
                    }
                    CType::Func(_) => Ok(Place::Mem(inner_ty)),
                    _ => Err(self.err(span, "dereference of something that is not a pointer")),
                }
            }
            Expression::Statement(_) | Expression::Call(_) | Expression::CompoundLiteral(_) | Expression::Cast(_) => {
                // An rvalue of struct type used as an object (`f().x`): materialise it.
                let v = self.value(e)?;
                match v {
                    Value::Agg(p, _) => Ok(p),
                    other => {
                        let ty = value_type(&other);
                        Ok(Place::Mem(ty))
                    }
                }
            }
            Expression::Comma(items) => {
                let (last, init) = items.split_last().expect("comma has operands");
                for i in init {
                    self.effect(i)?;
                }
                self.place(last)
            }
            _ => Err(self.err(span, "expression is not assignable")),
        }
    }

    /// The pointee of a by-reference parameter `p` ([`super::byref`]): its copy in this frame.
    fn by_reference(&self, e: &Node<Expression>) -> Option<Place> {
        let Expression::Identifier(id) = &e.node else { return None };
        match self.cx.lookup(&id.node.name) {
            Some(Sym::Ref(obj, ty)) => {
                let pointee = ty.pointee()?.clone();
                Some(Place::Obj { obj: obj.clone(), idx: Vec::new(), ty: pointee })
            }
            _ => None,
        }
    }

    fn field_place(&mut self, base: Place, sid: usize, fname: &str, span: LSpan) -> BResult<Place> {
        let def = &self.cx.types.structs[sid];
        let union = def.union;
        let Some(fields) = def.fields.clone() else {
            return Err(self.err(span, format!("member `{}` of an incomplete type", fname)));
        };
        if let Some((_, fty)) = fields.iter().find(|(n, _)| n == fname) {
            let fty = fty.clone();
            return Ok(match base {
                Place::Obj { obj, idx, .. } if !union => match obj.field(fname) {
                    Some(o) => Place::Obj { obj: o, idx, ty: fty },
                    None => Place::Obj { obj: Rc::new(Obj::Opaque), idx, ty: fty },
                },
                Place::Obj { idx, .. } => Place::Obj { obj: Rc::new(Obj::Opaque), idx, ty: fty },
                Place::Mem(_) => Place::Mem(fty),
            });
        }
        // C11 anonymous members: look inside unnamed struct/union fields.
        for (n, fty) in &fields {
            if !n.is_empty() {
                continue;
            }
            if let CType::Struct(inner) = fty {
                if self.cx.types.field(*inner, fname).is_some() || has_anonymous_field(&self.cx.types, *inner, fname) {
                    let sub = match &base {
                        Place::Obj { obj, idx, .. } if !union => {
                            // Anonymous struct fields were flattened into the parent object.
                            Place::Obj { obj: obj.clone(), idx: idx.clone(), ty: fty.clone() }
                        }
                        Place::Obj { idx, .. } => Place::Obj { obj: Rc::new(Obj::Opaque), idx: idx.clone(), ty: fty.clone() },
                        Place::Mem(_) => Place::Mem(fty.clone()),
                    };
                    return self.field_place(sub, *inner, fname, span);
                }
            }
        }
        Err(self.err(span, format!("no member named `{}` in `{}`", fname, self.cx.types.display(&CType::Struct(sid)))))
    }

    /// Linear index of a fully subscripted array element.
    fn linear_index(idx: &[Expr], dims: &[u64]) -> Option<Expr> {
        if idx.len() != dims.len() || dims.iter().skip(1).any(|&d| d == 0) {
            return None;
        }
        let mut acc: Option<Expr> = None;
        for (k, i) in idx.iter().enumerate() {
            let stride: u64 = dims[k + 1..].iter().product();
            let term = if stride == 1 {
                i.clone()
            } else {
                Expr::Binary(BinOp::Mul, Box::new(i.clone()), Box::new(Expr::Const(stride as i128, IntTy::I64)), IntTy::I64)
            };
            acc = Some(match acc {
                None => term,
                Some(a) => Expr::Binary(BinOp::Add, Box::new(a), Box::new(term), IntTy::I64),
            });
        }
        acc
    }

    /// Reads a place.
    pub fn read(&mut self, p: &Place, span: LSpan) -> Value {
        let ty = p.ty().clone();
        match &ty {
            CType::Struct(_) => return Value::Agg(p.clone(), ty),
            CType::Float(_) => return Value::Float,
            CType::Void => return Value::Void,
            CType::Array(..) | CType::Func(_) => {
                // Decay to a pointer: the object's address escapes.
                if let Place::Obj { obj, .. } = p {
                    self.escape(obj);
                }
                return self.unknown_ptr(ty.pointee().cloned().unwrap_or(CType::Void), Imprecision::Address);
            }
            CType::Int(_) | CType::Ptr(_) => {}
        }
        let it = self.cx.types.int_of(&ty).expect("integer-like");
        let e = match p {
            Place::Obj { obj, idx, .. } => match &**obj {
                Obj::Scalar(v) if idx.is_empty() => Expr::Var(*v, it),
                Obj::Array(v, dims) => match Self::linear_index(idx, dims) {
                    Some(i) => Expr::Elem(*v, Box::new(i), it),
                    None => Expr::Unknown(it, Imprecision::Other),
                },
                Obj::Opaque => Expr::Unknown(it, Imprecision::Union),
                _ => Expr::Unknown(it, Imprecision::Other),
            },
            Place::Mem(_) => Expr::Unknown(it, Imprecision::PointerRead),
        };
        let _ = span;
        Value::Int(e, ty)
    }

    /// Writes a value (converted to the place's type) to a place.
    pub fn write(&mut self, p: &Place, v: Value, span: LSpan) -> BResult<()> {
        let sp = self.span(span);
        let ty = p.ty().clone();
        if let CType::Struct(_) = ty {
            return self.copy_agg(p, v, span);
        }
        match p {
            Place::Mem(_) => {
                self.stmt_edge(Stmt::HavocMemory(Imprecision::PointerWrite), sp);
                Ok(())
            }
            Place::Obj { obj, idx, .. } => {
                let Some(it) = self.cx.types.int_of(&ty) else {
                    // Floats: not tracked; nothing to write.
                    return Ok(());
                };
                if matches!(ty, CType::Array(..)) {
                    return Err(self.err(span, "assignment to an array"));
                }
                let conv = self.convert(v, &ty);
                let e = match conv {
                    Value::Int(e, _) => e,
                    _ => Expr::Unknown(it, Imprecision::Float),
                };
                match &**obj {
                    Obj::Scalar(var) if idx.is_empty() => self.stmt_edge(Stmt::Assign(LValue::Var(*var), e), sp),
                    Obj::Array(var, dims) => match Self::linear_index(idx, dims) {
                        Some(i) => self.stmt_edge(Stmt::Assign(LValue::Elem(*var, i), e), sp),
                        None => self.stmt_edge(Stmt::HavocMemory(Imprecision::Other), sp),
                    },
                    Obj::Opaque => {}
                    _ => self.stmt_edge(Stmt::HavocMemory(Imprecision::Other), sp),
                }
                Ok(())
            }
        }
    }

    /// Struct assignment, leaf by leaf.
    fn copy_agg(&mut self, dst: &Place, v: Value, span: LSpan) -> BResult<()> {
        let sp = self.span(span);
        let src = match v {
            Value::Agg(p, _) => Some(p),
            _ => None,
        };
        match (dst, &src) {
            (Place::Mem(_), _) => {
                self.stmt_edge(Stmt::HavocMemory(Imprecision::PointerWrite), sp);
                Ok(())
            }
            (Place::Obj { obj: dobj, idx: didx, ty }, src) => {
                let CType::Struct(sid) = ty else { return Ok(()) };
                let fields = self.cx.types.structs[*sid].fields.clone().unwrap_or_default();
                if self.cx.types.structs[*sid].union {
                    return Ok(());
                }
                for (fname, fty) in fields {
                    let dfield = match dobj.field(&fname) {
                        Some(o) => o,
                        None if fname.is_empty() => dobj.clone(),
                        None => continue,
                    };
                    let dp = Place::Obj { obj: dfield, idx: didx.clone(), ty: fty.clone() };
                    let sv = match src {
                        Some(Place::Obj { obj: sobj, idx: sidx, .. }) => {
                            let sfield = match sobj.field(&fname) {
                                Some(o) => o,
                                None if fname.is_empty() => sobj.clone(),
                                None => Rc::new(Obj::Opaque),
                            };
                            let sp2 = Place::Obj { obj: sfield, idx: sidx.clone(), ty: fty.clone() };
                            self.read_for_copy(&sp2, span)
                        }
                        Some(Place::Mem(_)) => self.unknown_of(&fty, Imprecision::PointerRead),
                        None => self.unknown_of(&fty, Imprecision::Other),
                    };
                    match (&fty, sv) {
                        (CType::Array(..), _) => {
                            // Arrays inside structs: copy element-wise is not modelled.
                            let mut vars = Vec::new();
                            if let Place::Obj { obj, .. } = &dp {
                                obj.vars(&mut vars);
                            }
                            let sp = self.span(span);
                            for var in vars {
                                self.stmt_edge(Stmt::Assign(LValue::Var(var), Expr::Unknown(IntTy::I32, Imprecision::Other)), sp);
                            }
                        }
                        (_, sv) => self.write(&dp, sv, span)?,
                    }
                }
                Ok(())
            }
        }
    }

    fn read_for_copy(&mut self, p: &Place, span: LSpan) -> Value {
        match p.ty() {
            CType::Array(..) => Value::Void,
            _ => self.read(p, span),
        }
    }

    /// Marks every variable of an object as address-taken.
    pub fn escape(&mut self, obj: &Obj) {
        if self.st.dry > 0 {
            return;
        }
        let mut vars = Vec::new();
        obj.vars(&mut vars);
        self.cx.escaped.extend(vars);
    }

    pub fn unknown_ptr(&self, pointee: CType, why: Imprecision) -> Value {
        Value::Int(Expr::Unknown(self.cx.types.ptr_int(), why), CType::Ptr(Box::new(pointee)))
    }

    pub fn unknown_of(&self, ty: &CType, why: Imprecision) -> Value {
        match ty {
            CType::Float(_) => Value::Float,
            CType::Void => Value::Void,
            CType::Struct(_) => Value::Agg(Place::Mem(ty.clone()), ty.clone()),
            t => match self.cx.types.int_of(t) {
                Some(it) => Value::Int(Expr::Unknown(it, why), t.decay()),
                None => Value::Void,
            },
        }
    }

    /// Converts a value to a type (C11 6.3), as an assignment or cast does.
    pub fn convert(&mut self, v: Value, to: &CType) -> Value {
        match (v, to) {
            (_, CType::Void) => Value::Void,
            (Value::Int(e, _), CType::Int(t)) => Value::Int(e.cast(*t), to.clone()),
            (Value::Int(e, _), CType::Ptr(_)) => {
                let pt = self.cx.types.ptr_int();
                Value::Int(e.cast(pt), to.clone())
            }
            (Value::Float, CType::Int(t)) => Value::Int(Expr::Unknown(*t, Imprecision::Float), to.clone()),
            (Value::Float, CType::Ptr(_)) => self.unknown_ptr(CType::Void, Imprecision::Float),
            (_, CType::Float(_)) => Value::Float,
            (v @ Value::Agg(..), CType::Struct(_)) => v,
            (v, t) => self.unknown_of(
                t,
                match v {
                    Value::Float => Imprecision::Float,
                    _ => Imprecision::Other,
                },
            ),
        }
    }

    /// The flattened scalar values of a value of type `ty` (one per leaf variable).
    pub fn flatten_value(&mut self, v: Value, ty: &CType, span: LSpan) -> BResult<Vec<Expr>> {
        match ty {
            CType::Struct(sid) => {
                let fields = self.cx.types.structs[*sid].fields.clone().unwrap_or_default();
                if self.cx.types.structs[*sid].union {
                    return Ok(Vec::new());
                }
                let src = match v {
                    Value::Agg(p, _) => Some(p),
                    _ => None,
                };
                let mut out = Vec::new();
                for (fname, fty) in fields {
                    let fv = match &src {
                        Some(Place::Obj { obj, idx, .. }) => {
                            let fo = obj.field(&fname).unwrap_or_else(|| if fname.is_empty() { obj.clone() } else { Rc::new(Obj::Opaque) });
                            let p = Place::Obj { obj: fo, idx: idx.clone(), ty: fty.clone() };
                            self.read_for_copy(&p, span)
                        }
                        Some(Place::Mem(_)) => self.unknown_of(&fty, Imprecision::PointerRead),
                        None => self.unknown_of(&fty, Imprecision::Other),
                    };
                    out.extend(self.flatten_value(fv, &fty, span)?);
                }
                Ok(out)
            }
            CType::Array(elem, _) => {
                // An array leaf (inside a struct) is one variable: its argument is not modelled.
                let it = self.cx.types.int_of(elem).unwrap_or(IntTy::I32);
                Ok(match self.cx.types.int_of(elem) {
                    Some(_) => vec![Expr::Unknown(it, Imprecision::Other)],
                    None => Vec::new(),
                })
            }
            CType::Float(_) | CType::Void | CType::Func(_) => Ok(Vec::new()),
            t => {
                let conv = self.convert(v, t);
                let it = self.cx.types.int_of(t).expect("scalar");
                Ok(vec![match conv {
                    Value::Int(e, _) => e,
                    _ => Expr::Unknown(it, Imprecision::Float),
                }])
            }
        }
    }

    // ----- operators --------------------------------------------------------------------

    fn unary(&mut self, u: &Node<lang_c::ast::UnaryOperatorExpression>, span: LSpan) -> BResult<Value> {
        let op = &u.node.operator.node;
        match op {
            UnaryOperator::PostIncrement | UnaryOperator::PostDecrement => {
                let inc = *op == UnaryOperator::PostIncrement;
                let p = self.place(&u.node.operand)?;
                let old = self.read(&p, span);
                let saved = match old {
                    Value::Int(e, ty) => {
                        let it = e.ty();
                        let tmp = self.temp(it, ty.is_pointer())?;
                        let sp = self.span(span);
                        self.stmt_edge(Stmt::Assign(LValue::Var(tmp), e), sp);
                        Value::Int(Expr::Var(tmp, it), ty)
                    }
                    other => other,
                };
                self.increment_place(&p, inc, span)?;
                Ok(saved)
            }
            UnaryOperator::PreIncrement | UnaryOperator::PreDecrement => {
                let inc = *op == UnaryOperator::PreIncrement;
                self.increment(&u.node.operand, inc, span)
            }
            UnaryOperator::Address => {
                let inner = &u.node.operand;
                // `&*p` is `p`.
                if let Expression::UnaryOperator(d) = &inner.node {
                    if d.node.operator.node == UnaryOperator::Indirection {
                        return self.value(&d.node.operand);
                    }
                }
                if let Expression::Identifier(id) = &inner.node {
                    if let Some(Sym::Func(name, sig)) = self.cx.lookup(&id.node.name).cloned() {
                        self.cx.address_taken_funcs.insert(name);
                        return Ok(self.unknown_ptr(CType::Func(sig), Imprecision::Address));
                    }
                }
                let p = self.place(inner)?;
                let ty = p.ty().clone();
                if let Place::Obj { obj, .. } = &p {
                    let o = obj.clone();
                    self.escape(&o);
                }
                Ok(self.unknown_ptr(ty, Imprecision::Address))
            }
            UnaryOperator::Indirection => {
                let inner_ty = self.type_of(&u.node.operand)?;
                if let CType::Ptr(p) = &inner_ty {
                    if let CType::Func(_) = **p {
                        return self.value(&u.node.operand);
                    }
                }
                if let CType::Func(_) = inner_ty {
                    return self.value(&u.node.operand);
                }
                let p = self.place(&Node::new(Expression::UnaryOperator(Box::new(u.clone())), span))?;
                Ok(self.read(&p, span))
            }
            UnaryOperator::Plus | UnaryOperator::Minus | UnaryOperator::Complement => {
                let v = self.value(&u.node.operand)?;
                match v {
                    Value::Int(e, _) => {
                        let t = e.ty().promote();
                        let e = e.cast(t);
                        let r = match op {
                            UnaryOperator::Plus => e,
                            UnaryOperator::Minus => fold_unary(UnOp::Neg, e, t),
                            _ => fold_unary(UnOp::BitNot, e, t),
                        };
                        Ok(Value::Int(r, CType::Int(t)))
                    }
                    Value::Float => Ok(Value::Float),
                    _ => Err(self.err(span, "invalid operand of a unary operator")),
                }
            }
            UnaryOperator::Negate => {
                let v = self.value(&u.node.operand)?;
                let e = self.truth_value(v);
                Ok(Value::Int(fold_unary(UnOp::LNot, e, IntTy::INT), CType::Int(IntTy::INT)))
            }
        }
    }

    /// `++x` / `--x` (also `x++` as a statement): returns the new value.
    fn increment(&mut self, operand: &Node<Expression>, inc: bool, span: LSpan) -> BResult<Value> {
        let p = self.place(operand)?;
        self.increment_place(&p, inc, span)?;
        Ok(self.read(&p, span))
    }

    fn increment_place(&mut self, p: &Place, inc: bool, span: LSpan) -> BResult<()> {
        let old = self.read(p, span);
        let new = match old {
            Value::Int(e, CType::Int(t)) => {
                let pt = t.promote();
                let op = if inc { BinOp::Add } else { BinOp::Sub };
                Value::Int(Expr::Binary(op, Box::new(e.cast(pt)), Box::new(Expr::Const(1, pt)), pt), CType::Int(pt))
            }
            Value::Int(_, ty) => self.unknown_of(&ty, Imprecision::Address),
            other => other,
        };
        self.write(p, new, span)
    }

    fn binary(&mut self, b: &Node<lang_c::ast::BinaryOperatorExpression>, span: LSpan) -> BResult<Value> {
        use BinaryOperator as B;
        let op = b.node.operator.node.clone();
        match op {
            B::Assign => return self.assign(&b.node.lhs, &b.node.rhs, span),
            B::LogicalAnd | B::LogicalOr => {
                let tmp = self.temp(IntTy::INT, false)?;
                let (t, f, j) = (self.new_node(), self.new_node(), self.new_node());
                let whole = Node::new(Expression::BinaryOperator(Box::new(b.clone())), span);
                self.cond(&whole, t, f)?;
                let sp = self.span(span);
                self.st.cur = t;
                self.stmt_edge(Stmt::Assign(LValue::Var(tmp), Expr::int(1)), sp);
                let cur = self.st.cur;
                self.edge(cur, j, EdgeKind::Blank, sp);
                self.st.cur = f;
                self.stmt_edge(Stmt::Assign(LValue::Var(tmp), Expr::int(0)), sp);
                let cur = self.st.cur;
                self.edge(cur, j, EdgeKind::Blank, sp);
                self.st.cur = j;
                return Ok(Value::Int(Expr::Var(tmp, IntTy::INT), CType::Int(IntTy::INT)));
            }
            B::Index => unreachable!("indexing is a place"),
            _ => {}
        }
        if let Some(arith) = compound_op(&op) {
            // `a op= b`: `a = a op b` with the conversions of `op`.
            let p = self.place(&b.node.lhs)?;
            let old = self.read(&p, span);
            let rhs = self.value(&b.node.rhs)?;
            let res = self.arith(arith, old, rhs, span)?;
            self.write(&p, res, span)?;
            return Ok(self.read(&p, span));
        }
        let l = self.value(&b.node.lhs)?;
        let r = self.value(&b.node.rhs)?;
        let bop = match op {
            B::Multiply => BinOp::Mul,
            B::Divide => BinOp::Div,
            B::Modulo => BinOp::Rem,
            B::Plus => BinOp::Add,
            B::Minus => BinOp::Sub,
            B::ShiftLeft => BinOp::Shl,
            B::ShiftRight => BinOp::Shr,
            B::Less => BinOp::Lt,
            B::Greater => BinOp::Gt,
            B::LessOrEqual => BinOp::Le,
            B::GreaterOrEqual => BinOp::Ge,
            B::Equals => BinOp::Eq,
            B::NotEquals => BinOp::Ne,
            B::BitwiseAnd => BinOp::BitAnd,
            B::BitwiseXor => BinOp::BitXor,
            B::BitwiseOr => BinOp::BitOr,
            _ => return Err(self.err(span, "unsupported operator")),
        };
        self.arith(bop, l, r, span)
    }

    /// A binary operator on two values, with C's conversions.
    pub fn arith(&mut self, op: BinOp, l: Value, r: Value, span: LSpan) -> BResult<Value> {
        let (le, lt, re, rt) = match (l, r) {
            (Value::Int(le, lt), Value::Int(re, rt)) => (le, lt, re, rt),
            (Value::Float, _) | (_, Value::Float) => {
                return Ok(if op.is_comparison() {
                    Value::Int(Expr::Unknown(IntTy::INT, Imprecision::Float), CType::Int(IntTy::INT))
                } else {
                    Value::Float
                });
            }
            _ => return Err(self.err(span, "invalid operands of a binary operator")),
        };
        if lt.is_pointer() || rt.is_pointer() {
            let pt = self.cx.types.ptr_int();
            if op.is_comparison() {
                let e = Expr::Binary(op, Box::new(le.cast(pt)), Box::new(re.cast(pt)), IntTy::INT);
                return Ok(Value::Int(e, CType::Int(IntTy::INT)));
            }
            // Pointer arithmetic: the address is not modelled.
            if op == BinOp::Sub && lt.is_pointer() && rt.is_pointer() {
                let t = self.cx.types.long(true);
                return Ok(Value::Int(Expr::Unknown(t, Imprecision::Address), CType::Int(t)));
            }
            let pty = if lt.is_pointer() { lt } else { rt };
            return Ok(self.unknown_of(&pty, Imprecision::Address));
        }
        let (la, ra) = (le.ty(), re.ty());
        if matches!(op, BinOp::Shl | BinOp::Shr) {
            let t = la.promote();
            let e = fold_binary(op, le.cast(t), re.cast(ra.promote()), t);
            return Ok(Value::Int(e, CType::Int(t)));
        }
        let ct = IntTy::common(la, ra);
        let rty = if op.is_comparison() { IntTy::INT } else { ct };
        let e = fold_binary(op, le.cast(ct), re.cast(ct), rty);
        Ok(Value::Int(e, CType::Int(rty)))
    }

    fn assign(&mut self, lhs: &Node<Expression>, rhs: &Node<Expression>, span: LSpan) -> BResult<Value> {
        let p = self.place(lhs)?;
        // `x = f(…)` and `x = __VERIFIER_nondet_int()` write the result directly.
        if let Expression::Call(c) = &rhs.node {
            let v = self.call(c, span, Some(&p))?;
            if let Value::Void = v {
                return Ok(self.read(&p, span));
            }
            self.write(&p, v, span)?;
            return Ok(self.read(&p, span));
        }
        let v = self.value(rhs)?;
        self.write(&p, v, span)?;
        Ok(self.read(&p, span))
    }

    fn conditional(&mut self, c: &Node<lang_c::ast::ConditionalExpression>, span: LSpan) -> BResult<Value> {
        let ty_then = self.type_of(&c.node.then_expression)?.decay();
        let ty_else = self.type_of(&c.node.else_expression)?.decay();
        let res_ty = match (&ty_then, &ty_else) {
            (CType::Int(a), CType::Int(b)) => CType::Int(IntTy::common(*a, *b)),
            (CType::Ptr(_), _) => ty_then.clone(),
            (_, CType::Ptr(_)) => ty_else.clone(),
            (CType::Float(_), _) | (_, CType::Float(_)) => CType::Float(8),
            (CType::Struct(_), _) => ty_then.clone(),
            _ => CType::Void,
        };
        let (t, f, j) = (self.new_node(), self.new_node(), self.new_node());
        self.cond(&c.node.condition, t, f)?;
        let sp = self.span(span);
        let result: Option<Place> = match &res_ty {
            CType::Int(_) | CType::Ptr(_) => {
                let it = self.cx.types.int_of(&res_ty).expect("scalar");
                let tmp = self.temp(it, res_ty.is_pointer())?;
                Some(Place::Obj { obj: Rc::new(Obj::Scalar(tmp)), idx: Vec::new(), ty: res_ty.clone() })
            }
            CType::Struct(_) => {
                let obj = Rc::new(self.alloc("__cond", &res_ty, super::Store::Local, true)?);
                Some(Place::Obj { obj, idx: Vec::new(), ty: res_ty.clone() })
            }
            _ => None,
        };
        for (node, branch) in [(t, &c.node.then_expression), (f, &c.node.else_expression)] {
            self.st.cur = node;
            match &result {
                Some(p) => {
                    let v = self.value(branch)?;
                    self.write(p, v, branch.span)?;
                }
                None => self.effect(branch)?,
            }
            let cur = self.st.cur;
            self.edge(cur, j, EdgeKind::Blank, sp);
        }
        self.st.cur = j;
        Ok(match result {
            Some(p) => self.read(&p, span),
            None if matches!(res_ty, CType::Float(_)) => Value::Float,
            None => Value::Void,
        })
    }

    fn statement_expr(&mut self, s: &Node<Statement>) -> BResult<Value> {
        let Statement::Compound(items) = &s.node else {
            self.stmt(s)?;
            return Ok(Value::Void);
        };
        self.cx.scopes.push(Scope::default());
        let r = (|| {
            let Some((last, init)) = items.split_last() else { return Ok(Value::Void) };
            for item in init {
                match &item.node {
                    lang_c::ast::BlockItem::Declaration(d) => self.declaration(d, super::Store::Local)?,
                    lang_c::ast::BlockItem::Statement(st) => self.stmt(st)?,
                    lang_c::ast::BlockItem::StaticAssert(_) => {}
                }
            }
            match &last.node {
                lang_c::ast::BlockItem::Statement(st) => match &st.node {
                    Statement::Expression(Some(e)) => self.value(e),
                    _ => {
                        self.stmt(st)?;
                        Ok(Value::Void)
                    }
                },
                lang_c::ast::BlockItem::Declaration(d) => {
                    self.declaration(d, super::Store::Local)?;
                    Ok(Value::Void)
                }
                lang_c::ast::BlockItem::StaticAssert(_) => Ok(Value::Void),
            }
        })();
        self.cx.scopes.pop();
        r
    }

    // ----- calls ------------------------------------------------------------------------

    /// Lowers a call. With `dest`, a scalar result may be written straight into it (the
    /// returned value is then `Void`).
    pub fn call(&mut self, c: &Node<CallExpression>, span: LSpan, dest: Option<&Place>) -> BResult<Value> {
        let call = &c.node;
        let sp = self.span(span);
        let name = match &call.callee.node {
            Expression::Identifier(id) => match self.cx.lookup(&id.node.name) {
                Some(Sym::Var(..)) | Some(Sym::Ref(..)) => None,
                _ => Some(id.node.name.clone()),
            },
            _ => None,
        };
        let Some(name) = name else {
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
            return Ok(self.unknown_of(&ret, Imprecision::Other));
        };
        let sig = match self.cx.lookup(&name) {
            Some(Sym::Func(_, s)) => Some(s.clone()),
            _ => None,
        };
        if !self.cx.func_ids.contains_key(&name) && self.st.dry == 0 {
            self.cx.externals.insert(name.clone());
        }

        if let Some(kind) = target_kind(&name) {
            let condition = match (kind, call.arguments.first().map(|a| &a.node)) {
                (TargetKind::Assert, Some(Expression::StringLiteral(s))) => {
                    let bytes = super::consts::string_literal(&s.node);
                    Some(bytes.iter().filter_map(|&b| char::from_u32(b)).collect())
                }
                _ => None,
            };
            self.target(kind, span, condition);
            return Ok(Value::Void);
        }
        if name == "assert" && sig.is_none() && !self.cx.func_ids.contains_key("assert") && call.arguments.len() == 1 {
            let (ok, bad) = (self.new_node(), self.new_node());
            self.cond(&call.arguments[0], ok, bad)?;
            self.st.cur = bad;
            self.target(TargetKind::Assert, span, None);
            self.st.cur = ok;
            return Ok(Value::Void);
        }
        if name == "__VERIFIER_assume" && call.arguments.len() == 1 {
            let ok = self.new_node();
            let stop = self.terminal_node();
            self.cond(&call.arguments[0], ok, stop)?;
            self.st.cur = ok;
            return Ok(Value::Void);
        }
        if is_terminating(&name) && !self.cx.func_ids.contains_key(&name) {
            for a in &call.arguments {
                self.effect(a)?;
            }
            self.terminate(span);
            return Ok(Value::Void);
        }
        if name == "__builtin_expect" && !call.arguments.is_empty() {
            let v = self.value(&call.arguments[0])?;
            for a in &call.arguments[1..] {
                self.effect(a)?;
            }
            return Ok(v);
        }
        if matches!(name.as_str(), "abs" | "labs" | "llabs") && call.arguments.len() == 1 && !self.cx.func_ids.contains_key(&name) {
            let t = match name.as_str() {
                "abs" => IntTy::INT,
                "labs" => self.cx.types.long(true),
                _ => IntTy::I64,
            };
            let v = self.value(&call.arguments[0])?;
            let x = match self.convert(v, &CType::Int(t)) {
                Value::Int(e, _) => e,
                _ => Expr::Unknown(t, Imprecision::Float),
            };
            let neg = Expr::Binary(BinOp::Lt, Box::new(x.clone()), Box::new(Expr::Const(0, t)), IntTy::INT);
            let e = Expr::Ite(Box::new(neg), Box::new(Expr::Unary(UnOp::Neg, Box::new(x.clone()), t)), Box::new(x), t);
            return Ok(Value::Int(e, CType::Int(t)));
        }
        if let Some(what) = is_unsupported_call(&name) {
            for a in &call.arguments {
                self.effect(a)?;
            }
            self.note(span, format!("{} are not modelled", what));
            self.stmt_edge(Stmt::Unsupported(what.to_string()), sp);
            return Ok(Value::Int(Expr::Unknown(IntTy::INT, Imprecision::Other), CType::Int(IntTy::INT)));
        }

        if let Some(&callee) = self.cx.func_ids.get(&name) {
            return self.call_defined(callee, &name, sig, call, span, dest);
        }

        // An external function: any result, and it may write through pointer arguments.
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
                if let Some(Place::Obj { obj, idx, ty: dty }) = dest {
                    if self.cx.types.int_of(dty) == Some(t) && !dty.is_pointer() {
                        let lhs = match &**obj {
                            Obj::Scalar(v) if idx.is_empty() => Some(LValue::Var(*v)),
                            Obj::Array(v, dims) => Self::linear_index(idx, dims).map(|i| LValue::Elem(*v, i)),
                            _ => None,
                        };
                        if let Some(lhs) = lhs {
                            self.stmt_edge(Stmt::Input { lhs, source: InputSource::Call(name) }, sp);
                            return Ok(Value::Void);
                        }
                    }
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

    fn call_defined(
        &mut self,
        callee: crate::ir::FuncId,
        name: &str,
        sig: Option<Rc<super::types::FuncSig>>,
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
                let obj = Rc::new(self.alloc("__ret", &ret_ty, super::Store::Local, true)?);
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

/// Expressions that designate objects (read through [`FnBuilder::place`]).
fn is_place_expr(e: &Expression) -> bool {
    match e {
        Expression::Member(_) => true,
        Expression::BinaryOperator(b) => b.node.operator.node == BinaryOperator::Index,
        Expression::UnaryOperator(u) => u.node.operator.node == UnaryOperator::Indirection,
        _ => false,
    }
}

fn has_anonymous_field(types: &super::types::TypeTable, sid: usize, name: &str) -> bool {
    let Some(fields) = &types.structs[sid].fields else { return false };
    fields.iter().any(|(n, t)| match t {
        CType::Struct(inner) if n.is_empty() => types.field(*inner, name).is_some() || has_anonymous_field(types, *inner, name),
        _ => false,
    })
}

pub fn value_type(v: &Value) -> CType {
    match v {
        Value::Int(_, t) => t.clone(),
        Value::Float => CType::Float(8),
        Value::Void => CType::Void,
        Value::Agg(_, t) => t.clone(),
    }
}

fn compound_op(op: &BinaryOperator) -> Option<BinOp> {
    use BinaryOperator as B;
    Some(match op {
        B::AssignMultiply => BinOp::Mul,
        B::AssignDivide => BinOp::Div,
        B::AssignModulo => BinOp::Rem,
        B::AssignPlus => BinOp::Add,
        B::AssignMinus => BinOp::Sub,
        B::AssignShiftLeft => BinOp::Shl,
        B::AssignShiftRight => BinOp::Shr,
        B::AssignBitwiseAnd => BinOp::BitAnd,
        B::AssignBitwiseXor => BinOp::BitXor,
        B::AssignBitwiseOr => BinOp::BitOr,
        _ => return None,
    })
}

/// Folds constant operands (no undefined behaviour is folded away).
fn fold_binary(op: BinOp, a: Expr, b: Expr, ty: IntTy) -> Expr {
    if let (Expr::Const(x, _), Expr::Const(y, _)) = (&a, &b) {
        if let Some(v) = crate::ir::eval_binop(op, *x, *y, ty) {
            return Expr::Const(v, ty);
        }
    }
    Expr::Binary(op, Box::new(a), Box::new(b), ty)
}

fn fold_unary(op: UnOp, a: Expr, ty: IntTy) -> Expr {
    if let Expr::Const(x, t) = &a {
        return Expr::Const(crate::ir::eval_unop(op, *x, *t), ty);
    }
    Expr::Unary(op, Box::new(a), ty)
}
