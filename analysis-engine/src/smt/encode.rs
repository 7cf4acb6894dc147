//! Encoding of C operations as SMT constraints over SSA-indexed bit-vectors: sized
//! two's-complement integers, wrap-around on overflow (signed overflow too: the engine's
//! documented model), truncating division, sign- or zero-extension by type, arrays as SMT
//! arrays, recursion frames.
//!
//! Two modes. *Precise* (confirming counterexamples): undefined behaviour (division by zero,
//! shift out of range) cuts the path, and a taint analysis marks every value that comes from
//! an over-approximation. *Over-approximating* (checking invariants): undefined behaviour
//! yields an arbitrary value, as in the analyses.

use std::collections::HashMap;

use z3::ast::{Array, Bool, BV};
use z3::{Model, Sort};

use crate::cfa::{EdgeKind, Program};
use crate::cpa::{OpCtx, OpKind};
use crate::ir::{BinOp, Expr, IntTy, LValue, Stmt, UnOp, VarId, VarKind};

#[derive(Clone)]
pub(crate) enum VTerm {
    Bv(BV),
    Arr(Array),
}

/// A bit-vector with the reason it is over-approximated, if it is.
#[derive(Clone)]
pub(crate) struct Term {
    pub bv: BV,
    pub taint: Option<&'static str>,
}

fn join(a: Option<&'static str>, b: Option<&'static str>) -> Option<&'static str> {
    a.or(b)
}

/// A constant of a type as a bit-vector.
pub(crate) fn bv_const(v: i128, bits: u32) -> BV {
    let mask: u128 = if bits >= 128 { u128::MAX } else { (1u128 << bits) - 1 };
    let u = (v as u128) & mask;
    BV::from_u64(u as u64, bits)
}

fn bool_to_int(b: &Bool) -> BV {
    b.ite(&bv_const(1, 32), &bv_const(0, 32))
}

/// Observations to evaluate in the model, per step.
#[derive(Default)]
pub(crate) struct Obs {
    pub writes: Vec<(VarId, Option<BV>, BV)>,
    pub reads: Vec<(VarId, Option<BV>, BV)>,
    pub input: Option<BV>,
}

pub(crate) struct Encoder<'p> {
    p: &'p Program,
    /// Precise (confirmation) or over-approximating (invariant checks).
    pub precise: bool,
    pub cur: HashMap<VarId, u32>,
    next: HashMap<VarId, u32>,
    taint: HashMap<(VarId, u32), &'static str>,
    frames: Vec<Vec<(VarId, u32)>>,
    terms: HashMap<(VarId, u32), VTerm>,
    pub constraints: Vec<Bool>,
    /// Why a constraint depends on an over-approximation (first reason).
    pub tainted: Option<&'static str>,
    fresh: u32,
}

impl<'p> Encoder<'p> {
    pub fn new(p: &'p Program, precise: bool) -> Self {
        Encoder {
            p,
            precise,
            cur: HashMap::new(),
            next: HashMap::new(),
            taint: HashMap::new(),
            frames: Vec::new(),
            terms: HashMap::new(),
            constraints: Vec::new(),
            tainted: None,
            fresh: 0,
        }
    }

    pub fn version(&self, v: VarId) -> u32 {
        self.cur.get(&v).copied().unwrap_or(0)
    }

    pub fn term(&mut self, v: VarId, ver: u32) -> VTerm {
        if let Some(t) = self.terms.get(&(v, ver)) {
            return t.clone();
        }
        let name = format!("v{}_{}", v.0, ver);
        let t = match &self.p.var(v).kind {
            VarKind::Int(t) => VTerm::Bv(BV::new_const(name, t.bits as u32)),
            VarKind::Array { elem, .. } => {
                VTerm::Arr(Array::new_const(name, &Sort::bitvector(64), &Sort::bitvector(elem.bits as u32)))
            }
        };
        self.terms.insert((v, ver), t.clone());
        t
    }

    pub fn cur_term(&mut self, v: VarId) -> VTerm {
        let ver = self.version(v);
        self.term(v, ver)
    }

    pub fn cur_taint(&self, v: VarId) -> Option<&'static str> {
        self.taint.get(&(v, self.version(v))).copied()
    }

    /// A new SSA version of `v` (its term is unconstrained until constrained).
    pub fn bump(&mut self, v: VarId, taint: Option<&'static str>) -> VTerm {
        let n = self.next.entry(v).or_insert(0);
        *n += 1;
        let ver = *n;
        self.cur.insert(v, ver);
        if let Some(t) = taint {
            self.taint.insert((v, ver), t);
        }
        self.term(v, ver)
    }

    pub fn fresh_bv(&mut self, bits: u32) -> BV {
        self.fresh += 1;
        BV::new_const(format!("fresh_{}", self.fresh), bits)
    }

    pub fn require(&mut self, c: Bool, taint: Option<&'static str>) {
        if taint.is_some() && self.tainted.is_none() {
            self.tainted = taint;
        }
        self.constraints.push(c);
    }

    pub fn expr(&mut self, e: &Expr) -> Term {
        match e {
            Expr::Const(v, t) => Term { bv: bv_const(*v, t.bits as u32), taint: None },
            Expr::Var(v, _) => {
                let taint = self.cur_taint(*v);
                match self.cur_term(*v) {
                    VTerm::Bv(b) => Term { bv: b, taint },
                    VTerm::Arr(_) => {
                        let bits = e.ty().bits as u32;
                        Term { bv: self.fresh_bv(bits), taint: Some("array used as a value") }
                    }
                }
            }
            Expr::Elem(v, i, t) => {
                let idx = self.expr(i);
                let taint = join(self.cur_taint(*v), idx.taint);
                match self.cur_term(*v) {
                    VTerm::Arr(a) => {
                        let val = a.select(&idx.bv).as_bv().expect("array of bit-vectors");
                        Term { bv: val, taint }
                    }
                    VTerm::Bv(_) => Term { bv: self.fresh_bv(t.bits as u32), taint: Some("scalar indexed as an array") },
                }
            }
            Expr::Unary(op, a, t) => {
                let x = self.expr(a);
                let bv = match op {
                    UnOp::Neg => x.bv.bvneg(),
                    UnOp::BitNot => x.bv.bvnot(),
                    UnOp::LNot => {
                        let z = bv_const(0, a.ty().bits as u32);
                        let b = x.bv.eq(&z);
                        let _ = t;
                        bool_to_int(&b)
                    }
                };
                Term { bv, taint: x.taint }
            }
            Expr::Binary(op, a, b, t) => self.binary(*op, a, b, *t),
            Expr::Cast(a, t) => {
                let x = self.expr(a);
                Term { bv: cast(&x.bv, a.ty(), *t), taint: x.taint }
            }
            Expr::Ite(c, a, b, _) => {
                let c = self.cond(c);
                let x = self.expr(a);
                let y = self.expr(b);
                Term { bv: c.0.ite(&x.bv, &y.bv), taint: join(c.1, join(x.taint, y.taint)) }
            }
            Expr::Unknown(t, why) => Term { bv: self.fresh_bv(t.bits as u32), taint: Some(why.describe()) },
        }
    }

    pub fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr, t: IntTy) -> Term {
        let x = self.expr(a);
        let y = self.expr(b);
        let taint = join(x.taint, y.taint);
        let at = a.ty();
        let signed = at.signed;
        if op.is_comparison() {
            let c = compare(op, &x.bv, &y.bv, signed);
            return Term { bv: bool_to_int(&c), taint };
        }
        let bits = t.bits as u32;
        let bv = match op {
            BinOp::Add => x.bv.bvadd(&y.bv),
            BinOp::Sub => x.bv.bvsub(&y.bv),
            BinOp::Mul => x.bv.bvmul(&y.bv),
            BinOp::BitAnd => x.bv.bvand(&y.bv),
            BinOp::BitOr => x.bv.bvor(&y.bv),
            BinOp::BitXor => x.bv.bvxor(&y.bv),
            BinOp::Div | BinOp::Rem => {
                let nz = y.bv.eq(&bv_const(0, bits)).not();
                let q = match (op, t.signed) {
                    (BinOp::Div, true) => x.bv.bvsdiv(&y.bv),
                    (BinOp::Div, false) => x.bv.bvudiv(&y.bv),
                    (_, true) => x.bv.bvsrem(&y.bv),
                    (_, false) => x.bv.bvurem(&y.bv),
                };
                if self.precise {
                    // Division by zero is undefined: a confirmed path must avoid it.
                    self.require(nz, y.taint);
                    q
                } else {
                    let any = self.fresh_bv(bits);
                    nz.ite(&q, &any)
                }
            }
            BinOp::Shl | BinOp::Shr => {
                let amount = resize(&y.bv, b.ty(), bits);
                // Shifting by a negative amount or by the width or more is undefined.
                let rbits = b.ty().bits as u32;
                let mut ok = if b.ty().signed {
                    y.bv.bvsge(&bv_const(0, rbits))
                } else {
                    Bool::from_bool(true)
                };
                // The right operand is promoted (at least 32 bits), so the width fits in it.
                let limit_ok = if b.ty().signed {
                    y.bv.bvslt(&bv_const(bits as i128, rbits))
                } else {
                    y.bv.bvult(&bv_const(bits as i128, rbits))
                };
                ok = Bool::and(&[&ok, &limit_ok]);
                let shifted = match (op, t.signed) {
                    (BinOp::Shl, _) => x.bv.bvshl(&amount),
                    (_, true) => x.bv.bvashr(&amount),
                    (_, false) => x.bv.bvlshr(&amount),
                };
                if self.precise {
                    self.require(ok, y.taint);
                    shifted
                } else {
                    let any = self.fresh_bv(bits);
                    ok.ite(&shifted, &any)
                }
            }
            _ => unreachable!("comparisons handled above"),
        };
        Term { bv, taint }
    }

    /// A condition as a Boolean (`e != 0`), with its taint.
    pub fn cond(&mut self, e: &Expr) -> (Bool, Option<&'static str>) {
        match e {
            Expr::Binary(op, a, b, _) if op.is_comparison() => {
                let x = self.expr(a);
                let y = self.expr(b);
                (compare(*op, &x.bv, &y.bv, a.ty().signed), join(x.taint, y.taint))
            }
            Expr::Unary(UnOp::LNot, a, _) => {
                let (c, t) = self.cond(a);
                (c.not(), t)
            }
            _ => {
                let x = self.expr(e);
                let z = bv_const(0, e.ty().bits as u32);
                (x.bv.eq(&z).not(), x.taint)
            }
        }
    }

    pub fn read_vars(&mut self, e: &Expr, obs: &mut Obs) {
        let mut vars = Vec::new();
        e.walk(&mut |x| {
            if let Expr::Var(v, _) | Expr::Elem(v, _, _) = x {
                vars.push((x.clone(), *v));
            }
        });
        for (x, v) in vars {
            if self.p.var(v).synthetic {
                continue;
            }
            match &x {
                Expr::Var(..) => {
                    if let VTerm::Bv(b) = self.cur_term(v) {
                        obs.reads.push((v, None, b));
                    }
                }
                Expr::Elem(_, i, _) => {
                    let idx = self.expr(i);
                    let val = self.expr(&x);
                    obs.reads.push((v, Some(idx.bv), val.bv));
                }
                _ => {}
            }
        }
    }

    /// Writes a term to an lvalue, recording the observation.
    pub fn write(&mut self, lhs: &LValue, val: Option<Term>, input: bool, obs: &mut Obs) {
        match lhs {
            LValue::Var(v) => {
                let taint = val.as_ref().and_then(|t| t.taint);
                let nt = self.bump(*v, taint);
                if let VTerm::Bv(b) = nt {
                    if let Some(t) = val {
                        let t = fit(&t.bv, b.get_size());
                        self.constraints.push(b.eq(&t));
                    }
                    if input {
                        obs.input = Some(b.clone());
                    }
                    obs.writes.push((*v, None, b));
                }
            }
            LValue::Elem(v, i) => {
                let idx = self.expr(i);
                let old = self.cur_term(*v);
                let old_taint = self.cur_taint(*v);
                let VTerm::Arr(old) = old else { return };
                let elem_bits = self.p.var(*v).int_ty().bits as u32;
                let value = match &val {
                    Some(t) => fit(&t.bv, elem_bits),
                    None => self.fresh_bv(elem_bits),
                };
                let taint = join(join(old_taint, idx.taint), val.as_ref().and_then(|t| t.taint));
                let stored = old.store(&idx.bv, &value);
                let nt = self.bump(*v, taint);
                if let VTerm::Arr(a) = nt {
                    self.constraints.push(a.eq(&stored));
                }
                if input {
                    obs.input = Some(value.clone());
                }
                obs.writes.push((*v, Some(idx.bv), value));
            }
        }
    }

    pub fn havoc(&mut self, v: VarId, taint: &'static str) {
        self.bump(v, Some(taint));
    }

    pub fn stmt(&mut self, s: &Stmt, obs: &mut Obs) {
        match s {
            Stmt::Assign(lhs, e) => {
                let t = self.expr(e);
                self.write(lhs, Some(t), false, obs);
            }
            Stmt::Input { lhs, .. } => self.write(lhs, None, true, obs),
            Stmt::HavocMemory(why) => {
                for v in self.p.escaped.clone() {
                    self.havoc(v, why.describe());
                }
            }
            Stmt::InitArray { var, zero } => {
                let nt = self.bump(*var, None);
                if let (VTerm::Arr(a), true) = (nt, *zero) {
                    let bits = self.p.var(*var).int_ty().bits as u32;
                    let z = Array::const_array(&Sort::bitvector(64), &bv_const(0, bits));
                    self.constraints.push(a.eq(&z));
                }
            }
            Stmt::Unsupported(_) => {
                for i in 0..self.p.globals.len() {
                    self.havoc(VarId::global(i), "unsupported construct");
                }
                for v in self.p.escaped.clone() {
                    self.havoc(v, "unsupported construct");
                }
                self.tainted.get_or_insert("unsupported construct");
            }
        }
    }

    pub fn op(&mut self, op: &OpCtx) -> Obs {
        let mut obs = Obs::default();
        match op.kind {
            OpKind::Edge(kind) => match kind {
                EdgeKind::Blank => {}
                EdgeKind::Assume { cond, truth } => {
                    let (c, taint) = self.cond(cond);
                    let c = if *truth { c } else { c.not() };
                    self.require(c, taint);
                    self.read_vars(cond, &mut obs);
                }
                EdgeKind::Statement(s) | EdgeKind::Declaration(s) => self.stmt(s, &mut obs),
                EdgeKind::Return(es) => {
                    let rets = self.p.cfa(op.from.func).ret.clone();
                    let terms: Vec<Term> = es.iter().map(|e| self.expr(e)).collect();
                    for (rv, t) in rets.iter().zip(terms) {
                        self.write(&LValue::Var(*rv), Some(t), false, &mut obs);
                    }
                }
                EdgeKind::CallSummary(_) => unreachable!("calls are entered through call operations"),
            },
            OpKind::Call { call, callee, recursive } => {
                let args: Vec<Term> = call.args.iter().map(|e| self.expr(e)).collect();
                if recursive {
                    // Suspend the callee's active frame: remember its versions, start fresh ones.
                    let saved: Vec<(VarId, u32)> =
                        self.cur.iter().filter(|(v, _)| v.func() == Some(callee)).map(|(v, n)| (*v, *n)).collect();
                    for (v, _) in &saved {
                        self.bump(*v, None);
                    }
                    self.frames.push(saved);
                }
                let params = self.p.cfa(callee).params.clone();
                for (i, param) in params.iter().enumerate() {
                    if matches!(self.p.var(*param).kind, VarKind::Array { .. }) {
                        self.havoc(*param, "array passed by value");
                    } else {
                        let t = args.get(i).cloned();
                        self.write(&LValue::Var(*param), t, false, &mut obs);
                    }
                }
            }
            OpKind::Return { call, callee, recursive } => {
                let rets: Vec<Term> = self
                    .p
                    .cfa(callee)
                    .ret
                    .clone()
                    .iter()
                    .map(|&r| {
                        let taint = self.cur_taint(r);
                        match self.cur_term(r) {
                            VTerm::Bv(b) => Term { bv: b, taint },
                            VTerm::Arr(_) => Term { bv: bv_const(0, 32), taint: Some("array return") },
                        }
                    })
                    .collect();
                if recursive {
                    if let Some(saved) = self.frames.pop() {
                        for (v, ver) in saved {
                            if self.p.escaped.contains(&v) {
                                self.havoc(v, "escaped local of a recursive function");
                            } else {
                                self.cur.insert(v, ver);
                            }
                        }
                    }
                }
                for (lhs, t) in call.ret.iter().zip(rets) {
                    self.write(lhs, Some(t), false, &mut obs);
                }
            }
        }
        obs
    }
}

pub(crate) fn compare(op: BinOp, x: &BV, y: &BV, signed: bool) -> Bool {
    match (op, signed) {
        (BinOp::Lt, true) => x.bvslt(y),
        (BinOp::Lt, false) => x.bvult(y),
        (BinOp::Le, true) => x.bvsle(y),
        (BinOp::Le, false) => x.bvule(y),
        (BinOp::Gt, true) => x.bvsgt(y),
        (BinOp::Gt, false) => x.bvugt(y),
        (BinOp::Ge, true) => x.bvsge(y),
        (BinOp::Ge, false) => x.bvuge(y),
        (BinOp::Eq, _) => x.eq(y),
        (BinOp::Ne, _) => x.eq(y).not(),
        _ => unreachable!("not a comparison"),
    }
}

/// Converts a value of type `from` to type `to` (C11 6.3.1.3 as gcc implements it).
fn cast(x: &BV, from: IntTy, to: IntTy) -> BV {
    if to.boolean {
        let z = bv_const(0, from.bits as u32);
        return x.eq(&z).not().ite(&bv_const(1, to.bits as u32), &bv_const(0, to.bits as u32));
    }
    resize(x, from, to.bits as u32)
}

/// Extends (by the source's signedness) or truncates to `bits`.
fn resize(x: &BV, from: IntTy, bits: u32) -> BV {
    let fb = x.get_size();
    if fb == bits {
        x.clone()
    } else if fb > bits {
        x.extract(bits - 1, 0)
    } else if from.signed {
        x.sign_ext(bits - fb)
    } else {
        x.zero_ext(bits - fb)
    }
}

/// Adjusts widths defensively (they agree for well-typed IR).
fn fit(x: &BV, bits: u32) -> BV {
    let fb = x.get_size();
    if fb == bits {
        x.clone()
    } else if fb > bits {
        x.extract(bits - 1, 0)
    } else {
        x.zero_ext(bits - fb)
    }
}

pub(crate) fn value_of(m: &Model, b: &BV, signed_bits: Option<IntTy>) -> Option<i128> {
    let v = m.eval(b, true)?;
    let u = v.as_u64()? as i128;
    Some(match signed_bits {
        Some(t) => t.wrap(u),
        None => u,
    })
}

