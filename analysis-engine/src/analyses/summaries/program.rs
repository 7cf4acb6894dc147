//! Entry copies for procedure summaries (seed 002 §4.3): predicates of a procedure are
//! relative to the values its parameters and the globals had at its entry (`G_in, L_in` in
//! the paper). The program is given one synthetic local `x@entry` per scalar parameter and
//! per scalar global in every function, assigned on new edges before the function's first
//! statement; nothing else assigns them, so a predicate over them relates a state to the
//! procedure's entry, and a predicate at the exit is an input/output relation (a summary).
//!
//! The new nodes and edges are appended (ids of existing nodes and edges stay valid, so
//! property keys are the same as in the original program) and carry no source position
//! (traces do not show them).

use std::sync::Arc;

use crate::cfa::{CfaEdge, CfaNode, EdgeId, EdgeKind, NodeId, Program, Span};
use crate::ir::{Expr, FuncId, LValue, Stmt, VarId, VarInfo, VarKind};

/// Globals copied at most (beyond this, only parameters are copied: less precision).
pub const MAX_GLOBAL_COPIES: usize = 24;

/// The program with entry copies and, per function, the `(copy, original)` pairs.
pub struct WithCopies {
    pub program: Program,
    pub copies: Vec<Vec<(VarId, VarId)>>,
}

/// Adds the entry copies to every function except the synthetic start function.
pub fn with_entry_copies(p: &Program) -> WithCopies {
    let mut out = p.clone();
    let mut copies = vec![Vec::new(); p.functions.len()];
    let scalar_globals: Vec<VarId> =
        (0..p.globals.len()).map(VarId::global).filter(|&v| matches!(p.var(v).kind, VarKind::Int(_))).collect();
    let globals: Vec<VarId> = if scalar_globals.len() <= MAX_GLOBAL_COPIES { scalar_globals } else { Vec::new() };
    for f in p.func_ids() {
        if f == p.start {
            continue;
        }
        let mut cfa = (*p.cfa(f)).clone();
        let mut originals: Vec<VarId> = cfa.params.iter().copied().filter(|&v| matches!(p.var(v).kind, VarKind::Int(_))).collect();
        originals.extend(globals.iter().copied());
        if originals.is_empty() || cfa.locals.len() + originals.len() >= VarId::LIMIT {
            continue;
        }
        let mut chain_start = cfa.entry;
        let mut pairs = Vec::new();
        // Built backwards: each new node assigns one copy and leads to the previous start.
        for &orig in originals.iter().rev() {
            let info = p.var(orig).clone();
            let VarKind::Int(ty) = info.kind else { continue };
            let copy = VarId::local(f, cfa.locals.len());
            cfa.locals.push(VarInfo {
                name: format!("{}@entry", info.name),
                kind: VarKind::Int(ty),
                synthetic: true,
                pointer: info.pointer,
            });
            let node = NodeId(cfa.nodes.len() as u32);
            let edge = EdgeId(cfa.edges.len() as u32);
            cfa.nodes.push(CfaNode {
                out: vec![edge],
                inc: Vec::new(),
                loop_head: false,
                target: None,
                terminal: false,
                rpo: u32::MAX,
                span: Span::default(),
            });
            cfa.edges.push(CfaEdge {
                src: node,
                dst: chain_start,
                kind: EdgeKind::Statement(Stmt::Assign(LValue::Var(copy), Expr::Var(orig, ty))),
                span: Span::default(),
            });
            cfa.nodes[chain_start.0 as usize].inc.push(edge);
            chain_start = node;
            pairs.push((copy, orig));
        }
        cfa.entry = chain_start;
        for n in cfa.nodes.iter_mut() {
            n.rpo = u32::MAX;
        }
        out.functions[f.0 as usize].cfa = Arc::new(crate::cfa::loops::finish_cfa(cfa));
        copies[f.0 as usize] = pairs;
    }
    WithCopies { program: out, copies }
}

/// The copies of function `f`.
pub fn copies_of(w: &WithCopies, f: FuncId) -> &[(VarId, VarId)] {
    w.copies.get(f.0 as usize).map_or(&[], |c| c.as_slice())
}
