//! Counterexample-guided abstraction refinement over the CPA algorithm (seed 000 Alg. 2 with
//! the lazy refinement of §III-F a; CPAchecker's `CEGARAlgorithm` and `Refiner`): explore until
//! a target state; the refiner either shows its path spurious and names a new precision and
//! the ARG node to re-explore from (the pivot), or settles it (a confirmed violation, or a path
//! it cannot decide), and the search goes on past it for the other properties.

use super::algorithm::{Exploration, Limits, Outcome};
use super::arg::ArgId;
use super::cpa::Cpa;
use super::{Cancel, Interrupt, Limit};

/// What a refiner found about the path to one target state.
pub enum Refinement<P, S> {
    /// The path is infeasible: re-explore the subtree of `pivot` with `precision`.
    Spurious {
        precision: P,
        pivot: ArgId,
    },
    /// The path is decided (confirmed, or undecidable for this refiner): see [`Refiner::settle`].
    Settled(S),
    Interrupted(Interrupt),
}

/// What to do with a settled target.
pub enum Settle {
    /// Go on past the target (execution continues after an `ERROR:` label).
    Requeue,
    /// Leave the target where it is.
    Keep,
    /// End the run.
    Stop(Interrupt),
}

/// The refinement half of CEGAR.
pub trait Refiner<C: Cpa> {
    /// What a settled path carries (a counterexample, or why it stays open).
    type Settled;

    /// Checks the path to the target state `target`.
    fn refine(&mut self, cpa: &C, ex: &Exploration<C>, target: ArgId) -> Refinement<C::Precision, Self::Settled>;

    /// Adopts the precision of a spurious path (the ARG nodes to re-explore get it too).
    fn adopt(&mut self, cpa: &C, precision: &C::Precision);

    /// Records a settled path.
    fn settle(&mut self, cpa: &C, ex: &Exploration<C>, target: ArgId, settled: Self::Settled) -> Settle;
}

/// Runs CEGAR until the state space is exhausted (`None`) or the run is interrupted; counts
/// refinements in `refinements` and stops after `max_refinements`.
pub fn run<C: Cpa, R: Refiner<C>>(
    cpa: &C,
    ex: &mut Exploration<C>,
    refiner: &mut R,
    cancel: &Cancel,
    limits: &Limits,
    max_refinements: u64,
    refinements: &mut u64,
) -> Option<Interrupt> {
    loop {
        let target = match ex.run(cpa, cancel, limits) {
            Outcome::Exhausted => return None,
            Outcome::Interrupted(i) => return Some(i),
            Outcome::Target(t) => t,
        };
        match refiner.refine(cpa, ex, target) {
            Refinement::Spurious { precision, pivot } => {
                *refinements += 1;
                if *refinements > max_refinements {
                    return Some(Interrupt::Limit(Limit::Refinements(max_refinements)));
                }
                refiner.adopt(cpa, &precision);
                for n in ex.prune(cpa, pivot) {
                    ex.arg.node_mut(n).prec = precision.clone();
                }
            }
            Refinement::Interrupted(i) => return Some(i),
            Refinement::Settled(s) => match refiner.settle(cpa, ex, target, s) {
                Settle::Requeue => ex.requeue(cpa, target),
                Settle::Keep => {}
                Settle::Stop(i) => return Some(i),
            },
        }
    }
}
