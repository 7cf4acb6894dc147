//! A small LSP client for cpals's tests and its latency benchmark (`xtask lsp-bench`):
//! JSON-RPC with `Content-Length` framing over any byte stream (an in-process duplex pipe or
//! a child process's stdio). It answers the server's requests (`workspace/configuration`,
//! progress creation, refreshes, `window/showDocument`) and records every message the server
//! sends, with its arrival time.
//!
//! Test support, not part of the product: a failed request or a message that does not come
//! in time panics, which fails the test (or stops the benchmark) with the reason.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use cpals::lsp::ServerOptions;

type Writer = Arc<tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;

/// A message from the server and when it arrived.
#[derive(Clone, Debug)]
pub struct Received {
    pub at: Instant,
    pub msg: Value,
}

impl Received {
    pub fn method(&self) -> Option<&str> {
        self.msg.get("method").and_then(|m| m.as_str())
    }
}

pub struct LspClient {
    writer: Writer,
    next_id: AtomicI64,
    pending: Arc<Mutex<HashMap<i64, oneshot::Sender<Value>>>>,
    incoming: mpsc::UnboundedReceiver<Received>,
    /// Every notification and request the server sent, in order.
    pub history: Vec<Received>,
    /// What `workspace/configuration` answers for the `cpals` section.
    pub settings: Arc<Mutex<Value>>,
    pub timeout: Duration,
    reader: tokio::task::JoinHandle<()>,
}

async fn write_message(w: &Writer, v: &Value) -> std::io::Result<()> {
    let body = serde_json::to_vec(v).expect("JSON");
    let mut w = w.lock().await;
    w.write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes()).await?;
    w.write_all(&body).await?;
    w.flush().await
}

async fn read_message<R: AsyncRead + Unpin>(r: &mut BufReader<R>) -> Option<Value> {
    loop {
        let mut len = None;
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).await.ok()? == 0 {
                return None;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("Content-Length:") {
                len = v.trim().parse::<usize>().ok();
            }
        }
        let len = len?;
        let mut body = vec![0; len];
        r.read_exact(&mut body).await.ok()?;
        if let Ok(v) = serde_json::from_slice(&body) {
            return Some(v);
        }
    }
}

impl LspClient {
    /// A client over a reader and a writer connected to a server.
    pub fn new<R, W>(read: R, write: W) -> LspClient
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let writer: Writer = Arc::new(tokio::sync::Mutex::new(Box::new(write)));
        let pending: Arc<Mutex<HashMap<i64, oneshot::Sender<Value>>>> = Arc::default();
        let settings = Arc::new(Mutex::new(json!({})));
        let (tx, incoming) = mpsc::unbounded_channel();
        let reader = {
            let (writer, pending, settings) = (writer.clone(), pending.clone(), settings.clone());
            tokio::spawn(async move {
                let mut r = BufReader::new(read);
                let trace = std::env::var_os("CPALS_CLIENT_TRACE").is_some();
                while let Some(msg) = read_message(&mut r).await {
                    let at = Instant::now();
                    if trace {
                        eprintln!("<- {msg}");
                    }
                    let method = msg.get("method").and_then(|m| m.as_str()).map(str::to_string);
                    let id = msg.get("id").cloned();
                    match (method, id) {
                        (None, Some(id)) => {
                            let waiting = id.as_i64().and_then(|id| pending.lock().unwrap().remove(&id));
                            match waiting {
                                Some(s) => {
                                    let _ = s.send(msg);
                                }
                                // A response to no request of ours (e.g. the error answer to a
                                // message the server could not parse): recorded.
                                None => {
                                    let _ = tx.send(Received { at, msg });
                                }
                            }
                        }
                        (Some(method), Some(id)) => {
                            let result = match method.as_str() {
                                "workspace/configuration" => {
                                    let n = msg["params"]["items"].as_array().map(|a| a.len()).unwrap_or(1);
                                    let s = settings.lock().unwrap().clone();
                                    Value::Array(vec![s; n])
                                }
                                "window/showDocument" => json!({"success": true}),
                                _ => Value::Null,
                            };
                            let _ = write_message(&writer, &json!({"jsonrpc": "2.0", "id": id, "result": result})).await;
                            let _ = tx.send(Received { at, msg });
                        }
                        (Some(_), None) => {
                            let _ = tx.send(Received { at, msg });
                        }
                        (None, None) => {}
                    }
                }
            })
        };
        LspClient {
            writer,
            next_id: AtomicI64::new(1),
            pending,
            incoming,
            history: Vec::new(),
            settings,
            timeout: Duration::from_secs(120),
            reader,
        }
    }

    /// A server in this process (its transport over in-memory pipes).
    pub fn in_process(options: ServerOptions) -> LspClient {
        let (client_end, server_end) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_end);
        let (service, socket) = cpals::lsp::service(options);
        tokio::spawn(cpals::lsp::transport::serve(server_read, server_write, service, socket));
        let (read, write) = tokio::io::split(client_end);
        LspClient::new(read, write)
    }

    /// A `cpals lsp` process.
    pub fn spawn(bin: &std::path::Path, args: &[&str]) -> std::io::Result<(LspClient, tokio::process::Child)> {
        let mut child = tokio::process::Command::new(bin)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        Ok((LspClient::new(stdout, stdin), child))
    }

    /// Closes the connection's input side (the server sees the end of its input).
    pub async fn close_input(&self) {
        let mut w = self.writer.lock().await;
        let _ = w.shutdown().await;
        *w = Box::new(tokio::io::sink());
    }

    pub async fn send_raw(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut w = self.writer.lock().await;
        w.write_all(bytes).await?;
        w.flush().await
    }

    pub async fn notify(&self, method: &str, params: Value) {
        let mut msg = json!({"jsonrpc": "2.0", "method": method});
        if !params.is_null() {
            msg["params"] = params;
        }
        let _ = write_message(&self.writer, &msg).await;
    }

    /// Sends a request and waits for its response (the whole response object).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (s, r) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, s);
        let mut msg = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_null() {
            msg["params"] = params;
        }
        write_message(&self.writer, &msg).await.map_err(|e| format!("cannot send {method}: {e}"))?;
        match tokio::time::timeout(self.timeout, r).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(_)) => Err(format!("{method}: the server went away")),
            Err(_) => Err(format!("{method}: no response within {:?}", self.timeout)),
        }
    }

    /// `result` of a request that must succeed.
    pub async fn call(&self, method: &str, params: Value) -> Value {
        let resp = self.request(method, params).await.unwrap_or_else(|e| panic!("{e}"));
        if let Some(err) = resp.get("error") {
            panic!("{method} failed: {err}");
        }
        resp["result"].clone()
    }

    /// `initialize` + `initialized` with the capabilities an editor with every feature has.
    pub async fn initialize(&self, init_options: Value) -> Value {
        let caps = json!({
            "textDocument": {
                "publishDiagnostics": {"relatedInformation": true, "versionSupport": true, "tagSupport": {"valueSet": [1, 2]}},
                "inlayHint": {}, "hover": {"contentFormat": ["markdown", "plaintext"]}, "codeLens": {},
                "synchronization": {"didSave": true}
            },
            "workspace": {
                "configuration": true, "inlayHint": {"refreshSupport": true}, "codeLens": {"refreshSupport": true}, "didChangeConfiguration": {},
                "didChangeWatchedFiles": {"dynamicRegistration": true}
            },
            "window": {"workDoneProgress": true, "showDocument": {"support": true}}
        });
        let result = self
            .call("initialize", json!({"processId": null, "rootUri": null, "capabilities": caps, "initializationOptions": init_options}))
            .await;
        self.notify("initialized", json!({})).await;
        result
    }

    pub async fn open(&self, uri: &str, text: &str) {
        self.notify("textDocument/didOpen", json!({"textDocument": {"uri": uri, "languageId": "c", "version": 1, "text": text}})).await;
    }

    /// Replaces lines `line..line+1` (0-based) with `text` (which should end with a newline).
    pub async fn replace_line(&self, uri: &str, version: i32, line: u32, text: &str) {
        let change = json!({"range": {"start": {"line": line, "character": 0}, "end": {"line": line + 1, "character": 0}}, "text": text});
        self.notify("textDocument/didChange", json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]})).await;
    }

    pub async fn save(&self, uri: &str) {
        self.notify("textDocument/didSave", json!({"textDocument": {"uri": uri}})).await;
    }

    /// The next server message that satisfies `pred` (the others are kept in `history` only).
    pub async fn wait_for(&mut self, what: &str, mut pred: impl FnMut(&Received) -> bool) -> Received {
        let deadline = tokio::time::Instant::now() + self.timeout;
        loop {
            match tokio::time::timeout_at(deadline, self.incoming.recv()).await {
                Ok(Some(m)) => {
                    self.history.push(m.clone());
                    if pred(&m) {
                        return m;
                    }
                }
                Ok(None) => panic!("the server closed the connection while waiting for {what}"),
                Err(_) => panic!("timed out after {:?} waiting for {what}", self.timeout),
            }
        }
    }

    /// Messages already received (without waiting), appended to `history`.
    pub fn drain(&mut self) -> Vec<Received> {
        let mut out = Vec::new();
        while let Ok(m) = self.incoming.try_recv() {
            self.history.push(m.clone());
            out.push(m);
        }
        out
    }

    /// The next `publishDiagnostics` for `uri` at `version` whose diagnostics are all current
    /// (none marked stale).
    pub async fn fresh_diagnostics(&mut self, uri: &str, version: i32) -> Vec<Value> {
        let m = self
            .wait_for(&format!("current diagnostics of {uri} version {version}"), |m| {
                m.method() == Some("textDocument/publishDiagnostics")
                    && m.msg["params"]["uri"] == uri
                    && m.msg["params"]["version"] == version
                    && is_fresh(&m.msg["params"]["diagnostics"])
            })
            .await;
        m.msg["params"]["diagnostics"].as_array().cloned().unwrap_or_default()
    }

    /// The next `cpals/jobDone` for `uri` that satisfies `pred`.
    pub async fn job_done(&mut self, uri: &str, mut pred: impl FnMut(&Value) -> bool) -> Value {
        let m = self
            .wait_for(&format!("cpals/jobDone for {uri}"), |m| {
                m.method() == Some("cpals/jobDone") && m.msg["params"]["uri"] == uri && pred(&m.msg["params"])
            })
            .await;
        m.msg["params"].clone()
    }

    /// Waits until a job for `version` of `uri` has finished (not cancelled, every unit current)
    /// and returns its
    /// summary with the diagnostics published last for `uri` (the server publishes them before
    /// it reports the job done).
    pub async fn settled(&mut self, uri: &str, version: i32) -> (Value, Vec<Value>) {
        let done = self
            .job_done(uri, |j| j["version"] == version && j["cancelled"] == false && j["skipped"].as_array().is_none_or(|s| s.is_empty()))
            .await;
        self.drain();
        let diags = self
            .history
            .iter()
            .rev()
            .find(|m| m.method() == Some("textDocument/publishDiagnostics") && m.msg["params"]["uri"] == uri)
            .map(|m| m.msg["params"]["diagnostics"].as_array().cloned().unwrap_or_default())
            .unwrap_or_default();
        (done, diags)
    }

    pub async fn shutdown(&self) {
        let _ = self.request("shutdown", Value::Null).await;
        self.notify("exit", Value::Null).await;
    }

    /// True while the connection's reader still runs.
    pub fn connected(&self) -> bool {
        !self.reader.is_finished()
    }
}

/// True if no diagnostic in the list is marked stale.
pub fn is_fresh(diags: &Value) -> bool {
    diags.as_array().is_some_and(|a| a.iter().all(|d| !d["message"].as_str().unwrap_or("").contains("(stale")))
}
