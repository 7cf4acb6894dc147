//! A path's blocks encoded over integers for interpolation, with the symbols each cut shares,
//! and the check every sequence interpolant passes before its atoms are used.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use z3::ast::{Ast, Bool, Dynamic};
use z3::{AstKind, SatResult};

use super::QUERY_MS;
use crate::cfa::block::Block;
#[cfg(test)]
use crate::cfa::OpCtx;
use crate::cfa::Program;
use crate::core::Cancel;
use crate::smt::dag::encode_dag;
use crate::smt::encode::{Encoder, Theory};
use crate::smt::linear::is_constant;
use crate::smt::solver;

/// A path's blocks as constraints over integers, with the symbols each cut shares.
pub(crate) struct EncodedPath<'p> {
    pub(super) enc: Encoder<'p>,
    pub(super) blocks: Vec<Vec<Bool>>,
    /// Per cut (after block k): the symbols occurring both before and after it, by name.
    pub(super) shared: Vec<Vec<Dynamic>>,
}

/// Collects the uninterpreted constants of a formula (visiting each shared subterm once:
/// block formulas are DAGs).
fn symbols(d: &Dynamic, out: &mut BTreeMap<String, Dynamic>) {
    let mut stack = vec![d.clone()];
    let mut seen: HashSet<Dynamic> = HashSet::new();
    while let Some(x) = stack.pop() {
        if x.kind() != AstKind::App || !seen.insert(x.clone()) {
            continue;
        }
        if x.num_children() == 0 {
            if is_constant(&x) {
                out.insert(x.decl().name(), x.clone());
            }
            continue;
        }
        stack.extend(x.children());
    }
}

pub(crate) fn symbols_of(fs: &[Bool]) -> BTreeMap<String, Dynamic> {
    let mut out = BTreeMap::new();
    for f in fs {
        symbols(&Dynamic::from_ast(f), &mut out);
    }
    out
}

pub(crate) fn and(fs: &[Bool]) -> Bool {
    let refs: Vec<&Bool> = fs.iter().collect();
    if refs.is_empty() {
        Bool::from_bool(true)
    } else {
        Bool::and(&refs)
    }
}

impl<'p> EncodedPath<'p> {
    #[cfg(test)]
    pub(crate) fn new(p: &'p Program, blocks: &[Vec<OpCtx>], ranges: bool) -> EncodedPath<'p> {
        let blocks: Vec<Block> = blocks.iter().map(|b| Block::of_path(b)).collect();
        Self::with_theory(p, &blocks, Theory::Int { ranges, exact: false, parity: false })
    }

    pub(crate) fn with_theory(p: &'p Program, blocks: &[Block], theory: Theory) -> EncodedPath<'p> {
        let mut enc = Encoder::new(p, theory, false);
        let mut out = Vec::new();
        for b in blocks {
            let n0 = enc.constraints.len();
            let dag = encode_dag(&mut enc, p, b);
            let mut fs = enc.constraints[n0..].to_vec();
            fs.push(dag.reach);
            out.push(fs);
        }
        let syms: Vec<BTreeMap<String, Dynamic>> = out.iter().map(|b| symbols_of(b)).collect();
        let mut shared = Vec::new();
        for k in 0..out.len().saturating_sub(1) {
            let mut pre: BTreeMap<String, Dynamic> = BTreeMap::new();
            for s in &syms[..=k] {
                pre.extend(s.iter().map(|(n, d)| (n.clone(), d.clone())));
            }
            let post: BTreeSet<&String> = syms[k + 1..].iter().flat_map(|s| s.keys()).collect();
            shared.push(pre.into_iter().filter(|(n, _)| post.contains(n)).map(|(_, d)| d).collect());
        }
        EncodedPath { enc, blocks: out, shared }
    }

    fn unsat(&self, fs: &[&Bool], cancel: &Cancel) -> bool {
        let s = solver(cancel, QUERY_MS);
        for f in fs {
            s.assert(*f);
        }
        s.check() == SatResult::Unsat
    }

    pub(crate) fn infeasible(&self, cancel: &Cancel) -> bool {
        let all: Vec<&Bool> = self.blocks.iter().flatten().collect();
        self.unsat(&all, cancel)
    }

    /// Checks the defining conditions of a sequence interpolant.
    pub(super) fn valid(&self, itps: &[Bool], cancel: &Cancel) -> bool {
        let n = self.blocks.len();
        if itps.len() + 1 != n {
            return false;
        }
        for (k, i) in itps.iter().enumerate() {
            let allowed: BTreeSet<String> = self.shared[k].iter().map(|d| d.decl().name()).collect();
            let used = symbols_of(std::slice::from_ref(i));
            if used.keys().any(|s| !allowed.contains(s)) {
                return false;
            }
        }
        let t = Bool::from_bool(true);
        for k in 0..n {
            let pre = if k == 0 { &t } else { &itps[k - 1] };
            let mut fs: Vec<&Bool> = vec![pre];
            fs.extend(self.blocks[k].iter());
            let not_post;
            if k + 1 < n {
                not_post = itps[k].not();
                fs.push(&not_post);
            }
            if !self.unsat(&fs, cancel) {
                return false;
            }
        }
        true
    }
}
