//! `cpals lsp-bench`: replays edits against a `cpals lsp` process over stdio (as an editor
//! would) and prints save-to-diagnostics and change-to-cancel latencies (p50/p95), the unit
//! cache's hit rate, and the server's memory after the first edit and after a burst of edits.
//!
//! Workloads (generated into a temporary folder, so the figures are reproducible):
//! - `bench300.c`: 300 lines, 15 root functions each calling two of 15 helpers (no `main`, so
//!   each root is a verification unit). One line of one root is edited, then the file is saved:
//!   only that unit is verified again, the others come from the cache.
//! - `slow.c`: a loop the value analysis needs many seconds for; an edit while it runs must
//!   cancel it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::lsp_client::LspClient;

#[derive(clap::Args, Clone)]
pub struct LspBenchArgs {
    /// Edit-and-save rounds on the 300-line file.
    #[arg(long, default_value_t = 30)]
    pub iterations: usize,
    /// Edits in the burst (memory and backlog).
    #[arg(long, default_value_t = 1000)]
    pub edits: usize,
    /// Cancellations measured.
    #[arg(long, default_value_t = 15)]
    pub cancels: usize,
    /// The `cpals` binary to run as the server (default: this one).
    #[arg(long)]
    pub bin: Option<PathBuf>,
}

const HELPERS: usize = 15;
const EDITED: usize = 7;

/// The 300-line workload.
pub fn bench_source() -> String {
    let mut s = String::from("/* cpals lsp-bench workload: 15 roots, 15 helpers. */\n#include <assert.h>\nextern int __VERIFIER_nondet_int(void);\n");
    for k in 0..HELPERS {
        s.push_str(&format!(
            "int helper_{k}(int x) {{\n  int acc = 0;\n  for (int i = 0; i < 4; i++) {{\n    acc += x;\n  }}\n  if (acc > 1000) return 1000;\n  return acc;\n}}\n\n"
        ));
    }
    for k in 0..HELPERS {
        let next = (k + 1) % HELPERS;
        s.push_str(&format!(
            "void check_{k}(void) {{\n  int bench_k = 0;\n  int v = __VERIFIER_nondet_int();\n  int r = helper_{k}(3);\n  int t = helper_{next}(2);\n  assert(r == 12);\n  assert(t == 8);\n  if (v == {k}) assert(r + v != {sum});\n}}\n\n",
            sum = 12 + k
        ));
    }
    s
}

const SLOW: &str = "#include <assert.h>\nextern int __VERIFIER_nondet_int(void);\nint main(void) {\n  int a = 0, b = 0;\n  for (int i = 0; i < 200000; i++) {\n    if (__VERIFIER_nondet_int()) a++; else b++;\n  }\n  assert(a + b == 200000);\n  return 0;\n}\n";

fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let i = ((p / 100.0) * (s.len() - 1) as f64).round() as usize;
    s[i.min(s.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// (VmRSS, VmHWM) of a process in MiB.
fn memory(pid: u32) -> (f64, f64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(f64::NAN)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn uri(path: &Path) -> String {
    tower_lsp::lsp_types::Url::from_file_path(path).expect("absolute path").to_string()
}

fn line_of(text: &str, needle: &str) -> u32 {
    text.lines().position(|l| l.contains(needle)).expect("workload line") as u32
}

pub fn run(args: &LspBenchArgs) -> i32 {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    match rt.block_on(bench(args)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("cpals lsp-bench: {e}");
            crate::cli::EXIT_ERROR
        }
    }
}

async fn bench(args: &LspBenchArgs) -> Result<(), String> {
    let bin = match &args.bin {
        Some(b) => b.clone(),
        None => std::env::current_exe().map_err(|e| e.to_string())?,
    };
    let dir = std::env::temp_dir().join(format!("cpals-lsp-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let text = bench_source();
    let file = dir.join("bench300.c");
    std::fs::write(&file, &text).map_err(|e| e.to_string())?;
    let slow_file = dir.join("slow.c");
    std::fs::write(&slow_file, SLOW).map_err(|e| e.to_string())?;
    println!("workload: {} ({} lines, {} functions), server: {}", file.display(), text.lines().count(), 2 * HELPERS, bin.display());

    let (mut c, child) = LspClient::spawn(&bin, &["lsp"]).map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let pid = child.id().ok_or("no server pid")?;
    c.timeout = Duration::from_secs(300);
    c.initialize(json!({"notifyJobs": true, "settings": {"debounceMs": 200, "trigger": "onSave", "timeoutSeconds": 60}})).await;

    // First verification of the whole file.
    let u = uri(&file);
    let t0 = Instant::now();
    c.open(&u, &text).await;
    let (first, _) = c.settled(&u, 1).await;
    println!(
        "open: {} units verified in {:.0} ms (job {} ms, load {} ms)",
        first["verified"].as_array().map(|a| a.len()).unwrap_or(0),
        ms(t0.elapsed()),
        first["ms"],
        first["loadMs"]
    );
    let edit_line = line_of(&text, &format!("void check_{EDITED}(void)")) + 1;
    let mut version = 1;
    let (mut after_edit, mut back_to_back, mut verified_units, mut cached_units) = (Vec::new(), Vec::new(), 0usize, 0usize);
    let mut only_edited = true;
    let mut server_ms = Vec::new();
    let mut first_edit_memory = (f64::NAN, f64::NAN);
    for it in 0..args.iterations {
        // Edit, let the debounced re-parse run, then save.
        version += 1;
        c.replace_line(&u, version, edit_line, &format!("  int bench_k = {};\n", it + 1)).await;
        c.job_done(&u, |j| j["version"] == version).await;
        let t = Instant::now();
        c.save(&u).await;
        let (done, _) = c.settled(&u, version).await;
        let arrived = c.history.iter().rev().find(|m| m.method() == Some("cpals/jobDone")).map(|m| m.at).unwrap_or_else(Instant::now);
        after_edit.push(ms(arrived.saturating_duration_since(t)));
        server_ms.push(done["ms"].as_f64().unwrap_or(f64::NAN));
        verified_units += done["verified"].as_array().map(|a| a.len()).unwrap_or(0);
        cached_units += done["cached"].as_array().map(|a| a.len()).unwrap_or(0);
        only_edited &= done["verified"] == json!([format!("check_{EDITED}")]);
        if it == 0 {
            first_edit_memory = memory(pid);
        }
        // Edit and save at once (the save does not wait for the debounce).
        version += 1;
        c.replace_line(&u, version, edit_line, &format!("  int bench_k = {};\n", 100_000 + it)).await;
        let t = Instant::now();
        c.save(&u).await;
        let (done, _) = c.settled(&u, version).await;
        let arrived = c.history.iter().rev().find(|m| m.method() == Some("cpals/jobDone")).map(|m| m.at).unwrap_or_else(Instant::now);
        back_to_back.push(ms(arrived.saturating_duration_since(t)));
        verified_units += done["verified"].as_array().map(|a| a.len()).unwrap_or(0);
        cached_units += done["cached"].as_array().map(|a| a.len()).unwrap_or(0);
        only_edited &= done["verified"] == json!([format!("check_{EDITED}")]);
        c.history.clear();
    }
    let (rss1, hwm1) = first_edit_memory;
    let (rss_rounds, hwm_rounds) = memory(pid);

    // A burst of edits (verify on change, no debounce: every edit cancels the job before it).
    c.notify("workspace/didChangeConfiguration", json!({"settings": {"cpals": {"trigger": "onChange", "debounceMs": 0}}})).await;
    let burst_start = Instant::now();
    for i in 0..args.edits {
        version += 1;
        c.replace_line(&u, version, edit_line, &format!("  int bench_k = {};\n", 1_000_000 + i)).await;
    }
    let sent = burst_start.elapsed();
    c.save(&u).await;
    let (done, _) = c.settled(&u, version).await;
    let settle = burst_start.elapsed();
    c.drain();
    let jobs = c.history.iter().filter(|m| m.method() == Some("cpals/jobDone")).count();
    let (rss2, hwm2) = memory(pid);
    // Change-to-cancel on the slow file.
    let su = uri(&slow_file);
    c.open(&su, SLOW).await;
    let mut sversion = 1;
    let mut cancels = Vec::new();
    for i in 0..args.cancels {
        if i > 0 {
            c.save(&su).await;
        }
        c.wait_for("a verification job's progress", |m| m.method() == Some("$/progress") && m.msg["params"]["value"]["kind"] == "begin").await;
        // Let the engine get deep into its work.
        tokio::time::sleep(Duration::from_millis(500)).await;
        sversion += 1;
        let t = Instant::now();
        c.replace_line(&su, sversion, 0, "#include <assert.h>\n").await;
        let done = c.wait_for("the cancelled job", |m| m.method() == Some("cpals/jobDone") && m.msg["params"]["uri"] == su && m.msg["params"]["cancelled"] == true).await;
        cancels.push(ms(done.at.saturating_duration_since(t)));
        c.history.clear();
    }
    c.notify("textDocument/didClose", json!({"textDocument": {"uri": su}})).await;

    c.shutdown().await;
    let _ = tokio::time::timeout(Duration::from_secs(10), async move {
        let mut child = child;
        child.wait().await
    })
    .await;
    let _ = std::fs::remove_dir_all(&dir);

    let rounds = after_edit.len();
    println!();
    println!("| measure | n | p50 ms | p95 ms | max ms |");
    println!("|---|---|---|---|---|");
    let row = |name: &str, v: &[f64]| {
        println!("| {name} | {} | {:.1} | {:.1} | {:.1} |", v.len(), percentile(v, 50.0), percentile(v, 95.0), v.iter().cloned().fold(f64::NAN, f64::max))
    };
    row("save-to-diagnostics, edited root of bench300.c (edit re-parsed before the save)", &after_edit);
    row("  of which the server's job (load, cache, verify the unit)", &server_ms);
    row("save-to-diagnostics, edit and save back to back", &back_to_back);
    row("change-to-cancel, running job on slow.c", &cancels);
    println!();
    let total = verified_units + cached_units;
    println!(
        "unit cache: {cached_units} of {total} unit results reused ({:.1}% hit rate) over {} saves; only the edited unit re-verified: {}",
        100.0 * cached_units as f64 / total.max(1) as f64,
        2 * rounds,
        only_edited
    );
    println!("memory after the first edit and save: RSS {rss1:.1} MiB, peak {hwm1:.1} MiB; after {} edits and saves: RSS {rss_rounds:.1} MiB, peak {hwm_rounds:.1} MiB", 2 * rounds);
    println!(
        "memory after {} more edits in a burst and a save: RSS {rss2:.1} MiB, peak {hwm2:.1} MiB (peak ratio to the first edit {:.2}); burst sent in {:.0} ms, settled after {:.0} ms, {} jobs ran (last: {} verified)",
        args.edits,
        hwm2 / hwm1,
        ms(sent),
        ms(settle),
        jobs,
        done["verified"].as_array().map(|a| a.len()).unwrap_or(0)
    );
    Ok(())
}
