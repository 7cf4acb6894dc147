//! Hover, a pure function of the file's results and its document: on a loop (its keyword or
//! anywhere on its head's line) the invariant, the analysis that found it and whether it was
//! checked inductive; on a checked property its verdict and reason.

use analysis_engine::report::Verdict;
use tower_lsp::lsp_types::{Hover, HoverContents, MarkupContent, MarkupKind, Position};

use crate::lsp::session::document::Document;
use crate::lsp::session::results::{merge, FileState};

fn inside(p: Position, r: &tower_lsp::lsp_types::Range) -> bool {
    r.start <= p && p <= r.end
}

pub fn build(state: &FileState, doc: &Document, pos: Position) -> Option<Hover> {
    let merged = merge(state, doc.version);
    if let Some((inv, stale)) = merged.invariants.iter().find(|(i, _)| inside(pos, &i.range) || i.range.start.line == pos.line) {
        let mut md = format!("**Loop invariant**\n\n```c\n{}\n```\n\n", inv.expr);
        md.push_str(&format!("- found by: the {} analysis\n", inv.source));
        md.push_str(&format!(
            "- checked inductive: {}\n",
            if inv.inductive {
                "yes (an independent SMT query shows that it holds on entry and is preserved by the loop body)"
            } else {
                "no"
            }
        ));
        if *stale {
            md.push_str("\n*Stale: the file changed since this was verified.*\n");
        }
        return Some(Hover {
            contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: md }),
            range: Some(inv.range),
        });
    }
    let p = merged.properties.iter().find(|p| inside(pos, &p.view.range))?;
    let mut md = format!(
        "**{}**: {}\n",
        match p.verdict {
            Verdict::True => "proved",
            Verdict::False => "violated",
            Verdict::Unknown => "unknown",
        },
        p.view.message
    );
    if let Some(r) = &p.view.reason {
        md.push_str(&format!("\nreason: {r}\n"));
    }
    if p.verdict == Verdict::False {
        md.push_str(&format!("\ncounterexample: {} steps (command `cpals.showTrace` steps through them)\n", p.view.trace.len()));
    }
    md.push_str(&format!("\nanalysis: {}{}\n", p.analysis, if p.cached { " (cached result)" } else { "" }));
    if p.stale {
        md.push_str("\n*Stale: the file changed since this was verified.*\n");
    }
    Some(Hover { contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: md }), range: Some(p.view.range) })
}
