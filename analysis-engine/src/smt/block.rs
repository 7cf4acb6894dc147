//! Block formulas: a loop-free region of one function, from a start node to the next cut
//! points (loop heads, the exit), encoded as one SSA formula over all its paths (large-block
//! encoding: a reachability literal per node, fresh versions merged at joins). Calls are not
//! entered (their results and everything the callee may modify become arbitrary) unless the
//! caller asks for small loop-free callees to be encoded in place.

use std::collections::{BTreeSet, HashMap};

use z3::ast::{Array, Bool};

use crate::cfa::Loc;
use crate::cfa::{Call, EdgeId, EdgeKind, NodeId, Program};
use crate::cfa::{OpCtx, OpKind};
use crate::core::Op;
use crate::ir::{FuncId, LValue, Stmt, VarId};
use crate::smt::encode::{Encoder, VTerm};

/// Where a block leaves: a cut point with the condition to get there and the SSA versions
/// the variables have there.
pub struct Exit {
    pub node: NodeId,
    pub reach: Bool,
    pub ssa: HashMap<VarId, u32>,
}

/// A call inside a block: the condition to reach it and the versions before it.
pub struct CallSite<'p> {
    pub edge: EdgeId,
    pub call: &'p Call,
    pub reach: Bool,
    pub ssa: HashMap<VarId, u32>,
}

pub struct Block<'p> {
    pub func: FuncId,
    pub start: NodeId,
    pub start_ssa: HashMap<VarId, u32>,
    pub exits: Vec<Exit>,
    pub calls: Vec<CallSite<'p>>,
}

/// Variables a function may modify, directly or through the functions it calls.
pub fn modified_by(p: &Program, f: FuncId) -> BTreeSet<VarId> {
    let mut out = BTreeSet::new();
    for g in p.reachable_functions(f) {
        for e in &p.cfa(g).edges {
            match &e.kind {
                EdgeKind::Statement(s) | EdgeKind::Declaration(s) => match s {
                    Stmt::Assign(l, _) | Stmt::Input { lhs: l, .. } => {
                        if l.var().func().is_none() {
                            out.insert(l.var());
                        }
                    }
                    Stmt::InitArray { var, .. } => {
                        if var.func().is_none() {
                            out.insert(*var);
                        }
                    }
                    Stmt::HavocMemory(_) => out.extend(p.escaped.iter().copied()),
                    Stmt::Unsupported(_) => {
                        out.extend((0..p.globals.len()).map(VarId::global));
                        out.extend(p.escaped.iter().copied());
                    }
                },
                EdgeKind::CallSummary(c) => {
                    for l in &c.ret {
                        if l.var().func().is_none() {
                            out.insert(l.var());
                        }
                    }
                }
                _ => {}
            }
        }
    }
    // Escaped locals of any activation may be written through pointers.
    out.extend(p.escaped.iter().copied().filter(|v| v.func().is_none()));
    out
}

/// Calls nested this deep at most are entered by Houdini's blocks (`invariants.rs`).
pub(crate) const INLINE_DEPTH: usize = 2;
/// Callees with more edges than this are not entered (their bodies would grow every query).
const INLINE_EDGES: usize = 400;

/// Encodes the region of `func` from `start` up to the nodes `is_cut` accepts (and back to
/// `start`). The encoder receives the constraints. Calls of loop-free functions are entered
/// up to `enter` deep (0: none; a function never inside itself): their bodies are encoded in
/// place of the havoc of what they may modify, so that what a helper returns (`return s->a ==
/// i;`) is known after the call. Every call stays in [`Block::calls`] with the state before it.
pub(crate) fn encode_block<'p>(
    enc: &mut Encoder<'p>,
    p: &'p Program,
    func: FuncId,
    start: NodeId,
    is_cut: &dyn Fn(NodeId) -> bool,
    mods: &dyn Fn(FuncId) -> BTreeSet<VarId>,
    enter: usize,
) -> Block<'p> {
    encode_region(enc, p, func, start, is_cut, mods, &mut vec![func], enter)
}

/// Whether a call of `callee` may be entered at `depth` (calls left) with `inside` the
/// functions being encoded: a loop-free function of bounded size not already inside, and not
/// an assertion helper (its entry has an annotation of its own, and its condition in the
/// caller's queries would only make them heavier). A path to a target inside the callee ends
/// there, as a path to one of the caller's own does.
fn enterable(p: &Program, callee: FuncId, inside: &[FuncId], depth: usize) -> bool {
    let cfa = p.cfa(callee);
    depth > 0
        && !inside.contains(&callee)
        && !cfa.assert_helper
        && cfa.edges.len() <= INLINE_EDGES
        && cfa.loop_heads().all(|h| cfa.node(h).rpo == u32::MAX)
}

/// The callee's body in place of the call-summary edge `eid` (from `from` to `to`) of `func`:
/// parameters bound, the body from its entry to its exit, results assigned. Returns the
/// condition of returning (relative to reaching the call); the encoder's versions are those
/// after the call.
#[allow(clippy::too_many_arguments)]
fn enter_call<'p>(
    enc: &mut Encoder<'p>,
    p: &'p Program,
    (func, eid, from, to): (FuncId, EdgeId, NodeId, NodeId),
    call: &'p Call,
    mods: &dyn Fn(FuncId) -> BTreeSet<VarId>,
    inside: &mut Vec<FuncId>,
    depth: usize,
) -> Bool {
    let callee = call.callee;
    let cfa = p.cfa(callee);
    let op = |enc: &mut Encoder<'p>, op: Op, kind: OpKind<'p>, from: Loc, to: Loc| -> Vec<Bool> {
        enc.guards = Some(Vec::new());
        let _ = enc.op(&OpCtx { op, kind, from, to });
        enc.guards.take().unwrap_or_default()
    };
    let entry = Loc { func: callee, node: cfa.entry };
    let exit = Loc { func: callee, node: cfa.exit };
    let mut conds = op(enc, Op::Call(func, eid), OpKind::Call { call, callee, recursive: false }, Loc { func, node: from }, entry);
    inside.push(callee);
    let body = encode_region(enc, p, callee, cfa.entry, &|n| n == cfa.exit, mods, inside, depth - 1);
    inside.pop();
    let Some(ret) = body.exits.into_iter().find(|x| x.node == cfa.exit) else {
        // The callee never returns.
        return Bool::from_bool(false);
    };
    conds.push(ret.reach);
    enc.cur = ret.ssa;
    conds.extend(op(enc, Op::Return(func, eid), OpKind::Return { call, callee, recursive: false }, exit, Loc { func, node: to }));
    let refs: Vec<&Bool> = conds.iter().collect();
    Bool::and(&refs)
}

/// [`encode_block`] with `inside` the functions being encoded (the outermost first) and
/// `depth` the calls that may still be entered.
#[allow(clippy::too_many_arguments)]
fn encode_region<'p>(
    enc: &mut Encoder<'p>,
    p: &'p Program,
    func: FuncId,
    start: NodeId,
    is_cut: &dyn Fn(NodeId) -> bool,
    mods: &dyn Fn(FuncId) -> BTreeSet<VarId>,
    inside: &mut Vec<FuncId>,
    depth: usize,
) -> Block<'p> {
    let cfa = p.cfa(func);
    // Nodes of the region in topological order (the region is acyclic: cut points include
    // every loop head).
    let mut order = Vec::new();
    let mut seen = vec![false; cfa.nodes.len()];
    let mut stack: Vec<(NodeId, usize)> = vec![(start, 0)];
    seen[start.0 as usize] = true;
    while let Some(&mut (n, ref mut i)) = stack.last_mut() {
        let stop = n != start && is_cut(n);
        let out = &cfa.node(n).out;
        if !stop && *i < out.len() {
            let d = cfa.edge(out[*i]).dst;
            *i += 1;
            if d != start && !seen[d.0 as usize] {
                seen[d.0 as usize] = true;
                stack.push((d, 0));
            }
        } else {
            order.push(n);
            stack.pop();
        }
    }
    order.reverse();
    let start_ssa = enc.cur.clone();
    // Per node: the condition of reaching it and the SSA indices there.
    type Reach = (Bool, HashMap<VarId, u32>);
    let mut states: HashMap<NodeId, Reach> = HashMap::new();
    let mut incoming: HashMap<NodeId, Vec<Reach>> = HashMap::new();
    let mut exits = Vec::new();
    let mut calls = Vec::new();
    for &n in &order {
        let (reach, ssa) = if n == start {
            (Bool::from_bool(true), start_ssa.clone())
        } else {
            let ins = incoming.remove(&n).unwrap_or_default();
            merge(enc, ins)
        };
        if n != start && is_cut(n) {
            exits.push(Exit { node: n, reach, ssa });
            continue;
        }
        states.insert(n, (reach.clone(), ssa.clone()));
        for (eid, e) in cfa.out_edges(n) {
            enc.cur = ssa.clone();
            let mut edge_reach = reach.clone();
            match &e.kind {
                EdgeKind::CallSummary(call) => {
                    calls.push(CallSite { edge: eid, call, reach: reach.clone(), ssa: ssa.clone() });
                    if enterable(p, call.callee, inside, depth) {
                        let returns = enter_call(enc, p, (func, eid, n, e.dst), call, mods, inside, depth);
                        edge_reach = Bool::and(&[&reach, &returns]);
                    } else {
                        // The callee's effect: its results and what it may modify are arbitrary.
                        let mut dummy = Default::default();
                        for l in &call.ret {
                            enc.write(l, None, false, &mut dummy);
                        }
                        for v in mods(call.callee) {
                            enc.havoc(v, "call");
                        }
                    }
                }
                _ => {
                    // The edge's conditions (its assumption, no undefined behaviour) hold
                    // on the paths through it only.
                    let ctx = OpCtx {
                        op: Op::Edge(func, eid),
                        kind: OpKind::Edge(&e.kind),
                        from: Loc { func, node: n },
                        to: Loc { func, node: e.dst },
                    };
                    enc.guards = Some(Vec::new());
                    let _ = enc.op(&ctx);
                    let mut conds = enc.guards.take().unwrap_or_default();
                    if !conds.is_empty() {
                        conds.insert(0, reach.clone());
                        let refs: Vec<&Bool> = conds.iter().collect();
                        edge_reach = Bool::and(&refs);
                    }
                }
            }
            let d = e.dst;
            if d == start {
                exits.push(Exit { node: d, reach: edge_reach, ssa: enc.cur.clone() });
            } else {
                incoming.entry(d).or_default().push((edge_reach, enc.cur.clone()));
            }
        }
    }
    Block { func, start, start_ssa, exits, calls }
}

/// Joins the states of a node's incoming edges: the disjunction of their conditions, and a
/// fresh version for each variable whose versions differ, equal to the one of the edge taken.
pub(crate) fn merge(enc: &mut Encoder, ins: Vec<(Bool, HashMap<VarId, u32>)>) -> (Bool, HashMap<VarId, u32>) {
    match ins.len() {
        0 => (Bool::from_bool(false), enc.cur.clone()),
        1 => ins.into_iter().next().expect("one"),
        _ => {
            let reaches: Vec<&Bool> = ins.iter().map(|(r, _)| r).collect();
            let reach = Bool::or(&reaches);
            let mut vars: BTreeSet<VarId> = BTreeSet::new();
            for (_, m) in &ins {
                vars.extend(m.keys().copied());
            }
            let mut out = HashMap::new();
            for v in vars {
                let versions: Vec<u32> = ins.iter().map(|(_, m)| m.get(&v).copied().unwrap_or(0)).collect();
                if versions.iter().all(|&x| x == versions[0]) {
                    out.insert(v, versions[0]);
                    continue;
                }
                enc.cur = HashMap::new();
                let fresh = enc.bump(v, None);
                let ver = enc.cur[&v];
                for ((r, _), &old) in ins.iter().zip(&versions) {
                    let eq = match (&fresh, enc.term(v, old)) {
                        (VTerm::Scalar(a), VTerm::Scalar(b)) => a.eq(&b),
                        (VTerm::Arr(a), VTerm::Arr(b)) => Array::eq(a, &b),
                        _ => Bool::from_bool(true),
                    };
                    enc.constraints.push(r.implies(&eq));
                }
                out.insert(v, ver);
            }
            (reach, out)
        }
    }
}

/// Assigns `args` to the callee's parameters (fresh versions), for checking what holds at
/// the callee's entry from a call site.
pub(crate) fn bind_params(enc: &mut Encoder, p: &Program, site: &CallSite) -> HashMap<VarId, u32> {
    enc.cur = site.ssa.clone();
    let args: Vec<_> = site.call.args.iter().map(|a| enc.expr(a)).collect();
    let mut dummy = Default::default();
    for (param, t) in p.cfa(site.call.callee).params.iter().zip(args) {
        enc.write(&LValue::Var(*param), Some(t), false, &mut dummy);
    }
    enc.cur.clone()
}
