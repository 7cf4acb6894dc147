//! SARIF 2.1.0 (OASIS, "Static Analysis Results Interchange Format") for CI: one log, one run
//! of cpals over one or more files, a result per property (violated: `fail`, level `error`,
//! with its counterexample as a code flow; unknown: `open`, level `warning`, with the reason;
//! proved: `pass`), as GitHub code scanning and CodeChecker read it.

use analysis_engine::cfa::{SrcRange, TargetKind};
use analysis_engine::report::{PropertyReport, Report, StepKind, TraceStep, Verdict};
use serde_json::{json, Map, Value};

use crate::messages::message;

/// One verified file: its report and its text (for UTF-16 columns).
pub struct FileResult<'a> {
    /// The file as named on the command line (relative paths stay relative).
    pub path: &'a str,
    pub text: &'a str,
    pub report: &'a Report,
}

/// The rules, one per kind of property.
const RULES: [(TargetKind, &str, &str); 4] = [
    (TargetKind::Assert, "assert", "An assertion can fail"),
    (TargetKind::ReachError, "unreach-call", "A call of reach_error() (or __VERIFIER_error()) is reachable"),
    (TargetKind::ErrorLabel, "unreach-label", "An ERROR label is reachable"),
    (TargetKind::OutOfBounds, "valid-deref", "An array index can be out of bounds"),
];

fn rule_id(k: TargetKind) -> &'static str {
    RULES.iter().find(|r| r.0 == k).map(|r| r.1).unwrap_or("property")
}

/// The SARIF log of a run over `files`.
pub fn log(files: &[FileResult]) -> Value {
    let rules: Vec<Value> = RULES.iter().map(|(_, id, text)| json!({ "id": id, "shortDescription": { "text": text } })).collect();
    let artifacts: Vec<Value> = files.iter().map(|f| json!({ "location": { "uri": uri(f.path) } })).collect();
    let mut results = Vec::new();
    for (i, f) in files.iter().enumerate() {
        for p in &f.report.properties {
            results.push(result(f, i, p));
        }
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "cpals",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            } },
            "artifacts": artifacts,
            "columnKind": "utf16CodeUnits",
            "results": results,
        }],
    })
}

/// The log of a run that could not verify `path` (missing, not C, a syntax error, out of
/// time before it was loaded): no results, the reason as an error notification.
pub fn failure_log(path: &str, why: &str) -> Value {
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": { "name": "cpals", "version": env!("CARGO_PKG_VERSION") } },
            "artifacts": [{ "location": { "uri": uri(path) } }],
            "results": [],
            "invocations": [{
                "executionSuccessful": false,
                "toolExecutionNotifications": [{
                    "level": "error",
                    "message": { "text": why },
                    "locations": [{ "physicalLocation": { "artifactLocation": { "uri": uri(path), "index": 0 } } }],
                }],
            }],
        }],
    })
}

/// One log of several: the runs' artifacts and results together (artifact indices shifted),
/// their invocations kept. Used by `check` for several files, each verified by a process of
/// its own.
pub fn merge(logs: &[Value]) -> Value {
    let mut merged = logs.first().cloned().unwrap_or_else(|| log(&[]));
    let run = &mut merged["runs"][0];
    for key in ["artifacts", "results", "invocations"] {
        if run.get(key).is_none() {
            run[key] = json!([]);
        }
    }
    for other in logs.iter().skip(1) {
        let o = &other["runs"][0];
        let offset = run["artifacts"].as_array().map_or(0, Vec::len) as u64;
        let mut results = o["results"].as_array().cloned().unwrap_or_default();
        for r in &mut results {
            shift_indices(r, offset);
        }
        let mut invocations = o["invocations"].as_array().cloned().unwrap_or_default();
        for i in &mut invocations {
            shift_indices(i, offset);
        }
        let arts = o["artifacts"].as_array().cloned().unwrap_or_default();
        run["artifacts"].as_array_mut().expect("array").extend(arts);
        run["results"].as_array_mut().expect("array").extend(results);
        run["invocations"].as_array_mut().expect("array").extend(invocations);
    }
    if run["invocations"].as_array().is_some_and(|a| a.is_empty()) {
        run.as_object_mut().expect("object").remove("invocations");
    }
    merged
}

/// Adds `offset` to every `artifactLocation.index` under `v`.
fn shift_indices(v: &mut Value, offset: u64) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if k == "artifactLocation" {
                    if let Some(i) = x.get("index").and_then(Value::as_u64) {
                        x["index"] = json!(i + offset);
                    }
                } else {
                    shift_indices(x, offset);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| shift_indices(x, offset)),
        _ => {}
    }
}

fn result(f: &FileResult, index: usize, p: &PropertyReport) -> Value {
    let (kind, level) = match p.verdict {
        Verdict::False => ("fail", "error"),
        Verdict::Unknown => ("open", "warning"),
        Verdict::True => ("pass", "none"),
    };
    let mut r = json!({
        "ruleId": rule_id(p.kind),
        "ruleIndex": RULES.iter().position(|r| r.0 == p.kind).unwrap_or(0),
        "kind": kind,
        "level": level,
        "message": { "text": message(p) },
        "locations": [location(f, index, &p.range, None)],
        "properties": { "function": p.function, "analysis": p.analysis.name() },
    });
    if p.verdict == Verdict::False && !p.trace.is_empty() {
        let steps: Vec<Value> = p.trace.iter().map(|s| thread_flow_location(f, index, s)).collect();
        r["codeFlows"] = json!([{
            "message": { "text": format!("counterexample with {} steps", p.trace.len()) },
            "threadFlows": [{ "locations": steps }],
        }]);
    }
    r
}

fn thread_flow_location(f: &FileResult, index: usize, s: &TraceStep) -> Value {
    let text = match s.kind {
        StepKind::Assume { taken: true } => format!("{} [true]", s.text),
        StepKind::Assume { taken: false } => format!("{} [false]", s.text),
        _ => s.text.clone(),
    };
    // Steps without a place (operations left out of a long run) carry only their text.
    let location = if s.range.line == 0 { json!({ "message": { "text": text } }) } else { location(f, index, &s.range, Some(&text)) };
    let mut state = Map::new();
    for (k, v) in &s.values {
        state.insert(k.clone(), json!({ "text": v.to_string() }));
    }
    let mut o = json!({ "location": location, "nestingLevel": s.depth });
    if !state.is_empty() {
        o["state"] = Value::Object(state);
    }
    o
}

fn location(f: &FileResult, index: usize, r: &SrcRange, text: Option<&str>) -> Value {
    let mut region = json!({ "startLine": r.line.max(1) });
    if r.col >= 1 {
        let start = utf16_column(f.text, r.line, r.col);
        region["startColumn"] = json!(start);
        let end_line = r.end_line.max(r.line);
        let end = utf16_column(f.text, end_line, r.end_col.max(1));
        if (end_line, end) > (r.line, start) {
            region["endLine"] = json!(end_line);
            region["endColumn"] = json!(end);
        }
    }
    let mut o = json!({
        "physicalLocation": {
            "artifactLocation": { "uri": uri(f.path), "index": index },
            "region": region,
        }
    });
    if let Some(t) = text {
        o["message"] = json!({ "text": t });
    }
    o
}

/// The 1-based UTF-16 column of the 1-based byte column `col` of line `line`.
fn utf16_column(text: &str, line: u32, col: u32) -> u32 {
    let Some(l) = text.lines().nth(line.saturating_sub(1) as usize) else { return col };
    let byte = (col.saturating_sub(1) as usize).min(l.len());
    let prefix = l.get(..byte).unwrap_or(l);
    prefix.encode_utf16().count() as u32 + 1
}

/// A URI reference for a path: relative paths stay relative (GitHub resolves them against the
/// repository), absolute ones become `file://` URIs; characters outside RFC 3986's unreserved
/// set and `/` are percent-encoded.
fn uri(path: &str) -> String {
    let mut out = String::new();
    if path.starts_with('/') {
        out.push_str("file://");
    }
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{:02X}", b));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_and_columns() {
        assert_eq!(uri("src/a b.c"), "src/a%20b.c");
        assert_eq!(uri("/tmp/ü.c"), "file:///tmp/%C3%BC.c");
        // `é` is two bytes and one UTF-16 unit: byte column 4 of "aé x" is UTF-16 column 3.
        assert_eq!(utf16_column("aé x\n", 1, 4), 3);
        assert_eq!(utf16_column("abc\n", 1, 2), 2);
    }
}
