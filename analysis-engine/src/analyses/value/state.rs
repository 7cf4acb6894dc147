//! Abstract variable assignments of the explicit-value analysis (seed 000 §II-B, §III-A): a
//! partial map from variables to machine-integer values; an absent variable is ⊤. Arrays map
//! known indices to values, with an optional default for all other elements.

use std::fmt;

use imbl::{OrdMap, Vector};

use crate::ir::{FuncId, VarId};

/// Index of a scalar variable's cell.
pub const SCALAR: i64 = i64::MIN;
/// Index of an array's default cell (the value of every element without its own cell).
pub const DEFAULT: i64 = i64::MIN + 1;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cell {
    pub var: VarId,
    pub idx: i64,
}

impl Cell {
    pub fn scalar(var: VarId) -> Cell {
        Cell { var, idx: SCALAR }
    }
}

/// The locals of a suspended activation of a recursive function.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Saved {
    pub func: FuncId,
    pub cells: Vec<(Cell, i128)>,
}

/// An abstract variable assignment `v : X ⇀ ℤ` (never ⊥: infeasible successors are dropped).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct ValueState {
    pub cells: OrdMap<Cell, i128>,
    pub saved: Vector<Saved>,
}

impl fmt::Debug for ValueState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.cells.iter().map(|(c, v)| ((c.var.0, c.idx), v))).finish()
    }
}

impl ValueState {
    pub fn get(&self, var: VarId) -> Option<i128> {
        self.cells.get(&Cell::scalar(var)).copied()
    }

    pub fn get_elem(&self, var: VarId, idx: i64) -> Option<i128> {
        self.cells.get(&Cell { var, idx }).or_else(|| self.cells.get(&Cell { var, idx: DEFAULT })).copied()
    }

    pub fn set(&mut self, var: VarId, v: Option<i128>) {
        match v {
            Some(v) => {
                self.cells.insert(Cell::scalar(var), v);
            }
            None => {
                self.cells.remove(&Cell::scalar(var));
            }
        }
    }

    pub fn set_elem(&mut self, var: VarId, idx: i64, v: Option<i128>) {
        let cell = Cell { var, idx };
        match v {
            Some(v) => {
                if self.cells.get(&Cell { var, idx: DEFAULT }) == Some(&v) {
                    self.cells.remove(&cell);
                } else {
                    self.cells.insert(cell, v);
                }
            }
            None => {
                if self.cells.contains_key(&Cell { var, idx: DEFAULT }) {
                    // Cannot express "all but one element": forget the whole array.
                    self.forget(var);
                } else {
                    self.cells.remove(&cell);
                }
            }
        }
    }

    /// The cells of one variable.
    pub fn cells_of(&self, var: VarId) -> impl Iterator<Item = (&Cell, &i128)> {
        self.cells.range(Cell { var, idx: i64::MIN }..=Cell { var, idx: i64::MAX })
    }

    /// Makes a variable (scalar or whole array) ⊤.
    pub fn forget(&mut self, var: VarId) {
        let keys: Vec<Cell> = self.cells_of(var).map(|(c, _)| *c).collect();
        for k in keys {
            self.cells.remove(&k);
        }
    }

    pub fn vars(&self) -> Vec<VarId> {
        let mut out: Vec<VarId> = self.cells.keys().map(|c| c.var).collect();
        out.dedup();
        out
    }

    pub fn is_tracked(&self, var: VarId) -> bool {
        self.cells_of(var).next().is_some()
    }

    /// Keeps only the variables `keep` accepts (the precision operator `v|π`).
    pub fn restrict(&mut self, keep: impl Fn(VarId) -> bool) {
        let drop: Vec<Cell> = self.cells.keys().filter(|c| !keep(c.var)).copied().collect();
        for c in drop {
            self.cells.remove(&c);
        }
    }

    /// `self ⊑ other`: every value `other` fixes, `self` fixes to the same value.
    pub fn leq(&self, other: &ValueState) -> bool {
        if self.saved != other.saved {
            return false;
        }
        for (c, v) in other.cells.iter() {
            match c.idx {
                SCALAR => {
                    if self.cells.get(c) != Some(v) {
                        return false;
                    }
                }
                DEFAULT => {
                    // Every element of `self` must equal the default unless `other` fixes it
                    // separately (checked by its own cell).
                    if self.cells.get(c) != Some(v) {
                        return false;
                    }
                    for (sc, sv) in self.cells_of(c.var) {
                        if sc.idx != DEFAULT && sv != v && !other.cells.contains_key(sc) {
                            return false;
                        }
                    }
                }
                idx => {
                    if self.get_elem(c.var, idx) != Some(*v) {
                        return false;
                    }
                }
            }
        }
        true
    }
}

impl crate::core::cpa::AbstractDomain for ValueState {
    fn leq(&self, other: &Self) -> bool {
        ValueState::leq(self, other)
    }

    /// The values both states agree on (the flat lattice's join, variable by variable).
    fn join(&self, other: &Self) -> Self {
        if self.saved != other.saved {
            // Different suspended frames: keep nothing but what both frames agree on.
            return ValueState { cells: OrdMap::new(), saved: Vector::new() };
        }
        let mut cells = OrdMap::new();
        for (c, v) in self.cells.iter() {
            let other_v = match c.idx {
                SCALAR | DEFAULT => other.cells.get(c).copied(),
                idx => other.get_elem(c.var, idx),
            };
            if other_v == Some(*v) {
                cells.insert(*c, *v);
            }
        }
        // Elements `other` fixes explicitly that `self` has through its default.
        for (c, v) in other.cells.iter() {
            if c.idx != SCALAR && c.idx != DEFAULT && !cells.contains_key(c) && self.get_elem(c.var, c.idx) == Some(*v) {
                cells.insert(*c, *v);
            }
        }
        // A default kept on one side only would claim too much for the other's elements.
        let defaults: Vec<Cell> = cells.keys().filter(|c| c.idx == DEFAULT).copied().collect();
        for d in defaults {
            let conflict = self
                .cells_of(d.var)
                .chain(other.cells_of(d.var))
                .any(|(c, v)| c.idx != DEFAULT && Some(v) != cells.get(&d) && !cells.contains_key(c));
            if conflict {
                cells.remove(&d);
            }
        }
        ValueState { cells, saved: self.saved.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::cpa::AbstractDomain;

    fn st(pairs: &[(u32, i128)]) -> ValueState {
        let mut s = ValueState::default();
        for &(v, x) in pairs {
            s.set(VarId(v), Some(x));
        }
        s
    }

    #[test]
    fn precision_restriction_from_the_paper() {
        // seed 000 §III-A: v = {x↦2, y↦5}, π = {x} gives v^π = {x↦2}.
        let (x, y) = (0, 1);
        let mut v = st(&[(x, 2), (y, 5)]);
        v.restrict(|var| var == VarId(x));
        assert_eq!(v, st(&[(x, 2)]));
    }

    #[test]
    fn fewer_tracked_variables_cover_more() {
        assert!(st(&[(0, 1), (1, 2)]).leq(&st(&[(0, 1)])));
        assert!(!st(&[(0, 1)]).leq(&st(&[(0, 1), (1, 2)])));
        assert!(!st(&[(0, 1)]).leq(&st(&[(0, 2)])));
        assert!(st(&[]).leq(&st(&[])));
    }

    #[test]
    fn join_keeps_agreement() {
        let a = st(&[(0, 1), (1, 2)]);
        let b = st(&[(0, 1), (1, 3)]);
        let j = a.join(&b);
        assert_eq!(j, st(&[(0, 1)]));
        assert!(a.leq(&j) && b.leq(&j), "the join is an upper bound");
        assert_eq!(a.join(&a), a, "idempotent");
    }

    #[test]
    fn array_defaults() {
        let a = VarId(3);
        let mut s = ValueState::default();
        s.cells.insert(Cell { var: a, idx: DEFAULT }, 0);
        s.set_elem(a, 5, Some(7));
        assert_eq!(s.get_elem(a, 5), Some(7));
        assert_eq!(s.get_elem(a, 6), Some(0));
        let mut zero = ValueState::default();
        zero.cells.insert(Cell { var: a, idx: DEFAULT }, 0);
        assert!(!s.leq(&zero), "a[5] = 7 is not below all-zero");
        assert!(zero.leq(&zero));
        s.set_elem(a, 5, None);
        assert_eq!(s.get_elem(a, 6), None, "an unknown element forgets the array");
    }
}
