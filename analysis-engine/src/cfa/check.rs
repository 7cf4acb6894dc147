//! Structural checks of a frozen CFA (run in every test): edges and adjacency lists agree,
//! the exit has no successors, target and terminal nodes end paths, variables referenced by
//! edges exist.

use crate::cfa::{Cfa, EdgeKind, Program};
use crate::ir::{Expr, LValue, Stmt, VarId};

/// Returns every violated invariant of the program's CFAs.
pub fn check_program(p: &Program) -> Vec<String> {
    let mut errs = Vec::new();
    for f in &p.functions {
        check_cfa(p, &f.cfa, &mut errs);
    }
    errs
}

fn check_cfa(p: &Program, cfa: &Cfa, errs: &mut Vec<String>) {
    let name = &cfa.name;
    for (i, e) in cfa.edges.iter().enumerate() {
        let (s, d) = (e.src.0 as usize, e.dst.0 as usize);
        if s >= cfa.nodes.len() || d >= cfa.nodes.len() {
            errs.push(format!("{name}: edge {i} points outside the node arena"));
            continue;
        }
        if !cfa.nodes[s].out.iter().any(|x| x.0 as usize == i) {
            errs.push(format!("{name}: edge {i} missing from out-list of its source"));
        }
        if !cfa.nodes[d].inc.iter().any(|x| x.0 as usize == i) {
            errs.push(format!("{name}: edge {i} missing from in-list of its target"));
        }
        let mut vars = Vec::new();
        edge_vars(&e.kind, &mut vars);
        for v in vars {
            let ok = match v.func() {
                None => v.index() < p.globals.len(),
                Some(f) => f == cfa.func && v.index() < cfa.locals.len(),
            };
            if !ok {
                errs.push(format!("{name}: edge {i} uses variable {:?} out of scope", v));
            }
        }
        if let EdgeKind::CallSummary(c) = &e.kind {
            if c.callee.0 as usize >= p.functions.len() {
                errs.push(format!("{name}: edge {i} calls an unknown function"));
            } else if c.args.len() != p.cfa(c.callee).params.len() && !c.args.is_empty() {
                errs.push(format!("{name}: edge {i} passes {} arguments for {} parameters", c.args.len(), p.cfa(c.callee).params.len()));
            }
        }
    }
    if !cfa.node(cfa.exit).out.is_empty() {
        errs.push(format!("{name}: the exit node has successors"));
    }
    for (i, n) in cfa.nodes.iter().enumerate() {
        if n.terminal && !n.out.is_empty() {
            errs.push(format!("{name}: terminal node {i} has successors"));
        }
        if let Some(t) = n.target {
            if t as usize >= cfa.targets.len() {
                errs.push(format!("{name}: node {i} names a missing target"));
            }
        }
    }
}

fn expr_vars(e: &Expr, out: &mut Vec<VarId>) {
    e.vars(out)
}

/// The variables an edge reads or writes.
pub(crate) fn edge_vars(k: &EdgeKind, out: &mut Vec<VarId>) {
    let lv = |l: &LValue, out: &mut Vec<VarId>| {
        out.push(l.var());
        if let LValue::Elem(_, i) = l {
            expr_vars(i, out);
        }
    };
    match k {
        EdgeKind::Blank => {}
        EdgeKind::Assume { cond, .. } => expr_vars(cond, out),
        EdgeKind::Statement(s) | EdgeKind::Declaration(s) => match s {
            Stmt::Assign(l, e) => {
                lv(l, out);
                expr_vars(e, out);
            }
            Stmt::Input { lhs, .. } => lv(lhs, out),
            Stmt::InitArray { var, .. } => out.push(*var),
            Stmt::HavocMemory(_) | Stmt::Unsupported(_) => {}
        },
        EdgeKind::Return(es) => es.iter().for_each(|e| expr_vars(e, out)),
        EdgeKind::CallSummary(c) => {
            c.args.iter().for_each(|e| expr_vars(e, out));
            c.ret.iter().for_each(|l| lv(l, out));
        }
    }
}
