//! The JSON form of a report (DESIGN.md "Interfaces"): the engine's plain data mirrored into
//! `serde_json` values, so that the engine carries no serialisation.

use analysis_engine::cfa::{SrcRange, TargetKind};
use analysis_engine::report::{Confirmation, InvariantReport, PropertyReport, Report, StepKind, TraceStep};
use serde_json::{json, Map, Value};

pub fn kind_name(k: TargetKind) -> &'static str {
    match k {
        TargetKind::Assert => "assert",
        TargetKind::ReachError => "reach_error",
        TargetKind::ErrorLabel => "error_label",
        TargetKind::OutOfBounds => "out_of_bounds",
    }
}

fn range(r: &SrcRange) -> Value {
    json!({ "file": &*r.file, "line": r.line, "column": r.col, "end_line": r.end_line, "end_column": r.end_col })
}

pub fn step(s: &TraceStep) -> Value {
    let mut values = Map::new();
    for (k, v) in &s.values {
        values.insert(k.clone(), Value::String(v.to_string()));
    }
    let mut o = json!({
        "line": s.range.line,
        "column": s.range.col,
        "function": s.function,
        "text": s.text,
        "values": values,
    });
    let kind = match &s.kind {
        StepKind::Assume { taken } => {
            o["branch"] = json!(taken);
            "branch"
        }
        StepKind::Assign => "assign",
        StepKind::Input => "input",
        StepKind::Declaration => "declaration",
        StepKind::Call => "call",
        StepKind::Return => "return",
        StepKind::Accelerated { .. } | StepKind::Omitted { .. } | StepKind::Other => "other",
    };
    o["kind"] = json!(kind);
    if let Some(i) = &s.input {
        o["input"] = json!({ "source": i.source, "value": i.value.to_string() });
    }
    o
}

pub fn property(p: &PropertyReport) -> Value {
    let mut o = json!({
        "kind": kind_name(p.kind),
        "function": p.function,
        "line": p.range.line,
        "column": p.range.col,
        "verdict": p.verdict.as_str(),
        "analysis": p.analysis.name(),
    });
    if let Some(c) = &p.condition {
        o["condition"] = json!(c);
    }
    if let Some(r) = &p.reason {
        o["reason"] = json!(r.to_string());
    }
    if let Some(c) = p.confirmed_by {
        o["confirmed_by"] = json!(match c {
            Confirmation::PathCheck => "path check",
            Confirmation::NativeRun => "native run",
        });
    }
    if let Some(text) = p.stdin() {
        // What the counterexample reads from standard input (lossy for bytes that are not UTF-8).
        o["stdin"] = json!(String::from_utf8_lossy(&text));
    }
    if let Some(args) = p.args() {
        // The command line the counterexample gives `main` (argv[0] first; lossy as above).
        o["argv"] = json!(args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>());
    }
    if !p.trace.is_empty() {
        o["trace"] = Value::Array(p.trace.iter().map(step).collect());
    }
    o
}

pub fn invariant(i: &InvariantReport) -> Value {
    json!({
        "function": i.function,
        "line": i.range.line,
        "column": i.range.col,
        "expr": i.expr,
        "source": i.source.to_string(),
        "inductive": i.inductive,
    })
}

pub fn report(r: &Report) -> Value {
    json!({
        "file": r.file,
        "verdict": r.verdict.as_str(),
        "analysis": r.analysis.name(),
        "properties": r.properties.iter().map(property).collect::<Vec<_>>(),
        "invariants": r.invariants.iter().map(invariant).collect::<Vec<_>>(),
        "unreachable": r.unreachable.iter().map(range).collect::<Vec<_>>(),
        "semantics": r.semantics,
        "notes": r.notes.iter().map(|(at, m)| json!({ "line": at.line, "column": at.col, "message": m })).collect::<Vec<_>>(),
        "stats": {
            "time_ms": r.stats.time_ms,
            "refinements": r.stats.refinements,
            "states": r.stats.states,
            "expanded": r.stats.expanded,
            "covered": r.stats.covered,
            "smt_queries": r.stats.smt_queries,
            "precision": r.stats.precision,
            "tracked_variables": r.stats.tracked_variables,
            "predicates": r.stats.predicates,
            "transition_interpolants": r.stats.transition_interpolants,
            "abstractions": r.stats.abstractions,
            "lp_queries": r.stats.lp_queries,
            "value_determinations": r.stats.value_determinations,
            "native_runs": r.stats.native_runs,
            "phases": r.stats.phases.iter().map(|t| json!({ "phase": t.name, "time_ms": t.ms, "decided": t.decided })).collect::<Vec<_>>(),
        },
    })
}
