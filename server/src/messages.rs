//! What cpals says about a verdict, in one place for every front end (the command line, the
//! HTML report, the evidence files and the language server): the exit codes, the sentence
//! for a property and the data model names users type.
//!
//! A leaf of the crate: it uses the engine and std only, so that every other module may
//! import it (see `tests/layering.rs`).

use analysis_engine::cfa::{DataModel, TargetKind};
use analysis_engine::report::{Confirmation, PropertyReport, Verdict};

/// Exit code: every property proved (TRUE).
pub const EXIT_TRUE: i32 = 0;
/// Exit code: a property violated (FALSE).
pub const EXIT_FALSE: i32 = 1;
/// Exit code: the verdict is unknown.
pub const EXIT_UNKNOWN: i32 = 2;
/// Exit code: the input could not be verified at all (missing file, syntax error, bad
/// arguments).
pub const EXIT_ERROR: i32 = 3;

/// The exit code of a run with this overall verdict.
pub fn exit_code(v: Verdict) -> i32 {
    match v {
        Verdict::True => EXIT_TRUE,
        Verdict::False => EXIT_FALSE,
        Verdict::Unknown => EXIT_UNKNOWN,
    }
}

/// The overall verdict as SV-COMP writes it (`Verification result: …`).
pub fn result_text(v: Verdict) -> &'static str {
    match v {
        Verdict::True => "TRUE",
        Verdict::False => "FALSE(unreach-call)",
        Verdict::Unknown => "UNKNOWN",
    }
}

/// SV-COMP's result line for a run of `props`: a violation of CPAchecker's label property is
/// `FALSE(unreach-label)`, any other `FALSE(unreach-call)` as [`result_text`] says.
/// A file whose only violations are out-of-bounds accesses is `FALSE(valid-deref)`.
pub fn result_text_for(v: Verdict, set: analysis_engine::config::PropertySet, props: &[PropertyReport]) -> &'static str {
    let only_bounds = props.iter().filter(|p| p.verdict == Verdict::False).all(|p| p.kind == TargetKind::OutOfBounds);
    if v == Verdict::False && only_bounds {
        "FALSE(valid-deref)"
    } else if v == Verdict::False && set == analysis_engine::config::PropertySet::UNREACH_LABEL {
        "FALSE(unreach-label)"
    } else {
        result_text(v)
    }
}

/// The data model named `s` (LP64 or ILP32, any case).
/// Longest `--timeout` accepted (seconds, about eleven days); without `--timeout` there is no
/// limit.
pub const MAX_TIMEOUT_SECS: f64 = 1_000_000.0;

/// A `--timeout` as users type it: a number of seconds greater than 0 and at most
/// [`MAX_TIMEOUT_SECS`]; anything else (0, negative, NaN, infinite, larger) is refused.
pub fn parse_timeout(secs: f64) -> Result<std::time::Duration, String> {
    if secs > 0.0 && secs <= MAX_TIMEOUT_SECS {
        Ok(std::time::Duration::from_secs_f64(secs))
    } else {
        Err(format!("the timeout must be a number of seconds greater than 0 and at most {MAX_TIMEOUT_SECS} (not {secs})"))
    }
}

pub fn parse_model(s: &str) -> Result<DataModel, String> {
    match s.to_ascii_uppercase().as_str() {
        "LP64" => Ok(DataModel::Lp64),
        "ILP32" => Ok(DataModel::Ilp32),
        other => Err(format!("unknown data model `{}` (use LP64 or ILP32)", other)),
    }
}

/// What a property checks, for messages.
pub fn describe(p: &PropertyReport) -> String {
    match (&p.condition, p.kind) {
        (Some(c), TargetKind::Assert) => format!("assertion `{}`", c),
        (Some(c), TargetKind::OutOfBounds) => c.clone(),
        (Some(c), _) => format!("`{}`", c),
        (None, TargetKind::Assert) => "assertion".into(),
        (None, TargetKind::ReachError) => "call to reach_error()".into(),
        (None, TargetKind::ErrorLabel) => "label ERROR".into(),
        (None, TargetKind::OutOfBounds) => "array index".into(),
    }
}

/// What a proof says: `… holds` or `… is unreachable`.
pub fn holds(p: &PropertyReport) -> String {
    if p.kind == TargetKind::OutOfBounds {
        return format!("{} stays within bounds", describe(p));
    }
    if p.condition.is_none() && p.kind != TargetKind::Assert {
        format!("{} is unreachable", describe(p))
    } else {
        format!("{} holds", describe(p))
    }
}

/// The sentence for a property's verdict.
/// "counterexample with 12 steps", saying when a sandboxed native run confirmed it.
fn counterexample(p: &PropertyReport) -> String {
    // The inputs a user gives: the command line, standard input.
    let mut given = args_shown(p).map(|a| format!(", {}", a)).unwrap_or_default();
    given.push_str(&stdin_shown(p).map(|t| format!(", stdin: {}", t)).unwrap_or_default());
    match p.confirmed_by {
        Some(Confirmation::NativeRun) => {
            format!("counterexample with {} steps{}, confirmed by running the program natively in the sandbox", p.trace.len(), given)
        }
        _ => format!("counterexample with {} steps{}", p.trace.len(), given),
    }
}

/// What a violated property's counterexample reads from standard input, as a quoted string a
/// user can type (`"5\n"`), or `None` when it reads none.
pub fn stdin_shown(p: &PropertyReport) -> Option<String> {
    p.stdin().map(|t| analysis_engine::harness::quote_bytes(&t))
}

/// The command line a violated property's counterexample gives `main`, as a user reads it
/// (`argc = 2, argv[0] = "", argv[1] = "48"`), or `None` when `main` takes none.
pub fn args_shown(p: &PropertyReport) -> Option<String> {
    let args = p.args()?;
    let mut out = format!("argc = {}", args.len());
    for (k, a) in args.iter().enumerate() {
        out.push_str(&format!(", argv[{}] = {}", k, analysis_engine::harness::quote_bytes(a)));
    }
    Some(out)
}

pub fn message(p: &PropertyReport) -> String {
    if p.kind == TargetKind::OutOfBounds {
        // "index of `a` (10 elements)": the condition names the array.
        let what = p.condition.clone().unwrap_or_else(|| "array index".into());
        return match p.verdict {
            Verdict::True => format!("{} stays within bounds (proved by the {} analysis)", what, p.analysis),
            Verdict::False => format!("{} can be out of bounds ({})", what, counterexample(p)),
            Verdict::Unknown => format!("{}: {}", what, p.reason.as_ref().map_or_else(|| "unknown".to_string(), |r| r.to_string())),
        };
    }
    let reach = p.condition.is_none() && p.kind != TargetKind::Assert;
    match (p.verdict, reach) {
        (Verdict::True, _) => format!("{} (proved by the {} analysis)", holds(p), p.analysis),
        (Verdict::False, false) => format!("{} can fail ({})", describe(p), counterexample(p)),
        (Verdict::False, true) => format!("{} is reachable ({})", describe(p), counterexample(p)),
        (Verdict::Unknown, _) => format!("{}: {}", describe(p), p.reason.as_ref().map_or_else(|| "unknown".to_string(), |r| r.to_string())),
    }
}
