//! What linking a project's files needs to know of a translation unit (issue 23, Build 4):
//! the functions it calls without defining them, and the functions it defines with external
//! linkage (a `static` function of another file is not the one a call means).

use std::collections::BTreeSet;

use lang_c::ast::{
    CallExpression, DeclarationSpecifier, Declarator, DeclaratorKind, Expression, ExternalDeclaration, StorageClassSpecifier,
    TranslationUnit,
};
use lang_c::span::Span;
use lang_c::visit::Visit;

/// Names called (directly) and not defined in the unit.
pub fn undefined_calls(unit: &TranslationUnit) -> BTreeSet<String> {
    struct Calls<'n> {
        names: &'n mut BTreeSet<String>,
    }
    impl<'ast> Visit<'ast> for Calls<'_> {
        fn visit_call_expression(&mut self, c: &'ast CallExpression, span: &'ast Span) {
            if let Expression::Identifier(id) = &c.callee.node {
                self.names.insert(id.node.name.clone());
            }
            lang_c::visit::visit_call_expression(self, c, span);
        }
    }
    let mut names = BTreeSet::new();
    Calls { names: &mut names }.visit_translation_unit(unit);
    let defined = all_defined(unit);
    names.retain(|n| !defined.contains(n));
    names
}

/// Functions defined in the unit without `static`.
pub fn defined_functions(unit: &TranslationUnit) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for ext in &unit.0 {
        if let ExternalDeclaration::FunctionDefinition(fd) = &ext.node {
            let is_static = fd
                .node
                .specifiers
                .iter()
                .any(|s| matches!(&s.node, DeclarationSpecifier::StorageClass(c) if c.node == StorageClassSpecifier::Static));
            if let Some(n) = name(&fd.node.declarator.node).filter(|_| !is_static) {
                out.insert(n);
            }
        }
    }
    out
}

fn all_defined(unit: &TranslationUnit) -> BTreeSet<String> {
    unit.0
        .iter()
        .filter_map(|ext| match &ext.node {
            ExternalDeclaration::FunctionDefinition(fd) => name(&fd.node.declarator.node),
            _ => None,
        })
        .collect()
}

fn name(d: &Declarator) -> Option<String> {
    match &d.kind.node {
        DeclaratorKind::Identifier(id) => Some(id.node.name.clone()),
        DeclaratorKind::Declarator(inner) => name(&inner.node),
        DeclaratorKind::Abstract => None,
    }
}
