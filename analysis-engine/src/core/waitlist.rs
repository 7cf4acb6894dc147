//! Waitlist orders for the CPA algorithm: depth-first, breadth-first, and reverse post-order
//! (CFA topological order, ties broken depth-first), all deterministic.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::core::arg::ArgId;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Order {
    Dfs,
    Bfs,
    #[cfg_attr(feature = "clap", value(name = "rpo", alias = "reverse-postorder"))]
    ReversePostorder,
}

pub struct Waitlist {
    order: Order,
    deque: VecDeque<ArgId>,
    /// (priority, newest first) for reverse post-order.
    heap: BinaryHeap<(Reverse<u64>, u64, ArgId)>,
    seq: u64,
}

impl Waitlist {
    pub fn new(order: Order) -> Waitlist {
        Waitlist { order, deque: VecDeque::new(), heap: BinaryHeap::new(), seq: 0 }
    }

    pub fn push(&mut self, id: ArgId, priority: u64) {
        match self.order {
            Order::Dfs | Order::Bfs => self.deque.push_back(id),
            Order::ReversePostorder => {
                self.seq += 1;
                self.heap.push((Reverse(priority), self.seq, id));
            }
        }
    }

    pub fn pop(&mut self) -> Option<ArgId> {
        match self.order {
            Order::Dfs => self.deque.pop_back(),
            Order::Bfs => self.deque.pop_front(),
            Order::ReversePostorder => self.heap.pop().map(|(_, _, id)| id),
        }
    }

    pub fn len(&self) -> usize {
        self.deque.len() + self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders() {
        let ids = [ArgId(1), ArgId(2), ArgId(3)];
        let mut dfs = Waitlist::new(Order::Dfs);
        let mut bfs = Waitlist::new(Order::Bfs);
        let mut rpo = Waitlist::new(Order::ReversePostorder);
        for (i, id) in ids.iter().enumerate() {
            dfs.push(*id, 0);
            bfs.push(*id, 0);
            rpo.push(*id, [5, 1, 5][i]);
        }
        assert_eq!(dfs.pop(), Some(ArgId(3)));
        assert_eq!(bfs.pop(), Some(ArgId(1)));
        assert_eq!(rpo.pop(), Some(ArgId(2)));
        assert_eq!(rpo.pop(), Some(ArgId(3)), "ties: newest first");
    }
}
