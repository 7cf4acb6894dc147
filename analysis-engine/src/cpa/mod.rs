//! The analyses as CPAs: location and call stack (the skeleton of every configuration), the
//! composite that combines them with a data analysis, and the data analyses themselves.

pub mod callstack;
pub mod combined;
pub mod composite;
pub mod location;
pub mod predicate;
pub mod template;
pub mod value;

use crate::cfa::{Call, EdgeKind, Program};
use crate::core::arg::ArgId;
use crate::core::cpa::{AbstractDomain, MergeOp, PrecisionStep, StopOp};
use crate::core::Op;
use crate::ir::FuncId;
use location::Loc;

/// What a data analysis sees of one operation.
#[derive(Clone, Copy, Debug)]
pub enum OpKind<'a> {
    Edge(&'a EdgeKind),
    /// Entering `callee`; `recursive` if another activation of it is suspended (its locals
    /// must be saved).
    Call {
        call: &'a Call,
        callee: FuncId,
        recursive: bool,
    },
    /// Leaving `callee` back to the call site; `recursive` if a suspended activation of it
    /// resumes (its locals must be restored).
    Return {
        call: &'a Call,
        callee: FuncId,
        recursive: bool,
    },
}

/// One operation with its context.
#[derive(Clone, Copy, Debug)]
pub struct OpCtx<'a> {
    pub op: Op,
    pub kind: OpKind<'a>,
    pub from: Loc,
    pub to: Loc,
}

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
    fn covering<'s>(&self, new: &Self::State, reached: &[(ArgId, &'s Self::State)]) -> Option<ArgId> {
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

/// The context of an operation read off the CFA alone, given its recursion flag.
pub fn op_ctx(p: &Program, op: Op, recursive: bool) -> OpCtx<'_> {
    match op {
        Op::Edge(f, e) => {
            let edge = p.cfa(f).edge(e);
            OpCtx { op, kind: OpKind::Edge(&edge.kind), from: Loc { func: f, node: edge.src }, to: Loc { func: f, node: edge.dst } }
        }
        Op::Call(f, e) | Op::Return(f, e) => {
            let edge = p.cfa(f).edge(e);
            let EdgeKind::CallSummary(call) = &edge.kind else { unreachable!("calls and returns belong to call edges") };
            let callee = p.cfa(call.callee);
            if matches!(op, Op::Call(..)) {
                OpCtx {
                    op,
                    kind: OpKind::Call { call, callee: call.callee, recursive },
                    from: Loc { func: f, node: edge.src },
                    to: Loc { func: call.callee, node: callee.entry },
                }
            } else {
                OpCtx {
                    op,
                    kind: OpKind::Return { call, callee: call.callee, recursive },
                    from: Loc { func: call.callee, node: callee.exit },
                    to: Loc { func: f, node: edge.dst },
                }
            }
        }
    }
}
