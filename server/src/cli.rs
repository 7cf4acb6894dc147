//! Command-line interface: `check` (batch verification, with SV-COMP witnesses and
//! executable harnesses on request), `report` (the HTML report), `replay` (runs a harness),
//! `cfa` (automata as text or Graphviz), `lsp` (the language server), `bench` and
//! `lsp-bench` (benchmarks).
//!
//! Exit codes of `check`: 0 every property proved (TRUE), 1 a property violated (FALSE),
//! 2 verdict unknown, 3 the input could not be verified at all (missing file, syntax error,
//! bad arguments).

use std::path::PathBuf;
use std::time::Duration;

use analysis_engine::cfa::{DataModel, TargetKind};
use analysis_engine::config::{Abstraction, BlockEncoding, Form, Kind, Scope};
use analysis_engine::core::waitlist::Order;
use analysis_engine::frontend::SourceInput;
use analysis_engine::report::{PropertyReport, Report, Verdict};
use analysis_engine::smt::interpolate::Strategy;
use analysis_engine::{Analysis, Cancel, VerifyConfig};
use clap::{Parser, Subcommand};

pub const EXIT_TRUE: i32 = 0;
pub const EXIT_FALSE: i32 = 1;
pub const EXIT_UNKNOWN: i32 = 2;
pub const EXIT_ERROR: i32 = 3;

#[derive(Parser)]
#[command(name = "cpals", version, about = "Verifies C programs: proofs, counterexamples and loop invariants")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Runs the language server on stdin/stdout (same as `cpals lsp`).
    #[arg(long)]
    stdio: bool,
}

#[derive(clap::Args, Clone)]
pub struct AnalysisArgs {
    /// The analysis to run: combined (explicit values, then values with predicates; for
    /// programs with recursion the summary analysis first), value, predicate, summaries
    /// (procedure summaries, seed 002) or tra (transition relation approximation, seed 003);
    /// see the README.
    #[arg(long, default_value = "combined")]
    pub analysis: String,
    /// CPU-time limit in seconds, as SV-COMP counts it (the analysis stops and open
    /// properties become unknown with the reason `timeout`).
    #[arg(long)]
    pub timeout: Option<f64>,
    /// LP64 (x86-64 Linux) or ILP32 (SV-COMP's 32-bit tasks).
    #[arg(long, default_value = "LP64")]
    pub data_model: String,
    /// Waitlist order: dfs, bfs or rpo (default: dfs for `value`, rpo for the others).
    #[arg(long)]
    pub order: Option<String>,
    /// Predicate abstraction: boolean (BDDs over all predicate valuations, the default) or
    /// cartesian (the conjunction of the predicates implied, cheaper and weaker).
    #[arg(long, default_value = "boolean")]
    pub abstraction: String,
    /// Where predicate abstraction happens: loops (loop heads and function boundaries,
    /// adjustable-block encoding, the default) or edges (after every operation).
    #[arg(long, default_value = "loops")]
    pub blocks: String,
    /// Verifies only this function as the entry (its callees included), as the language
    /// server does for one unit; by default the program from `main`, or every uncalled
    /// function when there is no `main`.
    #[arg(long)]
    pub function: Option<String>,
    /// Interpolation strategies in the order they are tried: spacer, qe, farkas.
    #[arg(long, value_delimiter = ',', default_value = "spacer,qe,farkas")]
    pub interpolation: Vec<String>,
    /// What the summary analysis refines per round: dag (all error paths of the round
    /// together, from their counterexample DAG, the default) or path (one error path).
    #[arg(long, default_value = "dag")]
    pub refine: String,
    /// The interpolants a counterexample DAG of the summary analysis is refined with:
    /// spacer (Spacer's solution of its Horn clauses), or the seed 002 families by
    /// quantifier elimination: conciliated, weakest, strongest.
    #[arg(long, default_value = "spacer")]
    pub dag_interpolants: String,
    /// Where the summary analysis tracks the predicates it learns: function (everywhere in
    /// the procedure they were found in) or location (at their control point only).
    #[arg(long, default_value = "function")]
    pub summary_precision: String,
    /// What a DAG node's interpolant of a family (--dag-interpolants) adds to the summary
    /// analysis's precision: its atoms, one predicate each, or the formula itself as one
    /// predicate (the paper's setting).
    #[arg(long, default_value = "atoms")]
    pub summary_predicates: String,
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
        /// Time limit of the run in seconds.
        #[arg(long, default_value_t = 10.0)]
        timeout: f64,
    },
    /// Runs every task of a benchmark folder (with an INDEX.tsv) and prints a results table.
    Bench(crate::bench::BenchArgs),
    /// Runs the language server on stdin/stdout (LSP; editors start it this way).
    Lsp {
        /// Accepted for editors that pass it; stdio is the only transport.
        #[arg(long)]
        stdio: bool,
    },
    /// Replays edits against the language server and prints its latencies, cache hit rate and
    /// memory.
    LspBench(crate::lsp_bench::LspBenchArgs),
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

pub fn parse_model(s: &str) -> Result<DataModel, String> {
    match s.to_ascii_uppercase().as_str() {
        "LP64" => Ok(DataModel::Lp64),
        "ILP32" => Ok(DataModel::Ilp32),
        other => Err(format!("unknown data model `{}` (use LP64 or ILP32)", other)),
    }
}

impl AnalysisArgs {
    pub fn config(&self) -> Result<(VerifyConfig, DataModel), String> {
        let analysis = Analysis::parse(&self.analysis).ok_or_else(|| format!("unknown analysis `{}`", self.analysis))?;
        let mut cfg = VerifyConfig::new(analysis);
        if let Some(t) = self.timeout {
            if !(t > 0.0 && t.is_finite()) {
                return Err("the timeout must be a positive number of seconds".into());
            }
            cfg.timeout = Some(Duration::from_secs_f64(t));
        }
        if let Some(o) = &self.order {
            cfg.cegar.order = Order::parse(o).ok_or_else(|| format!("unknown order `{}`", o))?;
        }
        cfg.predicate.abstraction = match self.abstraction.as_str() {
            "boolean" => Abstraction::Boolean,
            "cartesian" => Abstraction::Cartesian,
            other => return Err(format!("unknown abstraction `{}` (use boolean or cartesian)", other)),
        };
        cfg.predicate.blocks = match self.blocks.as_str() {
            "loops" => BlockEncoding::LoopsAndFunctions,
            "edges" => BlockEncoding::SingleEdge,
            other => return Err(format!("unknown block encoding `{}` (use loops or edges)", other)),
        };
        cfg.predicate.interpolation = self
            .interpolation
            .iter()
            .map(|s| Strategy::parse(s).ok_or_else(|| format!("unknown interpolation strategy `{}` (use spacer, qe or farkas)", s)))
            .collect::<Result<_, _>>()?;
        cfg.summaries.dag_refinement = match self.refine.as_str() {
            "dag" => true,
            "path" => false,
            other => return Err(format!("unknown refinement `{}` (use dag or path)", other)),
        };
        cfg.summaries.dag_interpolants = match self.dag_interpolants.as_str() {
            "spacer" => None,
            other => Some(
                Kind::parse(other)
                    .ok_or_else(|| format!("unknown DAG interpolants `{}` (use spacer, conciliated, weakest or strongest)", other))?,
            ),
        };
        cfg.summaries.scope = match self.summary_precision.as_str() {
            "function" => Scope::Function,
            "location" => Scope::Location,
            other => return Err(format!("unknown summary precision `{}` (use function or location)", other)),
        };
        cfg.summaries.form = match self.summary_predicates.as_str() {
            "atoms" => Form::Atoms,
            "formulas" => Form::Formulas,
            other => return Err(format!("unknown summary predicates `{}` (use atoms or formulas)", other)),
        };
        if cfg.summaries.form == Form::Formulas && cfg.summaries.dag_interpolants.is_none() {
            return Err(
                "`--summary-predicates formulas` needs `--dag-interpolants conciliated|weakest|strongest` (Spacer's solutions add atoms)"
                    .into(),
            );
        }
        cfg.entry = self.function.clone();
        if cfg.predicate.interpolation.is_empty() {
            return Err("at least one interpolation strategy is needed".into());
        }
        Ok((cfg, parse_model(&self.data_model)?))
    }
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
        Some(Command::LspBench(args)) => crate::lsp_bench::run(&args),
        Some(Command::Check { file, args, json, trace, witness, harness }) => {
            check(&file, &args, &Outputs { json, trace, witness, harness })
        }
        Some(Command::Report { file, args, output }) => report(&file, &args, &output),
        Some(Command::Replay { file, harness, data_model, timeout }) => replay(&file, &harness, &data_model, timeout),
        Some(Command::Bench(args)) => crate::bench::run(&args),
        Some(Command::Cfa { file, dot, data_model }) => cfa(&file, dot, &data_model),
    }
}

fn load(file: &PathBuf, model: DataModel) -> Result<analysis_engine::cfa::Program, String> {
    let input = SourceInput::read(file).map_err(|e| e.to_string())?;
    analysis_engine::load(&input, model).map_err(|e| e.to_string())
}

/// What `check` prints and writes besides the verdict.
pub struct Outputs {
    pub json: bool,
    pub trace: bool,
    pub witness: Option<PathBuf>,
    pub harness: Option<PathBuf>,
}

fn check(file: &PathBuf, args: &AnalysisArgs, out: &Outputs) -> i32 {
    let (json, trace) = (out.json, out.trace);
    let (cfg, model) = match args.config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cpals: {}", e);
            return EXIT_ERROR;
        }
    };
    let program = match load(file, model) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{}", e);
            if !json {
                println!("Verification result: ERROR");
            }
            return EXIT_ERROR;
        }
    };
    if let Some(f) = &cfg.entry {
        if !program.by_name.contains_key(f.as_str()) {
            eprintln!("cpals: no function `{}` in {}", f, file.display());
            return EXIT_ERROR;
        }
    }
    // `--timeout` limits CPU time, as SV-COMP and BenchExec do: the verdict does not depend
    // on how busy the machine is.
    let report = analysis_engine::verify(&program, &cfg, &Cancel::on_cpu_time());
    if json {
        println!("{}", serde_json::to_string_pretty(&crate::json::report(&report)).expect("JSON"));
    } else {
        print_text(&report, trace);
    }
    if let Some(path) = &out.witness {
        write_witness(file, path, &report, &program, model);
    }
    if let Some(path) = &out.harness {
        match crate::evidence::replayable(&program, &report.properties).and_then(|p| crate::evidence::harness(&program, p)) {
            Ok(text) => {
                if let Err(e) = std::fs::write(path, text) {
                    eprintln!("cpals: cannot write {}: {}", path.display(), e);
                }
            }
            Err(why) => eprintln!("cpals: no harness written: {}", why),
        }
    }
    match report.verdict {
        Verdict::True => EXIT_TRUE,
        Verdict::False => EXIT_FALSE,
        Verdict::Unknown => EXIT_UNKNOWN,
    }
}

fn write_witness(
    file: &std::path::Path,
    path: &std::path::Path,
    report: &Report,
    program: &analysis_engine::cfa::Program,
    model: DataModel,
) {
    let text = crate::witness::Task::read(file, model).and_then(|task| crate::witness::witness(report, program, &task));
    match text {
        Ok(crate::witness::Witness::Violation(t) | crate::witness::Witness::Correctness(t)) => {
            if let Err(e) = std::fs::write(path, t) {
                eprintln!("cpals: cannot write {}: {}", path.display(), e);
            }
        }
        Err(why) => eprintln!("cpals: no witness written: {}", why),
    }
}

fn report(file: &PathBuf, args: &AnalysisArgs, output: &PathBuf) -> i32 {
    let (cfg, model) = match args.config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cpals: {}", e);
            return EXIT_ERROR;
        }
    };
    let program = match load(file, model) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{}", e);
            return EXIT_ERROR;
        }
    };
    let report = analysis_engine::verify(&program, &cfg, &Cancel::new());
    let page = crate::html::page(&report, &program);
    if let Err(e) = std::fs::write(output, page) {
        eprintln!("cpals: cannot write {}: {}", output.display(), e);
        return EXIT_ERROR;
    }
    print_text(&report, false);
    match report.verdict {
        Verdict::True => EXIT_TRUE,
        Verdict::False => EXIT_FALSE,
        Verdict::Unknown => EXIT_UNKNOWN,
    }
}

fn replay(file: &PathBuf, harness: &PathBuf, data_model: &str, timeout: f64) -> i32 {
    let model = match parse_model(data_model) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("cpals: {}", e);
            return EXIT_ERROR;
        }
    };
    if !(timeout > 0.0 && timeout.is_finite()) {
        eprintln!("cpals: the timeout must be a positive number of seconds");
        return EXIT_ERROR;
    }
    if !harness.is_file() {
        eprintln!("cpals: cannot read {}", harness.display());
        return EXIT_ERROR;
    }
    let program = match load(file, model) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{}", e);
            return EXIT_ERROR;
        }
    };
    use analysis_engine::harness::NativeResult;
    match analysis_engine::harness::replay_files(file, harness, model, Duration::from_secs_f64(timeout), &program.externals) {
        NativeResult::Reached(at) => {
            println!("reached: {}", at);
            EXIT_FALSE
        }
        NativeResult::NotReached(why) => {
            println!("not reached: {}", why);
            EXIT_TRUE
        }
        NativeResult::Unavailable(why) => {
            eprintln!("cpals: cannot replay: {}", why);
            EXIT_ERROR
        }
    }
}

/// What a property checks, for messages.
pub fn describe(p: &PropertyReport) -> String {
    match (&p.condition, p.kind) {
        (Some(c), TargetKind::Assert) => format!("assertion `{}`", c),
        (Some(c), _) => format!("`{}`", c),
        (None, TargetKind::Assert) => "assertion".into(),
        (None, TargetKind::ReachError) => "call to reach_error()".into(),
        (None, TargetKind::ErrorLabel) => "label ERROR".into(),
    }
}

/// What a proof says: `… holds` or `… is unreachable`.
pub fn holds(p: &PropertyReport) -> String {
    if p.condition.is_none() && p.kind != TargetKind::Assert {
        format!("{} is unreachable", describe(p))
    } else {
        format!("{} holds", describe(p))
    }
}

pub fn message(p: &PropertyReport) -> String {
    let reach = p.condition.is_none() && p.kind != TargetKind::Assert;
    match (p.verdict, reach) {
        (Verdict::True, _) => format!("{} (proved by the {} analysis)", holds(p), p.analysis),
        (Verdict::False, false) => format!("{} can fail (counterexample with {} steps)", describe(p), p.trace.len()),
        (Verdict::False, true) => format!("{} is reachable (counterexample with {} steps)", describe(p), p.trace.len()),
        (Verdict::Unknown, _) => format!("{}: {}", describe(p), p.reason.as_ref().map_or_else(|| "unknown".to_string(), |r| r.to_string())),
    }
}

fn print_text(r: &Report, trace: bool) {
    for p in &r.properties {
        println!("{}:{}:{}: {}: {}", p.range.file, p.range.line, p.range.col, p.verdict.as_str(), message(p));
        if trace && p.verdict == Verdict::False {
            for (i, s) in p.trace.iter().enumerate() {
                let vals: Vec<String> = s.values.iter().map(|(k, v)| format!("{} = {}", k, v)).collect();
                let branch = match s.kind {
                    analysis_engine::report::StepKind::Assume { taken } => {
                        if taken {
                            " [true]"
                        } else {
                            " [false]"
                        }
                    }
                    _ => "",
                };
                println!(
                    "  {:>3}. {}:{}  {}{}{}{}",
                    i + 1,
                    s.range.line,
                    s.range.col,
                    s.text,
                    branch,
                    if vals.is_empty() { "" } else { "   " },
                    vals.join(", ")
                );
            }
        }
    }
    for i in &r.invariants {
        println!("{}:{}:{}: invariant: {} ({})", i.range.file, i.range.line, i.range.col, i.expr, i.source);
    }
    let result = match r.verdict {
        Verdict::True => "TRUE",
        Verdict::False => "FALSE(unreach-call)",
        Verdict::Unknown => "UNKNOWN",
    };
    println!("Verification result: {}", result);
}

fn cfa(file: &PathBuf, dot: bool, data_model: &str) -> i32 {
    let model = match parse_model(data_model) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("cpals: {}", e);
            return EXIT_ERROR;
        }
    };
    match load(file, model) {
        Ok(p) => {
            if dot {
                print!("{}", analysis_engine::cfa::dot::to_dot(&p));
            } else {
                for f in &p.functions {
                    println!("{} ({} nodes, {} edges)", f.name, f.cfa.nodes.len(), f.cfa.edges.len());
                    for e in &f.cfa.edges {
                        println!(
                            "  {} -> {}  line {}: {}",
                            e.src.0,
                            e.dst.0,
                            f.first_line + e.span.line,
                            analysis_engine::cfa::pretty::edge(&p, &e.kind)
                        );
                    }
                }
            }
            0
        }
        Err(e) => {
            eprintln!("{}", e);
            EXIT_ERROR
        }
    }
}
