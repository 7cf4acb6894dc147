//! The independent check of what local policy iteration found (soundness rule 4; seed 004 §6
//! suggests checking the invariants "for inductiveness using bitvectors"). Candidates are
//! the conjuncts of the final abstracted states; every point the iteration never reached
//! holds `false`. Houdini over the blocks encoded bit-precisely keeps the largest inductive
//! subset: a conjunct at an exit must follow from the annotation at the block's start and the
//! block's formula. If a point thought unreachable turns out reachable, the whole result is
//! rejected (its blocks were never explored). Targets are then checked unreachable from every
//! annotated point. Nothing here depends on the optimiser's answers being right.

use std::collections::{BTreeMap, BTreeSet};

use crate::analyses::template::lpi::Lpi;
use crate::analyses::template::optimize::{CheckSmt, Shown};
use crate::analyses::template::state::{Conj, PointId};
use crate::core::Cancel;
use crate::properties::PropertyKey;

/// Candidate conjuncts per point.
pub type Annotation = BTreeMap<PointId, Vec<Conj>>;

/// The candidates of a finished (or interrupted) iteration.
pub fn candidates(lpi: &Lpi) -> Annotation {
    let mut out = Annotation::new();
    for (i, pt) in lpi.points.iter().enumerate() {
        let c = match pt.state {
            Some(s) => lpi.conj_of(&lpi.states[s as usize]),
            None => vec![Conj::False],
        };
        out.insert(i as PointId, c);
    }
    out
}

fn reached(a: &Annotation, p: PointId) -> bool {
    !matches!(a.get(&p).map(|v| v.as_slice()), None | Some([Conj::False]))
}

/// Houdini: the largest inductive subset of `cands`, or `Err` with the reason when the
/// candidates cannot be made inductive (a point assumed unreachable is reachable, a block
/// could not be encoded, the deadline passed).
pub fn houdini(lpi: &mut Lpi, chk: &mut CheckSmt, mut cands: Annotation, cancel: &Cancel) -> Result<Annotation, String> {
    let mut work: BTreeSet<PointId> = cands.keys().copied().filter(|&p| reached(&cands, p)).collect();
    while let Some(pid) = work.pop_first() {
        cancel.check().map_err(|i| i.describe())?;
        let g = lpi.block(pid);
        if g.truncated {
            return Err("a loop-free region is too large to encode".into());
        }
        if let Some(what) = g.unsupported.first() {
            return Err(format!("{} is not modelled", what));
        }
        let pre = cands.get(&pid).cloned().unwrap_or_default();
        for (qkey, exit) in g.exits.iter() {
            let q = lpi.intern(qkey.clone());
            let post = cands.get(&q).cloned().unwrap_or_else(|| vec![Conj::False]);
            if post.is_empty() {
                continue;
            }
            let shown = chk.implied(pid, &g, &pre, *exit, &post);
            if post == [Conj::False] {
                if shown[0] != Shown::Yes {
                    return Err("a loop head the iteration found unreachable is reachable".into());
                }
                continue;
            }
            let keep: Vec<Conj> = post.iter().zip(&shown).filter(|(_, s)| **s == Shown::Yes).map(|(c, _)| c.clone()).collect();
            if keep.len() != post.len() {
                cands.insert(q, keep);
                work.insert(q);
            }
        }
    }
    Ok(cands)
}

/// The properties whose targets no annotated point's block can reach (`Ok`), or why each of
/// the others is not shown unreachable.
pub fn targets(
    lpi: &mut Lpi,
    chk: &mut CheckSmt,
    inv: &Annotation,
    cancel: &Cancel,
) -> (BTreeSet<PropertyKey>, BTreeMap<PropertyKey, String>) {
    let mut seen: BTreeSet<PropertyKey> = BTreeSet::new();
    let mut failed: BTreeMap<PropertyKey, String> = BTreeMap::new();
    let points: Vec<PointId> = inv.keys().copied().filter(|&p| reached(inv, p)).collect();
    for pid in points {
        let g = lpi.block(pid);
        let pre = inv.get(&pid).cloned().unwrap_or_default();
        for (key, node) in &g.targets {
            seen.insert(*key);
            if failed.contains_key(key) {
                continue;
            }
            if cancel.check().is_err() {
                failed.insert(*key, "timeout".into());
                continue;
            }
            if chk.unreachable(pid, &g, &pre, *node) != Shown::Yes {
                failed.insert(*key, "the template invariants do not exclude this violation".into());
            }
        }
    }
    let ok = seen.into_iter().filter(|k| !failed.contains_key(k)).collect();
    (ok, failed)
}
