//! Developer tasks of cpals, outside the product: the benchmark runner (`xtask bench DIR`,
//! which runs `cpals check` on every task of a folder), the language server's latency
//! benchmark (`xtask lsp-bench`, which talks to `cpals lsp`) and the loading benchmark
//! (`xtask load-bench`, files of thousands of functions). They run a built `cpals`
//! binary, by default the one beside this program in the same target folder; `xtask
//! interp-bench` (the concrete interpreter's steps per second) runs the engine in-process:
//!
//! ```text
//! cargo build --release && cargo run --release -p xtask -- bench ../shared/bench/sv --timeout 30 --jobs 2
//! ```
//!
//! (`cargo xtask …` is the same, see `.cargo/config.toml`).

mod bench;
mod interp_bench;
mod load_bench;
mod lsp_bench;
mod soundness;

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use cpals::messages::EXIT_ERROR;

#[derive(Parser)]
#[command(name = "xtask", about = "Developer tasks of cpals: benchmarks")]
struct Xtask {
    #[command(subcommand)]
    command: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Runs every task of a benchmark folder (with an INDEX.tsv) and prints a results table.
    Bench(bench::BenchArgs),
    /// Replays edits against the language server and prints its latencies, cache hit rate and
    /// memory.
    LspBench(lsp_bench::LspBenchArgs),
    /// Measures `cpals check` (wall time, peak memory) on generated files of 1,000 to 10,000
    /// functions: loading must stay linear in the number of functions.
    LoadBench(load_bench::LoadBenchArgs),
    /// Measures the concrete interpreter's steps per second on input-free programs (in this
    /// process, without a `cpals` binary).
    InterpBench(interp_bench::InterpBenchArgs),
    /// Checks Csmith's random programs against gcc's checksums (a soundness campaign).
    Soundness(soundness::SoundnessArgs),
}

fn main() {
    let code = match Xtask::try_parse() {
        Ok(x) => match x.command {
            Task::Bench(args) => bench::run(&args),
            Task::LspBench(args) => lsp_bench::run(&args),
            Task::LoadBench(args) => load_bench::run(&args),
            Task::InterpBench(args) => interp_bench::run(&args),
            Task::Soundness(args) => soundness::run_campaign(&args),
        },
        Err(e) => {
            let _ = e.print();
            if e.use_stderr() {
                EXIT_ERROR
            } else {
                0
            }
        }
    };
    std::process::exit(code);
}

/// The `cpals` binary to run: `given` (the option `flag`), or else `cpals` beside this program
/// (`target/release/cpals` for `cargo run --release -p xtask`), which must exist.
fn cpals_binary(given: Option<&PathBuf>, flag: &str) -> Result<PathBuf, String> {
    if let Some(b) = given {
        return Ok(b.clone());
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let bin = exe.with_file_name(format!("cpals{}", std::env::consts::EXE_SUFFIX));
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!("no cpals binary at {}: build it first (`cargo build --release`) or pass {flag} PATH", bin.display()))
    }
}
