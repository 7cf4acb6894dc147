//! The byte transport in front of tower-lsp: it splits the input into `Content-Length`
//! frames and passes on only well-formed JSON-RPC messages. tower-lsp 0.20 stops reading its
//! input after the first frame it cannot decode (the framed reader ends the stream on an
//! error), so a single malformed message would leave the server deaf. Here a malformed frame
//! is answered with a JSON-RPC error (parse error or invalid request) and skipped.

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tower_lsp::{ClientSocket, LspService, Server};

use crate::lsp::backend::Backend;

/// Largest message accepted (larger ones are refused, not buffered).
const MAX_FRAME: usize = 64 << 20;

enum Frame {
    Body(Vec<u8>),
    /// A header block without a usable `Content-Length`.
    BadHeader(String),
}

/// Reads one frame; `None` at the end of the input.
async fn read_frame<R: AsyncRead + Unpin>(r: &mut BufReader<R>) -> Option<Frame> {
    let mut len: Option<Result<usize, String>> = None;
    let mut saw_header = false;
    loop {
        let mut line = Vec::new();
        if r.read_until(b'\n', &mut line).await.ok()? == 0 {
            return None;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if saw_header {
                break;
            }
            continue;
        }
        saw_header = true;
        if let Some((name, value)) = text.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                len = Some(value.trim().parse::<usize>().map_err(|_| format!("bad Content-Length `{}`", value.trim())));
            }
        }
    }
    match len {
        Some(Ok(n)) if n <= MAX_FRAME => {
            let mut body = vec![0; n];
            r.read_exact(&mut body).await.ok()?;
            Some(Frame::Body(body))
        }
        Some(Ok(n)) => {
            // Skip the oversized body without keeping it.
            let mut rest = (&mut *r).take(n as u64);
            tokio::io::copy(&mut rest, &mut tokio::io::sink()).await.ok()?;
            Some(Frame::BadHeader(format!("message of {n} bytes exceeds the limit of {MAX_FRAME}")))
        }
        Some(Err(e)) => Some(Frame::BadHeader(e)),
        None => Some(Frame::BadHeader("missing Content-Length header".into())),
    }
}

fn frame(v: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(v).expect("JSON");
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend(body);
    out
}

fn error(id: Value, code: i64, message: String) -> Vec<u8> {
    frame(&json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": id}))
}

/// Checks a frame's body and returns its method (if any); `Err` is the error response to
/// send instead.
fn check(body: &[u8]) -> Result<Option<String>, Vec<u8>> {
    let v: Value = serde_json::from_slice(body).map_err(|e| error(Value::Null, -32700, format!("Parse error: {e}")))?;
    let is_request = serde_json::from_value::<tower_lsp::jsonrpc::Request>(v.clone()).is_ok();
    let is_response = serde_json::from_value::<tower_lsp::jsonrpc::Response>(v.clone()).is_ok();
    if is_request || is_response {
        Ok(v.get("method").and_then(|m| m.as_str()).map(str::to_string))
    } else {
        let id = v.get("id").filter(|i| i.is_number() || i.is_string()).cloned().unwrap_or(Value::Null);
        Err(error(id, -32600, "Invalid request: not a JSON-RPC 2.0 message".into()))
    }
}

/// How the session ended.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Ended {
    pub shutdown: bool,
    pub exit: bool,
}

impl Ended {
    /// The process exit code the protocol asks for: 0 after `shutdown` then `exit`, else 1.
    pub fn code(self) -> i32 {
        if self.shutdown && self.exit {
            0
        } else {
            1
        }
    }
}

/// Serves the language server over a byte stream until `exit` or the end of the input.
pub async fn serve<I, O>(input: I, mut output: O, service: LspService<Backend>, socket: ClientSocket) -> Ended
where
    I: AsyncRead + Send + Unpin + 'static,
    O: AsyncWrite + Send + Unpin + 'static,
{
    let (to_server, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, from_server) = tokio::io::duplex(1 << 20);
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Vec<u8>>();

    // Input: whole, checked frames to the server; errors straight to the output.
    let errors = out_tx.clone();
    let (exit_tx, exit_rx) = tokio::sync::oneshot::channel::<()>();
    let ended = std::sync::Arc::new(std::sync::Mutex::new(Ended::default()));
    let seen = ended.clone();
    let input_pump = tokio::spawn(async move {
        let mut r = BufReader::new(input);
        let mut to_server = to_server;
        while let Some(f) = read_frame(&mut r).await {
            match f {
                Frame::Body(body) => match check(&body) {
                    Ok(method) => {
                        let mut msg = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
                        msg.extend(body);
                        if to_server.write_all(&msg).await.is_err() {
                            break;
                        }
                        match method.as_deref() {
                            Some("shutdown") => seen.lock().unwrap_or_else(|e| e.into_inner()).shutdown = true,
                            Some("exit") => {
                                // tower-lsp 0.20 stops reading at `exit` but does not return from
                                // `serve`; the transport ends the session itself.
                                seen.lock().unwrap_or_else(|e| e.into_inner()).exit = true;
                                let _ = exit_tx.send(());
                                return;
                            }
                            _ => {}
                        }
                    }
                    Err(resp) => {
                        tracing::warn!("malformed message from the client: answered with an error");
                        let _ = errors.send(resp);
                    }
                },
                Frame::BadHeader(why) => {
                    tracing::warn!("malformed message header from the client: {why}");
                    let _ = errors.send(error(Value::Null, -32700, format!("Parse error: {why}")));
                }
            }
        }
        // End of input: the server sees it too.
        let _ = to_server.shutdown().await;
    });
    // The server's output, frame by frame, merged with the error answers.
    let server_pump = tokio::spawn(async move {
        let mut r = BufReader::new(from_server);
        while let Some(Frame::Body(body)) = read_frame(&mut r).await {
            let mut msg = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
            msg.extend(body);
            if out_tx.send(msg).is_err() {
                break;
            }
        }
    });
    let writer = tokio::spawn(async move {
        while let Some(msg) = out_rx.recv().await {
            if output.write_all(&msg).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    // Boxed, so that dropping it below ends the server (and closes its output pipe) even if it
    // did not finish in time.
    let mut served = Box::pin(Server::new(server_in, server_out, socket).serve(service));
    tokio::select! {
        _ = &mut served => {}
        Ok(()) = exit_rx => {
            // Let the server answer what came before `exit`, then end.
            let _ = tokio::time::timeout(std::time::Duration::from_millis(200), &mut served).await;
        }
    }
    // The server is gone (its output pipe closes): deliver what it wrote.
    drop(served);
    input_pump.abort();
    let _ = server_pump.await;
    let _ = writer.await;
    let ended = *ended.lock().unwrap_or_else(|e| e.into_inner());
    ended
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_json_rpc_messages_pass() {
        assert!(check(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#).is_ok());
        assert!(check(br#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#).is_ok());
        assert!(check(br#"{"jsonrpc":"2.0","id":3,"result":null}"#).is_ok());
        let e = check(br#"{"bad": }"#).unwrap_err();
        assert!(String::from_utf8(e).unwrap().contains("-32700"));
        let e = String::from_utf8(check(br#"{"id": 7, "hello": 1}"#).unwrap_err()).unwrap();
        assert!(e.contains("-32600") && e.contains("\"id\":7"), "{e}");
        assert!(check(b"[1,2]").is_err());
    }
}
