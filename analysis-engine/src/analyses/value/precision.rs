//! Precisions of the explicit-value analysis: the variables tracked at each location
//! (`Π : L → 2^X`, seed 000 §II-C). Scoped refinement (§III-F b) adds a variable at every
//! location of its scope, which for a flat variable numbering means "everywhere".

use std::collections::{BTreeMap, BTreeSet};

use crate::cfa::Loc;
use crate::ir::VarId;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValuePrecision {
    /// Tracked at every location.
    pub everywhere: BTreeSet<VarId>,
    /// Tracked at particular locations.
    pub at: BTreeMap<Loc, BTreeSet<VarId>>,
    /// Track everything (no abstraction).
    pub full: bool,
}

impl ValuePrecision {
    pub fn full() -> ValuePrecision {
        ValuePrecision { full: true, ..Default::default() }
    }

    pub fn tracks(&self, loc: Loc, var: VarId) -> bool {
        self.full || self.everywhere.contains(&var) || self.at.get(&loc).is_some_and(|s| s.contains(&var))
    }

    /// Number of (location, variable) pairs plus everywhere-tracked variables.
    pub fn size(&self) -> usize {
        self.everywhere.len() + self.at.values().map(|s| s.len()).sum::<usize>()
    }

    /// All variables tracked anywhere.
    pub fn variables(&self) -> BTreeSet<VarId> {
        let mut out = self.everywhere.clone();
        for s in self.at.values() {
            out.extend(s.iter().copied());
        }
        out
    }
}
