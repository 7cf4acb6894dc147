//! By-reference struct parameters: a syntactic pre-pass over the translation unit that finds
//! the parameters `struct S *p` which the CFA builder may lower as copy-in/copy-out, so that
//! `p->field` in the callee is a variable instead of a read through an unknown pointer.
//!
//! A parameter qualifies when the callee uses `p` only as `p->m`, as `*p`, or as an argument
//! in a qualifying position of another call, and every call passes, in that position, either
//! `&x` for an automatic local struct `x` whose address is taken nowhere else, or a qualifying
//! parameter of the caller. Then the pointee is reachable from nowhere but `p` while the call
//! runs (no other pointer, no global name, no other frame), so passing its fields in and
//! copying them back at the return is exact. Two qualifying arguments of one call never
//! denote the same object. The decision is syntactic; the builder checks the types (a pointer
//! to a complete struct without arrays) at the definition and at each call alike.

use std::collections::{BTreeSet, HashMap, HashSet};

use lang_c::ast::{
    Declaration, DeclarationSpecifier, Declarator, DeclaratorKind, DerivedDeclarator, Expression, ExternalDeclaration, FunctionDefinition,
    MemberOperator, StorageClassSpecifier, StructKind, TranslationUnit, TypeSpecifier, UnaryOperator,
};
use lang_c::span::Span;
use lang_c::visit::{self, Visit};

use super::func::MAX_DEPTH;

/// `(function, parameter index)` pairs passed by reference.
pub type ByRef = BTreeSet<(String, usize)>;

/// The shape of a call argument, as far as the pre-pass cares.
enum Arg {
    /// `&x`
    AddrOf(String),
    /// `q`
    Ident(String),
    Other,
}

struct CallFact {
    callee: String,
    args: Vec<Arg>,
    /// The callee was declared with a prototype (or defined) before the calling function.
    prototyped: bool,
}

/// What one body (or the file scope's initialisers) does with names.
#[derive(Default)]
struct Facts {
    calls: Vec<CallFact>,
    /// Identifiers used as values anywhere but the allowed shapes.
    used: HashSet<String>,
    /// Identifiers inside the operand of `&` other than a call argument `&x`.
    addressed: HashSet<String>,
    /// Names declared in the body: how often, and whether every declaration is automatic.
    declared: HashMap<String, (u32, bool)>,
    /// Functions known with a prototype when the body starts.
    known: HashSet<String>,
    in_address: u32,
    /// Nesting of the node being visited: beyond the builder's limit the visit stops and
    /// nothing is passed by reference (the builder refuses such input anyway).
    depth: u32,
    too_deep: bool,
}

impl Facts {
    fn ident(e: &Expression) -> Option<&str> {
        match e {
            Expression::Identifier(id) => Some(&id.node.name),
            _ => None,
        }
    }

    fn expression<'ast>(&mut self, e: &'ast Expression, span: &'ast Span) {
        match e {
            Expression::Identifier(id) => {
                self.used.insert(id.node.name.clone());
                if self.in_address > 0 {
                    self.addressed.insert(id.node.name.clone());
                }
            }
            Expression::Member(m)
                if m.node.operator.node == MemberOperator::Indirect
                    && self.in_address == 0
                    && Self::ident(&m.node.expression.node).is_some() => {}
            Expression::UnaryOperator(u)
                if u.node.operator.node == UnaryOperator::Indirection
                    && self.in_address == 0
                    && Self::ident(&u.node.operand.node).is_some() => {}
            Expression::UnaryOperator(u) if u.node.operator.node == UnaryOperator::Address => {
                self.in_address += 1;
                visit::visit_expression(self, e, span);
                self.in_address -= 1;
            }
            Expression::Call(c) => {
                let Some(callee) = Self::ident(&c.node.callee.node) else {
                    return visit::visit_expression(self, e, span);
                };
                let mut args = Vec::new();
                for a in &c.node.arguments {
                    let shape = match &a.node {
                        Expression::Identifier(id) if self.in_address == 0 => Arg::Ident(id.node.name.clone()),
                        Expression::UnaryOperator(u) if u.node.operator.node == UnaryOperator::Address && self.in_address == 0 => {
                            match Self::ident(&u.node.operand.node) {
                                Some(x) => Arg::AddrOf(x.to_string()),
                                None => Arg::Other,
                            }
                        }
                        _ => Arg::Other,
                    };
                    if let Arg::Other = shape {
                        self.visit_expression(&a.node, &a.span);
                    }
                    args.push(shape);
                }
                let prototyped = self.known.contains(callee);
                self.calls.push(CallFact { callee: callee.to_string(), args, prototyped });
            }
            _ => visit::visit_expression(self, e, span),
        }
    }
}

impl<'ast> Visit<'ast> for Facts {
    fn visit_statement(&mut self, st: &'ast lang_c::ast::Statement, span: &'ast Span) {
        if self.depth >= MAX_DEPTH {
            self.too_deep = true;
            return;
        }
        self.depth += 1;
        visit::visit_statement(self, st, span);
        self.depth -= 1;
    }

    fn visit_expression(&mut self, e: &'ast Expression, span: &'ast Span) {
        if self.depth >= MAX_DEPTH {
            self.too_deep = true;
            return;
        }
        self.depth += 1;
        self.expression(e, span);
        self.depth -= 1;
    }

    fn visit_declaration(&mut self, d: &'ast Declaration, span: &'ast Span) {
        let automatic = !d.specifiers.iter().any(|s| {
            matches!(&s.node, DeclarationSpecifier::StorageClass(c)
                if matches!(c.node, StorageClassSpecifier::Static | StorageClassSpecifier::Extern | StorageClassSpecifier::ThreadLocal))
        });
        for id in &d.declarators {
            if let Some(n) = name(&id.node.declarator.node) {
                let entry = self.declared.entry(n).or_insert((0, true));
                entry.0 += 1;
                entry.1 &= automatic;
            }
        }
        visit::visit_declaration(self, d, span);
    }
}

fn name(d: &Declarator) -> Option<String> {
    match &d.kind.node {
        DeclaratorKind::Identifier(id) => Some(id.node.name.clone()),
        DeclaratorKind::Declarator(inner) => name(&inner.node),
        DeclaratorKind::Abstract => None,
    }
}

fn function_params(d: &Declarator) -> Option<&lang_c::ast::FunctionDeclarator> {
    if let DeclaratorKind::Declarator(inner) = &d.kind.node {
        if let Some(f) = function_params(&inner.node) {
            return Some(f);
        }
    }
    d.derived.iter().find_map(|x| match &x.node {
        DerivedDeclarator::Function(f) => Some(&f.node),
        _ => None,
    })
}

/// One defined function: its parameters' names, which may qualify, and its body's facts.
struct Def {
    name: String,
    params: Vec<Option<String>>,
    candidate: Vec<bool>,
    facts: Facts,
}

/// Names `struct S` (not a union), directly or through a typedef known as one.
fn names_struct(specs: &[lang_c::span::Node<DeclarationSpecifier>], struct_typedefs: &HashSet<String>) -> bool {
    specs.iter().any(|s| match &s.node {
        DeclarationSpecifier::TypeSpecifier(t) => match &t.node {
            TypeSpecifier::Struct(st) => st.node.kind.node == StructKind::Struct,
            TypeSpecifier::TypedefName(id) => struct_typedefs.contains(&id.node.name),
            _ => false,
        },
        _ => false,
    })
}

/// The facts of one definition. `known` holds the functions prototyped so far and gains the
/// defined function; the visit borrows it (moved in and back, not cloned: a copy per
/// definition made the pass quadratic in the number of functions).
fn definition(fd: &FunctionDefinition, struct_typedefs: &HashSet<String>, known: &mut HashSet<String>) -> Option<Def> {
    let fname = name(&fd.declarator.node)?;
    let mut params = Vec::new();
    let mut candidate = Vec::new();
    let kr = !fd.declarations.is_empty();
    if let Some(f) = function_params(&fd.declarator.node) {
        for p in &f.parameters {
            let pname = p.node.declarator.as_ref().and_then(|d| name(&d.node));
            let pointer_to_struct = p.node.declarator.as_ref().is_some_and(|d| {
                matches!(d.node.kind.node, DeclaratorKind::Identifier(_))
                    && d.node.derived.len() == 1
                    && matches!(d.node.derived[0].node, DerivedDeclarator::Pointer(_))
            }) && names_struct(&p.node.specifiers, struct_typedefs);
            candidate.push(pointer_to_struct && !kr && pname.is_some());
            params.push(pname);
        }
    }
    known.insert(fname.clone());
    let mut facts = Facts { known: std::mem::take(known), ..Facts::default() };
    facts.visit_statement(&fd.statement.node, &fd.statement.span);
    *known = std::mem::take(&mut facts.known);
    Some(Def { name: fname, params, candidate, facts })
}

/// The parameters of the translation unit that are passed by reference (see the module doc).
pub fn by_reference_params(unit: &TranslationUnit) -> ByRef {
    let mut struct_typedefs = HashSet::new();
    let mut globals: HashSet<String> = HashSet::new();
    let mut known: HashSet<String> = HashSet::new();
    let mut file_scope = Facts::default();
    let mut defs: Vec<Def> = Vec::new();
    for ext in &unit.0 {
        match &ext.node {
            ExternalDeclaration::Declaration(d) => {
                let typedef = d
                    .node
                    .specifiers
                    .iter()
                    .any(|s| matches!(&s.node, DeclarationSpecifier::StorageClass(c) if c.node == StorageClassSpecifier::Typedef));
                for id in &d.node.declarators {
                    let dcl = &id.node.declarator.node;
                    let Some(n) = name(dcl) else { continue };
                    if typedef && dcl.derived.is_empty() && names_struct(&d.node.specifiers, &struct_typedefs) {
                        struct_typedefs.insert(n.clone());
                    }
                    if function_params(dcl).is_some() && !typedef {
                        known.insert(n.clone());
                    }
                    globals.insert(n);
                }
                file_scope.visit_declaration(&d.node, &d.span);
            }
            ExternalDeclaration::FunctionDefinition(fd) => {
                if let Some(def) = definition(&fd.node, &struct_typedefs, &mut known) {
                    globals.insert(def.name.clone());
                    defs.push(def);
                }
            }
            ExternalDeclaration::StaticAssert(_) => {}
        }
    }
    let mut out = ByRef::new();
    if file_scope.too_deep || defs.iter().any(|d| d.facts.too_deep) {
        return out;
    }
    // Without `main` the entry functions get arbitrary arguments: nothing is by reference.
    if !defs.iter().any(|d| d.name == "main") {
        return out;
    }
    let index: HashMap<String, usize> = defs.iter().enumerate().map(|(i, d)| (d.name.clone(), i)).collect();
    // A function whose name is used other than as a direct callee may be called through a
    // pointer, with any argument.
    let used_anywhere: HashSet<&str> = file_scope.used.iter().chain(defs.iter().flat_map(|d| &d.facts.used)).map(String::as_str).collect();
    let escaped_fn = |n: &str| used_anywhere.contains(n);
    for d in &defs {
        if d.name == "main" || escaped_fn(&d.name) {
            continue;
        }
        for (j, p) in d.params.iter().enumerate() {
            let Some(p) = p else { continue };
            let redeclared = d.facts.declared.contains_key(p) || d.params.iter().filter(|q| q.as_ref() == Some(p)).count() > 1;
            if d.candidate[j] && !d.facts.used.contains(p) && !redeclared {
                out.insert((d.name.clone(), j));
            }
        }
    }
    // Remove what a call contradicts until nothing changes; removal only ever grows the
    // set of objects whose address escapes, so this terminates.
    let mut addressed: Vec<HashSet<String>> = defs.iter().map(|d| d.facts.addressed.clone()).collect();
    loop {
        let mut changed = false;
        for (e, def) in defs.iter().enumerate() {
            for call in &def.facts.calls {
                let arity_ok = index.get(&call.callee).is_some_and(|&g| call.args.len() == defs[g].params.len() && call.prototyped);
                let mut seen: HashSet<&str> = HashSet::new();
                for (k, arg) in call.args.iter().enumerate() {
                    let key = (call.callee.clone(), k);
                    let qualifying = out.contains(&key);
                    let ok = qualifying
                        && arity_ok
                        && match arg {
                            Arg::AddrOf(x) => {
                                def.facts.declared.get(x) == Some(&(1, true))
                                    && !globals.contains(x)
                                    && !def.params.iter().any(|q| q.as_deref() == Some(x.as_str()))
                                    && !addressed[e].contains(x)
                                    && seen.insert(x)
                            }
                            Arg::Ident(q) => {
                                def.params
                                    .iter()
                                    .position(|p| p.as_deref() == Some(q.as_str()))
                                    .is_some_and(|i| out.contains(&(def.name.clone(), i)))
                                    && seen.insert(q)
                            }
                            Arg::Other => false,
                        };
                    if qualifying && !ok {
                        out.remove(&key);
                        changed = true;
                    }
                    if !ok {
                        // An ordinary pointer argument: the object escapes, the parameter is
                        // used as a value.
                        match arg {
                            Arg::AddrOf(x) => changed |= addressed[e].insert(x.clone()),
                            Arg::Ident(q) => {
                                if let Some(i) = def.params.iter().position(|p| p.as_deref() == Some(q.as_str())) {
                                    changed |= out.remove(&(def.name.clone(), i));
                                }
                            }
                            Arg::Other => {}
                        }
                    }
                }
            }
        }
        if !changed {
            return out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(src: &str) -> Vec<(String, usize)> {
        let cfg = lang_c::driver::Config::default();
        let parsed = lang_c::driver::parse_preprocessed(&cfg, src.to_string()).expect("parses");
        by_reference_params(&parsed.unit).into_iter().collect()
    }

    const FILE: &str = "struct file { int locked; unsigned pos; };\n";

    #[test]
    fn local_struct_passed_by_address_qualifies() {
        let src = format!(
            "{FILE}static void open(struct file *f) {{ f->locked = 1; (*f).pos = 0; }}\n\
                           int main(void) {{ struct file a, b; open(&a); open(&b); return a.locked; }}"
        );
        assert_eq!(params(&src), vec![("open".to_string(), 0)]);
    }

    #[test]
    fn pass_through_and_recursion_qualify() {
        let src = format!(
            "{FILE}static void g(struct file *f, int n) {{ if (n) g(f, n - 1); f->pos++; }}\n\
                           static void h(struct file *f) {{ g(f, 3); }}\n\
                           int main(void) {{ struct file a; h(&a); return 0; }}"
        );
        assert_eq!(params(&src), vec![("g".to_string(), 0), ("h".to_string(), 0)]);
    }

    #[test]
    fn escapes_and_aliases_disqualify() {
        // The address is stored elsewhere.
        let s1 = format!(
            "{FILE}static void f(struct file *p) {{ p->pos = 1; }}\n\
                          int main(void) {{ struct file a; struct file *q = &a; f(&a); return q->pos; }}"
        );
        assert!(params(&s1).is_empty());
        // A global object: the callee may name it.
        let s2 = format!(
            "{FILE}struct file a;\nstatic void f(struct file *p) {{ p->pos = 1; }}\n\
                          int main(void) {{ f(&a); return 0; }}"
        );
        assert!(params(&s2).is_empty());
        // The same object twice.
        let s3 = format!(
            "{FILE}static void f(struct file *p, struct file *q) {{ p->pos = 1; q->pos = 2; }}\n\
                          int main(void) {{ struct file a; f(&a, &a); return a.pos; }}"
        );
        assert!(params(&s3).is_empty());
        // The pointer itself is used as a value (compared, stored, passed to an unknown call).
        let s4 = format!(
            "{FILE}static int f(struct file *p) {{ return p != 0 && p->pos; }}\n\
                          int main(void) {{ struct file a; return f(&a); }}"
        );
        assert!(params(&s4).is_empty());
        // `&p->pos` points into the object.
        let s5 = format!(
            "{FILE}static void f(struct file *p) {{ unsigned *u = &p->pos; *u = 1; }}\n\
                          int main(void) {{ struct file a; f(&a); return a.pos; }}"
        );
        assert!(params(&s5).is_empty());
        // The function's address is taken.
        let s6 = format!(
            "{FILE}static void f(struct file *p) {{ p->pos = 1; }}\n\
                          void (*fp)(struct file *) = f;\n\
                          int main(void) {{ struct file a; f(&a); return 0; }}"
        );
        assert!(params(&s6).is_empty());
        // A caller passes something else: every call must qualify.
        let s7 = format!(
            "{FILE}static void f(struct file *p) {{ p->pos = 1; }}\n\
                          int main(void) {{ struct file a, b[2]; f(&a); f(b); return 0; }}"
        );
        assert!(params(&s7).is_empty());
        // A static local is shared by all invocations of its function.
        let s8 = format!(
            "{FILE}static void f(struct file *p) {{ p->pos = 1; }}\n\
                          int main(void) {{ static struct file a; f(&a); return 0; }}"
        );
        assert!(params(&s8).is_empty());
        // Without `main`, entries get arbitrary arguments.
        let s9 = format!(
            "{FILE}static void f(struct file *p) {{ p->pos = 1; }}\n\
                          void g(void) {{ struct file a; f(&a); }}"
        );
        assert!(params(&s9).is_empty());
    }

    #[test]
    fn a_caller_parameter_that_does_not_qualify_disqualifies_the_callee() {
        // `h` is called with a pointer that is not `&local`, so `h`'s parameter is an ordinary
        // pointer, and `g`, which `h` passes it to, cannot take it by reference either.
        let src = format!(
            "{FILE}static void g(struct file *f) {{ f->pos = 0; }}\n\
                           static void h(struct file *f) {{ g(f); }}\n\
                           struct file shared;\n\
                           int main(void) {{ struct file a; g(&a); h(&shared); return 0; }}"
        );
        assert!(params(&src).is_empty());
    }
}
