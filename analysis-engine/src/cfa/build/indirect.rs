//! Indirect calls: a syntactic pre-pass over the translation unit that finds what calls through
//! function pointers, callbacks handed to external functions and `atexit` handlers may reach,
//! so that the builder can lower them as calls (DESIGN.md, soundness rule 2) instead of
//! dropping them.
//!
//! - The **candidates** of a call through a pointer are the functions used as values anywhere
//!   in the file (`&f`, `f` not in callee position), filtered by the call's type ([`fits`]).
//!   Pointer values are not tracked, so which candidate is called is an over-approximated
//!   choice: a counterexample through it is never confirmed.
//! - A pointer may come from outside the file (an external function returning one, an `extern`
//!   pointer variable never defined here, a pointer reachable from an external's pointer
//!   argument): then the candidates are not known and the call is also `Unsupported`.
//! - **`atexit` handlers** registered by name get small integer ids; registrations push the id
//!   on a synthetic stack (unbounded, as in glibc: C guarantees 32 registrations, glibc takes
//!   any number) and `exit()`/the return from `main` pop and call them (C11 7.22.4.2).
//! - File-scope **signatures** of every function, computed with a throwaway type table, type a
//!   candidate declared only after the call that may reach it (struct types are not comparable
//!   across tables: such candidates are called only once their real declaration is in scope).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use lang_c::ast::{
    CallExpression, Constant, DeclarationSpecifier, Expression, Extension, ExternalDeclaration, StorageClassSpecifier, UnaryOperator,
};
use lang_c::span::{Node, Span};
use lang_c::visit::{self, Visit};

use super::func::MAX_DEPTH;
use super::types::{CType, FuncSig, TypeTable};
use super::{ProgCx, Scope, Sym};
use crate::cfa::DataModel;
use crate::frontend::Parsed;
use crate::ir::VarId;

/// What the pre-pass found, plus the builder's state for `atexit`.
#[derive(Default)]
pub struct Indirect {
    /// Identifiers used as values (not as the callee of a direct call), in source order.
    pub values: Vec<String>,
    /// Handlers registered with `atexit(f)` / `atexit(&f)`: the id of `atexit[k]` is `k + 1`.
    pub atexit: Vec<String>,
    /// File-scope signatures of functions (declared or defined), from a throwaway type table.
    pub sigs: HashMap<String, Rc<FuncSig>>,
    /// Why a function pointer may come from outside the file (the candidates are then not
    /// known): the first such source found.
    pub foreign: Option<String>,
    /// Functions whose parameters may carry function pointers (an entry function called with
    /// arbitrary arguments then calls unknown functions through them).
    pub takes_fn_ptr: HashSet<String>,
    /// `__attribute__((constructor))` functions in the order they run before `main`.
    pub constructors: Vec<String>,
    /// `__attribute__((destructor))` functions in the order they run after the exit handlers.
    pub destructors: Vec<String>,
    /// `f __attribute__((alias("g")))`: calls of `f` are calls of `g`.
    pub aliases: HashMap<String, String>,
    /// Typedef names of `volatile`-qualified types.
    pub volatile_typedefs: HashSet<String>,
    /// Variables that may change at any time (`volatile` objects, global register variables):
    /// a read gives any value.
    pub volatile: HashSet<VarId>,
    /// The synthetic `atexit` stack: its height and its slots, once allocated.
    pub atexit_vars: Option<(VarId, VarId)>,
}

impl Indirect {
    /// The id of a handler registered by name, if the pre-pass saw it registered.
    pub fn handler_id(&self, name: &str) -> Option<usize> {
        self.atexit.iter().position(|n| n == name).map(|k| k + 1)
    }
}

#[derive(Default)]
struct Scan {
    values: Vec<String>,
    seen: HashSet<String>,
    /// Every identifier the file mentions in an expression, callees included.
    mentioned: HashSet<String>,
    atexit: Vec<String>,
    depth: u32,
}

/// `f`, `&f`, `*f`, `(T) f`: the identifier a callee or argument expression names.
pub fn designator(e: &Expression) -> Option<&str> {
    match e {
        Expression::Identifier(id) => Some(&id.node.name),
        Expression::UnaryOperator(u) if matches!(u.node.operator.node, UnaryOperator::Address | UnaryOperator::Indirection) => {
            designator(&u.node.operand.node)
        }
        Expression::Cast(c) => designator(&c.node.expression.node),
        _ => None,
    }
}

impl Scan {
    fn value(&mut self, name: &str) {
        self.mentioned.insert(name.to_string());
        if self.seen.insert(name.to_string()) {
            self.values.push(name.to_string());
        }
    }
}

impl<'ast> Visit<'ast> for Scan {
    fn visit_expression(&mut self, e: &'ast Expression, span: &'ast Span) {
        if self.depth >= MAX_DEPTH {
            return;
        }
        self.depth += 1;
        match e {
            Expression::Identifier(id) => self.value(&id.node.name),
            _ => visit::visit_expression(self, e, span),
        }
        self.depth -= 1;
    }

    fn visit_call_expression(&mut self, c: &'ast CallExpression, span: &'ast Span) {
        match &c.callee.node {
            Expression::Identifier(id) => {
                self.mentioned.insert(id.node.name.clone());
                if matches!(id.node.name.as_str(), "atexit") && c.arguments.len() == 1 {
                    if let Some(h) = designator(&c.arguments[0].node) {
                        if !self.atexit.iter().any(|n| n == h) {
                            self.atexit.push(h.to_string());
                        }
                    }
                }
            }
            _ => self.visit_expression(&c.callee.node, &c.callee.span),
        }
        for a in &c.arguments {
            self.visit_expression(&a.node, &a.span);
        }
        let _ = span;
    }
}

/// The GNU attributes among declaration specifiers and a declarator's extensions.
pub fn attributes<'a>(specs: &'a [Node<DeclarationSpecifier>], exts: &'a [Node<Extension>]) -> Vec<&'a lang_c::ast::Attribute> {
    let mut out = Vec::new();
    let mut add = |es: &'a [Node<Extension>]| {
        for e in es {
            if let Extension::Attribute(a) = &e.node {
                out.push(a);
            }
        }
    };
    for sp in specs {
        if let DeclarationSpecifier::Extension(es) = &sp.node {
            add(es);
        }
    }
    add(exts);
    out
}

/// `name` or `__name__`.
pub fn is_attr(a: &lang_c::ast::Attribute, name: &str) -> bool {
    let n = a.name.node.as_str();
    n == name || n.strip_prefix("__").and_then(|m| m.strip_suffix("__")) == Some(name)
}

/// A constructor's or destructor's priority (none: after every prioritised one).
fn priority(a: &lang_c::ast::Attribute) -> i128 {
    match a.arguments.first().map(|e| &e.node) {
        Some(Expression::Constant(c)) => match &c.node {
            Constant::Integer(i) => i.number.parse().unwrap_or(65535),
            _ => 65535,
        },
        _ => 65535,
    }
}

/// Whether an object of type `t` holds a function pointer itself (as a member, an element or
/// its value), not only behind further pointers (a `FILE *` does not count).
pub fn holds_fn_ptr(types: &TypeTable, t: &CType, depth: u32) -> bool {
    if depth > 8 {
        return true;
    }
    match t {
        CType::Func(_) => true,
        CType::Ptr(p) => matches!(**p, CType::Func(_)),
        CType::Array(p, _) => holds_fn_ptr(types, p, depth + 1),
        CType::Struct(id) => {
            types.structs[*id].fields.as_ref().is_some_and(|fs| fs.iter().any(|(_, ft)| holds_fn_ptr(types, ft, depth + 1)))
        }
        CType::Void | CType::Int(_) | CType::Float(_) => false,
    }
}

/// Whether values of `t` hold a function pointer or point to an object that does.
pub fn has_fn_ptr(types: &TypeTable, t: &CType, depth: u32) -> bool {
    holds_fn_ptr(types, t, depth) || matches!(t, CType::Ptr(inner) if holds_fn_ptr(types, inner, depth + 1))
}

/// Runs the pre-pass.
pub fn scan(parsed: &Parsed, model: DataModel) -> Indirect {
    let mut s = Scan::default();
    s.visit_translation_unit(&parsed.unit);
    let mut out = Indirect { values: std::mem::take(&mut s.values), atexit: std::mem::take(&mut s.atexit), ..Default::default() };
    // File-scope signatures and foreign function pointers, with a throwaway type table.
    let mut cx = ProgCx {
        parsed,
        types: TypeTable::new(model),
        scopes: vec![Scope::default()],
        globals: Vec::new(),
        func_ids: HashMap::new(),
        escaped: BTreeSet::new(),
        notes: Vec::new(),
        asynchronous: None,
        address_taken_funcs: BTreeSet::new(),
        start: None,
        externals: BTreeSet::new(),
        byref: Default::default(),
        indirect: Indirect::default(),
        props: Default::default(),
        bounds_checks: false,
        allocations_may_fail: true,
        mem: None,
        decl_keys: HashMap::new(),
        opaque_decls: HashMap::new(),
        escaped_keys: HashSet::new(),
        alloc_results: HashSet::new(),
        uses_memory: false,
        models: HashMap::new(),
        linked: Vec::new(),
    };
    let mut defined: HashSet<String> = HashSet::new();
    // `extern` objects that may hold function pointers, and whether the file defines them.
    let mut extern_objs: Vec<String> = Vec::new();
    let mut defined_objs: HashSet<String> = HashSet::new();
    // (priority, source order, name) of constructors and destructors.
    let mut ctors: Vec<(i128, usize, String)> = Vec::new();
    let mut dtors: Vec<(i128, usize, String)> = Vec::new();
    let mut note_attrs = |name: &str, attrs: &[&lang_c::ast::Attribute], aliases: &mut HashMap<String, String>| {
        for a in attrs {
            let k = ctors.len() + dtors.len();
            if is_attr(a, "constructor") && !ctors.iter().any(|c| c.2 == name) {
                ctors.push((priority(a), k, name.to_string()));
            } else if is_attr(a, "destructor") && !dtors.iter().any(|c| c.2 == name) {
                dtors.push((priority(a), k, name.to_string()));
            } else if is_attr(a, "alias") {
                if let Some(Expression::StringLiteral(lit)) = a.arguments.first().map(|e| &e.node) {
                    let target: String = super::consts::string_literal(&lit.node).iter().filter_map(|&b| char::from_u32(b)).collect();
                    aliases.insert(name.to_string(), target);
                }
            }
        }
    };
    for ext in &parsed.unit.0 {
        match &ext.node {
            ExternalDeclaration::Declaration(d) => {
                let specs = &d.node.specifiers;
                for id in &d.node.declarators {
                    if let Some(n) = super::declarator_name(&id.node.declarator.node) {
                        note_attrs(&n, &attributes(specs, &id.node.declarator.node.extensions), &mut out.aliases);
                    }
                }
                let Ok(base) = cx.decl_base_type(specs, d.span) else { continue };
                let typedef = ProgCx::is_typedef_decl(specs);
                let is_extern = specs
                    .iter()
                    .any(|s| matches!(&s.node, DeclarationSpecifier::StorageClass(c) if c.node == StorageClassSpecifier::Extern));
                for id in &d.node.declarators {
                    let Ok((Some(name), ty, _)) = cx.declarator(base.clone(), &id.node.declarator.node) else { continue };
                    if typedef {
                        cx.declare(name, Sym::Typedef(ty));
                    } else if let CType::Func(sig) = ty {
                        cx.declare(name.clone(), Sym::Func(name.clone(), sig.clone()));
                        out.sigs.entry(name).or_insert(sig);
                    } else if has_fn_ptr(&cx.types, &ty, 0) {
                        if is_extern && id.node.initializer.is_none() {
                            extern_objs.push(name);
                        } else {
                            defined_objs.insert(name);
                        }
                    }
                }
            }
            ExternalDeclaration::FunctionDefinition(fd) => {
                let Ok(base) = cx.decl_base_type(&fd.node.specifiers, fd.span) else { continue };
                let Ok((Some(name), CType::Func(sig), _)) = cx.declarator(base, &fd.node.declarator.node) else { continue };
                note_attrs(&name, &attributes(&fd.node.specifiers, &fd.node.declarator.node.extensions), &mut out.aliases);
                cx.declare(name.clone(), Sym::Func(name.clone(), sig.clone()));
                out.sigs.insert(name.clone(), sig);
                defined.insert(name);
            }
            ExternalDeclaration::StaticAssert(_) => {}
        }
    }
    // Constructors by increasing priority, destructors by decreasing priority; ties in source
    // order for constructors and the reverse for destructors (`.init_array`/`.fini_array`).
    ctors.sort();
    dtors.sort_by_key(|d| std::cmp::Reverse((d.0, d.1)));
    out.constructors = ctors.into_iter().map(|c| c.2).filter(|n| defined.contains(n)).collect();
    out.destructors = dtors.into_iter().map(|c| c.2).filter(|n| defined.contains(n)).collect();
    let mut names: Vec<&String> = out.sigs.keys().collect();
    names.sort();
    for name in names {
        let sig = &out.sigs[name];
        if sig.params.iter().any(|p| has_fn_ptr(&cx.types, p, 0)) {
            out.takes_fn_ptr.insert(name.clone());
        }
        if defined.contains(name) {
            continue;
        }
        // An external function that returns a function pointer, or may store one where a
        // pointer argument points.
        let returns = has_fn_ptr(&cx.types, &sig.ret, 0);
        let writes = sig
            .params
            .iter()
            .any(|p| matches!(p, CType::Ptr(inner) if !matches!(**inner, CType::Func(_)) && holds_fn_ptr(&cx.types, inner, 0)));
        if (returns || writes) && out.foreign.is_none() && s.mentioned.contains(name) {
            out.foreign = Some(format!("`{}` may give a pointer to a function outside the file", name));
        }
    }
    if out.foreign.is_none() {
        if let Some(o) = extern_objs.iter().find(|o| !defined_objs.contains(*o) && s.mentioned.contains(*o)) {
            out.foreign = Some(format!("`extern` object `{}` may hold a pointer to a function outside the file", o));
        }
    }
    out
}

/// The kind of a type as far as calling through a mismatched pointer goes.
#[derive(PartialEq)]
enum Kind {
    Void,
    Scalar,
    Float,
    Struct,
}

fn kind(t: &CType) -> Kind {
    match t {
        CType::Void => Kind::Void,
        CType::Int(_) | CType::Ptr(_) | CType::Array(..) | CType::Func(_) => Kind::Scalar,
        CType::Float(_) => Kind::Float,
        CType::Struct(_) => Kind::Struct,
    }
}

/// Whether a function of signature `cand` may be what a call with `nargs` arguments through a
/// pointer of signature `site` calls. Lenient (an over-approximation of the candidates): any
/// two scalar types match, unprototyped declarations match any arity, return types only need
/// to agree on being a struct or a float. `nargs == usize::MAX` without `site` accepts every
/// function.
pub fn fits(site: Option<&FuncSig>, nargs: usize, cand: &FuncSig) -> bool {
    // Any arity (callbacks reached through memory): every function fits.
    let arity = if nargs == usize::MAX || (cand.unprototyped && cand.params.is_empty()) {
        true
    } else if cand.variadic {
        nargs >= cand.params.len()
    } else {
        nargs == cand.params.len()
    };
    if !arity {
        return false;
    }
    let Some(site) = site else { return true };
    let (sr, cr) = (kind(&site.ret), kind(&cand.ret));
    if sr != cr && (matches!(sr, Kind::Struct | Kind::Float) || matches!(cr, Kind::Struct | Kind::Float)) {
        return false;
    }
    if site.unprototyped || cand.unprototyped {
        return true;
    }
    site.params.iter().zip(&cand.params).all(|(a, b)| kind(a) == kind(b))
}

/// Whether a signature mentions a struct (its ids are only meaningful in its own type table).
pub fn mentions_struct(sig: &FuncSig) -> bool {
    fn has(t: &CType) -> bool {
        match t {
            CType::Struct(_) => true,
            CType::Ptr(p) | CType::Array(p, _) => has(p),
            CType::Func(s) => mentions_struct(s),
            _ => false,
        }
    }
    has(&sig.ret) || sig.params.iter().any(has)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::IntTy;

    fn sig(ret: CType, params: Vec<CType>) -> FuncSig {
        FuncSig { ret, params, variadic: false, unprototyped: false }
    }

    #[test]
    fn candidates_match_by_arity_and_kind() {
        let int = CType::Int(IntTy::INT);
        let ptr = CType::Ptr(Box::new(CType::Void));
        let site = sig(CType::Void, vec![int.clone()]);
        assert!(fits(Some(&site), 1, &sig(CType::Void, vec![int.clone()])));
        // Any two scalars match (an `unsigned` parameter, a pointer in ILP32 code).
        assert!(fits(Some(&site), 1, &sig(int.clone(), vec![ptr.clone()])));
        assert!(!fits(Some(&site), 1, &sig(CType::Void, vec![int.clone(), int.clone()])));
        assert!(!fits(Some(&site), 1, &sig(CType::Void, vec![CType::Float(8)])));
        // `void f()` without a prototype takes any arguments.
        let unproto = FuncSig { ret: CType::Void, params: vec![], variadic: false, unprototyped: true };
        assert!(fits(Some(&site), 1, &unproto));
        assert!(fits(None, 3, &unproto));
    }
}
