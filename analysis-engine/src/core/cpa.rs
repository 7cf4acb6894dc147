//! The configurable program analysis interface with dynamic precision adjustment,
//! `D⁺ = (D, Π, ⇝, merge, stop, prec)` (seed 001 §3.2, Def. of CPA⁺; seed 000 §II-B).
//!
//! Domains, transfer relations, merge, stop and precision adjustment are separate traits so
//! that component analyses can be composed (`cpa::composite`) without a product domain.

use std::fmt;
use std::hash::Hash;

use crate::core::arg::ArgId;
use crate::core::Op;

/// Abstract values ordered by inclusion of their concretisations.
pub trait AbstractDomain: Clone + fmt::Debug {
    /// `self ⊑ other`: every concrete state of `self` is one of `other`.
    fn leq(&self, other: &Self) -> bool;
    /// The least upper bound (`self ⊔ other`), or an upper bound where the lattice has none.
    fn join(&self, other: &Self) -> Self;
}

/// How a CPA combines a new state with a reached one at the same partition.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MergeOp {
    /// Never combine (model checking, an ARG that is a tree).
    Sep,
    /// Replace the reached state by the join (data-flow analysis).
    Join,
}

/// How a CPA decides that a new state adds nothing.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StopOp {
    /// Covered by one reached state.
    Sep,
    /// Covered by the join of the reached states.
    Join,
}

/// The result of precision adjustment (`prec`): continue with the adjusted state and
/// precision, or stop the algorithm (CPAchecker's `Action.BREAK`).
pub enum PrecisionStep<S, P> {
    Continue(S, P),
    Break(S, P, super::Limit),
    /// The adjusted state is ⊥ (e.g. its abstraction is `false`): no successor.
    Bottom,
}

/// A configurable program analysis with dynamic precision adjustment.
pub trait Cpa {
    type State: Clone + fmt::Debug;
    type Precision: Clone + fmt::Debug;
    /// The reached set is partitioned by this key (location and call stack); merge and stop
    /// only compare states of one partition.
    type Key: Clone + Eq + Hash + fmt::Debug;

    fn initial(&self) -> (Self::State, Self::Precision);

    fn partition(&self, state: &Self::State) -> Self::Key;

    /// The transfer relation: pushes every abstract successor of `state` with the operation
    /// that produced it. Pushing nothing means no successor (⊥).
    fn transfer(&self, state: &Self::State, prec: &Self::Precision, out: &mut Vec<(Self::State, Op)>);

    /// `merge(new, reached, π)`; `None` means merge-sep (keep `reached` as it is). A result
    /// must satisfy `reached ⊑ result`.
    fn merge(&self, _new: &Self::State, _reached: &Self::State, _prec: &Self::Precision) -> Option<Self::State> {
        None
    }

    /// `stop(new, R, π)`: the reached state that covers `new`, if one does.
    fn stop(&self, state: &Self::State, reached: &[(ArgId, &Self::State)], prec: &Self::Precision) -> Option<ArgId>;

    /// `prec(e, π, R)`: adjusts state and precision after each transfer.
    fn adjust_precision(&self, state: Self::State, prec: Self::Precision) -> PrecisionStep<Self::State, Self::Precision> {
        PrecisionStep::Continue(state, prec)
    }

    /// True if the state violates a property that is still open.
    fn is_target(&self, state: &Self::State) -> bool;

    /// Lower values leave the waitlist first in reverse-post-order traversal.
    fn priority(&self, _state: &Self::State) -> u64 {
        0
    }
}
