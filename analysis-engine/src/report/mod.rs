//! The result of a verification run as plain data: a verdict per property with its reason,
//! counterexample traces with values, loop invariants, code proven unreachable, statistics.
//! No LSP or JSON types here: the server and the CLI convert. Everything the server decides
//! on is typed (verdicts, [`UnknownReason`], [`Analysis`], [`TraceValue`], omitted steps);
//! text is only for people. `build` turns the analyses' outcomes into a [`Report`].

pub mod build;
pub mod outcome;
mod reason;

pub use crate::core::Limit;
pub use reason::UnknownReason;

use crate::cfa::{PropertySet, SrcRange, TargetKind};
pub use crate::config::{Analysis, PrecisionHint};

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verdict {
    /// Proved: the property holds on every execution.
    True,
    /// Violated: a confirmed counterexample exists.
    False,
    Unknown,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::True => "true",
            Verdict::False => "false",
            Verdict::Unknown => "unknown",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepKind {
    Assume {
        taken: bool,
    },
    Assign,
    Input,
    Declaration,
    Call,
    Return,
    /// A loop a concrete run accelerated: it ran this many more iterations at once.
    Accelerated {
        iterations: u64,
    },
    /// Steps of a long run left out of the trace (its confirmation did not need them).
    Omitted {
        steps: u64,
    },
    Other,
}

/// A value shown in a counterexample, as data: the server formats it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceValue {
    Int(i128),
    /// An address (a pointer's value), shown in hexadecimal.
    Address(i128),
    /// A pointer of the memory model: its value and how it reads (`&x + 4`, `NULL`).
    Pointer(i128, std::sync::Arc<str>),
}

impl TraceValue {
    /// The number, whatever its kind.
    pub fn as_i128(&self) -> i128 {
        match self {
            TraceValue::Int(v) | TraceValue::Address(v) | TraceValue::Pointer(v, _) => *v,
        }
    }
}

impl std::fmt::Display for TraceValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TraceValue::Int(v) => write!(f, "{v}"),
            TraceValue::Address(v) => write!(f, "{v:#x}"),
            TraceValue::Pointer(_, text) => write!(f, "{text}"),
        }
    }
}

/// Where an input of a counterexample comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceInput {
    /// As shown: the function called (e.g. `__VERIFIER_nondet_int`), `uninitialised`, or
    /// `extern NAME`.
    pub source: String,
    pub origin: InputOrigin,
    pub value: i128,
}

/// The kind of an input: only calls can be supplied by a harness.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum InputOrigin {
    /// The result of a call to a function the program does not define.
    Call,
    /// A variable read before it was written.
    Uninitialised,
    /// An `extern` object the program does not define.
    External,
    /// The result of an external function cpals does not model. A confirmed counterexample
    /// never depends on it, so a harness leaves it to the real function.
    Unmodelled,
}

/// One step of a counterexample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceStep {
    pub range: SrcRange,
    pub function: String,
    /// The source text of the step (or the operation, for code without text).
    pub text: String,
    pub kind: StepKind,
    /// Variables written (or, for branches, read) at this step, with their values, in order.
    pub values: Vec<(String, TraceValue)>,
    /// For input steps: where the value comes from and the value.
    pub input: Option<TraceInput>,
    pub depth: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PropertyReport {
    pub kind: TargetKind,
    /// The function the check is written in.
    pub function: String,
    pub range: SrcRange,
    /// The checked condition as written, when known.
    pub condition: Option<String>,
    pub verdict: Verdict,
    /// Why the verdict is `unknown`.
    pub reason: Option<UnknownReason>,
    /// The analysis that decided the property.
    pub analysis: Analysis,
    /// For violations: the confirmed counterexample, from the entry to the violation.
    pub trace: Vec<TraceStep>,
    /// For violations found by a long concrete run (confirmed natively, trace abridged):
    /// every value the run's input functions returned, in order, as `(function, value)`.
    /// Empty otherwise: the trace's steps carry the inputs.
    pub inputs: Vec<(String, i128)>,
    /// For violations: what confirmed the counterexample.
    pub confirmed_by: Option<Confirmation>,
}

impl PropertyReport {
    /// What a violated property's counterexample reads from standard input, as the text a
    /// user types ([`crate::harness::stdin_text`]), or `None` when it reads none.
    pub fn stdin(&self) -> Option<Vec<u8>> {
        if self.verdict != Verdict::False {
            return None;
        }
        crate::harness::stdin_text(&self.input_sequence())
    }

    /// The command line a violated property's counterexample gives `main` (argv's strings,
    /// argv[0] first: [`crate::harness::args_of`]), or `None` when `main` takes none.
    pub fn args(&self) -> Option<Vec<Vec<u8>>> {
        if self.verdict != Verdict::False {
            return None;
        }
        crate::harness::args_of(&self.input_sequence())
    }

    /// The values the counterexample's input functions return, in order.
    fn input_sequence(&self) -> Vec<(&str, i128)> {
        if self.inputs.is_empty() {
            self.trace
                .iter()
                .filter_map(|s| s.input.as_ref())
                .filter(|i| i.origin == InputOrigin::Call)
                .map(|i| (i.source.as_str(), i.value))
                .collect()
        } else {
            self.inputs.iter().map(|(f, v)| (f.as_str(), *v)).collect()
        }
    }
}

/// What confirmed a counterexample.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Confirmation {
    /// The bit-precise SMT check of its path.
    PathCheck,
    /// A run of the program compiled with `cc`, in the sandbox ([`crate::sandbox`]), that
    /// reached the violation with the counterexample's inputs.
    NativeRun,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvariantReport {
    pub function: String,
    /// The loop's head (its keyword).
    pub range: SrcRange,
    /// A C expression over the program's variables.
    pub expr: String,
    /// The analysis that found it.
    pub source: InvariantSource,
    /// Checked inductive by an independent SMT query (invariants that fail are not reported).
    pub inductive: bool,
}

/// The analysis an invariant comes from.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum InvariantSource {
    /// The values every reached state agrees on (the CEGAR analyses).
    Analysis(Analysis),
    /// Local policy iteration (the template analysis, seed 004).
    Lpi,
    /// The solution of the whole program's Horn clauses (Spacer, `analyses::chc`).
    Chc,
    /// Invariants k-induction's step case assumed (`analyses::kinduction`).
    KInduction,
    /// Invariants learned from concrete runs and checked (`analyses::guesses`).
    Learned,
}

impl std::fmt::Display for InvariantSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InvariantSource::Analysis(a) => f.write_str(a.name()),
            InvariantSource::Lpi => f.write_str("lpi"),
            InvariantSource::Chc => f.write_str("chc"),
            InvariantSource::KInduction => f.write_str("k-induction"),
            InvariantSource::Learned => f.write_str("learned"),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub time_ms: u64,
    pub refinements: u64,
    /// Abstract states created (the ARG's nodes, including removed ones).
    pub states: u64,
    pub expanded: u64,
    pub covered: u64,
    pub smt_queries: u64,
    /// Tracked (location, variable) pairs at the end.
    pub precision: u64,
    pub tracked_variables: Vec<String>,
    /// Predicates of the predicate analysis, as C conditions over mathematical integers.
    pub predicates: Vec<String>,
    /// Learned transition approximations of the `tra` analysis (seed 003), one line per
    /// operation: `line L: clause && clause`, primes marking the next state.
    pub transition_interpolants: Vec<String>,
    pub abstractions: u64,
    /// Optimisation (LP/OPT-SMT) queries of the template analysis.
    pub lp_queries: u64,
    /// Local value determinations of the template analysis.
    pub value_determinations: u64,
    /// Native runs of the program (in the sandbox) that confirmed or refuted a counterexample.
    pub native_runs: u64,
    /// The program reads no input and its one execution was run to its end: what it did not
    /// reach is proved (see `portfolio::concrete`).
    pub proved_by_execution: bool,
    /// The largest depth k-induction needed, when it proved something.
    pub k_induction: Option<u32>,
    /// The phases of `combined` that ran, in order, with their time and what each decided:
    /// what `xtask bench` sums into the per-phase table the portfolio's order and shares are
    /// chosen from.
    pub phases: Vec<PhaseTime>,
}

/// One phase of a run: its name (`VerifyConfig::PHASES`, or `cegar`, `value-rest`,
/// `fuzz-again`), its wall-clock time, and how many properties it decided (proved or
/// violated) that no earlier phase had.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhaseTime {
    pub name: &'static str,
    pub ms: u64,
    pub decided: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub file: String,
    pub verdict: Verdict,
    pub properties: Vec<PropertyReport>,
    pub invariants: Vec<InvariantReport>,
    /// Code no execution reaches (only when the analysis completed).
    pub unreachable: Vec<SrcRange>,
    pub analysis: Analysis,
    /// How C was modelled (data model, overflow, encodings).
    pub semantics: Vec<String>,
    /// Constructs the front end over-approximated.
    pub notes: Vec<(SrcRange, String)>,
    pub stats: Stats,
    /// The precision the analysis ended with, to start the next run of the same code from.
    pub precision: Option<std::sync::Arc<PrecisionHint>>,
}

impl Report {
    /// A file's verdict: false if any property the run was asked about is violated (an
    /// out-of-bounds access only where `set` makes it one, see [`PropertySet::memory`]), true
    /// if all properties, side conditions included, are proved.
    pub fn file_verdict(props: &[PropertyReport], set: PropertySet) -> Verdict {
        if props.iter().any(|p| p.verdict == Verdict::False && set.decides(p.kind)) {
            Verdict::False
        } else if props.iter().all(|p| p.verdict == Verdict::True) {
            Verdict::True
        } else {
            Verdict::Unknown
        }
    }
}
