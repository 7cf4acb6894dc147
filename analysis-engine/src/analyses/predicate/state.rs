//! Abstract states of the predicate analysis with adjustable block encoding (seed 001
//! §5.4; Beyer, Keremoglu, Wendler, "Predicate Abstraction with Adjustable-Block Encoding",
//! FMCAD 2010, §3): at abstraction locations a Boolean combination of predicates as a BDD; in
//! between, that abstraction plus the paths since (the block), encoded symbolically when the
//! next abstraction is computed. States inside a block that meet at a location are merged, so
//! a block is a DAG of operations whose formula is a disjunction over its paths (large-block
//! encoding) rather than one formula per path.

use std::sync::Arc;

use biodivine_lib_bdd::Bdd;

use crate::cfa::block::Block;

/// The result of one abstraction computation, with the block it summarised and the
/// abstraction that block started from (the abstract path back to the program's start).
#[derive(Debug)]
pub struct Abstraction {
    pub region: Bdd,
    pub id: u64,
    pub block: Block,
    pub prev: Option<Arc<Abstraction>>,
}

#[derive(Clone, Debug)]
pub struct PredState {
    pub abs: Arc<Abstraction>,
    /// The paths since the abstraction.
    pub block: Block,
}

impl PredState {
    /// True at an abstraction location (the block is empty).
    pub fn is_abstraction(&self) -> bool {
        self.block.is_empty()
    }

    /// Coverage: abstraction states by BDD implication; states inside a block only within the
    /// same block, by its paths.
    pub fn leq(&self, other: &PredState) -> bool {
        if self.is_abstraction() && other.is_abstraction() {
            return self.abs.region.imp(&other.abs.region).is_true();
        }
        Arc::ptr_eq(&self.abs, &other.abs) && self.block.leq(&other.block)
    }

    /// The blocks from the program's start to this abstraction state, first block first.
    pub fn abstract_path(&self) -> Vec<Arc<Abstraction>> {
        let mut out = Vec::new();
        let mut cur = Some(self.abs.clone());
        while let Some(a) = cur {
            cur = a.prev.clone();
            if a.prev.is_some() {
                out.push(a);
            }
        }
        out.reverse();
        out
    }
}
