//! The program representation CFA edges carry: typed, side-effect-free integer expressions and
//! simple statements, with every C conversion made explicit by the CFA builder.
//!
//! Analyses never see C syntax: integer promotions, usual arithmetic conversions and casts are
//! `Cast` nodes, short-circuit operators are branches of the CFA, and whatever the engine does
//! not model precisely is an explicit `Unknown` value or `HavocMemory` statement tagged with
//! the reason, so that proofs stay sound and counterexample checks know what they cannot confirm.

use std::fmt;

/// An integer type: width in bits and signedness (`_Bool` is 8 bits holding 0 or 1).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IntTy {
    pub bits: u8,
    pub signed: bool,
    pub boolean: bool,
}

impl IntTy {
    pub const BOOL: IntTy = IntTy { bits: 8, signed: false, boolean: true };
    pub const I8: IntTy = IntTy::new(8, true);
    pub const U8: IntTy = IntTy::new(8, false);
    pub const I16: IntTy = IntTy::new(16, true);
    pub const U16: IntTy = IntTy::new(16, false);
    pub const I32: IntTy = IntTy::new(32, true);
    pub const U32: IntTy = IntTy::new(32, false);
    pub const I64: IntTy = IntTy::new(64, true);
    pub const U64: IntTy = IntTy::new(64, false);
    /// The type of comparisons and `!`: C's `int`.
    pub const INT: IntTy = IntTy::I32;

    pub const fn new(bits: u8, signed: bool) -> IntTy {
        IntTy { bits, signed, boolean: false }
    }

    pub fn min(self) -> i128 {
        if self.signed {
            -(1i128 << (self.bits - 1))
        } else {
            0
        }
    }

    pub fn max(self) -> i128 {
        if self.boolean {
            1
        } else if self.signed {
            (1i128 << (self.bits - 1)) - 1
        } else {
            (1i128 << self.bits) - 1
        }
    }

    /// Converts a mathematical integer to this type as C does: `_Bool` tests for non-zero,
    /// every other type keeps the value modulo 2^bits (for signed targets this is the
    /// implementation-defined behaviour of gcc and clang).
    pub fn wrap(self, v: i128) -> i128 {
        if self.boolean {
            return (v != 0) as i128;
        }
        // Two's complement: the low `bits` bits are the value modulo 2^bits.
        let mask = (1i128 << self.bits) - 1;
        let r = v & mask;
        if self.signed && r > self.max() {
            r - (1i128 << self.bits)
        } else {
            r
        }
    }

    pub fn contains(self, v: i128) -> bool {
        self.min() <= v && v <= self.max()
    }

    /// The integer promotion of C11 6.3.1.1: types narrower than `int` become `int`.
    pub fn promote(self) -> IntTy {
        if self.bits < 32 {
            IntTy::INT
        } else {
            IntTy::new(self.bits, self.signed)
        }
    }

    /// The usual arithmetic conversions of C11 6.3.1.8 on promoted operands. With types
    /// characterised by width and signedness this matches C's rank rules on LP64 and ILP32.
    pub fn common(a: IntTy, b: IntTy) -> IntTy {
        let (a, b) = (a.promote(), b.promote());
        if a.signed == b.signed {
            return if a.bits >= b.bits { a } else { b };
        }
        let (u, s) = if a.signed { (b, a) } else { (a, b) };
        if u.bits >= s.bits {
            u
        } else {
            s
        }
    }

    pub fn c_name(self) -> &'static str {
        match (self.boolean, self.bits, self.signed) {
            (true, _, _) => "_Bool",
            (_, 8, true) => "signed char",
            (_, 8, false) => "unsigned char",
            (_, 16, true) => "short",
            (_, 16, false) => "unsigned short",
            (_, 32, true) => "int",
            (_, 32, false) => "unsigned int",
            (_, 64, true) => "long long",
            (_, 64, false) => "unsigned long long",
            _ => "int",
        }
    }
}

/// A variable of the program. Globals and each function's locals are numbered separately; the
/// id packs the owning function (0 for globals) and the index.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

/// Index of a function in [`crate::cfa::Program::functions`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(pub u32);

impl VarId {
    pub const LIMIT: usize = 1 << 16;

    pub fn global(idx: usize) -> VarId {
        VarId(idx as u32)
    }

    pub fn local(func: FuncId, idx: usize) -> VarId {
        VarId(((func.0 + 1) << 16) | idx as u32)
    }

    /// The function owning the variable, or `None` for a global.
    pub fn func(self) -> Option<FuncId> {
        match self.0 >> 16 {
            0 => None,
            f => Some(FuncId(f - 1)),
        }
    }

    pub fn index(self) -> usize {
        (self.0 & 0xffff) as usize
    }
}

/// What kind of storage a variable is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum VarKind {
    /// A scalar integer (pointers are integers of pointer width whose values are opaque).
    Int(IntTy),
    /// An array of integers, flattened to one dimension; `len` is the number of elements.
    Array { elem: IntTy, len: Option<u64> },
}

/// Declaration facts about one variable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VarInfo {
    /// The name as the user wrote it, with `.field` suffixes for flattened struct members.
    pub name: String,
    pub kind: VarKind,
    /// True for temporaries the builder introduced; traces do not show them.
    pub synthetic: bool,
    /// True for pointer-valued variables (their values are addresses, shown as such).
    pub pointer: bool,
}

impl VarInfo {
    pub fn int_ty(&self) -> IntTy {
        match self.kind {
            VarKind::Int(t) => t,
            VarKind::Array { elem, .. } => elem,
        }
    }
}

/// Why a value or an effect is over-approximated rather than modelled.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Imprecision {
    Float,
    PointerRead,
    /// A read of memory whose bytes were last written with another type (or in part), in a
    /// program whose memory carries effective types (`cfa/build/memory.rs`, tagged memory).
    Punning,
    PointerWrite,
    Address,
    /// The address a successful allocation (`malloc`) returns: fresh, and only whether it is
    /// null is modelled (a confirmed counterexample assumes the allocation succeeded).
    Allocation,
    ExternalWrite,
    Union,
    Asm,
    /// Which function a call through a pointer reaches (pointer values are not tracked).
    FunctionPointer,
    /// Whether and with which arguments an external function calls a callback it was given.
    Callback,
    /// A read of a `volatile` object, which may change at any time.
    Volatile,
    /// The result of a library comparison (`strcmp`, `memcmp`) that is not 0: only its sign is
    /// specified, so it is exact only where it is compared with 0.
    Sign,
    Other,
}

impl Imprecision {
    pub fn describe(self) -> &'static str {
        match self {
            Imprecision::Float => "floating-point value (modelled as any value)",
            Imprecision::PointerRead => "read through a pointer (modelled as any value)",
            Imprecision::Punning => "read of memory last written with another type (modelled as any value)",
            Imprecision::PointerWrite => "write through a pointer (havocs addressable memory)",
            Imprecision::Address => "pointer value (modelled as an unknown address)",
            Imprecision::Allocation => "allocated address (only whether it is null is modelled)",
            Imprecision::ExternalWrite => "value an external function may write through its pointer arguments",
            Imprecision::Union => "union member (modelled as any value)",
            Imprecision::Asm => "value written by inline assembly (modelled as any value)",
            Imprecision::FunctionPointer => "call through a function pointer (any function whose address is taken)",
            Imprecision::Callback => "callback an external function may call (any number of times, any arguments)",
            Imprecision::Volatile => "read of a volatile object (it may change at any time)",
            Imprecision::Sign => "result of a comparison function (only its sign is specified)",
            Imprecision::Other => "construct modelled as any value",
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// Arithmetic negation (wraps).
    Neg,
    /// Bitwise complement.
    BitNot,
    /// Logical not: 1 if the operand is zero, else 0; result type `int`.
    LNot,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// Truncating division; division by zero has no value (undefined behaviour).
    Div,
    /// Remainder with the sign of the dividend.
    Rem,
    Shl,
    Shr,
    BitAnd,
    BitOr,
    BitXor,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl BinOp {
    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne)
    }

    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
        }
    }

    /// The comparison that holds exactly when `self` does not.
    pub fn negate(self) -> Option<BinOp> {
        Some(match self {
            BinOp::Lt => BinOp::Ge,
            BinOp::Le => BinOp::Gt,
            BinOp::Gt => BinOp::Le,
            BinOp::Ge => BinOp::Lt,
            BinOp::Eq => BinOp::Ne,
            BinOp::Ne => BinOp::Eq,
            _ => return None,
        })
    }
}

/// A side-effect-free integer expression. The last field of each variant is its type; operands
/// of arithmetic operators already have the result type, operands of comparisons share the
/// type the usual arithmetic conversions chose, and comparisons yield `int`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    Const(i128, IntTy),
    Var(VarId, IntTy),
    /// Element of an array variable; the index is an `i64` expression.
    Elem(VarId, Box<Expr>, IntTy),
    Unary(UnOp, Box<Expr>, IntTy),
    Binary(BinOp, Box<Expr>, Box<Expr>, IntTy),
    Cast(Box<Expr>, IntTy),
    /// `c ? a : b` without side effects (branches of the user's `?:` are CFA branches; this is
    /// for library models such as `abs`).
    Ite(Box<Expr>, Box<Expr>, Box<Expr>, IntTy),
    /// Any value of the type: something the engine over-approximates.
    Unknown(IntTy, Imprecision),
}

impl Expr {
    pub fn ty(&self) -> IntTy {
        match self {
            Expr::Const(_, t)
            | Expr::Var(_, t)
            | Expr::Elem(_, _, t)
            | Expr::Unary(_, _, t)
            | Expr::Binary(_, _, _, t)
            | Expr::Cast(_, t)
            | Expr::Ite(_, _, _, t)
            | Expr::Unknown(t, _) => *t,
        }
    }

    pub fn int(v: i128) -> Expr {
        Expr::Const(v, IntTy::INT)
    }

    /// Converts to `ty`, leaving the expression alone if it already has that type.
    pub fn cast(self, ty: IntTy) -> Expr {
        if self.ty() == ty {
            return self;
        }
        match self {
            Expr::Const(v, _) => Expr::Const(ty.wrap(v), ty),
            e => Expr::Cast(Box::new(e), ty),
        }
    }

    /// Visits every sub-expression, this one first.
    pub fn walk(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Const(..) | Expr::Var(..) | Expr::Unknown(..) => {}
            Expr::Elem(_, i, _) | Expr::Unary(_, i, _) | Expr::Cast(i, _) => i.walk(f),
            Expr::Binary(_, a, b, _) => {
                a.walk(f);
                b.walk(f);
            }
            Expr::Ite(c, a, b, _) => {
                c.walk(f);
                a.walk(f);
                b.walk(f);
            }
        }
    }

    /// The variables (scalars and arrays) the expression reads.
    pub fn vars(&self, out: &mut Vec<VarId>) {
        self.walk(&mut |e| match e {
            Expr::Var(v, _) | Expr::Elem(v, _, _) if !out.contains(v) => out.push(*v),
            _ => {}
        });
    }

    /// The value of an expression over constants only (`None` if it reads anything, or on
    /// undefined behaviour such as a division by zero).
    pub fn constant(&self) -> Option<i128> {
        match self {
            Expr::Const(v, _) => Some(*v),
            Expr::Cast(a, t) => Some(t.wrap(a.constant()?)),
            Expr::Unary(op, a, _) => Some(eval_unop(*op, a.constant()?, a.ty())),
            Expr::Binary(op, a, b, t) => eval_binop(*op, a.constant()?, b.constant()?, *t),
            _ => None,
        }
    }

    pub fn has_unknown(&self) -> bool {
        let mut found = false;
        self.walk(&mut |e| found |= matches!(e, Expr::Unknown(..)));
        found
    }
}

/// A place an assignment writes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LValue {
    Var(VarId),
    Elem(VarId, Expr),
}

impl LValue {
    pub fn var(&self) -> VarId {
        match self {
            LValue::Var(v) | LValue::Elem(v, _) => *v,
        }
    }
}

/// How an edge's statement changes the state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Stmt {
    /// `lhs = rhs` (the right-hand side already converted to the type of `lhs`).
    Assign(LValue, Expr),
    /// `lhs` receives any value of its type from the environment: a `__VERIFIER_nondet_*` call,
    /// an external function's result or an uninitialised local. Inputs are modelled precisely;
    /// the values of unmodelled externals are any value too but never confirm a counterexample
    /// (see [`InputSource::unmodelled`]).
    Input { lhs: LValue, source: InputSource },
    /// Every variable whose address escapes may change (over-approximation).
    HavocMemory(Imprecision),
    /// An array declared without initialiser gets arbitrary contents; `zero` sets them to 0.
    InitArray { var: VarId, zero: bool },
    /// A construct the engine cannot over-approximate soundly; reaching it makes every
    /// property that is not violated `unknown` with this reason.
    Unsupported(String),
}

/// Where an input value comes from, for traces and harnesses.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum InputSource {
    /// An input of the program, modelled precisely: a call of an input function
    /// (`__VERIFIER_nondet_int`) or an entry function's argument (`argument `x` of f`).
    Call(String),
    /// The result of a function the program calls without defining it and that cpals does not
    /// model (`strlen`, a function of another file): any value of its type, so that proofs stay
    /// sound, but a counterexample that depends on it is never confirmed (soundness rule 1).
    External(String),
    /// The value of an `extern` object the program does not define (named by the object):
    /// like [`InputSource::External`], it supports proofs but never confirms a counterexample.
    ExternObject(String),
    Uninitialised,
}

impl InputSource {
    /// Why a counterexample that depends on this value is not confirmed ("the counterexample
    /// depends on a …"), for the values that are not modelled ([`InputSource::External`],
    /// [`InputSource::ExternObject`]).
    pub fn unmodelled(&self) -> Option<String> {
        match self {
            InputSource::External(f) if f == crate::frontend::models::STDIN_UNMODELLED => {
                Some("value read from standard input after a conversion of `scanf` failed, which cpals does not track".into())
            }
            InputSource::External(f) => Some(format!("value returned by `{}`, which cpals does not model yet", f)),
            InputSource::ExternObject(x) => Some(format!("value of the `extern` object `{}`, which the program does not define", x)),
            InputSource::Call(_) | InputSource::Uninitialised => None,
        }
    }
}

/// Applies a unary operator to a value of type `ty` (the operand's type).
pub fn eval_unop(op: UnOp, a: i128, ty: IntTy) -> i128 {
    match op {
        UnOp::Neg => ty.wrap(-a),
        UnOp::BitNot => ty.wrap(!a),
        UnOp::LNot => (a == 0) as i128,
    }
}

/// Applies a binary operator with C's semantics on machine integers. `a` and `b` are values of
/// the operand types, `ty` is the result type (for comparisons: `int`). `None` means undefined
/// behaviour: division by zero, shift out of range. Signed overflow wraps around (the
/// engine's documented model of it).
pub fn eval_binop(op: BinOp, a: i128, b: i128, ty: IntTy) -> Option<i128> {
    Some(match op {
        BinOp::Add => ty.wrap(a.wrapping_add(b)),
        BinOp::Sub => ty.wrap(a.wrapping_sub(b)),
        BinOp::Mul => ty.wrap(a.wrapping_mul(b)),
        BinOp::Div => {
            if b == 0 {
                return None;
            }
            ty.wrap(a / b)
        }
        BinOp::Rem => {
            if b == 0 {
                return None;
            }
            ty.wrap(a % b)
        }
        BinOp::Shl => {
            if b < 0 || b >= ty.bits as i128 {
                return None;
            }
            ty.wrap(a.wrapping_shl(b as u32))
        }
        BinOp::Shr => {
            if b < 0 || b >= ty.bits as i128 {
                return None;
            }
            ty.wrap(a >> b)
        }
        BinOp::BitAnd => ty.wrap(a & b),
        BinOp::BitOr => ty.wrap(a | b),
        BinOp::BitXor => ty.wrap(a ^ b),
        BinOp::Lt => (a < b) as i128,
        BinOp::Le => (a <= b) as i128,
        BinOp::Gt => (a > b) as i128,
        BinOp::Ge => (a >= b) as i128,
        BinOp::Eq => (a == b) as i128,
        BinOp::Ne => (a != b) as i128,
    })
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Const(v, _) => write!(f, "{}", v),
            Expr::Var(v, _) => write!(f, "v{}", v.0),
            Expr::Elem(v, i, _) => write!(f, "v{}[{}]", v.0, i),
            Expr::Unary(op, a, _) => {
                let s = match op {
                    UnOp::Neg => "-",
                    UnOp::BitNot => "~",
                    UnOp::LNot => "!",
                };
                write!(f, "{}({})", s, a)
            }
            Expr::Binary(op, a, b, _) => write!(f, "({} {} {})", a, op.symbol(), b),
            Expr::Cast(a, t) => write!(f, "({}){}", t.c_name(), a),
            Expr::Ite(c, a, b, _) => write!(f, "({} ? {} : {})", c, a, b),
            Expr::Unknown(t, _) => write!(f, "<any {}>", t.c_name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_follows_c_conversions() {
        assert_eq!(IntTy::U32.wrap(-1), 4294967295);
        assert_eq!(IntTy::I32.wrap(2147483648), -2147483648);
        assert_eq!(IntTy::I8.wrap(200), -56);
        assert_eq!(IntTy::BOOL.wrap(7), 1);
        assert_eq!(IntTy::U64.wrap(-1), u64::MAX as i128);
    }

    #[test]
    fn usual_arithmetic_conversions() {
        assert_eq!(IntTy::common(IntTy::U8, IntTy::I16), IntTy::INT);
        assert_eq!(IntTy::common(IntTy::U32, IntTy::I32), IntTy::U32);
        assert_eq!(IntTy::common(IntTy::U32, IntTy::I64), IntTy::I64);
        assert_eq!(IntTy::common(IntTy::U64, IntTy::I64), IntTy::U64);
        assert_eq!(IntTy::common(IntTy::BOOL, IntTy::BOOL), IntTy::INT);
    }

    #[test]
    fn var_ids_pack_function_and_index() {
        let v = VarId::local(FuncId(3), 17);
        assert_eq!(v.func(), Some(FuncId(3)));
        assert_eq!(v.index(), 17);
        assert_eq!(VarId::global(5).func(), None);
    }
}
