//! Operators of the expression lowering: unary and binary operators with C's conversions,
//! increments, assignments (compound ones too) and the conditional operator, which in value
//! position becomes a branch that assigns a temporary.

use std::rc::Rc;

use lang_c::ast::{BinaryOperator, Expression, UnaryOperator};
use lang_c::span::{Node, Span as LSpan};

use super::{Place, Value};
use crate::cfa::build::func::FnBuilder;
use crate::cfa::build::types::{CType, Obj};
use crate::cfa::build::{BResult, Store, Sym};
use crate::cfa::EdgeKind;
use crate::ir::{BinOp, Expr, Imprecision, IntTy, LValue, Stmt, UnOp};

impl<'a, 'p> FnBuilder<'a, 'p> {
    pub(super) fn unary(&mut self, u: &Node<lang_c::ast::UnaryOperatorExpression>, span: LSpan) -> BResult<Value> {
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
                self.st.checked += 1;
                let r = self.increment_place(&p, inc, span);
                self.st.checked -= 1;
                r?;
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
                        self.cx.address_taken_funcs.insert(name.clone());
                        if self.memory_on() {
                            let addr = self.function_address(&name, span);
                            return Ok(Value::Int(addr, CType::Ptr(Box::new(CType::Func(sig)))));
                        }
                        self.cx.uses_memory = true;
                        return Ok(self.unknown_ptr(CType::Func(sig), Imprecision::Address));
                    }
                }
                self.st.address_of = true;
                let p = self.place(inner);
                self.st.address_of = false;
                let p = p?;
                let ty = p.ty().clone();
                if let Place::At { addr, .. } = &p {
                    return Ok(Value::Int(addr.clone(), CType::Ptr(Box::new(ty))));
                }
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
    pub(super) fn increment(&mut self, operand: &Node<Expression>, inc: bool, span: LSpan) -> BResult<Value> {
        let p = self.place(operand)?;
        self.increment_place(&p, inc, span)?;
        Ok(self.reread(&p, span))
    }

    /// `x++` or `++x` for its effect alone.
    pub(super) fn increment_effect(&mut self, operand: &Node<Expression>, inc: bool, span: LSpan) -> BResult<()> {
        let p = self.place(operand)?;
        self.increment_place(&p, inc, span)
    }

    fn increment_place(&mut self, p: &Place, inc: bool, span: LSpan) -> BResult<()> {
        let old = self.read(p, span);
        let new = match old {
            Value::Int(e, CType::Int(t)) => {
                let pt = t.promote();
                let op = if inc { BinOp::Add } else { BinOp::Sub };
                Value::Int(Expr::Binary(op, Box::new(e.cast(pt)), Box::new(Expr::Const(1, pt)), pt), CType::Int(pt))
            }
            Value::Int(e, CType::Ptr(elem)) if self.memory_on() => {
                let moved = self.pointer_add(e, Expr::Const(1, IntTy::I64), &elem, !inc);
                Value::Int(moved, CType::Ptr(elem))
            }
            Value::Int(_, ty) => self.unknown_of(&ty, Imprecision::Address),
            other => other,
        };
        self.rewrite(p, new, span)
    }

    pub(super) fn binary(&mut self, b: &Node<lang_c::ast::BinaryOperatorExpression>, span: LSpan) -> BResult<Value> {
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
            self.rewrite(&p, res, span)?;
            return Ok(self.reread(&p, span));
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
        if (lt.is_pointer() || rt.is_pointer()) && self.memory_on() {
            let elem = |t: &CType| t.pointee().cloned().unwrap_or(CType::Void);
            let t = self.cx.types.long(true);
            let null_or_pointer = |e: &Expr, t: &CType| t.is_pointer() || e.constant() == Some(0);
            return Ok(match op {
                // A pointer compared with an integer other than 0 compares its address.
                _ if op.is_comparison() && !(null_or_pointer(&le, &lt) && null_or_pointer(&re, &rt)) => {
                    Value::Int(Expr::Unknown(IntTy::INT, Imprecision::Address), CType::Int(IntTy::INT))
                }
                _ if op.is_comparison() => Value::Int(self.pointer_compare(op, le, re), CType::Int(IntTy::INT)),
                BinOp::Sub if lt.is_pointer() && rt.is_pointer() => Value::Int(self.pointer_diff(le, re, &elem(&lt)), CType::Int(t)),
                BinOp::Add | BinOp::Sub if lt.is_pointer() => {
                    Value::Int(self.pointer_add(le, re, &elem(&lt), op == BinOp::Sub), lt.clone())
                }
                BinOp::Add => Value::Int(self.pointer_add(re, le, &elem(&rt), false), rt.clone()),
                // Bit operations on a pointer (alignment tricks): the address is not modelled.
                _ => {
                    let pty = if lt.is_pointer() { lt } else { rt };
                    self.unknown_of(&pty, Imprecision::Address)
                }
            });
        }
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

    pub(super) fn assign(&mut self, lhs: &Node<Expression>, rhs: &Node<Expression>, span: LSpan) -> BResult<Value> {
        let p = self.assign_to(lhs, rhs, span)?;
        Ok(self.reread(&p, span))
    }

    /// `lhs = rhs` for its effect: returns the place written (its value is read back only when
    /// the assignment's value is used, which with tagged memory is a branching load).
    pub(super) fn assign_to(&mut self, lhs: &Node<Expression>, rhs: &Node<Expression>, span: LSpan) -> BResult<Place> {
        let p = self.place(lhs)?;
        // `x = f(…)` and `x = __VERIFIER_nondet_int()` write the result directly.
        if let Expression::Call(c) = &rhs.node {
            let v = self.call(c, span, Some(&p))?;
            if !matches!(v, Value::Void) {
                self.write(&p, v, span)?;
            }
            return Ok(p);
        }
        let v = self.value(rhs)?;
        self.write(&p, v, span)?;
        Ok(p)
    }

    pub(super) fn conditional(&mut self, c: &Node<lang_c::ast::ConditionalExpression>, span: LSpan) -> BResult<Value> {
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
                let obj = Rc::new(self.alloc("__cond", &res_ty, Store::Local, true)?);
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
