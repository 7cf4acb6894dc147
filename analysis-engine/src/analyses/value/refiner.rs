//! The value analysis's refiner (seed 000 §III-D/E, Alg. 3): an error path the explicit values
//! refute is interpolated with explicit-value interpolants, whose variables join the
//! precision (everywhere with scoped precision, §III-F b, else at their locations); the ARG is
//! re-explored from the first node whose precision lacks one of them.

use std::sync::Arc;

use super::interpolation::{interpolate_path, replay};
use super::precision::ValuePrecision;
use super::state::ValueState;
use crate::cfa::{Loc, OpCtx, Program};
use crate::core::arg::ArgId;
use crate::core::{Cancel, Interrupt};
use crate::ir::VarId;

/// What explicit values say about an error path.
pub enum ValueRefinement {
    /// Infeasible: the next precision and the node to re-explore from.
    Spurious {
        precision: ValuePrecision,
        pivot: ArgId,
    },
    /// Infeasible, but its interpolants add nothing the analysis may track.
    Stuck,
    /// The values do not refute the path.
    NotRefuted,
    Interrupted(Interrupt),
}

/// A node of the error path after its root, with the precision it was explored with.
pub struct PathNode {
    pub id: ArgId,
    pub loc: Loc,
    pub precision: Arc<ValuePrecision>,
}

/// How the refiner adds what it learns.
pub struct Policy {
    /// Scoped precision (seed 000 §III-F b): a variable is tracked everywhere.
    pub scoped: bool,
    /// Predicates take over abandoned variables: an interpolant that needs one is no progress.
    pub predicates: bool,
}

/// Refines the value precision `prec` with the path `ops` through `nodes` (the nodes after
/// the root, one per operation). `abandoned` variables are tracked by predicates instead.
pub fn refine(
    p: &Program,
    ops: &[OpCtx],
    nodes: &[PathNode],
    prec: &ValuePrecision,
    abandoned: impl Fn(VarId) -> bool,
    policy: Policy,
    cancel: &Cancel,
) -> ValueRefinement {
    if replay(p, &ValueState::default(), ops).is_ok() {
        return ValueRefinement::NotRefuted;
    }
    let itps = match interpolate_path(p, ops, cancel) {
        Ok(i) => i,
        Err(i) => return ValueRefinement::Interrupted(i),
    };
    let mut next = prec.clone();
    let mut pivot = None;
    let mut needs_abandoned = false;
    for (itp, n) in itps.iter().zip(nodes) {
        for v in itp.vars() {
            if abandoned(v) {
                needs_abandoned = true;
                continue;
            }
            if pivot.is_none() && !n.precision.tracks(n.loc, v) {
                pivot = Some(n.id);
            }
            if policy.scoped {
                next.everywhere.insert(v);
            } else {
                next.at.entry(n.loc).or_default().insert(v);
            }
        }
    }
    match pivot {
        Some(pivot) if !needs_abandoned || !policy.predicates => ValueRefinement::Spurious { precision: next, pivot },
        _ => ValueRefinement::Stuck,
    }
}
