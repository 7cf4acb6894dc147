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

pub use driver::{run, run_observed};
pub(crate) use inputs::xorshift64_star;
pub use inputs::{Boundary, Constant, InputStrategy, Replay, Small, Zeros};
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
    /// Nondeterministic choices between edges without conditions (among the program's entry
    /// functions, say) the input strategy made: like `inputs`, another run may choose others.
    pub choices: u64,
}

/// Told the state at each loop head a run passes (invariants learned from runs): `eval` gives
/// an expression's value there, `None` where it reads a value the run does not know.
pub trait HeadObserver {
    fn at_head(&mut self, func: crate::ir::FuncId, node: crate::cfa::NodeId, eval: &mut dyn FnMut(&crate::ir::Expr) -> Option<i128>);
}

/// Limits of one run.
pub struct RunLimits {
    /// Steps a run may execute (the operations of loop iterations jumped over by acceleration
    /// cost no time and do not count).
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

    fn limits(max_frames: usize) -> RunLimits {
        RunLimits { max_steps: 100_000_000, max_inputs: 1000, keep_ops: 50_000, trace_steps: 40, max_frames, accelerate: true }
    }

    /// `fib(25)` recursively: 242,785 calls, over a million steps, run to the violation.
    #[test]
    fn deep_call_trees_run_to_their_end() {
        let p = load("int fib(int n) { if (n < 2) return n; return fib(n - 1) + fib(n - 2); }\nint main(void) { int r = fib(25); if (r == 75025) { ERROR: return 1; } return 0; }\n");
        let run = super::run(&p, &Plan::new(&p), &mut Zeros, &limits(1 << 18), &Cancel::new());
        assert!(matches!(run.end, RunEnd::Target(_)), "{:?}", run.end);
        assert!(run.steps > 1_000_000, "{} steps", run.steps);
        // Too long to keep every operation; the first and last steps are kept.
        assert!(run.ops.is_none());
        assert_eq!(run.head.len(), 40);
        assert_eq!(run.tail.len(), 40);
    }

    /// A recursion 100,000 activations deep (an explicit stack: no Rust recursion per C
    /// call) reaches its violation; with a lower frame limit the run stops instead.
    #[test]
    fn deep_recursion_runs_to_its_end() {
        let p = load("long sum(long n) { if (n == 0) return 0; return n + sum(n - 1); }\nint main(void) { long r = sum(100000); if (r == 5000050000L) { ERROR: return 1; } return 0; }\n");
        let run = super::run(&p, &Plan::new(&p), &mut Zeros, &limits(1 << 18), &Cancel::new());
        assert!(matches!(run.end, RunEnd::Target(_)), "{:?}", run.end);
        let run = super::run(&p, &Plan::new(&p), &mut Zeros, &limits(1000), &Cancel::new());
        assert!(matches!(&run.end, RunEnd::Stuck(why) if why.contains("call stack too deep")), "{:?}", run.end);
    }

    /// Calls and returns say whether another activation of the function is on the stack
    /// (the path check renames the callee's variables by it).
    #[test]
    fn calls_and_returns_know_recursion() {
        let p = load("int g(int x) { return x + 1; }\nint f(int n) { if (n == 0) return g(0); return f(n - 1) + 1; }\nint main(void) { int r = f(2); if (r == 3) { ERROR: return 1; } return 0; }\n");
        let run = super::run(&p, &Plan::new(&p), &mut Zeros, &limits(100), &Cancel::new());
        assert!(matches!(run.end, RunEnd::Target(_)), "{:?}", run.end);
        let name = |f: crate::ir::FuncId| p.func(f).name.clone();
        let calls: Vec<(String, String, bool)> = run
            .ops
            .as_ref()
            .expect("a short run keeps its operations")
            .iter()
            .filter_map(|&(op, rec)| match op {
                Op::Call(f, e) => match &p.cfa(f).edge(e).kind {
                    crate::cfa::EdgeKind::CallSummary(c) => Some(("call".to_string(), name(c.callee), rec)),
                    _ => None,
                },
                Op::Return(caller, _) => Some(("return to".to_string(), name(caller), rec)),
                _ => None,
            })
            .collect();
        let expected: Vec<(String, String, bool)> = [
            ("call", "main", false),
            ("call", "f", false),
            ("call", "f", true),
            ("call", "f", true),
            ("call", "g", false),
            ("return to", "f", false),
            ("return to", "f", true),
            ("return to", "f", true),
            ("return to", "main", false),
        ]
        .iter()
        .map(|&(a, b, c)| (a.to_string(), b.to_string(), c))
        .collect();
        assert_eq!(calls, expected);
    }

    /// A loop of a billion iterations is jumped over, and its values after the jump are exact;
    /// the step limit counts the steps executed, not those jumped over.
    #[test]
    fn affine_loops_are_jumped_over() {
        let p = load("int main(void) { unsigned i = 0; unsigned s = 7; while (i < 1000000000u) { i = i + 1; s = s + 2; } if (s == 2000000007u) { ERROR: return 1; } return 0; }\n");
        let run = super::run(&p, &Plan::new(&p), &mut Zeros, &limits(100), &Cancel::new());
        assert!(matches!(run.end, RunEnd::Target(_)), "{:?}", run.end);
        assert!(run.accelerated > 999_000_000, "{} iterations jumped", run.accelerated);
    }
}
