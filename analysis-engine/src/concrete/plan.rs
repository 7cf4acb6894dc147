//! Execution plans of the concrete interpreter: what it does at each node, computed once per
//! program, and the cache of iteration paths found affine (for loop acceleration).

use std::collections::HashMap;

use super::accel::{affine_cond, affine_expr};
use crate::cfa::{EdgeId, EdgeKind, Program};
use crate::ir::{FuncId, LValue, Stmt, VarId};

/// What the interpreter does at a node, computed once per program: most nodes have a single
/// successor or branch on one condition, which is then evaluated once.
pub(super) enum NodePlan {
    Target(u32),
    Exit,
    End,
    Single(EdgeId),
    /// `[c]` to `t`, `[!c]` to `f`; `reads` are the condition's variables (for traces).
    Branch {
        t: EdgeId,
        f: EdgeId,
        reads: Vec<VarId>,
    },
    General,
}

/// Execution plans of every function of a program.
pub struct Plan {
    pub(super) nodes: Vec<Vec<NodePlan>>,
    pub(super) heads: Vec<Vec<bool>>,
    /// Iteration paths found affine (or not), by function and path.
    affine: std::cell::RefCell<HashMap<(FuncId, Vec<EdgeId>), bool>>,
}

impl Plan {
    pub fn new(p: &Program) -> Plan {
        let nodes = p
            .functions
            .iter()
            .map(|f| {
                let cfa = &f.cfa;
                cfa.node_ids()
                    .map(|n| {
                        let node = cfa.node(n);
                        if let Some(t) = node.target {
                            return NodePlan::Target(t);
                        }
                        if n == cfa.exit {
                            return NodePlan::Exit;
                        }
                        if node.terminal || node.out.is_empty() {
                            return NodePlan::End;
                        }
                        match node.out.as_slice() {
                            [e] if !matches!(cfa.edge(*e).kind, EdgeKind::Assume { .. }) => NodePlan::Single(*e),
                            [a, b] => match (&cfa.edge(*a).kind, &cfa.edge(*b).kind) {
                                (EdgeKind::Assume { cond: c1, truth: t1 }, EdgeKind::Assume { cond: c2, truth: t2 })
                                    if c1 == c2 && t1 != t2 =>
                                {
                                    let (t, f) = if *t1 { (*a, *b) } else { (*b, *a) };
                                    let mut reads = Vec::new();
                                    c1.vars(&mut reads);
                                    NodePlan::Branch { t, f, reads }
                                }
                                _ => NodePlan::General,
                            },
                            _ => NodePlan::General,
                        }
                    })
                    .collect()
            })
            .collect();
        let heads = p.functions.iter().map(|f| f.cfa.nodes.iter().map(|n| n.loop_head).collect()).collect();
        Plan { nodes, heads, affine: Default::default() }
    }

    /// True if every operation of an iteration path is affine in the program's scalars, so
    /// that the iteration map is affine and branch conditions are monotone in the iteration.
    pub(super) fn is_affine(&self, p: &Program, func: FuncId, path: &[EdgeId]) -> bool {
        let key = (func, path.to_vec());
        if let Some(&b) = self.affine.borrow().get(&key) {
            return b;
        }
        let cfa = p.cfa(func);
        let ok = path.iter().all(|&e| match &cfa.edge(e).kind {
            EdgeKind::Blank => true,
            EdgeKind::Assume { cond, .. } => affine_cond(cond),
            EdgeKind::Statement(Stmt::Assign(LValue::Var(_), e)) | EdgeKind::Declaration(Stmt::Assign(LValue::Var(_), e)) => affine_expr(e),
            _ => false,
        });
        self.affine.borrow_mut().insert(key, ok);
        ok
    }
}
