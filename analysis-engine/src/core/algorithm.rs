//! The CPA+ algorithm (seed 001 Alg. 4.1, seed 000 Alg. 1): explores the abstract state space
//! from the waitlist, applying transfer, precision adjustment, merge and stop, and returns as
//! soon as a target state is reached so that CEGAR can check it and resume.

use crate::core::arg::{Arg, ArgId};
use crate::core::cpa::{Cpa, PrecisionStep};
use crate::core::waitlist::Waitlist;
use crate::core::{Cancel, Interrupt, Limit};

/// Shorthand for the ARG of a CPA.
pub type ArgOf<C> = Arg<<C as Cpa>::State, <C as Cpa>::Precision, <C as Cpa>::Key>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The waitlist is empty: the reached set is closed under the transfer relation.
    Exhausted,
    /// A target state was reached (its node is in the ARG and the reached set).
    Target(ArgId),
    Interrupted(Interrupt),
}

/// Limits that bound the exploration's memory.
#[derive(Clone, Debug)]
pub struct Limits {
    pub max_states: usize,
    /// Resident memory of the process, in bytes, at which exploration stops.
    pub max_memory: u64,
}

/// Resident memory of this process in bytes (Linux `/proc/self/statm`), if known.
pub fn resident_memory() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = s.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[derive(Clone, Debug, Default)]
pub struct AlgorithmStats {
    pub expanded: u64,
    pub covered: u64,
    pub merged: u64,
}

/// A CPA's reachability state between runs: the ARG with its reached set, and the waitlist.
pub struct Exploration<C: Cpa> {
    pub arg: ArgOf<C>,
    pub waitlist: Waitlist,
    pub stats: AlgorithmStats,
}

impl<C: Cpa> Exploration<C> {
    pub fn new(cpa: &C, waitlist: Waitlist) -> Exploration<C> {
        let (s, p) = cpa.initial();
        let key = cpa.partition(&s);
        let prio = cpa.priority(&s);
        let arg = Arg::new(s, p, key);
        let mut ex = Exploration { arg, waitlist, stats: AlgorithmStats::default() };
        let root = ex.arg.root();
        ex.arg.reach(root);
        ex.waitlist.push(root, prio);
        ex
    }

    /// Queues a reached node for (re-)expansion.
    pub fn requeue(&mut self, cpa: &C, id: ArgId) {
        let node = self.arg.node_mut(id);
        if !node.alive || node.covered_by.is_some() {
            return;
        }
        node.expanded = false;
        let prio = cpa.priority(&node.state);
        self.arg.reach(id);
        self.waitlist.push(id, prio);
    }

    /// Removes the subtree below (and including) `id`, re-queueing what depended on it:
    /// nodes it covered and live parents that lost a child. Returns the re-queued nodes.
    pub fn prune(&mut self, cpa: &C, id: ArgId) -> Vec<ArgId> {
        let (uncovered, parents) = self.arg.remove_subtree(id);
        let requeued: Vec<ArgId> = uncovered.into_iter().chain(parents).collect();
        for &n in &requeued {
            self.requeue(cpa, n);
        }
        requeued
    }

    /// Runs the CPA+ algorithm until the waitlist is empty, a target is reached, or it is
    /// interrupted.
    pub fn run(&mut self, cpa: &C, cancel: &Cancel, limits: &Limits) -> Outcome {
        let mut succ = Vec::new();
        let mut tick: u32 = 0;
        while let Some(id) = self.waitlist.pop() {
            {
                let n = self.arg.node(id);
                if !n.alive || n.covered_by.is_some() || n.expanded {
                    continue;
                }
            }
            tick = tick.wrapping_add(1);
            if tick.is_multiple_of(32) {
                if let Err(i) = cancel.check() {
                    self.requeue(cpa, id);
                    return Outcome::Interrupted(i);
                }
            }
            if tick.is_multiple_of(4096) && resident_memory().is_some_and(|m| m > limits.max_memory) {
                self.requeue(cpa, id);
                return Outcome::Interrupted(Interrupt::Limit(Limit::Memory { mb: limits.max_memory >> 20 }));
            }
            if self.arg.live() >= limits.max_states {
                self.requeue(cpa, id);
                return Outcome::Interrupted(Interrupt::Limit(Limit::States(limits.max_states)));
            }
            self.arg.node_mut(id).expanded = true;
            self.stats.expanded += 1;
            let (state, prec) = {
                let n = self.arg.node(id);
                (n.state.clone(), n.prec.clone())
            };
            succ.clear();
            cpa.transfer(&state, &prec, &mut succ);
            let count = succ.len();
            for (i, (s, op)) in succ.drain(..).enumerate() {
                let (s, p) = match cpa.adjust_precision(s, prec.clone()) {
                    PrecisionStep::Continue(s, p) => (s, p),
                    PrecisionStep::Bottom => continue,
                    PrecisionStep::Break(s, p, why) => {
                        let key = cpa.partition(&s);
                        let n = self.arg.add(s, p, key, vec![(id, op)]);
                        self.arg.reach(n);
                        self.requeue(cpa, id);
                        return Outcome::Interrupted(Interrupt::Limit(why));
                    }
                };
                let key = cpa.partition(&s);
                if cpa.is_target(&s) {
                    let t = self.arg.add(s, p, key, vec![(id, op)]);
                    self.arg.reach(t);
                    if i + 1 < count {
                        // Successors after this one were not handled: expand `id` again later.
                        self.requeue(cpa, id);
                    }
                    return Outcome::Target(t);
                }
                // merge
                let reached: Vec<ArgId> = self.arg.partition(&key).to_vec();
                for r in reached {
                    if !self.arg.node(r).alive {
                        continue;
                    }
                    let Some(m) = cpa.merge(&s, &self.arg.node(r).state, &p) else { continue };
                    self.stats.merged += 1;
                    let mut parents = self.arg.node(r).parents.clone();
                    parents.push((id, op));
                    let nm_parents: Vec<ArgId> = parents.iter().map(|(p, _)| *p).collect();
                    let prio = cpa.priority(&m);
                    let nm = self.arg.add(m, p.clone(), key.clone(), parents);
                    // The merged node replaces r: r's successors are recomputed from it; r's
                    // parents need no new expansion because the merged state covers r.
                    let (uncovered, surviving) = self.arg.remove_subtree(r);
                    for u in uncovered {
                        self.requeue(cpa, u);
                    }
                    for sp in surviving {
                        if !nm_parents.contains(&sp) {
                            self.requeue(cpa, sp);
                        }
                    }
                    let alive: Vec<(ArgId, crate::core::Op)> =
                        self.arg.node(nm).parents.iter().copied().filter(|(p, _)| self.arg.node(*p).alive).collect();
                    self.arg.node_mut(nm).parents = alive;
                    self.arg.reach(nm);
                    self.waitlist.push(nm, prio);
                }
                if !self.arg.node(id).alive {
                    // A merge replaced an ancestor of `id`; its successors come from the merged node.
                    break;
                }
                // stop
                let covering = {
                    let part: Vec<(ArgId, &C::State)> = self.arg.partition(&key).iter().map(|&r| (r, &self.arg.node(r).state)).collect();
                    cpa.stop(&s, &part, &p)
                };
                let prio = cpa.priority(&s);
                let n = self.arg.add(s, p, key, vec![(id, op)]);
                match covering {
                    Some(by) => {
                        self.stats.covered += 1;
                        self.arg.cover(n, by);
                    }
                    None => {
                        self.arg.reach(n);
                        self.waitlist.push(n, prio);
                    }
                }
            }
        }
        Outcome::Exhausted
    }
}
