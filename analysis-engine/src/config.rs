//! What a verification run depends on besides the program: the analysis ([`Analysis`]), its
//! options grouped by the analysis that reads them, the portfolio's budget shares and the
//! resource limits. Every option type is an enum with the names the command line uses
//! (`clap::ValueEnum` with the `clap` feature).
//!
//! Architecture invariant: this module holds data only; the analyses receive the part they
//! read, explicitly, from the portfolio (`crate::portfolio`).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

pub use crate::core::cpa::MergeOp;
pub use crate::core::waitlist::Order;
pub use crate::smt::interpolate::Strategy;

/// Which analysis `verify` runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Analysis {
    /// Explicit-value analysis with CEGAR and explicit-value interpolation (seed 000).
    Value,
    /// Predicate abstraction with lazy abstraction and interpolation (seed 001).
    Predicate,
    /// Explicit values and predicates, both refined, with dynamic precision adjustment
    /// (seed 001 §4.4.5, seed 000 §III-F d). The default; for programs with recursion it
    /// runs the summary analysis first.
    Combined,
    /// Local policy iteration over template domains alone (seed 004): invariants and proofs,
    /// never violations.
    Templates(TemplateMode),
    /// Predicate abstraction with procedure summaries over a Boolean program (seed 002):
    /// recursion without a call-depth bound.
    Summaries,
    /// Predicate abstraction with interpolant-based transition relation approximation
    /// (seed 003).
    Tra,
}

impl Analysis {
    pub fn name(self) -> &'static str {
        match self {
            Analysis::Value => "value",
            Analysis::Predicate => "predicate",
            Analysis::Combined => "combined",
            Analysis::Templates(m) => m.name(),
            Analysis::Summaries => "summaries",
            Analysis::Tra => "tra",
        }
    }

    pub fn parse(s: &str) -> Option<Analysis> {
        match s {
            "value" | "explicit" => Some(Analysis::Value),
            "predicate" | "predicates" => Some(Analysis::Predicate),
            "combined" | "default" => Some(Analysis::Combined),
            "summaries" | "summary" => Some(Analysis::Summaries),
            "tra" => Some(Analysis::Tra),
            _ => TemplateMode::parse(s).map(Analysis::Templates),
        }
    }

    /// Whether the CEGAR run of this analysis tracks explicit values.
    pub fn values(self) -> bool {
        !matches!(self, Analysis::Predicate | Analysis::Summaries | Analysis::Tra)
    }

    /// Whether the CEGAR run of this analysis tracks predicates.
    pub fn predicates(self) -> bool {
        self != Analysis::Value
    }
}

impl std::fmt::Display for Analysis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which configuration `--analysis templates…` runs (seed 004's ladder or one of its steps).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TemplateMode {
    /// The ladder: each step only while a property is unproved.
    Ladder,
    Upper,
    Intervals,
    Octagons,
    Unrolling,
    Rich,
    Congruence,
}

impl TemplateMode {
    pub const ALL: [TemplateMode; 7] = [
        TemplateMode::Ladder,
        TemplateMode::Upper,
        TemplateMode::Intervals,
        TemplateMode::Octagons,
        TemplateMode::Unrolling,
        TemplateMode::Rich,
        TemplateMode::Congruence,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TemplateMode::Ladder => "templates",
            TemplateMode::Upper => "templates-upper",
            TemplateMode::Intervals => "templates-intervals",
            TemplateMode::Octagons => "templates-octagons",
            TemplateMode::Unrolling => "templates-unrolling",
            TemplateMode::Rich => "templates-rich",
            TemplateMode::Congruence => "templates-congruence",
        }
    }

    pub fn parse(s: &str) -> Option<TemplateMode> {
        match s {
            "lpi" | "policy" => Some(TemplateMode::Ladder),
            _ => TemplateMode::ALL.into_iter().find(|m| m.name() == s),
        }
    }
}

/// Predicate abstraction: all valuations of the predicates (a BDD) or the conjunction of the
/// predicates a block implies.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Abstraction {
    Boolean,
    Cartesian,
}

/// Where the predicate analysis abstracts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum BlockEncoding {
    /// Loop heads, function entries and exits, return sites, targets (ABE-lf).
    #[cfg_attr(feature = "clap", value(name = "loops"))]
    LoopsAndFunctions,
    /// After every operation (SBE).
    #[cfg_attr(feature = "clap", value(name = "edges"))]
    SingleEdge,
}

/// Which interpolant of the range `[SI, WI]` the summary analysis refines a DAG with
/// (seed 002 §2).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Kind {
    Strongest,
    Weakest,
    /// The paper's default (§6.2: "never worse than weakest in practice").
    Conciliated,
}

impl Kind {
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "strongest" => Some(Kind::Strongest),
            "weakest" => Some(Kind::Weakest),
            "conciliated" => Some(Kind::Conciliated),
            _ => None,
        }
    }
}

/// Where the summary analysis tracks an interpolant's atoms (seed 002 A.1.8).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Scope {
    /// At every control point of the procedure they were found in.
    Function,
    /// At the control point they were found at (the paper's setting).
    Location,
}

/// What an interpolant of a DAG node adds to the summary analysis's precision (seed 002
/// A.1.6).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Form {
    /// Each atom of the interpolant, as its own predicate.
    Atoms,
    /// The interpolant itself, as one predicate (the paper's setting).
    Formulas,
}

/// The precision a run ended with, by variable names (`function::name` for locals) so that
/// it survives re-parsing: the next run of the same code starts from it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PrecisionHint {
    pub tracked: BTreeSet<String>,
}

pub use crate::cfa::PropertySet;

/// Resource limits of one run (besides its time limit).
#[derive(Clone, Debug)]
pub struct Limits {
    /// Abstract states kept at most (bounds memory).
    pub max_states: usize,
    /// Resident memory at which the exploration stops (bytes).
    pub max_memory: u64,
    /// Calls deeper than this are not explored (recursion).
    pub max_call_depth: usize,
    pub max_refinements: u64,
}

/// Options of the CEGAR run over explicit values and predicates (`value`, `predicate`,
/// `combined`).
#[derive(Clone, Debug)]
pub struct CegarOptions {
    pub order: Order,
    /// Scoped precision refinement (seed 000 §III-F b).
    pub scoped_precision: bool,
    /// Merge operator of the value analysis (merge-sep builds an ARG; merge-join is
    /// data-flow constant propagation, for comparison).
    pub value_merge: MergeOp,
    /// Distinct values at a loop head after which the combination hands a variable from the
    /// value analysis to the predicate analysis.
    pub threshold: usize,
    /// Stop at the first error path whose refinement fails instead of going on past it.
    pub stop_when_blocked: bool,
}

/// Options of the predicate analyses (`predicate`, `combined`, `summaries`, `tra`).
#[derive(Clone, Debug)]
pub struct PredicateOptions {
    pub abstraction: Abstraction,
    /// Where predicate abstraction happens.
    pub blocks: BlockEncoding,
    /// Interpolation strategies, in the order they are tried.
    pub interpolation: Vec<Strategy>,
}

/// Options of the summary analysis (seed 002).
#[derive(Clone, Debug)]
pub struct SummaryOptions {
    /// Refine all error paths of a round together, from their counterexample DAG (seed 002
    /// §4.2); `false`: one path per round.
    pub dag_refinement: bool,
    /// The interpolant family the DAG is refined with (quantifier elimination), falling back
    /// to Spacer's solution; `None`: Spacer's solution.
    pub dag_interpolants: Option<Kind>,
    pub scope: Scope,
    pub form: Form,
}

/// The concrete runs before the analyses (bug finding).
#[derive(Clone, Debug)]
pub struct ConcreteOptions {
    /// Runs with chosen inputs (0 disables).
    pub runs: u32,
    /// Time the runs may take without a time limit.
    pub time: Duration,
    /// Steps one run may take.
    pub steps: u64,
    /// Whether a long run's counterexample may be confirmed by running the program natively.
    pub native: NativeExecution,
}

/// Running the user's program natively (compiled with `cc`, in the sandbox of
/// [`crate::sandbox`]) to confirm counterexamples too long for the SMT path check.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum NativeExecution {
    /// In the sandbox.
    #[default]
    Sandboxed,
    /// Never: such counterexamples stay unconfirmed.
    Off,
}

/// Shares of the time left that the phases of `combined` get (0 disables a phase); without
/// a time limit each has a fixed budget instead (`crate::portfolio`).
#[derive(Clone, Debug)]
pub struct Shares {
    /// Native fuzzing, first in `combined` (`crate::fuzz`; only with native execution).
    pub fuzz: f64,
    /// The concrete runs.
    pub concrete: f64,
    /// The summary analysis first, for programs with recursion.
    pub summaries: f64,
    /// The explicit-value analysis alone, before the combination starts from its precision.
    pub value: f64,
    /// The template analysis (local policy iteration), after the first value slice.
    pub templates: f64,
    /// The whole program's Horn clauses solved by Spacer (`analyses::chc`), after the
    /// template analysis.
    pub chc: f64,
    /// Array invariants on the cell-morphed program (`analyses::cells`), after the first
    /// value slice.
    pub cells: f64,
    /// Invariants guessed from the program's text and checked (`analyses::guesses`), after
    /// the first value slice.
    pub guesses: f64,
    /// k-induction (`analyses::kinduction`), after the Horn clause phase.
    pub kinduction: f64,
    /// Linear invariants learned from concrete runs and checked (`analyses::guesses`, for
    /// programs whose assertions are linear), after the template analysis.
    pub learned: f64,
    /// Exhaustive symbolic execution (`analyses::symbolic`), after k-induction.
    pub symbolic: f64,
}

/// Everything a run depends on besides the program.
#[derive(Clone, Debug)]
pub struct VerifyConfig {
    pub analysis: Analysis,
    pub timeout: Option<Duration>,
    /// Verify only this root function (by name; `None`: the whole program from `main`, or
    /// every uncalled function when there is no `main`).
    pub entry: Option<String>,
    /// Variables to track from the start (precision reuse from an earlier run).
    pub reuse: Option<Arc<PrecisionHint>>,
    pub limits: Limits,
    pub cegar: CegarOptions,
    pub predicate: PredicateOptions,
    pub summaries: SummaryOptions,
    pub concrete: ConcreteOptions,
    pub shares: Shares,
}

impl VerifyConfig {
    /// The phases of `combined` that can be left out by name (`cpals check --without`).
    pub const PHASES: [&'static str; 11] =
        ["fuzz", "concrete", "summaries", "value", "guesses", "cells", "templates", "learned", "chc", "kinduction", "symbolic"];

    /// Leaves out the phase named `name`; `false` if there is no such phase.
    pub fn without(&mut self, name: &str) -> bool {
        if name == "concrete" {
            self.concrete.runs = 0;
        }
        self.set_share(name, 0.0)
    }

    /// Gives the phase named `name` the fraction `share` of the time left when it starts (0
    /// leaves it out); `false` if there is no such phase.
    pub fn set_share(&mut self, name: &str, share: f64) -> bool {
        let s = &mut self.shares;
        let slot = match name {
            "fuzz" => &mut s.fuzz,
            "concrete" => &mut s.concrete,
            "summaries" => &mut s.summaries,
            "value" => &mut s.value,
            "templates" => &mut s.templates,
            "chc" => &mut s.chc,
            "cells" => &mut s.cells,
            "guesses" => &mut s.guesses,
            "kinduction" => &mut s.kinduction,
            "learned" => &mut s.learned,
            "symbolic" => &mut s.symbolic,
            _ => return false,
        };
        *slot = share;
        true
    }

    pub fn new(analysis: Analysis) -> VerifyConfig {
        VerifyConfig {
            analysis,
            timeout: None,
            entry: None,
            reuse: None,
            limits: Limits { max_states: 2_000_000, max_memory: 3 << 30, max_call_depth: 256, max_refinements: 20_000 },
            cegar: CegarOptions {
                // Predicate blocks merge at joins, so their states are best expanded in the
                // CFA's topological order (all paths into a join before it).
                order: if analysis == Analysis::Value { Order::Dfs } else { Order::ReversePostorder },
                scoped_precision: true,
                value_merge: MergeOp::Sep,
                threshold: 12,
                stop_when_blocked: false,
            },
            predicate: PredicateOptions {
                abstraction: Abstraction::Boolean,
                blocks: BlockEncoding::LoopsAndFunctions,
                interpolation: Strategy::ALL.to_vec(),
            },
            summaries: SummaryOptions { dag_refinement: true, dag_interpolants: None, scope: Scope::Function, form: Form::Atoms },
            concrete: ConcreteOptions { runs: 12, time: Duration::from_secs(3), steps: 2_000_000_000, native: NativeExecution::Sandboxed },
            shares: Shares {
                fuzz: 0.1,
                concrete: 0.3,
                summaries: 0.4,
                value: 0.35,
                templates: 0.25,
                chc: 0.3,
                cells: 0.2,
                guesses: 0.3,
                kinduction: 0.05,
                learned: 0.2,
                symbolic: 0.25,
            },
        }
    }
}
