//! Lowers C expressions into side-effect-free IR expressions, emitting the side effects
//! (assignments, increments, calls) as CFA edges before the value is used. Short-circuit and
//! conditional operators in value position become branches that assign a temporary.
//!
//! This module has the entry points and the match over lang-c's expressions; `place` lowers
//! lvalues and reads and writes them, `convert` has C's conversions, `ops` the operators and
//! `call` the calls.

mod builtins;
mod call;
mod convert;
mod ops;
mod place;

pub use call::target_kind;

use std::rc::Rc;

use lang_c::ast::{BinaryOperator, Constant, Expression, Statement, UnaryOperator};
use lang_c::span::{Node, Span as LSpan};

use super::func::FnBuilder;
use super::types::{CType, Obj};
use super::{BResult, Scope, Sym};
use crate::cfa::EdgeKind;
use crate::ir::{Expr, Imprecision, IntTy};

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
    /// An object in memory at an address (the memory model, [`crate::cfa::build::memory`]);
    /// `opaque` when reached through a union member (reads are any value).
    At { addr: Expr, ty: CType, opaque: bool },
}

impl Place {
    pub fn ty(&self) -> &CType {
        match self {
            Place::Obj { ty, .. } | Place::Mem(ty) | Place::At { ty, .. } => ty,
        }
    }
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
                self.increment_effect(&u.node.operand, inc, e.span)
            }
            Expression::Comma(items) => items.iter().try_for_each(|i| self.effect(i)),
            Expression::Cast(c) => self.effect(&c.node.expression),
            Expression::Call(c) => self.call(c, e.span, None).map(|_| ()),
            Expression::BinaryOperator(b) if b.node.operator.node == BinaryOperator::Assign => {
                self.assign_to(&b.node.lhs, &b.node.rhs, e.span).map(|_| ())
            }
            // `x ?: y` for its effects is `x || y`.
            Expression::Conditional(c) if is_elvis(c) => {
                let (t, j) = (self.new_node(), self.new_node());
                self.cond(&c.node.condition, j, t)?;
                self.st.cur = t;
                self.effect(&c.node.else_expression)?;
                let cur = self.st.cur;
                self.edge(cur, j, EdgeKind::Blank, Default::default());
                self.st.cur = j;
                Ok(())
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
                    Some(Sym::At(addr, ty)) => {
                        let p = Place::At { addr, ty, opaque: false };
                        Ok(self.read(&p, span))
                    }
                    // The by-reference pre-pass admits no such use; stay sound if one slips by.
                    Some(Sym::Ref(_, ty)) => Ok(self.unknown_of(&ty, Imprecision::Address)),
                    Some(Sym::EnumConst(v, t)) => Ok(Value::Int(Expr::Const(v, t), CType::Int(t))),
                    Some(Sym::Func(fname, sig)) => {
                        self.cx.address_taken_funcs.insert(fname.clone());
                        if self.memory_on() {
                            let addr = self.function_address(&fname, span);
                            return Ok(Value::Int(addr, CType::Ptr(Box::new(CType::Func(sig)))));
                        }
                        self.cx.uses_memory = true;
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
            Expression::StringLiteral(s) if self.memory_on() => Ok(self.string_literal(&s.node, span)),
            Expression::StringLiteral(_) => Ok(self.unknown_ptr(CType::Int(IntTy::I8), Imprecision::Address)),
            Expression::Member(_) | Expression::BinaryOperator(_) if is_place_expr(&e.node) => {
                let p = self.place(e)?;
                Ok(self.read(&p, span))
            }
            Expression::Call(c) => self.call(c, span, None),
            Expression::CompoundLiteral(cl) => {
                let ty = self.cx.type_name(&cl.node.type_name.node, cl.node.type_name.span)?;
                if self.memory_on() {
                    // In memory: its address may be taken.
                    let addr = self.memory_object("(compound literal)", &ty, span);
                    let p = Place::At { addr, ty: ty.clone(), opaque: false };
                    super::init::init_list(self, &p, &ty, &cl.node.initializer_list, span)?;
                    return Ok(self.read(&p, span));
                }
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
                if let Some(size) = self.vla_size(&s.node.0) {
                    return Ok(size);
                }
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
            Expression::Conditional(c) if is_elvis(c) => self.elvis(c, span),
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
            Expression::OffsetOf(o) => {
                let t = self.cx.types.long(false);
                Ok(match super::consts::offset_of(self.cx, &o.node) {
                    Some(n) => Value::Int(Expr::Const(n as i128, t), CType::Int(t)),
                    None => Value::Int(Expr::Unknown(t, Imprecision::Other), CType::Int(t)),
                })
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

    /// `sizeof a` of a variable-length array `a` (C11 6.5.3.4p2: evaluated, the length its
    /// declaration computed times its element's size), when the element's size is constant;
    /// `None` for anything else.
    fn vla_size(&self, e: &Node<Expression>) -> Option<Value> {
        let Expression::Identifier(id) = &e.node else { return None };
        let Some(Sym::Var(obj, CType::Array(elem, None))) = self.cx.lookup(&id.node.name) else { return None };
        let Obj::Array(v, dims) = &**obj else { return None };
        if dims.first() != Some(&0) {
            return None;
        }
        let len = self.st.vla_lens.get(v)?.clone();
        let t = self.cx.types.long(false);
        let elem = self.cx.types.size_of(elem)?;
        let size = Expr::Binary(crate::ir::BinOp::Mul, Box::new(len.cast(t)), Box::new(Expr::Const(elem as i128, t)), t);
        Some(Value::Int(size, CType::Int(t)))
    }

    /// The type of an expression, computed without emitting anything.
    pub fn type_of(&mut self, e: &Node<Expression>) -> BResult<CType> {
        let cur = self.st.cur;
        self.st.dry += 1;
        let r = if is_place_expr(&e.node) || matches!(e.node, Expression::Identifier(_)) {
            match &e.node {
                Expression::Identifier(id) => match self.cx.lookup(&id.node.name) {
                    Some(Sym::Var(_, t)) | Some(Sym::Ref(_, t)) | Some(Sym::At(_, t)) => Ok(t.clone()),
                    _ => self.value(e).map(|v| value_type(&v)),
                },
                _ => self.place(e).map(|p| p.ty().clone()),
            }
        } else if let Expression::StringLiteral(s) = &e.node {
            Ok(super::consts::string_literal_type(&s.node))
        } else {
            match self.value(e).map(|v| value_type(&v)) {
                Ok(CType::Float(_)) => self.float_type(e),
                r => r,
            }
        };
        self.st.dry -= 1;
        self.st.cur = cur;
        r
    }

    /// `x ?: y`: `x` is evaluated once; the result is `x` if it is non-zero, else `y`.
    fn elvis(&mut self, c: &Node<lang_c::ast::ConditionalExpression>, span: LSpan) -> BResult<Value> {
        let ty_x = self.type_of(&c.node.condition)?.decay();
        let ty_y = self.type_of(&c.node.else_expression)?.decay();
        let res_ty = match (&ty_x, &ty_y) {
            (CType::Int(a), CType::Int(b)) => CType::Int(IntTy::common(*a, *b)),
            (CType::Ptr(_), _) => ty_x.clone(),
            (_, CType::Ptr(_)) => ty_y.clone(),
            (CType::Float(_), _) | (_, CType::Float(_)) => CType::Float(8),
            _ => CType::Void,
        };
        let x = self.value(&c.node.condition)?;
        let truth = self.truth_value(x.clone());
        let sp = self.span(span);
        let (t, f, j) = (self.new_node(), self.new_node(), self.new_node());
        let cur = self.st.cur;
        self.edge(cur, t, EdgeKind::Assume { cond: truth.clone(), truth: true }, sp);
        self.edge(cur, f, EdgeKind::Assume { cond: truth, truth: false }, sp);
        let result = match &res_ty {
            CType::Int(_) | CType::Ptr(_) => {
                let it = self.cx.types.int_of(&res_ty).expect("scalar");
                let tmp = self.temp(it, res_ty.is_pointer())?;
                Some(Place::Obj { obj: Rc::new(Obj::Scalar(tmp)), idx: Vec::new(), ty: res_ty.clone() })
            }
            _ => None,
        };
        self.st.cur = t;
        if let Some(p) = &result {
            self.write(p, x, c.node.condition.span)?;
        }
        let cur = self.st.cur;
        self.edge(cur, j, EdgeKind::Blank, sp);
        self.st.cur = f;
        match &result {
            Some(p) => {
                let y = self.value(&c.node.else_expression)?;
                self.write(p, y, c.node.else_expression.span)?;
            }
            None => self.effect(&c.node.else_expression)?,
        }
        let cur = self.st.cur;
        self.edge(cur, j, EdgeKind::Blank, sp);
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
                    // Computing the type only (`type_of`) needs the declarations, not the
                    // statements: lowering them twice would define their labels twice.
                    lang_c::ast::BlockItem::Statement(_) if self.st.dry > 0 => {}
                    lang_c::ast::BlockItem::Statement(st) => self.stmt(st)?,
                    lang_c::ast::BlockItem::StaticAssert(_) => {}
                }
            }
            match &last.node {
                lang_c::ast::BlockItem::Statement(st) => match &st.node {
                    Statement::Expression(Some(e)) => self.value(e),
                    _ if self.st.dry > 0 => Ok(Value::Void),
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
        self.pop_scope(s.span);
        r
    }
}

/// Whether a conditional is gcc's `x ?: y`, which the front end spells `x ?__cpals_elvis: y`.
pub fn is_elvis(c: &Node<lang_c::ast::ConditionalExpression>) -> bool {
    matches!(&c.node.then_expression.node, Expression::Identifier(id) if id.node.name == crate::frontend::rewrite::ELVIS)
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

/// The C type of a lowered value.
pub fn value_type(v: &Value) -> CType {
    match v {
        Value::Int(_, t) => t.clone(),
        Value::Float => CType::Float(8),
        Value::Void => CType::Void,
        Value::Agg(_, t) => t.clone(),
    }
}
