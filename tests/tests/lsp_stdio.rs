//! The built `cpals` binary as a language server over stdio: malformed input (and, issue 24,
//! every kind of broken framing followed by a good request), the "Done when" fixture, and
//! shutdown/exit while a job runs.

use std::time::Duration;

use cpals_tests::{cpals_bin, file_uri, root};
use lsp_test_client::LspClient;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_lsp_on_stdio() {
    let bin = cpals_bin();
    let (mut c, mut child) = LspClient::spawn(&bin, &["lsp"]).expect("cpals lsp starts");
    // Malformed JSON, a message that is not JSON-RPC and a header without a length get errors,
    // and the server goes on.
    c.send_raw(b"Content-Length: 10\r\n\r\n{\"bad\": }\n").await.unwrap();
    let err = c.wait_for("a parse error", |m| m.msg.get("error").is_some()).await;
    assert_eq!(err.msg["error"]["code"], -32700, "{}", err.msg);
    c.send_raw(b"Content-Length: 16\r\n\r\n{\"id\":5,\"x\":[1]}").await.unwrap();
    let err = c.wait_for("an invalid-request error", |m| m.msg.get("error").is_some()).await;
    assert_eq!(err.msg["error"]["code"], -32600, "{}", err.msg);
    assert_eq!(err.msg["id"], 5);
    c.send_raw(b"Content-Type: text/plain\r\n\r\n").await.unwrap();
    let err = c.wait_for("a header error", |m| m.msg.get("error").is_some()).await;
    assert_eq!(err.msg["error"]["code"], -32700, "{}", err.msg);
    c.initialize(json!({"notifyJobs": true, "settings": {"debounceMs": 0}})).await;

    let path = root().join("fixtures/lsp/loops.c");
    let uri = file_uri(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    c.open(&uri, &text).await;
    let (done, diags) = c.settled(&uri, 1).await;
    assert_eq!(done["verified"], json!(["main"]));
    let codes: Vec<&str> = diags.iter().map(|d| d["code"].as_str().unwrap()).collect();
    assert_eq!(codes, vec!["unreachable", "proved", "violated"], "{diags:#?}");
    let violated = &diags[2];
    assert!(violated["relatedInformation"].as_array().unwrap().len() > 30);
    // An unknown request: an error, not a crash.
    let r = c.request("cpals/unknown", json!({})).await.unwrap();
    assert_eq!(r["error"]["code"], -32601);

    // Shutdown and exit while a job runs (verify again forces the engine to run).
    c.call("workspace/executeCommand", json!({"command": "cpals.verifyFile", "arguments": [uri]})).await;
    c.shutdown().await;
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait()).await.expect("the server exits").unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_flag_starts_the_server_and_closed_input_ends_it() {
    let (c, mut child) = LspClient::spawn(&cpals_bin(), &["--stdio"]).expect("cpals --stdio starts");
    let result = c.initialize(Value::Null).await;
    assert_eq!(result["serverInfo"]["name"], "cpals");
    assert_eq!(result["capabilities"]["textDocumentSync"]["change"], 2, "incremental sync");
    c.close_input().await;
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait()).await.expect("the server exits").unwrap();
    assert_eq!(status.code(), Some(1), "no shutdown before the end of the input");
}

/// Issue 24: after a frame with a negative, non-numeric, missing, huge or wrong
/// `Content-Length` (which used to leave the server deaf, or waiting for 3 GB), the next
/// request is answered, and the bad frame gets a parse error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_any_malformed_frame_the_next_request_is_answered() {
    let request = r#"{"jsonrpc":"2.0","id":"bad","method":"cpals/unknown"}"#;
    for bad in [
        format!("Content-Length: -5\r\n\r\n{request}"),
        format!("Content-Length: abc\r\n\r\n{request}"),
        format!("Content-Type: application/vscode-jsonrpc\r\n\r\n{request}"),
        format!("{request}\r\n\r\n"),
        format!("Content-Length: 3000000000\r\n\r\n{request}"),
        format!("Content-Length: 500\r\n\r\n{request}"),
        format!("Content-Length: 20\r\n\r\n{request}"),
        "Content-Len".to_string(),
    ] {
        let (mut c, mut child) = LspClient::spawn(&cpals_bin(), &["lsp"]).expect("cpals lsp starts");
        c.send_raw(bad.as_bytes()).await.unwrap();
        let result = c.initialize(Value::Null).await;
        assert_eq!(result["serverInfo"]["name"], "cpals", "after {bad:?}");
        let err = c.wait_for("a parse error", |m| m.msg.get("error").is_some()).await;
        assert_eq!(err.msg["error"]["code"], -32700, "after {bad:?}: {}", err.msg);
        let r = c.request("cpals/unknown", json!({})).await.unwrap();
        assert_eq!(r["error"]["code"], -32601, "after {bad:?}");
        c.shutdown().await;
        let status = tokio::time::timeout(Duration::from_secs(60), child.wait()).await.expect("the server exits").unwrap();
        assert!(status.success(), "after {bad:?}: {status}");
    }
}
