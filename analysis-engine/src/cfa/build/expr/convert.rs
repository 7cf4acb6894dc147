//! Conversions of lowered values (C11 6.3): unknown values of a type, conversion to a type, and
//! the flattening of a struct value into one scalar per leaf variable (call arguments).

use std::rc::Rc;

use lang_c::ast::{Constant, Expression};
use lang_c::span::{Node, Span as LSpan};

use super::{Place, Value};
use crate::cfa::build::consts;
use crate::cfa::build::func::FnBuilder;
use crate::cfa::build::types::{CType, Obj, FLOAT_COMPLEX};
use crate::cfa::build::{BResult, Sym};
use crate::ir::{Expr, Imprecision, IntTy};

impl<'a, 'p> FnBuilder<'a, 'p> {
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
        if self.memory_on() {
            if let Some(v) = self.convert_pointer(&v, to) {
                return v;
            }
        }
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

    /// Conversions from and to pointers with the memory model (`None`: not one). A pointer
    /// becomes an integer only as null or not (its address is any value); an integer becomes
    /// a pointer only as null. A conversion between pointers to differently shaped types is
    /// how type punning happens, which the model of typed memory excludes: the model gives up.
    fn convert_pointer(&mut self, v: &Value, to: &CType) -> Option<Value> {
        let Value::Int(e, from) = v else { return None };
        match (from, to) {
            (CType::Ptr(a), CType::Ptr(b)) => {
                self.check_punning(e, a, b);
                Some(Value::Int(e.clone().cast(IntTy::U64), to.clone()))
            }
            (CType::Ptr(_), CType::Int(t)) if t.boolean => None,
            // A pointer of no object (object 0: null, or one made from an integer) converts
            // back to that integer, as gcc's conversions do; an object's address is unknown.
            (CType::Ptr(_), CType::Int(t)) => Some(Value::Int(
                match e.constant() {
                    Some(c) if (0..1 << crate::cfa::build::memory::OFFSET_BITS).contains(&c) => Expr::Const(c, IntTy::U64).cast(*t),
                    _ => Expr::Ite(
                        Box::new(Expr::Binary(
                            crate::ir::BinOp::Lt,
                            Box::new(e.clone().cast(IntTy::U64)),
                            Box::new(Expr::Const(1 << crate::cfa::build::memory::OFFSET_BITS, IntTy::U64)),
                            IntTy::INT,
                        )),
                        Box::new(e.clone().cast(IntTy::U64).cast(*t)),
                        Box::new(Expr::Unknown(*t, Imprecision::Address)),
                        *t,
                    ),
                },
                to.clone(),
            )),
            // An integer constant below 2^31 is the pointer of no object at that offset (null
            // for 0): it compares and converts back exactly, and any access through it is
            // out of bounds. Other integers are any address.
            (CType::Int(_), CType::Ptr(_)) => Some(Value::Int(
                match e.constant() {
                    Some(c) if (0..=crate::cfa::build::memory::MAX_OBJECT as i128).contains(&c) => Expr::Const(c, IntTy::U64),
                    _ => Expr::Unknown(IntTy::U64, Imprecision::Address),
                },
                to.clone(),
            )),
            _ => None,
        }
    }

    /// Records a conversion from a pointer to `a` to a pointer to `b`; notes that the program
    /// needs tagged memory when the memory could then be read with another type than it was
    /// written with (unless it has tags already).
    fn check_punning(&mut self, e: &Expr, a: &CType, b: &CType) {
        let (sa, sb) = (self.shape(a), self.shape(b));
        if sa == sb || self.cx.mem.as_ref().is_some_and(|m| m.tags.is_some()) {
            return;
        }
        let fresh = matches!(e, Expr::Var(v, _) if self.cx.alloc_results.contains(v));
        let void_side = match (&sa, &sb) {
            (CType::Void, CType::Void) => return,
            (CType::Void, t) if fresh => {
                // A new allocation gets its type from its first use: no punning yet.
                let _ = t;
                return;
            }
            (CType::Void, t) | (t, CType::Void) => t.clone(),
            _ => {
                let why = format!(
                    "conversion between `{} *` and `{} *` (the memory would be read with another type than written)",
                    self.cx.types.display(a),
                    self.cx.types.display(b)
                );
                self.needs_tags(why, LSpan::none());
                return;
            }
        };
        let m = self.cx.mem.as_mut().expect("memory model");
        if !m.void_shapes.contains(&void_side) {
            m.void_shapes.push(void_side);
        }
        if m.void_shapes.len() > 1 {
            self.needs_tags("pointers to different types pass through `void *`".into(), LSpan::none());
        }
    }

    /// The shape of a pointee for [`Self::check_punning`]: integers by width, any pointer,
    /// arrays by their elements, structs by identity.
    fn shape(&self, t: &CType) -> CType {
        match t {
            CType::Int(i) => CType::Int(IntTy::new(if i.boolean { 8 } else { i.bits }, false)),
            CType::Ptr(_) => CType::Ptr(Box::new(CType::Void)),
            CType::Array(e, _) => self.shape(e),
            t => t.clone(),
        }
    }

    /// The floating type of an expression whose value is a float (lowered values do not keep
    /// it): literals by their suffix, declared types of objects and functions, and the usual
    /// arithmetic conversions (the higher rank, complex if either is) for operators.
    pub fn float_type(&mut self, e: &Node<Expression>) -> BResult<CType> {
        use lang_c::ast::{BinaryOperator as B, UnaryOperator as U};
        let float_of = |t: CType| if matches!(t, CType::Float(_)) { Some(t) } else { None };
        Ok(match &e.node {
            Expression::Constant(c) => match &c.node {
                Constant::Float(f) => consts::float_literal_type(f),
                _ => CType::Float(8),
            },
            Expression::Cast(c) => self.cx.type_name(&c.node.type_name.node, c.node.type_name.span)?,
            Expression::UnaryOperator(u) if matches!(u.node.operator.node, U::Plus | U::Minus) => self.type_of(&u.node.operand)?,
            Expression::BinaryOperator(b) => match b.node.operator.node {
                B::Multiply | B::Divide | B::Plus | B::Minus => {
                    let l = float_of(self.type_of(&b.node.lhs)?);
                    let r = float_of(self.type_of(&b.node.rhs)?);
                    match (l, r) {
                        (Some(CType::Float(x)), Some(CType::Float(y))) => {
                            let part = (x & !FLOAT_COMPLEX).max(y & !FLOAT_COMPLEX);
                            CType::Float(part | ((x | y) & FLOAT_COMPLEX))
                        }
                        (Some(t), _) | (_, Some(t)) => t,
                        _ => CType::Float(8),
                    }
                }
                // Assignments have the type of their left operand.
                _ => self.type_of(&b.node.lhs)?,
            },
            Expression::Conditional(c) => {
                let a = float_of(self.type_of(&c.node.then_expression)?);
                let b = float_of(self.type_of(&c.node.else_expression)?);
                match (a, b) {
                    (Some(CType::Float(x)), Some(CType::Float(y))) => CType::Float(x.max(y)),
                    (Some(t), _) | (_, Some(t)) => t,
                    _ => CType::Float(8),
                }
            }
            Expression::Comma(items) => match items.last() {
                Some(l) => self.type_of(l)?,
                None => CType::Float(8),
            },
            Expression::Call(c) => match &c.node.callee.node {
                Expression::Identifier(id) => match self.cx.lookup(&id.node.name) {
                    Some(Sym::Func(_, sig)) => sig.ret.clone(),
                    _ => CType::Float(8),
                },
                _ => CType::Float(8),
            },
            _ => CType::Float(8),
        })
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
                for (k, (fname, fty)) in fields.into_iter().enumerate() {
                    let fv = match &src {
                        Some(Place::Obj { obj, idx, .. }) => {
                            let fo = obj.field(&fname).unwrap_or_else(|| if fname.is_empty() { obj.clone() } else { Rc::new(Obj::Opaque) });
                            let p = Place::Obj { obj: fo, idx: idx.clone(), ty: fty.clone() };
                            self.read_for_copy(&p, span)
                        }
                        Some(p @ Place::At { .. }) => {
                            let m = self.member(p, *sid, k, &fname, &fty);
                            self.read_for_copy(&m, span)
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
}
