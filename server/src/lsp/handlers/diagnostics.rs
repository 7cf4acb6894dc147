//! Diagnostics of a file, a pure function of its results and its document: violations (Error,
//! with the counterexample as related information, inputs first, then one entry per step with
//! its values), proofs (Hint or Information "proved", with the time the proof took), properties
//! still being verified (Hint "verifying…"), unknowns (Warning with the reason), dead
//! code (Hint, `Unnecessary`), the syntax error, a compilation database that could not be used
//! (Warning `compile-commands` on the first line). Results of an older version are marked stale,
//! also while the text does not parse (they are those of the last version that parsed).

use analysis_engine::report::Verdict;
use tower_lsp::lsp_types::{Diagnostic, DiagnosticRelatedInformation, DiagnosticSeverity, DiagnosticTag, Location, NumberOrString};

use crate::lsp::session::document::Document;
use crate::lsp::session::results::{merge, FileState, MergedProperty, StepView};

pub const SOURCE: &str = "cpals";
/// Related-information entries per violation at most (editors fold long lists anyway; the whole
/// trace is available through the `cpals.showTrace` command).
pub const MAX_STEPS: usize = 200;
pub const STALE: &str = " (stale: the file changed since it was verified)";

/// How a step is described in related information.
pub fn step_message(i: usize, s: &StepView) -> String {
    let mut m = format!("step {}: {}", i + 1, s.text.trim());
    if let Some(b) = s.branch {
        m.push_str(if b { " [true]" } else { " [false]" });
    }
    if !s.values.is_empty() {
        let vals: Vec<String> = s.values.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        m.push_str(" — ");
        m.push_str(&vals.join(", "));
    }
    m
}

fn related(p: &MergedProperty<'_>) -> Vec<DiagnosticRelatedInformation> {
    let trace = &p.view.trace;
    let mut out = Vec::new();
    // The inputs chosen by nondet calls first: they are what reproduces the failure.
    for s in trace.iter().filter(|s| s.input.is_some()) {
        let (from, value) = s.input.as_ref().expect("filtered");
        out.push(DiagnosticRelatedInformation {
            location: Location::new(s.uri.clone(), s.range),
            message: format!("input: {from}() = {value}"),
        });
    }
    let n = trace.len();
    let keep_head = MAX_STEPS / 2;
    for (i, s) in trace.iter().enumerate() {
        if n > MAX_STEPS && i >= keep_head && i < n - (MAX_STEPS - keep_head) {
            if i == keep_head {
                out.push(DiagnosticRelatedInformation {
                    location: Location::new(s.uri.clone(), s.range),
                    message: format!("… {} steps omitted (command cpals.showTrace steps through all)", n - MAX_STEPS),
                });
            }
            continue;
        }
        out.push(DiagnosticRelatedInformation { location: Location::new(s.uri.clone(), s.range), message: step_message(i, s) });
    }
    out
}

/// The diagnostics to publish for a document.
pub fn build(state: &FileState, doc: &Document, proved_as_information: bool, related_information: bool) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if let Some(e) = state.parse_error.as_ref().filter(|e| e.version == doc.version) {
        let earlier = state.units.values().any(Option::is_some);
        out.push(Diagnostic {
            range: e.range,
            severity: Some(DiagnosticSeverity::ERROR),
            code: Some(NumberOrString::String("syntax".into())),
            source: Some(SOURCE.into()),
            message: if earlier {
                format!("{} (results shown are from the last version that parsed)", e.message)
            } else {
                e.message.clone()
            },
            ..Default::default()
        });
    }
    let merged = merge(state, doc.version);
    // An unknown reason is given in full once, at the first property it keeps open; the
    // others name that line.
    let mut reasons: Vec<(&str, u32)> = Vec::new();
    for p in &merged.properties {
        let stale = if p.stale { STALE } else { "" };
        if p.pending {
            out.push(Diagnostic {
                range: p.view.range,
                severity: Some(DiagnosticSeverity::HINT),
                code: Some(NumberOrString::String("verifying".into())),
                source: Some(SOURCE.into()),
                message: "verifying…".into(),
                ..Default::default()
            });
            continue;
        }
        let d = match p.verdict {
            Verdict::False => Diagnostic {
                range: p.view.range,
                severity: Some(DiagnosticSeverity::ERROR),
                code: Some(NumberOrString::String("violated".into())),
                source: Some(SOURCE.into()),
                message: format!("{}{}", p.view.message, stale),
                related_information: related_information.then(|| related(p)),
                ..Default::default()
            },
            Verdict::True => {
                let how = if p.cached {
                    format!("{} analysis, cached", p.analysis)
                } else {
                    format!("{} analysis, {} ms", p.analysis, p.time_ms)
                };
                Diagnostic {
                    range: p.view.range,
                    severity: Some(if proved_as_information { DiagnosticSeverity::INFORMATION } else { DiagnosticSeverity::HINT }),
                    code: Some(NumberOrString::String("proved".into())),
                    source: Some(SOURCE.into()),
                    message: format!("proved: {} ({}){}", p.view.proved_message, how, stale),
                    ..Default::default()
                }
            }
            Verdict::Unknown => {
                let line = p.view.range.start.line + 1;
                let message = match p.view.reason.as_deref().filter(|r| !r.is_empty()) {
                    Some(r) => match reasons.iter().find(|(q, _)| *q == r) {
                        Some((_, first)) => match p.view.message.strip_suffix(r) {
                            Some(head) => format!("{}the same reason as line {}", head, first),
                            None => p.view.message.clone(),
                        },
                        None => {
                            reasons.push((r, line));
                            p.view.message.clone()
                        }
                    },
                    None => p.view.message.clone(),
                };
                Diagnostic {
                    range: p.view.range,
                    severity: Some(DiagnosticSeverity::WARNING),
                    code: Some(NumberOrString::String("unknown".into())),
                    source: Some(SOURCE.into()),
                    message: format!("unknown: {}{}", message, stale),
                    ..Default::default()
                }
            }
        };
        out.push(d);
    }
    for (range, stale, analysis) in &merged.unreachable {
        out.push(Diagnostic {
            range: *range,
            severity: Some(DiagnosticSeverity::HINT),
            code: Some(NumberOrString::String("unreachable".into())),
            source: Some(SOURCE.into()),
            message: format!(
                "unreachable: no execution gets here (proved by the {} analysis){}",
                analysis,
                if *stale { STALE } else { "" }
            ),
            tags: Some(vec![DiagnosticTag::UNNECESSARY]),
            ..Default::default()
        });
    }
    if let Some(problem) = &state.project.problem {
        out.push(Diagnostic {
            range: Default::default(),
            severity: Some(DiagnosticSeverity::WARNING),
            code: Some(NumberOrString::String("compile-commands".into())),
            source: Some(SOURCE.into()),
            message: format!("{problem}; the file is verified without the compilation database's flags and files"),
            ..Default::default()
        });
    }
    if let Some(f) = &state.failure {
        out.push(Diagnostic {
            range: Default::default(),
            severity: Some(DiagnosticSeverity::WARNING),
            code: Some(NumberOrString::String("internal".into())),
            source: Some(SOURCE.into()),
            message: format!("verification failed internally ({f}); the results shown are from an earlier run"),
            ..Default::default()
        });
    }
    out.sort_by_key(|d| (d.range.start, d.range.end));
    out
}
