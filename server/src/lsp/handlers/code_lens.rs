//! Code lenses per function, a pure function of the file's results and its document: the
//! function's status (proved / n violations / unknown / running, with how many properties are
//! decided so far / stale / no properties) and
//! commands to verify it again and to step through its first counterexample; only on functions
//! with properties (and on roots until their first result).

use analysis_engine::report::Verdict;
use serde_json::json;
use tower_lsp::lsp_types::{CodeLens, Command};

use crate::lsp::session::document::Document;
use crate::lsp::session::results::{merge, FileState};

pub const VERIFY_FILE: &str = "cpals.verifyFile";
pub const VERIFY_FUNCTION: &str = "cpals.verifyFunction";
pub const SHOW_TRACE: &str = "cpals.showTrace";
pub const NEXT_STEP: &str = "cpals.nextStep";
pub const CANCEL: &str = "cpals.cancel";
/// The whole counterexample of a line as data (editor plugins list its steps themselves).
pub const TRACE: &str = "cpals.trace";
pub const COMMANDS: [&str; 6] = [VERIFY_FILE, VERIFY_FUNCTION, SHOW_TRACE, NEXT_STEP, CANCEL, TRACE];

/// The status of each function, as the lens shows it.
pub fn status(state: &FileState, doc: &Document, function: &str) -> String {
    let merged = merge(state, doc.version);
    let props: Vec<_> = merged.properties.iter().filter(|p| p.view.function == function).collect();
    let units_done = state
        .functions
        .iter()
        .find(|f| f.name == function)
        .map(|f| {
            f.units.iter().all(|u| state.units.get(u).is_some_and(|v| v.as_ref().is_some_and(|v| v.version == doc.version && !v.partial)))
        })
        .unwrap_or(false);
    let stale = !units_done || props.iter().any(|p| p.stale);
    if stale {
        let decided = props.iter().filter(|p| !p.stale && !p.pending).count();
        return if state.running && decided > 0 {
            format!("… verifying ({} of {} decided)", decided, props.len())
        } else if state.running {
            "… running".into()
        } else if state.broken(doc.version) {
            "stale (syntax error)".into()
        } else {
            "stale".into()
        };
    }
    let violations = props.iter().filter(|p| p.verdict == Verdict::False).count();
    let unknown = props.iter().filter(|p| p.verdict == Verdict::Unknown).count();
    if violations > 0 {
        format!("✗ {} violation{}", violations, if violations == 1 { "" } else { "s" })
    } else if unknown > 0 {
        format!("? {} unknown", unknown)
    } else if props.is_empty() {
        "no properties".into()
    } else {
        let ms: u64 = props.iter().map(|p| p.time_ms).max().unwrap_or(0);
        let analysis = props[0].analysis;
        format!("✓ proved ({}, {} ms)", analysis, ms)
    }
}

pub fn build(state: &FileState, doc: &Document) -> Vec<CodeLens> {
    let merged = merge(state, doc.version);
    let mut out = Vec::new();
    for f in &state.functions {
        if f.range.start.line >= doc.index.line_count() {
            continue;
        }
        // Only where there is something to show: a function with properties, or a root
        // whose first result has not arrived yet.
        let has_props = merged.properties.iter().any(|p| p.view.function == f.name);
        let first_run = f.units.contains(&f.name) && f.units.iter().all(|u| state.units.get(u).is_none_or(Option::is_none));
        if !has_props && !first_run {
            continue;
        }
        let title = status(state, doc, &f.name);
        let args = vec![json!(doc.uri), json!(f.name)];
        out.push(CodeLens {
            range: f.range,
            command: Some(Command { title, command: VERIFY_FUNCTION.into(), arguments: Some(args.clone()) }),
            data: None,
        });
        out.push(CodeLens {
            range: f.range,
            command: Some(Command { title: "verify again".into(), command: VERIFY_FUNCTION.into(), arguments: Some(args) }),
            data: None,
        });
        if let Some(p) =
            merged.properties.iter().find(|p| p.view.function == f.name && p.verdict == Verdict::False && !p.view.trace.is_empty())
        {
            out.push(CodeLens {
                range: f.range,
                command: Some(Command {
                    title: "show trace".into(),
                    command: SHOW_TRACE.into(),
                    arguments: Some(vec![json!(doc.uri), json!(p.view.range.start.line), json!(0)]),
                }),
                data: None,
            });
        }
    }
    out
}
