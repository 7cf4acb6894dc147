//! Allocated blocks a local pointer always points to: a syntactic pre-pass over a function body
//! finds the names that are assigned, incremented, decremented or whose address is taken
//! (`&p`, not `&p[i]`) anywhere in it. A local `T *p = malloc(E)` (or `calloc(n, s)`, under casts) with a constant
//! size, whose name is none of these, holds the start of that block (or null) wherever it is
//! in scope, so the builder checks `p[i]` against the block's length as it checks an array
//! subscript (`expr/place.rs`). Names are compared as text, so a shadowing declaration that is
//! modified disqualifies every variable of that name (conservative: fewer checks, never a wrong
//! one). Blocks freed before the access are not tracked: a use after `free` is not reported.

use std::collections::HashSet;

use lang_c::ast::{BinaryOperator, CallExpression, Expression, FunctionDefinition, UnaryOperator};
use lang_c::span::Span;
use lang_c::visit::{self, Visit};

use super::func::MAX_DEPTH;

/// The names a function body may change after their declaration, or `None` when the body is
/// nested too deeply to look at (then no pointer counts as fixed).
pub fn modified_names(def: &FunctionDefinition) -> Option<HashSet<String>> {
    let mut v = Modified::default();
    v.visit_statement(&def.statement.node, &def.statement.span);
    (!v.too_deep).then_some(v.names)
}

/// The allocation call an initialiser is, under casts: `(callee, arguments)` for `malloc` and
/// `calloc`.
pub fn allocation(e: &Expression) -> Option<(&'static str, &CallExpression)> {
    match e {
        Expression::Cast(c) => allocation(&c.node.expression.node),
        Expression::Call(c) => match &c.node.callee.node {
            Expression::Identifier(id) if id.node.name == "malloc" && c.node.arguments.len() == 1 => Some(("malloc", &c.node)),
            Expression::Identifier(id) if id.node.name == "calloc" && c.node.arguments.len() == 2 => Some(("calloc", &c.node)),
            _ => None,
        },
        _ => None,
    }
}

#[derive(Default)]
struct Modified {
    names: HashSet<String>,
    depth: u32,
    too_deep: bool,
}

impl Modified {
    fn target(&mut self, e: &Expression) {
        if let Expression::Identifier(id) = e {
            self.names.insert(id.node.name.clone());
        }
    }
}

impl<'ast> Visit<'ast> for Modified {
    fn visit_expression(&mut self, e: &'ast Expression, span: &'ast Span) {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.too_deep = true;
        }
        if !self.too_deep {
            match e {
                Expression::BinaryOperator(b) if is_assignment(&b.node.operator.node) => self.target(&b.node.lhs.node),
                Expression::UnaryOperator(u) => match u.node.operator.node {
                    // `&p` takes `p`'s address; `&p[i]`, `&*p` and `&p->f` take its pointee's.
                    UnaryOperator::PreIncrement
                    | UnaryOperator::PreDecrement
                    | UnaryOperator::PostIncrement
                    | UnaryOperator::PostDecrement
                    | UnaryOperator::Address => self.target(&u.node.operand.node),
                    _ => {}
                },
                _ => {}
            }
            visit::visit_expression(self, e, span);
        }
        self.depth -= 1;
    }
}

fn is_assignment(op: &BinaryOperator) -> bool {
    use BinaryOperator::*;
    matches!(
        op,
        Assign
            | AssignMultiply
            | AssignDivide
            | AssignModulo
            | AssignPlus
            | AssignMinus
            | AssignShiftLeft
            | AssignShiftRight
            | AssignBitwiseAnd
            | AssignBitwiseXor
            | AssignBitwiseOr
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use lang_c::ast::ExternalDeclaration;

    fn names(src: &str) -> Option<HashSet<String>> {
        let cfg = lang_c::driver::Config::default();
        let p = lang_c::driver::parse_preprocessed(&cfg, src.to_string()).expect("parses");
        let def = p.unit.0.iter().find_map(|d| match &d.node {
            ExternalDeclaration::FunctionDefinition(f) => Some(f.node.clone()),
            _ => None,
        });
        modified_names(&def.expect("a function"))
    }

    #[test]
    fn assignments_increments_and_addresses_count_reads_do_not() {
        let n = names(
            "int f(int *q) { int *a = 0, *b = 0, *c = 0, *d = 0, *e = 0, **g; a = q; b++; --c; g = &d; e[1] = 2; *e = 3; q = &e[2]; return e[0]; }",
        )
        .expect("shallow");
        for m in ["a", "b", "c", "d", "g"] {
            assert!(n.contains(m), "{m} is modified: {n:?}");
        }
        assert!(!n.contains("e"), "writes through `e` and `&e[2]` do not change `e`: {n:?}");
    }

    #[test]
    fn allocations_under_casts_are_recognised() {
        let cfg = lang_c::driver::Config::default();
        let p = lang_c::driver::parse_preprocessed(&cfg, "void f(void) { (int *) malloc(40); calloc(4, 10); realloc(0, 4); }".to_string())
            .expect("parses");
        let ExternalDeclaration::FunctionDefinition(f) = &p.unit.0[0].node else { panic!("a function") };
        let lang_c::ast::Statement::Compound(items) = &f.node.statement.node else { panic!("a block") };
        let found: Vec<Option<&str>> = items
            .iter()
            .map(|i| match &i.node {
                lang_c::ast::BlockItem::Statement(s) => match &s.node {
                    lang_c::ast::Statement::Expression(Some(e)) => allocation(&e.node).map(|(n, _)| n),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        assert_eq!(found, vec![Some("malloc"), Some("calloc"), None]);
    }
}
