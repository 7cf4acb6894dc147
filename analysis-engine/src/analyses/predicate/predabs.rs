//! Predicate abstraction (seed 001 §5.4, seed 003 §5): the strongest Boolean combination of
//! predicates (Boolean abstraction, by enumerating models over predicate indicators) or the
//! strongest conjunction of predicate literals (Cartesian abstraction, two implication checks
//! per predicate) implied by an abstraction and a block of operations. The block is encoded
//! on exact integers (C's wrap-around included, bit operations over-approximated), where
//! linear reasoning is fast and predicates are read directly.

use std::collections::HashMap;

use z3::ast::{Bool, Int};
use z3::SatResult;

use crate::analyses::predicate::precision::{PredId, PredTable};
use crate::cfa::block::Block;
use crate::cfa::op_ctx;
use crate::cfa::Program;
use crate::core::Cancel;
use crate::ir::{VarId, VarKind};
use crate::smt::dag::encode_dag;
use crate::smt::encode::{Encoder, Theory, VTerm};
use crate::smt::linpred::{LinPred, Rel};
use crate::smt::solver;

/// Most cubes a Boolean abstraction enumerates before falling back to Cartesian.
const MAX_CUBES: usize = 256;

/// Per-query limit of abstraction queries.
const QUERY_MS: u64 = 5_000;

/// A region as a disjunction of cubes of predicate literals (`[]` is false, `[[]]` true).
pub type Dnf = Vec<Vec<(PredId, bool)>>;

/// A predicate on the values the variables have at SSA versions `ssa` (version 0 if absent),
/// over the exact integer encoding (values are the C values, so the linear form is exact).
pub(crate) fn pred_formula(enc: &mut Encoder, p: &LinPred, ssa: &HashMap<VarId, u32>) -> Option<Bool> {
    if enc.theory == Theory::BitVec {
        return pred_formula_bv(enc, p, ssa);
    }
    let mut sum = vec![Int::from_i128(p.constant)];
    for &(v, c) in &p.terms {
        let term = match enc.term(v, ssa.get(&v).copied().unwrap_or(0)) {
            VTerm::Scalar(d) => d.as_int()?,
            VTerm::Arr(_) => return None,
        };
        sum.push(if c == 1 { term } else { Int::mul(&[term, Int::from_i128(c)]) });
    }
    let sum = Int::add(&sum);
    let zero = Int::from_i64(0);
    Some(match p.rel {
        Rel::Le => sum.le(&zero),
        Rel::Eq => sum.eq(&zero),
        Rel::Mod(m) => sum.modulo(Int::from_i128(m)).eq(&zero),
    })
}

/// Bits of the bit-vector sum of a predicate: 64-bit values times coefficients that fit in
/// 32 bits, summed over a handful of terms, cannot overflow 128 bits, so the sum is exact.
const WIDE: u32 = 128;

/// [`pred_formula`] over bit-vector terms: each C value widened (by its signedness) to
/// [`WIDE`] bits, so the linear form is computed exactly as over the integers.
fn pred_formula_bv(enc: &mut Encoder, p: &LinPred, ssa: &HashMap<VarId, u32>) -> Option<Bool> {
    use z3::ast::BV;
    let fits = |c: i128| c.abs() < (1i128 << 32);
    if p.terms.len() > 16 || !fits(p.constant) || p.terms.iter().any(|&(_, c)| !fits(c)) {
        return None;
    }
    let mut sum = BV::from_i64(p.constant as i64, WIDE);
    for &(v, c) in &p.terms {
        let VarKind::Int(t) = enc.p.var(v).kind else { return None };
        let VTerm::Scalar(d) = enc.term(v, ssa.get(&v).copied().unwrap_or(0)) else { return None };
        let b = d.as_bv()?;
        let ext = WIDE - b.get_size();
        let wide = if t.signed { b.sign_ext(ext) } else { b.zero_ext(ext) };
        sum = sum.bvadd(&if c == 1 { wide } else { wide.bvmul(BV::from_i64(c as i64, WIDE)) });
    }
    let zero = BV::from_i64(0, WIDE);
    Some(match p.rel {
        Rel::Le => sum.bvsle(&zero),
        Rel::Eq => sum.eq(&zero),
        // A multiple of 2^k has k low zero bits (in two's complement too): no divider circuit.
        Rel::Mod(m) if m > 0 && m.count_ones() == 1 => {
            let k = m.trailing_zeros();
            if k == 0 {
                Bool::from_bool(true)
            } else {
                sum.extract(k - 1, 0).eq(BV::from_i64(0, k))
            }
        }
        Rel::Mod(m) if m > 0 && fits(m) => sum.bvsrem(BV::from_i64(m as i64, WIDE)).eq(&zero),
        Rel::Mod(_) => return None,
    })
}

/// A region as a formula over the versions in `ssa`.
pub(crate) fn region_formula(enc: &mut Encoder, table: &PredTable, dnf: &Dnf, ssa: &HashMap<VarId, u32>) -> Bool {
    let mut cubes = Vec::new();
    for cube in dnf {
        let mut lits = Vec::new();
        for &(id, pos) in cube {
            if let Some(f) = pred_formula(enc, table.get(id), ssa) {
                lits.push(if pos { f } else { f.not() })
            }
        }
        let refs: Vec<&Bool> = lits.iter().collect();
        cubes.push(if refs.is_empty() { Bool::from_bool(true) } else { Bool::and(&refs) });
    }
    let refs: Vec<&Bool> = cubes.iter().collect();
    if refs.is_empty() {
        Bool::from_bool(false)
    } else {
        Bool::or(&refs)
    }
}

/// The outcome of an abstraction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AbsResult {
    /// The abstraction as cubes over the requested predicates.
    Region(Dnf),
    /// The block is infeasible from the start region.
    False,
    /// The solver gave up: no information (the caller over-approximates with `true`).
    GaveUp,
}

/// True if some operation of the block is an assumption (which could make it infeasible).
fn has_assume(p: &Program, block: &Block) -> bool {
    block.topological().iter().filter_map(|b| b.node()).any(|n| {
        n.preds
            .iter()
            .any(|(_, op, rec)| matches!(op_ctx(p, *op, *rec).kind, crate::cfa::OpKind::Edge(crate::cfa::EdgeKind::Assume { .. })))
    })
}

/// Computes the abstraction of `start ∧ block` over `preds`.
pub fn abstraction(
    p: &Program,
    table: &PredTable,
    start: &Dnf,
    block: &Block,
    preds: &[PredId],
    cartesian: bool,
    cancel: &Cancel,
) -> AbsResult {
    // Nothing to decide: no predicate to compute and no condition that could make the block
    // infeasible.
    if preds.is_empty() && !start.is_empty() && !has_assume(p, block) {
        return AbsResult::Region(vec![vec![]]);
    }
    // Exact integers (C's wrap-around as modular constraints) decide linear blocks fastest; a
    // block with a non-linear product is encoded over bit-vectors instead, which stay exact
    // and decidable where non-linear integer arithmetic would not.
    let mut enc = Encoder::new(p, Theory::Int { ranges: true, exact: true, parity: false }, false);
    let mut pre = region_formula(&mut enc, table, start, &HashMap::new());
    let mut dag = encode_dag(&mut enc, p, block);
    if enc.nonlinear {
        enc = Encoder::new(p, Theory::BitVec, false);
        pre = region_formula(&mut enc, table, start, &HashMap::new());
        dag = encode_dag(&mut enc, p, block);
    }
    let s = solver(cancel, QUERY_MS);
    s.assert(&dag.reach);
    let end = enc.cur.clone();
    let lits: Vec<(PredId, Bool)> = preds.iter().filter_map(|&id| pred_formula(&mut enc, table.get(id), &end).map(|f| (id, f))).collect();
    s.assert(&pre);
    for c in &enc.constraints {
        s.assert(c);
    }
    match s.check() {
        SatResult::Unsat => return AbsResult::False,
        SatResult::Unknown => return AbsResult::GaveUp,
        SatResult::Sat => {}
    }
    if lits.is_empty() {
        return AbsResult::Region(vec![vec![]]);
    }
    if !cartesian {
        // Boolean abstraction: enumerate the models' predicate valuations.
        let marks: Vec<Bool> = (0..lits.len()).map(|i| Bool::new_const(format!("pred_mark_{}", i))).collect();
        s.push();
        for (m, (_, f)) in marks.iter().zip(&lits) {
            s.assert(m.eq(f));
        }
        let mut cubes: Dnf = Vec::new();
        let mut complete = false;
        while cubes.len() <= MAX_CUBES {
            let t0 = std::time::Instant::now();
            let r = s.check();
            tracing::trace!("all-SAT check {}: {:?} in {:?}", cubes.len(), r, t0.elapsed());
            match r {
                SatResult::Unsat => {
                    complete = true;
                    break;
                }
                SatResult::Unknown => break,
                SatResult::Sat => {}
            }
            let Some(model) = s.get_model() else { break };
            let mut cube = Vec::new();
            let mut block_lits = Vec::new();
            for (m, (id, _)) in marks.iter().zip(&lits) {
                let val = model.eval(m, true).and_then(|b| b.as_bool()).unwrap_or(false);
                cube.push((*id, val));
                block_lits.push(if val { m.not() } else { m.clone() });
            }
            let refs: Vec<&Bool> = block_lits.iter().collect();
            s.assert(Bool::or(&refs));
            cubes.push(cube);
        }
        s.pop(1);
        if complete {
            return AbsResult::Region(cubes);
        }
    }
    // Cartesian abstraction: the predicate literals the block implies.
    let mut cube = Vec::new();
    for (id, f) in &lits {
        for pos in [true, false] {
            s.push();
            s.assert(&if pos { f.not() } else { f.clone() });
            let implied = s.check() == SatResult::Unsat;
            s.pop(1);
            if implied {
                cube.push((*id, pos));
                break;
            }
        }
    }
    AbsResult::Region(vec![cube])
}
