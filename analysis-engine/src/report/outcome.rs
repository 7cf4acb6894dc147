//! What one analysis phase hands to the next and, at the end, to the report builder: one
//! result type for every analysis (decisions per property, why the rest is open, what it
//! proved, invariants, reached code, the precision to start from next time). Statistics
//! accumulate in one [`super::Stats`] that every phase adds to.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use super::{Confirmation, InvariantSource, PrecisionHint, TraceStep, UnknownReason};
use crate::cfa::{Loc, SrcRange};
use crate::ir::FuncId;
use crate::properties::PropertyKey;

/// What one property ended with in a phase.
#[derive(Clone, Debug)]
pub enum Decision {
    /// A confirmed violation: the trace, the full input sequence when the trace does not
    /// show it (a long concrete run confirmed natively), and what confirmed it.
    Violated(Vec<TraceStep>, Vec<(String, i128)>, Confirmation),
    /// An error path the phase could not decide; the property stays open.
    Unknown(UnknownReason),
}

impl Decision {
    pub fn is_violated(&self) -> bool {
        matches!(self, Decision::Violated(..))
    }
}

/// A loop invariant an analysis found (already checked inductive).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundInvariant {
    pub func: FuncId,
    /// The loop's head (its keyword).
    pub range: SrcRange,
    /// A C expression over the program's variables.
    pub expr: String,
    pub source: InvariantSource,
}

/// The result of one analysis phase.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub decisions: BTreeMap<PropertyKey, Decision>,
    /// Why properties without a decision are not proved (`None`: they are, unless `proved`
    /// is used instead, see [`Outcome::closed`]).
    pub open_reason: Option<UnknownReason>,
    /// Properties this or an earlier phase proved.
    pub proved: BTreeSet<PropertyKey>,
    pub invariants: Vec<FoundInvariant>,
    /// Locations the exploration reached, when it completed (for code proven unreachable).
    pub reached: Option<HashSet<Loc>>,
    pub precision: Arc<PrecisionHint>,
}

impl Outcome {
    /// Only the confirmed violations of a set of decisions (what carries over to the next
    /// phase).
    pub fn violations(decisions: &BTreeMap<PropertyKey, Decision>) -> BTreeMap<PropertyKey, Decision> {
        decisions.iter().filter(|(_, d)| d.is_violated()).map(|(k, d)| (*k, d.clone())).collect()
    }

    /// Whether every property in `keys` is violated here.
    pub fn all_violated<'k>(&self, mut keys: impl Iterator<Item = &'k PropertyKey>) -> bool {
        keys.all(|k| self.decisions.get(k).is_some_and(Decision::is_violated))
    }

    /// Whether the phase ended with nothing left open: no open reason, and no property with
    /// an error path it could not decide.
    pub fn closed(&self) -> bool {
        self.open_reason.is_none() && self.decisions.values().all(Decision::is_violated)
    }
}
