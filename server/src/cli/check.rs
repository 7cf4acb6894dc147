//! `cpals check`: verifies every property of a file and prints the verdicts (text or JSON),
//! with an SV-COMP witness and an executable harness on request.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use analysis_engine::cfa::{DataModel, Program};
use analysis_engine::report::{Report, StepKind, UnknownReason, Verdict};
use analysis_engine::Cancel;

use crate::cli::args::{load, AnalysisArgs};
use crate::cli::watchdog::{Fallback, Limits, Watchdog, GRACE};
use crate::messages::{exit_code, message, result_text_for, EXIT_ERROR, EXIT_FALSE, EXIT_TRUE, EXIT_UNKNOWN};
use analysis_engine::config::PropertySet;

/// How `check` prints its results.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One line per property and `Verification result:` (SV-COMP's form).
    Text,
    /// One JSON object (DESIGN.md, "Interfaces").
    Json,
    /// A SARIF 2.1.0 log (GitHub code scanning, CodeChecker).
    Sarif,
}

/// What `check` prints and writes besides the verdict.
pub struct Outputs {
    pub format: Format,
    pub trace: bool,
    pub witness: Option<PathBuf>,
    pub harness: Option<PathBuf>,
}

/// Verifies several files, each by a `cpals check` process of its own (its own time limit and
/// watchdog; one file's failure does not lose the others), with this process's arguments;
/// text is passed through, JSON objects are printed as one array, SARIF logs merged into one.
/// The exit code is the worst: an error, then a violation, then unknown.
pub fn run_each(files: &[PathBuf], out: &Outputs) -> i32 {
    if out.witness.is_some() || out.harness.is_some() {
        eprintln!("cpals: --witness and --harness take one file at a time");
        return EXIT_ERROR;
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("cpals: cannot find its own executable to verify several files: {}", e);
            return EXIT_ERROR;
        }
    };
    // This process's arguments without the files and the format, which each child gets.
    let given: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let mut common = Vec::new();
    let mut skip_value = false;
    for a in &given {
        let text = a.to_string_lossy();
        if std::mem::take(&mut skip_value) || text == "--json" || text.starts_with("--format=") {
            continue;
        }
        if text == "--format" {
            skip_value = true;
            continue;
        }
        if !files.iter().any(|f| f.as_os_str() == a.as_os_str()) {
            common.push(a.clone());
        }
    }
    let format = match out.format {
        Format::Text => "text",
        Format::Json => "json",
        Format::Sarif => "sarif",
    };
    let (mut worst, mut outputs) = (EXIT_TRUE, Vec::new());
    for f in files {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(&common).args(["--format", format]).arg(f).stderr(std::process::Stdio::inherit());
        let (code, stdout) = if out.format == Format::Text {
            let status = cmd.status();
            (status.ok().and_then(|s| s.code()).unwrap_or(EXIT_ERROR), Vec::new())
        } else {
            match cmd.output() {
                Ok(o) => (o.status.code().unwrap_or(EXIT_ERROR), o.stdout),
                Err(e) => {
                    eprintln!("cpals: cannot run {}: {}", exe.display(), e);
                    (EXIT_ERROR, Vec::new())
                }
            }
        };
        let rank = |c: i32| [EXIT_TRUE, EXIT_UNKNOWN, EXIT_FALSE, EXIT_ERROR].iter().position(|&x| x == c).unwrap_or(3);
        if rank(code) > rank(worst) {
            worst = code;
        }
        if out.format != Format::Text {
            let value = serde_json::from_slice::<serde_json::Value>(&stdout).ok();
            let value = match (value, out.format) {
                (Some(v), _) => v,
                (None, Format::Sarif) => crate::sarif::failure_log(&f.display().to_string(), "cpals ended without a result"),
                (None, _) => serde_json::json!({ "file": f.display().to_string(), "verdict": "error" }),
            };
            outputs.push(value);
        }
    }
    match out.format {
        Format::Text => {}
        Format::Json => println!("{}", serde_json::to_string_pretty(&outputs).expect("JSON")),
        Format::Sarif => println!("{}", serde_json::to_string_pretty(&crate::sarif::merge(&outputs)).expect("JSON")),
    }
    worst
}

/// The time limit of `check` without `--timeout` (CPU seconds).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

pub fn run(file: &Path, args: &AnalysisArgs, out: &Outputs) -> i32 {
    let started = Instant::now();
    let (format, trace) = (out.format, out.trace);
    let path = file.display().to_string();
    let (mut cfg, model) = match args.config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cpals: {}", e);
            return EXIT_ERROR;
        }
    };
    let opts = match args.build_for(file) {
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
        let why = format!("the time limit of {} s ran out before the program was loaded", limit.as_secs_f64());
        eprintln!("cpals: {name}: {why}");
        print_failure(format, &name, &why, "Verification result: UNKNOWN");
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
            print_failure(format, &path, &e.to_string(), "Verification result: ERROR");
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
    let source = program.source.to_string();
    dog.arm(Box::new(move || {
        print_report(&fallback, None, format, trace, props, (&path, &source));
        EXIT_UNKNOWN
    }));
    // `--timeout` limits CPU time, as SV-COMP and BenchExec do: the verdict does not depend
    // on how busy the machine is.
    let report = analysis_engine::verify(&program, &cfg, &Cancel::on_cpu_time());
    settle(&dog);
    // What the proofs assume: of the command line, of allocations.
    for assumed in [analysis_engine::frontend::models::args_note(), analysis_engine::cfa::build::ALLOCATIONS_SUCCEED.to_string()] {
        if report.notes.iter().any(|(_, m)| *m == assumed) {
            eprintln!("cpals: note: {}", assumed);
        }
    }
    if report.stats.native_runs > 0 {
        // The user is told whenever their program ran.
        eprintln!(
            "cpals: note: the program was compiled with cc and run natively {} time{}, in the sandbox (no files, processes or network; CPU and memory limits); `--native off` turns this off",
            report.stats.native_runs,
            if report.stats.native_runs == 1 { "" } else { "s" }
        );
    }
    print_report(&report, Some(&program), format, trace, program.properties, (&file.display().to_string(), &program.source));
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
/// Prints a report in `format`; `file` is the file's name and text (SARIF's columns).
fn print_report(report: &Report, program: Option<&Program>, format: Format, trace: bool, props: PropertySet, file: (&str, &str)) {
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&crate::json::report(report)).expect("JSON")),
        Format::Text => print_text(report, program, trace, props),
        Format::Sarif => {
            let log = crate::sarif::log(&[crate::sarif::FileResult { path: file.0, text: file.1, report }]);
            println!("{}", serde_json::to_string_pretty(&log).expect("JSON"));
        }
    }
}

/// What a run that could not verify its file prints on stdout besides the message on stderr:
/// the text form's result line, nothing under JSON, a log with the failure under SARIF.
fn print_failure(format: Format, path: &str, why: &str, text_line: &str) {
    match format {
        Format::Text => println!("{}", text_line),
        Format::Json => {}
        Format::Sarif => println!("{}", serde_json::to_string_pretty(&crate::sarif::failure_log(path, why)).expect("JSON")),
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
/// `trace`), the invariants (one per loop, as `invariant_text` presents them; the full form
/// is in `--json`), and SV-COMP's `Verification result:` line.
pub fn print_text(r: &Report, program: Option<&Program>, trace: bool, props: PropertySet) {
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
    for (i, text, _, sources) in crate::invariant_text::shown(&r.invariants, program) {
        println!("{}:{}:{}: invariant: {} ({})", i.range.file, i.range.line, i.range.col, text, sources);
    }
    println!("Verification result: {}", result_text_for(r.verdict, props, &r.properties));
}
