//! The analyses as CPAs: location and call stack (the skeleton of every configuration), the
//! composite that combines them with a data analysis, and the data analyses themselves.

pub mod callstack;
pub mod cells;
pub mod chc;
pub mod combined;
pub mod composite;
pub mod guesses;
pub mod kinduction;
pub mod location;
pub mod predicate;
pub mod summaries;
pub mod symbolic;
pub mod template;
pub mod tra;
pub mod value;

use crate::cfa::{Loc, OpCtx, Program};
use crate::core::arg::ArgId;
use crate::core::cpa::{AbstractDomain, MergeOp, PrecisionStep, StopOp};

/// A component analysis of the composite CPA: it interprets operations on its own states and
/// leaves control flow to the location and call-stack CPAs.
pub trait DataCpa {
    type State: AbstractDomain;
    type Precision: Clone + std::fmt::Debug;

    fn initial(&self, program: &Program) -> (Self::State, Self::Precision);

    /// The successor along one operation, `None` if it is infeasible (⊥).
    fn transfer(&self, program: &Program, state: &Self::State, prec: &Self::Precision, op: &OpCtx) -> Option<Self::State>;

    /// How states meeting at a location are combined (default: never, as in model checking).
    fn merge_op(&self) -> MergeOp {
        MergeOp::Sep
    }

    /// How coverage is decided (default: by one reached state).
    fn stop_op(&self) -> StopOp {
        StopOp::Sep
    }

    /// `merge(new, reached)`: with merge-join the join, when it differs from `reached`.
    fn merge(&self, new: &Self::State, reached: &Self::State, _prec: &Self::Precision, _loc: Loc) -> Option<Self::State> {
        match self.merge_op() {
            MergeOp::Sep => None,
            MergeOp::Join => {
                let j = reached.join(new);
                (!j.leq(reached)).then_some(j)
            }
        }
    }

    /// `stop(new, R)`: the reached state that covers `new` (with stop-join, the first one of
    /// a set whose join covers it).
    fn covering(&self, new: &Self::State, reached: &[(ArgId, &Self::State)]) -> Option<ArgId> {
        match self.stop_op() {
            StopOp::Sep => reached.iter().find(|(_, r)| new.leq(r)).map(|(id, _)| *id),
            StopOp::Join => {
                let (first, rest) = reached.split_first()?;
                let mut j = first.1.clone();
                for (_, r) in rest {
                    j = j.join(r);
                }
                new.leq(&j).then_some(first.0)
            }
        }
    }

    /// `prec` at the location the state has just reached.
    fn adjust_precision(&self, state: Self::State, prec: Self::Precision, loc: Loc) -> PrecisionStep<Self::State, Self::Precision>;
}

/// How many of the properties of a `main` with `body` (and the SV-COMP assertion helper) a
/// phase proves, of how many: the unit tests of the Houdini phases (`cells`, `guesses`).
#[cfg(test)]
pub(crate) fn proved_in_main(
    body: &str,
    prove: fn(&Program, &[crate::properties::Property], &crate::core::Cancel) -> std::collections::BTreeSet<crate::properties::PropertyKey>,
) -> (usize, usize) {
    let text = format!(
        "extern void abort(void);\nextern int __VERIFIER_nondet_int(void);\nvoid reach_error(void) {{ abort(); }}\n\
         void __VERIFIER_assert(int c) {{ if (!c) reach_error(); }}\nint main(void) {{\n{body}\nreturn 0;\n}}\n"
    );
    let input = crate::frontend::SourceInput { path: "phase.c".into(), text };
    let p = crate::load(&input, crate::cfa::DataModel::Lp64).expect("loads");
    let props = crate::properties::properties(&p);
    let cancel = crate::core::Cancel::new().child(Some(std::time::Duration::from_secs(60)));
    (prove(&p, &props, &cancel).len(), props.len())
}
