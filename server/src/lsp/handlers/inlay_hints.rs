//! Inlay hints: the inferred invariant at the end of each loop head's line, a pure function of
//! the file's results and its document (while the text does not parse, those of the last version
//! that parsed, marked stale).

use tower_lsp::lsp_types::{InlayHint, InlayHintLabel, InlayHintTooltip, Range};

use crate::lsp::session::document::Document;
use crate::lsp::session::results::{merge, FileState};

pub fn build(state: &FileState, doc: &Document, range: Range) -> Vec<InlayHint> {
    let merged = merge(state, doc.version);
    let mut out = Vec::new();
    for (inv, stale) in &merged.invariants {
        let line = inv.range.start.line;
        if line < range.start.line || line > range.end.line || line >= doc.index.line_count() {
            continue;
        }
        let stale_note = if *stale { " (stale)" } else { "" };
        out.push(InlayHint {
            position: doc.index.line_end(&doc.text, line),
            label: InlayHintLabel::String(format!("invariant: {}{}", inv.expr, stale_note)),
            kind: None,
            text_edits: None,
            tooltip: Some(InlayHintTooltip::String(format!(
                "Loop invariant inferred by the {} analysis{}{}",
                inv.source,
                if inv.inductive { ", checked inductive by an independent SMT query" } else { "" },
                if *stale { "; stale: the file changed since it was verified" } else { "" }
            ))),
            padding_left: Some(true),
            padding_right: None,
            data: None,
        });
    }
    out
}
