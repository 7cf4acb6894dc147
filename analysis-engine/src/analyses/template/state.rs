//! Abstracted states of local policy iteration (seed 004 §3, Def. 1) and the congruence
//! component (§4 "Congruence"): per template of an abstraction point a bound `d` with the
//! policy that produced it and a backpointer to the abstracted state the policy starts from.
//! A missing bound means "unbounded"; unreachable points have no state at all (⊥). The
//! preorder compares bounds, the join takes the larger bound per template with its policy
//! and backpointer (the older entry on ties), as the paper's merge operator does.

use std::sync::Arc;

use crate::analyses::template::templates::LinearForm;
use crate::ir::VarId;

/// One conjunct of an abstracted state or a candidate invariant, over mathematical
/// integers: `form <= bound`, `var ≡ r (mod 2)`, or `false` (the point is unreachable).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Conj {
    Le(LinearForm, i128),
    Parity(VarId, u8),
    False,
}

/// Index of an abstraction point.
pub type PointId = u32;
/// Index of an abstracted state in the analysis's arena (backpointers refer to them).
pub type AbsId = u32;

/// The disjunction-free formula a bound was derived with: a path through the block of the
/// backpointer's point (the values of the marking variables at the optimum).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// The point whose block the path runs through (the backpointer's point).
    pub from_point: PointId,
    /// The exit of that block the path ends at.
    pub exit_node: u32,
    pub path: Arc<Vec<u32>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub bound: i128,
    /// `None` when no policy was read (the bound then counts as a constant in value
    /// determination).
    pub policy: Option<Policy>,
    /// The abstracted state the policy starts from.
    pub backpointer: Option<AbsId>,
}

/// Parity facts: `(variable, remainder modulo 2)`, sorted; a missing variable is unknown.
pub type Parity = Vec<(VarId, u8)>;

/// An abstracted state: one entry per template of its point (`None`: unbounded).
#[derive(Clone, Debug)]
pub struct Abstracted {
    pub point: PointId,
    pub entries: Vec<Option<Entry>>,
    pub parity: Parity,
}

impl Abstracted {
    /// `self ⊑ other`, bounds and parity facts compared (policies ignored).
    pub fn leq(&self, other: &Abstracted) -> bool {
        let bounds = self.entries.iter().zip(&other.entries).all(|(a, b)| match (a, b) {
            (_, None) => true,
            (None, Some(_)) => false,
            (Some(x), Some(y)) => x.bound <= y.bound,
        });
        bounds && other.parity.iter().all(|f| self.parity.contains(f))
    }

    /// The join: per template the larger bound with its policy and backpointer, the reached
    /// (`self`) entry on ties; parity facts both agree on. Returns the join and the
    /// templates whose entry came from `new`.
    pub fn join(&self, new: &Abstracted) -> (Abstracted, Vec<usize>) {
        let mut updated = Vec::new();
        let entries = self
            .entries
            .iter()
            .zip(&new.entries)
            .enumerate()
            .map(|(i, (a, b))| match (a, b) {
                (None, _) => None,
                (Some(_), None) => {
                    updated.push(i);
                    None
                }
                (Some(x), Some(y)) => {
                    if y.bound > x.bound {
                        updated.push(i);
                        Some(y.clone())
                    } else {
                        Some(x.clone())
                    }
                }
            })
            .collect();
        let parity = self.parity.iter().copied().filter(|f| new.parity.contains(f)).collect();
        (Abstracted { point: self.point, entries, parity }, updated)
    }
}

/// Joins parity facts.
pub fn join_parity(a: &Parity, b: &Parity) -> Parity {
    a.iter().copied().filter(|f| b.contains(f)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(b: i128) -> Option<Entry> {
        Some(Entry { bound: b, policy: None, backpointer: None })
    }

    #[test]
    fn join_takes_larger_bounds_and_keeps_old_entries_on_ties() {
        let a = Abstracted { point: 0, entries: vec![e(1), e(0), e(5)], parity: vec![(VarId(1), 0), (VarId(2), 1)] };
        let mut b = Abstracted { point: 0, entries: vec![e(10), e(0), None], parity: vec![(VarId(1), 0), (VarId(2), 0)] };
        b.entries[1].as_mut().unwrap().backpointer = Some(7);
        let (j, updated) = a.join(&b);
        assert_eq!(j.entries[0].as_ref().unwrap().bound, 10);
        assert_eq!(j.entries[1].as_ref().unwrap().backpointer, None, "ties keep the reached entry");
        assert!(j.entries[2].is_none(), "unbounded wins");
        assert_eq!(updated, vec![0, 2]);
        assert_eq!(j.parity, vec![(VarId(1), 0)]);
        assert!(a.leq(&j) && b.leq(&j));
        assert!(!j.leq(&a));
    }
}
