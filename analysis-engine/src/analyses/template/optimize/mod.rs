//! OPT-SMT for local policy iteration (seed 004: Alg. 2 "LPI Abstraction", Alg. 3 "Local
//! Value Determination", §4 optimisations; recipes in `seeds-000-004.md` C.2), and the
//! independent bit-precise checks of what it finds.
//!
//! Blocks of the template analysis are encoded over mathematical integers with C's semantics
//! (`Theory::Int` exact: every value in its type's range, wrap-around on overflow), so that
//! an optimum is a sound bound under C's semantics. Each edge gets a marking variable that is
//! true exactly when the edge is taken; the markers at the optimum give the policy (a path).
//! The optimum of a template is found with plain satisfiability queries (a model's value,
//! then galloping and bisection with `t >= k`; `LpiSmt::maximize`), not with Z3's `Optimize`,
//! which in Z3 4.8.12 can crash the process when a query is cancelled. Every bound is thus
//! established by an unsatisfiable query. Strict comparisons are rewritten into non-strict
//! ones (from the days of `Optimize`, which returned too small suprema for strict inequalities
//! over reals, Z3 issue #5720; harmless now). A query that times out or is interrupted yields
//! no bound: the template is dropped, which is sound.
//!
//! The same blocks encoded over bit-vectors check candidate invariants and property targets
//! (`CheckSmt`): linear forms are evaluated over bit-vectors wide enough never to overflow, so
//! the check reads them as mathematical integers while the program runs with C's semantics.
//!
//! Layout: `encoding.rs` encodes a block once (markers, SSA versions, non-strict form);
//! `lpi_smt.rs` holds the abstraction queries and the maximisation (Alg. 2, §4);
//! `value_determination.rs` the local value determination (Alg. 3); `check_smt.rs` the
//! bit-precise checks.

mod check_smt;
mod encoding;
mod lpi_smt;
mod value_determination;

use crate::ir::VarId;

pub use check_smt::{CheckSmt, Shown};
pub use lpi_smt::LpiSmt;
pub use value_determination::{VdBound, VdInstance, VdProblem};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MaxOutcome {
    /// The supremum, confirmed by a plain query, with the path taken at the optimum.
    Bound {
        value: i128,
        path: Option<Vec<u32>>,
    },
    /// Nothing above the given lower bound (the "strictly better" lemma is unsatisfiable).
    NotBetter,
    Unbounded,
    /// The formula is unsatisfiable.
    Infeasible,
    /// No usable answer (timeout, interruption, a bound that failed its confirmation).
    GaveUp(String),
}

/// The outcome of one abstraction (Alg. 2) along one exit of a block.
#[derive(Clone, Debug)]
pub enum AbsOutcome {
    /// The exit is unreachable from the start state (⊥).
    Bottom,
    /// Every successor is below the reached state at the exit (stop).
    Covered,
    /// Per objective its outcome (`None` where the caller asked to skip it), and the parity
    /// facts that hold at the exit for the asked variables.
    Abstracted { outcomes: Vec<Option<MaxOutcome>>, parity: Vec<(VarId, u8)> },
}

/// Counters of the optimisation layer.
#[derive(Clone, Debug, Default)]
pub struct OptStats {
    /// `Optimize` queries (one per maximised template, in abstraction and value determination).
    pub lp_queries: u64,
    /// Plain satisfiability queries (coverage, confirmations, input independence, parity).
    pub sat_queries: u64,
    /// Bounds that failed their confirmation (dropped).
    pub recheck_failures: u64,
    /// Queries without an answer (dropped templates).
    pub gave_up: u64,
}

#[cfg(test)]
mod tests;
