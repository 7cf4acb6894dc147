//! The C library models (DESIGN.md "Memory", "Library"; issue 23): C sources shipped with cpals
//! (`analysis-engine/libc/*.c`, embedded here) whose functions are linked into a program that
//! calls them without defining them, only those it calls (and the models they use).
//!
//! A model file is plain C without preprocessor directives, cut into units: `// @model NAME`
//! starts the unit defining `NAME` (with the static data it needs), `// @uses A B` names the
//! models it calls, `// @bytes` marks a model over `void *` buffers that is used only at a call
//! whose pointer arguments point to bytes (the CFA builder checks each call: with pointers to
//! wider types the typed memory model could not follow the bytes, and the call stays an
//! external function). The linked units are appended to the preprocessed text and the line map
//! gives their lines the model files' names below [`MODELS_FILE`] (`<cpals libc>/string.c`),
//! so positions in them (and the CFA builder's knowledge of which functions are models) come
//! from the line map like any other file's.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use lang_c::ast::{Declarator, DeclaratorKind, Expression, ExternalDeclaration, TranslationUnit};
use lang_c::span::Span;
use lang_c::visit::Visit;

/// The folder the model files' names are in (a name no user's file has).
pub const MODELS_FILE: &str = "<cpals libc>";

/// Whether a file name (of a position, of a function) is one of the models'.
pub fn is_model_file(file: &str) -> bool {
    file.strip_prefix(MODELS_FILE).is_some_and(|rest| rest.starts_with('/'))
}

/// The model sources, in the order their units are appended.
const SOURCES: [(&str, &str); 3] = [
    ("string.c", include_str!("../../libc/string.c")),
    ("ctype.c", include_str!("../../libc/ctype.c")),
    ("stdlib.c", include_str!("../../libc/stdlib.c")),
];

/// One unit of a model file.
#[derive(Debug)]
pub struct Model {
    pub name: String,
    /// The model file it comes from (`string.c`).
    pub file: &'static str,
    /// The line of the file the unit starts at.
    pub line: u32,
    /// Its text (the unit's lines, the `// @` lines included).
    pub text: String,
    pub uses: Vec<String>,
    /// Used only at calls whose pointer arguments point to bytes.
    pub bytes: bool,
}

/// Every model, by name.
pub fn models() -> &'static BTreeMap<String, Model> {
    static MODELS: OnceLock<BTreeMap<String, Model>> = OnceLock::new();
    MODELS.get_or_init(|| {
        let mut out = BTreeMap::new();
        for (file, src) in SOURCES {
            let mut cur: Option<Model> = None;
            for (no, line) in src.split_inclusive('\n').enumerate() {
                if let Some(name) = line.trim().strip_prefix("// @model ") {
                    if let Some(m) = cur.take() {
                        out.insert(m.name.clone(), m);
                    }
                    let (name, line) = (name.trim().to_string(), no as u32 + 1);
                    cur = Some(Model { name, file, line, text: String::new(), uses: Vec::new(), bytes: false });
                }
                let Some(m) = cur.as_mut() else { continue };
                if let Some(uses) = line.trim().strip_prefix("// @uses ") {
                    m.uses.extend(uses.split_whitespace().map(str::to_string));
                }
                if line.trim() == "// @bytes" {
                    m.bytes = true;
                }
                m.text.push_str(line);
                if !line.ends_with('\n') {
                    m.text.push('\n');
                }
            }
            if let Some(m) = cur.take() {
                out.insert(m.name.clone(), m);
            }
        }
        // The text is appended after the preprocessor ran: its comments become blanks (lines
        // and columns stay).
        for m in out.values_mut() {
            m.text = super::rewrite::blank_comments(&m.text);
        }
        out
    })
}

/// Whether `name` has a model used only at calls with pointers to bytes (`memcpy`, …).
pub fn bytes_only(name: &str) -> bool {
    models().get(name).is_some_and(|m| m.bytes)
}

/// The models a translation unit needs: every function it names (calls or uses as a value)
/// without defining it and without declaring the name as an object at file scope, that has a
/// model, and the models those use, transitively.
pub fn needed(unit: &TranslationUnit) -> BTreeSet<String> {
    struct Names<'n> {
        used: &'n mut BTreeSet<String>,
    }
    impl<'ast> Visit<'ast> for Names<'_> {
        fn visit_expression(&mut self, e: &'ast Expression, span: &'ast Span) {
            if let Expression::Identifier(id) = e {
                if models().contains_key(&id.node.name) {
                    self.used.insert(id.node.name.clone());
                }
            }
            lang_c::visit::visit_expression(self, e, span);
        }
    }
    let mut used = BTreeSet::new();
    let mut defined = BTreeSet::new();
    for ext in &unit.0 {
        match &ext.node {
            ExternalDeclaration::FunctionDefinition(fd) => {
                if let Some(n) = declarator_name(&fd.node.declarator.node) {
                    defined.insert(n);
                }
            }
            ExternalDeclaration::Declaration(d) => {
                // A file-scope object (not a function) with a model's name.
                for init in &d.node.declarators {
                    let dcl = &init.node.declarator.node;
                    let is_function = dcl.derived.iter().any(|dd| {
                        matches!(dd.node, lang_c::ast::DerivedDeclarator::Function(_) | lang_c::ast::DerivedDeclarator::KRFunction(_))
                    });
                    if !is_function {
                        if let Some(n) = declarator_name(dcl) {
                            defined.insert(n);
                        }
                    }
                }
            }
            ExternalDeclaration::StaticAssert(_) => {}
        }
        Names { used: &mut used }.visit_external_declaration(&ext.node, &ext.span);
    }
    let mut out = BTreeSet::new();
    let mut stack: Vec<String> = used.into_iter().filter(|n| !defined.contains(n)).collect();
    while let Some(n) = stack.pop() {
        if defined.contains(&n) || !out.insert(n.clone()) {
            continue;
        }
        if let Some(m) = models().get(&n) {
            stack.extend(m.uses.iter().cloned());
        }
    }
    out
}

/// The units of the models `names`, in the order of their files: the file name positions in
/// it have (below [`MODELS_FILE`]), the line it starts at there, and its text (whole lines).
pub fn units(names: &BTreeSet<String>) -> Vec<(String, u32, &'static str)> {
    let mut out = Vec::new();
    for (file, _) in SOURCES {
        let mut in_file: Vec<&Model> = models().values().filter(|m| m.file == file && names.contains(&m.name)).collect();
        in_file.sort_by_key(|m| m.line);
        for m in in_file {
            out.push((format!("{}/{}", MODELS_FILE, file), m.line, m.text.as_str()));
        }
    }
    out
}

fn declarator_name(d: &Declarator) -> Option<String> {
    match &d.kind.node {
        DeclaratorKind::Identifier(id) => Some(id.node.name.clone()),
        DeclaratorKind::Declarator(inner) => declarator_name(&inner.node),
        DeclaratorKind::Abstract => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_names_only_models_it_uses() {
        for m in models().values() {
            for u in &m.uses {
                assert!(models().contains_key(u), "`{}` uses `{}`, which has no model", m.name, u);
            }
        }
        assert!(models().contains_key("strlen") && models().contains_key("isdigit") && models().contains_key("atoi"));
        assert!(bytes_only("memcpy") && !bytes_only("strcpy"));
    }
}
