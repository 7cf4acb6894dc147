//! The call-stack CPA: the stack of call sites of the current location, so that returns go
//! back to the right caller. Recursion is followed up to a depth bound; deeper calls are not
//! explored and make the analysis incomplete (its open properties `unknown`).

use std::sync::Arc;

use crate::cfa::{EdgeId, Program};
use crate::ir::FuncId;

/// A call site: the caller and its call-summary edge.
pub type CallSite = (FuncId, EdgeId);

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallStack(Arc<Vec<CallSite>>);

impl CallStack {
    pub fn depth(&self) -> usize {
        self.0.len()
    }

    pub fn top(&self) -> Option<CallSite> {
        self.0.last().copied()
    }

    pub fn sites(&self) -> &[CallSite] {
        &self.0
    }

    pub fn push(&self, site: CallSite) -> CallStack {
        let mut v = (*self.0).clone();
        v.push(site);
        CallStack(Arc::new(v))
    }

    pub fn pop(&self) -> CallStack {
        let mut v = (*self.0).clone();
        v.pop();
        CallStack(Arc::new(v))
    }
}

pub struct CallStackCpa<'p> {
    pub program: &'p Program,
    pub max_depth: usize,
}

/// What entering a callee means for the stack.
pub enum Push {
    Ok { stack: CallStack, recursive: bool },
    TooDeep,
}

impl<'p> CallStackCpa<'p> {
    /// The stack after calling `callee` from `site` with the current stack `stack` (whose
    /// current function is `current`).
    pub fn call(&self, stack: &CallStack, current: FuncId, site: CallSite, callee: FuncId) -> Push {
        if stack.depth() >= self.max_depth {
            return Push::TooDeep;
        }
        let recursive = current == callee || stack.sites().iter().any(|&(f, _)| f == callee);
        Push::Ok { stack: stack.push(site), recursive }
    }

    /// True if returning from the top frame leaves another activation of `callee` suspended.
    pub fn returns_into_recursion(&self, stack: &CallStack, callee: FuncId) -> bool {
        stack.sites().iter().any(|&(f, _)| f == callee)
    }
}
