//! `cpals check`: verifies every property of a file and prints the verdicts (text or JSON),
//! with an SV-COMP witness and an executable harness on request.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use analysis_engine::cfa::{DataModel, Program};
use analysis_engine::report::{Report, StepKind, UnknownReason, Verdict};
use analysis_engine::Cancel;

use crate::cli::args::{load, AnalysisArgs};
use crate::cli::watchdog::{Fallback, Limits, Watchdog, GRACE};
use crate::messages::{exit_code, message, result_text_for, EXIT_ERROR, EXIT_UNKNOWN};
use analysis_engine::config::PropertySet;

/// What `check` prints and writes besides the verdict.
pub struct Outputs {
    pub json: bool,
    pub trace: bool,
    pub witness: Option<PathBuf>,
    pub harness: Option<PathBuf>,
}

/// The time limit of `check` without `--timeout` (CPU seconds).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

pub fn run(file: &Path, args: &AnalysisArgs, out: &Outputs) -> i32 {
    let started = Instant::now();
    let (json, trace) = (out.json, out.trace);
    let (mut cfg, model) = match args.config() {
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
    let limit = *cfg.timeout.get_or_insert_with(|| {
        eprintln!("cpals: no --timeout given, using {} s", DEFAULT_TIMEOUT.as_secs());
        DEFAULT_TIMEOUT
    });
    // Whatever the analysis does, the run ends at the limit plus a grace (see `watchdog`).
    let name = file.display().to_string();
    let before_load: Fallback = Box::new(move || {
        eprintln!("cpals: {name}: the time limit of {} s ran out before the program was loaded", limit.as_secs_f64());
        if !json {
            println!("Verification result: UNKNOWN");
        }
        EXIT_UNKNOWN
    });
    let limits = Limits { limit, grace: GRACE };
    let dog = Watchdog::start(limits, started, file.display().to_string(), before_load);
    // The front end waits on the preprocessor, which uses no CPU time of this process: its
    // deadline is on the wall clock.
    let front = Cancel::with_deadline(started + limit);
    let loaded = load(file, model, &opts, &front);
    if loaded.is_err() {
        settle(&dog);
    }
    let program = match loaded {
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
            settle(&dog);
            eprintln!("cpals: no function `{}` in {}", f, file.display());
            return EXIT_ERROR;
        }
    }
    // What the watchdog prints if the analysis does not stop in time: every property unknown.
    let mut fallback = analysis_engine::unanswered(&program, &cfg, UnknownReason::Timeout);
    fallback.verdict = Verdict::Unknown;
    let props = program.properties;
    dog.arm(Box::new(move || {
        print_report(&fallback, json, trace, props);
        EXIT_UNKNOWN
    }));
    // `--timeout` limits CPU time, as SV-COMP and BenchExec do: the verdict does not depend
    // on how busy the machine is.
    let report = analysis_engine::verify(&program, &cfg, &Cancel::on_cpu_time());
    settle(&dog);
    if report.stats.native_runs > 0 {
        // The user is told whenever their program ran.
        eprintln!(
            "cpals: note: the program was compiled with cc and run natively {} time{}, in the sandbox (no files, processes or network; CPU and memory limits); `--native off` turns this off",
            report.stats.native_runs,
            if report.stats.native_runs == 1 { "" } else { "s" }
        );
    }
    print_report(&report, json, trace, program.properties);
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

/// Tells the watchdog the run prints its own result; if the watchdog is ending the run
/// instead, waits for it to exit the process.
fn settle(dog: &Watchdog) {
    if !dog.finish() {
        loop {
            std::thread::park();
        }
    }
}

/// Prints a report as text or JSON.
fn print_report(report: &Report, json: bool, trace: bool, props: PropertySet) {
    if json {
        println!("{}", serde_json::to_string_pretty(&crate::json::report(report)).expect("JSON"));
    } else {
        print_text(report, trace, props);
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
