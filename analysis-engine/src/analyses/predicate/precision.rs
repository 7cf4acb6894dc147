//! Precisions of the predicate analysis: the predicates tracked at each abstraction location
//! (seed 001 §5.4, BLAST's lazy abstraction with local precisions). Predicates over globals
//! only are tracked everywhere; others in the function where refinement found them.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::cfa::Loc;
use crate::ir::FuncId;
use crate::smt::linpred::LinPred;

/// Index of a predicate in the table (and its BDD variable).
pub type PredId = u16;

/// Most predicates one analysis may create (BDD variables are allocated up front).
pub const MAX_PREDICATES: usize = 4096;

/// All predicates ever created, interned.
#[derive(Debug, Default)]
pub struct PredTable {
    preds: Vec<LinPred>,
    index: HashMap<LinPred, PredId>,
}

impl PredTable {
    /// The id of a predicate, adding it if new; `None` when the table is full.
    pub fn intern(&mut self, p: LinPred) -> Option<PredId> {
        if let Some(&id) = self.index.get(&p) {
            return Some(id);
        }
        if self.preds.len() >= MAX_PREDICATES {
            return None;
        }
        let id = self.preds.len() as PredId;
        self.preds.push(p.clone());
        self.index.insert(p, id);
        Some(id)
    }

    pub fn get(&self, id: PredId) -> &LinPred {
        &self.preds[id as usize]
    }

    pub fn len(&self) -> usize {
        self.preds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.preds.is_empty()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PredPrecision {
    pub everywhere: BTreeSet<PredId>,
    pub in_func: BTreeMap<FuncId, BTreeSet<PredId>>,
}

impl PredPrecision {
    /// The predicates to abstract to at a location.
    pub fn at(&self, loc: Loc) -> BTreeSet<PredId> {
        let mut s = self.everywhere.clone();
        if let Some(f) = self.in_func.get(&loc.func) {
            s.extend(f.iter().copied());
        }
        s
    }

    pub fn tracks(&self, loc: Loc, id: PredId) -> bool {
        self.everywhere.contains(&id) || self.in_func.get(&loc.func).is_some_and(|s| s.contains(&id))
    }

    /// Adds a predicate found at `loc`; returns true if it is new there.
    pub fn add(&mut self, loc: Loc, id: PredId, global_only: bool) -> bool {
        if self.tracks(loc, id) {
            return false;
        }
        if global_only {
            self.everywhere.insert(id);
        } else {
            self.in_func.entry(loc.func).or_default().insert(id);
        }
        true
    }

    pub fn size(&self) -> usize {
        self.everywhere.len() + self.in_func.values().map(|s| s.len()).sum::<usize>()
    }

    pub fn all(&self) -> BTreeSet<PredId> {
        let mut s = self.everywhere.clone();
        for f in self.in_func.values() {
            s.extend(f.iter().copied());
        }
        s
    }
}
