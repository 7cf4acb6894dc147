//! Why a property is `unknown`, as data: the server decides on the variant (for example,
//! whether a result depends on the clock and may be cached), people read its text.

use crate::cfa::SrcRange;
use crate::core::{Interrupt, Limit};

/// Why a property is neither proved nor violated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnknownReason {
    #[error("timeout")]
    Timeout,
    #[error("cancelled")]
    Cancelled,
    #[error("{0}")]
    Limit(Limit),
    /// A construct the analysis does not model, so a proof would be unsound.
    #[error("{construct} is not modelled")]
    Unsupported { construct: String, range: Option<SrcRange> },
    /// An error path depends on something over-approximated (its cause), so it is not
    /// confirmed.
    #[error("{0}")]
    Imprecision(String),
    /// An error path the analysis could neither confirm nor refine.
    #[error("{0}")]
    RefinementFailed(String),
    /// The solver gave up on a query.
    #[error("{0}")]
    Solver(String),
    /// The analysis ended without proving the property (it proves or stays silent).
    #[error("{0}")]
    NotProved(String),
    /// Left open when the analysis ran out of time or was cancelled (the detail says where).
    #[error("{detail}")]
    Interrupted { by: Interrupt, detail: String },
    /// The property holds wherever the program's behaviour is defined, but an access that
    /// may be out of bounds (undefined behaviour: it may overwrite anything) is not ruled out.
    /// `possible`: the access was shown out of bounds on some path (else: not ruled out).
    #[error("holds unless the {what} at line {} is out of bounds, which {} (undefined behaviour)", .range.line, if *.possible { "can happen" } else { "is not ruled out" })]
    UndefinedBehaviour { what: String, range: SrcRange, possible: bool },
    /// Several causes at once (each keeps the property open).
    #[error("{}", .0.iter().map(|r| r.to_string()).collect::<Vec<_>>().join("; "))]
    Several(Vec<UnknownReason>),
}

impl UnknownReason {
    /// Whether another run with more time or memory could decide the property: a result
    /// with such a reason depends on the machine and is not cached.
    pub fn depends_on_resources(&self) -> bool {
        match self {
            UnknownReason::Timeout
            | UnknownReason::Cancelled
            | UnknownReason::Interrupted { .. }
            | UnknownReason::Limit(Limit::Memory { .. }) => true,
            UnknownReason::Several(rs) => rs.iter().any(UnknownReason::depends_on_resources),
            _ => false,
        }
    }
}

impl From<Interrupt> for UnknownReason {
    fn from(i: Interrupt) -> UnknownReason {
        match i {
            Interrupt::Cancelled => UnknownReason::Cancelled,
            Interrupt::Timeout => UnknownReason::Timeout,
            Interrupt::Limit(l) => UnknownReason::Limit(l),
        }
    }
}
