//! The benchmark runner (`xtask bench DIR`): runs every task of a folder with an `INDEX.tsv`
//! (such as SV-COMP's `bench/sv`) through `cpals check` in child processes, a few at a time,
//! with a time limit, and prints per category and configuration: correct true/false, wrong,
//! unknown, the SV-COMP score, the median CPU time per correct answer and the peak memory.
//!
//! Every `false` verdict is checked by replaying its counterexample: the child writes an
//! executable harness (`check --harness`), which is compiled with the program and run; a
//! replay that runs and does not reach the violation counts as a wrong verdict (one that cannot
//! run, for want of a harness or because gcc rejects the program, is listed apart). With `--keep DIR`
//! the harnesses and the SV-COMP witnesses the children write are kept there.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cpals::messages::EXIT_ERROR;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// A folder with an INDEX.tsv (columns by header name: category, c_file, yml_file,
    /// expected_verdict, optionally property).
    pub dir: PathBuf,
    /// CPU-time limit per task in seconds, as SV-COMP counts it (a verdict that took longer
    /// counts as a timeout; the child is killed 5 s after it, or after 4 times it on the wall clock).
    #[arg(long, default_value_t = 30.0)]
    pub timeout: f64,
    /// Tasks run at a time.
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// Comma-separated analyses to compare side by side, each optionally followed by options
    /// of its own for `cpals check` (`combined,combined --memory=off`); peers: `frama-c-eva-N`
    /// (Eva at precision N) and `randtest-N` (random testing for N seconds, `tools/randtest`).
    #[arg(long, default_value = "value")]
    pub analysis: String,
    /// Only tasks whose category starts with one of these (comma-separated).
    #[arg(long)]
    pub category: Option<String>,
    /// Only tasks whose task-definition file (`yml_file` in INDEX.tsv, e.g.
    /// `loops/count_up_down-1.yml`) is one of these (comma-separated).
    #[arg(long)]
    pub tasks: Option<String>,
    /// Writes one TSV row per task and configuration.
    #[arg(long)]
    pub tsv: Option<PathBuf>,
    /// Extra arguments for `cpals check`, e.g. `--order=rpo`.
    #[arg(long, allow_hyphen_values = true)]
    pub check_args: Option<String>,
    /// Keeps every task's witness (`NAME.witness.yml`) and harness (`NAME.harness.c`) in
    /// this folder.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// The `cpals` binary that checks the tasks (default: `cpals` beside this program, e.g.
    /// `target/release/cpals`).
    #[arg(long, value_name = "PATH")]
    pub cpals: Option<PathBuf>,
}

#[derive(Clone, Debug)]
struct Task {
    category: String,
    file: PathBuf,
    expected: bool,
    data_model: String,
    /// The task's property file (from its `.yml`), passed as `--property`.
    property: Option<PathBuf>,
}

#[derive(Clone, Debug)]
struct Outcome {
    verdict: String,
    cpu: f64,
    wall: f64,
    max_rss_kb: u64,
    note: String,
    /// For a `false` verdict: what the native replay of its harness showed.
    replay: Option<Replay>,
    /// cpals's phases (`stats.phases` of its report): name, milliseconds, properties decided.
    phases: Vec<PhaseRun>,
}

/// One phase of a cpals run, as its report gives it.
#[derive(Clone, Debug, PartialEq)]
struct PhaseRun {
    name: String,
    ms: u64,
    decided: u64,
}

/// The phases of a cpals report (`stats.phases`).
fn phases_of(report: &serde_json::Value) -> Vec<PhaseRun> {
    report["stats"]["phases"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .filter_map(|p| {
                    Some(PhaseRun { name: p["phase"].as_str()?.to_string(), ms: p["time_ms"].as_u64()?, decided: p["decided"].as_u64()? })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What a task definition (`.yml`, SV-COMP's format) says about one property: its property
/// file (resolved against the `.yml`'s folder) and expected verdict, and the data model.
#[derive(Debug, PartialEq)]
struct TaskDef {
    property: Option<PathBuf>,
    expected: Option<bool>,
    data_model: String,
}

/// Reads the entry of `properties:` whose property file is named `property` (e.g.
/// `unreach-call.prp`) and `options: data_model` (ILP32 when none is named, as CPAchecker
/// assumes). A line-based reader for the flat form task definitions have.
fn task_def(yml: &str, yml_dir: &Path, property: &str) -> TaskDef {
    let mut def = TaskDef { property: None, expected: None, data_model: "ILP32".into() };
    let mut in_match = false;
    for line in yml.lines() {
        let t = line.trim();
        let t = t.split(" #").next().unwrap_or(t).trim();
        let value = |key: &str| t.strip_prefix(key).map(|v| v.trim().trim_matches(['\'', '"']).to_string());
        if let Some(v) = value("- property_file:") {
            let name = Path::new(&v).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            in_match = name == property;
            if in_match {
                def.property = Some(yml_dir.join(&v));
            }
        } else if let Some(v) = value("expected_verdict:") {
            if in_match {
                def.expected = Some(v == "true");
            }
        } else if let Some(v) = value("data_model:") {
            def.data_model = v;
        } else if !line.starts_with(char::is_whitespace) && !t.is_empty() {
            in_match = false;
        }
    }
    def
}

/// The tasks of `dir`'s INDEX.tsv, whose columns are found by their header names: `category`,
/// `c_file`, `yml_file`, `expected_verdict` and, optionally, `property` (the property file's
/// name the verdict is for; without the column, SV-COMP's `unreach-call.prp`).
fn read_tasks(dir: &Path, filter: Option<&str>, only: Option<&str>) -> Result<Vec<Task>, String> {
    let index = dir.join("INDEX.tsv");
    let text = std::fs::read_to_string(&index).map_err(|e| format!("cannot read {}: {}", index.display(), e))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split('\t').map(str::trim).collect();
    let col = |name: &str| header.iter().position(|h| *h == name);
    let need = |name: &str| col(name).ok_or_else(|| format!("{} has no column `{}` in its header", index.display(), name));
    let (c_cat, c_file, c_yml, c_exp) = (need("category")?, need("c_file")?, need("yml_file")?, need("expected_verdict")?);
    let c_prop = col("property");
    let mut tasks = Vec::new();
    for line in lines {
        let cols: Vec<&str> = line.split('\t').map(str::trim).collect();
        let get = |i: usize| cols.get(i).copied().unwrap_or("");
        if get(c_file).is_empty() {
            continue;
        }
        if let Some(f) = filter {
            if !f.split(',').any(|p| get(c_cat).starts_with(p.trim())) {
                continue;
            }
        }
        if let Some(o) = only {
            if !o.split(',').any(|p| p.trim() == get(c_yml)) {
                continue;
            }
        }
        let yml_path = dir.join(get(c_yml));
        let yml = std::fs::read_to_string(&yml_path).map_err(|e| format!("cannot read {}: {}", yml_path.display(), e))?;
        let property = c_prop.map(get).filter(|p| !p.is_empty()).unwrap_or("unreach-call.prp");
        let def = task_def(&yml, yml_path.parent().unwrap_or(dir), property);
        let expected = match (def.expected, get(c_exp)) {
            (Some(e), _) => e,
            (None, "true") => true,
            (None, "false") => false,
            (None, other) => return Err(format!("{}: no expected verdict for {} (INDEX says `{}`)", yml_path.display(), property, other)),
        };
        tasks.push(Task {
            category: get(c_cat).to_string(),
            file: dir.join(get(c_file)),
            expected,
            data_model: def.data_model,
            property: def.property,
        });
    }
    Ok(tasks)
}

/// CPU seconds a running process has used so far (from `/proc`), if readable.
fn process_cpu(pid: libc::pid_t) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid)).ok()?;
    // Fields after the command name (which may hold spaces) start at field 3 (`state`);
    // utime and stime are fields 14 and 15, in clock ticks.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    Some(ticks / if hz > 0 { hz as f64 } else { 100.0 })
}

/// Runs one child process; returns its output with CPU time and peak memory from `wait4`.
/// The child is killed once it has used `cpu_limit` seconds of CPU time, or after
/// `wall_limit` (a safety net for a child that stops making progress).
pub(crate) fn run_child(mut cmd: Command, cpu_limit: f64, wall_limit: Duration) -> (String, f64, f64, u64, bool) {
    let start = Instant::now();
    let child = match cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn() {
        Ok(c) => c,
        Err(_) => return (String::new(), 0.0, 0.0, 0, false),
    };
    let pid = child.id() as libc::pid_t;
    let done = Arc::new(AtomicBool::new(false));
    let killed = Arc::new(AtomicBool::new(false));
    {
        let (done, killed) = (done.clone(), killed.clone());
        std::thread::spawn(move || {
            let step = Duration::from_millis(50);
            let mut waited = Duration::ZERO;
            while waited < wall_limit {
                if done.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(step);
                waited += step;
                if process_cpu(pid).is_some_and(|c| c > cpu_limit) {
                    break;
                }
            }
            if !done.load(Ordering::SeqCst) {
                killed.store(true, Ordering::SeqCst);
                // SAFETY: signals the child we spawned and have not reaped yet.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        });
    }
    let mut stdout = child.stdout.expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data filled in by the kernel.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child; `status` and `usage` are valid out-pointers.
    unsafe {
        libc::wait4(pid, &mut status, 0, &mut usage);
    }
    done.store(true, Ordering::SeqCst);
    let out = reader.join().unwrap_or_default();
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let cpu = tv(usage.ru_utime) + tv(usage.ru_stime);
    (out, cpu, start.elapsed().as_secs_f64(), usage.ru_maxrss as u64, killed.load(Ordering::SeqCst))
}

/// A peer analyser run in the same benchmark: Frama-C's Eva (`frama-c-eva-N`, N the
/// `-eva-precision`, Debian package `frama-c-base`), classified as
/// `../shared/tools/peer-framac-eva` does: `true` when Eva never enters `reach_error` /
/// `__VERIFIER_error` and raises no alarm, else `unknown` (Eva cannot confirm a violation).
fn run_eva(t: &Task, precision: u32, timeout: f64) -> Outcome {
    let dir = t.file.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    let name = t.file.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    let machdep = if t.data_model == "ILP32" { "gcc_x86_32" } else { "gcc_x86_64" };
    let mut cmd = Command::new("sh");
    // `exec`: the shell becomes frama-c, so wait4 measures frama-c itself.
    cmd.arg("-c")
        .arg(format!("exec frama-c -eva -eva-precision {} -eva-show-progress -machdep {} \"$0\" 2>&1", precision, machdep))
        .arg(&name)
        .current_dir(dir);
    let (out, cpu, wall, rss, killed) = run_child(cmd, timeout, Duration::from_secs_f64(4.0 * timeout + 10.0));
    let has = |re: &dyn Fn(&str) -> bool| out.lines().any(re);
    let (verdict, note) = if killed {
        ("unknown", "killed (time limit)".to_string())
    } else if out.is_empty() {
        ("error", "frama-c did not run (is frama-c-base installed?)".to_string())
    } else if has(&|l| {
        let l = l.to_ascii_lowercase();
        l.contains("computing for function reach_error") || l.contains("computing for function __verifier_error")
    }) || out.lines().any(|l| l.split_whitespace().next().is_some_and(|w| w.ends_with("ERROR:")))
    {
        ("unknown", "the error function may be reached".to_string())
    } else if has(&|l| l.contains("aborted")) || has(&|l| l.contains("by the Eva analyzer:") && !l.contains(" 0 error")) {
        ("error", "Eva aborted".to_string())
    } else if has(&|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        w.len() >= 3 && w[0].parse::<u64>().is_ok_and(|n| n > 0) && w[1].starts_with("alarm") && w[2] == "generated"
    }) {
        ("unknown", "alarms (undefined-behaviour paths cut)".to_string())
    } else if out.contains("ANALYSIS SUMMARY") {
        ("true", String::new())
    } else {
        ("error", "no Eva summary".to_string())
    };
    Outcome { verdict: verdict.to_string(), cpu, wall, max_rss_kb: rss, note, replay: None, phases: Vec::new() }
}

/// Where a run's witness and harness go: `(witness, harness)`.
fn artifact_paths(dir: &Path, t: &Task, analysis: &str) -> (PathBuf, PathBuf) {
    let stem = format!(
        "{}__{}__{}",
        t.category.replace(['/', ' '], "_"),
        t.file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
        analysis.split_whitespace().collect::<Vec<_>>().join("_").replace(['/', '='], "-")
    );
    (dir.join(format!("{}.witness.yml", stem)), dir.join(format!("{}.harness.c", stem)))
}

/// What the native replay of a `false` verdict's counterexample showed.
#[derive(Clone, Debug)]
enum Replay {
    /// The run reached the violation.
    Reached(String),
    /// The run ended without reaching it: the verdict is counted wrong.
    Missed(String),
    /// No run was possible (no harness: the counterexample depends on something no harness
    /// supplies, such as `main`'s arguments; or gcc rejects the program): the verdict stands
    /// on cpals's own confirmation and is counted, but listed as not replayed.
    Unavailable(String),
}

impl Replay {
    fn missed(&self) -> bool {
        matches!(self, Replay::Missed(_))
    }
}

/// Replays a `false` verdict's harness against the program.
fn replay(t: &Task, harness: &Path) -> Replay {
    use analysis_engine::harness::NativeResult;
    if !harness.is_file() {
        return Replay::Unavailable("no harness was written".into());
    }
    let model = cpals::messages::parse_model(&t.data_model).unwrap_or(analysis_engine::cfa::DataModel::Lp64);
    let externals = match analysis_engine::frontend::SourceInput::read(&t.file)
        .map_err(|e| e.to_string())
        .and_then(|i| analysis_engine::load(&i, model).map_err(|e| e.to_string()))
    {
        Ok(p) => p.externals,
        Err(e) => return Replay::Unavailable(format!("cannot load the program: {}", e)),
    };
    match analysis_engine::harness::replay_files(&t.file, harness, model, Duration::from_secs(20), &externals) {
        NativeResult::Reached(at) => Replay::Reached(format!("reached {}", at)),
        NativeResult::NotReached(why) => Replay::Missed(why),
        NativeResult::Unavailable(why) => Replay::Unavailable(format!("cannot replay: {}", why)),
    }
}

/// A peer run in the same benchmark: random testing (`randtest-N`, N the budget in seconds),
/// as `../shared/tools/peer-randtest` does it: the task compiled with gcc `-O1` (LP64) and the
/// peer's `randtest/harness.c` (boundary-biased random `__VERIFIER_nondet_*` values, the
/// task's `main` run in forked children until it reaches `reach_error`); `false` when it does,
/// else `unknown`. Its CPU time includes the compilation and every child's.
fn run_randtest(t: &Task, budget: f64, harness: &Path, artifacts: &Path) -> Outcome {
    let dir = artifacts.join(format!("randtest-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    // As the peer's script: the task compiled for the machine (LP64) whatever its data model.
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!(
            "gcc -w -O1 -c -o \"$1/task.o\" \"$0\" 2>/dev/null && objcopy --redefine-sym main=task_main \"$1/task.o\" && \
             gcc -w -O1 -o \"$1/t\" \"$1/task.o\" \"$2\" 2>/dev/null || {{ echo BUILD; exit 0; }}; exec \"$1/t\" {b}",
            b = budget
        ))
        .arg(&t.file)
        .arg(&dir)
        .arg(harness);
    let (out, cpu, wall, rss, killed) = run_child(cmd, budget + 30.0, Duration::from_secs_f64(budget * 4.0 + 30.0));
    let _ = std::fs::remove_dir_all(&dir);
    let (verdict, note) = if out.starts_with("FOUND") {
        ("false", out.trim().to_string())
    } else if out.starts_with("BUILD") {
        ("error", "gcc did not build the task with the peer's harness".to_string())
    } else if killed {
        ("unknown", "killed (time limit)".to_string())
    } else {
        ("unknown", out.trim().to_string())
    };
    Outcome { verdict: verdict.to_string(), cpu, wall, max_rss_kb: rss, note, replay: None, phases: Vec::new() }
}

/// The random tester's harness: `CPALS_RANDTEST_HARNESS`, or `tools/randtest/harness.c`
/// two folders above the benchmark (`../shared/bench/sv` → `../shared/tools`).
fn randtest_harness(bench: &Path) -> PathBuf {
    std::env::var_os("CPALS_RANDTEST_HARNESS").map(PathBuf::from).unwrap_or_else(|| bench.join("../../tools/randtest/harness.c"))
}

fn run_task(exe: &Path, t: &Task, analysis: &str, timeout: f64, extra: &[String], artifacts: &Path) -> Outcome {
    if let Some(prec) = analysis.strip_prefix("frama-c-eva") {
        let precision = prec.trim_start_matches('-').parse().unwrap_or(11);
        return run_eva(t, precision, timeout);
    }
    if let Some(b) = analysis.strip_prefix("randtest") {
        let budget = b.trim_start_matches('-').parse().unwrap_or(5.0);
        let bench = t.file.ancestors().nth(2).map(Path::to_path_buf).unwrap_or_default();
        return run_randtest(t, budget, &randtest_harness(&bench), artifacts);
    }
    let (witness, harness) = artifact_paths(artifacts, t, analysis);
    let _ = std::fs::remove_file(&witness);
    let _ = std::fs::remove_file(&harness);
    // A configuration: the analysis, then options of its own.
    let mut words = analysis.split_whitespace();
    let mut cmd = Command::new(exe);
    cmd.arg("check")
        .arg("--json")
        .arg("--analysis")
        .arg(words.next().unwrap_or(analysis))
        .arg("--timeout")
        .arg(format!("{}", timeout))
        .arg("--data-model")
        .arg(&t.data_model)
        .arg("--witness")
        .arg(&witness)
        .arg("--harness")
        .arg(&harness)
        .args(t.property.iter().flat_map(|p| [std::ffi::OsStr::new("--property"), p.as_os_str()]))
        .args(extra)
        .args(words)
        .arg(&t.file);
    let (out, cpu, wall, rss, killed) = run_child(cmd, timeout + 5.0, Duration::from_secs_f64(4.0 * timeout + 10.0));
    let parsed: Option<serde_json::Value> = serde_json::from_str(&out).ok();
    let (verdict, note) = match (&parsed, killed) {
        (_, true) => ("unknown".to_string(), "killed (time limit)".to_string()),
        (Some(v), _) => {
            let verdict = v["verdict"].as_str().unwrap_or("unknown").to_string();
            let reason = v["properties"]
                .as_array()
                .and_then(|ps| ps.iter().find_map(|p| p["reason"].as_str().map(|s| s.to_string())))
                .unwrap_or_default();
            (verdict, reason)
        }
        (None, _) => ("error".to_string(), "no report (front-end error or crash)".to_string()),
    };
    // Past the limit a verdict does not count (SV-COMP's rule).
    let (verdict, note) = if cpu > timeout && verdict != "error" && verdict != "unknown" {
        ("unknown".to_string(), format!("{} after the CPU-time limit", verdict))
    } else {
        (verdict, note)
    };
    let replay = (verdict == "false").then(|| replay(t, &harness));
    let phases = parsed.as_ref().map(phases_of).unwrap_or_default();
    Outcome { verdict, cpu, wall, max_rss_kb: rss, note, replay, phases }
}

#[derive(Default, Clone)]
struct Tally {
    correct_true: u32,
    correct_false: u32,
    wrong_true: u32,
    wrong_false: u32,
    unknown: u32,
    /// Of `unknown`: runs that gave no verdict at all (front-end error or crash).
    error: u32,
    cpu: f64,
    correct_cpu: Vec<f64>,
    max_rss_kb: u64,
}

impl Tally {
    fn add(&mut self, t: &Task, o: &Outcome) {
        self.cpu += o.cpu;
        self.max_rss_kb = self.max_rss_kb.max(o.max_rss_kb);
        match (o.verdict.as_str(), t.expected) {
            ("true", true) => {
                self.correct_true += 1;
                self.correct_cpu.push(o.cpu);
            }
            // A violation whose counterexample replays natively without reaching it counts as
            // wrong.
            ("false", false) if o.replay.as_ref().is_some_and(Replay::missed) => self.wrong_false += 1,
            ("false", false) => {
                self.correct_false += 1;
                self.correct_cpu.push(o.cpu);
            }
            ("true", false) => self.wrong_true += 1,
            ("false", true) => self.wrong_false += 1,
            ("error", _) => {
                self.unknown += 1;
                self.error += 1;
            }
            _ => self.unknown += 1,
        }
    }

    fn score(&self) -> i64 {
        2 * self.correct_true as i64 + self.correct_false as i64 - 16 * self.wrong_false as i64 - 32 * self.wrong_true as i64
    }

    fn correct(&self) -> u32 {
        self.correct_true + self.correct_false
    }

    fn median_correct_cpu(&self) -> f64 {
        let mut v = self.correct_cpu.clone();
        if v.is_empty() {
            return f64::NAN;
        }
        v.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    }
}

pub fn run(args: &BenchArgs) -> i32 {
    let tasks = match read_tasks(&args.dir, args.category.as_deref(), args.tasks.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("xtask bench: {}", e);
            return EXIT_ERROR;
        }
    };
    let exe = match crate::cpals_binary(args.cpals.as_ref(), "--cpals") {
        Ok(b) => b,
        Err(e) => {
            eprintln!("xtask bench: {}", e);
            return EXIT_ERROR;
        }
    };
    let artifacts = match &args.keep {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("cpals-bench-{}", std::process::id())),
    };
    if let Err(e) = std::fs::create_dir_all(&artifacts) {
        eprintln!("xtask bench: cannot create {}: {}", artifacts.display(), e);
        return EXIT_ERROR;
    }
    let analyses: Vec<String> = args.analysis.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    let started = Instant::now();
    let results = run_all(args, &tasks, &analyses, &exe, &artifacts);
    if let Some(path) = &args.tsv {
        if let Err(e) = std::fs::write(path, tsv(args, &tasks, &analyses, &results)) {
            eprintln!("xtask bench: cannot write {}: {}", path.display(), e);
        }
    }
    print_tables(args, &tasks, &analyses, &results, started.elapsed());
    if args.keep.is_none() {
        let _ = std::fs::remove_dir_all(&artifacts);
    }
    let wrong = results.iter().any(|(&(t, _), o)| {
        (o.verdict == "true" && !tasks[t].expected)
            || (o.verdict == "false" && tasks[t].expected)
            || o.replay.as_ref().is_some_and(Replay::missed)
    });
    if wrong {
        1
    } else {
        0
    }
}

/// The outcome of every (task, analysis) pair, by their indices: `args.jobs` threads take the
/// pairs in turn (interleaved, so that configurations see the same load) and print a line per
/// finished run.
fn run_all(args: &BenchArgs, tasks: &[Task], analyses: &[String], exe: &Path, artifacts: &Path) -> BTreeMap<(usize, usize), Outcome> {
    let extra: Vec<String> = args.check_args.as_deref().map(|s| s.split_whitespace().map(String::from).collect()).unwrap_or_default();
    let jobs: Vec<(usize, usize)> = (0..tasks.len()).flat_map(|t| (0..analyses.len()).map(move |a| (t, a))).collect();
    let results: Mutex<BTreeMap<(usize, usize), Outcome>> = Mutex::default();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..args.jobs.max(1) {
            let (jobs, results, next, extra) = (&jobs, &results, &next, &extra);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(&(t, a)) = jobs.get(i) else { break };
                let o = run_task(exe, &tasks[t], &analyses[a], args.timeout, extra, artifacts);
                let replayed = match &o.replay {
                    Some(Replay::Reached(_)) => " [replayed]".to_string(),
                    Some(Replay::Missed(why)) => format!(" [REPLAY FAILED: {}]", why),
                    Some(Replay::Unavailable(why)) => format!(" [not replayed: {}]", why),
                    None => String::new(),
                };
                eprintln!(
                    "[{}/{}] {:<8} {:<60} expected {:<5} got {:<7} {:6.2}s{} {}",
                    i + 1,
                    jobs.len(),
                    analyses[a],
                    tasks[t].file.strip_prefix(&args.dir).unwrap_or(&tasks[t].file).display(),
                    tasks[t].expected,
                    o.verdict,
                    o.cpu,
                    replayed,
                    o.note.chars().take(80).collect::<String>()
                );
                results.lock().expect("results").insert((t, a), o);
            });
        }
    });
    results.into_inner().expect("results")
}

/// One TSV row per task and configuration, after a header.
fn tsv(args: &BenchArgs, tasks: &[Task], analyses: &[String], results: &BTreeMap<(usize, usize), Outcome>) -> String {
    let mut out = String::from("analysis\tcategory\tfile\texpected\tverdict\tcpu_s\twall_s\tmax_rss_kb\treplay\tphases\tnote\n");
    for (&(t, a), o) in results.iter() {
        let replay = match &o.replay {
            Some(Replay::Reached(at)) => at.replace(['\t', '\n'], " "),
            Some(Replay::Missed(why)) => format!("failed: {}", why.replace(['\t', '\n'], " ")),
            Some(Replay::Unavailable(why)) => format!("unavailable: {}", why.replace(['\t', '\n'], " ")),
            None => "-".to_string(),
        };
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{:.3}\t{:.3}\t{}\t{}\t{}\t{}\n",
            analyses[a],
            tasks[t].category,
            tasks[t].file.strip_prefix(&args.dir).unwrap_or(&tasks[t].file).display(),
            tasks[t].expected,
            o.verdict,
            o.cpu,
            o.wall,
            o.max_rss_kb,
            replay,
            if o.phases.is_empty() {
                "-".to_string()
            } else {
                o.phases.iter().map(|p| format!("{}:{}:{}", p.name, p.ms, p.decided)).collect::<Vec<_>>().join(" ")
            },
            o.note.replace(['\t', '\n'], " ")
        ));
    }
    out
}

/// The results tables on stdout: per configuration one row per category, then the
/// configurations side by side (if there are several) and how many violations replayed.
fn print_tables(args: &BenchArgs, tasks: &[Task], analyses: &[String], results: &BTreeMap<(usize, usize), Outcome>, wall: Duration) {
    let categories: Vec<String> = {
        let mut c: Vec<String> = tasks.iter().map(|t| t.category.clone()).collect();
        c.dedup();
        c
    };
    println!(
        "Benchmark: {} ({} tasks), time limit {} s per task, {} at a time, wall time {:.0} s\n",
        args.dir.display(),
        tasks.len(),
        args.timeout,
        args.jobs,
        wall.as_secs_f64()
    );
    for (a, name) in analyses.iter().enumerate() {
        println!("### {}\n", name);
        println!(
            "| category | tasks | correct true | correct false | wrong | unknown (of which error) | score | CPU s | median CPU s (correct) | peak MB |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|");
        let mut all = Tally::default();
        for c in &categories {
            let mut tally = Tally::default();
            for (t, task) in tasks.iter().enumerate() {
                if &task.category == c {
                    if let Some(o) = results.get(&(t, a)) {
                        tally.add(task, o);
                        all.add(task, o);
                    }
                }
            }
            print_row(c, &tally);
        }
        print_row("**all**", &all);
        println!(
            "\n{}: {} of {} correct ({:.1}%), {} wrong, score {}, median CPU per correct answer {:.2} s\n",
            name,
            all.correct(),
            tasks.len(),
            100.0 * all.correct() as f64 / tasks.len().max(1) as f64,
            all.wrong_true + all.wrong_false,
            all.score(),
            all.median_correct_cpu()
        );
        print_phases(tasks, results, a);
    }
    if analyses.len() > 1 {
        println!("### side by side\n");
        println!("| configuration | correct | correct true | correct false | wrong | unknown | score | median CPU s (correct) |");
        println!("|---|---|---|---|---|---|---|---|");
        for (a, name) in analyses.iter().enumerate() {
            let mut all = Tally::default();
            for (t, task) in tasks.iter().enumerate() {
                if let Some(o) = results.get(&(t, a)) {
                    all.add(task, o);
                }
            }
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {:.2} |",
                name,
                all.correct(),
                all.correct_true,
                all.correct_false,
                all.wrong_true + all.wrong_false,
                all.unknown,
                all.score(),
                all.median_correct_cpu()
            );
        }
    }
    if analyses.len() > 1 {
        print_bugs(args, tasks, analyses, results);
    }
    let replays: Vec<&Replay> = results.values().filter_map(|o| o.replay.as_ref()).collect();
    let count = |f: fn(&Replay) -> bool| replays.iter().filter(|r| f(r)).count();
    println!(
        "Replays: {} of {} false verdicts replayed natively to the violation, {} could not be replayed, {} missed it\n",
        count(|r| matches!(r, Replay::Reached(_))),
        replays.len(),
        count(|r| matches!(r, Replay::Unavailable(_))),
        count(Replay::missed)
    );
}

/// Bug finding side by side: per configuration, the bugs (expected `false`, answered `false`
/// and not refuted by the replay) it found, the median CPU time per found bug, and the bugs
/// another configuration found that it missed.
fn print_bugs(args: &BenchArgs, tasks: &[Task], analyses: &[String], results: &BTreeMap<(usize, usize), Outcome>) {
    let found = |t: usize, a: usize| {
        results.get(&(t, a)).is_some_and(|o| !tasks[t].expected && o.verdict == "false" && !o.replay.as_ref().is_some_and(Replay::missed))
    };
    println!("### bugs found\n");
    println!("| configuration | bugs found | median CPU s per found bug | missed that another found |");
    println!("|---|---|---|---|");
    for (a, name) in analyses.iter().enumerate() {
        let mut cpu: Vec<f64> = (0..tasks.len()).filter(|&t| found(t, a)).filter_map(|t| results.get(&(t, a)).map(|o| o.cpu)).collect();
        cpu.sort_by(|x, y| x.partial_cmp(y).expect("finite"));
        let median = match cpu.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => cpu[n / 2],
            n => (cpu[n / 2 - 1] + cpu[n / 2]) / 2.0,
        };
        let missed: Vec<String> = (0..tasks.len())
            .filter(|&t| !found(t, a) && (0..analyses.len()).any(|b| b != a && found(t, b)))
            .map(|t| tasks[t].file.strip_prefix(&args.dir).unwrap_or(&tasks[t].file).display().to_string())
            .collect();
        println!(
            "| {} | {} | {:.2} | {} |",
            name,
            cpu.len(),
            median,
            if missed.is_empty() { "none".to_string() } else { missed.join(", ") }
        );
    }
    println!();
}

/// What each phase of one configuration did over the bench ([`PhaseTable`]), when its
/// reports give phases: the measurements the portfolio's order and shares are chosen from.
fn print_phases(tasks: &[Task], results: &BTreeMap<(usize, usize), Outcome>, a: usize) {
    let runs: Vec<(&Task, &Outcome)> = tasks.iter().enumerate().filter_map(|(t, task)| results.get(&(t, a)).map(|o| (task, o))).collect();
    let table = PhaseTable::of(&runs);
    if table.rows.is_empty() {
        return;
    }
    println!("Phases (wall time; \"settled\": the phase that decided a correct answer's last property):\n");
    println!("| phase | tasks it ran in | tasks it decided in | settled correct | s total | s where it decided nothing | median ms |");
    println!("|---|---|---|---|---|---|---|");
    for r in &table.rows {
        println!(
            "| {} | {} | {} | {} | {:.1} | {:.1} | {} |",
            r.name,
            r.ran,
            r.decided_in,
            r.settled,
            r.ms as f64 / 1000.0,
            r.idle_ms as f64 / 1000.0,
            r.median_ms()
        );
    }
    println!();
}

/// Per phase, summed over tasks.
#[derive(Default)]
struct PhaseTable {
    /// In the order phases first appear.
    rows: Vec<PhaseRow>,
}

#[derive(Default, Debug, PartialEq)]
struct PhaseRow {
    name: String,
    ran: u32,
    decided_in: u32,
    settled: u32,
    ms: u64,
    idle_ms: u64,
    all_ms: Vec<u64>,
}

impl PhaseRow {
    fn median_ms(&self) -> u64 {
        let mut v = self.all_ms.clone();
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0)
    }
}

impl PhaseTable {
    fn of(runs: &[(&Task, &Outcome)]) -> PhaseTable {
        let mut table = PhaseTable::default();
        for (task, o) in runs {
            let correct = (o.verdict == "true" && task.expected)
                || (o.verdict == "false" && !task.expected && !o.replay.as_ref().is_some_and(Replay::missed));
            let last = o.phases.iter().rposition(|p| p.decided > 0);
            for (i, p) in o.phases.iter().enumerate() {
                let at = match table.rows.iter().position(|r| r.name == p.name) {
                    Some(at) => at,
                    None => {
                        table.rows.push(PhaseRow { name: p.name.clone(), ..PhaseRow::default() });
                        table.rows.len() - 1
                    }
                };
                let row = &mut table.rows[at];
                row.ran += 1;
                row.ms += p.ms;
                row.all_ms.push(p.ms);
                if p.decided > 0 {
                    row.decided_in += 1;
                } else {
                    row.idle_ms += p.ms;
                }
                if correct && last == Some(i) {
                    row.settled += 1;
                }
            }
        }
        table
    }
}

fn print_row(name: &str, t: &Tally) {
    println!(
        "| {} | {} | {} | {} | {} | {} ({}) | {} | {:.1} | {:.2} | {:.0} |",
        name,
        t.correct() + t.wrong_true + t.wrong_false + t.unknown,
        t.correct_true,
        t.correct_false,
        t.wrong_true + t.wrong_false,
        t.unknown,
        t.error,
        t.score(),
        t.cpu,
        t.median_correct_cpu(),
        t.max_rss_kb as f64 / 1024.0
    );
}

#[cfg(test)]
mod tests {
    use super::{phases_of, read_tasks, task_def, Outcome, PhaseTable, Task, TaskDef};
    use std::path::{Path, PathBuf};

    const YML: &str = "format_version: '2.0'\ninput_files: 'a.c'\n\nproperties:\n  - property_file: ../properties/unreach-call.prp\n    expected_verdict: true\n  - property_file: ../../properties/unreach-label.prp\n    expected_verdict: false\n  - property_file: ../properties/valid-memsafety.prp\n    expected_verdict: false\n    sub-property: valid-memtrack\n";

    #[test]
    fn task_definitions_give_the_property_file_its_verdict_and_the_data_model() {
        let dir = Path::new("/tasks/cat");
        let call = task_def(YML, dir, "unreach-call.prp");
        assert_eq!(
            call,
            TaskDef { property: Some(dir.join("../properties/unreach-call.prp")), expected: Some(true), data_model: "ILP32".into() }
        );
        let label = task_def(&format!("{YML}\noptions:\n  language: C\n  data_model: LP64\n"), dir, "unreach-label.prp");
        assert_eq!(
            label,
            TaskDef { property: Some(dir.join("../../properties/unreach-label.prp")), expected: Some(false), data_model: "LP64".into() }
        );
        assert_eq!(task_def(YML, dir, "no-overflow.prp").property, None);
    }

    #[test]
    fn index_columns_are_read_by_their_header_names() {
        let dir: PathBuf = std::env::temp_dir().join(format!("cpals-bench-index-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("cat")).unwrap();
        std::fs::write(dir.join("cat/a.yml"), YML).unwrap();
        std::fs::write(
            dir.join("INDEX.tsv"),
            "category\tc_file\tyml_file\tproperty\texpected_verdict\tsize_bytes\ncat\tcat/a.c\tcat/a.yml\tunreach-label.prp\tfalse\t10\n",
        )
        .unwrap();
        let t = read_tasks(&dir, None, None).unwrap();
        assert_eq!(t.len(), 1);
        assert!(!t[0].expected);
        assert_eq!(t[0].property, Some(dir.join("cat/../../properties/unreach-label.prp")));
        assert_eq!(t[0].data_model, "ILP32");
        // SV-COMP's layout: no property column (the reachability property), the verdict fourth.
        std::fs::write(
            dir.join("INDEX.tsv"),
            "category\tc_file\tyml_file\texpected_verdict\tsize_bytes\ncat\tcat/a.c\tcat/a.yml\ttrue\t10\n",
        )
        .unwrap();
        let t = read_tasks(&dir, None, None).unwrap();
        assert!(t[0].expected);
        assert_eq!(t[0].property, Some(dir.join("cat/../properties/unreach-call.prp")));
        std::fs::write(dir.join("INDEX.tsv"), "c_file\tyml_file\n").unwrap();
        assert!(read_tasks(&dir, None, None).unwrap_err().contains("no column `category`"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_phase_table_credits_the_phase_that_decided_last() {
        let report =
            |phases: &str| -> serde_json::Value { serde_json::from_str(&format!("{{\"stats\": {{\"phases\": {phases}}}}}")).unwrap() };
        let outcome = |verdict: &str, phases: &str| Outcome {
            verdict: verdict.to_string(),
            cpu: 1.0,
            wall: 1.0,
            max_rss_kb: 0,
            note: String::new(),
            replay: None,
            phases: phases_of(&report(phases)),
        };
        let task =
            |expected| Task { category: "c".into(), file: PathBuf::from("a.c"), expected, data_model: "ILP32".into(), property: None };
        let (t_true, t_false) = (task(true), task(false));
        // Two properties, the templates prove one, the Horn clauses the other: the Horn
        // clauses settle the task.
        let a = outcome(
            "true",
            r#"[{"phase":"value","time_ms":10,"decided":0},{"phase":"templates","time_ms":200,"decided":1},{"phase":"chc","time_ms":900,"decided":1}]"#,
        );
        // A wrong answer settles nothing; the value phase decided nothing in 30 ms.
        let b = outcome("true", r#"[{"phase":"value","time_ms":30,"decided":0},{"phase":"templates","time_ms":100,"decided":1}]"#);
        let table = PhaseTable::of(&[(&t_true, &a), (&t_false, &b)]);
        let row = |name: &str| table.rows.iter().find(|r| r.name == name).unwrap();
        assert_eq!(table.rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["value", "templates", "chc"]);
        assert_eq!((row("value").ran, row("value").decided_in, row("value").settled, row("value").idle_ms), (2, 0, 0, 40));
        assert_eq!((row("templates").decided_in, row("templates").settled, row("templates").ms), (2, 0, 300));
        assert_eq!((row("chc").settled, row("chc").median_ms()), (1, 900));
        // A report without phases (another tool's, an older cpals) gives none.
        assert!(phases_of(&serde_json::json!({"stats": {}})).is_empty());
    }
}
