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
pub use check::Outputs;

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
    /// Verifies every property of a C file.
    Check {
        file: PathBuf,
        #[command(flatten)]
        args: AnalysisArgs,
        /// Prints one JSON object instead of text.
        #[arg(long)]
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
    match cli.command {
        None if cli.stdio => crate::lsp::run_stdio(),
        None => {
            use clap::CommandFactory;
            let _ = Cli::command().print_help();
            EXIT_ERROR
        }
        Some(Command::Lsp { .. }) => crate::lsp::run_stdio(),
        Some(Command::Check { file, args, json, trace, witness, harness }) => {
            check::run(&file, &args, &Outputs { json, trace, witness, harness })
        }
        Some(Command::Report { file, args, output }) => report::run(&file, &args, &output),
        Some(Command::Replay { file, harness, data_model, timeout }) => replay::run(&file, &harness, &data_model, timeout),
        Some(Command::Cfa { file, dot, data_model }) => cfa::run(&file, dot, &data_model),
    }
}
