//! `cpals check`: verifies every property of a file and prints the verdicts (text or JSON),
//! with an SV-COMP witness and an executable harness on request.

use std::path::{Path, PathBuf};

use analysis_engine::cfa::{DataModel, Program};
use analysis_engine::report::{Report, StepKind, Verdict};
use analysis_engine::Cancel;

use crate::cli::args::{load, AnalysisArgs};
use crate::messages::{exit_code, message, result_text_for, EXIT_ERROR};
use analysis_engine::config::PropertySet;

/// What `check` prints and writes besides the verdict.
pub struct Outputs {
    pub json: bool,
    pub trace: bool,
    pub witness: Option<PathBuf>,
    pub harness: Option<PathBuf>,
}

pub fn run(file: &Path, args: &AnalysisArgs, out: &Outputs) -> i32 {
    let (json, trace) = (out.json, out.trace);
    let (cfg, model) = match args.config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cpals: {}", e);
            return EXIT_ERROR;
        }
    };
    let opts = match args.build() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("cpals: {}", e);
            return EXIT_ERROR;
        }
    };
    let program = match load(file, model, &opts) {
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
    if report.stats.native_runs > 0 {
        // The user is told whenever their program ran.
        eprintln!(
            "cpals: note: the program was compiled with cc and run natively {} time{}, in the sandbox (no files, processes or network; CPU and memory limits); `--native off` turns this off",
            report.stats.native_runs,
            if report.stats.native_runs == 1 { "" } else { "s" }
        );
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&crate::json::report(&report)).expect("JSON"));
    } else {
        print_text(&report, trace, program.properties);
    }
    // The verdict stands, but evidence that was asked for and could not be written makes the
    // run fail (exit 3): a script must not take a missing file for a written one.
    let mut written = true;
    if let Some(path) = &out.witness {
        written &= write_witness(file, path, &report, &program, model);
    }
    if let Some(path) = &out.harness {
        match crate::evidence::replayable(&program, &report.properties).and_then(|p| crate::evidence::harness(&program, p)) {
            Ok(text) => written &= write_file(path, &text),
            Err(why) => eprintln!("cpals: no harness written: {}", why),
        }
    }
    if written {
        exit_code(report.verdict)
    } else {
        EXIT_ERROR
    }
}

/// Writes an evidence file; false (with the reason on stderr) if it cannot be written.
fn write_file(path: &Path, text: &str) -> bool {
    match std::fs::write(path, text) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("cpals: cannot write {}: {}", path.display(), e);
            false
        }
    }
}

/// Writes the witness of a report, if it has one; false if writing it failed.
fn write_witness(file: &Path, path: &Path, report: &Report, program: &Program, model: DataModel) -> bool {
    let text = crate::witness::Task::read(file, model).and_then(|task| crate::witness::witness(report, program, &task));
    match text {
        Ok(crate::witness::Witness::Violation(t) | crate::witness::Witness::Correctness(t)) => write_file(path, &t),
        Err(why) => {
            eprintln!("cpals: no witness written: {}", why);
            true
        }
    }
}

/// The text form of a report: one line per property (with its counterexample's steps if
/// `trace`), the invariants, and SV-COMP's `Verification result:` line.
pub fn print_text(r: &Report, trace: bool, props: PropertySet) {
    for p in &r.properties {
        println!("{}:{}:{}: {}: {}", p.range.file, p.range.line, p.range.col, p.verdict.as_str(), message(p));
        if trace && p.verdict == Verdict::False {
            for (i, s) in p.trace.iter().enumerate() {
                let vals: Vec<String> = s.values.iter().map(|(k, v)| format!("{} = {}", k, v)).collect();
                let branch = match s.kind {
                    StepKind::Assume { taken } => {
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
    println!("Verification result: {}", result_text_for(r.verdict, props, &r.properties));
}
