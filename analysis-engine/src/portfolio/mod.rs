//! `verify`: runs the configured analyses on a program as a list of phases and hands their
//! outcome to the report builder. A phase is data (which analysis, its share of the time
//! left, what it hands on: confirmed violations, proved properties, the value precision);
//! the default `combined` is the sequential combination of
//! [`plan`]: concrete runs, the summary analysis for programs with recursion, a first slice
//! of the explicit-value analysis, the template analysis, the rest of the value share, and
//! explicit values with predicates (seed 001's CPA⁺ with dynamic precision adjustment).

mod concrete;
mod fuzz;
mod phases;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::analyses::template::TemplateResult;
use crate::cfa::Program;
use crate::config::{Analysis, NativeExecution, Order, PrecisionHint, VerifyConfig};
use crate::core::Cancel;
use crate::invariants::Annotations;
use crate::ir::FuncId;
use crate::properties::{properties, Property, PropertyKey};
use crate::report::build::{self, Credits, TemplateCredit};
use crate::report::outcome::{Decision, Outcome};
use crate::report::{Report, Stats};

/// The first slice of the value analysis in `combined` when the template analysis runs: a
/// violation or a quick proof is reported before anything slower runs (most of its answers
/// take well under a second, docs/benchmarks.md).
const VALUE_SLICE: Duration = Duration::from_secs(1);

/// The Horn clause phase's time without a time limit (generous: a run without a limit is
/// bounded by work, and its verdict must not depend on how busy the machine is).
const CHC_TIME: Duration = Duration::from_secs(60);

/// k-induction's time without a time limit (its proofs take milliseconds where it finds one:
/// a small depth, docs/benchmarks.md; a longer try takes the later phases' time).
const KINDUCTION_TIME: Duration = Duration::from_secs(2);

/// The learning phase's time without a time limit (a dozen short runs and one round of
/// linear Houdini queries: seconds at most where it proves something, docs/benchmarks.md).
const LEARNED_TIME: Duration = Duration::from_secs(10);

/// Symbolic execution's time without a time limit.
const SYMBOLIC_TIME: Duration = Duration::from_secs(5);

/// The first fuzzing phase's time at most: most bugs random inputs find, they find in well
/// under a second (docs/benchmarks.md); the analyses come next, and the fuzzer again after
/// them with the time left.
const FUZZ_SLICE: Duration = Duration::from_millis(500);
/// The concrete runs' time at most when the fuzzer runs after them.
const CONCRETE_BEFORE_FUZZ: Duration = Duration::from_millis(500);
/// Each fuzzing phase's time without a time limit.
const FUZZ_TIME: Duration = Duration::from_secs(2);
/// The share of the time limit kept for the second fuzzing phase (when the program reads
/// inputs or its first run did not finish): the last analysis stops that much earlier.
const FUZZ_RESERVE: f64 = 0.15;
/// Time kept back from the second fuzzing phase for the report.
const FUZZ_MARGIN: Duration = Duration::from_millis(500);

/// One phase of a run.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Native fuzzing in the sandbox (`crate::fuzz`), in `combined` after the concrete runs
    /// with `Shares::fuzz` of the time (at most 0.5 s); it runs again with the time kept for
    /// it when the analyses end without deciding every property.
    Fuzz,
    /// The program run concretely with a few input choices (bug finding); its share is
    /// `Shares::concrete`.
    Concrete,
    /// The summary analysis (seed 002): alone, or first in `combined` with
    /// `Shares::summaries` of the time left.
    Summaries { alone: bool },
    /// The transition-relation-approximation analysis (seed 003), alone.
    Tra,
    /// The explicit-value analysis alone, within `Shares::value`: its first slice, or the
    /// rest of its share (only when the first slice ran out of time).
    Value(Slice),
    /// The template analysis (seed 004) in `combined`, with `Shares::templates` of the time
    /// left, on a thread of its own.
    Templates,
    /// Array invariants on the cell-morphed program (`analyses::cells`) in `combined`, after
    /// the first value slice, with `Shares::cells` of the time left: cheap, and what array
    /// loops need.
    Cells,
    /// Invariants guessed from the program's text and checked (`analyses::guesses`) in
    /// `combined`, after the first value slice, with `Shares::guesses` of the time left.
    Guesses,
    /// Linear invariants learned from concrete runs, with the program's assertions and the
    /// templates' invariants, checked (`analyses::guesses::prove_linear_program`) in
    /// `combined`, after the templates, with
    /// `Shares::learned` of the time left: for programs whose assertions are linear (the
    /// guessing phase has the others).
    Learned,
    /// The whole program's Horn clauses solved by Spacer (`analyses::chc`) in `combined`,
    /// after the templates, with `Shares::chc` of the time left.
    Chc,
    /// k-induction (`analyses::kinduction`) in `combined`, after the Horn clause phase (its
    /// step case strengthened by their invariants and the templates'), with
    /// `Shares::kinduction` of the time left.
    KInduction,
    /// Exhaustive symbolic execution (`analyses::symbolic`) in `combined`, after k-induction,
    /// with `Shares::symbolic` of the time left: proofs for programs whose every path is
    /// short (constant loop bounds, inputs checked against ranges).
    Symbolic,
    /// CEGAR with the configured analysis (`value`, `predicate`, `combined`) for the rest.
    Cegar,
}

impl Phase {
    /// The phase's name in the statistics: its name for `--without`, or `value-rest`,
    /// `cegar`.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Fuzz => "fuzz",
            Phase::Concrete => "concrete",
            Phase::Summaries { .. } => "summaries",
            Phase::Tra => "tra",
            Phase::Value(Slice::First) => "value",
            Phase::Value(Slice::Rest) => "value-rest",
            Phase::Templates => "templates",
            Phase::Cells => "cells",
            Phase::Guesses => "guesses",
            Phase::Learned => "learned",
            Phase::Chc => "chc",
            Phase::KInduction => "kinduction",
            Phase::Symbolic => "symbolic",
            Phase::Cegar => "cegar",
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Slice {
    First,
    Rest,
}

/// The phases a configuration runs, in order.
pub fn plan(cfg: &VerifyConfig, p: &Program) -> Vec<Phase> {
    let mut phases = Vec::new();
    if cfg.concrete.runs > 0 {
        phases.push(Phase::Concrete);
    }
    // After the concrete runs, which cost microseconds where they find a violation: the
    // fuzzer's compilation alone takes about 0.2 s (docs/benchmarks.md).
    if cfg.analysis == Analysis::Combined && cfg.shares.fuzz > 0.0 && cfg.concrete.native == NativeExecution::Sandboxed {
        phases.push(Phase::Fuzz);
    }
    match cfg.analysis {
        Analysis::Tra => phases.push(Phase::Tra),
        Analysis::Summaries => phases.push(Phase::Summaries { alone: true }),
        Analysis::Value | Analysis::Predicate => phases.push(Phase::Cegar),
        Analysis::Combined => {
            if cfg.shares.summaries > 0.0 && crate::analyses::summaries::has_recursion(p) {
                phases.push(Phase::Summaries { alone: false });
            }
            if cfg.shares.value > 0.0 {
                phases.push(Phase::Value(Slice::First));
            }
            if cfg.shares.guesses > 0.0 {
                phases.push(Phase::Guesses);
            }
            if cfg.shares.cells > 0.0 && crate::cfa::cells::has_candidates(p) {
                phases.push(Phase::Cells);
            }
            if cfg.shares.templates > 0.0 {
                phases.push(Phase::Templates);
            }
            if cfg.shares.learned > 0.0 {
                phases.push(Phase::Learned);
            }
            if cfg.shares.chc > 0.0 {
                phases.push(Phase::Chc);
            }
            if cfg.shares.kinduction > 0.0 {
                phases.push(Phase::KInduction);
            }
            if cfg.shares.symbolic > 0.0 {
                phases.push(Phase::Symbolic);
            }
            if cfg.shares.value > 0.0 {
                phases.push(Phase::Value(Slice::Rest));
            }
            phases.push(Phase::Cegar);
        }
        Analysis::Templates(_) => unreachable!("the template analysis alone has no phases"),
    }
    phases
}

/// Whether a phase ends the run or hands on to the next.
enum Next {
    Continue,
    Done(Outcome),
}

/// What the phases of one run share.
struct Run<'a> {
    program: &'a Program,
    config: &'a VerifyConfig,
    cancel: Cancel,
    props: Vec<Property>,
    stats: Stats,
    /// Confirmed violations so far.
    found: BTreeMap<PropertyKey, Decision>,
    /// Properties proved so far (by the summary analysis).
    proved: BTreeSet<PropertyKey>,
    /// The value precision to start from.
    reuse: Option<Arc<PrecisionHint>>,
    /// The template analysis's result, once it ran.
    templates: Option<TemplateResult>,
    /// The template analysis proved every property left: the combination ended there.
    all_by_templates: bool,
    /// The rest of the value share, when the first slice was cut from it and ran out of time.
    value_rest: Option<Duration>,
    /// Told what is decided so far after each phase that decided something and left the run
    /// open (see [`verify_progressive`]); `None` for [`verify`], which builds no such report.
    progress: Option<&'a mut dyn FnMut(&Report)>,
    /// How many properties the last progress report decided.
    reported: usize,
    started: Instant,
    /// The fuzzer, kept for the second fuzzing phase.
    fuzz: fuzz::FuzzState,
    /// The loop invariants of the Horn clause phase (checked inductive).
    chc_annotations: Annotations,
    /// The loop invariants the learning phase found inductive (with or without a proof).
    learned_annotations: Annotations,
    /// Loop invariants to show besides the templates' and the final analysis's: the learning
    /// and Horn clause phases', and those k-induction's proofs assumed (checked inductive).
    found_invariants: Vec<crate::report::outcome::FoundInvariant>,
}

/// Runs the configured analysis and reports on every property.
pub fn verify(program: &Program, config: &VerifyConfig, cancel: &Cancel) -> Report {
    run_phases(program, config, cancel, None)
}

/// [`verify`], telling `progress` what is decided so far whenever a phase that leaves the run
/// open has decided more (a violation the concrete runs confirmed, what the first value slice,
/// the summary or the template analysis proved), so that an editor shows those verdicts at
/// once instead of at the end. In the reports it is given, a property is `true` or `false`
/// exactly as the final report would have it at that point (the same builder, side conditions
/// included); every other one is `unknown` with the reason "still being verified" and is not
/// an answer. The final report is the return value, as [`verify`]'s.
pub fn verify_progressive(program: &Program, config: &VerifyConfig, cancel: &Cancel, progress: &mut dyn FnMut(&Report)) -> Report {
    run_phases(program, config, cancel, Some(progress))
}

fn run_phases(program: &Program, config: &VerifyConfig, cancel: &Cancel, progress: Option<&mut dyn FnMut(&Report)>) -> Report {
    if let Analysis::Templates(mode) = config.analysis {
        return phases::templates_alone(program, config, mode, cancel);
    }
    let started = Instant::now();
    let cancel = cancel.child(config.timeout);
    let restricted = program.for_entry(config.entry.as_deref());
    let program: &Program = &restricted;
    let mut run = Run {
        program,
        config,
        cancel: cancel.clone(),
        props: properties(program),
        stats: Stats::default(),
        found: BTreeMap::new(),
        proved: BTreeSet::new(),
        reuse: config.reuse.clone(),
        templates: None,
        all_by_templates: false,
        value_rest: None,
        // (`as`: the callback's lifetime shortened to the run's.)
        progress: match progress {
            Some(p) => Some(p as &mut dyn FnMut(&Report)),
            None => None,
        },
        reported: 0,
        started,
        fuzz: fuzz::FuzzState::default(),
        chc_annotations: Annotations::new(),
        learned_annotations: Annotations::new(),
        found_invariants: Vec::new(),
    };
    let phases = plan(config, program);
    let mut outcome = crate::smt::interruptible(&cancel, || run.execute(&phases));
    outcome.invariants.append(&mut run.found_invariants);
    run.stats.time_ms = started.elapsed().as_millis() as u64;
    let templates = template_credit(run.templates.as_ref());
    let credits = Credits { analysis: config.analysis, templates: templates.as_ref(), all_by_templates: run.all_by_templates };
    build::assemble(program, &run.props, outcome, credits, run.stats)
}

fn template_credit(t: Option<&TemplateResult>) -> Option<TemplateCredit> {
    t.map(|t| TemplateCredit {
        proved: t.proved.clone(),
        invariants: t.invariants.iter().map(|i| i.found()).collect(),
        lp_queries: t.stats.lp_queries,
        value_determinations: t.stats.value_determinations,
        smt_queries: t.stats.lp_queries + t.stats.sat_queries + t.stats.check_queries,
    })
}

/// The report of a run that was stopped from outside before it answered (the CLI's watchdog,
/// when the analysis does not stop at its time limit): every property of the configured entry
/// `unknown` for `reason`. It uses no solver, so it can be built while one hangs.
pub fn unanswered(program: &Program, config: &VerifyConfig, reason: crate::report::UnknownReason) -> Report {
    let restricted = program.for_entry(config.entry.as_deref());
    let program: &Program = &restricted;
    let props = properties(program);
    let outcome = Outcome { open_reason: Some(reason), ..Outcome::default() };
    let credits = Credits { analysis: config.analysis, templates: None, all_by_templates: false };
    build::assemble(program, &props, outcome, credits, Stats::default())
}

impl Run<'_> {
    fn execute(&mut self, phases: &[Phase]) -> Outcome {
        for &phase in phases {
            if self.all_decided() {
                // Every property is violated or proved: no later phase can change a verdict
                // (the concrete runs often confirm a program's only violation in microseconds;
                // the summary analysis would take a tenth of a second to start).
                let o = Outcome { decisions: Outcome::violations(&self.found), ..Outcome::default() };
                return self.with_proved(o);
            }
            if self.task_decided() {
                // A benchmark task's verdict is `false` once its property is violated and only
                // side conditions (bounds) are left: they are not its question.
                let why = "not checked further: a violation of the task's property decides its verdict";
                let o = Outcome {
                    decisions: Outcome::violations(&self.found),
                    open_reason: Some(crate::report::UnknownReason::NotProved(why.into())),
                    ..Outcome::default()
                };
                return self.with_proved(o);
            }
            let (before, phase_started) = (self.decided_so_far(), Instant::now());
            let next = match phase {
                Phase::Fuzz => {
                    let budget = self.budget(self.config.shares.fuzz, FUZZ_TIME).min(FUZZ_SLICE);
                    fuzz::run(
                        self.program,
                        self.config,
                        &self.cancel,
                        &self.props,
                        &mut self.found,
                        &mut self.stats,
                        &mut self.fuzz,
                        budget,
                    );
                    Next::Continue
                }
                Phase::Concrete => {
                    // Long runs are the fuzzer's when it follows.
                    let cap = phases.contains(&Phase::Fuzz).then_some(CONCRETE_BEFORE_FUZZ);
                    if !self.props.is_empty() {
                        concrete::run(
                            self.program,
                            self.config,
                            &self.cancel,
                            &self.props,
                            &mut self.found,
                            &mut self.proved,
                            &mut self.stats,
                            cap,
                        );
                    }
                    Next::Continue
                }
                Phase::Summaries { alone } => self.summaries(alone),
                Phase::Tra => {
                    Next::Done(phases::tra(self.program, self.config, &self.cancel, &self.props, &mut self.stats, self.found.clone()))
                }
                Phase::Value(slice) => self.value(slice),
                Phase::Templates => self.templates(),
                Phase::Chc => self.chc(),
                Phase::KInduction => self.kinduction(),
                Phase::Symbolic => self.symbolic(),
                Phase::Cells => self.cells(),
                Phase::Guesses => self.guesses(),
                Phase::Learned => self.learned(),
                Phase::Cegar => {
                    // Time is kept for a last fuzzing phase if it may still find something.
                    let reserve = phases.contains(&Phase::Fuzz) && self.fuzz.promising();
                    match (self.cancel.remaining_ms(), self.config.timeout) {
                        (Some(ms), Some(total)) if reserve => {
                            // The fuzzing runs' CPU time is not the process's own, which the
                            // time limit measures: it is taken off here.
                            let keep = total.mul_f64(FUZZ_RESERVE) + self.fuzz.spent;
                            let c = self.cancel.child(Some(Duration::from_millis(ms).saturating_sub(keep)));
                            Next::Done(self.cegar_within(&c))
                        }
                        _ => Next::Done(self.cegar(self.config.analysis, None)),
                    }
                }
            };
            if let Next::Done(outcome) = next {
                let decided = self.decided_in(&outcome);
                self.timed(phase.name(), phase_started, decided.saturating_sub(before));
                if !phases.contains(&Phase::Fuzz) {
                    return outcome;
                }
                let again = Instant::now();
                let outcome = self.fuzz_again(outcome);
                let after = self.decided_in(&outcome);
                self.timed("fuzz-again", again, after.saturating_sub(decided));
                return outcome;
            }
            let decided = self.decided_so_far();
            self.timed(phase.name(), phase_started, decided.saturating_sub(before));
            self.report_progress();
        }
        unreachable!("the last phase of every plan ends the run")
    }

    /// Records a phase's time and the properties it decided in the statistics.
    fn timed(&mut self, name: &'static str, started: Instant, decided: usize) {
        let ms = started.elapsed().as_millis() as u64;
        self.stats.phases.push(crate::report::PhaseTime { name, ms, decided: decided as u32 });
    }

    /// How many properties are decided (proved, by a phase or the templates, or violated).
    fn decided_so_far(&self) -> usize {
        self.props.len() - self.undecided().len()
    }

    /// How many properties a final outcome decides: proved, violated, or (without an open
    /// reason) left without a decision, which the report reads as proved.
    fn decided_in(&self, o: &Outcome) -> usize {
        self.props
            .iter()
            .filter(|p| {
                let k = &p.key;
                o.proved.contains(k)
                    || self.by_templates(k)
                    || match o.decisions.get(k) {
                        Some(d) => d.is_violated(),
                        None => o.open_reason.is_none(),
                    }
            })
            .count()
    }

    /// Tells `progress` what the phases so far decided: the confirmed violations and the
    /// proofs (of the summary analysis, of the value analysis when its exploration completed,
    /// of the template invariants), when that is more than last time.
    fn report_progress(&mut self) {
        if self.progress.is_none() {
            return;
        }
        let mut proved = self.proved.clone();
        if let Some(t) = &self.templates {
            proved.extend(t.proved.iter().copied());
        }
        let decided = self.found.values().filter(|d| d.is_violated()).count() + proved.len();
        if decided <= self.reported || self.cancel.check().is_err() {
            return;
        }
        self.reported = decided;
        let outcome = Outcome {
            decisions: Outcome::violations(&self.found),
            open_reason: Some(crate::report::UnknownReason::NotProved("still being verified".into())),
            proved,
            ..Outcome::default()
        };
        let mut stats = self.stats.clone();
        stats.time_ms = self.started.elapsed().as_millis() as u64;
        let credits = Credits { analysis: self.config.analysis, templates: None, all_by_templates: false };
        let report = build::assemble(self.program, &self.props, outcome, credits, stats);
        if let Some(progress) = self.progress.as_mut() {
            progress(&report);
        }
    }

    /// The second fuzzing phase, when the analyses ended with properties neither proved nor
    /// violated and time is left: it gets that time, less what the first phase's runs took
    /// (their CPU time is not the process's own, which the time limit measures).
    fn fuzz_again(&mut self, mut o: Outcome) -> Outcome {
        let open: Vec<Property> = self
            .props
            .iter()
            .filter(|p| {
                let open = match o.decisions.get(&p.key) {
                    Some(d) => !d.is_violated(),
                    None => o.open_reason.is_some(),
                };
                open && !self.by_templates(&p.key) && !o.proved.contains(&p.key)
            })
            .cloned()
            .collect();
        if open.is_empty() || self.cancel.check().is_err() {
            return o;
        }
        let budget = match self.cancel.remaining_ms() {
            Some(ms) => Duration::from_millis(ms).saturating_sub(self.fuzz.spent + FUZZ_MARGIN),
            None => FUZZ_TIME,
        };
        tracing::debug!("{} properties open after the analyses; fuzzing again for {:?}", open.len(), budget);
        let mut found = Outcome::violations(&o.decisions);
        let before = found.len();
        fuzz::run(self.program, self.config, &self.cancel, &open, &mut found, &mut self.stats, &mut self.fuzz, budget);
        if found.len() > before {
            for (k, d) in found {
                if open.iter().any(|p| p.key == k) && d.is_violated() {
                    o.decisions.insert(k, d);
                }
            }
        }
        o
    }

    /// The budget `share` of the time left, or `fixed` without a time limit.
    fn budget(&self, share: f64, fixed: Duration) -> Duration {
        self.cancel.remaining_ms().map_or(fixed, |ms| Duration::from_millis((ms as f64 * share) as u64))
    }

    /// Whether every property is violated (a confirmed violation) or proved so far.
    fn all_decided(&self) -> bool {
        !self.props.is_empty()
            && self.props.iter().all(|p| self.proved.contains(&p.key) || self.found.get(&p.key).is_some_and(Decision::is_violated))
    }

    /// Whether a benchmark property (`--property`, not the editor's every kind) is violated and
    /// what is left open is only side conditions (bounds checks): the file's verdict is then
    /// `false`, whatever they are.
    fn task_decided(&self) -> bool {
        let set = self.program.properties;
        let decided = |p: &Property| self.proved.contains(&p.key) || self.found.get(&p.key).is_some_and(Decision::is_violated);
        set != crate::cfa::PropertySet::ALL
            && self.props.iter().any(|p| set.decides(p.kind) && self.found.get(&p.key).is_some_and(Decision::is_violated))
            && self.props.iter().all(|p| !set.decides(p.kind) || decided(p))
    }

    /// Ends the run with what the phases so far decided.
    fn done(&self) -> Next {
        let o = Outcome {
            decisions: Outcome::violations(&self.found),
            precision: self.reuse.clone().unwrap_or_default(),
            ..Outcome::default()
        };
        Next::Done(self.with_proved(o))
    }

    /// Adds the properties proved earlier to a phase's outcome.
    fn with_proved(&self, mut o: Outcome) -> Outcome {
        o.proved.extend(self.proved.iter().copied());
        o
    }

    /// Whether an outcome ends the combination: time is up, every property is violated, or
    /// nothing is left open.
    fn settles(&self, o: &Outcome) -> bool {
        self.cancel.check().is_err() || o.all_violated(self.props.iter().map(|p| &p.key)) || o.closed()
    }

    fn summaries(&mut self, alone: bool) -> Next {
        let phase = if alone {
            self.cancel.clone()
        } else {
            self.cancel.child(Some(self.budget(self.config.shares.summaries, Duration::from_secs(20))))
        };
        let r = phases::summaries(self.program, self.config, &phase, &self.props, &mut self.stats, self.found.clone());
        if alone || self.settles(&r) {
            return Next::Done(r);
        }
        tracing::debug!("the summary analysis ends open ({:?}); the combination continues", r.open_reason);
        self.proved = r.proved.clone();
        self.found = Outcome::violations(&r.decisions);
        Next::Continue
    }

    fn value(&mut self, slice: Slice) -> Next {
        let budget = match slice {
            Slice::First => {
                let share = self.budget(self.config.shares.value, Duration::from_secs(10));
                if self.config.shares.templates > 0.0 && share > VALUE_SLICE {
                    self.value_rest = Some(share - VALUE_SLICE);
                    VALUE_SLICE
                } else {
                    share
                }
            }
            Slice::Rest => match self.value_rest.take() {
                Some(rest) => rest,
                None => return Next::Continue,
            },
        };
        let slice_cancel = self.cancel.child(Some(budget));
        let r = self.cegar(Analysis::Value, Some(&slice_cancel));
        if self.settles(&r) {
            return Next::Done(r);
        }
        tracing::debug!("the value analysis alone ends open ({:?}); the combination continues", r.open_reason);
        self.found = Outcome::violations(&r.decisions);
        // Its exploration completed: what it has no decision for is proved (as the report
        // builder reads an outcome without an open reason), whatever the later phases do with
        // the error paths it could not refute.
        if r.open_reason.is_none() {
            self.proved.extend(self.props.iter().map(|p| p.key).filter(|k| !r.decisions.contains_key(k)));
        }
        self.reuse = Some(r.precision.clone());
        // Only a slice that ran out of time gets a second one: an error path the values could
        // not refute stays so with more time.
        if slice_cancel.check().is_ok() {
            self.value_rest = None;
        }
        Next::Continue
    }

    /// CEGAR with `analysis` (the value slices: explicit values alone, depth-first).
    fn cegar(&mut self, analysis: Analysis, slice: Option<&Cancel>) -> Outcome {
        let mut cfg = self.config.clone();
        cfg.reuse = self.reuse.clone();
        if slice.is_some() {
            cfg.analysis = analysis;
            cfg.cegar.order = Order::Dfs;
            cfg.cegar.stop_when_blocked = false;
        }
        let cancel = slice.unwrap_or(&self.cancel);
        let r = crate::analyses::combined::cegar::run(self.program, &cfg, cancel, &mut self.stats, self.found.clone());
        self.with_proved(r)
    }

    /// CEGAR with the configured analysis within `cancel` (a part of the time left).
    fn cegar_within(&mut self, cancel: &Cancel) -> Outcome {
        let mut cfg = self.config.clone();
        cfg.reuse = self.reuse.clone();
        let r = crate::analyses::combined::cegar::run(self.program, &cfg, cancel, &mut self.stats, self.found.clone());
        self.with_proved(r)
    }

    /// The cell-morphing phase on the properties still open: what it proves is proved for the
    /// rest of the run; it ends the run when nothing is left open.
    fn cells(&mut self) -> Next {
        self.houdini("the cell-morphing phase", self.config.shares.cells, Duration::from_secs(10), crate::analyses::cells::prove_program)
    }

    /// The guessed invariants on the properties still open, as [`Run::cells`].
    fn guesses(&mut self) -> Next {
        self.houdini("the guessing phase", self.config.shares.guesses, Duration::from_secs(8), crate::analyses::guesses::prove_program)
    }

    /// The invariants learned from runs on the properties still open: what they prove is
    /// proved for the rest of the run (and they are shown); their inductive annotation
    /// strengthens k-induction, proof or not; the run ends when nothing is left open.
    fn learned(&mut self) -> Next {
        let open = self.undecided();
        if open.is_empty() {
            return Next::Continue;
        }
        let cancel = self.cancel.child(Some(self.budget(self.config.shares.learned, LEARNED_TIME)));
        let program = self.program;
        let known = self.template_annotations();
        let Some(r) =
            phases::on_own_thread("the learning phase", || crate::analyses::guesses::prove_linear_program(program, &open, &known, &cancel))
        else {
            return Next::Continue;
        };
        for (at, conj) in r.invariants.iter().filter(|((f, n), _)| program.cfa(*f).node(*n).loop_head) {
            self.learned_annotations.entry(*at).or_default().extend(conj.iter().cloned());
        }
        if r.proved.is_empty() {
            return Next::Continue;
        }
        self.found_invariants.extend(build::loop_invariants(program, &r.invariants, crate::report::InvariantSource::Learned));
        self.proved.extend(r.proved);
        self.done_if_all_proved()
    }

    /// A phase that proposes candidate invariants and keeps the inductive ones (`prove`), on
    /// the properties still open, on a thread of its own, with `share` of the time left (at
    /// most `cap` without a time limit): what it proves is proved for the rest of the run; it
    /// ends the run when nothing is left open.
    fn houdini(
        &mut self,
        name: &str,
        share: f64,
        cap: Duration,
        prove: fn(&Program, &[Property], &Cancel) -> BTreeSet<PropertyKey>,
    ) -> Next {
        let open = self.undecided();
        if open.is_empty() {
            return Next::Continue;
        }
        let budget = self.budget(share, cap);
        let cancel = self.cancel.child(Some(budget));
        let program = self.program;
        let proved = phases::on_own_thread(name, || prove(program, &open, &cancel)).unwrap_or_default();
        self.proved.extend(proved);
        if !self.undecided().is_empty() {
            return Next::Continue;
        }
        self.done()
    }

    /// The Horn clause phase on the properties still open: what it proves is proved for the
    /// rest of the run; it ends the run when nothing is left open.
    fn chc(&mut self) -> Next {
        let open = self.undecided();
        let decided: BTreeSet<PropertyKey> = self.props.iter().map(|p| p.key).filter(|k| !open.iter().any(|o| o.key == *k)).collect();
        // A violated property's target may be shared with open ones (an assertion helper's):
        // its clauses would be satisfiable; the phase is left out then.
        let violated: BTreeSet<(FuncId, u32)> =
            self.found.iter().filter(|(_, d)| d.is_violated()).map(|(k, _)| (k.func, k.target)).collect();
        if open.is_empty() || open.iter().any(|p| violated.contains(&(p.key.func, p.key.target))) {
            return Next::Continue;
        }
        let budget = self.budget(self.config.shares.chc, CHC_TIME);
        let cancel = self.cancel.child(Some(budget));
        let limit = (budget.as_millis() as u64 / 2).max(1);
        let program = self.program;
        let Some(r) =
            phases::on_own_thread("the Horn clause phase", || crate::analyses::chc::run(program, &open, &decided, &cancel, limit))
        else {
            return Next::Continue;
        };
        if r.proved.is_empty() {
            return Next::Continue;
        }
        self.found_invariants.extend(build::loop_invariants(self.program, &r.invariants, crate::report::InvariantSource::Chc));
        self.chc_annotations = r.invariants;
        self.proved.extend(r.proved.iter().copied());
        self.done_if_all_proved()
    }

    /// Whether the template analysis, once it ran, proved `k`.
    fn by_templates(&self, k: &PropertyKey) -> bool {
        self.templates.as_ref().is_some_and(|t| t.proved.contains(k))
    }

    /// The properties neither violated nor proved so far (by a phase or by the templates).
    fn undecided(&self) -> Vec<Property> {
        let decided =
            |k: &PropertyKey| self.proved.contains(k) || self.by_templates(k) || self.found.get(k).is_some_and(Decision::is_violated);
        self.props.iter().filter(|p| !decided(&p.key)).cloned().collect()
    }

    /// Ends the run when every property is proved (by a phase or by the templates).
    fn done_if_all_proved(&self) -> Next {
        if !self.props.iter().all(|p| self.proved.contains(&p.key) || self.by_templates(&p.key)) {
            return Next::Continue;
        }
        self.done()
    }

    /// k-induction on the properties still open, its step case strengthened by the loop
    /// invariants of the templates, the learning and the Horn clause phases: what it proves is proved for the
    /// rest of the run; it ends the run when nothing is left open.
    fn kinduction(&mut self) -> Next {
        let open = self.undecided();
        if open.is_empty() {
            return Next::Continue;
        }
        let mut candidates = self.chc_annotations.clone();
        for (at, conj) in &self.learned_annotations {
            candidates.entry(*at).or_default().extend(conj.iter().cloned());
        }
        for (at, conj) in self.template_annotations() {
            candidates.entry(at).or_default().extend(conj);
        }
        let budget = self.budget(self.config.shares.kinduction, KINDUCTION_TIME);
        let cancel = self.cancel.child(Some(budget));
        let program = self.program;
        let Some(r) =
            phases::on_own_thread("k-induction", || crate::analyses::kinduction::prove_program(program, &open, candidates, &cancel))
        else {
            return Next::Continue;
        };
        if r.proved.is_empty() {
            return Next::Continue;
        }
        self.stats.k_induction = Some(self.stats.k_induction.unwrap_or(0).max(r.k));
        let shown: BTreeSet<(u32, u32, String)> =
            self.found_invariants.iter().map(|i| (i.range.line, i.range.col, i.expr.clone())).collect();
        let used = build::loop_invariants(self.program, &r.strengthening, crate::report::InvariantSource::KInduction);
        self.found_invariants.extend(used.into_iter().filter(|i| !shown.contains(&(i.range.line, i.range.col, i.expr.clone()))));
        self.proved.extend(r.proved.iter().copied());
        self.done_if_all_proved()
    }

    /// Symbolic execution of every path for the properties still open: what it proves is
    /// proved (violations are left to the phases that confirm them); it ends the run when
    /// nothing is left open.
    fn symbolic(&mut self) -> Next {
        let open = self.undecided();
        if open.is_empty() {
            return Next::Continue;
        }
        let budget = self.budget(self.config.shares.symbolic, SYMBOLIC_TIME);
        let cancel = self.cancel.child(Some(budget));
        let program = self.program;
        let Some(r) = phases::on_own_thread("symbolic execution", || crate::analyses::symbolic::run(program, &open, &cancel)) else {
            return Next::Continue;
        };
        self.proved.extend(r.proved);
        self.done_if_all_proved()
    }

    /// The template analysis's loop invariants (over mathematical integers), once it ran.
    fn template_annotations(&self) -> Annotations {
        let mut out = Annotations::new();
        for inv in self.templates.iter().flat_map(|t| &t.invariants) {
            out.entry((inv.func, inv.node)).or_default().extend(inv.exprs.iter().cloned());
        }
        out
    }

    fn templates(&mut self) -> Next {
        let share = self.budget(self.config.shares.templates, Duration::from_secs(10));
        let Some(t) = phases::templates(self.program, &self.cancel, share) else { return Next::Continue };
        // Every property must be decided here: one without a decision would count as proved.
        let done = !self.props.is_empty()
            && self.props.iter().all(|p| t.proved.contains(&p.key) || self.found.get(&p.key).is_some_and(Decision::is_violated));
        self.templates = Some(t);
        if !done {
            return Next::Continue;
        }
        self.all_by_templates = true;
        self.done()
    }
}
