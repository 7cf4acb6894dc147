//! `xtask load-bench`: how loading scales with the number of functions. Generates C files of
//! N small functions (by default N = 1,000, 2,500, 5,000 and 10,000) and runs `cpals check`
//! on each a few times, printing the median wall time and peak memory (the child's
//! `ru_maxrss` from `wait4`) per N. Each function is `int fK(int x) { if (x > K) return x - 1;
//! return x + 1; }` and `main` calls three of them before a `reach_error()` that is
//! unreachable; `--shape chain` makes every function call the previous one (a call graph as
//! deep as the file is long), `--shape globals` gives each function a global it writes.
//!
//! ```text
//! cargo build --release && cargo run --release -p xtask -- load-bench --runs 3
//! ```

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use cpals::messages::EXIT_ERROR;

#[derive(clap::Args)]
pub struct LoadBenchArgs {
    /// Numbers of functions to generate, one file each.
    #[arg(long, value_delimiter = ',', default_values_t = [1000, 2500, 5000, 10000])]
    pub functions: Vec<usize>,
    /// What the functions look like (see the module doc).
    #[arg(long, value_enum, default_value_t = Shape::Flat)]
    pub shape: Shape,
    /// Runs per file; the table shows the median.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// `--timeout` passed to `cpals check`, in seconds (the child is killed after 4 times it).
    #[arg(long, default_value_t = 30.0)]
    pub timeout: f64,
    /// The `cpals` binary to measure (default: `cpals` beside this program).
    #[arg(long, visible_alias = "cpals", value_name = "PATH")]
    pub bin: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Independent functions; `main` calls three of them.
    Flat,
    /// Each function calls the previous one.
    Chain,
    /// Each function writes a global of its own.
    Globals,
}

/// The generated program with `n` functions.
pub fn program(n: usize, shape: Shape) -> String {
    let mut s = String::from("extern void reach_error(void);\nextern int __VERIFIER_nondet_int(void);\n");
    if shape == Shape::Globals {
        for k in 0..n {
            s.push_str(&format!("int g{k};\n"));
        }
    }
    for k in 0..n {
        let body = match shape {
            Shape::Chain if k > 0 => format!("if (x > {k}) return f{}(x) - 1; return x + 1;", k - 1),
            Shape::Globals => format!("g{k} = x; if (x > {k}) return x - 1; return x + 1;"),
            _ => format!("if (x > {k}) return x - 1; return x + 1;"),
        };
        s.push_str(&format!("int f{k}(int x) {{ {body} }}\n"));
    }
    let last = n.saturating_sub(1).min(5);
    s.push_str(&format!(
        "int main(void) {{\n  int x = __VERIFIER_nondet_int();\n  if (x < 0 || x > 100) return 0;\n  int y = f0(x) + f{}(x) + f{last}(x);\n  if (y < -10) {{ reach_error(); }}\n  return 0;\n}}\n",
        last.min(1)
    ));
    s
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    s.get(s.len() / 2).copied().unwrap_or(f64::NAN)
}

pub fn run(args: &LoadBenchArgs) -> i32 {
    let bin = match crate::cpals_binary(args.bin.as_ref(), "--bin") {
        Ok(b) => b,
        Err(e) => {
            eprintln!("xtask load-bench: {e}");
            return EXIT_ERROR;
        }
    };
    let dir = std::env::temp_dir().join(format!("cpals-load-bench-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("xtask load-bench: cannot create {}: {e}", dir.display());
        return EXIT_ERROR;
    }
    println!("cpals: {}, shape {:?}, median of {} runs", bin.display(), args.shape, args.runs);
    println!("{:>10} {:>8} {:>10} {:>12}  verdict", "functions", "lines", "wall (s)", "peak (MiB)");
    for &n in &args.functions {
        let text = program(n, args.shape);
        let file = dir.join(format!("functions{n}.c"));
        if let Err(e) = std::fs::write(&file, &text) {
            eprintln!("xtask load-bench: cannot write {}: {e}", file.display());
            return EXIT_ERROR;
        }
        let (mut walls, mut peaks, mut verdict) = (Vec::new(), Vec::new(), String::new());
        for _ in 0..args.runs.max(1) {
            let mut cmd = Command::new(&bin);
            cmd.arg("check").arg(&file).arg("--timeout").arg(args.timeout.to_string());
            let (out, _cpu, wall, max_rss_kb, killed) =
                crate::bench::run_child(cmd, 4.0 * args.timeout, Duration::from_secs_f64(4.0 * args.timeout + 10.0));
            walls.push(wall);
            peaks.push(max_rss_kb as f64 / 1024.0);
            verdict = if killed {
                "killed".to_string()
            } else {
                out.lines().find_map(|l| l.strip_prefix("Verification result: ")).unwrap_or("none").to_string()
            };
        }
        println!("{:>10} {:>8} {:>10.2} {:>12.0}  {}", n, text.lines().count(), median(&walls), median(&peaks), verdict);
    }
    let _ = std::fs::remove_dir_all(&dir);
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_generates_the_requested_functions_and_a_main() {
        for shape in [Shape::Flat, Shape::Chain, Shape::Globals] {
            let text = program(10, shape);
            assert_eq!(text.matches("int f").count(), 10, "{shape:?}");
            assert!(text.contains("int main(void)") && text.contains("reach_error();"), "{shape:?}");
        }
        assert!(program(10, Shape::Chain).contains("return f8(x) - 1;"));
        assert!(program(10, Shape::Globals).contains("int g9;\n"));
    }
}
