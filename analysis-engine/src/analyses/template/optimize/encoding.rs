//! Blocks of the template analysis encoded once and queried many times (seed 004 §3): over
//! integers with C's semantics (strict comparisons made non-strict) for OPT-SMT, or over
//! bit-vectors for the checks, with a marking variable per edge that gives the policy.

use std::collections::{BTreeSet, HashMap};

use z3::ast::{Ast, Bool, Dynamic, Int, BV};
use z3::{Model, SortKind};
use z3_sys::DeclKind;

use crate::analyses::template::block::{BOp, BlockGraph};
use crate::analyses::template::state::Conj;
use crate::analyses::template::templates::LinearForm;
use crate::cfa::{EdgeKind, Program};
use crate::core::Op;
use crate::ir::VarId;
use crate::smt::encode::{Encoder, Obs, Theory, VTerm};

/// A block encoded once and queried many times.
pub(super) struct EncBlock<'p> {
    pub(super) enc: Encoder<'p>,
    /// SSA versions at each node.
    pub(super) ssa: Vec<HashMap<VarId, u32>>,
    pub(super) reach: Vec<Bool>,
    pub(super) marks: Vec<Bool>,
    /// Everything asserted about the block (rewritten to non-strict form over integers).
    pub(super) constraints: Vec<Bool>,
    pub(super) int: bool,
}

/// The effect of one operation of a block; returns the guard of the edge.
pub(super) fn apply(enc: &mut Encoder, p: &Program, mods: &[BTreeSet<VarId>], op: BOp) -> Bool {
    match op {
        BOp::Op(o @ Op::Edge(f, e)) => match &p.cfa(f).edge(e).kind {
            EdgeKind::Assume { cond, truth } => {
                let (c, _) = enc.cond(cond);
                if *truth {
                    c
                } else {
                    c.not()
                }
            }
            EdgeKind::Blank => Bool::from_bool(true),
            _ => {
                let ctx = crate::cfa::op_ctx(p, o, false);
                enc.op(&ctx);
                Bool::from_bool(true)
            }
        },
        BOp::Op(o) => {
            let ctx = crate::cfa::op_ctx(p, o, false);
            enc.op(&ctx);
            Bool::from_bool(true)
        }
        BOp::Summary(f, e) => {
            if let EdgeKind::CallSummary(call) = &p.cfa(f).edge(e).kind {
                let mut obs = Obs::default();
                for l in &call.ret {
                    enc.write(l, None, false, &mut obs);
                }
                for &v in &mods[call.callee.0 as usize] {
                    enc.havoc(v, "call");
                }
            }
            Bool::from_bool(true)
        }
    }
}

/// `a < b` becomes `a <= b - 1` (and the like) over integers, everywhere in `d`.
fn nonstrict(d: &Dynamic, memo: &mut HashMap<usize, (Dynamic, Dynamic)>) -> Dynamic {
    if !d.is_app() || d.num_children() == 0 {
        return d.clone();
    }
    let key = d.get_z3_ast().as_ptr() as usize;
    if let Some((_, x)) = memo.get(&key) {
        return x.clone();
    }
    let kids: Vec<Dynamic> = d.children();
    let new: Vec<Dynamic> = kids.iter().map(|k| nonstrict(k, memo)).collect();
    let kind = d.decl().kind();
    let ints = |v: &[Dynamic]| v.len() == 2 && v.iter().all(|k| k.sort_kind() == SortKind::Int);
    let one = Int::from_i64(1);
    let out = match kind {
        DeclKind::Lt if ints(&new) => {
            let (a, b) = (new[0].as_int().expect("int"), new[1].as_int().expect("int"));
            Dynamic::from_ast(&a.le(Int::sub(&[b, one])))
        }
        DeclKind::Gt if ints(&new) => {
            let (a, b) = (new[0].as_int().expect("int"), new[1].as_int().expect("int"));
            Dynamic::from_ast(&a.ge(Int::add(&[b, one])))
        }
        DeclKind::Not if new.len() == 1 && new[0].is_app() && new[0].num_children() == 2 => {
            let inner = &new[0];
            let args = inner.children();
            match inner.decl().kind() {
                DeclKind::Le if ints(&args) => {
                    let (a, b) = (args[0].as_int().expect("int"), args[1].as_int().expect("int"));
                    Dynamic::from_ast(&a.ge(Int::add(&[b, one])))
                }
                DeclKind::Ge if ints(&args) => {
                    let (a, b) = (args[0].as_int().expect("int"), args[1].as_int().expect("int"));
                    Dynamic::from_ast(&a.le(Int::sub(&[b, one])))
                }
                _ => rebuild(d, &kids, &new),
            }
        }
        _ => rebuild(d, &kids, &new),
    };
    // The key term is kept alive with its image, so that its address is never reused.
    memo.insert(key, (d.clone(), out.clone()));
    out
}

fn rebuild(d: &Dynamic, old: &[Dynamic], new: &[Dynamic]) -> Dynamic {
    if old.iter().zip(new).all(|(a, b)| a.get_z3_ast() == b.get_z3_ast()) {
        return d.clone();
    }
    let refs: Vec<&dyn Ast> = new.iter().map(|x| x as &dyn Ast).collect();
    d.decl().apply(&refs)
}

pub(super) fn nonstrict_bool(b: &Bool, memo: &mut HashMap<usize, (Dynamic, Dynamic)>) -> Bool {
    nonstrict(&Dynamic::from_ast(b), memo).as_bool().expect("a Boolean stays Boolean")
}

pub(super) fn encode_block<'p>(p: &'p Program, mods: &[BTreeSet<VarId>], g: &BlockGraph, int: bool, tag: &str) -> EncBlock<'p> {
    let theory = if int { Theory::Int { ranges: true, exact: true, parity: false } } else { Theory::BitVec };
    let mut enc = Encoder::new(p, theory, false);
    let marks: Vec<Bool> = (0..g.edges.len()).map(|e| Bool::new_const(format!("{}_m{}", tag, e))).collect();
    let mut edge_ssa: Vec<Option<HashMap<VarId, u32>>> = vec![None; g.edges.len()];
    let mut ssa = Vec::with_capacity(g.nodes.len());
    let mut reach = Vec::with_capacity(g.nodes.len());
    let mut extra = Vec::new();
    for (i, node) in g.nodes.iter().enumerate() {
        let (r, s) = if i == 0 {
            (Bool::from_bool(true), HashMap::new())
        } else {
            let ins: Vec<(Bool, HashMap<VarId, u32>)> =
                node.inc.iter().map(|&e| (marks[e as usize].clone(), edge_ssa[e as usize].take().unwrap_or_default())).collect();
            if ins.is_empty() {
                (Bool::from_bool(false), HashMap::new())
            } else {
                crate::smt::block::merge(&mut enc, ins)
            }
        };
        for &e in &node.out {
            enc.cur = s.clone();
            let guard = apply(&mut enc, p, mods, g.edges[e as usize].op);
            extra.push(marks[e as usize].iff(Bool::and(&[&r, &guard])));
            edge_ssa[e as usize] = Some(enc.cur.clone());
        }
        ssa.push(s);
        reach.push(r);
    }
    let mut constraints: Vec<Bool> = std::mem::take(&mut enc.constraints);
    constraints.extend(extra);
    if int {
        let mut memo = HashMap::new();
        constraints = constraints.iter().map(|c| nonstrict_bool(c, &mut memo)).collect();
    }
    EncBlock { enc, ssa, reach, marks, constraints, int }
}

impl<'p> EncBlock<'p> {
    /// The scalar term of `v` at node `i` (new range constraints join the block's).
    pub(super) fn var(&mut self, i: usize, v: VarId) -> Option<Dynamic> {
        self.enc.cur = self.ssa[i].clone();
        let before = self.enc.constraints.len();
        let t = match self.enc.cur_term(v) {
            VTerm::Scalar(d) => Some(d),
            VTerm::Arr(_) => None,
        };
        let new: Vec<Bool> = self.enc.constraints.drain(before..).collect();
        let mut memo = HashMap::new();
        for c in new {
            self.constraints.push(if self.int { nonstrict_bool(&c, &mut memo) } else { c });
        }
        t
    }

    /// `Σ c·x` at node `i` over integers.
    pub(super) fn int_form(&mut self, i: usize, f: &LinearForm) -> Option<Int> {
        let mut parts = Vec::new();
        for &(v, c) in &f.terms {
            let t = self.var(i, v)?.as_int()?;
            parts.push(if c == 1 { t } else { Int::mul(&[t, Int::from_i64(c)]) });
        }
        Some(if parts.is_empty() { Int::from_i64(0) } else { Int::add(&parts) })
    }

    /// A conjunct at node `i` as a Boolean (over integers or wide bit-vectors); `None` if a
    /// variable has no scalar term.
    pub(super) fn conj(&mut self, p: &Program, i: usize, c: &Conj) -> Option<Bool> {
        Some(match c {
            Conj::False => Bool::from_bool(false),
            Conj::Le(f, d) => {
                if self.int {
                    self.int_form(i, f)?.le(Int::from_i128(*d))
                } else {
                    self.bv_le(p, i, f, *d)?
                }
            }
            Conj::Parity(v, r) => {
                let t = self.var(i, *v)?;
                if self.int {
                    t.as_int()?.modulo(Int::from_i64(2)).eq(Int::from_i64(*r as i64))
                } else {
                    let b = t.as_bv()?;
                    b.extract(0, 0).eq(BV::from_u64(*r as u64, 1))
                }
            }
        })
    }

    /// `form > bound` (the negation of a `Le` conjunct), `form ≢ r` for parity.
    pub(super) fn exceeds(&mut self, p: &Program, i: usize, c: &Conj) -> Option<Bool> {
        Some(match c {
            Conj::Le(f, d) if self.int => self.int_form(i, f)?.ge(Int::from_i128(d + 1)),
            other => self.conj(p, i, other)?.not(),
        })
    }

    /// `Σ c·x <= d` over bit-vectors wide enough that the sum cannot overflow.
    fn bv_le(&mut self, p: &Program, i: usize, f: &LinearForm, d: i128) -> Option<Bool> {
        let (lo, hi) = f.range(p);
        if d >= hi {
            return Some(Bool::from_bool(true));
        }
        if d < lo {
            return Some(Bool::from_bool(false));
        }
        let maxbits = f.terms.iter().map(|&(v, _)| p.var(v).int_ty().bits as u32).max().unwrap_or(1);
        let coeff: u128 = f.terms.iter().map(|&(_, c)| c.unsigned_abs() as u128).sum();
        let width = maxbits + 2 + (128 - coeff.leading_zeros());
        if width > 127 {
            return None;
        }
        let mut sum: Option<BV> = None;
        for &(v, c) in &f.terms {
            let t = self.var(i, v)?.as_bv()?;
            let ty = p.var(v).int_ty();
            let ext = if ty.signed { t.sign_ext(width - t.get_size()) } else { t.zero_ext(width - t.get_size()) };
            let term = ext.bvmul(crate::smt::encode::bv_const(c as i128, width));
            sum = Some(match sum {
                None => term,
                Some(s) => s.bvadd(&term),
            });
        }
        Some(sum?.bvsle(crate::smt::encode::bv_const(d, width)))
    }
}

pub(super) fn model_path(g: &BlockGraph, marks: &[Bool], m: &Model, exit: u32) -> Option<Vec<u32>> {
    g.path_to(exit, |e| m.eval(&marks[e as usize], true).and_then(|b| b.as_bool()).unwrap_or(false))
}
