//! The abstract reachability graph (seed 000 §II-F, seed 001 §5.2): reached states with their
//! precisions, parent and child links, and coverage links; the reached set is the ARG's live,
//! uncovered states, partitioned by the CPA's key.
//!
//! Lazy abstraction removes a subtree (refinement, merge) and re-queues the states its
//! removed nodes covered.

use std::collections::HashMap;
use std::hash::Hash;

use crate::core::Op;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArgId(pub u32);

#[derive(Clone, Debug)]
pub struct ArgNode<S, P> {
    pub state: S,
    pub prec: P,
    /// Parents with the operation leading here (several after a merge-join).
    pub parents: Vec<(ArgId, Op)>,
    pub children: Vec<ArgId>,
    pub covered_by: Option<ArgId>,
    pub covers: Vec<ArgId>,
    pub alive: bool,
    /// Successors have been computed.
    pub expanded: bool,
}

/// The ARG plus the partitioned reached set.
pub struct Arg<S, P, K> {
    nodes: Vec<ArgNode<S, P>>,
    keys: Vec<K>,
    partitions: HashMap<K, Vec<ArgId>>,
    root: ArgId,
    live: usize,
}

impl<S: Clone, P: Clone, K: Clone + Eq + Hash> Arg<S, P, K> {
    pub fn new(root_state: S, prec: P, key: K) -> Arg<S, P, K> {
        let mut arg = Arg { nodes: Vec::new(), keys: Vec::new(), partitions: HashMap::new(), root: ArgId(0), live: 0 };
        arg.root = arg.add(root_state, prec, key, Vec::new());
        arg
    }

    pub fn root(&self) -> ArgId {
        self.root
    }

    pub fn node(&self, id: ArgId) -> &ArgNode<S, P> {
        &self.nodes[id.0 as usize]
    }

    pub fn node_mut(&mut self, id: ArgId) -> &mut ArgNode<S, P> {
        &mut self.nodes[id.0 as usize]
    }

    pub fn key(&self, id: ArgId) -> &K {
        &self.keys[id.0 as usize]
    }

    /// Number of live nodes (covered ones included).
    pub fn live(&self) -> usize {
        self.live
    }

    /// All nodes ever created.
    pub fn created(&self) -> usize {
        self.nodes.len()
    }

    /// Adds a node (not yet in the reached set) below its parents.
    pub fn add(&mut self, state: S, prec: P, key: K, parents: Vec<(ArgId, Op)>) -> ArgId {
        let id = ArgId(self.nodes.len() as u32);
        for (p, _) in &parents {
            self.nodes[p.0 as usize].children.push(id);
        }
        self.nodes.push(ArgNode {
            state,
            prec,
            parents,
            children: Vec::new(),
            covered_by: None,
            covers: Vec::new(),
            alive: true,
            expanded: false,
        });
        self.keys.push(key);
        self.live += 1;
        id
    }

    /// Puts a live node into the reached set.
    pub fn reach(&mut self, id: ArgId) {
        let key = self.keys[id.0 as usize].clone();
        let part = self.partitions.entry(key).or_default();
        if !part.contains(&id) {
            part.push(id);
        }
    }

    fn unreach(&mut self, id: ArgId) {
        let key = &self.keys[id.0 as usize];
        if let Some(part) = self.partitions.get_mut(key) {
            part.retain(|&x| x != id);
        }
    }

    /// The reached states of a partition.
    pub fn partition(&self, key: &K) -> &[ArgId] {
        self.partitions.get(key).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// Records that `id` is covered by `by` (stop returned true); `id` stays out of reached.
    pub fn cover(&mut self, id: ArgId, by: ArgId) {
        self.unreach(id);
        self.nodes[id.0 as usize].covered_by = Some(by);
        self.nodes[by.0 as usize].covers.push(id);
    }

    /// Removes `id` and all its descendants. Returns the live nodes that were covered by a
    /// removed node and are now uncovered (to be re-added to the waitlist), and the removed
    /// nodes' parents that stay alive.
    pub fn remove_subtree(&mut self, id: ArgId) -> (Vec<ArgId>, Vec<ArgId>) {
        let mut stack = vec![id];
        let mut removed = Vec::new();
        while let Some(n) = stack.pop() {
            let node = &mut self.nodes[n.0 as usize];
            if !node.alive {
                continue;
            }
            node.alive = false;
            self.live -= 1;
            removed.push(n);
            stack.extend(node.children.iter().copied());
        }
        let mut uncovered = Vec::new();
        let mut surviving_parents = Vec::new();
        for &n in &removed {
            self.unreach(n);
            let covers = std::mem::take(&mut self.nodes[n.0 as usize].covers);
            for c in covers {
                if self.nodes[c.0 as usize].alive {
                    self.nodes[c.0 as usize].covered_by = None;
                    uncovered.push(c);
                }
            }
            if let Some(by) = self.nodes[n.0 as usize].covered_by.take() {
                self.nodes[by.0 as usize].covers.retain(|&x| x != n);
            }
            let parents = self.nodes[n.0 as usize].parents.clone();
            for (p, _) in parents {
                let pn = &mut self.nodes[p.0 as usize];
                pn.children.retain(|&x| x != n);
                if pn.alive {
                    surviving_parents.push(p);
                }
            }
        }
        uncovered.sort();
        uncovered.dedup();
        surviving_parents.sort();
        surviving_parents.dedup();
        (uncovered, surviving_parents)
    }

    /// The path from the root to `id` along first parents: `(node, operation into it)`.
    pub fn path_to(&self, id: ArgId) -> Vec<(ArgId, Option<Op>)> {
        let mut path = Vec::new();
        let mut cur = id;
        loop {
            let node = &self.nodes[cur.0 as usize];
            match node.parents.first() {
                Some(&(p, op)) => {
                    path.push((cur, Some(op)));
                    cur = p;
                }
                None => {
                    path.push((cur, None));
                    break;
                }
            }
        }
        path.reverse();
        path
    }

    /// Live nodes in creation order.
    pub fn live_nodes(&self) -> impl Iterator<Item = ArgId> + '_ {
        self.nodes.iter().enumerate().filter(|(_, n)| n.alive).map(|(i, _)| ArgId(i as u32))
    }
}
