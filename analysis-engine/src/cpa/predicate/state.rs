//! Abstract states of the predicate analysis with adjustable block encoding (seed 001
//! §5.4; CPAchecker's ABE): at abstraction locations a Boolean combination of predicates as a
//! BDD; in between, that abstraction plus the operations since (the block), which are
//! encoded symbolically when the next abstraction is computed.

use std::sync::Arc;

use biodivine_lib_bdd::Bdd;
use imbl::Vector;

use crate::core::Op;

/// The result of one abstraction computation.
#[derive(Debug)]
pub struct Abstraction {
    pub region: Bdd,
    pub id: u64,
}

#[derive(Clone, Debug)]
pub struct PredState {
    pub abs: Arc<Abstraction>,
    /// Operations since the abstraction (with their recursion flags).
    pub block: Vector<(Op, bool)>,
}

impl PredState {
    /// True at an abstraction location (the block is empty).
    pub fn is_abstraction(&self) -> bool {
        self.block.is_empty()
    }

    /// Coverage: abstraction states by BDD implication; states inside a block only by an
    /// identical state.
    pub fn leq(&self, other: &PredState) -> bool {
        if self.is_abstraction() && other.is_abstraction() {
            return self.abs.region.imp(&other.abs.region).is_true();
        }
        Arc::ptr_eq(&self.abs, &other.abs) && self.block == other.block
    }
}
