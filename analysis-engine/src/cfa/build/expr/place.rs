//! Places (lvalues) of the expression lowering: subscripts, members (with C11 anonymous
//! members) and dereferences, reads and writes of places, and struct assignment leaf by leaf.

use std::rc::Rc;

use lang_c::ast::{BinaryOperator, Expression, MemberOperator, UnaryOperator};
use lang_c::span::{Node, Span as LSpan};

use super::{value_type, Place, Value};
use crate::cfa::build::func::FnBuilder;
use crate::cfa::build::types::{CType, Obj};
use crate::cfa::build::{BResult, Sym};
use crate::cfa::{EdgeKind, TargetKind};
use crate::ir::{BinOp, Expr, Imprecision, IntTy, LValue, Stmt, VarId};

impl<'a, 'p> FnBuilder<'a, 'p> {
    /// Lowers an lvalue expression to the place it designates.
    pub fn place(&mut self, e: &Node<Expression>) -> BResult<Place> {
        self.enter(e.span)?;
        let r = self.place_inner(e);
        self.leave();
        r
    }

    fn place_inner(&mut self, e: &Node<Expression>) -> BResult<Place> {
        let span = e.span;
        let addressed = std::mem::take(&mut self.st.address_of);
        match &e.node {
            Expression::Identifier(id) => match self.cx.lookup(&id.node.name).cloned() {
                Some(Sym::Var(obj, ty)) => Ok(Place::Obj { obj, idx: Vec::new(), ty }),
                Some(Sym::At(addr, ty)) => Ok(Place::At { addr, ty, opaque: false }),
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
                            self.pointee_place(v, pt)
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
                        Place::At { addr, opaque, .. } => {
                            Ok(Place::At { addr: self.pointer_add(addr, i, &elem, false), ty: *elem, opaque })
                        }
                        Place::Mem(_) => Ok(Place::Mem(*elem)),
                    },
                    CType::Ptr(elem) if self.memory_on() => {
                        let v = self.value(arr)?;
                        match v {
                            Value::Int(p, _) => Ok(Place::At { addr: self.pointer_add(p, i, &elem, false), ty: *elem, opaque: false }),
                            _ => Ok(Place::Mem(*elem)),
                        }
                    }
                    CType::Ptr(elem) => {
                        let _ = self.value(arr)?;
                        self.cx.uses_memory = true;
                        if let Some((name, n)) = self.block_of(arr).filter(|_| !addressed) {
                            let what = format!("index of the block `{}` points to ({} element{})", name, n, if n == 1 { "" } else { "s" });
                            self.check_index(what, &i, n, span);
                        }
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
                        Place::At { addr, opaque, .. } => Ok(Place::At { addr, ty: *elem, opaque }),
                        Place::Mem(_) => Ok(Place::Mem(*elem)),
                    },
                    CType::Ptr(p) => {
                        let v = self.value(&u.node.operand)?;
                        Ok(self.pointee_place(v, *p))
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

    /// The pointee of a by-reference parameter `p` ([`crate::cfa::build::byref`]): its copy in this frame.
    pub(super) fn by_reference(&self, e: &Node<Expression>) -> Option<Place> {
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
        if let Some(k) = fields.iter().position(|(n, _)| n == fname) {
            let fty = fields[k].1.clone();
            if let Place::At { addr, opaque, .. } = &base {
                return Ok(self.member_at(addr, *opaque || union, sid, k, fty));
            }
            return Ok(match base {
                Place::Obj { obj, idx, .. } if !union => match obj.field(fname) {
                    Some(o) => Place::Obj { obj: o, idx, ty: fty },
                    None => Place::Obj { obj: Rc::new(Obj::Opaque), idx, ty: fty },
                },
                Place::Obj { idx, .. } => Place::Obj { obj: Rc::new(Obj::Opaque), idx, ty: fty },
                Place::Mem(_) | Place::At { .. } => Place::Mem(fty),
            });
        }
        // C11 anonymous members: look inside unnamed struct/union fields.
        for (j, (n, fty)) in fields.iter().enumerate() {
            if !n.is_empty() {
                continue;
            }
            if let CType::Struct(inner) = fty {
                if self.cx.types.field(*inner, fname).is_some() || has_anonymous_field(&self.cx.types, *inner, fname) {
                    let sub = match &base {
                        Place::Obj { obj, idx, .. } if !union => {
                            // The anonymous member's object is the parent's field at its index.
                            let o = match &**obj {
                                Obj::Struct(fs) => fs.get(j).map(|(_, o)| o.clone()),
                                _ => None,
                            };
                            Place::Obj { obj: o.unwrap_or_else(|| Rc::new(Obj::Opaque)), idx: idx.clone(), ty: fty.clone() }
                        }
                        Place::Obj { idx, .. } => Place::Obj { obj: Rc::new(Obj::Opaque), idx: idx.clone(), ty: fty.clone() },
                        Place::At { addr, opaque, .. } => self.member_at(addr, *opaque || union, sid, j, fty.clone()),
                        Place::Mem(_) => Place::Mem(fty.clone()),
                    };
                    return self.field_place(sub, *inner, fname, span);
                }
            }
        }
        Err(self.err(span, format!("no member named `{}` in `{}`", fname, self.cx.types.display(&CType::Struct(sid)))))
    }

    /// The place a pointer value points to: in memory with the memory model, else unmodelled.
    pub(super) fn pointee_place(&mut self, v: Value, pointee: CType) -> Place {
        match v {
            Value::Int(p, _) if self.memory_on() => Place::At { addr: p, ty: pointee, opaque: false },
            _ => {
                self.cx.uses_memory = true;
                Place::Mem(pointee)
            }
        }
    }

    /// Member `k` (of type `fty`) of the struct or union `sid` at `addr`; bit-fields are
    /// opaque (their storage unit is shared with their neighbours).
    pub(super) fn member_at(&self, addr: &Expr, opaque: bool, sid: usize, k: usize, fty: CType) -> Place {
        let off = self.cx.types.struct_layout(sid).and_then(|l| l.offsets.get(k).copied().flatten());
        match off {
            Some(o) => Place::At { addr: crate::cfa::build::memory::displace(addr, Expr::Const(o as i128, IntTy::U64)), ty: fty, opaque },
            None => Place::At { addr: addr.clone(), ty: fty, opaque: true },
        }
    }

    /// Linear index of a fully subscripted array element.
    pub(super) fn linear_index(idx: &[Expr], dims: &[u64]) -> Option<Expr> {
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

    /// Checks that an element access stays inside its array (C11 6.5.6p8: any other access is
    /// undefined behaviour, and in memory it reads or overwrites another object, which the
    /// model of arrays as variables would not show). Unless the index is a constant inside the
    /// array, the access branches to a [`TargetKind::OutOfBounds`] target. The flattened index
    /// is checked against the whole array (`a[0][5]` of an `int a[2][4]` is `a[1][1]` in
    /// memory, as gcc lays it out). A variable-length array is checked against the length its
    /// declaration computed (`FnState::vla_lens`); an array of unknown length (`extern int
    /// a[]`) is not checked (a known gap, see docs/architecture.md).
    pub(super) fn check_bounds(&mut self, var: VarId, index: &Expr, dims: &[u64], span: LSpan) {
        let name = self.var_name(var);
        if name.starts_with("__") {
            // Synthetic arrays of the builder (the `atexit` stack) are not the user's accesses.
            return;
        }
        if dims.first() == Some(&0) {
            // A variable-length array: its length is what its declaration computed.
            let Some(len) = self.st.vla_lens.get(&var) else { return };
            let Some(stride) = dims[1..].iter().try_fold(1u64, |a, &d| a.checked_mul(d)).filter(|&s| s > 0) else { return };
            let len = len.clone().cast(IntTy::U64);
            let total = Expr::Binary(BinOp::Mul, Box::new(len), Box::new(Expr::Const(stride as i128, IntTy::U64)), IntTy::U64);
            let what = format!("index of `{}` (a variable-length array)", name);
            self.check_index_below(what, index, total, span);
            return;
        }
        if dims.contains(&0) {
            return;
        }
        let Some(total) = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d)) else { return };
        let what = format!("index of `{}` ({} element{})", name, total, if total == 1 { "" } else { "s" });
        self.check_index(what, index, total, span);
    }

    fn var_name(&self, var: VarId) -> String {
        match var.func() {
            None => self.cx.globals[var.index()].name.clone(),
            Some(_) => self.st.locals[var.index()].name.clone(),
        }
    }

    /// The local pointer an expression names when it holds an allocated block of known length
    /// ([`crate::cfa::build::blocks`]), with that length.
    fn block_of(&self, e: &Node<Expression>) -> Option<(String, u64)> {
        let Expression::Identifier(id) = &e.node else { return None };
        let Some(Sym::Var(obj, _)) = self.cx.lookup(&id.node.name) else { return None };
        let Obj::Scalar(v) = &**obj else { return None };
        self.st.blocks.get(v).map(|&n| (id.node.name.clone(), n))
    }

    /// Branches to an out-of-bounds target unless `index` (an element index) is below `total`;
    /// `what` names the access for the report.
    fn check_index(&mut self, what: String, index: &Expr, total: u64, span: LSpan) {
        if index.constant().is_some_and(|i| (0..total as i128).contains(&i)) {
            return;
        }
        self.check_index_below(what, index, Expr::Const(total as i128, IntTy::U64), span);
    }

    /// Branches to an out-of-bounds target unless `index` is below `total` (a `u64`
    /// expression): a negative index is a huge unsigned one.
    fn check_index_below(&mut self, what: String, index: &Expr, total: Expr, span: LSpan) {
        if self.st.dry > 0 || self.st.checked > 0 || !self.cx.bounds_checks {
            return;
        }
        let within = Expr::Binary(BinOp::Lt, Box::new(index.clone().cast(IntTy::U64)), Box::new(total), IntTy::INT);
        self.branch_to_target(within, what, span);
    }

    /// Continues where `within` holds; where it does not, reaches an out-of-bounds target
    /// whose condition `what` names the access.
    pub(in crate::cfa::build) fn branch_to_target(&mut self, within: Expr, what: String, span: LSpan) {
        let sp = self.span(span);
        let (ok, bad) = (self.new_node(), self.new_node());
        let cur = self.st.cur;
        self.edge(cur, ok, EdgeKind::Assume { cond: within.clone(), truth: true }, sp);
        self.edge(cur, bad, EdgeKind::Assume { cond: within, truth: false }, sp);
        self.st.cur = bad;
        self.target(TargetKind::OutOfBounds, span, Some(what));
        self.st.cur = ok;
    }

    /// Reads a place whose every element access was just checked (bounds, see
    /// [`Self::check_bounds`]).
    pub(super) fn reread(&mut self, p: &Place, span: LSpan) -> Value {
        self.st.checked += 1;
        let v = self.read(p, span);
        self.st.checked -= 1;
        v
    }

    /// Writes a place whose every element access was just checked.
    pub(super) fn rewrite(&mut self, p: &Place, v: Value, span: LSpan) -> BResult<()> {
        self.st.checked += 1;
        let r = self.write(p, v, span);
        self.st.checked -= 1;
        r
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
                if let Place::At { addr, .. } = p {
                    return Value::Int(addr.clone(), CType::Ptr(Box::new(ty.pointee().cloned().unwrap_or(CType::Void))));
                }
                if let Place::Obj { obj, .. } = p {
                    self.escape(obj);
                }
                return self.unknown_ptr(ty.pointee().cloned().unwrap_or(CType::Void), Imprecision::Address);
            }
            CType::Int(_) | CType::Ptr(_) => {}
        }
        if let Place::At { addr, opaque, .. } = p {
            let v = self.load(addr, &ty, span);
            return if *opaque { self.unknown_of(&ty, Imprecision::Union) } else { v };
        }
        let it = self.cx.types.int_of(&ty).expect("integer-like");
        let e = match p {
            // A volatile object may have changed since it was written.
            Place::Obj { obj, .. } if matches!(&**obj, Obj::Scalar(v) | Obj::Array(v, _) if self.cx.indirect.volatile.contains(v)) => {
                Expr::Unknown(it, Imprecision::Volatile)
            }
            Place::Obj { obj, idx, .. } => match &**obj {
                Obj::Scalar(v) if idx.is_empty() => Expr::Var(*v, it),
                Obj::Array(v, dims) => match Self::linear_index(idx, dims) {
                    Some(i) => {
                        self.check_bounds(*v, &i, dims, span);
                        Expr::Elem(*v, Box::new(i), it)
                    }
                    None => Expr::Unknown(it, Imprecision::Other),
                },
                Obj::Opaque => Expr::Unknown(it, Imprecision::Union),
                _ => Expr::Unknown(it, Imprecision::Other),
            },
            Place::Mem(_) | Place::At { .. } => Expr::Unknown(it, Imprecision::PointerRead),
        };
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
            Place::At { addr, opaque, .. } => {
                if matches!(ty, CType::Array(..)) {
                    return Err(self.err(span, "assignment to an array"));
                }
                if *opaque {
                    // A union member or bit-field: its reads are any value anyway.
                    let bytes = self.cx.types.size_of(&ty).unwrap_or(1);
                    self.check_access(addr, bytes, span);
                    self.tag_opaque(addr, bytes, span);
                    return Ok(());
                }
                self.store(addr, v, &ty, span);
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
                        Some(i) => {
                            self.check_bounds(*var, &i, dims, span);
                            self.stmt_edge(Stmt::Assign(LValue::Elem(*var, i), e), sp)
                        }
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
        let src = match v {
            Value::Agg(p, _) => Some(p),
            _ => None,
        };
        let ty = dst.ty().clone();
        self.copy_object(dst, src.as_ref(), &ty, span)
    }

    /// Copies the object at `src` (unknown contents if `None`) of type `ty` to `dst`.
    fn copy_object(&mut self, dst: &Place, src: Option<&Place>, ty: &CType, span: LSpan) -> BResult<()> {
        let sp = self.span(span);
        if let Place::Mem(_) = dst {
            self.stmt_edge(Stmt::HavocMemory(Imprecision::PointerWrite), sp);
            return Ok(());
        }
        match ty {
            CType::Struct(sid) => {
                let sid = *sid;
                if self.cx.types.structs[sid].union {
                    // Union members are opaque: nothing to copy (with tags, nothing read from
                    // the copy is exact).
                    if let Place::At { addr, .. } = dst {
                        let bytes = self.cx.types.size_of(ty).unwrap_or(1);
                        self.tag_opaque(addr, bytes, span);
                    }
                    return Ok(());
                }
                let fields = self.cx.types.structs[sid].fields.clone().unwrap_or_default();
                for (k, (fname, fty)) in fields.iter().enumerate() {
                    let d = self.member(dst, sid, k, fname, fty);
                    let s = src.map(|s| self.member(s, sid, k, fname, fty));
                    self.copy_object(&d, s.as_ref(), fty, span)?;
                }
                Ok(())
            }
            CType::Array(elem, n) if matches!(dst, Place::At { .. }) || matches!(src, Some(Place::At { .. })) => match n {
                Some(n) if *n <= COPY_LIMIT => {
                    for i in 0..*n {
                        let d = self.element(dst, i, elem);
                        let s = src.map(|s| self.element(s, i, elem));
                        self.copy_object(&d, s.as_ref(), elem, span)?;
                    }
                    Ok(())
                }
                _ => {
                    self.note(span, "copy of a large array member is not modelled");
                    self.stmt_edge(Stmt::Unsupported("copy of a large array member".into()), sp);
                    Ok(())
                }
            },
            CType::Array(..) => {
                // Arrays inside structs (as variables): an element-wise copy is not modelled.
                let mut vars = Vec::new();
                if let Place::Obj { obj, .. } = dst {
                    obj.vars(&mut vars);
                }
                for var in vars {
                    self.stmt_edge(Stmt::Assign(LValue::Var(var), Expr::Unknown(IntTy::I32, Imprecision::Other)), sp);
                }
                Ok(())
            }
            _ => {
                let sv = match src {
                    Some(s) => self.read_for_copy(s, span),
                    None => self.unknown_of(ty, Imprecision::Other),
                };
                self.write(dst, sv, span)
            }
        }
    }

    /// Member `k` (named `fname`, of type `fty`) of a struct place.
    pub(in crate::cfa::build) fn member(&self, p: &Place, sid: usize, k: usize, fname: &str, fty: &CType) -> Place {
        match p {
            Place::Obj { obj, idx, .. } => {
                let fo = match &**obj {
                    Obj::Struct(fs) => fs.get(k).map(|(_, o)| o.clone()),
                    _ => None,
                };
                let fo = fo.unwrap_or_else(|| if fname.is_empty() { obj.clone() } else { Rc::new(Obj::Opaque) });
                Place::Obj { obj: fo, idx: idx.clone(), ty: fty.clone() }
            }
            Place::At { addr, opaque, .. } => self.member_at(addr, *opaque, sid, k, fty.clone()),
            Place::Mem(_) => Place::Mem(fty.clone()),
        }
    }

    /// Element `i` of an array place.
    pub(in crate::cfa::build) fn element(&self, p: &Place, i: u64, elem: &CType) -> Place {
        match p {
            Place::Obj { obj, idx, .. } => {
                let mut idx = idx.clone();
                idx.push(Expr::Const(i as i128, IntTy::I64));
                Place::Obj { obj: obj.clone(), idx, ty: elem.clone() }
            }
            Place::At { addr, opaque, .. } => Place::At {
                addr: self.pointer_add(addr.clone(), Expr::Const(i as i128, IntTy::I64), elem, false),
                ty: elem.clone(),
                opaque: *opaque,
            },
            Place::Mem(_) => Place::Mem(elem.clone()),
        }
    }

    pub(super) fn read_for_copy(&mut self, p: &Place, span: LSpan) -> Value {
        match p.ty() {
            CType::Array(..) => Value::Void,
            _ => self.read(p, span),
        }
    }

    /// Marks every variable of an object as address-taken. With the memory model, such an
    /// object should have been in memory: the model gives up on the program.
    pub fn escape(&mut self, obj: &Obj) {
        if self.st.dry > 0 {
            return;
        }
        if let Obj::Opaque = obj {
            // A union or float has no variables: its declaration, if it has one, is noted so
            // that the second build puts it in memory.
            if let Some(key) = self.cx.opaque_decls.get(&(obj as *const Obj)).cloned() {
                if self.memory_on() {
                    self.memory_gives_up(LSpan::none(), "the address of an object outside memory is taken");
                }
                self.cx.escaped_keys.insert(key);
            }
            return;
        }
        if self.memory_on() {
            self.memory_gives_up(LSpan::none(), "the address of an object outside memory is taken");
        }
        let mut vars = Vec::new();
        obj.vars(&mut vars);
        self.cx.escaped.extend(vars);
    }
}

/// The most elements of an array member a struct copy in memory writes one by one.
const COPY_LIMIT: u64 = 256;

fn has_anonymous_field(types: &crate::cfa::build::types::TypeTable, sid: usize, name: &str) -> bool {
    let Some(fields) = &types.structs[sid].fields else { return false };
    fields.iter().any(|(n, t)| match t {
        CType::Struct(inner) if n.is_empty() => types.field(*inner, name).is_some() || has_anonymous_field(types, *inner, name),
        _ => false,
    })
}
