//! The memory model of the CFA builder (DESIGN.md "Memory"; issue 22): objects whose address
//! is taken or that decay to pointers, allocations and string literals live in memory, and
//! pointers are `(object, byte offset)` pairs, lowered into the IR the analyses already know.
//!
//! * A pointer is one 64-bit integer: the object id in the high 32 bits, the byte offset in the
//!   low 32 (null is 0, object ids start at 1). Pointer arithmetic is integer arithmetic on it,
//!   so `p + i` stays in its object; pointers of different objects never compare equal, and
//!   relational comparison or subtraction across objects (undefined in C) is any value.
//! * Memory is typed by access width, as CPAchecker's predicate analysis does it (one array per
//!   type, Burstall-Bornat): the arrays `__mem8` … `__mem64` hold the integers stored with that
//!   width at each address and `__memp` the pointers. This is exact as long as no byte is read
//!   with another type than it was written with; the builder gives up on the model (and the
//!   program is built as before it, every pointer access over-approximated) when the program
//!   converts between pointers to different scalar types, which is how such type punning
//!   happens. Such a program is then built once more with *tagged memory* (see [`Tags`]):
//!   each byte also records how it was last written, C's effective type (C11 6.5p6), and a
//!   read is exact only when its bytes were written by one store of the same class (or
//!   never, or zeroed); otherwise it is any value ([`Imprecision::Punning`]). Only when even
//!   that does not apply (see [`Memory::fallback`]) is the program built without the model.
//! * `__size[o]` is the size of object `o` in bytes (0 before it exists and after `free`): an
//!   access of `k` bytes at `p` is valid when `offset(p) + k <= __size[object(p)]`, which
//!   excludes null (object 0), freed blocks and accesses outside the object. Each access that
//!   is not valid by construction branches to a [`crate::cfa::TargetKind::OutOfBounds`] target.
//! * Static objects (globals, address-taken locals, string literals) have fixed ids, their
//!   sizes are set by the start function; allocations take the next id of `__next` (from
//!   [`HEAP_BASE`]), so `free` can tell them apart. The contents of an object that nothing
//!   wrote are arbitrary (an allocation's), objects of static storage are zeroed leaf by leaf.

use std::collections::HashSet;

use lang_c::span::Span as LSpan;

use super::expr::{Place, Value};
use super::func::FnBuilder;
use super::types::CType;
use super::BResult;
use crate::cfa::EdgeKind;
use crate::ir::{BinOp, Expr, Imprecision, IntTy, LValue, Stmt, VarId, VarInfo, VarKind};

/// Bits of an encoded pointer that hold the byte offset.
pub const OFFSET_BITS: u32 = 32;
/// Object ids from here on are allocations (`malloc`, `calloc`, …): only they may be freed.
pub use crate::cfa::HEAP_BASE;
/// The largest object the encoding holds (offsets are 32-bit).
pub const MAX_OBJECT: u64 = (1 << 31) - 1;

/// A declaration, identified across the two builds of a program: the byte offset of its
/// declarator in the preprocessed source and its name.
pub type DeclKey = (usize, String);

/// The memory arrays, one per access width (and one for pointers).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Class {
    B8,
    B16,
    B32,
    B64,
    Ptr,
}

/// The name of the array of the objects' sizes in bytes (`__size[id]`).
pub const SIZES: &str = "__size";

/// The names of the memory model's arrays of cells (`__mem32`), which reads through pointers
/// read.
pub fn cell_arrays() -> impl Iterator<Item = &'static str> {
    Class::ALL.into_iter().map(Class::name)
}

impl Class {
    pub const ALL: [Class; 5] = [Class::B8, Class::B16, Class::B32, Class::B64, Class::Ptr];

    /// The IR type of a cell.
    pub fn cell(self) -> IntTy {
        match self {
            Class::B8 => IntTy::U8,
            Class::B16 => IntTy::U16,
            Class::B32 => IntTy::U32,
            Class::B64 | Class::Ptr => IntTy::U64,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Class::B8 => "__mem8",
            Class::B16 => "__mem16",
            Class::B32 => "__mem32",
            Class::B64 => "__mem64",
            Class::Ptr => "__memp",
        }
    }

    fn of_int(t: IntTy) -> Class {
        match t.bits {
            0..=8 => Class::B8,
            9..=16 => Class::B16,
            17..=32 => Class::B32,
            // Integers are at most 64 bits wide (no `__int128`).
            _ => Class::B64,
        }
    }
}

/// The state of the memory model during a build (absent when the program needs none).
pub struct Memory {
    /// Declarations whose objects live in memory: those whose address the first build saw
    /// taken (or that decayed to a pointer).
    pub keys: HashSet<DeclKey>,
    /// The memory arrays, indexed by [`Class`] order.
    pub cells: [VarId; 5],
    /// `__size`: object id → size in bytes.
    pub size: VarId,
    /// `__next`: the id the next allocation gets.
    pub next: VarId,
    /// The sizes of the static objects so far (ids 1, 2, …).
    pub sizes: Vec<u64>,
    /// Their names, as traces show pointers to them (`x`, `"abc"`, `main`).
    pub names: Vec<String>,
    /// Why the model cannot be used for this program (then it is built without it).
    pub fallback: Option<(String, LSpan)>,
    /// Why the program needs tagged memory (it may read bytes with another type than they were
    /// written with), when the build has none (it is then built again with [`Tags`]).
    pub punning: Option<(String, LSpan)>,
    /// `__memtag` (address → [`Tags`] code of the byte) in a build with tagged memory.
    pub tags: Option<VarId>,
    /// `__contents` (object id → what its never-written bytes read as, [`Contents`]) in a
    /// build with tagged memory.
    pub contents: Option<VarId>,
    /// The shapes of the pointees of pointers converted to or from `void *` (see
    /// `check_punning`): more than one means memory may be read with another type.
    pub void_shapes: Vec<CType>,
    /// The addresses of the functions used as values (objects of size 0).
    pub functions: std::collections::HashMap<String, Expr>,
    /// Functions with automatic objects in memory (their ids are fixed, so such a function
    /// must not be recursive: its activations would share the objects).
    pub frames: std::collections::BTreeSet<crate::ir::FuncId>,
}

impl Memory {
    pub fn cell(&self, c: Class) -> VarId {
        self.cells[Class::ALL.iter().position(|x| *x == c).expect("class")]
    }
}

/// The codes of tagged memory's bytes (`__memtag`), C's effective type of each byte: how it
/// was last written. A read of `k` bytes of class `c` at `a` is exact when the bytes
/// `a … a+k-1` hold `stored(c, 0) … stored(c, k-1)` (one store of that class at `a`), all
/// [`Tags::FRESH`] (never written: arbitrary contents, as in the model without tags) or all
/// [`Tags::ZERO`] (zeroed by `calloc`: the value 0); otherwise it is any value
/// ([`Imprecision::Punning`], which never confirms a counterexample). Each store of `k` bytes
/// writes its `k` tags, so a later store that overlaps part of an earlier one (a `char`
/// written into an `int`) makes the earlier one's reads inexact.
pub struct Tags;

impl Tags {
    /// Never written since the object began (every id is new: objects are never reused).
    pub const FRESH: i128 = 0;
    /// Zeroed without a type (`calloc`).
    pub const ZERO: i128 = 100;
    /// Written with a value the model does not follow (a float, a union member, a copy).
    pub const OPAQUE: i128 = 101;

    /// Byte `j` of a store of class `c`.
    pub fn stored(c: Class, j: u64) -> i128 {
        let k = Class::ALL.iter().position(|x| *x == c).expect("class") as i128;
        1 + k * 8 + j as i128
    }
}

/// What the bytes of an object that nothing wrote read as, in tagged memory (`__contents`).
pub struct Contents;

impl Contents {
    /// Arbitrary values (a `malloc`'d block, a local without initialiser).
    pub const ARBITRARY: i128 = 0;
    /// Zero (`calloc`, `kzalloc`).
    pub const ZERO: i128 = 1;
    /// Values the model does not follow (the copy `realloc` and `strdup` make).
    pub const UNKNOWN: i128 = 2;
}

/// `free` and the kernel's `kfree`.
pub fn is_deallocator(name: &str) -> bool {
    matches!(name, "free" | "kfree")
}

/// The object id of an encoded pointer, as an array index (a division rather than a shift, and
/// a remainder rather than a mask below: linear integer arithmetic expresses them too).
pub fn object_of(addr: &Expr) -> Expr {
    let a = addr.clone().cast(IntTy::U64);
    Expr::Binary(BinOp::Div, Box::new(a), Box::new(Expr::Const(1 << OFFSET_BITS, IntTy::U64)), IntTy::U64).cast(IntTy::I64)
}

/// The byte offset of an encoded pointer.
pub fn offset_of(addr: &Expr) -> Expr {
    let a = addr.clone().cast(IntTy::U64);
    Expr::Binary(BinOp::Rem, Box::new(a), Box::new(Expr::Const(1 << OFFSET_BITS, IntTy::U64)), IntTy::U64)
}

/// The encoded pointer to the start of object `id`.
pub fn object_start(id: i128) -> Expr {
    Expr::Const(id << OFFSET_BITS, IntTy::U64)
}

/// `addr + bytes` on encoded pointers (folded when both are constants).
pub fn displace(addr: &Expr, bytes: Expr) -> Expr {
    let b = bytes.cast(IntTy::U64);
    if b.constant() == Some(0) {
        return addr.clone();
    }
    if let (Some(x), Some(y)) = (addr.constant(), b.constant()) {
        return Expr::Const(IntTy::U64.wrap(x + y), IntTy::U64);
    }
    Expr::Binary(BinOp::Add, Box::new(addr.clone().cast(IntTy::U64)), Box::new(b), IntTy::U64)
}

/// `tags[addr + j] == code`.
fn tag_is(tags: VarId, addr: &Expr, j: u64, code: i128) -> Expr {
    let at = displace(addr, Expr::Const(j as i128, IntTy::U64)).cast(IntTy::I64);
    let tag = Expr::Elem(tags, Box::new(at), IntTy::U8);
    Expr::Binary(BinOp::Eq, Box::new(tag), Box::new(Expr::Const(code, IntTy::U8)), IntTy::INT)
}

/// `a && b` on truth values (0 or 1).
fn and(a: Expr, b: Expr) -> Expr {
    Expr::Ite(Box::new(a), Box::new(b), Box::new(Expr::Const(0, IntTy::INT)), IntTy::INT)
}

/// `a || b` on truth values (0 or 1).
fn or(a: Expr, b: Expr) -> Expr {
    Expr::Ite(Box::new(a), Box::new(Expr::Const(1, IntTy::INT)), Box::new(b), IntTy::INT)
}

fn same_object(a: &Expr, b: &Expr) -> Expr {
    Expr::Binary(BinOp::Eq, Box::new(object_of(a)), Box::new(object_of(b)), IntTy::INT)
}

impl<'a, 'p> FnBuilder<'a, 'p> {
    /// Whether the program is built with the memory model.
    pub fn memory_on(&self) -> bool {
        self.cx.mem.is_some()
    }

    /// Notes that the program needs tagged memory (the first reason is kept; nothing when it
    /// has tags already).
    pub fn needs_tags(&mut self, why: String, span: LSpan) {
        if let Some(m) = self.cx.mem.as_mut().filter(|m| m.tags.is_none()) {
            m.punning.get_or_insert((why, span));
        }
    }

    /// Records that the memory model cannot be used for this program (the build is redone
    /// without it).
    pub fn memory_gives_up(&mut self, span: LSpan, why: impl Into<String>) {
        if let Some(m) = self.cx.mem.as_mut() {
            m.fallback.get_or_insert_with(|| (why.into(), span));
        }
    }

    /// Creates a static object of `bytes` bytes (its size is set by the start function) and
    /// returns its address.
    pub fn static_object(&mut self, name: String, bytes: u64, span: LSpan) -> Expr {
        let (id, size) = {
            let m = self.cx.mem.as_mut().expect("memory model");
            m.sizes.push(bytes);
            m.names.push(name);
            (m.sizes.len() as i128, m.size)
        };
        if id >= HEAP_BASE || bytes > MAX_OBJECT {
            self.memory_gives_up(span, "an object too large for the memory model");
        }
        let sp = self.span(span);
        let set = Stmt::Assign(LValue::Elem(size, Expr::Const(id, IntTy::I64)), Expr::Const(bytes as i128, IntTy::U64));
        self.in_start_emit(EdgeKind::Declaration(set), sp);
        object_start(id)
    }

    /// Emits an edge at the current end of the start function (sizes of static objects).
    fn in_start_emit(&mut self, kind: EdgeKind, sp: crate::cfa::Span) {
        if self.st.dry > 0 {
            return;
        }
        match self.cx.start.take() {
            Some(mut start) => {
                let mut b = FnBuilder { cx: self.cx, st: &mut start };
                b.emit(kind, sp);
                self.cx.start = Some(start);
            }
            // Building the start function itself.
            None => self.emit(kind, sp),
        }
    }

    /// The memory array and IR type a scalar of type `ty` is stored with (`None` for floats
    /// and aggregates).
    pub fn cell_of(&self, ty: &CType) -> Option<(VarId, IntTy)> {
        let m = self.cx.mem.as_ref()?;
        match ty {
            CType::Ptr(_) => Some((m.cell(Class::Ptr), IntTy::U64)),
            CType::Int(t) => Some((m.cell(Class::of_int(*t)), *t)),
            _ => None,
        }
    }

    /// Branches to an out-of-bounds target unless `bytes` bytes at `addr` lie inside a live
    /// object (null, freed blocks and dangling offsets included). `what` names the access.
    pub fn check_access(&mut self, addr: &Expr, bytes: u64, span: LSpan) {
        if self.st.dry > 0 || self.st.checked > 0 || !self.cx.bounds_checks {
            return;
        }
        let Some(m) = self.cx.mem.as_ref() else { return };
        let size = m.size;
        if let Some(a) = addr.constant() {
            // A static object's own field or element: valid by construction when inside it.
            let (id, off) = (a >> OFFSET_BITS, a & ((1 << OFFSET_BITS) - 1));
            if id > 0 && m.sizes.get(id as usize - 1).is_some_and(|&n| off + bytes as i128 <= n as i128) {
                return;
            }
        }
        let end = Expr::Binary(BinOp::Add, Box::new(offset_of(addr)), Box::new(Expr::Const(bytes as i128, IntTy::U64)), IntTy::U64);
        let limit = Expr::Elem(size, Box::new(object_of(addr)), IntTy::U64);
        let within = Expr::Binary(BinOp::Le, Box::new(end), Box::new(limit), IntTy::INT);
        self.branch_to_target(within, format!("access `{}`", self.source_text(span)), span);
    }

    /// Loads a scalar of type `ty` from `addr` (checked).
    pub fn load(&mut self, addr: &Expr, ty: &CType, span: LSpan) -> Value {
        let bytes = self.cx.types.size_of(ty).unwrap_or(1);
        if !matches!(ty, CType::Struct(_) | CType::Array(..)) {
            self.check_access(addr, bytes, span);
        }
        match self.cell_of(ty) {
            Some((arr, it)) => {
                let cell = Expr::Elem(arr, Box::new(addr.clone().cast(IntTy::I64)), self.cx.mem_cell_ty(arr));
                match self.cx.mem.as_ref().and_then(|m| m.tags) {
                    Some(tags) => self.tagged_load(tags, arr, cell, addr, bytes, ty, span),
                    None => Value::Int(cell.cast(it), ty.clone()),
                }
            }
            None => match ty {
                CType::Float(_) => Value::Float,
                _ => self.unknown_of(ty, Imprecision::PointerRead),
            },
        }
    }

    /// A load from tagged memory (see [`Tags`]): the cell when the bytes were written by one
    /// store of its class (or never), 0 when they were zeroed, the bytes put together (or taken
    /// apart) when an integer is read as characters or characters as an integer, else any
    /// value. The choice is a branch, so that a path through an exact read stays exact for the
    /// SMT path check.
    #[allow(clippy::too_many_arguments)]
    fn tagged_load(&mut self, tags: VarId, arr: VarId, cell: Expr, addr: &Expr, bytes: u64, ty: &CType, span: LSpan) -> Value {
        let class = self.class_of_cell(arr);
        let cty = self.cx.mem_cell_ty(arr);
        let it = self.cx.types.int_of(ty).unwrap_or(cty);
        let all = |code: &dyn Fn(u64) -> i128| {
            (0..bytes).map(|j| tag_is(tags, addr, j, code(j))).reduce(and).unwrap_or(Expr::Const(1, IntTy::INT))
        };
        let exact = all(&|j| Tags::stored(class, j));
        let fresh = all(&|_| Tags::FRESH);
        let zero = all(&|_| Tags::ZERO);
        let contents = self.cx.mem.as_ref().and_then(|m| m.contents).expect("tagged memory");
        let kind = |k: i128| {
            let c = Expr::Elem(contents, Box::new(object_of(addr)), IntTy::U8);
            and(fresh.clone(), Expr::Binary(BinOp::Eq, Box::new(c), Box::new(Expr::Const(k, IntTy::U8)), IntTy::INT))
        };
        let mut cases = vec![
            (or(exact, kind(Contents::ARBITRARY)), cell),
            (or(zero, kind(Contents::ZERO)), Expr::Const(0, cty)),
            (kind(Contents::UNKNOWN), Expr::Unknown(cty, Imprecision::Other)),
        ];
        cases.extend(self.byte_view(tags, class, addr, bytes, cty));
        let Ok(t) = self.temp(cty, matches!(ty, CType::Ptr(_))) else {
            return self.unknown_of(ty, Imprecision::Punning);
        };
        let sp = self.span(span);
        let join = self.new_node();
        for (cond, value) in cases {
            let (yes, no) = (self.new_node(), self.new_node());
            let cur = self.st.cur;
            self.edge(cur, yes, EdgeKind::Assume { cond: cond.clone(), truth: true }, sp);
            self.edge(cur, no, EdgeKind::Assume { cond, truth: false }, sp);
            self.st.cur = yes;
            self.stmt_edge(Stmt::Assign(LValue::Var(t), value), sp);
            let cur = self.st.cur;
            self.edge(cur, join, EdgeKind::Blank, sp);
            self.st.cur = no;
        }
        self.stmt_edge(Stmt::Assign(LValue::Var(t), Expr::Unknown(cty, Imprecision::Punning)), sp);
        let cur = self.st.cur;
        self.edge(cur, join, EdgeKind::Blank, sp);
        self.st.cur = join;
        Value::Int(Expr::Var(t, cty).cast(it), ty.clone())
    }

    /// Tagged memory, little-endian byte views (`None` for pointers): a character read of a
    /// byte an integer store wrote (`(mem[a - j] >> 8j) & 0xff` for its byte `j`), or an integer
    /// read of bytes each written as a character or as part of an integer
    /// (`byte(a) | byte(a+1) << 8 | …`).
    fn byte_view(&self, tags: VarId, class: Class, addr: &Expr, bytes: u64, cty: IntTy) -> Option<(Expr, Expr)> {
        let bin = |op, a: Expr, b: Expr, t: IntTy| Expr::Binary(op, Box::new(a), Box::new(b), t);
        match class {
            Class::B8 => {
                let (c, v) = self.integer_byte(tags, addr);
                Some((c, v.cast(cty)))
            }
            Class::B16 | Class::B32 | Class::B64 => {
                let parts: Vec<(Expr, Expr)> = (0..bytes)
                    .map(|j| {
                        let at = displace(addr, Expr::Const(j as i128, IntTy::U64));
                        let (int_byte, v) = self.integer_byte(tags, &at);
                        let char_byte = tag_is(tags, &at, 0, Tags::stored(Class::B8, 0));
                        let mem8 =
                            Expr::Elem(self.cx.mem.as_ref().expect("memory").cell(Class::B8), Box::new(at.cast(IntTy::I64)), IntTy::U8);
                        let v = Expr::Ite(Box::new(char_byte.clone()), Box::new(mem8.cast(IntTy::U64)), Box::new(v), IntTy::U64).cast(cty);
                        let v = if j == 0 { v } else { bin(BinOp::Shl, v, Expr::Const(8 * j as i128, cty), cty) };
                        (or(char_byte, int_byte), v)
                    })
                    .collect();
                let cond = parts.iter().map(|(c, _)| c.clone()).reduce(and)?;
                let value = parts.into_iter().map(|(_, v)| v).reduce(|a, b| bin(BinOp::BitOr, a, b, cty))?;
                Some((cond, value))
            }
            Class::Ptr => None,
        }
    }

    /// Tagged memory: whether the byte at `addr` was written as part of a 2-, 4- or 8-byte
    /// integer, and its value then (an unsigned 64-bit integer below 256).
    fn integer_byte(&self, tags: VarId, addr: &Expr) -> (Expr, Expr) {
        let m = self.cx.mem.as_ref().expect("memory model");
        let bin = |op, a: Expr, b: Expr, t: IntTy| Expr::Binary(op, Box::new(a), Box::new(b), t);
        let u64c = |v: i128| Expr::Const(v, IntTy::U64);
        // Codes of bytes of 2-, 4- and 8-byte integer stores are contiguous.
        let (lo, hi) = (Tags::stored(Class::B16, 0), Tags::stored(Class::B64, 7));
        let tag = Expr::Elem(tags, Box::new(addr.clone().cast(IntTy::I64)), IntTy::U8);
        let cond = and(
            bin(BinOp::Ge, tag.clone(), Expr::Const(lo, IntTy::U8), IntTy::INT),
            bin(BinOp::Le, tag.clone(), Expr::Const(hi, IntTy::U8), IntTy::INT),
        );
        // Byte j of the store: (tag - 1) % 8; its class: (tag - 1) / 8.
        let j = bin(BinOp::Rem, bin(BinOp::Sub, tag.clone().cast(IntTy::U64), u64c(1), IntTy::U64), u64c(8), IntTy::U64);
        let start = bin(BinOp::Sub, addr.clone().cast(IntTy::U64), j.clone(), IntTy::U64).cast(IntTy::I64);
        let shift = bin(BinOp::Mul, j, u64c(8), IntTy::U64);
        let part = |c: Class| {
            let v = Expr::Elem(m.cell(c), Box::new(start.clone()), c.cell()).cast(IntTy::U64);
            bin(BinOp::Shr, v, shift.clone(), IntTy::U64)
        };
        let below = |c: Class| bin(BinOp::Lt, tag.clone(), Expr::Const(Tags::stored(c, 0), IntTy::U8), IntTy::INT);
        let v = Expr::Ite(
            Box::new(below(Class::B32)),
            Box::new(part(Class::B16)),
            Box::new(Expr::Ite(Box::new(below(Class::B64)), Box::new(part(Class::B32)), Box::new(part(Class::B64)), IntTy::U64)),
            IntTy::U64,
        );
        let v = bin(BinOp::BitAnd, v, u64c(0xff), IntTy::U64);
        (cond, v)
    }

    /// The class of memory array `arr`.
    fn class_of_cell(&self, arr: VarId) -> Class {
        let m = self.cx.mem.as_ref().expect("memory model");
        Class::ALL[m.cells.iter().position(|c| *c == arr).expect("a memory array")]
    }

    /// Tagged memory: the statements that give the `bytes` bytes at `addr` the codes
    /// `code(0)`, `code(1)`, … (none without tags).
    pub fn tag_stmts(&self, addr: &Expr, bytes: u64, code: impl Fn(u64) -> i128) -> Vec<Stmt> {
        let Some(tags) = self.cx.mem.as_ref().and_then(|m| m.tags) else { return Vec::new() };
        (0..bytes)
            .map(|j| {
                let at = displace(addr, Expr::Const(j as i128, IntTy::U64)).cast(IntTy::I64);
                Stmt::Assign(LValue::Elem(tags, at), Expr::Const(code(j), IntTy::U8))
            })
            .collect()
    }

    /// Tagged memory: marks `bytes` bytes at `addr` as written with a value the model does
    /// not follow (a float, a union member), so that no read of them is exact.
    pub fn tag_opaque(&mut self, addr: &Expr, bytes: u64, span: LSpan) {
        if self.cx.mem.as_ref().is_none_or(|m| m.tags.is_none()) {
            return;
        }
        let sp = self.span(span);
        for s in self.tag_stmts(addr, bytes.min(LEAF_LIMIT as u64), |_| Tags::OPAQUE) {
            self.stmt_edge(s, sp);
        }
        if bytes > LEAF_LIMIT as u64 {
            self.memory_gives_up(span, "an object too large for tagged memory");
        }
    }

    /// Stores a scalar value of type `ty` at `addr` (checked).
    pub fn store(&mut self, addr: &Expr, v: Value, ty: &CType, span: LSpan) {
        let bytes = self.cx.types.size_of(ty).unwrap_or(1);
        self.check_access(addr, bytes, span);
        let sp = self.span(span);
        let Some((arr, _)) = self.cell_of(ty) else {
            // A float: not tracked. With tags, a later read of these bytes is any value;
            // without, such a read would be type punning, which the model then excludes.
            self.tag_opaque(addr, bytes, span);
            return;
        };
        let cty = self.cx.mem_cell_ty(arr);
        let conv = self.convert(v, ty);
        let e = match conv {
            Value::Int(e, _) => e.cast(cty),
            _ => Expr::Unknown(cty, Imprecision::Float),
        };
        self.stmt_edge(Stmt::Assign(LValue::Elem(arr, addr.clone().cast(IntTy::I64)), e), sp);
        let class = self.class_of_cell(arr);
        for s in self.tag_stmts(addr, bytes, |j| Tags::stored(class, j)) {
            self.stmt_edge(s, sp);
        }
    }

    /// Pointer plus integer (`p + i` with `i` in elements of `elem`).
    pub fn pointer_add(&self, p: Expr, i: Expr, elem: &CType, negate: bool) -> Expr {
        let size = match elem {
            CType::Void | CType::Func(_) => 1,
            t => self.cx.types.size_of(t).unwrap_or(1),
        };
        let i = i.cast(IntTy::I64).cast(IntTy::U64);
        let scaled =
            if size == 1 { i } else { Expr::Binary(BinOp::Mul, Box::new(i), Box::new(Expr::Const(size as i128, IntTy::U64)), IntTy::U64) };
        let scaled = if negate { Expr::Unary(crate::ir::UnOp::Neg, Box::new(scaled), IntTy::U64) } else { scaled };
        displace(&p, scaled)
    }

    /// A pointer comparison: equality compares the encoded values; an order between pointers
    /// into different objects is unspecified (any value).
    pub fn pointer_compare(&self, op: BinOp, a: Expr, b: Expr) -> Expr {
        let (a, b) = (a.cast(IntTy::U64), b.cast(IntTy::U64));
        let cmp = Expr::Binary(op, Box::new(a.clone()), Box::new(b.clone()), IntTy::INT);
        if matches!(op, BinOp::Eq | BinOp::Ne) {
            return cmp;
        }
        Expr::Ite(Box::new(same_object(&a, &b)), Box::new(cmp), Box::new(Expr::Unknown(IntTy::INT, Imprecision::Address)), IntTy::INT)
    }

    /// `p - q` in elements of `elem`: defined only inside one object.
    pub fn pointer_diff(&self, a: Expr, b: Expr, elem: &CType) -> Expr {
        let t = self.cx.types.long(true);
        let size = self.cx.types.size_of(elem).filter(|&s| s > 0).unwrap_or(1);
        let (a, b) = (a.cast(IntTy::U64), b.cast(IntTy::U64));
        let bytes = Expr::Binary(BinOp::Sub, Box::new(a.clone()), Box::new(b.clone()), IntTy::U64).cast(IntTy::I64);
        let elems = if size == 1 {
            bytes
        } else {
            Expr::Binary(BinOp::Div, Box::new(bytes), Box::new(Expr::Const(size as i128, IntTy::I64)), IntTy::I64)
        };
        Expr::Ite(Box::new(same_object(&a, &b)), Box::new(elems.cast(t)), Box::new(Expr::Unknown(t, Imprecision::Address)), t)
    }

    /// The source text of a span (for messages), shortened.
    pub fn source_text(&self, span: LSpan) -> String {
        let pp = &self.cx.parsed.pp;
        let text = pp.get(span.start..span.end.min(pp.len())).unwrap_or("");
        let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if one.chars().count() > 40 {
            format!("{}…", one.chars().take(40).collect::<String>())
        } else {
            one
        }
    }
}

/// The prefix of the build error that makes [`super::build_program_with`] use the build
/// without the memory model.
pub const GIVE_UP: &str = "the memory model does not apply";

/// The prefix of the build error that makes [`super::build_program_with`] build the program
/// again with tagged memory.
pub const NEEDS_TAGS: &str = "the program needs tagged memory";

/// Starts a build with the memory model: its arrays and counters as synthetic globals, set up
/// at the start of the start function (memory arbitrary, no object exists yet), with `__memtag`
/// too when `tagged` (every byte never written).
pub(super) fn set_up(cx: &mut super::ProgCx, keys: HashSet<DeclKey>, tagged: bool) -> BResult<()> {
    let global = |cx: &mut super::ProgCx, name: &str, kind: VarKind| -> BResult<VarId> {
        if cx.globals.len() >= VarId::LIMIT {
            return Err(cx.err(LSpan::none(), "too many global variables".into()));
        }
        cx.globals.push(VarInfo { name: name.into(), kind, synthetic: true, pointer: false });
        Ok(VarId::global(cx.globals.len() - 1))
    };
    let mut cells = [VarId(0); 5];
    for (k, c) in Class::ALL.iter().enumerate() {
        cells[k] = global(cx, c.name(), VarKind::Array { elem: c.cell(), len: None })?;
    }
    let size = global(cx, SIZES, VarKind::Array { elem: IntTy::U64, len: None })?;
    let next = global(cx, "__next", VarKind::Int(IntTy::I64))?;
    let tags = if tagged { Some(global(cx, "__memtag", VarKind::Array { elem: IntTy::U8, len: None })?) } else { None };
    let contents = if tagged { Some(global(cx, "__contents", VarKind::Array { elem: IntTy::U8, len: None })?) } else { None };
    cx.escaped.extend(cells.iter().copied());
    cx.escaped.insert(size);
    cx.escaped.extend(tags);
    cx.escaped.extend(contents);
    let mut start = cx.start.take().expect("start function");
    {
        let mut b = FnBuilder { cx, st: &mut start };
        for &c in &cells {
            b.emit(EdgeKind::Declaration(Stmt::InitArray { var: c, zero: false }), Default::default());
        }
        b.emit(EdgeKind::Declaration(Stmt::InitArray { var: size, zero: true }), Default::default());
        for t in tags.iter().chain(contents.iter()) {
            b.emit(EdgeKind::Declaration(Stmt::InitArray { var: *t, zero: true }), Default::default());
        }
        b.emit(EdgeKind::Declaration(Stmt::Assign(LValue::Var(next), Expr::Const(HEAP_BASE, IntTy::I64))), Default::default());
    }
    cx.start = Some(start);
    cx.types.encoded_pointers = true;
    cx.mem = Some(Memory {
        keys,
        cells,
        size,
        next,
        sizes: Vec::new(),
        names: Vec::new(),
        fallback: None,
        punning: None,
        tags,
        contents,
        void_shapes: Vec::new(),
        functions: Default::default(),
        frames: Default::default(),
    });
    Ok(())
}

impl super::ProgCx<'_> {
    /// The IR type of the cells of memory array `arr`.
    pub(super) fn mem_cell_ty(&self, arr: VarId) -> IntTy {
        self.globals[arr.index()].int_ty()
    }
}

/// The most scalar leaves an object's initialisation in memory writes one by one.
const LEAF_LIMIT: usize = 4096;

impl<'a, 'p> FnBuilder<'a, 'p> {
    /// Whether declaration `key` lives in memory in this build.
    pub fn in_memory(&self, key: &DeclKey) -> bool {
        self.cx.mem.as_ref().is_some_and(|m| m.keys.contains(key))
    }

    /// Records which declaration the variables of `obj` belong to (for the second build).
    pub fn record_declaration(&mut self, obj: &super::types::Obj, key: DeclKey) {
        if let super::types::Obj::Opaque = obj {
            self.cx.opaque_decls.insert(obj as *const _, key.clone());
        }
        let mut vars = Vec::new();
        obj.vars(&mut vars);
        for v in vars {
            self.cx.decl_keys.insert(v, key.clone());
        }
    }

    /// Notes that the function being built has an automatic object in memory.
    pub fn automatic_in_memory(&mut self) {
        let f = self.st.func;
        if let Some(m) = self.cx.mem.as_mut() {
            m.frames.insert(f);
        }
    }

    /// The memory object of a declaration of type `ty`: its address (the model gives up on
    /// types of unknown or variable size).
    pub fn memory_object(&mut self, name: &str, ty: &CType, span: LSpan) -> Expr {
        let size = match self.cx.types.size_of(ty) {
            Some(n) if !self.cx.types.is_variable(ty) => n,
            _ => {
                self.memory_gives_up(span, "an object of variable or unknown size");
                0
            }
        };
        self.static_object(name.to_string(), size, span)
    }

    /// The scalar leaves of the object at `p` (struct members and array elements), or `None`
    /// when there are more than [`LEAF_LIMIT`].
    fn leaves(&self, p: &Place, ty: &CType, out: &mut Vec<(Place, CType)>) -> Option<()> {
        if out.len() > LEAF_LIMIT {
            return None;
        }
        match ty {
            CType::Struct(sid) => {
                let def = &self.cx.types.structs[*sid];
                if def.union {
                    // Union members are opaque; their bytes need no value.
                    return Some(());
                }
                let fields = def.fields.clone().unwrap_or_default();
                for (k, (fname, fty)) in fields.iter().enumerate() {
                    let m = self.member(p, *sid, k, fname, fty);
                    self.leaves(&m, fty, out)?;
                }
                Some(())
            }
            CType::Array(elem, Some(n)) => {
                if *n as usize > LEAF_LIMIT {
                    return None;
                }
                for i in 0..*n {
                    let e = self.element(p, i, elem);
                    self.leaves(&e, elem, out)?;
                }
                Some(())
            }
            CType::Array(_, None) => None,
            CType::Int(_) | CType::Ptr(_) => {
                out.push((p.clone(), ty.clone()));
                Some(())
            }
            _ => Some(()),
        }
    }

    /// Sets every scalar of the object at `p` (in memory) to zero (static storage, braced
    /// initialisers); the model gives up on objects with too many scalars.
    pub fn zero_in_memory(&mut self, p: &Place, ty: &CType, span: LSpan) {
        let mut out = Vec::new();
        if self.leaves(p, ty, &mut out).is_none() {
            self.memory_gives_up(span, "zero-initialisation of a large object in memory");
            return;
        }
        self.st.checked += 1;
        for (leaf, lty) in out {
            let zero = Value::Int(Expr::Const(0, IntTy::INT), CType::Int(IntTy::INT));
            let _ = self.write(&leaf, zero, span);
            let _ = lty;
        }
        self.st.checked -= 1;
    }

    /// Gives every scalar of the object at `p` (in memory) a value from `source`: arbitrary
    /// for an uninitialised local, the environment's for an undefined `extern` object.
    pub fn arbitrary_in_memory(&mut self, p: &Place, ty: &CType, source: crate::ir::InputSource, span: LSpan) {
        let mut out = Vec::new();
        if self.leaves(p, ty, &mut out).is_none() {
            self.memory_gives_up(span, "an uninitialised large object in memory");
            return;
        }
        let sp = self.span(span);
        for (leaf, lty) in out {
            let (Place::At { addr, .. }, Some((arr, _))) = (&leaf, self.cell_of(&lty)) else { continue };
            let lhs = LValue::Elem(arr, addr.clone().cast(IntTy::I64));
            self.emit(EdgeKind::Declaration(Stmt::Input { lhs, source: source.clone() }), sp);
            let (class, bytes) = (self.class_of_cell(arr), self.cx.types.size_of(&lty).unwrap_or(1));
            for s in self.tag_stmts(addr, bytes, |j| Tags::stored(class, j)) {
                self.emit(EdgeKind::Declaration(s), sp);
            }
        }
    }
}

/// The note of a program whose allocations are assumed to succeed.
pub const ALLOCATIONS_SUCCEED: &str =
    "allocations are assumed to succeed (`--assume-allocations-succeed`): what is proved holds for runs in which no allocation returns null";

/// The largest block `calloc` zeroes cell by cell; a larger one has contents the model does
/// not know (any value, never confirming a counterexample).
const CALLOC_ZERO_LIMIT: u64 = 128;

impl<'a, 'p> FnBuilder<'a, 'p> {
    /// `malloc`, `calloc`, `realloc`, `alloca`, `valloc`, `strdup` and `free` with the memory
    /// model (`args` are the lowered arguments), and the kernel's `kmalloc`, `kzalloc`,
    /// `kcalloc` and `kfree` (their flags ignored).
    pub fn memory_call(&mut self, name: &str, args: &[Value], span: LSpan) -> BResult<Value> {
        let sp = self.span(span);
        let u64v = |v: Option<&Value>| match v {
            Some(Value::Int(e, _)) => e.clone().cast(IntTy::U64),
            _ => Expr::Unknown(IntTy::U64, Imprecision::Other),
        };
        if is_deallocator(name) {
            if let Some(Value::Int(p, _)) = args.first() {
                self.free(p.clone(), span);
            }
            return Ok(Value::Void);
        }
        let (size, zero, copy_from) = match name {
            "kzalloc" => (u64v(args.first()), true, None),
            "calloc" | "kcalloc" => {
                let (n, s) = (u64v(args.first()), u64v(args.get(1)));
                let bytes = match (n.constant(), s.constant()) {
                    (Some(a), Some(b)) => Expr::Const(IntTy::U64.wrap(a * b), IntTy::U64),
                    _ => Expr::Binary(BinOp::Mul, Box::new(n), Box::new(s), IntTy::U64),
                };
                (bytes, true, None)
            }
            "realloc" => (u64v(args.get(1)), false, args.first().cloned()),
            "strdup" => (Expr::Unknown(IntTy::U64, Imprecision::Other), false, args.first().cloned()),
            _ => (u64v(args.first()), false, None),
        };
        let may_fail = !matches!(name, "alloca" | "__builtin_alloca");
        if may_fail && !self.cx.allocations_may_fail && !self.cx.notes.iter().any(|n| n.message == ALLOCATIONS_SUCCEED) {
            self.note(span, ALLOCATIONS_SUCCEED);
        }
        let may_fail = may_fail && self.cx.allocations_may_fail;
        let result = self.temp(IntTy::U64, true)?;
        self.cx.alloc_results.insert(result);
        let join = self.new_node();
        if may_fail {
            // The allocation may fail; a counterexample is confirmed only with allocations that
            // succeed (`Imprecision::Allocation`, smt/encode.rs).
            let fails = Expr::Binary(
                BinOp::Eq,
                Box::new(Expr::Unknown(IntTy::U64, Imprecision::Allocation)),
                Box::new(Expr::Const(0, IntTy::U64)),
                IntTy::INT,
            );
            let (bad, ok) = (self.new_node(), self.new_node());
            let cur = self.st.cur;
            self.edge(cur, bad, EdgeKind::Assume { cond: fails.clone(), truth: true }, sp);
            self.edge(cur, ok, EdgeKind::Assume { cond: fails, truth: false }, sp);
            self.st.cur = bad;
            self.stmt_edge(Stmt::Assign(LValue::Var(result), Expr::Const(0, IntTy::U64)), sp);
            let cur = self.st.cur;
            self.edge(cur, join, EdgeKind::Blank, sp);
            self.st.cur = ok;
        }
        if size.constant().is_none_or(|n| n as u64 > MAX_OBJECT) {
            // A block of 2 GiB or more does not fit the encoding of pointers.
            let big = Expr::Binary(BinOp::Gt, Box::new(size.clone()), Box::new(Expr::Const(MAX_OBJECT as i128, IntTy::U64)), IntTy::INT);
            let (yes, no) = (self.new_node(), self.new_node());
            let cur = self.st.cur;
            self.edge(cur, yes, EdgeKind::Assume { cond: big.clone(), truth: true }, sp);
            self.edge(cur, no, EdgeKind::Assume { cond: big, truth: false }, sp);
            self.st.cur = yes;
            self.stmt_edge(Stmt::Unsupported(format!("`{}` of 2 GiB or more", name)), sp);
            // Past it (for the analyses that go on as after a havoc) the result is any value:
            // accesses through it may reach any object, which over-approximates the block.
            self.stmt_edge(Stmt::Assign(LValue::Var(result), Expr::Unknown(IntTy::U64, Imprecision::Other)), sp);
            let cur = self.st.cur;
            self.edge(cur, join, EdgeKind::Blank, sp);
            self.st.cur = no;
        }
        self.new_block(size.clone(), result, sp);
        let block = Expr::Var(result, IntTy::U64);
        let contents = self.cx.mem.as_ref().and_then(|m| m.contents);
        match size.constant() {
            Some(n) if zero && (n as u64) <= CALLOC_ZERO_LIMIT => self.zero_bytes(&block, n as u64, sp),
            Some(n) if name == "realloc" && contents.is_none() && (n as u64) <= CALLOC_ZERO_LIMIT => {
                // The old block's first `n` bytes, in every memory array (bytes past its end are
                // indeterminate, as a fresh block's are: whatever the arrays hold there).
                if let Some(Value::Int(old, _)) = &copy_from {
                    self.copy_bytes(&block, &old.clone().cast(IntTy::U64), n as u64, sp);
                }
            }
            _ if contents.is_some() && (zero || copy_from.is_some()) => {
                // With tags, the object's never-written bytes read as its contents say.
                let kind = if zero { Contents::ZERO } else { Contents::UNKNOWN };
                let obj = object_of(&block);
                self.stmt_edge(Stmt::Assign(LValue::Elem(contents.expect("tagged"), obj), Expr::Const(kind, IntTy::U8)), sp);
            }
            _ if zero => {
                // A zeroed block of unknown or large size: only tagged memory says which of its
                // bytes are still zero.
                self.needs_tags(format!("`{}` of a block of unknown or more than {} bytes", name, CALLOC_ZERO_LIMIT), span);
            }
            _ if copy_from.is_some() => {
                // Contents the model does not follow (the copy of `realloc` and `strdup`): any
                // value, and nothing read from memory confirms a counterexample.
                let cells = self.cx.mem.as_ref().expect("memory model").cells;
                for c in cells {
                    let t = self.cx.mem_cell_ty(c);
                    self.stmt_edge(Stmt::Assign(LValue::Elem(c, block.clone().cast(IntTy::I64)), Expr::Unknown(t, Imprecision::Other)), sp);
                }
            }
            _ => {}
        }
        if let Some(Value::Int(old, _)) = copy_from.filter(|_| name == "realloc") {
            // The old block is freed when the new one is allocated (a failed `realloc` keeps it).
            self.free(old, span);
        }
        let cur = self.st.cur;
        self.edge(cur, join, EdgeKind::Blank, sp);
        self.st.cur = join;
        Ok(Value::Int(block, CType::Ptr(Box::new(CType::Void))))
    }

    /// Copies `n` bytes from `from` to `to` in every memory array (as `realloc` does).
    fn copy_bytes(&mut self, to: &Expr, from: &Expr, n: u64, sp: crate::cfa::Span) {
        self.set_cells(to, n, sp, |c, off, t| {
            Expr::Elem(c, Box::new(displace(from, Expr::Const(off as i128, IntTy::U64)).cast(IntTy::I64)), t)
        });
    }

    /// Sets the `n` bytes from `addr` in every memory array, each cell to `value(array, offset,
    /// type)`.
    fn set_cells(&mut self, addr: &Expr, n: u64, sp: crate::cfa::Span, value: impl Fn(VarId, u64, IntTy) -> Expr) {
        let ptr = self.cx.types.size_of(&CType::Ptr(Box::new(CType::Void))).unwrap_or(8);
        let cells = self.cx.mem.as_ref().expect("memory model").cells;
        for (c, width) in cells.iter().zip([1, 2, 4, 8, ptr]) {
            let t = self.cx.mem_cell_ty(*c);
            let mut off = 0;
            while off + width <= n {
                let at = displace(addr, Expr::Const(off as i128, IntTy::U64)).cast(IntTy::I64);
                self.stmt_edge(Stmt::Assign(LValue::Elem(*c, at), value(*c, off, t)), sp);
                off += width;
            }
        }
    }

    /// Zeroes `n` bytes from `addr` in every memory array (as `calloc` does).
    fn zero_bytes(&mut self, addr: &Expr, n: u64, sp: crate::cfa::Span) {
        self.set_cells(addr, n, sp, |_, _, t| Expr::Const(0, t));
        for s in self.tag_stmts(addr, n, |_| Tags::ZERO) {
            self.stmt_edge(s, sp);
        }
    }

    /// `free(p)`: nothing for null; otherwise `p` must be the start of a live allocated block,
    /// which then ends.
    fn free(&mut self, p: Expr, span: LSpan) {
        let sp = self.span(span);
        let sizes = self.cx.mem.as_ref().expect("memory model").size;
        let p = p.cast(IntTy::U64);
        let null = Expr::Binary(BinOp::Eq, Box::new(p.clone()), Box::new(Expr::Const(0, IntTy::U64)), IntTy::INT);
        let (skip, go, join) = (self.new_node(), self.new_node(), self.new_node());
        let cur = self.st.cur;
        self.edge(cur, skip, EdgeKind::Assume { cond: null.clone(), truth: true }, sp);
        self.edge(cur, go, EdgeKind::Assume { cond: null, truth: false }, sp);
        self.st.cur = go;
        let obj = object_of(&p);
        let valid = and(
            and(
                Expr::Binary(BinOp::Eq, Box::new(offset_of(&p)), Box::new(Expr::Const(0, IntTy::U64)), IntTy::INT),
                Expr::Binary(BinOp::Ge, Box::new(obj.clone()), Box::new(Expr::Const(HEAP_BASE, IntTy::I64)), IntTy::INT),
            ),
            Expr::Binary(
                BinOp::Gt,
                Box::new(Expr::Elem(sizes, Box::new(obj.clone()), IntTy::U64)),
                Box::new(Expr::Const(0, IntTy::U64)),
                IntTy::INT,
            ),
        );
        if self.cx.bounds_checks && self.st.dry == 0 {
            self.branch_to_target(valid, format!("`{}`", self.source_text(span)), span);
        }
        self.stmt_edge(Stmt::Assign(LValue::Elem(sizes, obj), Expr::Const(0, IntTy::U64)), sp);
        let cur = self.st.cur;
        self.edge(cur, join, EdgeKind::Blank, sp);
        self.st.cur = skip;
        let cur = self.st.cur;
        self.edge(cur, join, EdgeKind::Blank, sp);
        self.st.cur = join;
    }
}

impl<'a, 'p> FnBuilder<'a, 'p> {
    /// A string literal: a static object holding its bytes and the terminating zero (written
    /// by the start function); the value is a pointer to its first character.
    pub fn string_literal(&mut self, parts: &[String], span: LSpan) -> Value {
        let units = super::consts::string_literal(parts);
        let elem = match super::consts::string_literal_type(parts) {
            CType::Array(e, _) => *e,
            _ => CType::Int(IntTy::I8),
        };
        let width = self.cx.types.size_of(&elem).unwrap_or(1);
        let text: String = units.iter().take(16).map(|&u| char::from_u32(u).filter(|c| !c.is_control()).unwrap_or('.')).collect();
        let shown = format!("\"{}{}\"", text, if units.len() > 16 { "…" } else { "" });
        let addr = self.static_object(shown, (units.len() as u64 + 1) * width, span);
        if let (0, Some((arr, it))) = (self.st.dry, self.cell_of(&elem)) {
            let cty = self.cx.mem_cell_ty(arr);
            let sp = self.span(span);
            for (i, u) in units.iter().chain(std::iter::once(&0u32)).enumerate() {
                let at = displace(&addr, Expr::Const(i as i128 * width as i128, IntTy::U64)).cast(IntTy::I64);
                let v = Expr::Const(cty.wrap(it.wrap(*u as i128)), cty);
                self.in_start_emit(EdgeKind::Declaration(Stmt::Assign(LValue::Elem(arr, at), v)), sp);
            }
            let class = self.class_of_cell(arr);
            for s in self.tag_stmts(&addr, (units.len() as u64 + 1) * width, |j| Tags::stored(class, j % width)) {
                self.in_start_emit(EdgeKind::Declaration(s), sp);
            }
        }
        Value::Int(addr, CType::Ptr(Box::new(elem)))
    }
}

impl<'a, 'p> FnBuilder<'a, 'p> {
    /// The address of function `name` as a value (an object of size 0: no data access through
    /// it is valid), the same for every use.
    pub fn function_address(&mut self, name: &str, span: LSpan) -> Expr {
        if let Some(a) = self.cx.mem.as_ref().and_then(|m| m.functions.get(name)) {
            return a.clone();
        }
        let addr = self.static_object(name.to_string(), 0, span);
        self.cx.mem.as_mut().expect("memory model").functions.insert(name.to_string(), addr.clone());
        addr
    }
}

/// The most elements an entry's pointer argument points to (keeps sizes inside the encoding).
const ENTRY_BUFFER_LIMIT: i128 = 1 << 20;

impl<'a, 'p> FnBuilder<'a, 'p> {
    /// A pointer argument of an entry function: a new object of an arbitrary number (at least
    /// one, an input named `what`) of elements of type `pointee`, with arbitrary contents.
    pub fn entry_buffer(&mut self, pointee: &CType, what: String, at: crate::cfa::Span) -> BResult<Expr> {
        let elem = match pointee {
            CType::Void => 1,
            t => self.cx.types.size_of(t).filter(|&n| n > 0).unwrap_or(1),
        };
        let count = self.temp(IntTy::U64, false)?;
        self.st.locals[count.index()].name = what.clone();
        self.st.locals[count.index()].synthetic = false;
        self.stmt_edge(Stmt::Input { lhs: LValue::Var(count), source: crate::ir::InputSource::Call(what) }, at);
        let n = Expr::Var(count, IntTy::U64);
        for cond in [
            Expr::Binary(BinOp::Ge, Box::new(n.clone()), Box::new(Expr::Const(1, IntTy::U64)), IntTy::INT),
            Expr::Binary(BinOp::Le, Box::new(n.clone()), Box::new(Expr::Const(ENTRY_BUFFER_LIMIT, IntTy::U64)), IntTy::INT),
        ] {
            self.assume_or_end(cond, at);
        }
        let bytes = Expr::Binary(BinOp::Mul, Box::new(n), Box::new(Expr::Const(elem as i128, IntTy::U64)), IntTy::U64);
        let holder = self.temp(IntTy::U64, true)?;
        self.new_block(bytes, holder, at);
        Ok(Expr::Var(holder, IntTy::U64))
    }

    /// A new allocated object of `bytes` bytes: the next id of `__next`, its size recorded,
    /// its start assigned to `holder`.
    fn new_block(&mut self, bytes: Expr, holder: VarId, sp: crate::cfa::Span) {
        let (next, sizes) = {
            let m = self.cx.mem.as_ref().expect("memory model");
            (m.next, m.size)
        };
        let id = Expr::Var(next, IntTy::I64);
        self.stmt_edge(Stmt::Assign(LValue::Elem(sizes, id.clone()), bytes), sp);
        let start = Expr::Binary(
            BinOp::Mul,
            Box::new(id.clone().cast(IntTy::U64)),
            Box::new(Expr::Const(1 << OFFSET_BITS, IntTy::U64)),
            IntTy::U64,
        );
        self.stmt_edge(Stmt::Assign(LValue::Var(holder), start), sp);
        if !self.cx.allocations_may_fail {
            // An allocation that succeeds is not null (C's rule; the ids would wrap around
            // only after 3 * 2^30 allocations, a run the model does not otherwise tell apart).
            let nonnull =
                Expr::Binary(BinOp::Ne, Box::new(Expr::Var(holder, IntTy::U64)), Box::new(Expr::Const(0, IntTy::U64)), IntTy::INT);
            self.assume_or_end(nonnull, sp);
        }
        let inc = Expr::Binary(BinOp::Add, Box::new(id), Box::new(Expr::Const(1, IntTy::I64)), IntTy::I64);
        self.stmt_edge(Stmt::Assign(LValue::Var(next), inc), sp);
    }

    /// Continues where `cond` holds; the path ends, without error, where it does not.
    fn assume_or_end(&mut self, cond: Expr, sp: crate::cfa::Span) {
        let ok = self.new_node();
        let stop = self.terminal_node();
        let cur = self.st.cur;
        self.edge(cur, ok, EdgeKind::Assume { cond: cond.clone(), truth: true }, sp);
        self.edge(cur, stop, EdgeKind::Assume { cond, truth: false }, sp);
        self.st.cur = ok;
    }
}
