//! Encoding of C operations as SMT constraints over SSA-indexed terms, in one of two theories:
//!
//! - **bit-vectors** (exact machine integers): sized two's-complement values, wrap-around on
//!   overflow (signed overflow too: the engine's documented model), truncating division,
//!   sign- or zero-extension by type. Used for confirming counterexamples, predicate
//!   abstraction and invariant checks, so that verdicts follow C's semantics exactly;
//! - **integers** (mathematical), in two variants. *Exact*: every result is wrapped into
//!   its C type (`ite(in range, r, r mod 2^n …)`), so linear programs get C's semantics
//!   with arithmetic the solver reasons about well; bit operations it cannot express become
//!   arbitrary values (an over-approximation). Used for predicate abstraction. *Ideal*:
//!   overflow is ignored; used only to *discover* predicates by interpolation, where the
//!   interpolation procedures work — the predicates are then used by the exact analyses, so
//!   this can cost precision, never soundness.
//!
//! Two modes. *Precise* (confirming counterexamples): undefined behaviour (division by zero,
//! shift out of range) cuts the path, and a taint analysis marks every value that comes from
//! an over-approximation. *Over-approximating*: undefined behaviour yields an arbitrary value,
//! as in the analyses.

use std::collections::HashMap;
use std::rc::Rc;

use z3::ast::{Array, Ast, Bool, Dynamic, Int, BV};
use z3::{Model, Sort};

use crate::cfa::{EdgeKind, Program};
use crate::cfa::{OpCtx, OpKind};
use crate::ir::{BinOp, Expr, Imprecision, IntTy, LValue, Stmt, UnOp, VarId, VarKind};

/// How integers are represented.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Theory {
    BitVec,
    /// Mathematical integers; with `ranges`, every value is constrained to its C type's range;
    /// with `exact`, arithmetic wraps around as in C (and values are in range); with
    /// `parity`, a product of two unknowns (an unconstrained value) keeps its parity.
    Int {
        ranges: bool,
        exact: bool,
        parity: bool,
    },
}

#[derive(Clone)]
pub(crate) enum VTerm {
    Scalar(Dynamic),
    Arr(Array),
}

/// Why a value is over-approximated (shown as "the counterexample depends on a …").
pub(crate) type Taint = Rc<str>;

/// A term with the reason it is over-approximated, if it is.
#[derive(Clone)]
pub(crate) struct Term {
    pub t: Dynamic,
    pub taint: Option<Taint>,
}

fn join(a: Option<Taint>, b: Option<Taint>) -> Option<Taint> {
    a.or(b)
}

fn tainted_by(why: &str) -> Option<Taint> {
    Some(Rc::from(why))
}

/// The taint of an allocation's address ([`Imprecision::Allocation`]): exact as long as only
/// whether it is null is asked.
fn allocation() -> Option<Taint> {
    tainted_by(Imprecision::Allocation.describe())
}

/// The taint of a comparison function's result ([`Imprecision::Sign`]): exact as long as it is
/// only compared with 0.
fn sign_only() -> Option<Taint> {
    tainted_by(Imprecision::Sign.describe())
}

/// The taint of a value computed from others: an allocation's address used in arithmetic or
/// compared with anything but null is an unknown address; arithmetic on a comparison's result
/// depends on its unspecified magnitude.
fn computed(t: Option<Taint>) -> Option<Taint> {
    if t == allocation() {
        tainted_by(Imprecision::Address.describe())
    } else if t == sign_only() {
        tainted_by("value computed from the result of a comparison function (only its sign is specified)")
    } else {
        t
    }
}

/// The taint of a null test of a value: none for an allocation's address or a comparison's
/// result (whether it is 0 is exact).
fn null_test(t: Option<Taint>) -> Option<Taint> {
    if t == allocation() || t == sign_only() {
        None
    } else {
        t
    }
}

/// `0`, possibly converted (`NULL`, `(void *)0`).
fn is_null_constant(e: &Expr) -> bool {
    match e {
        Expr::Const(0, _) => true,
        Expr::Cast(a, _) => is_null_constant(a),
        _ => false,
    }
}

/// A constant of a type as a bit-vector.
pub(crate) fn bv_const(v: i128, bits: u32) -> BV {
    let mask: u128 = if bits >= 128 { u128::MAX } else { (1u128 << bits) - 1 };
    let u = (v as u128) & mask;
    if bits <= 64 {
        BV::from_u64(u as u64, bits)
    } else {
        BV::from_str(bits, &u.to_string()).expect("numeral")
    }
}

fn bv(d: &Dynamic) -> BV {
    d.as_bv().expect("a bit-vector term")
}

fn int(d: &Dynamic) -> Int {
    d.as_int().expect("an integer term")
}

/// Observations to evaluate in the model, per step.
#[derive(Default)]
pub(crate) struct Obs {
    pub writes: Vec<(VarId, Option<Dynamic>, Dynamic)>,
    pub reads: Vec<(VarId, Option<Dynamic>, Dynamic)>,
    pub input: Option<Dynamic>,
}

pub(crate) struct Encoder<'p> {
    pub p: &'p Program,
    pub theory: Theory,
    /// Precise (confirmation) or over-approximating (analyses, invariant checks).
    pub precise: bool,
    pub cur: HashMap<VarId, u32>,
    next: HashMap<VarId, u32>,
    taint: HashMap<(VarId, u32), Taint>,
    frames: Vec<Vec<(VarId, u32)>>,
    terms: HashMap<(VarId, u32), VTerm>,
    /// The SSA variable behind each scalar constant's name (for reading formulas back).
    pub names: HashMap<String, (VarId, u32)>,
    pub constraints: Vec<Bool>,
    /// Why a constraint depends on an over-approximation (the last such constraint's reason).
    pub tainted: Option<Taint>,
    fresh: u32,
    /// While encoding one edge of a DAG: the edge's conditions (assumptions, absence of
    /// undefined behaviour), which the DAG conjoins with the edge's reachability instead of
    /// asserting them for every path.
    pub guards: Option<Vec<Bool>>,
    /// Set when a non-linear product was over-approximated by an unconstrained value.
    pub nonlinear: bool,
    /// Precise mode: "this allocation succeeded", one per allocation on the path (kept apart
    /// from `constraints` so that a path which needs a failed allocation can be told apart).
    pub allocations: Vec<Bool>,
    /// Precise mode: array cells at constant indices that hold a tainted value, per SSA version
    /// of the array (a tainted value stored into one object's cell does not taint the reads of
    /// other objects; the whole array's taint is for stores at indices not known).
    cell_taint: HashMap<(VarId, u32), CellTaints>,
    /// Precise mode: "this read at an index not known is not one of the tainted cells", with
    /// the cell's taint; a counterexample is confirmed only under these (see `smt::path`).
    pub separations: Vec<(Bool, Taint)>,
    /// A written value becomes the variable's term itself, simplified, instead of a new
    /// constant equated with it (symbolic execution, `analyses::symbolic`: values are terms
    /// over the inputs, and conditions over constants fold to `true` or `false`).
    pub inline: bool,
}

/// The cells of one array version (by constant index) that hold a tainted value.
type CellTaints = Rc<Vec<(i128, Taint)>>;

/// Where an encoder is on a path: the SSA versions and the suspended recursion frames.
#[derive(Clone)]
pub(crate) struct Snapshot {
    pub cur: HashMap<VarId, u32>,
    frames: Vec<Vec<(VarId, u32)>>,
}

impl<'p> Encoder<'p> {
    pub fn new(p: &'p Program, theory: Theory, precise: bool) -> Self {
        Encoder {
            p,
            theory,
            precise,
            cur: HashMap::new(),
            next: HashMap::new(),
            taint: HashMap::new(),
            frames: Vec::new(),
            terms: HashMap::new(),
            names: HashMap::new(),
            constraints: Vec::new(),
            tainted: None,
            fresh: 0,
            guards: None,
            nonlinear: false,
            allocations: Vec::new(),
            cell_taint: HashMap::new(),
            separations: Vec::new(),
            inline: false,
        }
    }

    /// A new SSA version of `v` whose term is `t` (inline mode).
    fn bind(&mut self, v: VarId, taint: Option<Taint>, t: VTerm) {
        let ver = self.next_version(v, taint);
        self.terms.insert((v, ver), t);
    }

    /// Makes a new SSA version of `v` the current one, with its taint.
    fn next_version(&mut self, v: VarId, taint: Option<Taint>) -> u32 {
        let n = self.next.entry(v).or_insert(0);
        *n += 1;
        let ver = *n;
        self.cur.insert(v, ver);
        if let Some(t) = taint {
            self.taint.insert((v, ver), t);
        }
        ver
    }

    /// Whether taints are kept per array cell: when confirming a path, not inside a DAG.
    fn cell_taints(&self) -> bool {
        self.precise && self.guards.is_none()
    }

    fn cur_cell_taint(&self, v: VarId) -> Option<CellTaints> {
        self.cell_taint.get(&(v, self.version(v))).cloned()
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot { cur: self.cur.clone(), frames: self.frames.clone() }
    }

    pub fn restore(&mut self, s: &Snapshot) {
        self.cur = s.cur.clone();
        self.frames = s.frames.clone();
    }

    fn scalar_sort(&self, t: IntTy) -> Sort {
        match self.theory {
            Theory::BitVec => Sort::bitvector(t.bits as u32),
            Theory::Int { .. } => Sort::int(),
        }
    }

    fn index_sort(&self) -> Sort {
        self.scalar_sort(IntTy::I64)
    }

    /// A constant of a type.
    fn exact(&self) -> bool {
        matches!(self.theory, Theory::Int { exact: true, .. })
    }

    /// C's conversion of a mathematical result into type `t` (exact integers only).
    fn wrap(&self, r: Int, t: IntTy) -> Int {
        if !self.exact() {
            return r;
        }
        if t.boolean {
            return r.eq(Int::from_i64(0)).ite(&Int::from_i64(0), &Int::from_i64(1));
        }
        let (lo, hi) = (Int::from_i128(t.min()), Int::from_i128(t.max()));
        let m = Int::from_i128(1i128 << t.bits);
        let wrapped = if t.signed { Int::add(&[Int::sub(&[r.clone(), lo.clone()]).modulo(&m), lo.clone()]) } else { r.modulo(&m) };
        Bool::and(&[&r.ge(&lo), &r.le(&hi)]).ite(&r, &wrapped)
    }

    pub fn konst(&self, v: i128, t: IntTy) -> Dynamic {
        match self.theory {
            Theory::BitVec => Dynamic::from_ast(&bv_const(v, t.bits as u32)),
            Theory::Int { .. } => Dynamic::from_ast(&Int::from_i128(v)),
        }
    }

    /// The values a variable or input of type `t` can hold: its C range with exact or ranged
    /// integers (0 or 1 for `_Bool`); with bit-vectors, 0 or 1 for `_Bool` (a `_Bool` object
    /// never holds another value, and an input of that type is one of these two).
    fn range(&self, d: &Dynamic, t: IntTy) -> Option<Bool> {
        match self.theory {
            Theory::BitVec if t.boolean => Some(bv(d).bvule(bv_const(1, t.bits as u32))),
            Theory::Int { ranges, exact, .. } if ranges || exact => {
                let x = int(d);
                Some(Bool::and(&[&x.ge(Int::from_i128(t.min())), &x.le(Int::from_i128(t.max()))]))
            }
            _ => None,
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
            VarKind::Int(t) => {
                let d = Dynamic::new_const(name.clone(), &self.scalar_sort(*t));
                if let Some(r) = self.range(&d, *t) {
                    self.constraints.push(r);
                }
                self.names.insert(name, (v, ver));
                VTerm::Scalar(d)
            }
            VarKind::Array { elem, .. } => VTerm::Arr(Array::new_const(name, &self.index_sort(), &self.scalar_sort(*elem))),
        };
        self.terms.insert((v, ver), t.clone());
        t
    }

    pub fn cur_term(&mut self, v: VarId) -> VTerm {
        let ver = self.version(v);
        self.term(v, ver)
    }

    pub fn cur_taint(&self, v: VarId) -> Option<Taint> {
        self.taint.get(&(v, self.version(v))).cloned()
    }

    /// A new SSA version of `v` (its term is unconstrained until constrained).
    pub fn bump(&mut self, v: VarId, taint: Option<Taint>) -> VTerm {
        let ver = self.next_version(v, taint);
        self.term(v, ver)
    }

    pub fn fresh(&mut self, t: IntTy) -> Dynamic {
        self.fresh += 1;
        let d = Dynamic::new_const(format!("fresh_{}", self.fresh), &self.scalar_sort(t));
        if let Some(r) = self.range(&d, t) {
            self.constraints.push(r);
        }
        d
    }

    pub fn require(&mut self, c: Bool, taint: Option<Taint>) {
        // The last tainted constraint names the reason: on a counterexample path it is the
        // one closest to the violation (its condition), the most telling.
        if taint.is_some() {
            self.tainted = taint;
        }
        match &mut self.guards {
            Some(g) => g.push(c),
            None => self.constraints.push(c),
        }
    }

    fn bool_to_int(&self, b: &Bool, t: IntTy) -> Dynamic {
        b.ite(&self.konst(1, t), &self.konst(0, t))
    }

    fn is_zero(&self, d: &Dynamic, t: IntTy) -> Bool {
        d.eq(self.konst(0, t))
    }

    pub fn expr(&mut self, e: &Expr) -> Term {
        match e {
            Expr::Const(v, t) => Term { t: self.konst(*v, *t), taint: None },
            Expr::Var(v, t) => {
                let taint = self.cur_taint(*v);
                match self.cur_term(*v) {
                    VTerm::Scalar(d) => Term { t: d, taint },
                    VTerm::Arr(_) => Term { t: self.fresh(*t), taint: tainted_by("array used as a value") },
                }
            }
            Expr::Elem(v, i, t) => {
                let idx = self.expr(i);
                let mut taint = computed(join(self.cur_taint(*v), idx.taint.clone()));
                let separate = self.cell_taints();
                for (c, why) in self.cur_cell_taint(*v).iter().flat_map(|cells| cells.iter()) {
                    match i.constant() {
                        Some(k) if k == *c => taint = join(taint, Some(why.clone())),
                        Some(_) => {}
                        // Inside a DAG (no separations there) every tainted cell counts.
                        None if !separate => taint = join(taint, Some(why.clone())),
                        None => {
                            let other = idx.t.eq(self.konst(*c, IntTy::I64)).not();
                            self.separations.push((other, why.clone()));
                        }
                    }
                }
                match self.cur_term(*v) {
                    VTerm::Arr(a) => {
                        let x = a.select(&idx.t);
                        // Elements of a `_Bool` array are 0 or 1 (uninitialised ones too).
                        let x = if t.boolean { self.is_zero(&x, *t).not().ite(&self.konst(1, *t), &self.konst(0, *t)) } else { x };
                        Term { t: x, taint }
                    }
                    VTerm::Scalar(_) => Term { t: self.fresh(*t), taint: tainted_by("scalar indexed as an array") },
                }
            }
            Expr::Unary(op, a, t) => {
                let x = self.expr(a);
                let d = match (op, self.theory) {
                    (UnOp::LNot, _) => {
                        let z = self.is_zero(&x.t, a.ty());
                        self.bool_to_int(&z, *t)
                    }
                    (UnOp::Neg, Theory::BitVec) => Dynamic::from_ast(&bv(&x.t).bvneg()),
                    (UnOp::BitNot, Theory::BitVec) => Dynamic::from_ast(&bv(&x.t).bvnot()),
                    (UnOp::Neg, Theory::Int { .. }) => Dynamic::from_ast(&self.wrap(int(&x.t).unary_minus(), *t)),
                    // ~x = -x - 1 on two's-complement integers (always in range).
                    (UnOp::BitNot, Theory::Int { .. }) => Dynamic::from_ast(&Int::sub(&[int(&x.t).unary_minus(), Int::from_i64(1)])),
                };
                let taint = if *op == UnOp::LNot { null_test(x.taint) } else { computed(x.taint) };
                Term { t: d, taint }
            }
            Expr::Binary(op, a, b, t) => self.binary(*op, a, b, *t),
            Expr::Cast(a, t) => {
                let x = self.expr(a);
                let taint = if t.boolean {
                    null_test(x.taint)
                } else if t.bits >= a.ty().bits {
                    x.taint
                } else {
                    computed(x.taint)
                };
                Term { t: self.cast(&x.t, a.ty(), *t), taint }
            }
            Expr::Ite(c, a, b, _) => {
                let c = self.cond(c);
                let x = self.expr(a);
                let y = self.expr(b);
                Term { t: c.0.ite(&x.t, &y.t), taint: computed(join(c.1, join(x.taint, y.taint))) }
            }
            Expr::Unknown(t, why) => {
                let d = self.fresh(*t);
                if *why == Imprecision::Allocation && self.precise {
                    // A counterexample is confirmed only with allocations that succeed.
                    let nonnull = self.is_zero(&d, *t).not();
                    match &mut self.guards {
                        Some(g) => g.push(nonnull),
                        None => self.allocations.push(nonnull),
                    }
                }
                Term { t: d, taint: tainted_by(why.describe()) }
            }
        }
    }

    /// Converts a value of type `from` to type `to` (C11 6.3.1.3 as gcc implements it).
    fn cast(&self, x: &Dynamic, from: IntTy, to: IntTy) -> Dynamic {
        if to.boolean {
            let z = self.is_zero(x, from);
            return z.not().ite(&self.konst(1, to), &self.konst(0, to));
        }
        match self.theory {
            Theory::BitVec => Dynamic::from_ast(&resize(&bv(x), from, to.bits as u32)),
            // Exact integers convert as C does; ideal ones keep the value (see the module doc).
            Theory::Int { .. } => Dynamic::from_ast(&self.wrap(int(x), to)),
        }
    }

    pub fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr, t: IntTy) -> Term {
        let x = self.expr(a);
        let y = self.expr(b);
        let taint = self.operation_taint(op, a, b, &x, &y);
        if op.is_comparison() {
            let c = self.compare(op, &x.t, &y.t, a.ty().signed);
            return Term { t: self.bool_to_int(&c, IntTy::INT), taint };
        }
        let d = match self.theory {
            Theory::BitVec => self.bv_arith(op, &x, &y, b.ty(), t),
            Theory::Int { .. } => self.int_arith(op, &x.t, &y.t, b, t),
        };
        Term { t: d, taint }
    }

    fn bv_arith(&mut self, op: BinOp, x: &Term, y: &Term, bty: IntTy, t: IntTy) -> Dynamic {
        let bits = t.bits as u32;
        let (xb, yb) = (bv(&x.t), bv(&y.t));
        let r = match op {
            BinOp::Add => xb.bvadd(&yb),
            BinOp::Sub => xb.bvsub(&yb),
            BinOp::Mul => xb.bvmul(&yb),
            BinOp::BitAnd => xb.bvand(&yb),
            BinOp::BitOr => xb.bvor(&yb),
            BinOp::BitXor => xb.bvxor(&yb),
            BinOp::Div | BinOp::Rem => {
                let nz = yb.eq(bv_const(0, bits)).not();
                let q = match (op, t.signed) {
                    (BinOp::Div, true) => xb.bvsdiv(&yb),
                    (BinOp::Div, false) => xb.bvudiv(&yb),
                    (_, true) => xb.bvsrem(&yb),
                    (_, false) => xb.bvurem(&yb),
                };
                if self.precise {
                    // Division by zero is undefined: a confirmed path must avoid it.
                    self.require(nz, y.taint.clone());
                    q
                } else {
                    let any = bv(&self.fresh(t));
                    nz.ite(&q, &any)
                }
            }
            BinOp::Shl | BinOp::Shr => {
                let amount = resize(&yb, bty, bits);
                // Shifting by a negative amount or by the width or more is undefined. The right
                // operand is promoted (at least 32 bits), so the width fits in it.
                let rbits = bty.bits as u32;
                let ok = if bty.signed {
                    Bool::and(&[&yb.bvsge(bv_const(0, rbits)), &yb.bvslt(bv_const(bits as i128, rbits))])
                } else {
                    yb.bvult(bv_const(bits as i128, rbits))
                };
                let shifted = match (op, t.signed) {
                    (BinOp::Shl, _) => xb.bvshl(&amount),
                    (_, true) => xb.bvashr(&amount),
                    (_, false) => xb.bvlshr(&amount),
                };
                if self.precise {
                    self.require(ok, y.taint.clone());
                    shifted
                } else {
                    let any = bv(&self.fresh(t));
                    ok.ite(&shifted, &any)
                }
            }
            _ => unreachable!("comparisons are handled by `binary`"),
        };
        Dynamic::from_ast(&r)
    }

    /// Arithmetic on mathematical integers: exact for `+ - *`, C's truncating `/` and `%` by
    /// constants, shifts by constants; anything else is an unconstrained value.
    fn int_arith(&mut self, op: BinOp, x: &Dynamic, y: &Dynamic, b: &Expr, t: IntTy) -> Dynamic {
        let (xi, yi) = (int(x), int(y));
        let konst = match b {
            Expr::Const(c, _) => Some(*c),
            _ => None,
        };
        let r = match (op, konst) {
            (BinOp::Add, _) => Int::add(&[xi, yi]),
            (BinOp::Sub, _) => Int::sub(&[xi, yi]),
            // A product of two unknowns is non-linear: Z3's non-linear integer arithmetic can
            // run for minutes without heeding an interrupt, so outside precise checks it is an
            // unconstrained value (an over-approximation, which interpolants may use).
            // With `parity`, its parity is kept (a product is even iff a factor is; C's
            // wrap-around modulo 2^k keeps parity): `x * (x + 1)` is even.
            (BinOp::Mul, _) if !self.precise && xi.as_i64().is_none() && yi.as_i64().is_none() => {
                self.nonlinear = true;
                let r = self.fresh(t);
                if !matches!(self.theory, Theory::Int { parity: true, .. }) {
                    return r;
                }
                let two = Int::from_i64(2);
                let even = |a: &Int| a.modulo(&two).eq(Int::from_i64(0));
                self.constraints.push(even(&int(&r)).eq(Bool::or(&[&even(&xi), &even(&yi)])));
                return r;
            }
            (BinOp::Mul, _) => Int::mul(&[xi, yi]),
            (BinOp::Div, Some(c)) if c != 0 => c_div(&xi, c),
            (BinOp::Rem, Some(c)) if c != 0 => Int::sub(&[xi.clone(), Int::mul(&[c_div(&xi, c), Int::from_i128(c)])]),
            (BinOp::Shl, Some(k)) if (0..62).contains(&k) => Int::mul(&[xi, Int::from_i128(1i128 << k)]),
            (BinOp::Shr, Some(k)) if (0..62).contains(&k) => xi.div(Int::from_i128(1i128 << k)),
            _ => return self.fresh(t),
        };
        Dynamic::from_ast(&self.wrap(r, t))
    }

    fn compare(&self, op: BinOp, x: &Dynamic, y: &Dynamic, signed: bool) -> Bool {
        match self.theory {
            Theory::BitVec => compare_bv(op, &bv(x), &bv(y), signed),
            Theory::Int { .. } => {
                let (a, b) = (int(x), int(y));
                match op {
                    BinOp::Lt => a.lt(&b),
                    BinOp::Le => a.le(&b),
                    BinOp::Gt => a.gt(&b),
                    BinOp::Ge => a.ge(&b),
                    BinOp::Eq => a.eq(&b),
                    BinOp::Ne => a.eq(&b).not(),
                    _ => unreachable!("not a comparison"),
                }
            }
        }
    }

    /// The taint of `a op b`: none from an allocation's address compared with null.
    fn operation_taint(&self, op: BinOp, a: &Expr, b: &Expr, x: &Term, y: &Term) -> Option<Taint> {
        if op.is_comparison() {
            // A comparison's result against 0: its sign is exact.
            if is_null_constant(b) && x.taint == sign_only() {
                return y.taint.clone();
            }
            if is_null_constant(a) && y.taint == sign_only() {
                return x.taint.clone();
            }
            // An unsigned value against 0 (`u < 0`, `u >= 0`, `0 > u`, `0 <= u`): the same
            // truth for every value, so it depends on none.
            let constant = match op {
                BinOp::Lt | BinOp::Ge => is_null_constant(b) && !a.ty().signed,
                BinOp::Gt | BinOp::Le => is_null_constant(a) && !b.ty().signed,
                _ => false,
            };
            if constant {
                return None;
            }
        }
        if matches!(op, BinOp::Eq | BinOp::Ne) {
            if is_null_constant(b) {
                return join(null_test(x.taint.clone()), y.taint.clone());
            }
            if is_null_constant(a) {
                return join(x.taint.clone(), null_test(y.taint.clone()));
            }
        }
        computed(join(x.taint.clone(), y.taint.clone()))
    }

    /// A condition as a Boolean (`e != 0`), with its taint.
    pub fn cond(&mut self, e: &Expr) -> (Bool, Option<Taint>) {
        match e {
            Expr::Binary(op, a, b, _) if op.is_comparison() => {
                let x = self.expr(a);
                let y = self.expr(b);
                let taint = self.operation_taint(*op, a, b, &x, &y);
                (self.compare(*op, &x.t, &y.t, a.ty().signed), taint)
            }
            Expr::Unary(UnOp::LNot, a, _) => {
                let (c, t) = self.cond(a);
                (c.not(), t)
            }
            _ => {
                let x = self.expr(e);
                (self.is_zero(&x.t, e.ty()).not(), null_test(x.taint))
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
                    if let VTerm::Scalar(d) = self.cur_term(v) {
                        obs.reads.push((v, None, d));
                    }
                }
                Expr::Elem(_, i, _) => {
                    let idx = self.expr(i);
                    let val = self.expr(&x);
                    obs.reads.push((v, Some(idx.t), val.t));
                }
                _ => {}
            }
        }
    }

    /// Writes a term to an lvalue, recording the observation.
    pub fn write(&mut self, lhs: &LValue, val: Option<Term>, input: bool, obs: &mut Obs) {
        match lhs {
            LValue::Var(v) => {
                let taint = val.as_ref().and_then(|t| t.taint.clone());
                let ty = self.p.var(*v).int_ty();
                if let (true, Some(t), false, VarKind::Int(_)) = (self.inline, &val, input, &self.p.var(*v).kind) {
                    let d = self.fit(&t.t, ty).simplify();
                    self.bind(*v, taint, VTerm::Scalar(d.clone()));
                    obs.writes.push((*v, None, d));
                    return;
                }
                let nt = self.bump(*v, taint);
                if let VTerm::Scalar(d) = nt {
                    if let Some(t) = val {
                        let t = self.fit(&t.t, ty);
                        self.constraints.push(d.eq(&t));
                    }
                    if input {
                        obs.input = Some(d.clone());
                    }
                    obs.writes.push((*v, None, d));
                }
            }
            LValue::Elem(v, i) => {
                let idx = self.expr(i);
                let old = self.cur_term(*v);
                let old_taint = self.cur_taint(*v);
                let VTerm::Arr(old) = old else { return };
                let elem = self.p.var(*v).int_ty();
                let value = match &val {
                    Some(t) => self.fit(&t.t, elem),
                    None => self.fresh(elem),
                };
                let val_taint = val.as_ref().and_then(|t| t.taint.clone());
                let old_cells = self.cur_cell_taint(*v);
                let (taint, cells) = match i.constant() {
                    Some(c) if self.cell_taints() && idx.taint.is_none() => {
                        // A store into one known cell: only that cell's taint changes.
                        let mut cells: Vec<(i128, Taint)> =
                            old_cells.iter().flat_map(|l| l.iter()).filter(|(k, _)| *k != c).cloned().collect();
                        cells.extend(val_taint.map(|t| (c, t)));
                        (old_taint, (!cells.is_empty()).then(|| Rc::new(cells)))
                    }
                    _ => (join(join(old_taint, idx.taint), val_taint), old_cells),
                };
                let stored = old.store(&idx.t, &value);
                if self.inline {
                    self.bind(*v, taint, VTerm::Arr(stored.simplify()));
                } else if let VTerm::Arr(a) = self.bump(*v, taint) {
                    self.constraints.push(a.eq(&stored));
                }
                if let Some(cells) = cells {
                    let ver = self.version(*v);
                    self.cell_taint.insert((*v, ver), cells);
                }
                if input {
                    obs.input = Some(value.clone());
                }
                obs.writes.push((*v, Some(idx.t), value));
            }
        }
    }

    /// Adjusts widths defensively (they agree for well-typed IR).
    fn fit(&self, x: &Dynamic, t: IntTy) -> Dynamic {
        match self.theory {
            Theory::BitVec => {
                let b = bv(x);
                let (fb, bits) = (b.get_size(), t.bits as u32);
                Dynamic::from_ast(&if fb == bits {
                    b
                } else if fb > bits {
                    b.extract(bits - 1, 0)
                } else {
                    b.zero_ext(bits - fb)
                })
            }
            Theory::Int { .. } => x.clone(),
        }
    }

    pub fn havoc(&mut self, v: VarId, taint: impl Into<Taint>) {
        self.bump(v, Some(taint.into()));
    }

    pub fn stmt(&mut self, s: &Stmt, obs: &mut Obs) {
        match s {
            Stmt::Assign(lhs, e) => {
                let t = self.expr(e);
                self.write(lhs, Some(t), false, obs);
            }
            Stmt::Input { lhs, source } => match source.unmodelled() {
                // Any value, tainted: a path that depends on it is not confirmed.
                Some(why) => {
                    let t = self.fresh(self.p.var(lhs.var()).int_ty());
                    self.write(lhs, Some(Term { t, taint: Some(Rc::from(why)) }), true, obs);
                }
                None => self.write(lhs, None, true, obs),
            },
            Stmt::HavocMemory(why) => {
                let why: Taint = Rc::from(why.describe());
                for v in self.p.escaped.clone() {
                    self.havoc(v, why.clone());
                }
            }
            Stmt::InitArray { var, zero } => {
                let nt = self.bump(*var, None);
                if let (VTerm::Arr(a), true) = (nt, *zero) {
                    let elem = self.p.var(*var).int_ty();
                    let z = Array::const_array(&self.index_sort(), &self.konst(0, elem));
                    self.constraints.push(a.eq(&z));
                }
            }
            Stmt::Unsupported(what) => {
                let why: Taint = Rc::from(format!("{}, which cpals does not model", what));
                for i in 0..self.p.globals.len() {
                    self.havoc(VarId::global(i), why.clone());
                }
                for v in self.p.escaped.clone() {
                    self.havoc(v, why.clone());
                }
                self.tainted.get_or_insert(why);
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
                            VTerm::Scalar(d) => Term { t: d, taint },
                            VTerm::Arr(_) => Term { t: self.konst(0, IntTy::INT), taint: tainted_by("array return") },
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

/// C's division (truncating towards zero) by a non-zero constant on mathematical integers.
fn c_div(x: &Int, c: i128) -> Int {
    let q = x.div(Int::from_i128(c.abs()));
    let q = if c < 0 { q.unary_minus() } else { q };
    // Euclidean division rounds towards -inf for negative dividends: correct by one.
    let exact = Int::sub(&[x.clone(), Int::mul(&[q.clone(), Int::from_i128(c)])]).eq(Int::from_i64(0));
    let neg = x.lt(Int::from_i64(0));
    let adjust = if c > 0 { Int::add(&[q.clone(), Int::from_i64(1)]) } else { Int::sub(&[q.clone(), Int::from_i64(1)]) };
    Bool::and(&[&neg, &exact.not()]).ite(&adjust, &q)
}

pub(crate) fn compare_bv(op: BinOp, x: &BV, y: &BV, signed: bool) -> Bool {
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

/// Extends (by the source's signedness) or truncates to `bits`.
pub(crate) fn resize(x: &BV, from: IntTy, bits: u32) -> BV {
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

/// The value of a term in a model, as a value of type `ty` when given.
pub(crate) fn value_of(m: &Model, d: &Dynamic, ty: Option<IntTy>) -> Option<i128> {
    let v = m.eval(d, true)?;
    let raw: i128 = if let Some(b) = v.as_bv() {
        b.as_u64()? as i128
    } else if let Some(i) = v.as_int() {
        i.as_i128()?
    } else {
        return None;
    };
    Some(match ty {
        Some(t) => t.wrap(raw),
        None => raw,
    })
}
