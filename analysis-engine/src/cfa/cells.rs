//! Cell morphing (Monniaux and Gonnord, "Cell Morphing: From Array Programs to Array-Free Horn
//! Clauses", SAS 2016, §3): the program with every array replaced by its one cell at an index
//! `k` chosen once, arbitrarily, at the start. An analysis that proves a property of this
//! program has proved it of every `k`, so of every cell: `for (i = 0; i < n; i++) a[i] = 0;`
//! leaves the scalar invariant `k < 0 | k >= i | a_k == 0` (`analyses::cells` proposes such
//! candidates), where the array's own invariant is quantified (`∀j < i. a[j] == 0`).
//!
//! The transformation, on the CFA:
//! * a read `a[e]` is `e == k ? a_k : any value`; a write `a[e] = v` is
//!   `a_k = e == k ? v : a_k`; a declaration without initialiser gives `a_k` any value, a
//!   zeroing one 0. So for every `k`, `a_k == a[k]` holds on every path, and the program is an
//!   over-approximation of the original one, for every choice of `k`.
//! * That alone proves nothing about a read `a[x]` with `x != k` (any value). So a ghost
//!   `h = (e == k)` is set before each edge that reads an array (`e` the index of one of its
//!   reads), and every edge into a target also requires `h`. This is sound whatever `e` is:
//!   an execution of the original program that reaches a target is followed by the abstract
//!   program with `k` chosen as the value `e` had at the last assignment of `h` on it (any
//!   value if there was none: `h` starts true), and then `h` holds at the target. In the
//!   usual `assert(a[x] == 0)` the last read is `a[x]`, so the check happens exactly where
//!   `x == k`, with the cell's value.
//!
//! The result is only for proofs: a path to a target in it may not exist in the program.
//! Arrays that are used whole (`Expr::Var` of an array), written by a call's result, whose
//! address escapes, or that the builder made (the memory model's `__mem*`) stay arrays.

use std::collections::HashMap;
use std::sync::Arc;

use super::{loops, CfaEdge, CfaNode, EdgeId, EdgeKind, NodeId, Program};
use crate::ir::{BinOp, Expr, FuncId, Imprecision, InputSource, IntTy, LValue, Stmt, VarId, VarInfo, VarKind};

/// The program with its arrays replaced by cells.
pub struct Cells {
    pub program: Program,
    /// How many arrays became cells.
    pub arrays: usize,
    /// The cell index `k` (a global `long long`).
    pub k: VarId,
    /// Whether the last array index read was `k` (a global `int`, true until the first read).
    pub at_k: VarId,
    /// What invariants over cells are usually made of, per function: the indices the
    /// function reads and writes at (`i`, `2*i + 1`, as `long long`), what its writes put in
    /// a cell (`(cell, a_k == v)`, the index replaced by `k` in `v`), and its branch
    /// conditions (loop bounds, the conditions inside loops and before a target, every
    /// (in)equality, and `x == C` for a constant put in a scalar).
    pub indices: Vec<(FuncId, Expr)>,
    pub writes: Vec<(FuncId, Expr)>,
    pub conditions: Vec<(FuncId, Expr)>,
    /// What a call of an assertion helper asserts of one cell, the index replaced by `k`
    /// (`__VERIFIER_assert(s[i].n != 0)` gives `s.n_k != 0`).
    pub asserted: Vec<(FuncId, Expr)>,
    /// The conditions of branches inside loop bodies, not at their heads, over variables no
    /// loop body sets (`if (c > 5) break;`).
    pub guards: Vec<(FuncId, Expr)>,
}

/// The program with its arrays replaced by cells; `None` when no array qualifies.
pub fn abstract_arrays(p: &Program) -> Option<Cells> {
    let arrays = candidates(p);
    if arrays.is_empty() {
        return None;
    }
    let mut q = p.clone();
    // One cell per array, where the array lives (a local array's cell is a local of its
    // function, so that recursion saves and restores it).
    let mut cells: HashMap<VarId, (VarId, IntTy)> = HashMap::new();
    let mut locals: HashMap<FuncId, Vec<VarInfo>> = HashMap::new();
    for &a in &arrays {
        let info = p.var(a);
        let cell = VarInfo { name: format!("{}[k]", info.name), kind: VarKind::Int(info.int_ty()), synthetic: true, pointer: info.pointer };
        let id = match a.func() {
            None => {
                q.globals.push(cell);
                VarId::global(q.globals.len() - 1)
            }
            Some(f) => {
                let extra = locals.entry(f).or_default();
                extra.push(cell);
                let idx = p.cfa(f).locals.len() + extra.len() - 1;
                if idx >= VarId::LIMIT {
                    return None;
                }
                VarId::local(f, idx)
            }
        };
        cells.insert(a, (id, info.int_ty()));
    }
    q.globals.push(VarInfo { name: "k".into(), kind: VarKind::Int(IntTy::I64), synthetic: true, pointer: false });
    let k = VarId::global(q.globals.len() - 1);
    q.globals.push(VarInfo { name: "__cell_read_at_k".into(), kind: VarKind::Int(IntTy::INT), synthetic: true, pointer: false });
    let h = VarId::global(q.globals.len() - 1);
    if q.globals.len() >= VarId::LIMIT {
        return None;
    }
    for &a in arrays.iter().filter(|a| a.func().is_none()) {
        q.globals[a.index()].kind = VarKind::Int(cells[&a].1);
    }
    let rw = Rewriter { cells: &cells, k };
    let (mut indices, mut writes, mut conditions, mut asserted, mut guards) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for f in p.func_ids() {
        let mut cfa = (*p.cfa(f)).clone();
        cfa.locals.extend(locals.remove(&f).unwrap_or_default());
        // A replaced array stays declared (variable ids do not move), as a scalar no edge uses.
        for &a in arrays.iter().filter(|a| a.func() == Some(f)) {
            cfa.locals[a.index()].kind = VarKind::Int(cells[&a].1);
        }
        let original = cfa.edges.len();
        let cyclic = on_cycles(&cfa);
        // The variables a loop body sets: a guard over one of them is not the loop's to keep.
        let mut set_in_loops: Vec<VarId> = Vec::new();
        for e in cfa.edges.iter().filter(|e| cyclic[e.src.0 as usize]) {
            match &e.kind {
                EdgeKind::Statement(Stmt::Assign(LValue::Var(v), _) | Stmt::Input { lhs: LValue::Var(v), .. })
                | EdgeKind::Declaration(Stmt::Assign(LValue::Var(v), _) | Stmt::Input { lhs: LValue::Var(v), .. }) => set_in_loops.push(*v),
                EdgeKind::CallSummary(c) => set_in_loops.extend(c.ret.iter().map(LValue::var)),
                _ => {}
            }
        }
        let fixed = |e: &Expr| {
            let mut vs = Vec::new();
            e.vars(&mut vs);
            vs.iter().all(|v| !set_in_loops.contains(v))
        };
        for e in 0..original {
            let kind = cfa.edges[e].kind.clone();
            // Loop conditions, the conditions inside a loop's body (a `break`'s, the one
            // guarding the check of a cell), and the conditions under which a target is
            // reached (those of a `__VERIFIER_assert` are about its parameter, in its own
            // function).
            let in_loop = cyclic[cfa.edges[e].src.0 as usize];
            let to_target = leads_to_target(&cfa, cfa.edges[e].dst);
            let parts = rw.parts(&kind, in_loop || to_target);
            if let EdgeKind::Assume { cond, .. } = &kind {
                // (Not a check's branch, one of whose sides is its target: a bounds check.)
                let src = cfa.node(cfa.edges[e].src);
                let check = src.out.iter().any(|&o| leads_to_target(&cfa, cfa.edge(o).dst));
                if in_loop && !src.loop_head && !check && fixed(cond) {
                    guards.push((f, rw.cellify(cond)));
                }
            }
            if let EdgeKind::CallSummary(call) = &kind {
                if p.cfa(call.callee).assert_helper {
                    asserted.extend(call.args.iter().filter_map(|a| rw.asserted(a)).map(|x| (f, x)));
                }
            }
            indices.extend(parts.indices.into_iter().map(|x| (f, x)));
            writes.extend(parts.writes.into_iter().map(|x| (f, x)));
            conditions.extend(parts.conditions.into_iter().map(|x| (f, x)));
            let (kind, read) = rw.edge(kind);
            cfa.edges[e].kind = kind;
            if let Some(idx) = read {
                let at_k = Stmt::Assign(LValue::Var(h), eq_k(idx, k));
                insert_before(&mut cfa, EdgeId(e as u32), EdgeKind::Statement(at_k));
            }
        }
        for n in 0..cfa.nodes.len() {
            if cfa.nodes[n].target.is_none() {
                continue;
            }
            for e in cfa.nodes[n].inc.clone() {
                insert_after(&mut cfa, e, EdgeKind::Assume { cond: Expr::Var(h, IntTy::INT), truth: true });
            }
        }
        if f == p.start {
            // `k` any value, `h` true until the first read.
            let choose = Stmt::Input { lhs: LValue::Var(k), source: InputSource::Call("the cell index k".into()) };
            let entry = cfa.entry;
            let first = push_node(&mut cfa, entry);
            let second = push_node(&mut cfa, entry);
            link(&mut cfa, first, second, EdgeKind::Statement(choose));
            link(&mut cfa, second, entry, EdgeKind::Statement(Stmt::Assign(LValue::Var(h), Expr::int(1))));
            cfa.entry = first;
        }
        for node in cfa.nodes.iter_mut() {
            node.rpo = u32::MAX;
        }
        q.functions[f.0 as usize].cfa = Arc::new(loops::finish_cfa(cfa));
    }
    for v in [&mut indices, &mut writes, &mut conditions, &mut asserted, &mut guards] {
        dedup(v);
    }
    Some(Cells { program: q, arrays: arrays.len(), k, at_k: h, indices, writes, conditions, asserted, guards })
}

/// `v` without its repeated elements (the first of each kept, in order).
pub(crate) fn dedup<T: PartialEq + Clone>(v: &mut Vec<T>) {
    let mut seen: Vec<T> = Vec::new();
    v.retain(|x| {
        !seen.contains(x) && {
            seen.push(x.clone());
            true
        }
    });
}

/// Whether the program has an array the transformation would replace.
pub fn has_candidates(p: &Program) -> bool {
    !candidates(p).is_empty()
}

/// The arrays the transformation replaces: the user's arrays used only element by element.
fn candidates(p: &Program) -> Vec<VarId> {
    let mut out: Vec<VarId> = Vec::new();
    let mut consider = |v: VarId, info: &VarInfo| {
        if matches!(info.kind, VarKind::Array { .. }) && !info.synthetic && !p.escaped.contains(&v) {
            out.push(v);
        }
    };
    for (i, info) in p.globals.iter().enumerate() {
        consider(VarId::global(i), info);
    }
    for f in p.func_ids() {
        for (i, info) in p.cfa(f).locals.iter().enumerate() {
            consider(VarId::local(f, i), info);
        }
    }
    let mut excluded: Vec<VarId> = Vec::new();
    for f in p.func_ids() {
        for e in &p.cfa(f).edges {
            for_each_expr(&e.kind, &mut |x| {
                if let Expr::Var(v, _) = x {
                    excluded.push(*v);
                }
            });
            // (An input into a whole array, as an uninitialised declaration is, gives its cell
            // any value.)
            match &e.kind {
                EdgeKind::Statement(Stmt::Assign(LValue::Var(v), _)) | EdgeKind::Declaration(Stmt::Assign(LValue::Var(v), _)) => {
                    excluded.push(*v)
                }
                EdgeKind::CallSummary(c) => excluded.extend(c.ret.iter().map(LValue::var)),
                _ => {}
            }
        }
    }
    out.retain(|v| !excluded.contains(v));
    out
}

/// Calls `f` on every expression an edge evaluates (and their sub-expressions).
pub(crate) fn for_each_expr(kind: &EdgeKind, f: &mut impl FnMut(&Expr)) {
    let lvalue = |lv: &LValue, f: &mut dyn FnMut(&Expr)| {
        if let LValue::Elem(_, i) = lv {
            i.walk(&mut |x| f(x));
        }
    };
    match kind {
        EdgeKind::Blank => {}
        EdgeKind::Assume { cond, .. } => cond.walk(f),
        EdgeKind::Statement(s) | EdgeKind::Declaration(s) => match s {
            Stmt::Assign(lv, rhs) => {
                lvalue(lv, f);
                rhs.walk(f);
            }
            Stmt::Input { lhs, .. } => lvalue(lhs, f),
            Stmt::HavocMemory(_) | Stmt::InitArray { .. } | Stmt::Unsupported(_) => {}
        },
        EdgeKind::Return(es) => es.iter().for_each(|e| e.walk(f)),
        EdgeKind::CallSummary(c) => {
            c.args.iter().for_each(|e| e.walk(f));
            c.ret.iter().for_each(|lv| lvalue(lv, f));
        }
    }
}

/// `idx == k`.
fn eq_k(idx: Expr, k: VarId) -> Expr {
    Expr::Binary(BinOp::Eq, Box::new(idx.cast(IntTy::I64)), Box::new(Expr::Var(k, IntTy::I64)), IntTy::INT)
}

/// What one edge suggests (`Cells::indices`, `writes`, `conditions`).
#[derive(Default)]
struct Parts {
    indices: Vec<Expr>,
    writes: Vec<Expr>,
    conditions: Vec<Expr>,
}

struct Rewriter<'a> {
    /// Each array's cell and element type.
    cells: &'a HashMap<VarId, (VarId, IntTy)>,
    /// The index `k`.
    k: VarId,
}

impl Rewriter<'_> {
    /// What an edge of the original program suggests invariants be made of.
    fn parts(&self, kind: &EdgeKind, branch: bool) -> Parts {
        let mut out = Parts::default();
        let k = Expr::Var(self.k, IntTy::I64);
        for_each_expr(kind, &mut |x| {
            if let Expr::Elem(a, i, _) = x {
                if self.cells.contains_key(a) {
                    out.indices.push(self.cellify(i).cast(IntTy::I64));
                }
            }
        });
        match kind {
            EdgeKind::Statement(Stmt::Assign(LValue::Elem(a, i), v)) | EdgeKind::Declaration(Stmt::Assign(LValue::Elem(a, i), v))
                if self.cells.contains_key(a) =>
            {
                let (cell, ty) = self.cells[a];
                let i = self.cellify(i).cast(IntTy::I64);
                out.indices.push(i.clone());
                // What the cell holds once written at `k`: the value, with the index (if it is
                // a variable) being `k`.
                let mut v = self.cellify(v);
                if let Expr::Var(x, _) = strip(&i) {
                    v = substitute(&v, *x, &k);
                }
                out.writes.push(Expr::Binary(BinOp::Eq, Box::new(Expr::Var(cell, ty)), Box::new(v.cast(ty)), IntTy::INT));
            }
            // A constant put in a scalar (`N = 100000`, the bound of a loop over `2 * N` cells)
            // as if compared with it.
            EdgeKind::Statement(Stmt::Assign(LValue::Var(v), c @ Expr::Const(..)))
            | EdgeKind::Declaration(Stmt::Assign(LValue::Var(v), c @ Expr::Const(..)))
                if !self.cells.contains_key(v) =>
            {
                out.conditions.push(Expr::Binary(BinOp::Eq, Box::new(Expr::Var(*v, c.ty())), Box::new(c.clone()), IntTy::INT))
            }
            // (An (in)equality anywhere: `if (i != z) a[i] = b[i];` skips one cell.)
            EdgeKind::Assume { cond, .. } if branch || matches!(strip(cond), Expr::Binary(BinOp::Eq | BinOp::Ne, ..)) => {
                out.conditions.push(self.cellify(cond))
            }
            _ => {}
        }
        out
    }

    /// An assertion's argument `e` as a fact of the cell at `k`: when it reads cells at one
    /// index only, a variable `x` (`a[x] == x` gives `a_k == k`), and nothing but cells.
    fn asserted(&self, e: &Expr) -> Option<Expr> {
        let mut at: Vec<Expr> = Vec::new();
        let mut other_arrays = false;
        e.walk(&mut |x| {
            if let Expr::Elem(a, i, _) = x {
                if self.cells.contains_key(a) {
                    if !at.contains(strip(i)) {
                        at.push(strip(i).clone());
                    }
                } else {
                    other_arrays = true;
                }
            }
        });
        let [Expr::Var(x, _)] = at.as_slice() else { return None };
        if other_arrays {
            return None;
        }
        let fact = substitute(&self.cellify(e), *x, &Expr::Var(self.k, IntTy::I64));
        Some(match strip(&fact) {
            Expr::Binary(op, ..) if op.is_comparison() => strip(&fact).clone(),
            _ => Expr::Binary(BinOp::Ne, Box::new(fact), Box::new(Expr::Const(0, IntTy::INT)), IntTy::INT),
        })
    }

    /// The expression with each array read replaced by the array's cell.
    fn cellify(&self, e: &Expr) -> Expr {
        map(e, &mut |x| match x {
            Expr::Elem(a, _, t) => self.cells.get(a).map(|&(cell, ty)| Expr::Var(cell, ty).cast(*t)),
            _ => None,
        })
    }

    /// The edge with its arrays replaced, and the (rewritten) index of its last array read.
    fn edge(&self, kind: EdgeKind) -> (EdgeKind, Option<Expr>) {
        let mut read = None;
        let kind = match kind {
            EdgeKind::Blank => EdgeKind::Blank,
            EdgeKind::Assume { cond, truth } => EdgeKind::Assume { cond: self.expr(&cond, &mut read), truth },
            EdgeKind::Statement(s) => EdgeKind::Statement(self.stmt(s, &mut read)),
            EdgeKind::Declaration(s) => EdgeKind::Declaration(self.stmt(s, &mut read)),
            EdgeKind::Return(es) => EdgeKind::Return(es.iter().map(|e| self.expr(e, &mut read)).collect()),
            EdgeKind::CallSummary(mut c) => {
                c.args = c.args.iter().map(|e| self.expr(e, &mut read)).collect();
                c.ret = c.ret.iter().map(|lv| self.lvalue_elsewhere(lv, &mut read)).collect();
                EdgeKind::CallSummary(c)
            }
        };
        (kind, read)
    }

    fn stmt(&self, s: Stmt, read: &mut Option<Expr>) -> Stmt {
        match s {
            Stmt::Assign(LValue::Elem(a, i), rhs) if self.cells.contains_key(&a) => {
                let rhs = self.expr(&rhs, read);
                let i = self.expr(&i, read);
                self.write(a, i, rhs)
            }
            Stmt::Assign(lv, rhs) => {
                let rhs = self.expr(&rhs, read);
                Stmt::Assign(self.lvalue_elsewhere(&lv, read), rhs)
            }
            Stmt::Input { lhs: LValue::Elem(a, i), .. } if self.cells.contains_key(&a) => {
                let i = self.expr(&i, read);
                let ty = self.cells[&a].1;
                self.write(a, i, Expr::Unknown(ty, Imprecision::Other))
            }
            Stmt::Input { lhs: LValue::Var(a), source } if self.cells.contains_key(&a) => {
                Stmt::Input { lhs: LValue::Var(self.cells[&a].0), source }
            }
            Stmt::Input { lhs, source } => Stmt::Input { lhs: self.lvalue_elsewhere(&lhs, read), source },
            Stmt::InitArray { var, zero } if self.cells.contains_key(&var) => {
                let (cell, ty) = self.cells[&var];
                match zero {
                    true => Stmt::Assign(LValue::Var(cell), Expr::Const(0, ty)),
                    false => Stmt::Input { lhs: LValue::Var(cell), source: InputSource::Uninitialised },
                }
            }
            s @ (Stmt::HavocMemory(_) | Stmt::InitArray { .. } | Stmt::Unsupported(_)) => s,
        }
    }

    /// `a_k = i == k ? v : a_k`.
    fn write(&self, a: VarId, i: Expr, v: Expr) -> Stmt {
        let (cell, ty) = self.cells[&a];
        let v = v.cast(ty);
        Stmt::Assign(LValue::Var(cell), Expr::Ite(Box::new(eq_k(i, self.k)), Box::new(v), Box::new(Expr::Var(cell, ty)), ty))
    }

    /// An lvalue of a scalar or of an array that stays an array (its index rewritten).
    fn lvalue_elsewhere(&self, lv: &LValue, read: &mut Option<Expr>) -> LValue {
        match lv {
            LValue::Var(v) => LValue::Var(*v),
            LValue::Elem(b, i) => LValue::Elem(*b, self.expr(i, read)),
        }
    }

    fn expr(&self, e: &Expr, read: &mut Option<Expr>) -> Expr {
        match e {
            Expr::Elem(a, i, t) => {
                let i = self.expr(i, read);
                match self.cells.get(a) {
                    Some(&(cell, ty)) => {
                        *read = Some(i.clone());
                        let at_k = Expr::Var(cell, ty).cast(*t);
                        Expr::Ite(Box::new(eq_k(i, self.k)), Box::new(at_k), Box::new(Expr::Unknown(*t, Imprecision::Other)), *t)
                    }
                    None => Expr::Elem(*a, Box::new(i), *t),
                }
            }
            Expr::Const(..) | Expr::Var(..) | Expr::Unknown(..) => e.clone(),
            Expr::Unary(op, a, t) => Expr::Unary(*op, Box::new(self.expr(a, read)), *t),
            Expr::Binary(op, a, b, t) => {
                let a = self.expr(a, read);
                let b = self.expr(b, read);
                Expr::Binary(*op, Box::new(a), Box::new(b), *t)
            }
            Expr::Cast(a, t) => Expr::Cast(Box::new(self.expr(a, read)), *t),
            Expr::Ite(c, a, b, t) => {
                let c = self.expr(c, read);
                let a = self.expr(a, read);
                let b = self.expr(b, read);
                Expr::Ite(Box::new(c), Box::new(a), Box::new(b), *t)
            }
        }
    }
}

/// Per node of `cfa`, whether it lies on a cycle: in the strongly connected component of a
/// loop head (the nodes it reaches that reach it back).
fn on_cycles(cfa: &super::Cfa) -> Vec<bool> {
    let walk = |from: NodeId, forward: bool| {
        let mut seen = vec![false; cfa.nodes.len()];
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            let node = cfa.node(n);
            for &e in if forward { &node.out } else { &node.inc } {
                let m = if forward { cfa.edge(e).dst } else { cfa.edge(e).src };
                if !seen[m.0 as usize] {
                    seen[m.0 as usize] = true;
                    stack.push(m);
                }
            }
        }
        seen
    };
    let mut out = vec![false; cfa.nodes.len()];
    for h in cfa.loop_heads() {
        let (reached, reaching) = (walk(h, true), walk(h, false));
        for (o, (a, b)) in out.iter_mut().zip(reached.iter().zip(&reaching)) {
            *o |= *a && *b;
        }
    }
    out
}

/// Whether `n` is a target or only blank edges lead from it to one.
pub(crate) fn leads_to_target(cfa: &super::Cfa, mut n: NodeId) -> bool {
    for _ in 0..cfa.nodes.len() {
        let node = cfa.node(n);
        if node.target.is_some() {
            return true;
        }
        match node.out.as_slice() {
            [e] if matches!(cfa.edge(*e).kind, EdgeKind::Blank) => n = cfa.edge(*e).dst,
            _ => return false,
        }
    }
    false
}

/// The expression with casts removed at its top.
pub(crate) fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Cast(x, _) => strip(x),
        other => other,
    }
}

/// `e` with the variable `x` replaced by `by` (converted to `x`'s type).
pub(crate) fn substitute(e: &Expr, x: VarId, by: &Expr) -> Expr {
    map(e, &mut |y| match y {
        Expr::Var(v, t) if *v == x => Some(by.clone().cast(*t)),
        _ => None,
    })
}

/// Rebuilds `e` bottom-up, replacing each sub-expression for which `f` has a replacement
/// (whose own sub-expressions are then left alone).
fn map(e: &Expr, f: &mut impl FnMut(&Expr) -> Option<Expr>) -> Expr {
    if let Some(r) = f(e) {
        return r;
    }
    match e {
        Expr::Const(..) | Expr::Var(..) | Expr::Unknown(..) => e.clone(),
        Expr::Elem(a, i, t) => Expr::Elem(*a, Box::new(map(i, f)), *t),
        Expr::Unary(op, a, t) => Expr::Unary(*op, Box::new(map(a, f)), *t),
        Expr::Binary(op, a, b, t) => {
            let a = map(a, f);
            Expr::Binary(*op, Box::new(a), Box::new(map(b, f)), *t)
        }
        Expr::Cast(a, t) => Expr::Cast(Box::new(map(a, f)), *t),
        Expr::Ite(c, a, b, t) => {
            let c = map(c, f);
            let a = map(a, f);
            Expr::Ite(Box::new(c), Box::new(a), Box::new(map(b, f)), *t)
        }
    }
}

/// A new node with `like`'s span.
fn push_node(cfa: &mut super::Cfa, like: NodeId) -> NodeId {
    let span = cfa.node(like).span;
    cfa.nodes.push(CfaNode { out: Vec::new(), inc: Vec::new(), loop_head: false, target: None, terminal: false, rpo: u32::MAX, span });
    NodeId(cfa.nodes.len() as u32 - 1)
}

/// A new edge `src → dst`.
fn link(cfa: &mut super::Cfa, src: NodeId, dst: NodeId, kind: EdgeKind) -> EdgeId {
    let span = cfa.node(dst).span;
    cfa.edges.push(CfaEdge { src, dst, kind, span });
    let id = EdgeId(cfa.edges.len() as u32 - 1);
    cfa.nodes[src.0 as usize].out.push(id);
    cfa.nodes[dst.0 as usize].inc.push(id);
    id
}

/// `src –kind→ n –e→ dst` for the edge `e: src → dst`; `e` keeps its id, and the new edge takes
/// its place among `src`'s out-edges.
fn insert_before(cfa: &mut super::Cfa, e: EdgeId, kind: EdgeKind) {
    let (src, span) = (cfa.edge(e).src, cfa.edge(e).span);
    let n = push_node(cfa, src);
    cfa.nodes[n.0 as usize].span = span;
    cfa.edges.push(CfaEdge { src, dst: n, kind, span });
    let new = EdgeId(cfa.edges.len() as u32 - 1);
    for x in cfa.nodes[src.0 as usize].out.iter_mut() {
        if *x == e {
            *x = new;
        }
    }
    cfa.nodes[n.0 as usize].inc.push(new);
    cfa.nodes[n.0 as usize].out.push(e);
    cfa.edges[e.0 as usize].src = n;
}

/// `src –e→ n –kind→ dst` for the edge `e: src → dst`; `e` keeps its id, and the new edge takes
/// its place among `dst`'s in-edges.
fn insert_after(cfa: &mut super::Cfa, e: EdgeId, kind: EdgeKind) {
    let (dst, span) = (cfa.edge(e).dst, cfa.edge(e).span);
    let n = push_node(cfa, dst);
    cfa.nodes[n.0 as usize].span = span;
    cfa.edges.push(CfaEdge { src: n, dst, kind, span });
    let new = EdgeId(cfa.edges.len() as u32 - 1);
    for x in cfa.nodes[dst.0 as usize].inc.iter_mut() {
        if *x == e {
            *x = new;
        }
    }
    cfa.nodes[n.0 as usize].out.push(new);
    cfa.nodes[n.0 as usize].inc.push(e);
    cfa.edges[e.0 as usize].dst = n;
}
