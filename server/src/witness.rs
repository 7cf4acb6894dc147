//! SV-COMP verification witnesses in format 2.0 (YAML; "Software Verification Witnesses
//! 2.0", SPIN 2024): a violation witness (`violation_sequence`) per violated property, whose
//! waypoints are the counterexample's input values (`function_return`), the outcomes of its
//! `if` conditions (`branching`) and the violation (`target`); and a correctness witness
//! (`invariant_set`) with the loop invariants the report lists, all checked inductive.
//!
//! Soundness: a violation witness is written only for a `false` verdict and describes the
//! confirmed counterexample of the report (values from its trace, in order); a correctness
//! witness only for a `true` one; an `unknown` verdict gives no witness.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use analysis_engine::cfa::{DataModel, Program, TargetKind};
use analysis_engine::report::{PropertyReport, Report, StepKind, TraceStep, Verdict};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The verification task as the witness names it.
pub struct Task {
    /// The program file as it was given to cpals (validators resolve it the same way).
    pub file_name: String,
    /// SHA-256 of the file's bytes, lower-case hex.
    pub hash: String,
    pub source: String,
    pub data_model: DataModel,
}

impl Task {
    pub fn read(path: &Path, data_model: DataModel) -> Result<Task, String> {
        let bytes = analysis_engine::frontend::read_regular_file(path).map_err(|e| format!("cannot read {}: {}", path.display(), e))?;
        Ok(Task {
            file_name: path.display().to_string(),
            hash: sha256_hex(&bytes),
            source: String::from_utf8_lossy(&bytes).into_owned(),
            data_model,
        })
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{:02x}", b)).collect()
}

/// What a witness file holds.
pub enum Witness {
    Violation(String),
    Correctness(String),
}

/// The witness for a report: violation for `false`, correctness for `true`; `Err` with the
/// reason for `unknown`.
pub fn witness(report: &Report, program: &Program, task: &Task) -> Result<Witness, String> {
    match report.verdict {
        Verdict::False => violation_witness(report, program, task).map(Witness::Violation),
        Verdict::True => Ok(Witness::Correctness(correctness_witness(report, program, task))),
        Verdict::Unknown => Err("the verdict is unknown: cpals writes no witness".into()),
    }
}

/// The SV-COMP specification a report's properties amount to (one `CHECK` line per kind).
pub fn specification(report: &Report, program: &Program) -> String {
    let entry = program.entry.map(|f| program.func(f).name.clone()).unwrap_or_else(|| "main".into());
    let mut lines: Vec<String> = Vec::new();
    for p in report.properties.iter().filter(|p| program.properties.decides(p.kind)) {
        let line = match p.kind {
            TargetKind::OutOfBounds => format!("CHECK( init({}()), LTL(G valid-deref) )", entry),
            TargetKind::ErrorLabel => format!("CHECK( init({}()), LTL(G ! label(ERROR)) )", entry),
            TargetKind::Assert => format!("CHECK( init({}()), LTL(G ! call(__assert_fail())) )", entry),
            TargetKind::ReachError => {
                let f = if program.by_name.contains_key("reach_error") || program.externals.iter().any(|e| e == "reach_error") {
                    "reach_error"
                } else if program.by_name.contains_key("__VERIFIER_error") || program.externals.iter().any(|e| e == "__VERIFIER_error") {
                    "__VERIFIER_error"
                } else {
                    "reach_error"
                };
                format!("CHECK( init({}()), LTL(G ! call({}())) )", entry, f)
            }
        };
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    if lines.is_empty() {
        lines.push(format!("CHECK( init({}()), LTL(G ! call(reach_error())) )", entry));
    }
    lines.join("\n")
}

fn metadata(report: &Report, program: &Program, task: &Task, salt: &str) -> Value {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    json!({
        "format_version": "2.0",
        "uuid": uuid(&format!("{}{}{}{}", task.hash, salt, now.as_nanos(), std::process::id())),
        "creation_time": rfc3339(now.as_secs()),
        "producer": {
            "name": "cpals",
            "version": env!("CARGO_PKG_VERSION"),
            "configuration": report.analysis.name(),
        },
        "task": {
            "input_files": [task.file_name],
            "input_file_hashes": { task.file_name.clone(): task.hash },
            "specification": specification(report, program),
            "data_model": match task.data_model { DataModel::Ilp32 => "ILP32", DataModel::Lp64 => "LP64" },
            "language": "C",
        },
    })
}

/// A version-4-shaped UUID from the SHA-256 of `seed`.
fn uuid(seed: &str) -> String {
    let mut b: Vec<u8> = Sha256::digest(seed.as_bytes())[..16].to_vec();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{:02x}", x)).collect();
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

/// `secs` since the epoch as an ISO 8601 date and time in UTC.
pub fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

fn location(task: &Task, line: u32, column: u32, function: &str) -> Value {
    json!({ "file_name": task.file_name, "line": line, "column": column, "function": function })
}

/// The correctness witness: one `invariant_set` with every inductive loop invariant of the
/// report, or an empty list when the report has none.
pub fn correctness_witness(report: &Report, program: &Program, task: &Task) -> String {
    let content: Vec<Value> = report
        .invariants
        .iter()
        .filter(|i| i.inductive)
        .filter_map(|i| Some((i, crate::invariant_text::without_model_state(&i.expr)?)))
        .map(|(i, expr)| {
            json!({ "invariant": {
                "type": "loop_invariant",
                "location": location(task, i.range.line, i.range.col, &i.function),
                "value": expr,
                "format": "c_expression",
            } })
        })
        .collect();
    if content.is_empty() {
        return "[]\n".into();
    }
    let entry = json!([{ "entry_type": "invariant_set", "metadata": metadata(report, program, task, "invariants"), "content": content }]);
    crate::yaml::to_yaml(&entry)
}

/// The violation witness: one `violation_sequence` per violated property that has a
/// counterexample the report carries in full.
pub fn violation_witness(report: &Report, program: &Program, task: &Task) -> Result<String, String> {
    let mut entries = Vec::new();
    let mut why = None;
    for (i, prop) in report.properties.iter().enumerate().filter(|(_, p)| p.verdict == Verdict::False) {
        match segments(prop, program, task) {
            Ok(content) => entries.push(json!({
                "entry_type": "violation_sequence",
                "metadata": metadata(report, program, task, &format!("violation{}", i)),
                "content": content,
            })),
            Err(e) => {
                why.get_or_insert(e);
            }
        }
    }
    if entries.is_empty() {
        return Err(why.unwrap_or_else(|| "no property is violated".into()));
    }
    Ok(crate::yaml::to_yaml(&Value::Array(entries)))
}

/// The waypoints of one counterexample, one `follow` waypoint per segment. A long run
/// whose trace is abridged gives only the target (the violation is reachable; the steps
/// that get there are not in the report).
fn segments(prop: &PropertyReport, program: &Program, task: &Task) -> Result<Vec<Value>, String> {
    // A witness's task starts at `main`: a violation in an entry of its own (a function main
    // does not reach, verified with arbitrary arguments) is not one of main's.
    if let (Some(main), Some(&f)) = (program.entry, program.by_name.get(&prop.function)) {
        if !program.reachable_functions(main).contains(&f) {
            return Err(format!("the violation is in `{}`, an entry of its own that `main` does not reach", prop.function));
        }
    }
    let mut inputs = if crate::evidence::abridged(&prop.trace) { Vec::new() } else { crate::evidence::inputs(program, prop)? };
    // Inputs read inside a C library model (standard input's bytes and numbers) have no
    // waypoint: the format has no way to say what standard input holds.
    inputs.retain(|i| *i.step.range.file == *program.file);
    let lines: Vec<&str> = task.source.split('\n').collect();
    let mut segs = Vec::new();
    let mut next_input = 0;
    // Consecutive steps with the same range read successive calls on that range.
    let mut same_range = 0usize;
    let mut prev: Option<&TraceStep> = None;
    let steps: &[TraceStep] = if crate::evidence::abridged(&prop.trace) { &[] } else { &prop.trace };
    for step in steps {
        // Steps in another file (a C library model's) have no waypoint in the task's file.
        if *step.range.file != *program.file {
            continue;
        }
        let repeat = prev.is_some_and(|q| q.range == step.range && q.kind == step.kind);
        same_range = if repeat { same_range + 1 } else { 0 };
        prev = Some(step);
        let waypoint = match &step.kind {
            StepKind::Input => {
                let Some(input) = inputs.get(next_input).filter(|i| std::ptr::eq(i.step, step)) else { continue };
                next_input += 1;
                let (line, col) = call_close_paren(&lines, step, &input.function, same_range)
                    .ok_or_else(|| format!("cannot find the call of `{}` at line {}", input.function, step.range.line))?;
                json!({
                    "type": "function_return",
                    "action": "follow",
                    "constraint": { "value": format!("\\result == {}", input.value), "format": "acsl_expression" },
                    "location": location(task, line, col, &step.function),
                })
            }
            StepKind::Assume { taken } => match if_keyword(&lines, step) {
                Some((line, col)) => json!({
                    "type": "branching",
                    "action": "follow",
                    "constraint": { "value": if *taken { "true" } else { "false" } },
                    "location": location(task, line, col, &step.function),
                }),
                None => continue,
            },
            _ => continue,
        };
        segs.push(json!({ "segment": [ { "waypoint": waypoint } ] }));
    }
    let (line, col, function) = target_location(prop, program);
    segs.push(json!({ "segment": [ { "waypoint": {
        "type": "target",
        "action": "follow",
        "location": location(task, line, col, &function),
    } } ] }));
    Ok(segs)
}

/// Where the violation happens: the `reach_error()` call (inside an assert helper for a
/// helper's call-site property), the `assert`, or the `ERROR:` label.
fn target_location(prop: &PropertyReport, program: &Program) -> (u32, u32, String) {
    // A helper's property is reported at its call site; the violation is the helper's own
    // call of the error function (or its label), which the trace's last step reaches.
    if let Some(last) = prop.trace.last() {
        if last.function != prop.function {
            if let Some(&f) = program.by_name.get(&last.function) {
                let func = program.func(f);
                if analysis_engine::frontend::models::is_model_file(&func.file) {
                    // A C library model's check: the violation is the program's call.
                    return (prop.range.line, prop.range.col, prop.function.clone());
                }
                let targets: Vec<_> = func.cfa.targets.iter().collect();
                let pick = targets.iter().find(|t| t.kind == TargetKind::ReachError).or_else(|| targets.first());
                if let Some(t) = pick {
                    let r = func.abs(t.span);
                    return (r.line, r.col, func.name.clone());
                }
            }
        }
    }
    (prop.range.line, prop.range.col, prop.function.clone())
}

/// The position (1-based line and column) of the `)` that closes the `n`-th call of
/// `function` within a step's range.
fn call_close_paren(lines: &[&str], step: &TraceStep, function: &str, n: usize) -> Option<(u32, u32)> {
    let r = &step.range;
    let mut calls = Vec::new();
    for line in r.line..=r.end_line.max(r.line) {
        let text = lines.get(line as usize - 1)?;
        let from = if line == r.line { (r.col as usize).saturating_sub(1) } else { 0 };
        let mut at = from;
        while let Some(k) = text.get(at..).and_then(|t| t.find(function)) {
            let start = at + k;
            let end = start + function.len();
            let before_ok = start == 0 || !is_ident(text.as_bytes()[start - 1]);
            let after = text[end..].trim_start();
            if before_ok && after.starts_with('(') && text.as_bytes().get(end).is_none_or(|&c| !is_ident(c)) {
                calls.push((line, end + (text[end..].len() - after.len())));
            }
            at = end;
        }
    }
    if calls.is_empty() {
        return None;
    }
    let (line, open) = calls[n % calls.len()];
    // Match parentheses from the `(` on, possibly across lines.
    let mut depth = 0i32;
    for (li, text) in lines.iter().enumerate().skip(line as usize - 1) {
        let start = if li + 1 == line as usize { open } else { 0 };
        for (ci, c) in text.char_indices().filter(|(ci, _)| *ci >= start) {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some((li as u32 + 1, ci as u32 + 1));
                    }
                }
                _ => {}
            }
        }
    }
    None
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The `if` keyword of a branch whose condition is the whole controlling expression of an
/// `if` statement (`if (` before the range, `)` after it); other branches (parts of `&&`,
/// loop conditions) get no waypoint.
fn if_keyword(lines: &[&str], step: &TraceStep) -> Option<(u32, u32)> {
    let r = &step.range;
    if r.line == 0 || r.col == 0 {
        return None;
    }
    let text = lines.get(r.line as usize - 1)?;
    let before = text.get(..(r.col as usize - 1))?.trim_end();
    let before = before.strip_suffix('(')?.trim_end();
    let kw = before.strip_suffix("if")?;
    if kw.as_bytes().last().is_some_and(|&c| is_ident(c)) {
        return None;
    }
    let end_text = lines.get(r.end_line as usize - 1)?;
    let after = end_text.get((r.end_col as usize).saturating_sub(1)..)?.trim_start();
    if !after.starts_with(')') {
        return None;
    }
    Some((r.line, kw.len() as u32 + 1))
}

#[cfg(test)]
mod tests {
    use super::{rfc3339, uuid};

    #[test]
    fn dates_and_uuids_have_their_formats() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_219_200 + 3_723), "2026-11-21T01:02:03Z");
        let u = uuid("x");
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"));
    }
}
