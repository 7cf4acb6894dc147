//! The OPT-SMT queries of local policy iteration (seed 004 Alg. 2 "LPI Abstraction" and the
//! §4 input-independence check): coverage, one maximisation per template by galloping and
//! bisection over plain satisfiability queries, and parity facts at a block's exit.

use std::collections::{BTreeSet, HashMap};

use z3::ast::{Bool, Int};
use z3::{Model, Params};

use super::encoding::{encode_block, model_path, nonstrict_bool, EncBlock};
use super::{AbsOutcome, MaxOutcome, OptStats};
use crate::analyses::template::block::BlockGraph;
use crate::analyses::template::state::Conj;
use crate::analyses::template::templates::LinearForm;
use crate::cfa::Program;
use crate::core::Cancel;
use crate::ir::VarId;
use crate::smt::{check, solver, Sat};

/// The OPT-SMT side of local policy iteration: blocks encoded over integers, cached by id.
pub struct LpiSmt<'p> {
    pub(super) p: &'p Program,
    pub(super) mods: std::sync::Arc<Vec<BTreeSet<VarId>>>,
    pub(super) cancel: Cancel,
    pub query_ms: u64,
    blocks: HashMap<u32, EncBlock<'p>>,
    pub stats: OptStats,
}

impl<'p> LpiSmt<'p> {
    pub fn new(p: &'p Program, mods: std::sync::Arc<Vec<BTreeSet<VarId>>>, cancel: Cancel, query_ms: u64) -> Self {
        LpiSmt { p, mods, cancel, query_ms, blocks: HashMap::new(), stats: OptStats::default() }
    }

    fn block(&mut self, id: u32, g: &BlockGraph) -> &mut EncBlock<'p> {
        let (p, mods) = (self.p, self.mods.clone());
        self.blocks.entry(id).or_insert_with(|| encode_block(p, &mods, g, true, &format!("lpi{}", id)))
    }

    fn sat(&mut self, s: &z3::Solver) -> Sat {
        self.stats.sat_queries += 1;
        check(s)
    }

    /// Abstraction (Alg. 2) of the block `id` from `pre` at its start to its exit node
    /// `exit`: a coverage check against the reached state (`reached`, if the exit's point has
    /// one), then one `Optimize` query per objective `(template, lower)`, where `lower` adds
    /// the "strictly better" lemma `t > lower`. `skip[k]` leaves objective `k` out. Parity
    /// facts are computed for `parity_vars`.
    #[allow(clippy::too_many_arguments)]
    pub fn abstraction(
        &mut self,
        id: u32,
        g: &BlockGraph,
        pre: &[Conj],
        exit: u32,
        reached: Option<&[Conj]>,
        objectives: &[(LinearForm, Option<i128>)],
        skip: &[bool],
        parity_vars: &[VarId],
    ) -> AbsOutcome {
        let p = self.p;
        let (cancel, ms) = (self.cancel.clone(), self.query_ms);
        let x = exit as usize;
        let b = self.block(id, g);
        let pre_terms: Vec<Bool> = pre.iter().filter_map(|c| b.conj(p, 0, c)).collect();
        let exceed: Option<Vec<Bool>> = reached.map(|r| r.iter().filter_map(|c| b.exceeds(p, x, c)).collect());
        let obj_terms: Vec<Option<Int>> = objectives.iter().map(|(f, _)| b.int_form(x, f)).collect();
        let par_terms: Vec<Option<Int>> = parity_vars.iter().map(|&v| b.var(x, v).and_then(|t| t.as_int())).collect();
        let mut memo = HashMap::new();
        let pre_terms: Vec<Bool> = pre_terms.iter().map(|c| nonstrict_bool(c, &mut memo)).collect();
        let s = solver(&cancel, ms);
        for c in b.constraints.iter().chain(&pre_terms) {
            s.assert(c);
        }
        s.assert(&b.reach[x]);
        let b_marks = b.marks.clone();
        // Coverage (the stop operator, decided on the formula) or feasibility.
        match exceed {
            Some(ex) => {
                s.push();
                let refs: Vec<&Bool> = ex.iter().collect();
                s.assert(Bool::or(&refs));
                let r = self.sat(&s);
                s.pop(1);
                if r == Sat::Unsat {
                    return AbsOutcome::Covered;
                }
            }
            None => {
                if self.sat(&s) == Sat::Unsat {
                    return AbsOutcome::Bottom;
                }
            }
        }
        let mut outcomes = Vec::with_capacity(objectives.len());
        for (k, (_, lower)) in objectives.iter().enumerate() {
            if skip.get(k).copied().unwrap_or(false) {
                outcomes.push(None);
                continue;
            }
            let Some(t) = &obj_terms[k] else {
                outcomes.push(Some(MaxOutcome::GaveUp("template over a non-scalar".into())));
                continue;
            };
            let o = self.maximize(&s, t, *lower, &mut |m| model_path(g, &b_marks, m, exit));
            outcomes.push(Some(o));
        }
        // Parity at the exit (the congruence analysis, strengthened by the template bounds).
        let mut parity = Vec::new();
        for (k, &v) in parity_vars.iter().enumerate() {
            let Some(t) = &par_terms[k] else { continue };
            let two = Int::from_i64(2);
            let mut holds = None;
            for r in [0i64, 1] {
                s.push();
                s.assert(t.modulo(&two).eq(Int::from_i64(1 - r)));
                let res = self.sat(&s);
                s.pop(1);
                if res == Sat::Unsat {
                    holds = Some(r as u8);
                    break;
                }
            }
            if let Some(r) = holds {
                parity.push((v, r));
            }
        }
        AbsOutcome::Abstracted { outcomes, parity }
    }

    /// One objective: push, the lemma, maximise, pop. The maximum is found with plain
    /// satisfiability queries (a model's value, then galloping and bisection above it, each
    /// step `t >= k`), not with Z3's `Optimize`: Z3 4.8.12's optimiser can crash the process
    /// when a query is cancelled by its timeout or an interrupt (seen on `ddlm2013.i`), and a
    /// language server must survive a cancelled job. The bound is established by the last
    /// unsatisfiable query, so no separate confirmation is needed.
    pub(super) fn maximize(
        &mut self,
        s: &z3::Solver,
        t: &Int,
        lower: Option<i128>,
        path: &mut dyn FnMut(&Model) -> Option<Vec<u32>>,
    ) -> MaxOutcome {
        self.stats.lp_queries += 1;
        s.push();
        if let Some(l) = lower {
            s.assert(t.ge(Int::from_i128(l + 1)));
        }
        let out = self.climb(s, t, lower.is_some(), path);
        s.pop(1);
        if matches!(out, MaxOutcome::GaveUp(_)) {
            self.stats.gave_up += 1;
        }
        out
    }

    /// A query within the per-query limit (and the deadline).
    fn sat_within(&mut self, s: &z3::Solver) -> Sat {
        let ms = self.cancel.remaining_ms().map_or(self.query_ms, |r| r.min(self.query_ms)).max(1);
        let mut prm = Params::new();
        prm.set_u32("timeout", ms.min(u32::MAX as u64) as u32);
        s.set_params(&prm);
        if self.cancel.check().is_err() {
            return Sat::Unknown("cancelled".into());
        }
        self.sat(s)
    }

    /// The maximum of `t` over the solver's assertions.
    fn climb(&mut self, s: &z3::Solver, t: &Int, has_lower: bool, path: &mut dyn FnMut(&Model) -> Option<Vec<u32>>) -> MaxOutcome {
        // Beyond this the template is taken as unbounded (no bound is the weaker claim).
        const UNBOUNDED: i128 = 1 << 100;
        let value_of = |s: &z3::Solver, path: &mut dyn FnMut(&Model) -> Option<Vec<u32>>| -> Option<(i128, Option<Vec<u32>>)> {
            let m = s.get_model()?;
            let v = m.eval(t, true)?.as_i64().map(i128::from).or_else(|| m.eval(t, true)?.to_string().parse().ok())?;
            Some((v, path(&m)))
        };
        let (mut v, mut pth) = match self.sat_within(s) {
            Sat::Unsat => return if has_lower { MaxOutcome::NotBetter } else { MaxOutcome::Infeasible },
            Sat::Unknown(why) => return MaxOutcome::GaveUp(why),
            Sat::Sat => match value_of(s, path) {
                Some(x) => x,
                None => return MaxOutcome::GaveUp("no model value for the template".into()),
            },
        };
        // Galloping: t >= v + 1, v + 2, v + 4, … until unsatisfiable; `hi` is then a bound.
        let mut step: i128 = 1;
        let mut hi = loop {
            if v >= UNBOUNDED {
                return MaxOutcome::Unbounded;
            }
            s.push();
            s.assert(t.ge(Int::from_i128(v + step)));
            let r = self.sat_within(s);
            let next = if r == Sat::Sat { value_of(s, path) } else { None };
            s.pop(1);
            match r {
                Sat::Unsat => break v + step - 1,
                Sat::Unknown(why) => return MaxOutcome::GaveUp(why),
                Sat::Sat => match next {
                    Some((w, q)) if w >= v + step => {
                        (v, pth) = (w, q);
                        step = step.saturating_mul(2).min(UNBOUNDED);
                    }
                    _ => return MaxOutcome::GaveUp("no model value for the template".into()),
                },
            }
        };
        // Bisection in [v, hi]: v is reached, nothing is above hi.
        while v < hi {
            let mid = v + (hi - v + 1) / 2;
            s.push();
            s.assert(t.ge(Int::from_i128(mid)));
            let r = self.sat_within(s);
            let next = if r == Sat::Sat { value_of(s, path) } else { None };
            s.pop(1);
            match r {
                Sat::Unsat => hi = mid - 1,
                Sat::Unknown(why) => return MaxOutcome::GaveUp(why),
                Sat::Sat => match next {
                    Some((w, q)) if w >= mid && w <= hi => (v, pth) = (w, q),
                    _ => return MaxOutcome::GaveUp("no model value for the template".into()),
                },
            }
        }
        MaxOutcome::Bound { value: v, path: pth }
    }

    /// True if the bound of `form` along `path` (a policy) does not depend on the path's
    /// inputs: `path ∧ form > bound` is unsatisfiable without the start state (§4).
    pub fn input_independent(&mut self, id: u32, g: &BlockGraph, exit: u32, path: &[u32], form: &LinearForm, bound: i128) -> bool {
        let (cancel, ms) = (self.cancel.clone(), self.query_ms);
        let b = self.block(id, g);
        let Some(t) = b.int_form(exit as usize, form) else { return false };
        let s = solver(&cancel, ms);
        for c in &b.constraints {
            s.assert(c);
        }
        s.assert(&b.reach[exit as usize]);
        for &e in path {
            s.assert(&b.marks[e as usize]);
        }
        s.assert(t.ge(Int::from_i128(bound + 1)));
        self.sat(&s) == Sat::Unsat
    }
}
