//! The byte transport in front of tower-lsp: it splits the input into `Content-Length`
//! frames and passes on only well-formed JSON-RPC messages. tower-lsp 0.20 stops reading its
//! input after the first frame it cannot decode (the framed reader ends the stream on an
//! error), so a single malformed message would leave the server deaf. Here every framing
//! error (a header without a usable `Content-Length`, a negative, non-numeric or oversized
//! one, a body that is not JSON or is cut short, bytes between messages) is logged, answered
//! with a JSON-RPC parse error (-32700; the id is not known) and skipped: the reader
//! resynchronises at the next header. Messages over [`MAX_FRAME`] are refused without reading
//! their body into memory.

use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tower_lsp::{ClientSocket, LspService, Server};

use crate::lsp::backend::Backend;

/// Largest message accepted (64 MiB); larger ones are refused, not buffered.
pub const MAX_FRAME: u64 = 64 << 20;

/// Longest header block accepted (clients send one or two short lines).
const MAX_HEADER: usize = 8 << 10;

/// The header names a frame can start with; after an error the reader skips to the next one.
const HEADER_NAMES: [&[u8]; 2] = [b"content-length", b"content-type"];

/// What the reader found next in its input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// The body of a well-framed message (valid JSON; whether it is JSON-RPC is checked later).
    Message(Vec<u8>),
    /// Input that is not a well-formed message, and why; the reader has skipped past it.
    Malformed(String),
}

/// Splits a byte stream into frames, recovering from any framing error (see the module
/// documentation). Never panics, and reads no more than [`MAX_FRAME`] plus a header ahead.
pub struct FrameReader<R> {
    input: R,
    /// Bytes read and not consumed yet are `buf[pos..]`.
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
    /// After an error: skip to the next header name before parsing a header.
    resync: bool,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(input: R) -> FrameReader<R> {
        FrameReader { input, buf: Vec::new(), pos: 0, eof: false, resync: false }
    }

    fn avail(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Reads more input; false at its end (a read error ends it too).
    async fn fill(&mut self) -> bool {
        if self.eof {
            return false;
        }
        if self.pos > 0 && self.pos * 2 >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let len = self.buf.len();
        self.buf.resize(len + (64 << 10), 0);
        let read = self.input.read(&mut self.buf[len..]).await;
        let n = read.unwrap_or(0);
        self.buf.truncate(len + n);
        if n == 0 {
            self.eof = true;
        }
        n > 0
    }

    /// Drops the input up to the next header name; false at the end of the input.
    async fn skip_to_header(&mut self) -> bool {
        let longest = HEADER_NAMES.iter().map(|n| n.len()).max().unwrap_or(1);
        loop {
            if let Some(i) = find_header_name(self.avail()) {
                self.pos += i;
                self.resync = false;
                return true;
            }
            // Keep a tail that could be the start of a name.
            let len = self.avail().len();
            self.pos += len.saturating_sub(longest - 1);
            if !self.fill().await {
                self.pos = self.buf.len();
                return false;
            }
        }
    }

    /// The next frame; `None` at the end of the input.
    pub async fn next_frame(&mut self) -> Option<Frame> {
        if self.resync && !self.skip_to_header().await {
            return None;
        }
        // Blank lines between messages are tolerated.
        loop {
            let blank = self.avail().iter().take_while(|b| matches!(b, b'\r' | b'\n')).count();
            self.pos += blank;
            if !self.avail().is_empty() {
                break;
            }
            if !self.fill().await {
                return None;
            }
        }
        // The header block, up to the first empty line.
        let (block_len, body_offset) = loop {
            if let Some(end) = header_end(self.avail()) {
                break end;
            }
            if self.avail().len() > MAX_HEADER {
                return Some(self.header_error(format!("no end of the message header within {MAX_HEADER} bytes")));
            }
            if !self.fill().await {
                let n = self.avail().len();
                self.pos = self.buf.len();
                return Some(Frame::Malformed(format!("the input ended inside a message header ({n} bytes)")));
            }
        };
        let length = match content_length(&self.avail()[..block_len]) {
            Ok(n) => n,
            Err(why) => return Some(self.header_error(why)),
        };
        if length > MAX_FRAME {
            // Not read: the body is skipped like any other bytes that are not a header.
            self.pos += body_offset;
            self.resync = true;
            return Some(Frame::Malformed(format!("a message of {length} bytes exceeds the limit of {MAX_FRAME} bytes")));
        }
        let length = length as usize;
        // The header is consumed; on an error below the reader looks for the next header from
        // the body's start on (a wrong length may have swallowed it).
        self.pos += body_offset;
        let mut scan = JsonScan::default();
        loop {
            let have = self.avail().len();
            let (seen, upto) = (scan.seen, have.min(length));
            scan.feed(&self.buf[self.pos + seen..self.pos + upto]);
            if scan.bad {
                // The body is already known not to be one JSON value (its length is wrong):
                // do not wait for the rest.
                self.resync = true;
                return Some(Frame::Malformed(format!("the message body is not JSON (a wrong Content-Length of {length}?)")));
            }
            if have >= length {
                break;
            }
            if !self.fill().await {
                self.resync = true;
                return Some(Frame::Malformed(format!("the input ended {have} bytes into a message of {length} bytes")));
            }
        }
        let body = &self.avail()[..length];
        match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
            Ok(_) => {
                let body = body.to_vec();
                self.pos += length;
                Some(Frame::Message(body))
            }
            Err(e) => {
                // The frame may have swallowed the next message's header: look inside.
                self.resync = true;
                Some(Frame::Malformed(format!("the message body is not JSON: {e}")))
            }
        }
    }

    /// A bad header block: skipped from its second byte on (a real header may start inside it).
    fn header_error(&mut self, why: String) -> Frame {
        self.pos += 1;
        self.resync = true;
        Frame::Malformed(why)
    }
}

/// Where the first header name starts (case-insensitive).
fn find_header_name(bytes: &[u8]) -> Option<usize> {
    (0..bytes.len()).find(|&i| HEADER_NAMES.iter().any(|n| bytes.len() - i >= n.len() && bytes[i..i + n.len()].eq_ignore_ascii_case(n)))
}

/// The header block's length (up to and including the newline of its last line) and where
/// the body starts, once the block's empty line is in `bytes`.
fn header_end(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut line_start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' {
            let line = &bytes[line_start..i];
            if line.is_empty() || line == b"\r" {
                return Some((line_start, i + 1));
            }
            line_start = i + 1;
        }
    }
    None
}

/// Shows at most 40 characters of untrusted header text, escaped.
fn shown(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut s: String = text.chars().take(40).flat_map(char::escape_debug).collect();
    if text.chars().count() > 40 {
        s.push('…');
    }
    s
}

/// The `Content-Length` of a header block (`Name: value` lines; other headers are ignored).
fn content_length(block: &[u8]) -> Result<u64, String> {
    let mut length = None;
    for line in block.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        // The next message's header after a cut-off one (`XContent-Length: 52`): the block is
        // refused, and the reader resynchronises at that name.
        if find_header_name(line).is_some_and(|i| i > 0) {
            return Err(format!("a header line with another header inside: `{}`", shown(line)));
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return Err(format!("a header line without `:`: `{}`", shown(line)));
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if name.is_empty() || !name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_') {
            return Err(format!("a malformed header name `{}`", shown(name)));
        }
        if !name.eq_ignore_ascii_case(b"content-length") {
            continue;
        }
        let value = value.trim_ascii();
        if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
            return Err(format!("Content-Length `{}` is not a number of bytes", shown(value)));
        }
        // All digits: too many of them is just too large.
        let n = std::str::from_utf8(value).ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(u64::MAX);
        if length.replace(n).is_some() {
            return Err("more than one Content-Length header".into());
        }
    }
    length.ok_or_else(|| "a message header without Content-Length".into())
}

/// Follows the structure of a body as it arrives, enough to tell early that it is not one
/// JSON value: a byte outside strings that no JSON token has (a header name, say), a raw
/// control character in a string (a header's line break), or anything but whitespace after
/// the top-level value closed. A wrong `Content-Length` whose body swallowed the next
/// message's header is so refused as soon as that header is in, without waiting for the rest.
#[derive(Default)]
struct JsonScan {
    seen: usize,
    depth: usize,
    in_string: bool,
    escaped: bool,
    closed: bool,
    bad: bool,
}

impl JsonScan {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.seen += 1;
            if self.bad {
                return;
            }
            let ws = matches!(b, b' ' | b'\t' | b'\r' | b'\n');
            if self.closed {
                self.bad = !ws;
            } else if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                    self.closed = self.depth == 0;
                } else if b < 0x20 {
                    self.bad = true;
                }
            } else {
                match b {
                    b'"' => self.in_string = true,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' if self.depth > 0 => {
                        self.depth -= 1;
                        self.closed = self.depth == 0;
                    }
                    // Separators, numbers, `true`, `false`, `null`.
                    _ if ws || b",:0123456789-+.eEtrufalsn".contains(&b) => {}
                    _ => self.bad = true,
                }
            }
        }
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
        let mut r = FrameReader::new(input);
        let mut to_server = to_server;
        while let Some(f) = r.next_frame().await {
            match f {
                Frame::Message(body) => match check(&body) {
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
                Frame::Malformed(why) => {
                    tracing::warn!("malformed input from the client, skipped to the next header: {why}");
                    let _ = errors.send(error(Value::Null, -32700, format!("Parse error: {why}")));
                }
            }
        }
        // End of input: the server sees it too.
        let _ = to_server.shutdown().await;
    });
    // The server's output, frame by frame, merged with the error answers.
    let server_pump = tokio::spawn(async move {
        let mut r = FrameReader::new(from_server);
        while let Some(f) = r.next_frame().await {
            let Frame::Message(body) = f else {
                tracing::error!("tower-lsp wrote a malformed frame: {f:?}");
                continue;
            };
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

    async fn frames(input: &[u8]) -> Vec<Frame> {
        let mut r = FrameReader::new(input);
        let mut out = Vec::new();
        while let Some(f) = r.next_frame().await {
            out.push(f);
        }
        out
    }

    const BODY: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#;

    fn good() -> Vec<u8> {
        let mut v = format!("Content-Length: {}\r\n\r\n", BODY.len()).into_bytes();
        v.extend_from_slice(BODY);
        v
    }

    /// The cases of issue 24: after each bad header the next message still comes through.
    #[tokio::test]
    async fn every_bad_header_is_reported_and_the_next_message_read() {
        let body = br#"{"jsonrpc":"2.0","id":9,"method":"x"}"#;
        for header in [
            "Content-Length: abc",
            "Content-Length: -5",
            "Content-Length: +37",
            "Content-Length:",
            "Content-Type: application/vscode-jsonrpc",
            "Content-Length: 3000000000",
            "Content-Length: 99999999999999999999999999",
            "Content-Length: 67108865",
            "Content-Length: 10",
            "Content-Length: 300",
            "Content-Length: 37\r\nContent-Length: 38",
            "Content-Length 37",
        ] {
            let mut input = format!("{header}\r\n\r\n").into_bytes();
            input.extend_from_slice(body);
            input.extend_from_slice(&good());
            let got = frames(&input).await;
            assert!(matches!(got[0], Frame::Malformed(_)), "{header}: {got:?}");
            assert_eq!(got.last(), Some(&Frame::Message(BODY.to_vec())), "{header}: {got:?}");
            assert_eq!(got.iter().filter(|f| matches!(f, Frame::Message(_))).count(), 1, "{header}: {got:?}");
        }
    }

    #[tokio::test]
    async fn good_frames_pass_unchanged() {
        let mut input = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: 44\r\n\r\n".to_vec();
        input.extend_from_slice(BODY);
        input.extend_from_slice(b"\r\n");
        input.extend_from_slice(&good());
        let got = frames(&input).await;
        assert_eq!(got, vec![Frame::Message(BODY.to_vec()); 2]);
    }

    /// A body longer than its data is refused as soon as the next header arrives, without
    /// waiting for the rest (the client may be waiting for an answer).
    #[tokio::test]
    async fn a_wrong_length_does_not_wait_for_bytes_that_are_not_coming() {
        let (mut client, server) = tokio::io::duplex(1 << 16);
        let mut r = FrameReader::new(server);
        client.write_all(b"Content-Length: 500\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"x\"}").await.unwrap();
        client.write_all(&good()).await.unwrap();
        let first = tokio::time::timeout(std::time::Duration::from_secs(5), r.next_frame()).await.expect("no wait");
        assert!(matches!(first, Some(Frame::Malformed(_))), "{first:?}");
        let second = tokio::time::timeout(std::time::Duration::from_secs(5), r.next_frame()).await.expect("no wait");
        assert_eq!(second, Some(Frame::Message(BODY.to_vec())));
    }

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
