//! Local policy iteration (seed 004 §3, Alg. 2 and 3, "Formulation as a CPA"; §4
//! optimisations, unrolling and congruence) over the abstraction points of a program.
//!
//! The reached set holds one abstracted state per abstraction point. Processing a point takes
//! its state through its block (the transfer relation on intermediate states, `block.rs`) to
//! every exit point and, per exit:
//! - *stop*: if no successor exceeds the exit's reached state in any template or parity fact
//!   (one satisfiability query), nothing changes;
//! - *abstraction* (local policy improvement): one `Optimize` query per template of the exit,
//!   with the "strictly better" lemma when the exit has a state; the markers at the optimum
//!   give the policy, the start state is the backpointer;
//! - *merge*: the join with the reached state (per template the larger bound with its
//!   policy); when the merge closes a loop (the block's start is in the exit's strongly
//!   connected component), *local value determination* over the policies reachable by
//!   backpointers inside that component maximises each template bound of the exit at once.
//!
//! There is no widening: every change of a bound selects another policy, and there are
//! finitely many (the paper's termination argument). Limits (iterations, the deadline) stop
//! the iteration early; the states are then only candidates, which the independent check
//! (`check.rs`) weakens to an inductive annotation or rejects.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, OnceLock};

use crate::analyses::template::block::{self, BlockGraph, Blocks, PointKey, WalkCtx};
use crate::analyses::template::loops::ProgramLoops;
use crate::analyses::template::optimize::{AbsOutcome, LpiSmt, MaxOutcome, VdBound, VdInstance, VdProblem};
use crate::analyses::template::state::{AbsId, Abstracted, Conj, Entry, PointId, Policy};
use crate::analyses::template::templates::{self, Families, LinearForm};
use crate::analyses::template::Step;
use crate::cfa::{NodeId, Program};
use crate::core::Cancel;
use crate::ir::{FuncId, VarId};

/// Order of the worklist: deeper loop nesting first (inner loops stabilise before outer
/// ones, an approximation of the recursive strategy over the weak topological order), then
/// program order along the call stack, then fewer unrolled iterations.
type Prio = (Reverse<u32>, Vec<u32>, Vec<u8>);

/// The templates of a point and the variables whose parity it tracks.
type PointTemplates = (Arc<Vec<LinearForm>>, Arc<Vec<VarId>>);

pub struct Point {
    pub key: PointKey,
    pub templates: Arc<Vec<LinearForm>>,
    /// Variables whose parity the congruence component tracks.
    pub parity_vars: Arc<Vec<VarId>>,
    pub state: Option<AbsId>,
    prio: Prio,
    pub block: Option<Arc<BlockGraph>>,
}

/// Counters of one run.
#[derive(Clone, Debug, Default)]
pub struct LpiStats {
    /// Points taken from the worklist.
    pub iterations: u64,
    /// Abstractions that ran optimisation queries.
    pub abstractions: u64,
    /// Successors the stop operator found covered.
    pub covered: u64,
    pub value_determinations: u64,
}

/// Program facts shared by every configuration.
pub struct Facts {
    pub loops: ProgramLoops,
    pub recursive: Vec<bool>,
    pub mods: Arc<Vec<BTreeSet<VarId>>>,
    /// Linear forms of each function's source, computed on first use (like the loops).
    sources: Vec<OnceLock<BTreeSet<LinearForm>>>,
}

impl Facts {
    pub fn new(p: &Program) -> Facts {
        let rec = p.recursive_functions();
        Facts {
            loops: ProgramLoops::new(p),
            recursive: p.func_ids().map(|f| rec.binary_search(&f).is_ok()).collect(),
            mods: Arc::new(block::modified_by(p)),
            sources: p.func_ids().map(|_| OnceLock::new()).collect(),
        }
    }

    pub fn sources(&self, p: &Program, f: FuncId) -> &BTreeSet<LinearForm> {
        self.sources[f.0 as usize].get_or_init(|| templates::source_forms(p, p.cfa(f)))
    }
}

pub struct Lpi<'p> {
    pub p: &'p Program,
    pub facts: &'p Facts,
    pub step: Step,
    pub blocks: Blocks,
    pub max_call_depth: usize,
    pub max_block_nodes: usize,
    cancel: Cancel,
    pub points: Vec<Point>,
    ids: HashMap<PointKey, PointId>,
    pub states: Vec<Abstracted>,
    succ: BTreeMap<PointId, BTreeSet<PointId>>,
    pred: BTreeMap<PointId, BTreeSet<PointId>>,
    worklist: BTreeSet<(Prio, PointId)>,
    pub smt: LpiSmt<'p>,
    pub stats: LpiStats,
    template_cache: HashMap<(FuncId, NodeId), PointTemplates>,
    independent: HashMap<(AbsId, usize), bool>,
}

impl<'p> Lpi<'p> {
    pub fn new(p: &'p Program, facts: &'p Facts, step: Step, blocks: Blocks, cancel: Cancel, query_ms: u64) -> Self {
        let smt = LpiSmt::new(p, facts.mods.clone(), cancel.clone(), query_ms);
        let mut lpi = Lpi {
            p,
            facts,
            step,
            blocks,
            max_call_depth: 64,
            max_block_nodes: 200_000,
            cancel,
            points: Vec::new(),
            ids: HashMap::new(),
            states: Vec::new(),
            succ: BTreeMap::new(),
            pred: BTreeMap::new(),
            worklist: BTreeSet::new(),
            smt,
            stats: LpiStats::default(),
            template_cache: HashMap::new(),
            independent: HashMap::new(),
        };
        // The initial state ⊤ at the program's entry (no templates: nothing is known).
        let entry = lpi.intern(block::entry_point(p));
        lpi.points[entry as usize].templates = Arc::new(Vec::new());
        lpi.points[entry as usize].parity_vars = Arc::new(Vec::new());
        let id = lpi.push_state(Abstracted { point: entry, entries: Vec::new(), parity: Vec::new() });
        lpi.points[entry as usize].state = Some(id);
        lpi.worklist.insert((lpi.points[entry as usize].prio.clone(), entry));
        lpi
    }

    fn push_state(&mut self, s: Abstracted) -> AbsId {
        self.states.push(s);
        (self.states.len() - 1) as AbsId
    }

    fn walk_ctx(&self) -> WalkCtx<'_> {
        WalkCtx {
            program: self.p,
            loops: &self.facts.loops,
            recursive: &self.facts.recursive,
            blocks: self.blocks,
            unroll_depth: self.step.unroll,
            max_call_depth: self.max_call_depth,
            max_nodes: self.max_block_nodes,
        }
    }

    /// The templates of a CFA location under this step's families.
    fn templates_at(&mut self, func: FuncId, node: NodeId) -> PointTemplates {
        if let Some(t) = self.template_cache.get(&(func, node)) {
            return t.clone();
        }
        let l = self.facts.loops.of(self.p, func);
        let vars: Vec<VarId> = l.live[node.0 as usize].iter().copied().filter(|&v| templates::templatable(self.p, v)).collect();
        let mut written = BTreeSet::new();
        for (h, body) in &l.body {
            if body[node.0 as usize] {
                if let Some(w) = l.written.get(h) {
                    written.extend(w.iter().copied());
                }
            }
        }
        let fam: Families = self.step.families;
        let ts = templates::synthesize(self.p, &fam, &vars, &written, self.facts.sources(self.p, func));
        let out = (Arc::new(ts), Arc::new(vars));
        self.template_cache.insert((func, node), out.clone());
        out
    }

    fn prio(&self, key: &PointKey) -> Prio {
        let p = self.p;
        let mut depth = 0;
        let mut path = Vec::new();
        let sites: Vec<_> = key.stack.sites().collect();
        for &(f, e) in sites.iter().rev() {
            let src = p.cfa(f).edge(e).src;
            depth += self.facts.loops.of(p, f).depth[src.0 as usize];
            path.push(p.cfa(f).node(src).rpo);
        }
        depth += self.facts.loops.of(p, key.func).depth[key.node.0 as usize];
        path.push(p.cfa(key.func).node(key.node).rpo);
        (Reverse(depth), path, key.unroll.iter().map(|u| u.2).collect())
    }

    /// The point of a key, created on first sight.
    pub fn intern(&mut self, key: PointKey) -> PointId {
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let (templates, parity_vars) = self.templates_at(key.func, key.node);
        let prio = self.prio(&key);
        let id = self.points.len() as PointId;
        self.ids.insert(key.clone(), id);
        self.points.push(Point { key, templates, parity_vars, state: None, prio, block: None });
        id
    }

    /// The block starting at a point, built on first use.
    pub fn block(&mut self, pid: PointId) -> Arc<BlockGraph> {
        if let Some(b) = &self.points[pid as usize].block {
            return b.clone();
        }
        let key = self.points[pid as usize].key.clone();
        let g = Arc::new(block::build(&self.walk_ctx(), &key));
        self.points[pid as usize].block = Some(g.clone());
        g
    }

    /// The constraints of an abstracted state.
    pub fn conj_of(&self, s: &Abstracted) -> Vec<Conj> {
        let ts = &self.points[s.point as usize].templates;
        let mut out: Vec<Conj> =
            s.entries.iter().enumerate().filter_map(|(k, e)| e.as_ref().map(|e| Conj::Le(ts[k].clone(), e.bound))).collect();
        out.extend(s.parity.iter().map(|&(v, r)| Conj::Parity(v, r)));
        out
    }

    /// Runs the iteration until the worklist is empty; `Err` with the reason if a limit or the
    /// deadline stopped it first.
    pub fn run(&mut self, max_iterations: u64) -> Result<(), String> {
        while let Some((_, pid)) = self.worklist.pop_first() {
            if let Err(i) = self.cancel.check() {
                return Err(i.describe());
            }
            if self.stats.iterations >= max_iterations {
                return Err(format!("more than {} iterations of policy iteration", max_iterations));
            }
            self.stats.iterations += 1;
            self.process(pid)?;
        }
        Ok(())
    }

    fn process(&mut self, pid: PointId) -> Result<(), String> {
        let Some(a_id) = self.points[pid as usize].state else { return Ok(()) };
        let g = self.block(pid);
        if g.truncated {
            return Err("a loop-free region is too large to encode".into());
        }
        let a = self.states[a_id as usize].clone();
        let pre = self.conj_of(&a);
        for (qkey, exit) in g.exits.clone() {
            let q = self.intern(qkey);
            self.succ.entry(pid).or_default().insert(q);
            self.pred.entry(q).or_default().insert(pid);
            self.abstract_edge(pid, a_id, &pre, &g, exit, q);
            if self.cancel.check().is_err() {
                return Ok(());
            }
        }
        Ok(())
    }

    fn abstract_edge(&mut self, pid: PointId, a_id: AbsId, pre: &[Conj], g: &Arc<BlockGraph>, exit: u32, q: PointId) {
        let tq = self.points[q as usize].templates.clone();
        let reached: Option<Abstracted> = self.points[q as usize].state.map(|b| self.states[b as usize].clone());
        let reached_conj = reached.as_ref().map(|b| self.conj_of(b));
        // Syntactic skip (§4): a template none of whose variables the block reads or writes
        // keeps the start state's bound (when the start point has that template).
        let touched: Option<BTreeSet<VarId>> = if self.step.syntactic_skip {
            let mut t = BTreeSet::new();
            for e in &g.edges {
                block::op_vars(self.p, &self.facts.mods, e.op, &mut t);
            }
            Some(t)
        } else {
            None
        };
        let tp = self.points[pid as usize].templates.clone();
        let a = self.states[a_id as usize].clone();
        let mut skip = Vec::with_capacity(tq.len());
        let mut skipped_entry: Vec<Option<Option<Entry>>> = Vec::with_capacity(tq.len());
        let mut objectives = Vec::with_capacity(tq.len());
        for (k, t) in tq.iter().enumerate() {
            let lower = reached.as_ref().map(|r| r.entries[k].as_ref().map(|e| e.bound));
            objectives.push((t.clone(), lower.flatten()));
            if let Some(None) = lower {
                // Unbounded in the reached state: nothing to improve.
                skip.push(true);
                skipped_entry.push(Some(None));
                continue;
            }
            if let Some(touched) = &touched {
                if t.vars().all(|v| !touched.contains(&v)) {
                    if let Some(j) = tp.iter().position(|x| x == t) {
                        let e =
                            a.entries.get(j).cloned().flatten().map(|e| Entry { bound: e.bound, policy: None, backpointer: Some(a_id) });
                        skip.push(true);
                        skipped_entry.push(Some(e));
                        continue;
                    }
                }
            }
            skip.push(false);
            skipped_entry.push(None);
        }
        let parity_vars: Vec<VarId> = if self.step.congruence {
            match &reached {
                Some(r) => r.parity.iter().map(|&(v, _)| v).collect(),
                None => self.points[q as usize].parity_vars.to_vec(),
            }
        } else {
            Vec::new()
        };
        let out = self.smt.abstraction(pid, g, pre, exit, reached_conj.as_deref(), &objectives, &skip, &parity_vars);
        let (outcomes, parity) = match out {
            AbsOutcome::Bottom => return,
            AbsOutcome::Covered => {
                self.stats.covered += 1;
                return;
            }
            AbsOutcome::Abstracted { outcomes, parity } => (outcomes, parity),
        };
        self.stats.abstractions += 1;
        let mut entries = Vec::with_capacity(tq.len());
        for (k, o) in outcomes.into_iter().enumerate() {
            let e = match o {
                None => skipped_entry[k].clone().flatten(),
                Some(MaxOutcome::Bound { value, path }) => Some(Entry {
                    bound: value,
                    policy: path.map(|path| Policy { from_point: pid, exit_node: exit, path: Arc::new(path) }),
                    backpointer: Some(a_id),
                }),
                Some(MaxOutcome::NotBetter) => reached.as_ref().and_then(|r| r.entries[k].clone()),
                // Unbounded, no answer, or an inconsistent answer: no bound (sound).
                Some(MaxOutcome::Unbounded) | Some(MaxOutcome::GaveUp(_)) | Some(MaxOutcome::Infeasible) => None,
            };
            entries.push(e);
        }
        let new = Abstracted { point: q, entries, parity };
        let merged = match &reached {
            None => new,
            Some(r) => {
                let (j, updated) = r.join(&new);
                if updated.is_empty() && j.parity == r.parity {
                    return;
                }
                if !updated.is_empty() && self.in_scc(pid, q) {
                    self.value_determination(q, j)
                } else {
                    j
                }
            }
        };
        let id = self.push_state(merged);
        self.points[q as usize].state = Some(id);
        self.worklist.insert((self.points[q as usize].prio.clone(), q));
    }

    fn reach(&self, from: PointId, edges: &BTreeMap<PointId, BTreeSet<PointId>>) -> BTreeSet<PointId> {
        let mut seen = BTreeSet::new();
        let mut queue = VecDeque::from([from]);
        while let Some(x) = queue.pop_front() {
            if !seen.insert(x) {
                continue;
            }
            if let Some(next) = edges.get(&x) {
                queue.extend(next.iter().copied());
            }
        }
        seen
    }

    /// The strongly connected component of `q` in the points discovered so far.
    fn scc(&self, q: PointId) -> BTreeSet<PointId> {
        let fwd = self.reach(q, &self.succ);
        let bwd = self.reach(q, &self.pred);
        fwd.intersection(&bwd).copied().collect()
    }

    fn in_scc(&self, pid: PointId, q: PointId) -> bool {
        self.reach(q, &self.succ).contains(&pid)
    }

    /// Whether an entry's policy is input-independent (§4), cached.
    fn is_independent(&mut self, abs: AbsId, k: usize) -> bool {
        if let Some(&b) = self.independent.get(&(abs, k)) {
            return b;
        }
        let s = &self.states[abs as usize];
        let Some(Entry { bound, policy: Some(pol), .. }) = s.entries[k].clone() else { return false };
        let form = self.points[s.point as usize].templates[k].clone();
        let g = self.block(pol.from_point);
        let r = self.smt.input_independent(pol.from_point, &g, pol.exit_node, &pol.path, &form, bound);
        self.independent.insert((abs, k), r);
        r
    }

    /// Local value determination (Alg. 3) for the merged state `st` at `q`: the policies of
    /// the influencing states become one problem whose unknowns are their bounds; each
    /// bound of `st` that a policy inside the component gives is maximised.
    fn value_determination(&mut self, q: PointId, st: Abstracted) -> Abstracted {
        let scc = self.scc(q);
        let inf = self.influencing(q, &st, &scc);
        let (var, fixed) = inf.unknowns();
        let mut objectives = Vec::new();
        let mut objective_k = Vec::new();
        for (k, e) in st.entries.iter().enumerate() {
            if e.is_some() && inf.is_instance(q, k) {
                objectives.push(var[&(q, k)]);
                objective_k.push(k);
            }
        }
        if objectives.is_empty() {
            return st;
        }
        let policies = self.vd_policies(&inf, &var);
        let problem = VdProblem { n_vars: var.len(), fixed, instances: policies.iter().map(VdPolicy::instance).collect(), objectives };
        let results = self.smt.value_determination(&problem);
        self.stats.value_determinations += 1;
        let mut out = st;
        for (k, r) in objective_k.into_iter().zip(results) {
            match r {
                MaxOutcome::Bound { value, .. } => {
                    if let Some(e) = out.entries[k].as_mut() {
                        e.bound = e.bound.max(value);
                    }
                }
                // The policy's fixpoint is unbounded, or no answer: drop the bound (sound).
                MaxOutcome::Unbounded | MaxOutcome::GaveUp(_) => out.entries[k] = None,
                MaxOutcome::NotBetter | MaxOutcome::Infeasible => {}
            }
        }
        out
    }

    /// The influencing states of `st` at `q`: `st` itself, and the current states of the
    /// points inside the component `scc` that policies point back to (input-independent
    /// policies are constants: their backpointers are not followed).
    fn influencing(&mut self, q: PointId, st: &Abstracted, scc: &BTreeSet<PointId>) -> Influence {
        let mut inf = Influence { states: BTreeMap::new(), instance: BTreeMap::new() };
        inf.states.insert(q, (None, st.clone()));
        let mut queue = VecDeque::from([q]);
        while let Some(n) = queue.pop_front() {
            let (abs, s) = inf.states[&n].clone();
            for (k, e) in s.entries.iter().enumerate() {
                let Some(e) = e else { continue };
                let (Some(pol), Some(bp)) = (&e.policy, e.backpointer) else {
                    inf.instance.insert((n, k), false);
                    continue;
                };
                let n0 = self.states[bp as usize].point;
                if !scc.contains(&n0) || pol.from_point != n0 {
                    inf.instance.insert((n, k), false);
                    continue;
                }
                let indep = match abs {
                    Some(id) => self.is_independent(id, k),
                    None => {
                        let tmp = self.push_state(s.clone());
                        self.is_independent(tmp, k)
                    }
                };
                inf.instance.insert((n, k), !indep);
                if !indep && !inf.states.contains_key(&n0) {
                    if let Some(cur) = self.points[n0 as usize].state {
                        inf.states.insert(n0, (Some(cur), self.states[cur as usize].clone()));
                        queue.push_back(n0);
                    }
                }
            }
        }
        inf
    }

    /// The instances of value determination: the policy paths of the instance entries, with
    /// the constraints on their inputs (the backpointer's templates, as unknowns).
    fn vd_policies(&mut self, inf: &Influence, var: &Unknowns) -> Vec<VdPolicy> {
        let mut out: Vec<VdPolicy> = Vec::new();
        let entries: Vec<(PointId, usize, Entry)> = inf
            .states
            .iter()
            .flat_map(|(&n, (_, s))| s.entries.iter().enumerate().filter_map(move |(k, e)| e.clone().map(|e| (n, k, e))))
            .collect();
        for (n, k, e) in entries {
            if !inf.is_instance(n, k) {
                continue;
            }
            let (Some(pol), Some(bp)) = (e.policy.clone(), e.backpointer) else { continue };
            let n0 = self.states[bp as usize].point;
            let g = self.block(pol.from_point);
            let mut touched = BTreeSet::new();
            for &ed in pol.path.iter() {
                block::op_vars(self.p, &self.facts.mods, g.edges[ed as usize].op, &mut touched);
            }
            let t0s = self.points[n0 as usize].templates.clone();
            let cur0 = &inf.states[&n0].1;
            let mut inputs = Vec::new();
            for (j, t0) in t0s.iter().enumerate() {
                // The paper's optimisation: an input template none of whose variables the
                // policy mentions constrains nothing.
                if !t0.vars().any(|v| touched.contains(&v)) {
                    continue;
                }
                if self.states[bp as usize].entries.get(j).is_none_or(|x| x.is_none()) {
                    continue;
                }
                if let Some(&i) = var.get(&(n0, j)) {
                    if cur0.entries[j].is_some() {
                        inputs.push((t0.clone(), VdBound::Var(i)));
                    }
                }
            }
            let parity = cur0.parity.clone();
            out.push(VdPolicy {
                block: g,
                path: pol.path.clone(),
                out_var: var[&(n, k)],
                out: self.points[n as usize].templates[k].clone(),
                inputs,
                parity,
            });
        }
        out
    }
}

/// The unknowns of value determination: one index per (point, template).
type Unknowns = BTreeMap<(PointId, usize), usize>;

/// The states influencing a value determination, by point (with their ids, `None` for the
/// merged state), and per (point, template) whether the entry is an instance (a policy inside
/// the component).
struct Influence {
    states: BTreeMap<PointId, (Option<AbsId>, Abstracted)>,
    instance: BTreeMap<(PointId, usize), bool>,
}

impl Influence {
    fn is_instance(&self, n: PointId, k: usize) -> bool {
        self.instance.get(&(n, k)).copied().unwrap_or(false)
    }

    /// The unknowns: one per bounded entry of an influencing state; those that are not
    /// instances are fixed to their bounds.
    fn unknowns(&self) -> (Unknowns, Vec<(usize, i128)>) {
        let mut var: Unknowns = BTreeMap::new();
        let mut fixed = Vec::new();
        for (&n, (_, s)) in &self.states {
            for (k, e) in s.entries.iter().enumerate() {
                if let Some(e) = e {
                    let i = var.len();
                    var.insert((n, k), i);
                    if !self.is_instance(n, k) {
                        fixed.push((i, e.bound));
                    }
                }
            }
        }
        (var, fixed)
    }
}

/// One policy of value determination with what it needs (owned; `VdInstance` borrows it).
struct VdPolicy {
    block: Arc<BlockGraph>,
    path: Arc<Vec<u32>>,
    out_var: usize,
    out: LinearForm,
    inputs: Vec<(LinearForm, VdBound)>,
    parity: Vec<(VarId, u8)>,
}

impl VdPolicy {
    fn instance(&self) -> VdInstance<'_> {
        VdInstance {
            block: &self.block,
            path: &self.path,
            out_var: self.out_var,
            out: &self.out,
            inputs: self.inputs.iter().map(|(f, b)| (f, b.clone())).collect(),
            parity: &self.parity,
        }
    }
}
