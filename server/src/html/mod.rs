//! The HTML report (`cpals report FILE.c -o report.html`), after CPAchecker's: one
//! self-contained page (no external scripts, styles or fonts) with the verdict of every
//! property, the source with the counterexample path highlighted step by step with its
//! values, the loop invariants at the loop heads, code proven unreachable, and the automaton
//! of every function drawn as SVG (`layout.rs`). The page works without scripts (tables and
//! drawings are static); its script adds stepping through counterexamples.

mod layout;

use std::fmt::Write as _;

use analysis_engine::cfa::Program;
use analysis_engine::report::{Report, StepKind, Verdict};
use serde_json::{json, Value};

pub use layout::esc;

const STYLE: &str = include_str!("report.css");
const SCRIPT: &str = include_str!("report.js");

fn badge(v: Verdict) -> String {
    let (class, text) = match v {
        Verdict::True => ("true", "proved"),
        Verdict::False => ("false", "violated"),
        Verdict::Unknown => ("unknown", "unknown"),
    };
    format!(r#"<span class="badge {}">{}</span>"#, class, text)
}

/// The data the page's script reads: properties with their traces and how to replay them.
fn data(report: &Report, program: &Program) -> Value {
    let props: Vec<Value> = report
        .properties
        .iter()
        .map(|p| {
            let inputs = if p.verdict == Verdict::False { crate::evidence::sequence(program, p).ok() } else { None };
            json!({
                "verdict": p.verdict.as_str(),
                "line": p.range.line,
                "column": p.range.col,
                "function": p.function,
                "message": crate::messages::message(p),
                "trace": p.trace.iter().map(|s| {
                    let (kind, branch) = match s.kind {
                        StepKind::Assume { taken } => ("branch", Some(taken)),
                        StepKind::Assign => ("assign", None),
                        StepKind::Input => ("input", None),
                        StepKind::Declaration => ("declaration", None),
                        StepKind::Call => ("call", None),
                        StepKind::Return => ("return", None),
                        StepKind::Other => ("other", None),
                    };
                    json!({
                        "line": s.range.line, "column": s.range.col, "function": s.function, "text": s.text,
                        "kind": kind, "branch": branch, "depth": s.depth,
                        "values": s.values.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
                        "input": s.input.as_ref().map(|(src, v)| json!([src, v])),
                    })
                }).collect::<Vec<_>>(),
                "inputs": inputs.map(|is| is.iter().map(|(f, _, v)| json!([f, v.to_string()])).collect::<Vec<_>>()),
            })
        })
        .collect();
    json!({
        "file": report.file,
        "functions": program.functions.iter().enumerate().filter(|(i, _)| *i != program.start.0 as usize).map(|(i, f)| json!({ "name": f.name, "index": i })).collect::<Vec<_>>(),
        "properties": props,
    })
}

/// The report page.
pub fn page(report: &Report, program: &Program) -> String {
    let file_name =
        std::path::Path::new(&report.file).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| report.file.clone());
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" content=\"cpals {}\">\n<title>cpals report: {}</title>\n<style>\n{}</style>\n</head>\n<body>\n",
        env!("CARGO_PKG_VERSION"),
        esc(&file_name),
        STYLE
    );
    let _ = write!(
        h,
        r#"<header><h1>{}</h1><div class="summary">Verification result: <strong id="verdict" class="v-{}">{}</strong> · analysis <code>{}</code> · {} properties · {} ms · {} states · {} refinements</div></header>"#,
        esc(&report.file),
        report.verdict.as_str(),
        crate::messages::result_text(report.verdict),
        esc(&report.analysis),
        report.properties.len(),
        report.stats.time_ms,
        report.stats.states,
        report.stats.refinements,
    );
    h.push_str("<div id=\"errors\" hidden></div>\n<nav class=\"tabs\"><button data-tab=\"main\" class=\"active\">Source and counterexample</button><button data-tab=\"cfa\">Automata (CFA)</button><button data-tab=\"facts\">Invariants and assumptions</button></nav>\n");

    // Main tab: properties, source, counterexample.
    h.push_str("<section id=\"tab-main\" class=\"tab\">\n<table id=\"properties\"><thead><tr><th>verdict</th><th>line</th><th>function</th><th>property</th></tr></thead><tbody>\n");
    for (i, p) in report.properties.iter().enumerate() {
        let _ = writeln!(
            h,
            r##"<tr class="prop" data-prop="{}" data-verdict="{}"><td>{}</td><td><a href="#L{}">{}:{}</a></td><td><code>{}</code></td><td>{}</td></tr>"##,
            i,
            p.verdict.as_str(),
            badge(p.verdict),
            p.range.line,
            p.range.line,
            p.range.col,
            esc(&p.function),
            esc(&crate::messages::message(p))
        );
    }
    if report.properties.is_empty() {
        h.push_str("<tr><td colspan=\"4\">The program has no property to verify.</td></tr>\n");
    }
    h.push_str("</tbody></table>\n<div class=\"split\">\n<div id=\"source\" class=\"source\">\n");
    let mut inv_at: std::collections::BTreeMap<u32, Vec<String>> = std::collections::BTreeMap::new();
    for i in report.invariants.iter().filter(|i| i.inductive) {
        inv_at.entry(i.range.line).or_default().push(i.expr.clone());
    }
    let dead_lines: std::collections::BTreeSet<u32> = report
        .unreachable
        .iter()
        .filter(|r| r.line > 0)
        .flat_map(|r| {
            // Lines wholly inside an unreachable range (the first one only if nothing but
            // blanks precedes the range on it).
            let lead = program
                .source
                .split('\n')
                .nth(r.line as usize - 1)
                .and_then(|l| l.get(..(r.col as usize).saturating_sub(1)))
                .unwrap_or("x");
            let first = if lead.trim().is_empty() { r.line } else { r.line + 1 };
            first..=r.end_line.max(r.line)
        })
        .collect();
    let prop_lines: std::collections::BTreeSet<u32> = report.properties.iter().map(|p| p.range.line).collect();
    for (n, line) in program.source.split('\n').enumerate() {
        let n = n as u32 + 1;
        let mut class = String::from("line");
        if dead_lines.contains(&n) {
            class.push_str(" dead");
        }
        if prop_lines.contains(&n) {
            class.push_str(" propline");
        }
        let _ = write!(
            h,
            r#"<div class="{}" id="L{}"><span class="ln">{}</span><span class="code">{}</span>"#,
            class,
            n,
            n,
            esc(line.trim_end_matches('\r'))
        );
        if let Some(invs) = inv_at.get(&n) {
            let _ =
                write!(h, r#"<span class="inv" title="loop invariant, checked inductive">invariant: {}</span>"#, esc(&invs.join(" && ")));
        }
        h.push_str("<span class=\"vals\"></span></div>\n");
    }
    h.push_str("</div>\n<aside id=\"cex\" class=\"cex\"><h2>Counterexample</h2><p class=\"hint\" id=\"cex-hint\">Select a violated property to step through its counterexample.</p>\n<div class=\"stepper\"><button id=\"prev\" title=\"previous step (p)\">◀ prev</button><span id=\"stepno\">–</span><button id=\"next\" title=\"next step (n)\">next ▶</button></div>\n<div id=\"current\" class=\"current\"></div>\n<ol id=\"steps\" class=\"steps\"></ol>\n<div id=\"inputs\" class=\"inputs\"></div>\n</aside>\n</div>\n</section>\n");

    // CFA tab.
    h.push_str("<section id=\"tab-cfa\" class=\"tab\" hidden>\n<p class=\"hint\">One automaton per function: nodes are program locations (double circles are loop heads, red ones errors), edges the operations with their source line. The edges of the selected counterexample step are drawn in red.</p>\n<label>Function <select id=\"fsel\">");
    for (i, f) in program.functions.iter().enumerate() {
        if i == program.start.0 as usize {
            continue;
        }
        let _ = write!(h, r#"<option value="{}">{}</option>"#, i, esc(&f.name));
    }
    h.push_str("</select></label>\n");
    for (i, f) in program.functions.iter().enumerate() {
        if i == program.start.0 as usize {
            continue;
        }
        let _ = writeln!(
            h,
            r#"<figure class="cfa-fig" data-func="{}" data-name="{}"><figcaption><code>{}</code> ({} locations, {} edges)</figcaption>{}</figure>"#,
            i,
            esc(&f.name),
            esc(&f.name),
            f.cfa.nodes.iter().filter(|n| !n.inc.is_empty() || !n.out.is_empty()).count(),
            f.cfa.edges.len(),
            layout::function_svg(program, f, i)
        );
    }
    h.push_str("</section>\n");

    // Facts tab: invariants, unreachable code, semantics, notes, statistics.
    h.push_str("<section id=\"tab-facts\" class=\"tab\" hidden>\n<h2>Loop invariants</h2>\n");
    if report.invariants.iter().any(|i| i.inductive) {
        h.push_str(
            "<table id=\"invariants\"><thead><tr><th>loop</th><th>function</th><th>invariant</th><th>found by</th></tr></thead><tbody>\n",
        );
        for i in report.invariants.iter().filter(|i| i.inductive) {
            let _ = writeln!(
                h,
                r##"<tr><td><a href="#L{}">{}:{}</a></td><td><code>{}</code></td><td><code>{}</code></td><td>{} analysis, checked inductive</td></tr>"##,
                i.range.line,
                i.range.line,
                i.range.col,
                esc(&i.function),
                esc(&i.expr),
                esc(&i.source)
            );
        }
        h.push_str("</tbody></table>\n");
    } else {
        h.push_str("<p>No loop invariant was inferred (they are reported only when the analysis completed).</p>\n");
    }
    h.push_str("<h2>Unreachable code</h2>\n");
    if report.unreachable.is_empty() {
        h.push_str("<p>None reported.</p>\n");
    } else {
        h.push_str("<ul>");
        for r in &report.unreachable {
            let _ = write!(h, r##"<li><a href="#L{}">{}:{}–{}:{}</a></li>"##, r.line, r.line, r.col, r.end_line, r.end_col);
        }
        h.push_str("</ul>\n");
    }
    h.push_str("<h2>How C was modelled</h2>\n<ul>");
    for s in &report.semantics {
        let _ = write!(h, "<li>{}</li>", esc(s));
    }
    for (at, m) in &report.notes {
        let _ = write!(h, r##"<li><a href="#L{}">line {}</a>: {}</li>"##, at.line, at.line, esc(m));
    }
    h.push_str("</ul>\n");
    let _ = write!(
        h,
        "<h2>Statistics</h2>\n<p>{} ms, {} states ({} expanded, {} covered), {} refinements, {} SMT queries, precision {}.</p>\n</section>\n",
        report.stats.time_ms, report.stats.states, report.stats.expanded, report.stats.covered, report.stats.refinements, report.stats.smt_queries, report.stats.precision
    );
    let _ = write!(h, "<footer>Generated by cpals {}.</footer>\n", env!("CARGO_PKG_VERSION"));
    // `</` inside the JSON would end the script element.
    let json = serde_json::to_string(&data(report, program)).expect("JSON").replace("</", "<\\/");
    let _ = write!(
        h,
        "<script type=\"application/json\" id=\"cpals-data\">{}</script>\n<script>\n{}</script>\n</body>\n</html>\n",
        json, SCRIPT
    );
    h
}
