//! Hover, a pure function of the file's results and its document: on a loop (its keyword or
//! anywhere on its head's line) the invariant, the analysis that found it and whether it was
//! checked inductive; on a checked property its verdict, briefly: for a violation the inputs,
//! the first steps and how to step through the rest (the diagnostic beside it has the message).

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
        if inv.full != inv.expr {
            md.push_str(&format!("as the analyses found it (with what the variables' types imply):\n\n```c\n{}\n```\n\n", inv.full));
        }
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
    // Short: the diagnostic beside it already says what the property is.
    let mut md = match (p.pending, p.verdict) {
        (true, _) => "**verifying…**\n".to_string(),
        (_, Verdict::True) => format!("**proved** by the {} analysis{}\n", p.analysis, timing(p)),
        (_, Verdict::False) => format!("**violated**: counterexample with {} steps\n", p.view.trace.len()),
        (_, Verdict::Unknown) => format!("**unknown**: {}\n", p.view.reason.as_deref().unwrap_or("not decided")),
    };
    if p.verdict == Verdict::False && !p.pending {
        let inputs: Vec<String> =
            p.view.trace.iter().filter_map(|s| s.input.as_ref()).map(|(from, value)| format!("`{from}()` = {value}")).collect();
        if !inputs.is_empty() {
            md.push_str(&format!("\ninputs: {}\n", inputs.join(", ")));
        }
        md.push_str("\nfirst steps:\n");
        for (i, s) in p.view.trace.iter().enumerate().take(HOVER_STEPS) {
            md.push_str(&format!("\n{}. {}", i + 1, step_line(s)));
        }
        if p.view.trace.len() > HOVER_STEPS {
            md.push_str("\n\n…");
        }
        md.push_str("\n\nStep through it: **F7** in VS Code (*cpals: Show Counterexample*), `:CpalsTrace` in Neovim.\n");
    }
    if p.stale {
        md.push_str("\n*Stale: the file changed since this was verified.*\n");
    }
    Some(Hover { contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: md }), range: Some(p.view.range) })
}

/// Steps a hover shows (the editor's trace view has them all).
const HOVER_STEPS: usize = 3;

/// One step as a hover line: its statement, the branch taken, its values.
fn step_line(s: &crate::lsp::session::results::StepView) -> String {
    let mut line = format!("`{}`", s.text.trim());
    if let Some(b) = s.branch {
        line.push_str(if b { " (true)" } else { " (false)" });
    }
    if !s.values.is_empty() {
        let vals: Vec<String> = s.values.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        line.push_str(&format!(" — {}", vals.join(", ")));
    }
    line
}

/// ", 41 ms" (or ", cached") for a proof.
fn timing(p: &crate::lsp::session::results::MergedProperty<'_>) -> String {
    if p.cached {
        " (cached result)".into()
    } else {
        format!(", {} ms", p.time_ms)
    }
}
