//! One verification job for one document version, run on a worker thread: load the buffer
//! (reusing the `Arc` of every function automaton that did not change), split the program
//! into verification units (its roots), take each unit from the cache when its key matches,
//! verify the others (the unit with the last-edited function first, with the precision of the
//! unit's previous run), and hand each unit's result over as soon as it is known.
//!
//! A unit's key is everything its verdicts depend on: the automata of the root and of every
//! function it reaches, the start function (global initialisers), the globals' declarations,
//! the variables whose address escapes, the data model, the configuration and the project (the
//! compilation database's path and text hash, the file's flags, the files linked in: a changed
//! database is re-read at each job's start and never serves old results). Cached results
//! are stored relative to each function's first line so that an edit elsewhere in the file
//! moves them instead of invalidating them.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use analysis_engine::cfa::{Cfa, DataModel, Program, SrcRange};
use analysis_engine::config::PrecisionHint;
use analysis_engine::frontend::SourceInput;
use analysis_engine::ir::{FuncId, VarId, VarInfo};
use analysis_engine::report::{Report, StepKind, Verdict};
use analysis_engine::{Cancel, VerifyConfig};
use serde::{Deserialize, Serialize};
use tower_lsp::lsp_types::{Range, Url};

use crate::compile_db::Project;
use crate::lsp::proto::{file_uri, LineIndex};
use crate::lsp::session::results::{FunctionInfo, InvariantView, ParseError, ProjectUse, PropertyView, StepView, UnitView};
use crate::lsp::session::settings::Settings;

/// The verification function (the engine's `verify_progressive`; tests inject others): it is
/// told where to hand the reports of what is decided so far while it runs.
pub type Verifier = Arc<dyn Fn(&Program, &VerifyConfig, &Cancel, &mut dyn FnMut(&Report)) -> Report + Send + Sync>;

pub fn engine_verifier() -> Verifier {
    Arc::new(analysis_engine::portfolio::verify_progressive)
}

/// Cached results kept per document.
const CACHE_ENTRIES: usize = 64;

/// Everything a unit's verdicts depend on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UnitKey {
    root: String,
    /// Verified as the whole program (`main`) or as one root with arbitrary arguments.
    whole: bool,
    cfas: Vec<Arc<Cfa>>,
    start: Arc<Cfa>,
    globals: Vec<VarInfo>,
    escaped: Vec<VarId>,
    externals: Vec<String>,
    model: DataModel,
    config: String,
    /// The compilation database, the file's flags and the project's other files.
    project: Option<Arc<Project>>,
}

/// A position relative to the first line of the function it is in.
#[derive(Clone, Debug)]
struct RelRange {
    func: String,
    file: Arc<str>,
    line: i64,
    col: u32,
    end_line: i64,
    end_col: u32,
}

#[derive(Clone, Debug)]
struct RelStep {
    range: RelRange,
    function: String,
    text: String,
    values: Vec<(String, String)>,
    input: Option<(String, String)>,
    branch: Option<bool>,
}

#[derive(Clone, Debug)]
struct RelProperty {
    function: String,
    range: RelRange,
    verdict: Verdict,
    message: String,
    /// The proof's message, without naming the analysis when it is the unit's.
    proved_message: String,
    reason: Option<String>,
    trace: Vec<RelStep>,
    /// When the verdict was known (ms after the unit's start).
    time_ms: u64,
}

/// A loop's invariant as shown (`invariant_text`), with its full form.
#[derive(Clone, Debug)]
struct RelInvariant {
    range: RelRange,
    text: String,
    full: String,
    source: String,
    inductive: bool,
}

/// A unit's report in function-relative positions (what the cache keeps).
#[derive(Clone, Debug)]
pub struct RelUnit {
    properties: Vec<RelProperty>,
    invariants: Vec<RelInvariant>,
    unreachable: Vec<RelRange>,
    analysis: String,
    time_ms: u64,
}

struct CacheEntry {
    hash: u64,
    key: UnitKey,
    unit: Arc<RelUnit>,
}

/// Per-document memory of earlier jobs: the last program that loaded (its automata are
/// reused), unit results by key, and each unit's last precision.
#[derive(Default)]
pub struct UnitCache {
    pub program: Option<Arc<Program>>,
    entries: Vec<CacheEntry>,
    precision: HashMap<String, Arc<PrecisionHint>>,
    pub hits: u64,
    pub misses: u64,
}

impl UnitCache {
    fn get(&mut self, hash: u64, key: &UnitKey) -> Option<Arc<RelUnit>> {
        let i = self.entries.iter().position(|e| e.hash == hash && &e.key == key)?;
        let e = self.entries.remove(i);
        let unit = e.unit.clone();
        self.entries.push(e);
        Some(unit)
    }

    fn put(&mut self, hash: u64, key: UnitKey, unit: Arc<RelUnit>) {
        self.entries.retain(|e| !(e.hash == hash && e.key == key));
        self.entries.push(CacheEntry { hash, key, unit });
        if self.entries.len() > CACHE_ENTRIES {
            self.entries.remove(0);
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Which units must be verified even when the cache has them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Force {
    Nothing,
    All,
    /// Units that reach one of these functions.
    Functions(Vec<String>),
}

pub struct JobInput {
    pub uri: Url,
    pub path: PathBuf,
    pub text: String,
    pub version: i32,
    pub settings: Settings,
    /// Verify units the cache does not have (otherwise only parse and reuse the cache).
    pub verify: bool,
    pub force: Force,
    /// 0-based line last edited.
    pub focus_line: Option<u32>,
    pub focus_function: Option<String>,
    pub cache: Arc<Mutex<UnitCache>>,
    pub cancel: Cancel,
    pub verifier: Verifier,
}

/// What the program looks like after loading.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub functions: Vec<FunctionInfo>,
    pub roots: Vec<String>,
}

pub enum JobMsg {
    /// The project the file is built in (sent before `Loaded`).
    Project(ProjectUse),
    Loaded(Result<Loaded, ParseError>),
    /// What a unit still being verified has decided so far (decided and pending properties).
    Partial(UnitView),
    Unit(UnitView),
}

/// What a job did (sent to clients that ask for `cpals/jobDone`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct JobSummary {
    pub uri: String,
    pub version: i32,
    /// Units verified by the engine, in the order they ran.
    pub verified: Vec<String>,
    /// Units taken from the cache.
    pub cached: Vec<String>,
    /// Units left as they were (not verified: the trigger did not ask for it).
    pub skipped: Vec<String>,
    pub cancelled: bool,
    /// The job did not stop in time after it was cancelled or at its limit and was given up
    /// (sent by the scheduler; the job's own summary never arrives).
    #[serde(default)]
    pub abandoned: bool,
    pub panicked: Option<String>,
    pub parse_error: Option<String>,
    /// Function automata kept from the previous program (same `Arc`) / all functions.
    pub reused_cfas: usize,
    pub total_cfas: usize,
    pub load_ms: u64,
    pub ms: u64,
}

fn lock(cache: &Mutex<UnitCache>) -> std::sync::MutexGuard<'_, UnitCache> {
    cache.lock().unwrap_or_else(|e| e.into_inner())
}

/// Loads a buffer (with its project's flags and files, [`Project::apply`]) and puts back the
/// old `Arc` of every function whose automaton is equal. Returns the program and how many
/// automata were reused (allocations never fail with `allocations_succeed`). The preprocessor
/// stops when `cancel` is cancelled or its deadline passes.
pub fn load_incremental(
    input: &SourceInput,
    model: DataModel,
    project: Option<&Project>,
    old: Option<&Program>,
    allocations_succeed: bool,
    cancel: &Cancel,
) -> Result<(Program, usize), analysis_engine::LoadError> {
    let mut opts = analysis_engine::cfa::build::BuildOptions { assume_allocations_succeed: allocations_succeed, ..Default::default() };
    if let Some(p) = project {
        p.apply(&mut opts);
    }
    let mut program = analysis_engine::load_within(input, model, &opts, cancel)?;
    let mut reused = 0;
    if let Some(old) = old {
        let start_name = program.func(program.start).name.clone();
        for f in program.functions.iter_mut() {
            if f.name == start_name {
                continue;
            }
            if let Some(&g) = old.by_name.get(&f.name) {
                let prev = &old.func(g).cfa;
                if prev == &f.cfa {
                    f.cfa = prev.clone();
                    reused += 1;
                }
            }
        }
    }
    Ok((program, reused))
}

/// A verification unit: a root and the functions it reaches.
pub struct Unit {
    pub root: String,
    pub functions: Vec<FuncId>,
    pub key: UnitKey,
    pub whole: bool,
}

/// Whether a file is a system header (`/usr/include/…`, the compiler's own headers): its
/// functions (glibc's inline `__bswap_16`, …) are not the user's code and not units.
fn system_header(file: &str) -> bool {
    file.starts_with("/usr/") || file.starts_with("<")
}

pub fn units(program: &Program, settings: &Settings, project: Option<&Arc<Project>>) -> Vec<Unit> {
    let whole = program.roots.len() <= 1;
    program
        .roots
        .iter()
        .filter(|&&(root, _)| !system_header(&program.func(root).file))
        .map(|&(root, _)| {
            let functions = program.reachable_functions(root);
            let key = UnitKey {
                root: program.func(root).name.clone(),
                whole,
                cfas: functions.iter().map(|&f| program.func(f).cfa.clone()).collect(),
                start: program.func(program.start).cfa.clone(),
                globals: program.globals.clone(),
                escaped: program.escaped.clone(),
                externals: program.externals.clone(),
                model: program.data_model,
                config: settings.fingerprint(),
                project: project.cloned(),
            };
            Unit { root: program.func(root).name.clone(), functions, key, whole }
        })
        .collect()
}

fn hash_of(key: &UnitKey) -> u64 {
    let mut h = DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

/// The function (of the buffer's file) a 1-based line is in.
fn function_at(program: &Program, file: &str, line: u32) -> Option<FuncId> {
    program
        .func_ids()
        .filter(|&f| f != program.start && &*program.func(f).file == file && program.func(f).first_line <= line)
        .max_by_key(|&f| program.func(f).first_line)
}

fn first_lines(program: &Program) -> HashMap<String, u32> {
    program.functions.iter().map(|f| (f.name.clone(), f.first_line)).collect()
}

fn rel(r: &SrcRange, func: &str, lines: &HashMap<String, u32>) -> RelRange {
    let base = lines.get(func).copied().unwrap_or(0) as i64;
    RelRange {
        func: func.to_string(),
        file: r.file.clone(),
        line: r.line as i64 - base,
        col: r.col,
        end_line: r.end_line as i64 - base,
        end_col: r.end_col,
    }
}

/// Relative form of a unit's report.
fn relativize(report: &Report, program: &Program) -> RelUnit {
    let lines = first_lines(program);
    let func_of = |r: &SrcRange| function_at(program, &r.file, r.line).map(|f| program.func(f).name.clone()).unwrap_or_default();
    // What a proof assumed (the setting `assumeAllocationsSucceed`), said where it is shown.
    let assumed = if report.notes.iter().any(|(_, m)| m == analysis_engine::cfa::build::ALLOCATIONS_SUCCEED) {
        ", assuming every allocation succeeds"
    } else {
        ""
    };
    RelUnit {
        properties: report
            .properties
            .iter()
            .map(|p| RelProperty {
                function: p.function.clone(),
                range: rel(&p.range, &p.function, &lines),
                verdict: p.verdict,
                message: crate::messages::message(p),
                proved_message: format!(
                    "{}{}",
                    if p.analysis == report.analysis { crate::messages::holds(p) } else { crate::messages::message(p) },
                    if p.verdict == Verdict::True { assumed } else { "" }
                ),
                reason: p.reason.as_ref().map(ToString::to_string),
                time_ms: report.stats.time_ms,
                trace: p
                    .trace
                    .iter()
                    .map(|s| RelStep {
                        range: rel(&s.range, &s.function, &lines),
                        function: s.function.clone(),
                        text: s.text.clone(),
                        values: s.values.iter().map(|(k, v)| (k.clone(), v.to_string())).collect(),
                        input: s.input.as_ref().map(|i| (i.source.clone(), i.value.to_string())),
                        branch: match s.kind {
                            StepKind::Assume { taken } => Some(taken),
                            _ => None,
                        },
                    })
                    .collect(),
            })
            .collect(),
        invariants: crate::invariant_text::shown(&report.invariants, Some(program))
            .into_iter()
            .map(|(i, text, full, sources)| RelInvariant {
                range: rel(&i.range, &i.function, &lines),
                text,
                full,
                source: sources,
                inductive: i.inductive,
            })
            .collect(),
        unreachable: report.unreachable.iter().map(|r| rel(r, &func_of(r), &lines)).collect(),
        analysis: report.analysis.to_string(),
        time_ms: report.stats.time_ms,
    }
}

/// The document the positions are converted against.
pub struct DocText<'a> {
    pub uri: &'a Url,
    pub path: &'a std::path::Path,
    pub text: &'a str,
    pub index: &'a LineIndex,
}

impl DocText<'_> {
    fn is_doc(&self, file: &str) -> bool {
        file == self.path.display().to_string()
    }
}

/// Absolute LSP range of a relative range in the current program (`None`: its function is gone).
fn abs(r: &RelRange, lines: &HashMap<String, u32>, doc: &DocText<'_>) -> Option<(Url, Range)> {
    let base = if r.func.is_empty() { 0 } else { *lines.get(&r.func)? as i64 };
    let line = (r.line + base).max(0) as u32;
    let end_line = (r.end_line + base).max(line as i64) as u32;
    if doc.is_doc(&r.file) {
        Some((doc.uri.clone(), doc.index.range(doc.text, line, r.col, end_line, r.end_col)))
    } else {
        // Another file (a header): byte columns are shown as they are.
        let uri = file_uri(&r.file, doc.path, doc.uri)?;
        let p = |l: u32, c: u32| tower_lsp::lsp_types::Position::new(l.saturating_sub(1), c.saturating_sub(1));
        Some((uri, Range::new(p(line, r.col), p(end_line, r.end_col))))
    }
}

fn view(unit: &RelUnit, root: &str, functions: Vec<String>, program: &Program, doc: &DocText<'_>, version: i32, cached: bool) -> UnitView {
    let lines = first_lines(program);
    let here = |r: &RelRange| abs(r, &lines, doc).filter(|(u, _)| u == doc.uri).map(|(_, r)| r);
    UnitView {
        root: root.to_string(),
        version,
        functions,
        properties: unit
            .properties
            .iter()
            .filter_map(|p| {
                Some(PropertyView {
                    function: p.function.clone(),
                    range: here(&p.range)?,
                    verdict: p.verdict,
                    message: p.message.clone(),
                    proved_message: p.proved_message.clone(),
                    reason: p.reason.clone(),
                    time_ms: p.time_ms,
                    decided_at: None,
                    pending: false,
                    trace: p
                        .trace
                        .iter()
                        .filter_map(|s| {
                            let (uri, range) = abs(&s.range, &lines, doc)?;
                            Some(StepView {
                                uri,
                                range,
                                function: s.function.clone(),
                                text: s.text.clone(),
                                values: s.values.clone(),
                                input: s.input.clone(),
                                branch: s.branch,
                            })
                        })
                        .collect(),
                })
            })
            .collect(),
        invariants: unit
            .invariants
            .iter()
            .filter_map(|i| {
                Some(InvariantView {
                    function: i.range.func.clone(),
                    range: here(&i.range)?,
                    expr: i.text.clone(),
                    full: i.full.clone(),
                    source: i.source.clone(),
                    inductive: i.inductive,
                })
            })
            .collect(),
        unreachable: unit.unreachable.iter().filter_map(|r| Some((r.func.clone(), here(r)?))).collect(),
        analysis: unit.analysis.clone(),
        time_ms: unit.time_ms,
        cached,
        partial: false,
    }
}

/// Results that depend on the clock or on memory are not reused.
fn cacheable(report: &Report) -> bool {
    !report.properties.iter().any(|p| p.verdict == Verdict::Unknown && p.reason.as_ref().is_some_and(|r| r.depends_on_resources()))
}

/// The column just past the token at 1-based line `line`, byte column `col` of `text` (a word,
/// or one character), for a syntax error's range.
fn token_end(text: &str, line: u32, col: u32) -> u32 {
    let Some(l) = text.split('\n').nth(line.saturating_sub(1) as usize) else { return col };
    let rest = l.get(col.saturating_sub(1) as usize..).unwrap_or("");
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let len = match rest.chars().next() {
        Some(c) if word(c) => rest.chars().take_while(|&c| word(c)).map(char::len_utf8).sum(),
        Some(c) => c.len_utf8(),
        None => 0,
    };
    col + len as u32
}

/// The project of the job's file, read afresh (a database changed on disk is seen whether or
/// not the client reported it), and what the user is told about it. A database that cannot be
/// used (unreadable, malformed, the named one without an entry for the file) is a problem
/// shown on the file, which is then verified without it.
fn project_of(input: &JobInput) -> (Option<Arc<Project>>, ProjectUse) {
    // Documents that are not files (`untitled:`) belong to no project.
    if input.uri.scheme() != "file" {
        return (None, ProjectUse::default());
    }
    let named = input.settings.compile_commands.as_ref().map(|p| if p.is_dir() { p.join("compile_commands.json") } else { p.clone() });
    match Project::for_file(&input.path, named.as_deref()) {
        Ok(Some(p)) => {
            tracing::info!("{}: preprocessor flags from {}: {}", input.path.display(), p.db.display(), p.flags.join(" "));
            let used = ProjectUse { db: Some(p.db.clone()), linked: p.linked.iter().map(|(f, _)| f.clone()).collect(), problem: None };
            (Some(Arc::new(p)), used)
        }
        Ok(None) => (None, ProjectUse { db: crate::compile_db::find(&input.path), ..ProjectUse::default() }),
        Err(e) => {
            tracing::warn!("{}: {e}; verified without the compilation database", input.path.display());
            let db = named.or_else(|| crate::compile_db::find(&input.path));
            (None, ProjectUse { db, linked: Vec::new(), problem: Some(e) })
        }
    }
}

/// Runs a job. `emit` receives the load result and each unit's result as soon as known.
pub fn run(input: &JobInput, emit: &mut dyn FnMut(JobMsg)) -> JobSummary {
    let started = Instant::now();
    let deadline = started + input.settings.timeout;
    let mut summary = JobSummary { uri: input.uri.to_string(), version: input.version, ..Default::default() };
    let old = lock(&input.cache).program.clone();
    let source = SourceInput { path: input.path.clone(), text: input.text.clone() };
    let index = LineIndex::new(&input.text);
    let doc = DocText { uri: &input.uri, path: &input.path, text: &input.text, index: &index };
    // The front end works under the job's token and deadline (an included FIFO, a slow
    // expansion): an edit or the time limit stops the preprocessor.
    let front = input.cancel.child(Some(input.settings.timeout));
    let (project, used) = project_of(input);
    emit(JobMsg::Project(used));
    let loaded = load_incremental(
        &source,
        input.settings.data_model,
        project.as_deref(),
        old.as_deref(),
        input.settings.allocations_succeed,
        &front,
    );
    summary.load_ms = started.elapsed().as_millis() as u64;
    let program = match loaded {
        Err(e) => {
            let (range, message) = match e.pos() {
                Some(p) if doc.is_doc(&p.file) => {
                    let end = token_end(&input.text, p.line, p.col);
                    (index.range(&input.text, p.line, p.col, p.line, end), e.message().to_string())
                }
                Some(p) => (index.range(&input.text, 1, 1, 1, 1), format!("{}:{}:{}: {}", p.file, p.line, p.col, e.message())),
                None => (index.range(&input.text, 1, 1, 1, 1), e.message().to_string()),
            };
            summary.parse_error = Some(message.clone());
            // Stopped by an edit (the preprocessor ends when the job is cancelled).
            summary.cancelled = input.cancel.is_cancelled();
            emit(JobMsg::Loaded(Err(ParseError { version: input.version, range, message })));
            summary.ms = started.elapsed().as_millis() as u64;
            return summary;
        }
        Ok((program, reused)) => {
            summary.reused_cfas = reused;
            summary.total_cfas = program.functions.len() - 1;
            let program = Arc::new(program);
            lock(&input.cache).program = Some(program.clone());
            program
        }
    };
    let units = units(&program, &input.settings, project.as_ref());
    let names = |fs: &[FuncId]| fs.iter().map(|&f| program.func(f).name.clone()).collect::<Vec<_>>();
    let functions: Vec<FunctionInfo> = program
        .func_ids()
        .filter(|&f| f != program.start && doc.is_doc(&program.func(f).file))
        .map(|f| {
            let func = program.func(f);
            let line = func.first_line;
            FunctionInfo {
                name: func.name.clone(),
                range: index.range(&input.text, line, 1, line, 0),
                units: units.iter().filter(|u| u.functions.contains(&f)).map(|u| u.root.clone()).collect(),
            }
        })
        .collect();
    emit(JobMsg::Loaded(Ok(Loaded { functions, roots: units.iter().map(|u| u.root.clone()).collect() })));

    // The unit with the function last edited (or asked for) goes first.
    let focus = input
        .focus_function
        .as_ref()
        .and_then(|n| program.by_name.get(n).copied())
        .or_else(|| input.focus_line.and_then(|l| function_at(&program, &program.file, l + 1)));
    let mut order: Vec<&Unit> = units.iter().collect();
    if let Some(f) = focus {
        order.sort_by_key(|u| !u.functions.contains(&f));
    }
    for unit in order {
        if input.cancel.is_cancelled() {
            summary.cancelled = true;
            break;
        }
        let fnames = names(&unit.functions);
        let forced = match &input.force {
            Force::Nothing => false,
            Force::All => true,
            Force::Functions(fs) => fs.iter().any(|f| fnames.contains(f)),
        };
        let hash = hash_of(&unit.key);
        let hit = if forced { None } else { lock(&input.cache).get(hash, &unit.key) };
        if let Some(rel) = hit {
            lock(&input.cache).hits += 1;
            summary.cached.push(unit.root.clone());
            emit(JobMsg::Unit(view(&rel, &unit.root, fnames, &program, &doc, input.version, true)));
            continue;
        }
        if !(input.verify || forced) {
            summary.skipped.push(unit.root.clone());
            continue;
        }
        let mut cfg = VerifyConfig::new(input.settings.analysis);
        cfg.timeout = Some(deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1)));
        cfg.entry = (!unit.whole).then(|| unit.root.clone());
        cfg.concrete.native = input.settings.native;
        cfg.reuse = lock(&input.cache).precision.get(&unit.root).cloned();
        // Verdicts decided before the end go out at once, the others as pending; each keeps
        // the time it was known at.
        let mut decided_ms: HashMap<(String, i64, u32), u64> = HashMap::new();
        let mut on_partial = |partial: &Report| {
            if input.cancel.is_cancelled() {
                return;
            }
            let mut rel = relativize(partial, &program);
            for p in &mut rel.properties {
                if p.verdict != Verdict::Unknown {
                    let key = (p.range.func.clone(), p.range.line, p.range.col);
                    p.time_ms = *decided_ms.entry(key).or_insert(p.time_ms);
                }
            }
            let mut v = view(&rel, &unit.root, fnames.clone(), &program, &doc, input.version, false);
            for p in &mut v.properties {
                if p.verdict == Verdict::Unknown {
                    p.pending = true;
                    p.message = "verifying…".into();
                    p.reason = None;
                }
            }
            v.partial = true;
            emit(JobMsg::Partial(v));
        };
        let report = (input.verifier)(&program, &cfg, &input.cancel, &mut on_partial);
        if input.cancel.is_cancelled() {
            summary.cancelled = true;
            break;
        }
        summary.verified.push(unit.root.clone());
        let mut rel = relativize(&report, &program);
        for p in &mut rel.properties {
            if let Some(&ms) = decided_ms.get(&(p.range.func.clone(), p.range.line, p.range.col)) {
                p.time_ms = ms;
            }
        }
        let rel = Arc::new(rel);
        {
            let mut cache = lock(&input.cache);
            cache.misses += 1;
            if let Some(p) = &report.precision {
                cache.precision.insert(unit.root.clone(), p.clone());
            }
            if cacheable(&report) {
                cache.put(hash, unit.key.clone(), rel.clone());
            }
        }
        emit(JobMsg::Unit(view(&rel, &unit.root, fnames, &program, &doc, input.version, false)));
    }
    summary.ms = started.elapsed().as_millis() as u64;
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(text: &str) -> SourceInput {
        SourceInput { path: "/tmp/cpals-job-test.c".into(), text: text.into() }
    }

    const TEXT: &str = "int g(int x) { return x + 1; }\nint f(int x) {\n  return g(x) * 2;\n}\nint h(void) { return 3; }\n";

    #[test]
    fn unchanged_functions_keep_their_automaton() {
        let (p1, _) = load_incremental(&input(TEXT), DataModel::Lp64, None, None, false, &Cancel::new()).unwrap();
        // Edit inside `f` (one line) and add a line above `h`: `g` and `h` keep their Arc.
        let text2 = TEXT.replace("return g(x) * 2;", "return g(x) * 3;").replace("int h", "\nint h");
        let (p2, reused) = load_incremental(&input(&text2), DataModel::Lp64, None, Some(&p1), false, &Cancel::new()).unwrap();
        let cfa = |p: &Program, n: &str| p.func(p.by_name[n]).cfa.clone();
        assert!(Arc::ptr_eq(&cfa(&p1, "g"), &cfa(&p2, "g")));
        assert!(Arc::ptr_eq(&cfa(&p1, "h"), &cfa(&p2, "h")), "a function that only moved keeps its automaton");
        assert!(!Arc::ptr_eq(&cfa(&p1, "f"), &cfa(&p2, "f")));
        assert_eq!(reused, 2);
    }

    #[test]
    fn unit_keys_cover_callees_and_configuration() {
        let s = Settings::default();
        // Entries are the uncalled functions that reach a property.
        let text = "extern void reach_error(void);\nint g(int x) { return x + 1; }\nint f(int x) {\n  if (g(x) == 0) reach_error();\n  return 1;\n}\nint h(void) { if (3 != 3) reach_error(); return 3; }\nint k(int y) { return g(y); }\n";
        let (p1, _) = load_incremental(&input(text), DataModel::Lp64, None, None, false, &Cancel::new()).unwrap();
        let (p2, _) =
            load_incremental(&input(&text.replace("x + 1", "x + 2")), DataModel::Lp64, None, Some(&p1), false, &Cancel::new()).unwrap();
        let roots: Vec<String> = units(&p1, &s, None).into_iter().map(|u| u.root).collect();
        assert_eq!(roots, ["f", "h"], "k reaches no property: nothing to verify");
        let key = |p: &Program, s: &Settings, root: &str| units(p, s, None).into_iter().find(|u| u.root == root).unwrap().key;
        // Roots: f (calls g) and h. Changing g changes f's key, not h's.
        assert_ne!(key(&p1, &s, "f"), key(&p2, &s, "f"));
        assert_eq!(key(&p1, &s, "h"), key(&p2, &s, "h"));
        let mut t = s.clone();
        t.timeout = Duration::from_secs(1);
        assert_ne!(key(&p1, &s, "h"), key(&p1, &t, "h"));
        // The compilation database (its text) and the file's flags are part of the key.
        let project = |hash: u64, flag: &str| {
            Some(Arc::new(Project { db: "/p/compile_commands.json".into(), db_hash: hash, flags: vec![flag.into()], linked: vec![] }))
        };
        let pkey = |p: Option<Arc<Project>>| units(&p1, &s, p.as_ref()).into_iter().find(|u| u.root == "h").unwrap().key;
        assert_ne!(pkey(None), pkey(project(1, "-DN=1")));
        assert_ne!(pkey(project(1, "-DN=1")), pkey(project(2, "-DN=1")), "a changed database");
        assert_ne!(pkey(project(1, "-DN=1")), pkey(project(1, "-DN=2")), "changed flags");
        assert_eq!(pkey(project(1, "-DN=1")), pkey(project(1, "-DN=1")));
    }
}
