//! Formulas of the predicate analysis's blocks, which are DAGs of operations (large-block
//! encoding: Beyer, Cimatti, Griggio, Keremoglu, Sebastiani, "Software Model Checking via
//! Large-Block Encoding", FMCAD 2009, §3): a reachability condition per DAG node, the
//! conditions of an edge conjoined with the reachability of its source, fresh SSA versions
//! merged at joins. A model of the formula picks one path through the DAG.

use std::collections::HashMap;

use z3::ast::Bool;
use z3::Model;

use crate::cfa::block::Block;
use crate::cfa::op_ctx;
use crate::cfa::Program;
use crate::core::Op;
use crate::smt::block::merge;
use crate::smt::encode::{Encoder, Snapshot};

/// One block encoded into an encoder (whose constraints hold the definitions).
pub(crate) struct DagFormula {
    /// Per DAG node in topological order (the start first): the edges into it, as the index
    /// of their source, the operation, and the condition to take the edge.
    incoming: Vec<Vec<(usize, Op, bool, Bool)>>,
    /// The condition to reach the block's end.
    pub reach: Bool,
}

fn and(mut fs: Vec<Bool>) -> Bool {
    match fs.len() {
        0 => Bool::from_bool(true),
        1 => fs.pop().expect("one"),
        _ => {
            let refs: Vec<&Bool> = fs.iter().collect();
            Bool::and(&refs)
        }
    }
}

/// Encodes `block` from the encoder's current state; leaves the encoder at the block's end.
pub(crate) fn encode_dag<'p>(enc: &mut Encoder<'p>, p: &'p Program, block: &Block) -> DagFormula {
    let order = block.topological();
    let index: HashMap<usize, usize> = order.iter().enumerate().map(|(i, b)| (b.key(), i)).collect();
    let start = enc.snapshot();
    let mut states: Vec<(Bool, Snapshot)> = Vec::with_capacity(order.len());
    let mut incoming = Vec::with_capacity(order.len());
    for b in &order {
        let Some(node) = b.node() else {
            states.push((Bool::from_bool(true), start.clone()));
            incoming.push(Vec::new());
            continue;
        };
        let mut ins = Vec::with_capacity(node.preds.len());
        let mut edges = Vec::with_capacity(node.preds.len());
        for (prev, op, rec) in &node.preds {
            let j = index[&prev.key()];
            let (reach, snap) = &states[j];
            enc.restore(snap);
            enc.guards = Some(Vec::new());
            let _ = enc.op(&op_ctx(p, *op, *rec));
            let mut conds = enc.guards.take().unwrap_or_default();
            conds.insert(0, reach.clone());
            let edge = and(conds);
            edges.push((j, *op, *rec, edge.clone()));
            ins.push((edge, enc.snapshot()));
        }
        let state = if ins.len() == 1 {
            ins.pop().expect("one")
        } else {
            // Suspended frames agree on every path: blocks end at calls and returns.
            let frames_from = ins[0].1.clone();
            let (reach, cur) = merge(enc, ins.into_iter().map(|(r, s)| (r, s.cur)).collect());
            let mut snap = frames_from;
            snap.cur = cur;
            (reach, snap)
        };
        states.push(state);
        incoming.push(edges);
    }
    let (reach, end) = states.pop().expect("the block's end");
    enc.restore(&end);
    DagFormula { incoming, reach }
}

impl DagFormula {
    /// The operations of a path through the block that the model takes.
    pub fn path_in(&self, m: &Model) -> Option<Vec<(Op, bool)>> {
        let mut out = Vec::new();
        let mut cur = self.incoming.len().checked_sub(1)?;
        while !self.incoming[cur].is_empty() {
            let (j, op, rec, _) = self.incoming[cur].iter().find(|(_, _, _, e)| m.eval(e, true).and_then(|b| b.as_bool()) == Some(true))?;
            out.push((*op, *rec));
            cur = *j;
        }
        out.reverse();
        Some(out)
    }
}
