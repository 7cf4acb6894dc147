//! Local value determination (seed 004 Alg. 3 "Local Value Determination"): the selected
//! policies of the influencing states, each in a namespace of its own, linked by one unknown
//! per bound, and each objective unknown maximised.

use std::collections::{BTreeSet, HashMap};

use z3::ast::{Bool, Int};

use super::encoding::{apply, nonstrict_bool};
use super::{LpiSmt, MaxOutcome};
use crate::analyses::template::block::BlockGraph;
use crate::analyses::template::templates::LinearForm;
use crate::ir::VarId;
use crate::smt::encode::{Encoder, Theory, VTerm};
use crate::smt::solver;

impl LpiSmt<'_> {
    /// Local value determination (Alg. 3): the policies (paths) of the influencing states,
    /// each in a namespace of its own, linked by the bound variables `d_i`; maximises each
    /// objective variable in turn.
    pub fn value_determination(&mut self, vd: &VdProblem) -> Vec<MaxOutcome> {
        let p = self.p;
        let mods = self.mods.clone();
        let mut enc = Encoder::new(p, Theory::Int { ranges: true, exact: true, parity: false }, false);
        let d: Vec<Int> = (0..vd.n_vars).map(|i| Int::new_const(format!("lpi_vd_d{}", i))).collect();
        let mut cons: Vec<Bool> = Vec::new();
        for &(i, v) in &vd.fixed {
            cons.push(d[i].eq(Int::from_i128(v)));
        }
        for inst in &vd.instances {
            // A namespace: fresh versions of every variable the policy reads or writes.
            let mut vars: BTreeSet<VarId> = BTreeSet::new();
            for &e in inst.path.iter() {
                crate::analyses::template::block::op_vars(p, &mods, inst.block.edges[e as usize].op, &mut vars);
            }
            vars.extend(inst.out.vars());
            for (f, _) in &inst.inputs {
                vars.extend(f.vars());
            }
            vars.extend(inst.parity.iter().map(|&(v, _)| v));
            enc.cur = HashMap::new();
            for &v in &vars {
                enc.bump(v, None);
            }
            let start = enc.cur.clone();
            for &e in inst.path.iter() {
                let g = apply(&mut enc, p, &mods, inst.block.edges[e as usize].op);
                cons.push(g);
            }
            let end = enc.cur.clone();
            let form_at = |enc: &mut Encoder, ssa: &HashMap<VarId, u32>, f: &LinearForm| -> Option<Int> {
                enc.cur = ssa.clone();
                let mut parts = Vec::new();
                for &(v, c) in &f.terms {
                    let VTerm::Scalar(t) = enc.cur_term(v) else { return None };
                    parts.push(Int::mul(&[t.as_int()?, Int::from_i64(c)]));
                }
                Some(if parts.is_empty() { Int::from_i64(0) } else { Int::add(&parts) })
            };
            let Some(out) = form_at(&mut enc, &end, inst.out) else { continue };
            cons.push(d[inst.out_var].eq(&out));
            for (f, bound) in &inst.inputs {
                let Some(t) = form_at(&mut enc, &start, f) else { continue };
                cons.push(match bound {
                    VdBound::Var(j) => t.le(&d[*j]),
                    VdBound::Const(c) => t.le(Int::from_i128(*c)),
                });
            }
            for &(v, r) in inst.parity.iter() {
                enc.cur = start.clone();
                if let VTerm::Scalar(t) = enc.cur_term(v) {
                    if let Some(t) = t.as_int() {
                        cons.push(t.modulo(Int::from_i64(2)).eq(Int::from_i64(r as i64)));
                    }
                }
            }
        }
        cons.extend(std::mem::take(&mut enc.constraints));
        let mut memo = HashMap::new();
        let cons: Vec<Bool> = cons.iter().map(|c| nonstrict_bool(c, &mut memo)).collect();
        let s = solver(&self.cancel, self.query_ms);
        for c in &cons {
            s.assert(c);
        }
        vd.objectives.iter().map(|&o| self.maximize(&s, &d[o], None, &mut |_| None)).collect()
    }
}

/// A bound on an input template in value determination: another unknown, or a constant.
#[derive(Clone, Debug)]
pub enum VdBound {
    Var(usize),
    Const(i128),
}

/// One selected policy in value determination.
pub struct VdInstance<'a> {
    pub block: &'a BlockGraph,
    pub path: &'a [u32],
    /// The unknown `d` equal to the template's value at the end of the path.
    pub out_var: usize,
    pub out: &'a LinearForm,
    /// Constraints on the path's inputs (the backpointer's templates).
    pub inputs: Vec<(&'a LinearForm, VdBound)>,
    /// Parity facts on the inputs (strengthening).
    pub parity: &'a [(VarId, u8)],
}

pub struct VdProblem<'a> {
    pub n_vars: usize,
    /// Unknowns fixed to constants (bounds of policies outside the loop).
    pub fixed: Vec<(usize, i128)>,
    pub instances: Vec<VdInstance<'a>>,
    pub objectives: Vec<usize>,
}
