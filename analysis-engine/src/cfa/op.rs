//! The operations of the interprocedural CFA as the analyses see them: an [`Op`] (an edge, or
//! the call or return half of a call-summary edge), a location [`Loc`], a call site, and an
//! operation in its context ([`OpCtx`], read off the CFA by [`op_ctx`]).

use super::{Call, EdgeId, EdgeKind, NodeId, Program};
use crate::ir::FuncId;

/// An operation of the interprocedural CFA, as the ARG records it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// An edge of a function's CFA (never a call-summary edge).
    Edge(FuncId, EdgeId),
    /// From a call-summary edge's source into the callee's entry (parameter passing).
    Call(FuncId, EdgeId),
    /// From the callee's exit to the call-summary edge's target (result passing).
    Return(FuncId, EdgeId),
}

impl Op {
    /// The caller-side CFA edge the operation belongs to.
    pub fn edge(self) -> (FuncId, EdgeId) {
        match self {
            Op::Edge(f, e) | Op::Call(f, e) | Op::Return(f, e) => (f, e),
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Loc {
    pub func: FuncId,
    pub node: NodeId,
}

/// A call site: the caller and its call-summary edge.
pub type CallSite = (FuncId, EdgeId);

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
