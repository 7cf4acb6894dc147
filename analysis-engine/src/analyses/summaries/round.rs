//! One refinement round of the summary analysis (seed 002 §4): the witness of an error fact
//! is checked as an interprocedural path; a spurious one refines the predicates, by the
//! counterexample DAG of the round as a whole (§4.2–§4.3) if that adds predicates, else by
//! the sequence interpolants of the path, else by its branch conditions.

use super::horn::DagFailure;
use super::rules::path_predicates;
use super::{
    add_predicate, counterexample_dag, path_conditions, precision, program, refine_dag, with_context, witness_path, Analysis, Fact,
    SummaryConfig, SummaryResult, Tabulation, MAX_PATH,
};
use crate::cfa::{OpCtx, Program};
use crate::core::{Cancel, Limit};
use crate::ir::{FuncId, VarId};
use crate::properties::PropertyKey;
use crate::report::UnknownReason;
use crate::smt::path::{check_path, PathResult, Violation};

/// Whether the analysis goes on with another round.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Flow {
    Next,
    Stop,
}

/// An infeasible witness path at the target of `key`, to refine.
pub(super) struct Spurious<'p> {
    key: PropertyKey,
    /// The operations with the call depth before each.
    steps: Vec<(OpCtx<'p>, usize)>,
    ctxs: Vec<OpCtx<'p>>,
}

/// The outcome of checking a round's witness path.
pub(super) enum Witness<'p> {
    Spurious(Spurious<'p>),
    /// The property was decided (violated, or unknown) or the run was interrupted.
    Done(Flow),
}

/// Checks the witness path of `fact`, at the target of `key`, by the bit-precise path check
/// (soundness rule 1): a feasible path is a violation, an undecided one makes the property
/// unknown.
pub(super) fn check_witness<'p>(
    p: &'p Program,
    tab: &Tabulation,
    fact: Fact,
    key: PropertyKey,
    result: &mut SummaryResult<'p>,
    cancel: &Cancel,
) -> Witness<'p> {
    let Some(ops) = witness_path(tab, fact) else {
        result
            .unknown
            .insert(key, UnknownReason::Limit(Limit::Bound(format!("the abstract counterexample has more than {} operations", MAX_PATH))));
        return Witness::Done(Flow::Next);
    };
    let steps = with_context(p, &ops);
    tracing::debug!(
        "summaries: round {} reaches {:?} after {} facts; counterexample of {} operations",
        result.refinements,
        key,
        tab.why.len(),
        steps.len()
    );
    let ctxs: Vec<OpCtx> = steps.iter().map(|(o, _)| *o).collect();
    result.smt_queries += 1;
    match check_path(p, &ctxs, cancel) {
        PathResult::Feasible(values) => {
            result.violated.insert(key, Violation { steps, values });
            Witness::Done(Flow::Next)
        }
        PathResult::Infeasible => Witness::Spurious(Spurious { key, steps, ctxs }),
        PathResult::Imprecise(why) | PathResult::Unknown(why) => {
            if let Err(i) = cancel.check() {
                result.open_reason = Some(UnknownReason::from(i));
                return Witness::Done(Flow::Stop);
            }
            result.unknown.insert(key, UnknownReason::Imprecision(why));
            Witness::Done(Flow::Next)
        }
    }
}

/// Refines the predicates after the spurious path of a round (`tab`): by the round's
/// counterexample DAG (if `cfg.dag`), else by the path; a path that adds no predicate makes
/// its property unknown.
pub(super) fn refine<'p>(
    a: &mut Analysis<'_, 'p>,
    tab: &Tabulation,
    path: &Spurious<'p>,
    cfg: &SummaryConfig,
    dag_limit: &mut usize,
    result: &mut SummaryResult<'p>,
) -> Flow {
    if result.refinements >= cfg.max_refinements {
        result.open_reason = Some(UnknownReason::Limit(Limit::Refinements(cfg.max_refinements)));
        return Flow::Stop;
    }
    // The first path is spurious. The DAG of all error paths of the round next: if it is
    // infeasible as a whole, the atoms of its annotation refine every path at once.
    if cfg.dag && refine_by_dag(a, tab, cfg, dag_limit) > 0 {
        result.refinements += 1;
        a.new_precision();
        return Flow::Next;
    }
    match refine_by_path(a, path, cfg) {
        Ok(()) => {
            result.refinements += 1;
            a.new_precision();
            Flow::Next
        }
        Err(why) => {
            if let Err(i) = a.cancel.check() {
                result.open_reason = Some(UnknownReason::from(i));
                return Flow::Stop;
            }
            result.unknown.insert(path.key, why);
            Flow::Next
        }
    }
}

/// Adds the predicates of the round's counterexample DAG (seed 002 §4.2–§4.3) at its nodes;
/// returns how many were added (none for a DAG over `dag_limit` nodes, one with a feasible
/// path, or one that could not be refined, which halves `dag_limit` for the next rounds).
fn refine_by_dag(a: &mut Analysis, tab: &Tabulation, cfg: &SummaryConfig, dag_limit: &mut usize) -> usize {
    let (p, w, cancel) = (a.p, a.copies, a.cancel);
    let copies = |f: FuncId| program::copies_of(w, f).to_vec();
    let dag = counterexample_dag(tab, *dag_limit);
    let mut added = 0;
    let mut full = false;
    match &dag {
        None => tracing::debug!("summaries: counterexample DAG of more than {} nodes; one path instead", dag_limit),
        Some(dag) => match refine_dag(p, dag, &copies, cfg.family, cfg.form, cancel) {
            Ok(per_node) => {
                for (node, preds) in dag.iter().zip(per_node) {
                    for pred in preds {
                        add_predicate(a, node.func, Some(node.node), pred, &mut added, &mut full);
                    }
                }
            }
            Err(DagFailure::Feasible) => tracing::debug!("summaries: the counterexample DAG has a feasible path; one path instead"),
            Err(DagFailure::GaveUp(why)) => {
                tracing::debug!("summaries: no DAG refinement ({}); one path instead", why);
                // Larger DAGs (the next rounds') are not tried.
                *dag_limit = dag.len() / 2;
            }
        },
    }
    added
}

/// Adds the atoms of the path's sequence interpolants at the control points of their cuts
/// (those over the procedure's own variables and globals), or, if none is new, the path's
/// branch conditions; `Err` with the reason if neither adds a predicate.
fn refine_by_path(a: &mut Analysis, path: &Spurious, cfg: &SummaryConfig) -> Result<(), UnknownReason> {
    let (p, w, cancel) = (a.p, a.copies, a.cancel);
    let copies = |f: FuncId| program::copies_of(w, f).to_vec();
    let ctxs = &path.ctxs;
    let mut added = 0;
    let mut full = false;
    let mut failure = None;
    match path_predicates(p, ctxs, &copies, &cfg.interpolation, cancel) {
        Ok((strategy, cuts)) => {
            tracing::debug!("summaries: interpolants by {}", strategy.name());
            for (j, atoms) in cuts.into_iter().enumerate() {
                let f = ctxs[j].to.func;
                for atom in atoms {
                    let scoped = atom.vars().all(|v: VarId| v.func().is_none() || v.func() == Some(f));
                    if scoped {
                        add_predicate(a, f, Some(ctxs[j].to.node), atom.into(), &mut added, &mut full);
                    }
                }
            }
        }
        Err(e) => failure = Some(e),
    }
    if added == 0 {
        for (f, pred) in path_conditions(&path.steps) {
            add_predicate(a, f, None, pred.into(), &mut added, &mut full);
        }
    }
    if added == 0 {
        return Err(match (full, failure) {
            (true, _) => {
                UnknownReason::Limit(Limit::Bound(format!("more than {} predicates at a control point", precision::MAX_PREDICATES)))
            }
            (false, Some(e)) => UnknownReason::RefinementFailed(format!("an infeasible error path could not be refined ({})", e)),
            (false, None) => {
                UnknownReason::RefinementFailed("an infeasible error path could not be refined with new predicates".to_string())
            }
        });
    }
    Ok(())
}
