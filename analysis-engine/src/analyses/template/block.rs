//! The transfer relation of the template analysis on intermediate states (seed 004 §3,
//! "Formulation as a CPA"): from an abstracted state at an abstraction point, symbolic
//! execution through the loop-free region up to the next abstraction points. Intermediate
//! states that share their starting abstracted state are merged by disjunction, so the region
//! is one block: a DAG of the positions (call stack × CFA node) it traverses, with the
//! operations on its edges (adjustable block encoding: abstraction points are loop heads, or
//! more nodes when configured). Calls are entered (inlined by the call stack) unless the
//! callee is recursive or too deep, in which case its effect is havocked.
//!
//! Unrolling (seed 004 §4): an abstraction point also records, for each enclosing loop, how
//! many iterations were taken (up to the unrolling depth), so that the first iterations of a
//! loop get abstract states of their own.
//!
//! This module knows nothing of Z3: a block is plain data that `optimize` encodes.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::analyses::callstack::CallStack;
use crate::analyses::template::loops::ProgramLoops;
use crate::cfa::{EdgeId, EdgeKind, NodeId, Program};
use crate::core::Op;
use crate::ir::{FuncId, LValue, Stmt, VarId};
use crate::properties::PropertyKey;

/// Where abstraction happens.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Blocks {
    /// At loop heads only (the paper's choice): loop-free code is encoded precisely.
    LoopHeads,
    /// At every node with more than one incoming edge as well (a convex abstraction at each
    /// join, as in classic abstract interpretation; for comparison).
    Joins,
}

/// An abstraction point: a loop head (or other cut node) in a calling context, with the
/// iteration counts of the enclosing loops when unrolling.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PointKey {
    pub stack: CallStack,
    pub func: FuncId,
    pub node: NodeId,
    /// `(frame depth, loop head, iterations)` of the loops containing the point, outermost
    /// first; iterations saturate at the unrolling depth.
    pub unroll: Vec<(u32, NodeId, u8)>,
}

/// An operation of a block.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BOp {
    /// An edge, a call into a callee or a return from it.
    Op(Op),
    /// A call that is not entered: its results and everything the callee may modify become
    /// arbitrary.
    Summary(FuncId, EdgeId),
}

#[derive(Clone, Debug)]
pub struct BNode {
    pub stack: CallStack,
    pub func: FuncId,
    pub node: NodeId,
    pub inc: Vec<u32>,
    pub out: Vec<u32>,
}

#[derive(Clone, Debug)]
pub struct BEdge {
    pub src: u32,
    pub dst: u32,
    pub op: BOp,
}

/// A block: node 0 is the start; nodes are in topological order.
#[derive(Clone, Debug)]
pub struct BlockGraph {
    pub nodes: Vec<BNode>,
    pub edges: Vec<BEdge>,
    /// Abstraction points the block reaches, with the node that stands for each.
    pub exits: Vec<(PointKey, u32)>,
    /// Property targets inside the block.
    pub targets: Vec<(PropertyKey, u32)>,
    /// Callees whose calls were havocked rather than entered.
    pub summarized: Vec<FuncId>,
    /// Constructs the engine cannot over-approximate, if the block contains any.
    pub unsupported: Vec<String>,
    /// The block exceeded the size limit and was cut short (it must not be trusted).
    pub truncated: bool,
}

impl BlockGraph {
    /// The edges of a path from the start to `node` following `choose` at each node.
    pub fn path_to(&self, node: u32, mut choose: impl FnMut(u32) -> bool) -> Option<Vec<u32>> {
        let mut path = Vec::new();
        let mut n = node;
        while n != 0 {
            let e = self.nodes[n as usize].inc.iter().copied().find(|&e| choose(e))?;
            path.push(e);
            n = self.edges[e as usize].src;
        }
        path.reverse();
        Some(path)
    }
}

/// What the walk needs to know about the program.
pub struct WalkCtx<'a> {
    pub program: &'a Program,
    pub loops: &'a ProgramLoops,
    pub recursive: &'a [bool],
    pub blocks: Blocks,
    pub unroll_depth: u8,
    pub max_call_depth: usize,
    pub max_nodes: usize,
}

/// A position of the walk.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Pos {
    stack: CallStack,
    func: FuncId,
    node: NodeId,
    unroll: Vec<(u32, NodeId, u8)>,
}

impl<'a> WalkCtx<'a> {
    fn is_cut(&self, func: FuncId, node: NodeId) -> bool {
        let cfa = self.program.cfa(func);
        let n = cfa.node(node);
        n.loop_head || (self.blocks == Blocks::Joins && n.inc.len() > 1)
    }

    /// Keeps the unrolling entries of the loops that contain a position of frame `depth`.
    fn filter(&self, unroll: &mut Vec<(u32, NodeId, u8)>, depth: u32, func: FuncId, node: NodeId) {
        let l = self.loops.of(self.program, func);
        unroll.retain(|&(d, h, _)| d < depth || (d == depth && l.in_loop(h, node)));
    }

    /// The abstraction point a position stands for.
    fn point(&self, pos: &Pos) -> PointKey {
        let depth = pos.stack.depth() as u32;
        let mut unroll = pos.unroll.clone();
        let cfa = self.program.cfa(pos.func);
        if cfa.node(pos.node).loop_head {
            match unroll.iter_mut().find(|(d, h, _)| *d == depth && *h == pos.node) {
                Some(entry) => entry.2 = (entry.2 + 1).min(self.unroll_depth),
                None => unroll.push((depth, pos.node, 0)),
            }
        }
        PointKey { stack: pos.stack.clone(), func: pos.func, node: pos.node, unroll }
    }
}

/// The program's initial abstraction point: the start function's entry.
pub fn entry_point(p: &Program) -> PointKey {
    PointKey { stack: CallStack::default(), func: p.start, node: p.cfa(p.start).entry, unroll: Vec::new() }
}

/// Walks the loop-free region from `start` up to the next abstraction points.
pub fn build(ctx: &WalkCtx, start: &PointKey) -> BlockGraph {
    let start_pos = Pos { stack: start.stack.clone(), func: start.func, node: start.node, unroll: start.unroll.clone() };
    let mut walk = Walk {
        ctx,
        ids: HashMap::new(),
        pos_of: Vec::new(),
        out_edges: Vec::new(),
        is_exit: Vec::new(),
        summarized: Vec::new(),
        unsupported: Vec::new(),
    };
    match walk.discover(start_pos) {
        Some(post) => walk.into_graph(post),
        None => BlockGraph {
            nodes: Vec::new(),
            edges: Vec::new(),
            exits: Vec::new(),
            targets: Vec::new(),
            summarized: walk.summarized,
            unsupported: walk.unsupported,
            truncated: true,
        },
    }
}

/// A position on the walk's stack: its id, the next successor to follow, the successors.
type Frame = (u32, usize, Vec<(BOp, Pos)>);

/// The positions and edges of a block as the depth-first walk discovers them.
struct Walk<'c, 'a> {
    ctx: &'c WalkCtx<'a>,
    ids: HashMap<Pos, u32>,
    pos_of: Vec<Pos>,
    out_edges: Vec<Vec<(BOp, u32)>>,
    is_exit: Vec<bool>,
    summarized: Vec<FuncId>,
    unsupported: Vec<String>,
}

impl Walk<'_, '_> {
    /// The id of a position, and whether it is new.
    fn intern(&mut self, pos: Pos, exit: bool) -> (u32, bool) {
        if let Some(&i) = self.ids.get(&pos) {
            return (i, false);
        }
        let i = self.pos_of.len() as u32;
        self.ids.insert(pos.clone(), i);
        self.pos_of.push(pos);
        self.out_edges.push(Vec::new());
        self.is_exit.push(exit);
        (i, true)
    }

    /// Discovers positions and edges depth-first from the start (id 0); returns the
    /// post-order, or `None` if the block exceeds the size limit.
    fn discover(&mut self, start_pos: Pos) -> Option<Vec<u32>> {
        // The start is never merged with a later arrival at the same position (that arrival
        // is an exit: the loop's back edge).
        self.pos_of.push(start_pos.clone());
        self.out_edges.push(Vec::new());
        self.is_exit.push(false);
        let mut post: Vec<u32> = Vec::new();
        let mut stack: Vec<Frame> = Vec::new();
        let first = self.succ(&start_pos);
        stack.push((0, 0, first));
        while let Some((id, i, succs)) = stack.last_mut() {
            if *i < succs.len() {
                let (op, next) = succs[*i].clone();
                *i += 1;
                let src = *id;
                let exit = self.ctx.is_cut(next.func, next.node);
                let (nid, fresh) = self.intern(next.clone(), exit);
                self.out_edges[src as usize].push((op, nid));
                if self.pos_of.len() > self.ctx.max_nodes {
                    return None;
                }
                if fresh && !exit {
                    let s = self.succ(&next);
                    stack.push((nid, 0, s));
                } else if fresh {
                    post.push(nid);
                }
            } else {
                post.push(*id);
                stack.pop();
            }
        }
        Some(post)
    }

    /// The operations out of a position with the positions they lead to: a return to the
    /// caller at a callee's exit, a call entered or havocked, an edge otherwise.
    fn succ(&mut self, pos: &Pos) -> Vec<(BOp, Pos)> {
        let (p, ctx) = (self.ctx.program, self.ctx);
        let cfa = p.cfa(pos.func);
        let depth = pos.stack.depth() as u32;
        let mut out = Vec::new();
        if pos.node == cfa.exit {
            if let Some((caller, eid)) = pos.stack.top() {
                let dst = p.cfa(caller).edge(eid).dst;
                let mut unroll: Vec<(u32, NodeId, u8)> = pos.unroll.iter().copied().filter(|&(d, _, _)| d < depth).collect();
                ctx.filter(&mut unroll, depth - 1, caller, dst);
                out.push((BOp::Op(Op::Return(caller, eid)), Pos { stack: pos.stack.pop(), func: caller, node: dst, unroll }));
            }
            return out;
        }
        if cfa.node(pos.node).terminal {
            return out;
        }
        for (eid, e) in cfa.out_edges(pos.node) {
            match &e.kind {
                EdgeKind::CallSummary(c) => out.push(self.call(pos, eid, c.callee, e.dst)),
                kind => {
                    if let EdgeKind::Statement(crate::ir::Stmt::Unsupported(what)) = kind {
                        if !self.unsupported.contains(what) {
                            self.unsupported.push(what.clone());
                        }
                    }
                    let mut unroll = pos.unroll.clone();
                    ctx.filter(&mut unroll, depth, pos.func, e.dst);
                    out.push((BOp::Op(Op::Edge(pos.func, eid)), Pos { stack: pos.stack.clone(), func: pos.func, node: e.dst, unroll }));
                }
            }
        }
        out
    }

    /// The call edge `eid` (to `callee`, returning to `dst`) from `pos`: entered, unless the
    /// callee is recursive, active or too deep, in which case its effect is havocked.
    fn call(&mut self, pos: &Pos, eid: EdgeId, callee: FuncId, dst: NodeId) -> (BOp, Pos) {
        let ctx = self.ctx;
        let active = callee == pos.func || pos.stack.sites().any(|(f, _)| f == callee);
        if ctx.recursive[callee.0 as usize] || active || pos.stack.depth() >= ctx.max_call_depth {
            if !self.summarized.contains(&callee) {
                self.summarized.push(callee);
            }
            let mut unroll = pos.unroll.clone();
            ctx.filter(&mut unroll, pos.stack.depth() as u32, pos.func, dst);
            (BOp::Summary(pos.func, eid), Pos { stack: pos.stack.clone(), func: pos.func, node: dst, unroll })
        } else {
            let stack = pos.stack.push((pos.func, eid));
            (BOp::Op(Op::Call(pos.func, eid)), Pos { stack, func: callee, node: ctx.program.cfa(callee).entry, unroll: pos.unroll.clone() })
        }
    }

    /// The block in topological order (reverse post-order, the start first), with its exits
    /// and property targets.
    fn into_graph(self, mut post: Vec<u32>) -> BlockGraph {
        let p = self.ctx.program;
        post.reverse();
        let mut index = vec![u32::MAX; self.pos_of.len()];
        for (k, &old) in post.iter().enumerate() {
            index[old as usize] = k as u32;
        }
        let mut nodes: Vec<BNode> = post
            .iter()
            .map(|&old| {
                let pos = &self.pos_of[old as usize];
                BNode { stack: pos.stack.clone(), func: pos.func, node: pos.node, inc: Vec::new(), out: Vec::new() }
            })
            .collect();
        let mut edges = Vec::new();
        for &old in &post {
            for &(op, dst) in &self.out_edges[old as usize] {
                let (s, d) = (index[old as usize], index[dst as usize]);
                let e = edges.len() as u32;
                edges.push(BEdge { src: s, dst: d, op });
                nodes[s as usize].out.push(e);
                nodes[d as usize].inc.push(e);
            }
        }
        let mut exits: BTreeMap<u32, PointKey> = BTreeMap::new();
        let mut targets = Vec::new();
        for &old in &post {
            let k = index[old as usize];
            let pos = &self.pos_of[old as usize];
            if self.is_exit[old as usize] {
                exits.insert(k, self.ctx.point(pos));
            }
            let cfa = p.cfa(pos.func);
            if let Some(t) = cfa.node(pos.node).target {
                let site = if cfa.assert_helper { pos.stack.top() } else { None };
                targets.push((PropertyKey { func: pos.func, target: t, site }, k));
            }
        }
        let exits = exits.into_iter().map(|(k, pt)| (pt, k)).collect();
        BlockGraph { nodes, edges, exits, targets, summarized: self.summarized, unsupported: self.unsupported, truncated: false }
    }
}

/// Variables an operation reads or writes (for namespacing a policy in value determination
/// and for the syntactic skip of §4); `mods` are the variables each function may modify.
pub fn op_vars(p: &Program, mods: &[BTreeSet<VarId>], op: BOp, out: &mut BTreeSet<VarId>) {
    let mut add = |e: &crate::ir::Expr, out: &mut BTreeSet<VarId>| {
        let mut v = Vec::new();
        e.vars(&mut v);
        out.extend(v);
    };
    let lv = |l: &LValue, out: &mut BTreeSet<VarId>, add: &mut dyn FnMut(&crate::ir::Expr, &mut BTreeSet<VarId>)| {
        out.insert(l.var());
        if let LValue::Elem(_, i) = l {
            add(i, out);
        }
    };
    match op {
        BOp::Op(Op::Edge(f, e)) => {
            let cfa = p.cfa(f);
            match &cfa.edge(e).kind {
                EdgeKind::Assume { cond, .. } => add(cond, out),
                EdgeKind::Statement(s) | EdgeKind::Declaration(s) => match s {
                    Stmt::Assign(l, r) => {
                        lv(l, out, &mut add);
                        add(r, out);
                    }
                    Stmt::Input { lhs, .. } => lv(lhs, out, &mut add),
                    Stmt::InitArray { var, .. } => {
                        out.insert(*var);
                    }
                    Stmt::HavocMemory(_) => out.extend(p.escaped.iter().copied()),
                    Stmt::Unsupported(_) => {
                        out.extend((0..p.globals.len()).map(VarId::global));
                        out.extend(p.escaped.iter().copied());
                    }
                },
                EdgeKind::Return(es) => {
                    for x in es {
                        add(x, out);
                    }
                    out.extend(cfa.ret.iter().copied());
                }
                _ => {}
            }
        }
        BOp::Op(Op::Call(f, e)) | BOp::Op(Op::Return(f, e)) | BOp::Summary(f, e) => {
            if let EdgeKind::CallSummary(c) = &p.cfa(f).edge(e).kind {
                for a in &c.args {
                    add(a, out);
                }
                for l in &c.ret {
                    lv(l, out, &mut add);
                }
                let callee = p.cfa(c.callee);
                out.extend(callee.params.iter().copied());
                out.extend(callee.ret.iter().copied());
                if matches!(op, BOp::Summary(..)) {
                    out.extend(mods[c.callee.0 as usize].iter().copied());
                }
            }
        }
    }
}

/// Variables each function may modify, directly or through its callees: globals and escaped
/// variables it writes (for havocking a call that is not entered).
pub fn modified_by(p: &Program) -> Vec<BTreeSet<VarId>> {
    let mut direct: Vec<BTreeSet<VarId>> = Vec::with_capacity(p.functions.len());
    for f in p.func_ids() {
        let mut out = BTreeSet::new();
        for e in &p.cfa(f).edges {
            let mut w = BTreeSet::new();
            match &e.kind {
                EdgeKind::CallSummary(c) => w.extend(c.ret.iter().map(|l| l.var())),
                k => crate::analyses::template::loops::edge_defs(p, k, &mut w),
            }
            out.extend(w.into_iter().filter(|v| v.func().is_none() || p.escaped.contains(v)));
        }
        out.extend(p.escaped.iter().copied());
        direct.push(out);
    }
    // Callees first: a component's set is its members' own writes plus the sets of the
    // components it calls, already complete (one union per call, not a search per function).
    let mut all: Vec<BTreeSet<VarId>> = vec![BTreeSet::new(); p.functions.len()];
    for component in p.call_graph_components() {
        let mut set = BTreeSet::new();
        for &f in &component {
            set.extend(direct[f.0 as usize].iter().copied());
            for g in p.cfa(f).callees() {
                if component.binary_search(&g).is_err() {
                    set.extend(all[g.0 as usize].iter().copied());
                }
            }
        }
        for &f in &component {
            all[f.0 as usize] = set.clone();
        }
    }
    all
}
