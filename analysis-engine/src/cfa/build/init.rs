//! Declarations and initialisers: typedefs, prototypes, globals (zero-initialised, then their
//! initialisers, in the start function), static locals, automatic locals (uninitialised ones
//! get arbitrary values), initialiser lists with designators and brace elision, and string
//! initialisers of `char` arrays.

use std::rc::Rc;

use lang_c::ast::{Declaration, Designator, Expression, Initializer, InitializerListItem, StorageClassSpecifier};
use lang_c::span::{Node, Span as LSpan};

use super::expr::{Place, Value};
use super::func::FnBuilder;
use super::types::{CType, Obj};
use super::{consts, Alloc, BResult, ProgCx, Store, Sym};
use crate::cfa::EdgeKind;
use crate::ir::{Expr, InputSource, IntTy, LValue, Stmt, VarId};

pub(super) fn declaration(b: &mut FnBuilder, d: &Node<Declaration>, store: Store) -> BResult<()> {
    let specs = &d.node.specifiers;
    let base = b.cx.decl_base_type(specs, d.span)?;
    if ProgCx::is_typedef_decl(specs) {
        for id in &d.node.declarators {
            let (n, t, _) = b.cx.declarator(base.clone(), &id.node.declarator.node)?;
            if let Some(n) = n {
                b.cx.declare(n, Sym::Typedef(t));
            }
        }
        return Ok(());
    }
    let storage = ProgCx::storage(specs);
    for id in &d.node.declarators {
        let (name, ty, _) = b.cx.declarator(base.clone(), &id.node.declarator.node)?;
        let Some(name) = name else { continue };
        if let CType::Func(sig) = &ty {
            b.cx.declare(name.clone(), Sym::Func(name, sig.clone()));
            continue;
        }
        let init = id.node.initializer.as_ref();
        // The size of `int a[] = {…}` and `char s[] = "…"` comes from the initialiser.
        let ty = complete_array_type(b, ty, init);
        let is_extern = storage == Some(StorageClassSpecifier::Extern);
        let is_static = storage == Some(StorageClassSpecifier::Static);
        let key = (id.node.declarator.span.start, name.clone());
        if b.in_memory(&key) && !(store == Store::Local && is_extern) {
            in_memory(b, name, ty, init, store, is_extern, is_static, id.span)?;
            continue;
        }
        match store {
            Store::Global => global(b, name, ty, init, is_extern, id.span, key)?,
            Store::Local if is_extern => {
                // Refers to a global; declare it at file scope if nobody did.
                let existing = b.cx.scopes[0].ordinary.get(&name).cloned();
                match existing {
                    Some(sym @ (Sym::Var(..) | Sym::At(..))) => b.cx.declare(name, sym),
                    _ => {
                        let obj = Rc::new(b.cx.alloc_obj(
                            &mut Vec::new(),
                            Alloc { func: b.st.func, store: Store::Global, synthetic: false },
                            &name,
                            &ty,
                            &[],
                        )?);
                        b.cx.scopes[0].ordinary.insert(name.clone(), Sym::Var(obj.clone(), ty.clone()));
                        b.cx.declare(name, Sym::Var(obj, ty));
                    }
                }
            }
            Store::Local if is_static => {
                // A static local lives in a global initialised before the entry runs.
                let gname = format!("{}::{}", b.st.name, name);
                let obj = Rc::new(b.cx.alloc_obj(
                    &mut Vec::new(),
                    Alloc { func: b.st.func, store: Store::Global, synthetic: false },
                    &gname,
                    &ty,
                    &[],
                )?);
                b.record_declaration(&obj, key);
                b.cx.declare(name, Sym::Var(obj.clone(), ty.clone()));
                in_start(b, |sb| {
                    let p = Place::Obj { obj, idx: Vec::new(), ty: ty.clone() };
                    zero_fill(sb, &p, &ty, id.span);
                    match init {
                        Some(i) => initialize(sb, &p, &ty, i),
                        None => Ok(()),
                    }
                })?;
            }
            Store::Local => {
                let obj = Rc::new(b.alloc(&name, &ty, Store::Local, false)?);
                b.record_declaration(&obj, key);
                let p = Place::Obj { obj: obj.clone(), idx: Vec::new(), ty: ty.clone() };
                match init {
                    Some(i) => {
                        // In scope inside its own initialiser, as in C.
                        b.cx.declare(name.clone(), Sym::Var(obj.clone(), ty.clone()));
                        initialize_at(b, &p, &ty, i, id.span)?;
                        if let (Obj::Scalar(v), CType::Ptr(elem)) = (&*obj, &ty) {
                            record_block(b, *v, &name, elem, i);
                        }
                    }
                    None => {
                        uninitialised(b, &obj, id.span);
                        b.cx.declare(name, Sym::Var(obj, ty));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Records that the local pointer `v` (named `name`) holds an allocated block of a constant
/// number of elements, when its initialiser allocates one and the body never changes it
/// ([`super::blocks`]): its subscripts are then bounds-checked.
fn record_block(b: &mut FnBuilder, v: VarId, name: &str, elem: &CType, init: &Node<Initializer>) {
    let Initializer::Expression(e) = &init.node else { return };
    let Some((f, call)) = super::blocks::allocation(&e.node) else { return };
    // The program's own `malloc` may do anything.
    if b.cx.func_ids.contains_key(f) || b.st.modified.as_ref().is_none_or(|m| m.contains(name)) {
        return;
    }
    let mut size = |k: usize| consts::eval(b.cx, &call.arguments[k].node);
    let bytes = match f {
        "malloc" => size(0),
        _ => size(0).zip(size(1)).and_then(|(n, s)| n.checked_mul(s)),
    };
    let Some(unit) = b.cx.types.size_of(elem).filter(|&s| s > 0) else { return };
    if let Some(bytes) = bytes.filter(|&n| n >= 0).and_then(|n| u64::try_from(n).ok()) {
        b.st.blocks.insert(v, bytes / unit);
    }
}

/// Runs `f` with the start function as the builder's target (for static storage).
fn in_start(b: &mut FnBuilder, f: impl FnOnce(&mut FnBuilder) -> BResult<()>) -> BResult<()> {
    let Some(mut start) = b.cx.start.take() else {
        // Already building the start function.
        return f(b);
    };
    std::mem::swap(b.st, &mut start);
    let r = f(b);
    std::mem::swap(b.st, &mut start);
    b.cx.start = Some(start);
    r
}

/// A declaration whose object lives in memory (the memory model): a global, a static local
/// or an automatic one. Static storage is zeroed and initialised by the start function.
#[allow(clippy::too_many_arguments)]
fn in_memory(
    b: &mut FnBuilder,
    name: String,
    ty: CType,
    init: Option<&Node<Initializer>>,
    store: Store,
    is_extern: bool,
    is_static: bool,
    span: LSpan,
) -> BResult<()> {
    if store == Store::Global {
        if let Some(Sym::At(addr, old)) = b.cx.scopes[0].ordinary.get(&name).cloned() {
            // Declared before: the same object (a completed array type replaces an incomplete one).
            let t = if matches!(old, CType::Array(_, None)) { ty } else { old };
            b.cx.declare(name, Sym::At(addr.clone(), t.clone()));
            if let Some(i) = init {
                let p = Place::At { addr, ty: t.clone(), opaque: false };
                in_start(b, |sb| initialize(sb, &p, &t, i))?;
            }
            return Ok(());
        }
    }
    let addr = b.memory_object(&name, &ty, span);
    let p = Place::At { addr: addr.clone(), ty: ty.clone(), opaque: false };
    b.cx.declare(name.clone(), Sym::At(addr, ty.clone()));
    if store == Store::Global || is_static {
        return in_start(b, |sb| {
            if is_extern && init.is_none() {
                sb.arbitrary_in_memory(&p, &ty, InputSource::ExternObject(name), span);
            } else {
                sb.zero_in_memory(&p, &ty, span);
            }
            match init {
                Some(i) => initialize(sb, &p, &ty, i),
                None => Ok(()),
            }
        });
    }
    b.automatic_in_memory();
    match init {
        Some(i) => initialize_at(b, &p, &ty, i, span),
        None => {
            b.arbitrary_in_memory(&p, &ty, InputSource::Uninitialised, span);
            Ok(())
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn global(
    b: &mut FnBuilder,
    name: String,
    ty: CType,
    init: Option<&Node<Initializer>>,
    is_extern: bool,
    span: LSpan,
    key: super::memory::DeclKey,
) -> BResult<()> {
    let existing = match b.cx.scopes[0].ordinary.get(&name) {
        Some(Sym::Var(obj, t)) => Some((obj.clone(), t.clone())),
        _ => None,
    };
    let (obj, ty, fresh) = match existing {
        // A tentative definition or `extern` declaration seen before: same object. A completed
        // array type replaces an incomplete one.
        Some((obj, old)) => {
            let t = if matches!(old, CType::Array(_, None)) { ty } else { old };
            (obj, t, false)
        }
        None => {
            let obj = Rc::new(b.cx.alloc_obj(
                &mut Vec::new(),
                Alloc { func: b.st.func, store: Store::Global, synthetic: false },
                &name,
                &ty,
                &[],
            )?);
            b.record_declaration(&obj, key);
            (obj, ty, true)
        }
    };
    b.cx.declare(name, Sym::Var(obj.clone(), ty.clone()));
    let p = Place::Obj { obj: obj.clone(), idx: Vec::new(), ty: ty.clone() };
    in_start(b, |sb| {
        if fresh {
            if is_extern && init.is_none() {
                // Defined elsewhere: its value is whatever the environment put there.
                external_value(sb, &obj, span);
            } else {
                zero_fill(sb, &p, &ty, span);
            }
        }
        match init {
            Some(i) => {
                if !fresh && is_extern {
                    zero_fill(sb, &p, &ty, span);
                }
                initialize(sb, &p, &ty, i)
            }
            None => Ok(()),
        }
    })
}

fn complete_array_type(b: &mut FnBuilder, ty: CType, init: Option<&Node<Initializer>>) -> CType {
    let CType::Array(elem, None) = &ty else { return ty };
    let n = match init.map(|i| &i.node) {
        Some(Initializer::List(items)) => {
            let mut max = 0u64;
            let mut pos = 0u64;
            for it in items {
                if let Some(Designator::Index(e)) = it.node.designation.first().map(|d| &d.node) {
                    if let Some(v) = super::consts::eval(b.cx, &e.node) {
                        pos = v.max(0) as u64;
                    }
                }
                if let Some(Designator::Range(r)) = it.node.designation.first().map(|d| &d.node) {
                    if let Some(v) = super::consts::eval(b.cx, &r.node.to.node) {
                        pos = v.max(0) as u64;
                    }
                }
                pos += 1;
                max = max.max(pos);
            }
            Some(max)
        }
        Some(Initializer::Expression(e)) => match &e.node {
            Expression::StringLiteral(s) => Some(super::consts::string_literal(&s.node).len() as u64 + 1),
            _ => None,
        },
        None => None,
    };
    match n {
        Some(n) => CType::Array(elem.clone(), Some(n)),
        None => ty,
    }
}

/// An automatic variable without initialiser holds arbitrary values.
fn uninitialised(b: &mut FnBuilder, obj: &Obj, span: LSpan) {
    let sp = b.span(span);
    let mut vars = Vec::new();
    obj.vars(&mut vars);
    for v in vars {
        let is_array = matches!(
            if v.func().is_some() { &b.st.locals[v.index()].kind } else { &b.cx.globals[v.index()].kind },
            crate::ir::VarKind::Array { .. }
        );
        let s = if is_array {
            Stmt::InitArray { var: v, zero: false }
        } else {
            Stmt::Input { lhs: LValue::Var(v), source: InputSource::Uninitialised }
        };
        b.emit(EdgeKind::Declaration(s), sp);
    }
}

fn external_value(b: &mut FnBuilder, obj: &Obj, span: LSpan) {
    let sp = b.span(span);
    let mut vars = Vec::new();
    obj.vars(&mut vars);
    for v in vars {
        let info = &b.cx.globals[v.index()];
        let s = match info.kind {
            crate::ir::VarKind::Array { .. } => Stmt::InitArray { var: v, zero: false },
            _ => Stmt::Input { lhs: LValue::Var(v), source: InputSource::ExternObject(info.name.clone()) },
        };
        b.emit(EdgeKind::Declaration(s), sp);
    }
}

/// Sets an object of static storage, or one with an initialiser list, to zero (C11 6.7.9p10
/// and p21): every scalar and every array element it is flattened into, arrays of structs
/// (one array variable per field) included. Unions and floats are opaque and stay so.
fn zero_fill(b: &mut FnBuilder, p: &Place, ty: &CType, span: LSpan) {
    if let Place::At { .. } = p {
        return b.zero_in_memory(p, ty, span);
    }
    let Place::Obj { obj, idx, .. } = p else { return };
    let sp = b.span(span);
    if idx.is_empty() {
        // A whole object: each of its variables.
        let mut vars = Vec::new();
        obj.vars(&mut vars);
        for v in vars {
            let info = if v.func().is_some() { &b.st.locals[v.index()] } else { &b.cx.globals[v.index()] };
            let s = match info.kind {
                crate::ir::VarKind::Array { .. } => Stmt::InitArray { var: v, zero: true },
                crate::ir::VarKind::Int(it) => Stmt::Assign(LValue::Var(v), Expr::Const(0, it)),
            };
            b.emit(EdgeKind::Declaration(s), sp);
        }
        return;
    }
    // A sub-object of an array (an element, or an element's member): element by element.
    match (&**obj, ty) {
        (_, CType::Array(elem, Some(n))) if *n <= ZERO_FILL_LIMIT => {
            for i in 0..*n {
                let sub = index_place(b, p, i as i128, elem);
                zero_fill(b, &sub, elem, span);
            }
        }
        (_, CType::Array(..)) => {
            // Too many elements to write one by one: their values are not modelled.
            b.note(span, "zero-initialisation of a large nested array is not modelled");
            b.stmt_edge(Stmt::Unsupported("zero-initialisation of a large nested array".into()), sp);
        }
        (Obj::Array(..), t) if t.is_integer_like() => {
            let _ = b.write(p, Value::Int(Expr::int(0), CType::Int(IntTy::INT)), span);
        }
        (Obj::Struct(fields), CType::Struct(sid)) => {
            let defs = b.cx.types.structs[*sid].fields.clone().unwrap_or_default();
            for (fname, fty) in defs {
                let fobj = fields.iter().find(|(n, _)| *n == fname).map(|(_, o)| o.clone());
                if let Some(fo) = fobj {
                    let sub = Place::Obj { obj: fo, idx: idx.clone(), ty: fty.clone() };
                    zero_fill(b, &sub, &fty, span);
                }
            }
        }
        _ => {}
    }
}

/// The most elements of a nested array [`zero_fill`] writes one by one.
const ZERO_FILL_LIMIT: u64 = 4096;

fn index_place(b: &FnBuilder, p: &Place, i: i128, elem: &CType) -> Place {
    match p {
        Place::At { .. } => b.element(p, i as u64, elem),
        Place::Obj { obj, idx, .. } => {
            let mut idx = idx.clone();
            idx.push(Expr::Const(i, IntTy::I64));
            Place::Obj { obj: obj.clone(), idx, ty: elem.clone() }
        }
        Place::Mem(_) => Place::Mem(elem.clone()),
    }
}

fn field_place(b: &FnBuilder, p: &Place, sid: usize, k: usize) -> Option<(Place, CType)> {
    let fields = b.cx.types.structs[sid].fields.as_ref()?;
    let (fname, fty) = fields.get(k)?;
    Some(match p {
        Place::At { .. } => (b.member(p, sid, k, fname, fty), fty.clone()),
        Place::Obj { obj, idx, .. } => {
            // By index: anonymous members all have the empty name.
            let fo = match &**obj {
                Obj::Struct(fs) => fs.get(k).map(|(_, o)| o.clone()),
                _ => None,
            };
            let fo = fo.unwrap_or_else(|| if fname.is_empty() { obj.clone() } else { Rc::new(Obj::Opaque) });
            (Place::Obj { obj: fo, idx: idx.clone(), ty: fty.clone() }, fty.clone())
        }
        Place::Mem(_) => (Place::Mem(fty.clone()), fty.clone()),
    })
}

fn is_aggregate(ty: &CType) -> bool {
    matches!(ty, CType::Array(..) | CType::Struct(_))
}

/// Initialises an object from its initialiser.
pub(super) fn initialize(b: &mut FnBuilder, p: &Place, ty: &CType, init: &Node<Initializer>) -> BResult<()> {
    initialize_at(b, p, ty, init, init.span)
}

/// Like [`initialize`], attributing scalar writes to `span` (the whole declarator).
fn initialize_at(b: &mut FnBuilder, p: &Place, ty: &CType, init: &Node<Initializer>, span: LSpan) -> BResult<()> {
    match &init.node {
        Initializer::List(items) => init_list(b, p, ty, items, init.span),
        Initializer::Expression(e) => init_expr(b, p, ty, e, span),
    }
}

fn init_expr(b: &mut FnBuilder, p: &Place, ty: &CType, e: &Node<Expression>, span: LSpan) -> BResult<()> {
    if let (CType::Array(elem, n), Expression::StringLiteral(s)) = (ty, &e.node) {
        let bytes = super::consts::string_literal(&s.node);
        let it = b.cx.types.int_of(elem).unwrap_or(IntTy::I8);
        zero_fill(b, p, ty, e.span);
        let limit = n.unwrap_or(bytes.len() as u64 + 1);
        for (i, ch) in bytes.iter().enumerate().take(limit as usize) {
            let sub = index_place(b, p, i as i128, elem);
            b.write(&sub, Value::Int(Expr::Const(it.wrap(*ch as i128), it), CType::Int(it)), e.span)?;
        }
        return Ok(());
    }
    if let Expression::Call(c) = &e.node {
        if ty.is_scalar() {
            let v = b.call(c, span, Some(p))?;
            if let Value::Void = v {
                return Ok(());
            }
            return b.write(p, v, span);
        }
    }
    let v = b.value(e)?;
    b.write(p, v, span)
}

/// A braced initialiser list: zero the object, then assign the listed members.
pub(super) fn init_list(b: &mut FnBuilder, p: &Place, ty: &CType, items: &[Node<InitializerListItem>], span: LSpan) -> BResult<()> {
    zero_fill(b, p, ty, span);
    if !is_aggregate(ty) {
        if let Some(first) = items.first() {
            return initialize(b, p, ty, &first.node.initializer);
        }
        return Ok(());
    }
    let mut k = 0;
    fill(b, p, ty, items, &mut k, true)
}

/// Fills the sub-objects of `p` from `items[*k..]`. With `braced`, this object owns the list
/// (designators allowed, all items consumed); otherwise it takes only what it needs (brace
/// elision) and stops at a designator.
fn fill(b: &mut FnBuilder, p: &Place, ty: &CType, items: &[Node<InitializerListItem>], k: &mut usize, braced: bool) -> BResult<()> {
    fill_at(b, p, ty, items, k, braced, 0)
}

/// [`fill`] from the sub-object at `start`: after a designator, positional initialisers
/// continue with the sub-objects that follow the designated one (C11 6.7.9p17).
fn fill_at(
    b: &mut FnBuilder,
    p: &Place,
    ty: &CType,
    items: &[Node<InitializerListItem>],
    k: &mut usize,
    braced: bool,
    start: u64,
) -> BResult<()> {
    let count: Option<u64> = match ty {
        CType::Array(_, n) => *n,
        CType::Struct(sid) => {
            if b.cx.types.structs[*sid].union {
                Some(1)
            } else {
                b.cx.types.structs[*sid].fields.as_ref().map(|f| f.len() as u64)
            }
        }
        _ => Some(1),
    };
    let mut cursor: u64 = start;
    while *k < items.len() {
        let item = &items[*k].node;
        let mut via_anonymous = false;
        if let Some(d) = item.designation.first() {
            if !braced {
                return Ok(());
            }
            cursor = match (&d.node, ty) {
                (Designator::Index(e), CType::Array(..)) => super::consts::eval(b.cx, &e.node).unwrap_or(0).max(0) as u64,
                (Designator::Range(r), CType::Array(..)) => super::consts::eval(b.cx, &r.node.from.node).unwrap_or(0).max(0) as u64,
                (Designator::Member(m), CType::Struct(sid)) => {
                    let fields = b.cx.types.structs[*sid].fields.clone().unwrap_or_default();
                    match fields.iter().position(|(n, _)| *n == m.node.name) {
                        Some(i) => i as u64,
                        None => match anonymous_holder(b, *sid, &m.node.name) {
                            Some(i) => {
                                via_anonymous = true;
                                i as u64
                            }
                            None => return Err(b.err(m.span, format!("no member named `{}`", m.node.name))),
                        },
                    }
                }
                _ => return Err(b.err(d.span, "designator does not match the initialised type")),
            };
            if let (Designator::Range(r), CType::Array(elem, _)) = (&d.node, ty) {
                let hi = super::consts::eval(b.cx, &r.node.to.node).unwrap_or(cursor as i128).max(0) as u64;
                for i in cursor..=hi.min(cursor + 4096) {
                    let sub = index_place(b, p, i as i128, elem);
                    designated(b, &sub, elem, &item.designation[1..], &item.initializer)?;
                }
                *k += 1;
                cursor = hi + 1;
                continue;
            }
        } else if count.is_some_and(|c| cursor >= c) {
            if braced {
                // Excess initialisers: ignored by the object (gcc warns).
                *k += 1;
                continue;
            }
            return Ok(());
        }
        let (sub, sub_ty) = match ty {
            CType::Array(elem, _) => (index_place(b, p, cursor as i128, elem), (**elem).clone()),
            CType::Struct(sid) => match field_place(b, p, *sid, cursor as usize) {
                Some(x) => x,
                None => {
                    *k += 1;
                    continue;
                }
            },
            _ => return Ok(()),
        };
        if via_anonymous {
            // `.m` of a member of an anonymous struct or union: `.<anonymous>.m`.
            designate(b, &sub, &sub_ty, &item.designation, items, k)?;
        } else if !item.designation.is_empty() && item.designation.len() > 1 {
            designate(b, &sub, &sub_ty, &item.designation[1..], items, k)?;
        } else {
            match &item.initializer.node {
                Initializer::List(list) => {
                    init_list(b, &sub, &sub_ty, list, item.initializer.span)?;
                    *k += 1;
                }
                Initializer::Expression(e) => {
                    let elide = is_aggregate(&sub_ty)
                        && !matches!((&sub_ty, &e.node), (CType::Array(..), Expression::StringLiteral(_)))
                        && !matches!(sub_ty, CType::Struct(_) if is_struct_valued(b, e)?);
                    if elide {
                        fill(b, &sub, &sub_ty, items, k, false)?;
                    } else {
                        init_expr(b, &sub, &sub_ty, e, e.span)?;
                        *k += 1;
                    }
                }
            }
        }
        cursor += 1;
        if !braced && count.is_some_and(|c| cursor >= c) {
            return Ok(());
        }
    }
    Ok(())
}

fn is_struct_valued(b: &mut FnBuilder, e: &Node<Expression>) -> BResult<bool> {
    Ok(matches!(b.type_of(e)?, CType::Struct(_)))
}

/// The index of the anonymous struct or union member of struct `sid` that has a member `name`
/// (C11 6.7.2.1p13), directly or in a further anonymous member.
fn anonymous_holder(b: &FnBuilder, sid: usize, name: &str) -> Option<usize> {
    fn has(types: &super::types::TypeTable, sid: usize, name: &str) -> bool {
        types.structs[sid]
            .fields
            .as_ref()
            .is_some_and(|fs| fs.iter().any(|(n, t)| n == name || (n.is_empty() && matches!(t, CType::Struct(i) if has(types, *i, name)))))
    }
    let fields = b.cx.types.structs[sid].fields.as_ref()?;
    fields.iter().position(|(n, t)| n.is_empty() && matches!(t, CType::Struct(i) if has(&b.cx.types, *i, name)))
}

/// The designators `rest` of `items[*k]` applied inside the current object `p`: follows them,
/// initialises, then continues with the positional initialisers that follow, in `p` after the
/// designated sub-object (the caller continues after `p`). Consumes the items it initialises.
fn designate(
    b: &mut FnBuilder,
    p: &Place,
    ty: &CType,
    rest: &[Node<Designator>],
    items: &[Node<InitializerListItem>],
    k: &mut usize,
) -> BResult<()> {
    let Some(d) = rest.first() else {
        initialize(b, p, ty, &items[*k].node.initializer)?;
        *k += 1;
        return Ok(());
    };
    let (sub, sub_ty, idx, consumed) = match (&d.node, ty) {
        (Designator::Index(e), CType::Array(elem, _)) => {
            let i = super::consts::eval(b.cx, &e.node).unwrap_or(0).max(0);
            (index_place(b, p, i, elem), (**elem).clone(), i as u64, true)
        }
        (Designator::Member(m), CType::Struct(sid)) => {
            let fields = b.cx.types.structs[*sid].fields.clone().unwrap_or_default();
            let (i, consumed) = match fields.iter().position(|(n, _)| *n == m.node.name) {
                Some(i) => (i, true),
                // A member of an anonymous member: enter the anonymous member first.
                None => match anonymous_holder(b, *sid, &m.node.name) {
                    Some(i) => (i, false),
                    None => return Err(b.err(m.span, format!("no member named `{}`", m.node.name))),
                },
            };
            let (sub, sty) = field_place(b, p, *sid, i).expect("field exists");
            (sub, sty, i as u64, consumed)
        }
        _ => return Err(b.err(d.span, "designator does not match the initialised type")),
    };
    designate(b, &sub, &sub_ty, if consumed { &rest[1..] } else { rest }, items, k)?;
    fill_at(b, p, ty, items, k, false, idx + 1)
}

/// `.a.b[2] = v`: follows the remaining designators, then initialises.
fn designated(b: &mut FnBuilder, p: &Place, ty: &CType, rest: &[Node<Designator>], init: &Node<Initializer>) -> BResult<()> {
    let Some(d) = rest.first() else { return initialize(b, p, ty, init) };
    match (&d.node, ty) {
        (Designator::Index(e), CType::Array(elem, _)) => {
            let i = super::consts::eval(b.cx, &e.node).unwrap_or(0);
            let sub = index_place(b, p, i, elem);
            designated(b, &sub, elem, &rest[1..], init)
        }
        (Designator::Member(m), CType::Struct(sid)) => {
            let fields = b.cx.types.structs[*sid].fields.clone().unwrap_or_default();
            let Some(i) = fields.iter().position(|(n, _)| *n == m.node.name) else {
                let Some(i) = anonymous_holder(b, *sid, &m.node.name) else {
                    return Err(b.err(m.span, format!("no member named `{}`", m.node.name)));
                };
                let (sub, sty) = field_place(b, p, *sid, i).expect("field exists");
                return designated(b, &sub, &sty, rest, init);
            };
            let (sub, sty) = field_place(b, p, *sid, i).expect("field exists");
            designated(b, &sub, &sty, &rest[1..], init)
        }
        _ => Err(b.err(d.span, "designator does not match the initialised type")),
    }
}
