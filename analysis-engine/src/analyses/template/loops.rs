//! Loop structure and liveness of one function's CFA, as the template analysis needs them:
//! dominators and natural loop bodies (which arrivals at a loop head are iterations, for
//! unrolling), loop nesting depths (the iteration order) and the variables live at each node
//! (templates range over the variables live at an abstraction point, seed 004 §4 "Template
//! Synthesis").

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use imbl::OrdSet;

use crate::cfa::{Cfa, EdgeKind, NodeId, Program};
use crate::ir::{Expr, FuncId, LValue, Stmt, VarId, VarKind};

/// Loop facts of one function.
#[derive(Clone, Debug, Default)]
pub struct FuncLoops {
    /// Per loop head: membership of every node in its natural loop.
    pub body: BTreeMap<NodeId, Vec<bool>>,
    /// Number of loops containing each node.
    pub depth: Vec<u32>,
    /// Scalar variables live at each node (read later before being written).
    pub live: Vec<OrdSet<VarId>>,
    /// Variables written anywhere in the loop of each head.
    pub written: BTreeMap<NodeId, BTreeSet<VarId>>,
}

/// The loops of every function of a program, each function's computed when first asked
/// for: an analysis enters only the functions reachable from its start, and computing all of
/// them up front cost time and memory quadratic in the number of functions (every scalar
/// global is live at every node).
pub struct ProgramLoops {
    per_function: Vec<OnceLock<FuncLoops>>,
}

impl ProgramLoops {
    pub fn new(p: &Program) -> ProgramLoops {
        ProgramLoops { per_function: p.func_ids().map(|_| OnceLock::new()).collect() }
    }

    /// The loops of `f`, a function of `p` (the program this was made for).
    pub fn of(&self, p: &Program, f: FuncId) -> &FuncLoops {
        self.per_function[f.0 as usize].get_or_init(|| analyse(p, p.cfa(f)))
    }
}

impl FuncLoops {
    pub fn in_loop(&self, head: NodeId, n: NodeId) -> bool {
        self.body.get(&head).is_some_and(|b| b[n.0 as usize])
    }
}

/// Immediate dominators (Cooper, Harvey, Kennedy), `None` for unreachable nodes.
fn dominators(cfa: &Cfa) -> Vec<Option<NodeId>> {
    let n = cfa.nodes.len();
    let mut order: Vec<NodeId> = cfa.node_ids().filter(|&x| cfa.node(x).rpo != u32::MAX).collect();
    order.sort_by_key(|&x| cfa.node(x).rpo);
    let rpo = |x: NodeId| cfa.node(x).rpo;
    let mut idom: Vec<Option<NodeId>> = vec![None; n];
    idom[cfa.entry.0 as usize] = Some(cfa.entry);
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().skip(1) {
            let mut new: Option<NodeId> = None;
            for &e in &cfa.node(b).inc {
                let pred = cfa.edge(e).src;
                if idom[pred.0 as usize].is_none() {
                    continue;
                }
                new = Some(match new {
                    None => pred,
                    Some(cur) => {
                        let (mut f1, mut f2) = (pred, cur);
                        while f1 != f2 {
                            while rpo(f1) > rpo(f2) {
                                f1 = idom[f1.0 as usize].expect("processed");
                            }
                            while rpo(f2) > rpo(f1) {
                                f2 = idom[f2.0 as usize].expect("processed");
                            }
                        }
                        f1
                    }
                });
            }
            if new.is_some() && idom[b.0 as usize] != new {
                idom[b.0 as usize] = new;
                changed = true;
            }
        }
    }
    idom
}

fn dominates(idom: &[Option<NodeId>], a: NodeId, mut b: NodeId) -> bool {
    loop {
        if a == b {
            return true;
        }
        match idom[b.0 as usize] {
            Some(d) if d != b => b = d,
            _ => return false,
        }
    }
}

/// Nodes `head` reaches (forward, inside the function).
fn reaches_from(cfa: &Cfa, head: NodeId) -> Vec<bool> {
    let mut seen = vec![false; cfa.nodes.len()];
    let mut stack = vec![head];
    while let Some(x) = stack.pop() {
        if std::mem::replace(&mut seen[x.0 as usize], true) {
            continue;
        }
        stack.extend(cfa.node(x).out.iter().map(|&e| cfa.edge(e).dst));
    }
    seen
}

/// Computes loop bodies, depths, liveness and written variables of a function.
pub fn analyse(p: &Program, cfa: &Cfa) -> FuncLoops {
    let idom = dominators(cfa);
    let mut body = BTreeMap::new();
    for h in cfa.loop_heads() {
        // Back edges: predecessors the head dominates (or, for irreducible loops, reaches).
        let reach = reaches_from(cfa, h);
        let mut latches: Vec<NodeId> =
            cfa.node(h).inc.iter().map(|&e| cfa.edge(e).src).filter(|&u| cfa.node(u).rpo != u32::MAX && dominates(&idom, h, u)).collect();
        if latches.is_empty() {
            latches = cfa.node(h).inc.iter().map(|&e| cfa.edge(e).src).filter(|&u| reach[u.0 as usize]).collect();
        }
        let mut inside = vec![false; cfa.nodes.len()];
        inside[h.0 as usize] = true;
        let mut stack = latches;
        while let Some(x) = stack.pop() {
            if std::mem::replace(&mut inside[x.0 as usize], true) {
                continue;
            }
            stack.extend(cfa.node(x).inc.iter().map(|&e| cfa.edge(e).src));
        }
        body.insert(h, inside);
    }
    let mut depth = vec![0u32; cfa.nodes.len()];
    for b in body.values() {
        for (i, &x) in b.iter().enumerate() {
            depth[i] += x as u32;
        }
    }
    let live = liveness(p, cfa);
    let mut written = BTreeMap::new();
    for (h, b) in &body {
        let mut w = BTreeSet::new();
        for e in &cfa.edges {
            if b[e.src.0 as usize] && b[e.dst.0 as usize] {
                edge_defs(p, &e.kind, &mut w);
            }
        }
        written.insert(*h, w);
    }
    FuncLoops { body, depth, live, written }
}

fn is_scalar(p: &Program, v: VarId) -> bool {
    let info = p.var(v);
    matches!(info.kind, VarKind::Int(_)) && !info.pointer
}

fn uses(e: &Expr, out: &mut BTreeSet<VarId>) {
    let mut vs = Vec::new();
    e.vars(&mut vs);
    out.extend(vs);
}

fn lvalue_uses(l: &LValue, out: &mut BTreeSet<VarId>) {
    if let LValue::Elem(v, i) = l {
        out.insert(*v);
        uses(i, out);
    }
}

/// Variables an edge may write.
pub fn edge_defs(p: &Program, k: &EdgeKind, out: &mut BTreeSet<VarId>) {
    match k {
        EdgeKind::Statement(s) | EdgeKind::Declaration(s) => match s {
            Stmt::Assign(l, _) | Stmt::Input { lhs: l, .. } => {
                out.insert(l.var());
            }
            Stmt::InitArray { var, .. } => {
                out.insert(*var);
            }
            Stmt::HavocMemory(_) => out.extend(p.escaped.iter().copied()),
            Stmt::Unsupported(_) => {
                out.extend((0..p.globals.len()).map(VarId::global));
                out.extend(p.escaped.iter().copied());
            }
        },
        EdgeKind::CallSummary(c) => {
            out.extend(c.ret.iter().map(|l| l.var()));
            out.extend((0..p.globals.len()).map(VarId::global));
            out.extend(p.escaped.iter().copied());
        }
        _ => {}
    }
}

/// Backward liveness of scalar variables. Globals and escaped variables are live wherever a
/// call or the function's exit may still read them.
///
/// The sets are persistent (`imbl`): a node's set shares its structure with its successors'
/// and differs from them by the few variables the edge kills or reads. With plain sets every
/// node held its own copy of the live globals, quadratic in the number of globals for the
/// start function, which initialises each of them.
fn liveness(p: &Program, cfa: &Cfa) -> Vec<OrdSet<VarId>> {
    let n = cfa.nodes.len();
    let globals: OrdSet<VarId> = (0..p.globals.len()).map(VarId::global).filter(|&v| is_scalar(p, v)).collect();
    let mut live: Vec<OrdSet<VarId>> = vec![OrdSet::new(); n];
    let mut order: Vec<NodeId> = cfa.node_ids().collect();
    order.sort_by_key(|&x| std::cmp::Reverse(cfa.node(x).rpo));
    let mut changed = true;
    while changed {
        changed = false;
        for &x in &order {
            let mut out: OrdSet<VarId> = OrdSet::new();
            if x == cfa.exit {
                out = union(out, globals.clone());
                for &v in &cfa.ret {
                    insert(&mut out, v);
                }
            }
            for &eid in &cfa.node(x).out {
                let e = cfa.edge(eid);
                let mut after = live[e.dst.0 as usize].clone();
                let mut used = BTreeSet::new();
                match &e.kind {
                    EdgeKind::Blank => {}
                    EdgeKind::Assume { cond, .. } => uses(cond, &mut used),
                    EdgeKind::Statement(s) | EdgeKind::Declaration(s) => match s {
                        Stmt::Assign(l, rhs) => {
                            if let LValue::Var(v) = l {
                                remove(&mut after, v);
                            }
                            lvalue_uses(l, &mut used);
                            uses(rhs, &mut used);
                        }
                        Stmt::Input { lhs, .. } => {
                            if let LValue::Var(v) = lhs {
                                remove(&mut after, v);
                            }
                            lvalue_uses(lhs, &mut used);
                        }
                        Stmt::InitArray { .. } | Stmt::HavocMemory(_) | Stmt::Unsupported(_) => {}
                    },
                    EdgeKind::Return(es) => {
                        for e in es {
                            uses(e, &mut used);
                        }
                    }
                    EdgeKind::CallSummary(c) => {
                        for l in &c.ret {
                            if let LValue::Var(v) = l {
                                remove(&mut after, v);
                            }
                            lvalue_uses(l, &mut used);
                        }
                        for a in &c.args {
                            uses(a, &mut used);
                        }
                        // Every global is scalar-checked already.
                        after = union(after, globals.clone());
                    }
                }
                out = union(out, after);
                for v in used.into_iter().filter(|&v| is_scalar(p, v)) {
                    insert(&mut out, v);
                }
            }
            if out != live[x.0 as usize] {
                live[x.0 as usize] = out;
                changed = true;
            }
        }
    }
    live
}

/// `a ∪ b`, keeping the larger set's structure (the smaller one's new elements are inserted).
fn union(a: OrdSet<VarId>, b: OrdSet<VarId>) -> OrdSet<VarId> {
    if a.ptr_eq(&b) {
        return a;
    }
    let (mut large, small) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    for v in small {
        insert(&mut large, v);
    }
    large
}

/// Inserts `v` unless present (a persistent set copies the path to `v` even to replace it).
fn insert(set: &mut OrdSet<VarId>, v: VarId) {
    if !set.contains(&v) {
        set.insert(v);
    }
}

/// Removes `v` if present.
fn remove(set: &mut OrdSet<VarId>, v: &VarId) {
    if set.contains(v) {
        set.remove(v);
    }
}
