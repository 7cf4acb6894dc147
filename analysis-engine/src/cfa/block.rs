//! Blocks of adjustable-block encoding (Beyer, Keremoglu, Wendler, FMCAD 2010, §3): the paths
//! of operations since an abstraction point, as a DAG (the predicate analysis builds them; the
//! SMT layer encodes them).

use std::sync::Arc;

use super::op::Op;

/// The paths of a block since its abstraction, as a DAG. The empty block stands for the
/// abstraction state itself; every other block ends at one CFA location and lists the ways
/// to get there: the block before and the operation taken (with its recursion flag).
#[derive(Clone, Debug, Default)]
pub struct Block(Option<Arc<BlockNode>>);

#[derive(Debug)]
pub struct BlockNode {
    pub preds: Vec<(Block, Op, bool)>,
    /// Operations on the longest path through the block.
    pub depth: usize,
}

impl Block {
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    pub fn node(&self) -> Option<&Arc<BlockNode>> {
        self.0.as_ref()
    }

    pub fn same(&self, other: &Block) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    pub fn depth(&self) -> usize {
        self.0.as_ref().map_or(0, |n| n.depth)
    }

    /// The block extended by one operation.
    pub fn step(&self, op: Op, recursive: bool) -> Block {
        Block(Some(Arc::new(BlockNode { preds: vec![(self.clone(), op, recursive)], depth: self.depth() + 1 })))
    }

    /// Both blocks' paths (they end at the same location).
    pub fn merge(&self, other: &Block) -> Block {
        let (Some(a), Some(b)) = (&self.0, &other.0) else { return self.clone() };
        let mut preds: Vec<(Block, Op, bool)> = a.preds.clone();
        for p in &b.preds {
            if !preds.iter().any(|q| same_pred(q, p)) {
                preds.push(p.clone());
            }
        }
        Block(Some(Arc::new(BlockNode { preds, depth: a.depth.max(b.depth) })))
    }

    /// Every path of `self` is one of `other` (decided on the DAG's structure, not on its
    /// formula: identical nodes, or each way into `self` is one into `other`).
    pub fn leq(&self, other: &Block) -> bool {
        if self.same(other) {
            return true;
        }
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => a.preds.iter().all(|p| b.preds.iter().any(|q| same_pred(p, q))),
            _ => false,
        }
    }

    /// The operations of the block if it has exactly one path.
    pub fn linear(&self) -> Option<Vec<(Op, bool)>> {
        let mut out = Vec::new();
        let mut cur = self.clone();
        while let Some(n) = cur.0.clone() {
            let [(prev, op, rec)] = n.preds.as_slice() else { return None };
            out.push((*op, *rec));
            cur = prev.clone();
        }
        out.reverse();
        Some(out)
    }

    /// A block with the single path of `ops`.
    pub fn of_path(ops: &[crate::cfa::OpCtx]) -> Block {
        ops.iter().fold(Block::default(), |b, o| {
            let rec = match o.kind {
                crate::cfa::OpKind::Call { recursive, .. } | crate::cfa::OpKind::Return { recursive, .. } => recursive,
                crate::cfa::OpKind::Edge(_) => false,
            };
            b.step(o.op, rec)
        })
    }

    /// A block with the single path `ops`.
    pub fn from_ops(ops: &[(Op, bool)]) -> Block {
        ops.iter().fold(Block::default(), |b, &(op, rec)| b.step(op, rec))
    }

    /// The DAG's nodes, each after all of its predecessors (the empty start block first).
    pub fn topological(&self) -> Vec<Block> {
        let mut order = Vec::new();
        let mut seen: std::collections::HashSet<*const BlockNode> = std::collections::HashSet::new();
        let mut start_seen = false;
        // Iterative post-order: a block is emitted once all its predecessors are.
        let mut stack: Vec<(Block, usize)> = vec![(self.clone(), 0)];
        while let Some((b, i)) = stack.pop() {
            let Some(n) = b.0.clone() else {
                if !start_seen {
                    start_seen = true;
                    order.push(b);
                }
                continue;
            };
            if i == 0 && seen.contains(&Arc::as_ptr(&n)) {
                continue;
            }
            if i < n.preds.len() {
                stack.push((b.clone(), i + 1));
                let prev = n.preds[i].0.clone();
                let done = match &prev.0 {
                    None => start_seen,
                    Some(p) => seen.contains(&Arc::as_ptr(p)),
                };
                if !done {
                    stack.push((prev, 0));
                }
            } else if seen.insert(Arc::as_ptr(&n)) {
                order.push(b);
            }
        }
        order
    }

    /// A key identifying the node (for maps over a DAG's nodes).
    pub fn key(&self) -> usize {
        self.0.as_ref().map_or(0, |n| Arc::as_ptr(n) as usize)
    }
}

fn same_pred(a: &(Block, Op, bool), b: &(Block, Op, bool)) -> bool {
    a.1 == b.1 && a.2 == b.2 && a.0.same(&b.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cfa::EdgeId;
    use crate::ir::FuncId;

    fn op(i: u32) -> Op {
        Op::Edge(FuncId(0), EdgeId(i))
    }

    #[test]
    fn merged_blocks_cover_their_parts_and_sort_topologically() {
        let start = Block::default();
        let a = start.step(op(1), false);
        let then_ = a.step(op(2), false);
        let else_ = a.step(op(3), false);
        let joined = then_.merge(&else_);
        assert!(then_.leq(&joined) && else_.leq(&joined));
        assert!(!joined.leq(&then_));
        assert_eq!(joined.linear(), None);
        assert_eq!(then_.linear(), Some(vec![(op(1), false), (op(2), false)]));
        let end = joined.step(op(4), false);
        let order = end.topological();
        // A merge keeps the ways into both branches' end: the DAG is start, a, joined, end,
        // each after its predecessors and each once; both branch operations lead into it.
        assert_eq!(order.len(), 4);
        let pos = |b: &Block| order.iter().position(|x| x.same(b)).expect("listed");
        assert!(pos(&start) < pos(&a) && pos(&a) < pos(&joined) && pos(&joined) < pos(&end));
        let ops: Vec<Op> = joined.node().expect("non-empty").preds.iter().map(|p| p.1).collect();
        assert_eq!(ops, vec![op(2), op(3)]);
        assert_eq!(Block::from_ops(&[(op(1), false), (op(2), false)]).linear(), then_.linear());
    }
}
