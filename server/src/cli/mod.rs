//! Command-line interface: `check` (batch verification, with SV-COMP witnesses and
//! executable harnesses on request), `report` (the HTML report), `replay` (runs a harness),
//! `cfa` (automata as text or Graphviz) and `lsp` (the language server). This file holds the
//! clap definitions and the dispatch; each subcommand has its own file. (The benchmarks are
//! in the `xtask` crate.)
//!
//! Exit codes of `check` (`crate::messages`): 0 every property proved (TRUE), 1 a property
//! violated (FALSE), 2 verdict unknown, 3 the input could not be verified at all (missing
//! file, syntax error, bad arguments).

mod args;
mod cfa;
mod check;
mod replay;
mod report;
mod watchdog;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

pub use args::AnalysisArgs;
pub use check::{Format, Outputs};

use crate::messages::EXIT_ERROR;

#[derive(Parser)]
#[command(name = "cpals", version, about = "Verifies C programs: proofs, counterexamples and loop invariants")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Runs the language server on stdin/stdout (same as `cpals lsp`).
    #[arg(long)]
    stdio: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Verifies every property of a C file (or of several, each on its own).
    Check {
        #[arg(required = true, num_args = 1..)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        args: AnalysisArgs,
        /// How results are printed: text (a line per property), json (one object; an array
        /// of them for several files) or sarif (one SARIF 2.1.0 log for all files, for CI).
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Same as `--format json`.
        #[arg(long, conflicts_with = "format")]
        json: bool,
        /// Prints counterexample steps under violated properties.
        #[arg(long)]
        trace: bool,
        /// Writes an SV-COMP witness (format 2.0, YAML): a violation witness for a false
        /// verdict, a correctness witness (the loop invariants) for a true one, none for
        /// unknown.
        #[arg(long, value_name = "FILE")]
        witness: Option<PathBuf>,
        /// Writes a C harness that replays the first violated property's counterexample
        /// (every input function returns the trace's values in order).
        #[arg(long, value_name = "FILE.c")]
        harness: Option<PathBuf>,
    },
    /// Verifies a file and writes one self-contained HTML page: source, verdicts,
    /// counterexamples step by step, loop invariants and the automata of every function.
    Report {
        file: PathBuf,
        #[command(flatten)]
        args: AnalysisArgs,
        /// The page to write.
        #[arg(short = 'o', long = "output", value_name = "FILE.html")]
        output: PathBuf,
    },
    /// Compiles a program with a harness written by `check --harness`, runs it and says
    /// whether it reaches a violation (exit code 1 if it does, 0 if not, 3 if it cannot run).
    Replay {
        file: PathBuf,
        harness: PathBuf,
        #[arg(long, default_value = "LP64")]
        data_model: String,
        /// Time limit of the run in seconds (more than 0, at most 1000000).
        #[arg(long, default_value_t = 10.0)]
        timeout: f64,
    },
    /// Runs the language server on stdin/stdout (LSP; editors start it this way).
    Lsp {
        /// Accepted for editors that pass it; stdio is the only transport.
        #[arg(long)]
        stdio: bool,
    },
    /// Prints the control-flow automata of a file.
    Cfa {
        file: PathBuf,
        /// Graphviz output.
        #[arg(long)]
        dot: bool,
        #[arg(long, default_value = "LP64")]
        data_model: String,
    },
}

pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_ERROR } else { 0 };
        }
    };
    if cli.command.as_ref().is_some_and(|c| !matches!(c, Command::Lsp { .. })) {
        // A command's output piped into `head` ends it quietly, as for other Unix tools (Rust
        // ignores SIGPIPE, so `println!` would panic on the closed pipe). The server keeps
        // ignoring it: a closed connection is an error it handles.
        // SAFETY: restores the default disposition of one signal before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    match cli.command {
        None if cli.stdio => crate::lsp::run_stdio(),
        None => {
            use clap::CommandFactory;
            let _ = Cli::command().print_help();
            EXIT_ERROR
        }
        Some(Command::Lsp { .. }) => crate::lsp::run_stdio(),
        Some(Command::Check { files, args, format, json, trace, witness, harness }) => {
            let format = if json { Format::Json } else { format };
            let out = Outputs { format, trace, witness, harness };
            match files.as_slice() {
                [file] => check::run(file, &args, &out),
                _ => check::run_each(&files, &out),
            }
        }
        Some(Command::Report { file, args, output }) => report::run(&file, &args, &output),
        Some(Command::Replay { file, harness, data_model, timeout }) => replay::run(&file, &harness, &data_model, timeout),
        Some(Command::Cfa { file, dot, data_model }) => cfa::run(&file, dot, &data_model),
    }
}
