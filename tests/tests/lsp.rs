//! The language server driven in-process (its real transport over in-memory pipes): what a
//! client sees on the "Done when" fixture, incremental re-verification of a ten-function file,
//! stale results and syntax errors, commands, settings without restart, cancellation, and the
//! robustness cases of issue 4 (unopened files, unknown methods, stale versions, a panicking
//! job, a burst of 1,000 edits, shutdown with a job running).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use analysis_engine::report::Report;
use analysis_engine::{Cancel, VerifyConfig};
use cpals::lsp::ServerOptions;
use cpals_tests::{file_uri, root, temp_dir, temp_uri};
use lsp_test_client::{is_fresh, LspClient};
use serde_json::{json, Value};

fn options() -> Value {
    json!({"notifyJobs": true, "settings": {"debounceMs": 0}})
}

async fn client(init: Value) -> LspClient {
    client_with(ServerOptions::default(), init).await
}

async fn client_with(opts: ServerOptions, init: Value) -> LspClient {
    let c = LspClient::in_process(opts);
    c.initialize(init).await;
    c
}

fn fixture() -> (String, String) {
    let path = root().join("fixtures/lsp/loops.c");
    (file_uri(&path), std::fs::read_to_string(&path).expect("fixture"))
}

/// 0-based line of the first line containing `needle`.
fn line_of(text: &str, needle: &str) -> u32 {
    text.lines().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("no line with {needle}")) as u32
}

fn with_code<'a>(diags: &'a [Value], code: &str) -> Vec<&'a Value> {
    diags.iter().filter(|d| d["code"] == code).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_sees_proofs_violations_traces_dead_code_and_invariants() {
    let (uri, text) = fixture();
    let mut c = client(options()).await;
    c.open(&uri, &text).await;
    let (done, diags) = c.settled(&uri, 1).await;
    assert_eq!(done["verified"], json!(["main"]));

    let violated = with_code(&diags, "violated");
    assert_eq!(violated.len(), 1, "{diags:#?}");
    let v = violated[0];
    assert_eq!(v["severity"], 1);
    assert_eq!(v["range"]["start"]["line"], line_of(&text, "n + s != 23"));
    assert!(v["message"].as_str().unwrap().contains("n + s != 23"), "{v}");
    let related = v["relatedInformation"].as_array().expect("the counterexample as related information");
    // The input chosen by the nondet call comes first, then one entry per step with values.
    assert!(related[0]["message"].as_str().unwrap().starts_with("input: __VERIFIER_nondet_int() = 3"), "{:#?}", related[0]);
    assert!(related.iter().any(|r| r["message"].as_str().unwrap().contains("s = 20")), "{related:#?}");
    assert!(related.iter().all(|r| r["location"]["uri"] == uri));
    let steps = related.iter().filter(|r| r["message"].as_str().unwrap().starts_with("step ")).count();
    assert!(steps > 30, "one entry per step ({steps})");

    let proved = with_code(&diags, "proved");
    assert_eq!(proved.len(), 1);
    assert_eq!(proved[0]["range"]["start"]["line"], line_of(&text, "i == 10 && s == 20"));
    assert!(proved[0]["message"].as_str().unwrap().starts_with("proved: assertion `i == 10 && s == 20` holds"));
    assert!(proved[0]["message"].as_str().unwrap().contains("combined analysis"));

    let dead = with_code(&diags, "unreachable");
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0]["range"]["start"]["line"], line_of(&text, "mode == 2") + 1, "the branch `s = 0;` under `mode == 2`");
    assert_eq!(dead[0]["tags"], json!([1]));
    assert_eq!(dead[0]["severity"], 4);

    let loop_line = line_of(&text, "while (i < 10)");
    let hints = c
        .call(
            "textDocument/inlayHint",
            json!({"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 99, "character": 0}}}),
        )
        .await;
    let hints = hints.as_array().unwrap();
    assert_eq!(hints.len(), 1, "{hints:#?}");
    assert_eq!(hints[0]["position"]["line"], loop_line);
    assert!(hints[0]["label"].as_str().unwrap().starts_with("invariant: 0 <= i && i <= 10"), "{}", hints[0]);

    let hover = c.call("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": {"line": loop_line, "character": 3}})).await;
    let md = hover["contents"]["value"].as_str().unwrap();
    assert!(md.contains("Loop invariant") && md.contains("0 <= i && i <= 10"), "{md}");
    assert!(md.contains("found by: the value analysis") && md.contains("checked inductive: yes"), "{md}");

    let lenses = c.call("textDocument/codeLens", json!({"textDocument": {"uri": uri}})).await;
    let titles: Vec<&str> = lenses.as_array().unwrap().iter().map(|l| l["command"]["title"].as_str().unwrap()).collect();
    assert_eq!(titles, vec!["✗ 1 violation", "verify again", "show trace"]);

    // The hover on the violation is short: the verdict, the inputs, the first steps and how
    // to step through the rest (no command the palette lacks).
    let hover = c.call("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": v["range"]["start"]})).await;
    let md = hover["contents"]["value"].as_str().unwrap();
    assert!(md.starts_with("**violated**: counterexample with 41 steps"), "{md}");
    assert!(md.contains("inputs: `__VERIFIER_nondet_int()` = 3"), "{md}");
    assert!(md.contains("\n1. `n = __VERIFIER_nondet_int()` — n = 3"), "{md}");
    assert!(!md.contains("\n4. ") && md.contains("F7") && !md.contains("cpals.showTrace"), "{md}");

    // Step through the counterexample: each step moves the editor there.
    let line = v["range"]["start"]["line"].clone();
    let first = c.call("workspace/executeCommand", json!({"command": "cpals.showTrace", "arguments": [uri, line, 0]})).await;
    assert_eq!(first["step"], 0);
    assert!(first["message"].as_str().unwrap().contains("n = 3"));
    let next = c.call("workspace/executeCommand", json!({"command": "cpals.nextStep", "arguments": []})).await;
    assert_eq!(next["step"], 1);
    let shown = c.wait_for("window/showDocument", |m| m.method() == Some("window/showDocument")).await;
    assert_eq!(shown.msg["params"]["uri"], uri);

    // The whole counterexample as data (what the editor plugins list): the input first, every
    // step with its location and values, nothing moved in the editor.
    let trace = c.call("workspace/executeCommand", json!({"command": "cpals.trace", "arguments": [uri, line]})).await;
    assert_eq!(trace["range"], v["range"]);
    assert_eq!(trace["stale"], false);
    let steps = trace["steps"].as_array().unwrap();
    assert_eq!(steps.len(), first["steps"].as_u64().unwrap() as usize);
    assert_eq!(steps[0]["input"], json!(["__VERIFIER_nondet_int", "3"]), "{:#}", steps[0]);
    assert_eq!(steps[0]["values"], json!([["n", "3"]]));
    assert_eq!(steps[0]["range"]["start"]["line"], line_of(&text, "int n = __VERIFIER_nondet_int()"));
    assert!(steps.iter().all(|s| s["uri"] == uri && s["message"].as_str().unwrap().starts_with("step ")));
    assert!(steps.iter().any(|s| s["branch"] == true) && steps.iter().any(|s| s["branch"] == false));
    let last = steps.last().unwrap();
    assert_eq!(last["range"]["start"]["line"], v["range"]["start"]["line"], "the trace ends at the assertion");
    // The answer recorded for the VS Code extension's unit tests is this one (with a fixed
    // URI); `CPALS_UPDATE_FIXTURES=1` records it again.
    let recorded_path = root().join("editors/vscode/test/fixtures/loops-trace.json");
    let anon = serde_json::to_string_pretty(&trace).unwrap().replace(&uri, "file:///cpals/fixtures/lsp/loops.c");
    if std::env::var_os("CPALS_UPDATE_FIXTURES").is_some() {
        std::fs::write(&recorded_path, format!("{anon}\n")).unwrap();
    }
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(&recorded_path).unwrap()).unwrap();
    assert_eq!(
        recorded,
        serde_json::from_str::<Value>(&anon).unwrap(),
        "{} is not what the server answers (CPALS_UPDATE_FIXTURES=1 records it)",
        recorded_path.display()
    );
    let r = c.request("workspace/executeCommand", json!({"command": "cpals.trace", "arguments": [uri, 0]})).await.unwrap();
    assert!(r["error"]["message"].as_str().unwrap().contains("no counterexample on line 1"), "{r}");

    // Progress was reported (created, begun, ended) and the editor was asked to refresh.
    c.drain();
    let methods: Vec<String> = c.history.iter().filter_map(|m| m.method().map(str::to_string)).collect();
    for m in ["window/workDoneProgress/create", "$/progress", "workspace/inlayHint/refresh", "workspace/codeLens/refresh"] {
        assert!(methods.iter().any(|x| x == m), "no {m} in {methods:?}");
    }
    // Each job was announced (`cpals/jobStarted`, for status bars) before its `cpals/jobDone`.
    let started = methods.iter().position(|m| m == "cpals/jobStarted").expect("cpals/jobStarted");
    assert!(started < methods.iter().position(|m| m == "cpals/jobDone").unwrap(), "{methods:?}");
    let start = c.history.iter().find(|m| m.method() == Some("cpals/jobStarted")).unwrap();
    assert_eq!(start.msg["params"], json!({"uri": uri, "version": 1, "verify": true}));
    c.shutdown().await;
}

const TEN: &str = r#"#include <assert.h>
extern int __VERIFIER_nondet_int(void);

int h1(int x) {
  return x + 1;
}

int h2(int x) {
  return 2 * x;
}

int h3(int x) {
  if (x > 10) return 10;
  return x;
}

int h4(int x) {
  return x - 1;
}

void r1(void) {
  int a = h1(1);
  assert(a == 2);
}

void r2(void) {
  int b = h2(h1(2));
  assert(b == 6);
}

void r3(void) {
  int c = h3(__VERIFIER_nondet_int());
  assert(c <= 10);
}

void r4(void) {
  int d = 0;
  for (int i = 0; i < 5; i++) d += 2;
  assert(d == 10);
}

void r5(void) {
  int e = __VERIFIER_nondet_int();
  if (e > 0) assert(e != 5);
}

void r6(void) {
  int f = h4(3);
  assert(f == 2);
}
"#;

fn sorted(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_line_edit_reverifies_only_that_function_and_its_callers() {
    let uri = temp_uri("cpals-lsp-ten.c");
    let mut c = client(options()).await;
    c.open(&uri, TEN).await;
    let (done, first) = c.settled(&uri, 1).await;
    assert_eq!(sorted(&done["verified"]), vec!["r1", "r2", "r3", "r4", "r5", "r6"]);
    assert_eq!(done["totalCfas"], 10);

    // Edit one line of h1 (called by r1 and r2); verification on save.
    let line = line_of(TEN, "return x + 1;");
    c.replace_line(&uri, 2, line, "  return 1 + x;\n").await;
    c.save(&uri).await;
    let (done, after) = c.settled(&uri, 2).await;
    assert_eq!(sorted(&done["verified"]), vec!["r1", "r2"], "{done}");
    assert_eq!(sorted(&done["cached"]), vec!["r3", "r4", "r5", "r6"], "{done}");
    assert_eq!(done["reusedCfas"], 9, "every other function keeps its automaton");
    // The first unit verified is the one with the edited function.
    assert!(["r1", "r2"].contains(&done["verified"][0].as_str().unwrap()));
    assert!(is_fresh(&Value::Array(after.clone())));
    let verdicts = |d: &[Value]| d.iter().map(|x| (x["range"]["start"]["line"].clone(), x["code"].clone())).collect::<Vec<_>>();
    assert_eq!(verdicts(&first), verdicts(&after));

    // A line added above r4 moves its results (cached, not re-verified) along with it.
    let r4 = line_of(TEN, "void r4(void)");
    c.replace_line(&uri, 3, r4, "/* moved */\nvoid r4(void) {\n").await;
    c.save(&uri).await;
    let (done, moved) = c.settled(&uri, 3).await;
    assert!(done["verified"].as_array().unwrap().is_empty(), "{done}");
    let assert_d =
        with_code(&moved, "proved").into_iter().find(|d| d["message"].as_str().unwrap().contains("d == 10")).expect("r4's proof");
    assert_eq!(assert_d["range"]["start"]["line"], line_of(TEN, "assert(d == 10)") + 1);
    assert!(assert_d["message"].as_str().unwrap().contains("cached"));

    // An edit inside r5 (a root nobody calls) re-verifies r5 only.
    let text4 = TEN.replacen("void r4(void) {\n", "/* moved */\nvoid r4(void) {\n", 1);
    c.replace_line(&uri, 4, line_of(&text4, "if (e > 0)"), "  if (e > 1) assert(e != 5);\n").await;
    c.save(&uri).await;
    let (done, _) = c.settled(&uri, 4).await;
    assert_eq!(sorted(&done["verified"]), vec!["r5"]);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn syntax_errors_keep_old_results_stale() {
    let (uri, text) = fixture();
    let mut c = client(options()).await;
    c.open(&uri, &text).await;
    c.settled(&uri, 1).await;
    // Break the file (no save: on-save trigger; the edit still re-parses it).
    let line = line_of(&text, "int s = 0;");
    c.replace_line(&uri, 2, line, "  int s = ;\n").await;
    let (done, diags) = c.settled(&uri, 2).await;
    assert!(done["parseError"].is_string(), "{done}");
    let syntax = with_code(&diags, "syntax");
    assert_eq!(syntax.len(), 1, "{diags:#?}");
    // At the token where parsing failed, covering it, with a short message.
    assert_eq!(syntax[0]["range"]["start"], json!({"line": line, "character": 10}));
    assert_eq!(syntax[0]["range"]["end"], json!({"line": line, "character": 11}));
    assert_eq!(
        syntax[0]["message"],
        "syntax error: expected an expression before `;` (results shown are from the last version that parsed)"
    );
    // Every earlier result stays, marked stale: the violation, the proof, the dead code, the
    // invariant.
    for code in ["violated", "proved", "unreachable"] {
        let d = with_code(&diags, code);
        assert_eq!(d.len(), 1, "{code}: {diags:#?}");
        assert!(d[0]["message"].as_str().unwrap().contains("(stale"), "{}", d[0]);
    }
    let hints = c
        .call(
            "textDocument/inlayHint",
            json!({"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 99, "character": 0}}}),
        )
        .await;
    let hints = hints.as_array().unwrap();
    assert_eq!(hints.len(), 1, "{hints:?}");
    assert!(hints[0]["label"].as_str().unwrap().ends_with("(stale)"), "{hints:?}");
    let lenses = c.call("textDocument/codeLens", json!({"textDocument": {"uri": uri}})).await;
    assert_eq!(lenses[0]["command"]["title"], "stale (syntax error)");

    // Repair it and save: current results again.
    c.replace_line(&uri, 3, line, "  int s = 0;\n").await;
    c.save(&uri).await;
    let (_, diags) = c.settled(&uri, 3).await;
    assert!(is_fresh(&Value::Array(diags.clone())));
    assert_eq!(with_code(&diags, "proved").len(), 1);
    assert!(with_code(&diags, "syntax").is_empty());
    c.shutdown().await;
}

/// The milliseconds a proof's message names (`(combined analysis, 41 ms)`).
fn proof_ms(d: &Value) -> u64 {
    let m = d["message"].as_str().unwrap();
    let ms = m.rsplit(", ").next().and_then(|t| t.strip_suffix(" ms)")).unwrap_or_else(|| panic!("no time in {m}"));
    ms.parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verdicts_are_published_as_the_phases_decide_them() {
    let path = root().join("fixtures/lsp/progressive.c");
    let (uri, text) = (file_uri(&path), std::fs::read_to_string(&path).unwrap());
    let mode = line_of(&text, "assert(mode == RUNNING)");
    let relation = line_of(&text, "assert(read == written)");
    let at = |diags: &[Value], code: &str, line: u32| diags.iter().any(|d| d["code"] == code && d["range"]["start"]["line"] == line);
    // The server's default analysis (combined); a generous limit for a loaded machine.
    let mut c = client(json!({"notifyJobs": true, "settings": {"debounceMs": 0, "timeoutSeconds": 120}})).await;
    c.open(&uri, &text).await;
    // First the flag, which the first value slice settles, while the relation is still being
    // verified (the template analysis proves it later).
    let first = c
        .wait_for("the flag proved while the relation is verified", |m| {
            let d = m.msg["params"]["diagnostics"].as_array().cloned().unwrap_or_default();
            m.method() == Some("textDocument/publishDiagnostics") && at(&d, "proved", mode) && at(&d, "verifying", relation)
        })
        .await;
    let before: Vec<_> = c.history.iter().filter(|m| m.method() == Some("cpals/jobDone")).collect();
    assert!(before.is_empty(), "published before the job ended: {before:?}");
    let diags = first.msg["params"]["diagnostics"].as_array().unwrap();
    let pending = diags.iter().find(|d| d["code"] == "verifying").unwrap();
    assert_eq!(pending["message"], "verifying…");
    assert_eq!(pending["severity"], 4, "a hint, not a warning: {pending}");
    // Then the relation, when the job is done; each proof names its own time.
    let (_, diags) = c.settled(&uri, 1).await;
    assert!(at(&diags, "proved", mode) && at(&diags, "proved", relation), "{diags:#?}");
    assert!(!diags.iter().any(|d| d["code"] == "verifying"), "{diags:#?}");
    let ms = |line: u32| proof_ms(diags.iter().find(|d| d["code"] == "proved" && d["range"]["start"]["line"] == line).unwrap());
    assert!(ms(mode) < ms(relation), "the flag was decided first: {} ms, {} ms", ms(mode), ms(relation));
    c.shutdown().await;
}

/// While a unit is still being verified after its first verdicts, the lens says how far it
/// is and the hover on the open property says it is being verified (the engine held after
/// its first partial report until the test releases it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lens_and_hover_follow_the_verdicts_as_they_come() {
    let release = Arc::new(AtomicBool::new(false));
    let r = release.clone();
    let verifier: cpals::lsp::job::Verifier = Arc::new(move |p, cfg, cancel: &Cancel, progress: &mut dyn FnMut(&Report)| {
        let mut held = |partial: &Report| {
            progress(partial);
            while !r.load(Ordering::SeqCst) && !cancel.is_cancelled() {
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        analysis_engine::portfolio::verify_progressive(p, cfg, cancel, &mut held)
    });
    let path = root().join("fixtures/lsp/progressive.c");
    let (uri, text) = (file_uri(&path), std::fs::read_to_string(&path).unwrap());
    let relation = line_of(&text, "assert(read == written)");
    let mut c =
        client_with(ServerOptions { verifier }, json!({"notifyJobs": true, "settings": {"debounceMs": 0, "timeoutSeconds": 120}})).await;
    c.open(&uri, &text).await;
    c.wait_for("a property still being verified", |m| {
        m.method() == Some("textDocument/publishDiagnostics")
            && m.msg["params"]["diagnostics"].as_array().is_some_and(|d| d.iter().any(|d| d["code"] == "verifying"))
    })
    .await;
    let lenses = c.call("textDocument/codeLens", json!({"textDocument": {"uri": uri}})).await;
    assert_eq!(lenses[0]["command"]["title"], "… verifying (1 of 2 decided)", "{lenses:#}");
    let hover = c.call("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": {"line": relation, "character": 4}})).await;
    assert_eq!(hover["contents"]["value"], "**verifying…**\n", "{hover:#}");
    release.store(true, Ordering::SeqCst);
    let (_, diags) = c.settled(&uri, 1).await;
    assert_eq!(with_code(&diags, "proved").len(), 2, "{diags:#?}");
    let lenses = c.call("textDocument/codeLens", json!({"textDocument": {"uri": uri}})).await;
    assert!(lenses[0]["command"]["title"].as_str().unwrap().starts_with("✓ proved"), "{lenses:#}");
    c.shutdown().await;
}

/// The same unknown reason is given in full once; the other properties it keeps open name
/// that line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_reason_is_given_once() {
    let uri = temp_uri("cpals-lsp-same-reason.c");
    let text = "#include <assert.h>\n#include <stdlib.h>\nint main(void) {\n  int r = rand();\n  assert(r != 1);\n  assert(r != 2);\n  return 0;\n}\n";
    let mut c = client(options()).await;
    c.open(&uri, text).await;
    let (_, diags) = c.settled(&uri, 1).await;
    let unknown = with_code(&diags, "unknown");
    assert_eq!(unknown.len(), 2, "{diags:#?}");
    assert_eq!(
        unknown[0]["message"],
        "unknown: assertion `r != 1`: the counterexample depends on a value returned by `rand`, which cpals does not model yet"
    );
    assert_eq!(unknown[1]["message"], "unknown: assertion `r != 2`: the same reason as line 5");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_never_parsed_shows_only_its_syntax_error() {
    let uri = temp_uri("cpals-lsp-never-parsed.c");
    let text = "int main(void) {\n  int x = 1\n  int y = 2;\n  return x + y;\n}\n";
    let mut c = client(options()).await;
    c.open(&uri, text).await;
    let (_, diags) = c.settled(&uri, 1).await;
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(diags[0]["code"], "syntax");
    // No earlier results to speak of.
    assert_eq!(diags[0]["message"], "syntax error: expected `;` before `int`");
    assert_eq!(diags[0]["range"], json!({"start": {"line": 2, "character": 2}, "end": {"line": 2, "character": 5}}));
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_marks_results_stale_and_moves_them() {
    let (uri, text) = fixture();
    let mut c = client(json!({"notifyJobs": true, "settings": {"debounceMs": 60000}})).await;
    c.open(&uri, &text).await;
    c.settled(&uri, 1).await;
    // Two lines inserted at the top; with a long debounce nothing is re-checked yet.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "// a\n// b\n"}]}),
    )
    .await;
    let m =
        c.wait_for("stale diagnostics", |m| m.method() == Some("textDocument/publishDiagnostics") && m.msg["params"]["version"] == 2).await;
    let diags = m.msg["params"]["diagnostics"].as_array().unwrap().clone();
    assert!(!diags.is_empty());
    for d in &diags {
        assert!(d["message"].as_str().unwrap().contains("(stale"), "{d}");
    }
    let violated = with_code(&diags, "violated");
    assert_eq!(violated[0]["range"]["start"]["line"], line_of(&text, "n + s != 23") + 2);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_errors_and_the_server_stays_up() {
    let (uri, text) = fixture();
    let mut c = client(options()).await;
    let nowhere = temp_uri("cpals-never-opened.c");
    // Requests for a file that is not open.
    assert_eq!(
        c.call("textDocument/hover", json!({"textDocument": {"uri": nowhere}, "position": {"line": 0, "character": 0}})).await,
        Value::Null
    );
    assert_eq!(c.call("textDocument/codeLens", json!({"textDocument": {"uri": nowhere}})).await, Value::Null);
    let r = c.request("workspace/executeCommand", json!({"command": "cpals.verifyFile", "arguments": [nowhere]})).await.unwrap();
    assert!(r["error"]["message"].as_str().unwrap().contains("not open"), "{r}");
    let r = c.request("workspace/executeCommand", json!({"command": "cpals.noSuchCommand", "arguments": []})).await.unwrap();
    assert!(r["error"].is_object());
    let r = c.request("workspace/executeCommand", json!({"command": "cpals.showTrace", "arguments": [42]})).await.unwrap();
    assert!(r["error"].is_object());
    // Unknown methods: an error for a request, nothing for a notification.
    let r = c.request("cpals/noSuchMethod", json!({})).await.unwrap();
    assert_eq!(r["error"]["code"], -32601);
    c.notify("cpals/noSuchNotification", json!({})).await;
    // Edits and saves of files that are not open are ignored.
    c.replace_line(&nowhere, 2, 0, "x\n").await;
    c.save(&nowhere).await;
    // An edit with an old version is ignored.
    c.open(&uri, &text).await;
    c.settled(&uri, 1).await;
    c.replace_line(&uri, 0, 0, "garbage that would not parse\n").await;
    c.replace_line(&uri, 1, 0, "garbage that would not parse\n").await;
    c.save(&uri).await;
    let (done, diags) = c.settled(&uri, 1).await;
    assert!(done["parseError"].is_null());
    assert!(with_code(&diags, "syntax").is_empty());
    assert_eq!(with_code(&diags, "violated").len(), 1);
    // Closing clears the file's diagnostics.
    c.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}})).await;
    c.wait_for("cleared diagnostics", |m| {
        m.method() == Some("textDocument/publishDiagnostics")
            && m.msg["params"]["uri"] == uri
            && m.msg["params"]["diagnostics"] == json!([])
    })
    .await;
    assert_eq!(
        c.call("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}})).await,
        Value::Null
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_job_is_reported_once_and_the_server_stays_up() {
    let verifier: cpals::lsp::job::Verifier =
        Arc::new(|p: &analysis_engine::cfa::Program, cfg: &VerifyConfig, cancel: &Cancel, _: &mut dyn FnMut(&Report)| {
            if p.by_name.contains_key("boom") {
                panic!("injected failure");
            }
            analysis_engine::verify(p, cfg, cancel)
        });
    let (uri, text) = fixture();
    let mut c = client_with(ServerOptions { verifier }, options()).await;
    c.open(&uri, &text).await;
    c.settled(&uri, 1).await;
    let boom = text.replace("int main(void) {", "void boom(void) { }\nint main(void) {").replace("int mode = 1;", "int mode = 1; boom();");
    c.notify("textDocument/didChange", json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": boom}]})).await;
    c.save(&uri).await;
    c.job_done(&uri, |j| j["version"] == 2 && j["panicked"].is_string()).await;
    c.save(&uri).await;
    c.job_done(&uri, |j| j["version"] == 2 && j["panicked"].is_string()).await;
    // Still serving, and the old results stay (marked stale).
    let lenses = c.call("textDocument/codeLens", json!({"textDocument": {"uri": uri}})).await;
    assert!(lenses.as_array().is_some());
    c.drain();
    let shown: Vec<_> = c.history.iter().filter(|m| m.method() == Some("window/showMessage") && m.msg["params"]["type"] == 1).collect();
    assert_eq!(shown.len(), 1, "reported once: {shown:?}");
    assert!(shown[0].msg["params"]["message"].as_str().unwrap().contains("injected failure"));
    let last = c.history.iter().rev().find(|m| m.method() == Some("textDocument/publishDiagnostics")).unwrap();
    let diags = last.msg["params"]["diagnostics"].as_array().unwrap();
    assert!(with_code(diags, "violated")[0]["message"].as_str().unwrap().contains("(stale"));
    assert!(with_code(diags, "proved").iter().all(|d| d["message"].as_str().unwrap().contains("(stale")));
    // Without the failing function it works again.
    c.notify("textDocument/didChange", json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": text}]})).await;
    c.save(&uri).await;
    let (done, diags) = c.settled(&uri, 3).await;
    assert!(done["panicked"].is_null());
    assert!(is_fresh(&Value::Array(diags.clone())));
    assert!(with_code(&diags, "internal").is_empty());
    c.shutdown().await;
}

/// A verifier that runs until it is cancelled (and counts how many run at once).
fn slow_verifier(active: Arc<AtomicUsize>, max: Arc<AtomicUsize>) -> cpals::lsp::job::Verifier {
    Arc::new(move |p, cfg, cancel: &Cancel, _: &mut dyn FnMut(&Report)| {
        let now = active.fetch_add(1, Ordering::SeqCst) + 1;
        max.fetch_max(now, Ordering::SeqCst);
        if p.by_name.contains_key("slow") {
            while !cancel.is_cancelled() {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let r = analysis_engine::verify(p, cfg, cancel);
        active.fetch_sub(1, Ordering::SeqCst);
        r
    })
}

/// Waits (at most 60 s) until the slow verifier runs.
async fn until_running(active: &AtomicUsize) {
    for _ in 0..6000 {
        if active.load(Ordering::SeqCst) > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the verification job never started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_and_progress_cancel_a_running_job_and_shutdown_does_not_wait() {
    let (active, max) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let uri = temp_uri("cpals-lsp-slow.c");
    let text = "int slow(void) { return 0; }\nint main(void) { return slow(); }\n";
    let mut c = client_with(ServerOptions { verifier: slow_verifier(active.clone(), max.clone()) }, options()).await;
    c.open(&uri, text).await;
    // The job runs (inside the verifier); an edit cancels it.
    until_running(&active).await;
    c.replace_line(&uri, 2, 1, "int main(void) { return slow() + 1; }\n").await;
    let done = c.job_done(&uri, |j| j["cancelled"] == true).await;
    assert_eq!(done["version"], 1);
    // The edit did not ask for verification (on-save trigger); save does, then the client
    // cancels the job's progress.
    c.save(&uri).await;
    let begin = c.wait_for("progress begin", |m| m.method() == Some("$/progress") && m.msg["params"]["value"]["kind"] == "begin").await;
    until_running(&active).await;
    let token = begin.msg["params"]["token"].clone();
    c.notify("window/workDoneProgress/cancel", json!({"token": token})).await;
    let done = c.job_done(&uri, |j| j["cancelled"] == true).await;
    assert_eq!(done["version"], 2);
    // Shutdown with a job running: the job is cancelled and the server answers.
    c.save(&uri).await;
    until_running(&active).await;
    let r = c.request("shutdown", Value::Null).await.unwrap();
    assert!(r.get("error").is_none(), "{r}");
    c.notify("exit", Value::Null).await;
    for _ in 0..6000 {
        if active.load(Ordering::SeqCst) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(active.load(Ordering::SeqCst), 0, "the running job was cancelled");
    assert_eq!(max.load(Ordering::SeqCst), 1, "one job per file");
}

/// A job stuck where cancelling does not reach (as in a solver deadlock) is abandoned 2 s after
/// the edit that cancelled it: its results are never published, and the next version is served
/// by a new worker (one worker at most, the default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_does_not_stop_when_cancelled_is_abandoned_and_the_next_is_served() {
    let (release, hung) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    let (r, h) = (release.clone(), hung.clone());
    let verifier: cpals::lsp::job::Verifier = Arc::new(move |p, cfg, cancel: &Cancel, _: &mut dyn FnMut(&Report)| {
        if p.by_name.contains_key("hang") {
            h.fetch_add(1, Ordering::SeqCst);
            // Deaf to `cancel` until the test lets it go.
            while !r.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        analysis_engine::verify(p, cfg, cancel)
    });
    let uri = temp_uri("cpals-lsp-hang.c");
    let text = "#include <assert.h>\nvoid hang(void) { }\nint main(void) { int x = 1; hang(); assert(x == 1); return 0; }\n";
    let mut c = client_with(ServerOptions { verifier: verifier.clone() }, options()).await;
    c.open(&uri, text).await;
    until_running(&hung).await;
    let edited = Instant::now();
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": text.replace("hang", "fine")}]}),
    )
    .await;
    c.save(&uri).await;
    let done = c.job_done(&uri, |j| j["version"] == 1).await;
    assert_eq!(done["abandoned"], true, "{done}");
    assert!(edited.elapsed() < Duration::from_secs(15), "abandoned after {:?}", edited.elapsed());
    let (done, diags) = c.settled(&uri, 2).await;
    assert!(done["panicked"].is_null() && done["abandoned"] != true, "{done}");
    assert_eq!(with_code(&diags, "proved").len(), 1, "{diags:#?}");
    assert!(with_code(&diags, "internal").is_empty(), "an abandoned job cancelled by an edit is no failure: {diags:#?}");
    // The stuck job ends at last: nothing of it is published.
    release.store(true, Ordering::SeqCst);
    c.save(&uri).await;
    c.settled(&uri, 2).await;
    c.drain();
    let late: Vec<_> = c.history.iter().filter(|m| m.method() == Some("cpals/jobDone") && m.msg["params"]["version"] == 1).collect();
    assert_eq!(late.len(), 1, "only the abandonment is reported for version 1: {late:?}");
    assert!(c.history.iter().all(|m| m.method() != Some("textDocument/publishDiagnostics") || m.msg["params"]["version"] != 1 || {
        let d = &m.msg["params"]["diagnostics"];
        with_code(d.as_array().unwrap(), "proved").is_empty()
    }));
    c.shutdown().await;

    // Stuck past its time limit (no edit): abandoned 2 s after it, and the user is told.
    release.store(false, Ordering::SeqCst);
    let init = json!({"notifyJobs": true, "settings": {"debounceMs": 0, "timeoutSeconds": 1}});
    let mut c = client_with(ServerOptions { verifier: verifier.clone() }, init).await;
    let uri = temp_uri("cpals-lsp-hang-deadline.c");
    let started = Instant::now();
    c.open(&uri, text).await;
    let done = c.job_done(&uri, |j| j["version"] == 1).await;
    assert_eq!(done["abandoned"], true, "{done}");
    assert!(started.elapsed() < Duration::from_secs(20), "abandoned after {:?}", started.elapsed());
    // Published before the job is reported done.
    c.drain();
    let last = c.history.iter().rev().find(|m| m.method() == Some("textDocument/publishDiagnostics") && m.msg["params"]["uri"] == uri);
    let diags = last.and_then(|m| m.msg["params"]["diagnostics"].as_array().cloned()).unwrap_or_default();
    let internal = with_code(&diags, "internal");
    assert!(
        internal.len() == 1 && internal[0]["message"].as_str().unwrap().contains("did not stop within 2 s of its time limit of 1 s"),
        "{diags:#?}"
    );
    release.store(true, Ordering::SeqCst);
    c.shutdown().await;
}

/// The preprocessor runs under the job's deadline and token: an included FIFO (which `cc -E`
/// waits on forever) and a macro bomb in an `#if` end at `timeoutSeconds` with a diagnostic that
/// says so, and an edit stops a job that waits on a FIFO at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preprocessor_stops_at_the_deadline_and_on_an_edit() {
    let dir = temp_dir("lsp-fifo");
    let fifo = dir.join("pipe.h");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs").success());
    let includes_fifo = format!("#include \"{}\"\nint main(void) {{ return 0; }}\n", fifo.display());
    let mut bomb = String::from("#define A0 1+1+1+1+1+1+1+1+1+1\n");
    for k in 1..9 {
        bomb.push_str(&format!("#define A{k} {}\n", vec![format!("A{}", k - 1); 10].join("+")));
    }
    bomb.push_str("#if A8\nint x;\n#endif\nint main(void) { return 0; }\n");

    let mut c = client(json!({"notifyJobs": true, "settings": {"debounceMs": 0, "timeoutSeconds": 2}})).await;
    for (name, text) in [("cpals-lsp-fifo.c", &includes_fifo), ("cpals-lsp-bomb.c", &bomb)] {
        let uri = temp_uri(name);
        let started = Instant::now();
        c.open(&uri, text).await;
        let (done, diags) = c.settled(&uri, 1).await;
        let says = "the C preprocessor was stopped: the time limit ran out before it finished";
        assert!(done["parseError"].as_str().is_some_and(|e| e.contains(says)), "{name}: {done}");
        assert!(diags.iter().any(|d| d["message"].as_str().is_some_and(|m| m.contains(says))), "{name}: {diags:#?}");
        assert!(started.elapsed() < Duration::from_secs(20), "{name} took {:?}", started.elapsed());
    }
    c.shutdown().await;

    // With a long limit, the job waits on the FIFO until an edit cancels it.
    let mut c = client(json!({"notifyJobs": true, "settings": {"debounceMs": 0, "timeoutSeconds": 600}})).await;
    let uri = temp_uri("cpals-lsp-fifo-edit.c");
    c.open(&uri, &includes_fifo).await;
    c.wait_for("the job's start", |m| m.method() == Some("cpals/jobStarted") && m.msg["params"]["uri"] == uri).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let edited = Instant::now();
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": "int main(void) { return 0; }\n"}]}),
    )
    .await;
    c.save(&uri).await;
    let done = c.job_done(&uri, |j| j["version"] == 1).await;
    assert_eq!(done["cancelled"], true, "{done}");
    assert!(done["abandoned"] != true, "the preprocessor stopped by itself: {done}");
    let (done, _) = c.settled(&uri, 2).await;
    assert!(done["parseError"].is_null(), "{done}");
    assert!(edited.elapsed() < Duration::from_secs(20), "took {:?} after the edit", edited.elapsed());
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_a_thousand_edits_leaves_no_backlog() {
    let (active, max) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (uri, text) = fixture();
    let init = json!({"notifyJobs": true, "settings": {"debounceMs": 0, "trigger": "onChange"}});
    let mut c = client_with(ServerOptions { verifier: slow_verifier(active, max.clone()) }, init).await;
    c.open(&uri, &text).await;
    c.settled(&uri, 1).await;
    let line = line_of(&text, "int mode = 1;");
    let last = 1001;
    for v in 2..=last {
        c.replace_line(&uri, v, line, &format!("  int mode = {};\n", 1 + v % 7)).await;
    }
    let final_text = {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines[line as usize] = format!("  int mode = {};", 1 + last % 7);
        lines.join("\n") + "\n"
    };
    let (done, diags_after_burst) = c.settled(&uri, 1001).await;
    assert!(done["panicked"].is_null());
    assert!(is_fresh(&Value::Array(diags_after_burst.clone())));
    c.drain();
    let jobs: Vec<&Value> = c.history.iter().filter(|m| m.method() == Some("cpals/jobDone")).map(|m| &m.msg["params"]).collect();
    // None ran at the same time as another.
    assert!(jobs.len() <= 1001, "at most one job per edit ({})", jobs.len());
    assert_eq!(max.load(Ordering::SeqCst), 1, "one job per file at a time");
    // Nothing arrives for an old version after the last one.
    let last_done = c.history.iter().rposition(|m| m.method() == Some("cpals/jobDone") && m.msg["params"]["version"] == 1001).unwrap();
    assert!(c.history[last_done..].iter().all(|m| m.msg["params"]["version"].as_i64().is_none_or(|v| v == 1001)));
    // The server's text is the client's.
    c.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}})).await;
    c.open(&uri, &final_text).await;
    let (_, reopened) = c.settled(&uri, 1).await;
    assert_eq!(reopened.len(), diags_after_burst.len());
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_change_without_restart() {
    let (uri, text) = fixture();
    let mut c = client(json!({"notifyJobs": true, "settings": {"debounceMs": 0, "trigger": "manual"}})).await;
    c.open(&uri, &text).await;
    // Manual: opening only parses.
    let done = c.job_done(&uri, |_| true).await;
    assert_eq!(done["skipped"], json!(["main"]));
    // Pushed settings: on change.
    c.notify("workspace/didChangeConfiguration", json!({"settings": {"cpals": {"trigger": "onChange"}}})).await;
    let done = c.job_done(&uri, |j| j["verified"] == json!(["main"])).await;
    assert_eq!(done["version"], 1);
    c.replace_line(&uri, 2, line_of(&text, "int mode = 1;"), "  int mode = 3;\n").await;
    let (done, _) = c.settled(&uri, 2).await;
    assert_eq!(done["verified"], json!(["main"]), "verified on change, without a save");
    // Pulled settings (workspace/configuration): a timeout changes the cache key.
    *c.settings.lock().unwrap() = json!({"trigger": "onChange", "timeoutSeconds": 20, "workers": 1});
    c.notify("workspace/didChangeConfiguration", json!({"settings": null})).await;
    let done = c.job_done(&uri, |j| j["version"] == 2 && !j["verified"].as_array().unwrap().is_empty()).await;
    assert_eq!(done["verified"], json!(["main"]));
    // A bad value is reported and ignored.
    c.notify("workspace/didChangeConfiguration", json!({"settings": {"cpals": {"trigger": "whenever"}}})).await;
    let m = c.wait_for("a warning", |m| m.method() == Some("window/showMessage")).await;
    assert!(m.msg["params"]["message"].as_str().unwrap().contains("trigger"));
    c.shutdown().await;
}

/// Every function verified: besides `main`, a function nothing calls is a unit of its own
/// (verified with arbitrary arguments), with its own lens, and its violation is shown at the
/// assertion; a function without properties has no lens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncalled_function_is_a_unit_with_its_own_lens() {
    let path = root().join("fixtures/properties/uncalled_function.c");
    let (uri, text) = (file_uri(&path), std::fs::read_to_string(&path).expect("fixture"));
    let mut c = client(options()).await;
    c.open(&uri, &text).await;
    let (done, diags) = c.settled(&uri, 1).await;
    assert_eq!(sorted(&done["verified"]), vec!["check", "main"], "{done}");
    let violated = with_code(&diags, "violated");
    assert_eq!(violated.len(), 1, "{diags:#?}");
    assert_eq!(violated[0]["range"]["start"]["line"], line_of(&text, "assert(x != 7)"));
    assert_eq!(with_code(&diags, "proved").len(), 2, "{diags:#?}");
    let lenses = c.call("textDocument/codeLens", json!({"textDocument": {"uri": uri}})).await;
    let title_of = |f: &str| {
        lenses
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["command"]["arguments"][1] == f)
            .map(|l| l["command"]["title"].as_str().unwrap().to_string())
    };
    assert_eq!(title_of("check").as_deref(), Some("✗ 1 violation"));
    assert!(title_of("main").unwrap().starts_with("✓ proved"), "{lenses:#}");
    assert!(title_of("helper").unwrap().starts_with("✓ proved"), "{lenses:#}");
    // A function without properties gets no lens ("no properties", "verify again").
    assert_eq!(title_of("twice"), None, "{lenses:#}");
    c.shutdown().await;
}
