//! What a confirmed counterexample gives users to check it themselves: its input sequence
//! (the value each input function returned, in order, with the C type it returns) and the
//! executable harness built from it. Witnesses (`witness.rs`), the HTML report and the
//! benchmark runner's replay all take the inputs from here, so that they describe exactly
//! the counterexample the report shows.

use std::collections::BTreeMap;

use analysis_engine::cfa::{EdgeKind, Program, TargetKind};
use analysis_engine::ir::{InputSource, IntTy, Stmt};
use analysis_engine::report::{InputOrigin, PropertyReport, StepKind, TraceInput, TraceStep, Verdict};

/// One value the counterexample feeds the program: the step that reads it, the function
/// that returns it, its type and the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input<'r> {
    pub step: &'r TraceStep,
    pub function: String,
    pub ty: IntTy,
    pub value: i128,
}

/// The return type of every input function the program calls (the type of the variable its
/// result is stored in), by name.
pub fn input_types(p: &Program) -> BTreeMap<String, IntTy> {
    let mut types = BTreeMap::new();
    for f in &p.functions {
        for e in &f.cfa.edges {
            if let EdgeKind::Statement(Stmt::Input { lhs, source: InputSource::Call(name) })
            | EdgeKind::Declaration(Stmt::Input { lhs, source: InputSource::Call(name) }) = &e.kind
            {
                types.entry(name.clone()).or_insert_with(|| p.var(lhs.var()).int_ty());
            }
        }
    }
    types
}

/// True when the trace is abridged (a long concrete run shows only its beginning and end).
pub fn abridged(trace: &[TraceStep]) -> bool {
    trace.iter().any(|s| matches!(s.kind, StepKind::Omitted { .. }))
}

/// An argument of an entry function (`argument `x` of f`, what the start function passes an
/// entry) is an input no input function supplies: neither a harness nor a witness (whose
/// task starts at `main`) can give it.
fn entry_argument(source: &str) -> Result<(), String> {
    if source.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Ok(())
    } else {
        Err(format!("the counterexample depends on the {} (an entry's argument), which no input function supplies", source))
    }
}

/// The inputs of a violated property's counterexample, in the order the program reads them.
/// Fails when the report does not carry all of them (an abridged trace, a value read from
/// an uninitialised variable, which a harness cannot supply).
pub fn inputs<'r>(p: &Program, prop: &'r PropertyReport) -> Result<Vec<Input<'r>>, String> {
    if prop.verdict != Verdict::False {
        return Err(format!("the property at line {} is not violated (verdict {})", prop.range.line, prop.verdict.as_str()));
    }
    if abridged(&prop.trace) {
        return Err("the counterexample is a long run whose trace is shown abridged; its inputs are not all in the report".into());
    }
    let types = input_types(p);
    let mut res = Vec::new();
    for step in &prop.trace {
        let Some(TraceInput { source, origin, value }) = &step.input else { continue };
        // A confirmed counterexample does not depend on the result of an unmodelled external
        // function or on an `extern` object (a header's `stdin`, `__daylight`): the harness
        // leaves them to the real library.
        if matches!(origin, InputOrigin::Unmodelled | InputOrigin::External) {
            continue;
        }
        if *origin != InputOrigin::Call {
            return Err(format!("the counterexample reads {} at line {}, which a harness cannot supply", source, step.range.line));
        }
        entry_argument(source)?;
        let value = *value;
        let ty = *types.get(source).ok_or_else(|| format!("the input function `{}` is not called in the program", source))?;
        res.push(Input { step, function: source.clone(), ty, value });
    }
    Ok(res)
}

/// The whole input sequence of a violated property's counterexample as `(function, type,
/// value)`: from the report's full list for a long run whose trace is abridged, else from the
/// trace's steps.
pub fn sequence(p: &Program, prop: &PropertyReport) -> Result<Vec<(String, IntTy, i128)>, String> {
    // A long run's abridged trace comes with the run's whole input sequence (maybe empty).
    if prop.verdict == Verdict::False && (abridged(&prop.trace) || !prop.inputs.is_empty()) {
        let types = input_types(p);
        return prop
            .inputs
            .iter()
            .map(|(f, v)| {
                entry_argument(f)?;
                types.get(f).map(|t| (f.clone(), *t, *v)).ok_or_else(|| format!("the input function `{}` is not called in the program", f))
            })
            .collect();
    }
    Ok(inputs(p, prop)?.iter().map(|i| (i.function.clone(), i.ty, i.value)).collect())
}

/// The C harness that replays a violated property's counterexample (see
/// `analysis_engine::harness`): every input function returns the trace's values in order.
pub fn harness(p: &Program, prop: &PropertyReport) -> Result<String, String> {
    let seq = sequence(p, prop)?;
    let defined: Vec<String> = p.functions.iter().map(|f| f.name.clone()).collect();
    // Input functions called off the path are defined too, so that the program links.
    let also: Vec<(String, IntTy)> = input_types(p).into_iter().collect();
    let mut text = analysis_engine::harness::harness_source_with(&seq, &also, &defined);
    let header = format!(
        "/* Counterexample of the {} at {}:{}:{} ({} inputs). */\n",
        crate::messages::describe(prop),
        prop.range.file,
        prop.range.line,
        prop.range.col,
        seq.len()
    );
    text.insert_str(0, &header);
    Ok(text)
}

/// The first violated property whose counterexample can be replayed, or why none can.
pub fn replayable<'r>(p: &Program, props: &'r [PropertyReport]) -> Result<&'r PropertyReport, String> {
    let mut why = None;
    for prop in props.iter().filter(|q| q.verdict == Verdict::False) {
        if prop.kind == TargetKind::OutOfBounds {
            // A native run does not stop at an access out of bounds: nothing would show it.
            why.get_or_insert(format!("the access out of bounds at line {} is not observable in a native run", prop.range.line));
            continue;
        }
        match sequence(p, prop) {
            Ok(_) => return Ok(prop),
            Err(e) => {
                why.get_or_insert(e);
            }
        }
    }
    Err(why.unwrap_or_else(|| "no property is violated".into()))
}
