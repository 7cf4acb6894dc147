//! The predicate analysis's refiner: lazy abstraction refinement (seed 001 §6.3, Alg. 5.1).
//! Sequence interpolants of the error path's blocks, cut at its abstraction states, give
//! predicates at those states' locations; the ARG is re-explored from the first abstraction
//! state whose location gained one. When no interpolation strategy finds new predicates, the
//! path's branch conditions are used (seed 001's InferPred).

use std::cell::RefCell;

use super::precision::{PredPrecision, PredTable, MAX_PREDICATES};
use crate::cfa::block::Block;
use crate::cfa::{EdgeKind, Loc, OpKind, Program};
use crate::config::Strategy;
use crate::core::arg::ArgId;
use crate::core::{Cancel, Interrupt};
use crate::report::{Limit, UnknownReason};
use crate::smt::interpolate::sequence_interpolants;
use crate::smt::linpred::{from_condition, LinPred};

/// An abstraction state strictly inside the error path, with the precision it was explored
/// with.
pub struct Cut<'a> {
    pub id: ArgId,
    pub loc: Loc,
    pub precision: &'a PredPrecision,
}

/// What interpolation made of an infeasible error path.
pub enum PredRefinement {
    Spurious { precision: PredPrecision, pivot: ArgId },
    Failed(UnknownReason),
    Interrupted(Interrupt),
}

/// Refines `prec` with interpolants of `blocks` (one more than `cuts`), trying `strategies`
/// in order, then the path's branch conditions.
pub fn refine(
    p: &Program,
    table: &RefCell<PredTable>,
    cuts: &[Cut],
    blocks: &[Block],
    prec: &PredPrecision,
    strategies: &[Strategy],
    cancel: &Cancel,
) -> PredRefinement {
    if cuts.is_empty() {
        return PredRefinement::Failed(UnknownReason::RefinementFailed("the error path has no abstraction point to refine at".into()));
    }
    if cuts.len() + 1 != blocks.len() {
        return PredRefinement::Failed(UnknownReason::RefinementFailed(format!(
            "internal error: {} abstraction points on the error path but {} blocks",
            cuts.len(),
            blocks.len()
        )));
    }
    let mut failures = Vec::new();
    for &strategy in strategies {
        let itps = match sequence_interpolants(p, blocks, &[strategy], cancel) {
            Ok(i) => i,
            Err(e) => {
                if let Err(i) = cancel.check() {
                    return PredRefinement::Interrupted(i);
                }
                failures.push(e);
                continue;
            }
        };
        let mut next = prec.clone();
        let mut pivot = None;
        {
            let mut table = table.borrow_mut();
            for (cut, atoms) in cuts.iter().zip(&itps.cuts) {
                for atom in atoms {
                    let global_only = atom.vars().all(|v| v.func().is_none());
                    let Some(id) = table.intern(atom.clone()) else {
                        return PredRefinement::Failed(UnknownReason::Limit(Limit::Predicates(MAX_PREDICATES)));
                    };
                    next.add(cut.loc, id, global_only);
                    if pivot.is_none() && !cut.precision.tracks(cut.loc, id) {
                        pivot = Some(cut.id);
                    }
                }
            }
        }
        if let Some(pivot) = pivot {
            if tracing::enabled!(tracing::Level::DEBUG) {
                for (j, (cut, atoms)) in cuts.iter().zip(&itps.cuts).enumerate() {
                    let shown: Vec<String> = atoms.iter().map(|a| a.display(p).to_string()).collect();
                    tracing::debug!("cut {} at {:?}: {}", j, cut.loc, shown.join(", "));
                }
            }
            return PredRefinement::Spurious { precision: next, pivot };
        }
        failures.push(format!("{}: no new predicate", strategy.name()));
    }
    // Last resort, seed 001's InferPred: the branch conditions of the path as predicates at
    // its abstraction points (where their variables are in scope). They carry facts no
    // interpolation strategy derives here, such as parities from non-linear arithmetic.
    let conditions = path_conditions(p, blocks);
    let mut next = prec.clone();
    let mut pivot = None;
    {
        let mut table = table.borrow_mut();
        for cut in cuts {
            for atom in &conditions {
                if !atom.vars().all(|v| v.func().is_none() || v.func() == Some(cut.loc.func)) {
                    continue;
                }
                let global_only = atom.vars().all(|v| v.func().is_none());
                let Some(id) = table.intern(atom.clone()) else { break };
                next.add(cut.loc, id, global_only);
                if pivot.is_none() && !cut.precision.tracks(cut.loc, id) {
                    pivot = Some(cut.id);
                }
            }
        }
    }
    if let Some(pivot) = pivot {
        tracing::debug!("refinement by the path's conditions ({})", failures.join("; "));
        return PredRefinement::Spurious { precision: next, pivot };
    }
    PredRefinement::Failed(UnknownReason::RefinementFailed(format!(
        "an infeasible error path could not be refined with predicates ({})",
        failures.join("; ")
    )))
}

/// The predicates the branch conditions in `blocks` state.
fn path_conditions(p: &Program, blocks: &[Block]) -> Vec<LinPred> {
    let mut out = Vec::new();
    for b in blocks {
        for node in b.topological() {
            let Some(n) = node.node() else { continue };
            for (_, op, rec) in &n.preds {
                if let OpKind::Edge(EdgeKind::Assume { cond, .. }) = crate::cfa::op_ctx(p, *op, *rec).kind {
                    if let Some(pred) = from_condition(cond) {
                        if !out.contains(&pred) {
                            out.push(pred);
                        }
                    }
                }
            }
        }
    }
    out
}
