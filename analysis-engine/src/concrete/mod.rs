//! Concrete execution of the program's CFAs with chosen inputs: a fast interpreter that finds
//! violations needing long executions (millions of loop iterations) that state-space
//! exploration cannot unroll. It never proves anything; every violation it finds is confirmed
//! independently (SMT path check, or a native run of the compiled program) before it is
//! reported.
//!
//! The interpreter stops instead of guessing: an over-approximated value (`Unknown`), havocked
//! memory, an unsupported construct or undefined behaviour ends the run without a verdict.
//!
//! [`run`] (in `driver`) steps a `machine` (values and activations) through the CFAs as the
//! `plan` of each node says, reading inputs from an [`InputStrategy`] (`inputs`), jumping over
//! iterations of affine loops (`accel`), and keeping the steps a trace needs (`recorder`).

mod accel;
mod driver;
mod inputs;
mod machine;
mod plan;
mod recorder;

use std::collections::VecDeque;

use crate::core::Op;
use crate::ir::{IntTy, VarId};
use crate::properties::PropertyKey;

pub use driver::run;
pub use inputs::{Boundary, Constant, InputStrategy, Replay, Zeros};
pub use plan::Plan;

/// A step of a concrete run with the values it wrote or read.
#[derive(Clone, Debug)]
pub struct ConcreteStep {
    pub op: Op,
    pub depth: usize,
    /// For calls and returns: another activation of the callee is suspended.
    pub recursive: bool,
    pub values: Vec<(VarId, Option<i64>, i128)>,
    pub input: Option<i128>,
    /// Iterations of the loop starting with this operation that were skipped by acceleration.
    pub accelerated: Option<u64>,
}

/// How a run ended.
#[derive(Clone, Debug)]
pub enum RunEnd {
    Target(PropertyKey),
    Exit,
    Aborted,
    /// The step or input limit of `RunLimits`.
    StepLimit,
    /// The run cannot continue precisely (an over-approximated value, undefined behaviour…).
    Stuck(String),
    Cancelled,
}

/// A finished run: how it ended, its inputs, and its recorded steps.
#[derive(Clone, Debug)]
pub struct Run {
    pub end: RunEnd,
    /// Input values in the order they were read, with their source.
    pub inputs: Vec<(String, IntTy, i128)>,
    /// Every operation (with its recursion flag), if the run was short enough to keep them all.
    pub ops: Option<Vec<(Op, bool)>>,
    pub head: Vec<ConcreteStep>,
    pub tail: VecDeque<ConcreteStep>,
    pub steps: u64,
    /// Loop iterations skipped by acceleration.
    pub accelerated: u64,
}

/// Limits of one run.
pub struct RunLimits {
    pub max_steps: u64,
    /// Inputs a run may read (each is kept for the replay; a run that reads more, such as one
    /// that a constant input keeps in a `while (nondet())` loop, ends at the step limit).
    pub max_inputs: usize,
    /// Operations kept for the SMT confirmation (longer runs keep head and tail only).
    pub keep_ops: usize,
    pub trace_steps: usize,
    pub max_frames: usize,
    /// Jump over iterations of affine loops (the run's operations are then not all kept).
    pub accelerate: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Cancel;
    use crate::smt::interpolate::tests_support::load;

    /// A constant input keeps `while (nondet())` going forever; the run stops at its input
    /// limit instead of filling memory with inputs until the time runs out.
    #[test]
    fn a_run_stops_at_its_input_limit() {
        let p = load("extern _Bool __VERIFIER_nondet_bool(void);\nint main(void) { int n = 0; while (__VERIFIER_nondet_bool()) { n = n + 1; if (n > 100000) n = 0; } return 0; }\n");
        let limits = RunLimits { max_steps: u64::MAX, max_inputs: 1000, keep_ops: 10, trace_steps: 4, max_frames: 10, accelerate: true };
        let run = super::run(&p, &Plan::new(&p), &mut Constant(2), &limits, &Cancel::new());
        assert!(matches!(run.end, RunEnd::StepLimit), "{:?}", run.end);
        assert_eq!(run.inputs.len(), 1000);
        // With zeros, the loop is never entered.
        let run = super::run(&p, &Plan::new(&p), &mut Zeros, &limits, &Cancel::new());
        assert!(matches!(run.end, RunEnd::Exit), "{:?}", run.end);
    }
}
