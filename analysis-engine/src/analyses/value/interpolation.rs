//! Explicit-value interpolation (seed 000 §III-C to §III-E, Alg. 3 and 4): along an infeasible
//! error path, computes for every position the smallest assignment (greedy, in variable order)
//! that still refutes the rest of the path. The variables of these interpolants become the
//! precision at the path's locations. No SMT solver is involved.

use crate::analyses::value::state::ValueState;
use crate::analyses::value::transfer::successor;
use crate::cfa::OpCtx;
use crate::cfa::Program;
use crate::core::{Cancel, Interrupt};
use crate::ir::VarId;

/// Replays operations from a state with full precision; `Err(i)` if operation `i` is
/// infeasible (the strongest post-condition becomes contradicting).
pub fn replay(p: &Program, start: &ValueState, ops: &[OpCtx]) -> Result<ValueState, usize> {
    let mut s = start.clone();
    for (i, op) in ops.iter().enumerate() {
        match successor(p, &s, op) {
            Some(n) => s = n,
            None => return Err(i),
        }
    }
    Ok(s)
}

/// The interpolant after one operation of the path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Interpolant {
    /// An assignment whose variables must be tracked here.
    Assignment(ValueState),
    /// The prefix up to here is already contradicting.
    False,
}

impl Interpolant {
    pub fn vars(&self) -> Vec<VarId> {
        match self {
            Interpolant::Assignment(s) => s.vars(),
            Interpolant::False => Vec::new(),
        }
    }
}

/// Forgets a variable in the current frame and in saved frames.
fn without(s: &ValueState, x: VarId) -> ValueState {
    let mut w = s.clone();
    w.forget(x);
    if w.saved.iter().any(|f| f.cells.iter().any(|(c, _)| c.var == x)) {
        let frames: Vec<_> = w
            .saved
            .iter()
            .map(|f| {
                let mut f = f.clone();
                f.cells.retain(|(c, _)| c.var != x);
                f
            })
            .collect();
        w.saved = frames.into_iter().collect();
    }
    w
}

/// `Interpolate(γ⁻, γ⁺)` of Alg. 3 where `pre = SP_γ⁻({})`: drops every variable whose value
/// is not needed for `suffix` to stay contradicting.
fn interpolate_one(p: &Program, pre: ValueState, suffix: &[OpCtx]) -> ValueState {
    if replay(p, &ValueState::default(), suffix).is_err() {
        return ValueState::default();
    }
    let mut v = pre;
    for x in v.vars() {
        let w = without(&v, x);
        if replay(p, &w, suffix).is_err() {
            v = w;
        }
    }
    v
}

/// Alg. 4: inductive interpolants for an infeasible path; entry `i` holds after `ops[i]`.
/// The last operation gets no interpolant (it enters the target).
pub fn interpolate_path(p: &Program, ops: &[OpCtx], cancel: &Cancel) -> Result<Vec<Interpolant>, Interrupt> {
    let n = ops.len();
    let mut out: Vec<Interpolant> = Vec::with_capacity(n);
    let mut itp = ValueState::default();
    for i in 0..n.saturating_sub(1) {
        if i % 16 == 0 {
            cancel.check()?;
        }
        let Some(pre) = successor(p, &itp, &ops[i]) else {
            // The rest of the path is unreachable: interpolant `false` from here on.
            while out.len() < n.saturating_sub(1) {
                out.push(Interpolant::False);
            }
            return Ok(out);
        };
        if i > 0 && pre == itp {
            // The operation leaves the interpolant unchanged: it stays an interpolant.
            out.push(Interpolant::Assignment(itp.clone()));
            continue;
        }
        itp = interpolate_one(p, pre, &ops[i + 1..]);
        out.push(Interpolant::Assignment(itp.clone()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyses::value::state::ValueState;

    #[test]
    fn restriction_to_the_suffix_domain_is_an_interpolant() {
        // seed 000 §III-C lemma: v⁻|def(v⁺) satisfies the interpolant conditions. With
        // v⁻ = {x↦1, y↦2} and v⁺ = {x↦3}: the restriction {x↦1} is implied by v⁻,
        // contradicts v⁺ and mentions only shared variables.
        let mut vm = ValueState::default();
        vm.set(VarId(0), Some(1));
        vm.set(VarId(1), Some(2));
        let mut vp = ValueState::default();
        vp.set(VarId(0), Some(3));
        let mut itp = vm.clone();
        itp.restrict(|v| vp.is_tracked(v));
        assert!(vm.leq(&itp), "v⁻ ⇒ interpolant");
        let contradicts = itp.cells.iter().any(|(c, v)| vp.cells.get(c).is_some_and(|w| w != v));
        assert!(contradicts, "interpolant ∧ v⁺ is contradicting");
        assert!(itp.vars().iter().all(|v| vm.is_tracked(*v) && vp.is_tracked(*v)));
    }
}
