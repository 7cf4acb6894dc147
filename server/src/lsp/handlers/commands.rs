//! `workspace/executeCommand`: verify a file or a function again (even when cached), cancel a
//! file's job, and step through a counterexample (`cpals.showTrace URI LINE [STEP]` shows one
//! step, `cpals.nextStep` the next one; the editor is moved there with `window/showDocument`,
//! sent from a task of its own so that the handler never waits for the client), and return a
//! whole counterexample as data (`cpals.trace URI LINE`, for editor plugins that list the steps
//! themselves: the VS Code trace view, Neovim's quickfix list).

use analysis_engine::report::Verdict;
use serde_json::{json, Value};
use tower_lsp::jsonrpc::{Error, Result};
use tower_lsp::lsp_types::{ExecuteCommandParams, Range, ShowDocumentParams, Url};

use super::code_lens::{CANCEL, NEXT_STEP, SHOW_TRACE, TRACE, VERIFY_FILE, VERIFY_FUNCTION};
use super::diagnostics::step_message;
use crate::lsp::job::Force;
use crate::lsp::scheduler::Request;
use crate::lsp::session::results::merge;
use crate::lsp::session::Session;

/// What the backend does after the command's answer.
pub enum Effect {
    Schedule(Request),
    ShowDocument(ShowDocumentParams),
}

fn uri_arg(args: &[Value], i: usize) -> Result<Url> {
    args.get(i)
        .and_then(|v| v.as_str())
        .and_then(|s| Url::parse(s).ok())
        .ok_or_else(|| Error::invalid_params(format!("argument {} must be a document URI", i + 1)))
}

fn open(session: &Session, uri: &Url) -> Result<()> {
    if session.docs.contains_key(uri) {
        Ok(())
    } else {
        Err(Error::invalid_params(format!("{uri} is not open")))
    }
}

/// The counterexample reported on `line` (0-based) of `uri`: the violation, then every step
/// with its location, the statement, its values, the input it chose or the branch it took.
fn whole_trace(session: &Session, uri: &Url, line: u32) -> Result<Value> {
    let e = session.docs.get(uri).ok_or_else(|| Error::invalid_params(format!("{uri} is not open")))?;
    let merged = merge(&e.state, e.doc.version);
    let p = merged
        .properties
        .iter()
        .find(|p| p.verdict == Verdict::False && p.view.range.start.line == line && !p.view.trace.is_empty())
        .ok_or_else(|| Error::invalid_params(format!("no counterexample on line {}", line + 1)))?;
    let steps: Vec<Value> = p
        .view
        .trace
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({
                "message": step_message(i, s),
                "uri": s.uri,
                "range": s.range,
                "function": s.function,
                "text": s.text.trim(),
                "values": s.values.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
                "input": s.input.as_ref().map(|(from, v)| json!([from, v])),
                "branch": s.branch,
            })
        })
        .collect();
    Ok(json!({
        "uri": uri,
        "range": p.view.range,
        "function": p.view.function,
        "message": p.view.message,
        "stale": p.stale,
        "steps": steps,
    }))
}

/// The step `step` of the counterexample reported on `line` (0-based) of `uri`.
fn trace_step(session: &Session, uri: &Url, line: u32, step: usize) -> Result<(Value, ShowDocumentParams)> {
    let e = session.docs.get(uri).ok_or_else(|| Error::invalid_params(format!("{uri} is not open")))?;
    let merged = merge(&e.state, e.doc.version);
    let p = merged
        .properties
        .iter()
        .find(|p| p.verdict == Verdict::False && p.view.range.start.line == line && !p.view.trace.is_empty())
        .ok_or_else(|| Error::invalid_params(format!("no counterexample on line {}", line + 1)))?;
    let trace = &p.view.trace;
    let i = step.min(trace.len() - 1);
    let s = &trace[i];
    let value = json!({
        "step": i,
        "steps": trace.len(),
        "message": step_message(i, s),
        "uri": s.uri,
        "range": s.range,
        "values": s.values.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
        "stale": p.stale,
    });
    let show = ShowDocumentParams {
        uri: s.uri.clone(),
        external: None,
        take_focus: Some(true),
        selection: Some(Range::new(s.range.start, s.range.end)),
    };
    Ok((value, show))
}

pub fn execute(session: &Session, p: ExecuteCommandParams) -> Result<(Option<Value>, Vec<Effect>)> {
    let args = &p.arguments;
    match p.command.as_str() {
        VERIFY_FILE => {
            let uri = uri_arg(args, 0)?;
            open(session, &uri)?;
            Ok((None, vec![Effect::Schedule(Request::Verify { uri, force: Force::All, focus_function: None })]))
        }
        VERIFY_FUNCTION => {
            let uri = uri_arg(args, 0)?;
            open(session, &uri)?;
            let name = args
                .get(1)
                .and_then(|v| v.as_str())
                .ok_or_else(|| Error::invalid_params("argument 2 must be a function name"))?
                .to_string();
            Ok((
                None,
                vec![Effect::Schedule(Request::Verify { uri, force: Force::Functions(vec![name.clone()]), focus_function: Some(name) })],
            ))
        }
        CANCEL => {
            let uri = uri_arg(args, 0)?;
            open(session, &uri)?;
            Ok((None, vec![Effect::Schedule(Request::CancelFile(uri))]))
        }
        SHOW_TRACE => {
            let uri = uri_arg(args, 0)?;
            let line =
                args.get(1).and_then(|v| v.as_u64()).ok_or_else(|| Error::invalid_params("argument 2 must be a 0-based line"))? as u32;
            let step = args.get(2).and_then(|v| v.as_u64()).unwrap_or(0) as usize;
            let (value, show) = trace_step(session, &uri, line, step)?;
            let shown = value["step"].as_u64().unwrap_or(0) as usize;
            *session.trace_cursor.lock().unwrap_or_else(|e| e.into_inner()) =
                crate::lsp::session::TraceCursor { uri: Some(uri), line, step: shown };
            Ok((Some(value), session_show(session, show)))
        }
        NEXT_STEP => {
            let cursor = session.trace_cursor.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let uri = cursor.uri.ok_or_else(|| Error::invalid_params("no counterexample is being shown (use cpals.showTrace first)"))?;
            let (value, show) = trace_step(session, &uri, cursor.line, cursor.step + 1)?;
            let shown = value["step"].as_u64().unwrap_or(0) as usize;
            session.trace_cursor.lock().unwrap_or_else(|e| e.into_inner()).step = shown;
            Ok((Some(value), session_show(session, show)))
        }
        TRACE => {
            let uri = uri_arg(args, 0)?;
            let line =
                args.get(1).and_then(|v| v.as_u64()).ok_or_else(|| Error::invalid_params("argument 2 must be a 0-based line"))? as u32;
            Ok((Some(whole_trace(session, &uri, line)?), Vec::new()))
        }
        other => Err(Error::invalid_params(format!("unknown command `{other}`"))),
    }
}

fn session_show(session: &Session, show: ShowDocumentParams) -> Vec<Effect> {
    if session.caps().show_document {
        vec![Effect::ShowDocument(show)]
    } else {
        Vec::new()
    }
}
