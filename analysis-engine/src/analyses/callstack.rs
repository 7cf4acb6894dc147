//! The call-stack CPA: the stack of call sites of the current location, so that returns go
//! back to the right caller. Stacks are persistent lists (push and pop share the rest).
//! Recursion is followed up to a depth bound; deeper calls are not explored.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::cfa::{CallSite, Program};
use crate::ir::FuncId;

#[derive(Debug)]
struct Frame {
    site: CallSite,
    parent: Option<Arc<Frame>>,
    depth: usize,
    hash: u64,
}

#[derive(Clone, Debug, Default)]
pub struct CallStack(Option<Arc<Frame>>);

impl PartialEq for CallStack {
    fn eq(&self, other: &Self) -> bool {
        let (mut a, mut b) = (&self.0, &other.0);
        loop {
            match (a, b) {
                (None, None) => return true,
                (Some(x), Some(y)) => {
                    if Arc::ptr_eq(x, y) {
                        return true;
                    }
                    if x.hash != y.hash || x.depth != y.depth || x.site != y.site {
                        return false;
                    }
                    a = &x.parent;
                    b = &y.parent;
                }
                _ => return false,
            }
        }
    }
}

impl Eq for CallStack {}

impl Hash for CallStack {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0.as_ref().map_or(0, |f| f.hash));
    }
}

impl CallStack {
    pub fn depth(&self) -> usize {
        self.0.as_ref().map_or(0, |f| f.depth)
    }

    pub fn top(&self) -> Option<CallSite> {
        self.0.as_ref().map(|f| f.site)
    }

    pub fn push(&self, site: CallSite) -> CallStack {
        let parent_hash = self.0.as_ref().map_or(0x9e37_79b9_7f4a_7c15, |f| f.hash);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (parent_hash, site.0 .0, site.1 .0).hash(&mut h);
        CallStack(Some(Arc::new(Frame { site, parent: self.0.clone(), depth: self.depth() + 1, hash: h.finish() })))
    }

    pub fn pop(&self) -> CallStack {
        CallStack(self.0.as_ref().and_then(|f| f.parent.clone()))
    }

    /// Call sites from the innermost outwards.
    pub fn sites(&self) -> impl Iterator<Item = CallSite> + '_ {
        let mut cur = self.0.as_deref();
        std::iter::from_fn(move || {
            let f = cur?;
            cur = f.parent.as_deref();
            Some(f.site)
        })
    }
}

pub struct CallStackCpa<'p> {
    pub program: &'p Program,
    pub max_depth: usize,
}

/// What entering a callee means for the stack.
pub enum Push {
    Ok(CallStack),
    TooDeep(CallStack),
}

impl<'p> CallStackCpa<'p> {
    /// The stack after calling from `site` with the current stack `stack`.
    pub fn call(&self, stack: &CallStack, site: CallSite) -> Push {
        let s = stack.push(site);
        if stack.depth() >= self.max_depth {
            Push::TooDeep(s)
        } else {
            Push::Ok(s)
        }
    }

    /// True if `callee` has an activation among the callers on `stack` (a call from the top
    /// of `stack` into `callee` is recursive, and returning from it resumes that activation).
    pub fn is_active(&self, stack: &CallStack, callee: FuncId) -> bool {
        stack.sites().any(|(f, _)| f == callee)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cfa::EdgeId;

    #[test]
    fn stacks_compare_by_content() {
        let a = CallStack::default().push((FuncId(1), EdgeId(2))).push((FuncId(3), EdgeId(4)));
        let b = CallStack::default().push((FuncId(1), EdgeId(2))).push((FuncId(3), EdgeId(4)));
        let c = CallStack::default().push((FuncId(1), EdgeId(5))).push((FuncId(3), EdgeId(4)));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.pop(), b.pop());
        assert_eq!(a.depth(), 2);
        assert_eq!(a.sites().collect::<Vec<_>>(), vec![(FuncId(3), EdgeId(4)), (FuncId(1), EdgeId(2))]);
    }
}
