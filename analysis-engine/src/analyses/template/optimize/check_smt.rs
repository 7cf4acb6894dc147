//! The bit-precise side of the template analysis: blocks over bit-vectors to check candidate
//! invariants and property targets independently of the optimisation (`CheckSmt`).

use std::collections::{BTreeSet, HashMap};

use z3::ast::Bool;

use super::encoding::{encode_block, EncBlock};
use crate::analyses::template::block::BlockGraph;
use crate::analyses::template::state::Conj;
use crate::cfa::Program;
use crate::core::Cancel;
use crate::ir::VarId;
use crate::smt::{check, solver, Sat};

/// The bit-precise side: the same blocks over bit-vectors, for checking candidate
/// invariants and property targets independently of the optimisation.
pub struct CheckSmt<'p> {
    p: &'p Program,
    mods: std::sync::Arc<Vec<BTreeSet<VarId>>>,
    cancel: Cancel,
    pub query_ms: u64,
    blocks: HashMap<u32, EncBlock<'p>>,
    pub queries: u64,
}

/// A solver answer where "unknown" counts as "cannot show".
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Shown {
    Yes,
    No,
}

impl<'p> CheckSmt<'p> {
    pub fn new(p: &'p Program, mods: std::sync::Arc<Vec<BTreeSet<VarId>>>, cancel: Cancel, query_ms: u64) -> Self {
        CheckSmt { p, mods, cancel, query_ms, blocks: HashMap::new(), queries: 0 }
    }

    fn block(&mut self, id: u32, g: &BlockGraph) -> &mut EncBlock<'p> {
        let (p, mods) = (self.p, self.mods.clone());
        self.blocks.entry(id).or_insert_with(|| encode_block(p, &mods, g, false, &format!("chk{}", id)))
    }

    /// For each conjunct of `post`: is it implied at the exit node `exit` by `pre` at the
    /// start and the block? (`None` for a `pre` the encoding cannot express: nothing holds.)
    pub fn implied(&mut self, id: u32, g: &BlockGraph, pre: &[Conj], exit: u32, post: &[Conj]) -> Vec<Shown> {
        let p = self.p;
        let (cancel, ms) = (self.cancel.clone(), self.query_ms);
        let b = self.block(id, g);
        let mut pre_terms = Vec::new();
        for c in pre {
            // A conjunct that cannot be encoded is left out: a weaker start state.
            if let Some(t) = b.conj(p, 0, c) {
                pre_terms.push(t);
            }
        }
        let post_terms: Vec<Option<Bool>> = post.iter().map(|c| b.conj(p, exit as usize, c)).collect();
        let s = solver(&cancel, ms);
        for c in b.constraints.iter().chain(&pre_terms) {
            s.assert(c);
        }
        s.assert(&b.reach[exit as usize]);
        let mut out = Vec::with_capacity(post.len());
        for t in post_terms {
            let Some(t) = t else {
                out.push(Shown::No);
                continue;
            };
            s.push();
            s.assert(t.not());
            self.queries += 1;
            let r = check(&s);
            s.pop(1);
            out.push(if r == Sat::Unsat { Shown::Yes } else { Shown::No });
        }
        out
    }

    /// Is the block node `node` unreachable from `pre`?
    pub fn unreachable(&mut self, id: u32, g: &BlockGraph, pre: &[Conj], node: u32) -> Shown {
        let p = self.p;
        let (cancel, ms) = (self.cancel.clone(), self.query_ms);
        let b = self.block(id, g);
        let pre_terms: Vec<Bool> = pre.iter().filter_map(|c| b.conj(p, 0, c)).collect();
        let s = solver(&cancel, ms);
        for c in b.constraints.iter().chain(&pre_terms) {
            s.assert(c);
        }
        s.assert(&b.reach[node as usize]);
        self.queries += 1;
        if check(&s) == Sat::Unsat {
            Shown::Yes
        } else {
            Shown::No
        }
    }
}
