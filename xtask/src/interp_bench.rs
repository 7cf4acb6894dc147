//! `xtask interp-bench`: the concrete interpreter's speed in steps per second, in this
//! process (no `cpals` binary): a few built-in input-free programs (deep recursion, a loop
//! through a call, a loop over an array, a non-affine loop) and any C files given, each run
//! from `main` with every input zero, without loop acceleration unless `--accelerate`, up to
//! `--steps` steps; the table shows the median of `--runs` runs, in CPU time of the thread
//! (the machine is shared: wall time would count the other processes' turns).
//!
//! ```text
//! cargo xtask interp-bench --runs 5
//! cargo xtask interp-bench fixtures/fuzz/fib25.c --steps 50000000
//! ```

use std::path::PathBuf;
use std::time::Duration;

use analysis_engine::cfa::DataModel;
use analysis_engine::concrete::{self, Plan, RunEnd, RunLimits, Zeros};
use analysis_engine::frontend::SourceInput;
use analysis_engine::Cancel;
use cpals::messages::EXIT_ERROR;

#[derive(clap::Args)]
pub struct InterpBenchArgs {
    /// C files to run besides the built-in programs.
    pub files: Vec<PathBuf>,
    /// Runs per program; the table shows the median.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Steps a run may take at most.
    #[arg(long, default_value_t = 30_000_000)]
    pub steps: u64,
    /// Jump over iterations of affine loops, as the analyses' concrete runs do.
    #[arg(long)]
    pub accelerate: bool,
    /// Only the given files, not the built-in programs.
    #[arg(long)]
    pub no_builtin: bool,
}

/// The built-in programs: name and source.
const BUILTIN: &[(&str, &str)] = &[
    (
        "fib(27), recursive",
        "int fib(int n) { if (n < 2) return n; return fib(n - 1) + fib(n - 2); }\n\
         int main(void) { int r = fib(27); if (r == 196418) { ERROR: return 1; } return 0; }\n",
    ),
    (
        "sum to 100000, recursive (depth 100,000)",
        "long sum(long n) { if (n == 0) return 0; return n + sum(n - 1); }\n\
         int main(void) { long r = sum(100000); if (r == 5000050000L) { ERROR: return 1; } return 0; }\n",
    ),
    (
        "loop through a call",
        "unsigned f(unsigned z) { return z + 2; }\n\
         int main(void) { unsigned x = 0; while (x < 0x0fffffff) { x = f(x); } if (x % 2 == 0) { ERROR: return 1; } return 0; }\n",
    ),
    (
        "array loop (a[1000], 3,000 passes)",
        "int a[1000];\n\
         int main(void) { int s = 0; for (int k = 0; k < 3000; k++) { for (int i = 0; i < 1000; i++) { a[i] = a[i] + i; s = s ^ a[i]; } } if (s == 12345) { ERROR: return 1; } return 0; }\n",
    ),
    (
        "non-affine loop (xorshift)",
        "int main(void) { unsigned x = 1; for (unsigned i = 0; i < 10000000; i++) { x ^= x << 13; x ^= x >> 17; x ^= x << 5; } if (x == 7) { ERROR: return 1; } return 0; }\n",
    ),
];

pub fn run(args: &InterpBenchArgs) -> i32 {
    let mut programs: Vec<(String, SourceInput)> = Vec::new();
    if !args.no_builtin {
        for (name, text) in BUILTIN {
            programs.push((name.to_string(), SourceInput { path: "/tmp/interp-bench.c".into(), text: text.to_string() }));
        }
    }
    for f in &args.files {
        match std::fs::read_to_string(f) {
            Ok(text) => programs.push((f.display().to_string(), SourceInput { path: f.clone(), text })),
            Err(e) => {
                eprintln!("cannot read {}: {e}", f.display());
                return EXIT_ERROR;
            }
        }
    }
    let limits = RunLimits {
        max_steps: args.steps,
        max_inputs: 1 << 20,
        keep_ops: 50_000,
        trace_steps: 40,
        max_frames: usize::MAX,
        accelerate: args.accelerate,
    };
    println!("| program | end | steps | median CPU time | million steps per second |");
    println!("|---|---|---|---|---|");
    for (name, input) in &programs {
        let p = match analysis_engine::load(input, DataModel::Lp64) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("{name}: {e}");
                return EXIT_ERROR;
            }
        };
        let plan = Plan::new(&p);
        let mut times: Vec<Duration> = Vec::new();
        let mut last = None;
        for _ in 0..args.runs.max(1) {
            let t0 = thread_cpu();
            let r = concrete::run(&p, &plan, &mut Zeros, &limits, &Cancel::new());
            times.push(thread_cpu().saturating_sub(t0));
            last = Some(r);
        }
        times.sort();
        let median = times[times.len() / 2];
        let r = last.expect("a run");
        let end = match &r.end {
            RunEnd::Target(_) => "violation".to_string(),
            RunEnd::Exit => "exit".to_string(),
            RunEnd::Aborted => "aborted".to_string(),
            RunEnd::StepLimit => "step limit".to_string(),
            RunEnd::Stuck(why) => format!("stuck: {why}"),
            RunEnd::Cancelled => "cancelled".to_string(),
        };
        let rate = r.steps as f64 / median.as_secs_f64() / 1e6;
        println!("| {name} | {end} | {} | {:.3} s | {rate:.1} |", r.steps, median.as_secs_f64());
    }
    0
}

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
