//! Loop acceleration in the concrete interpreter: the innermost loop of an activation is
//! observed iteration by iteration; after two iterations that follow the same affine path
//! and change the state by the same delta, the run jumps ahead by the largest number of
//! iterations that provably all follow that path (found by binary search on exact integers).

use super::machine::Machine;
use super::plan::Plan;
use crate::cfa::{EdgeId, EdgeKind, NodeId, Program};
use crate::ir::{Expr, FuncId, IntTy, LValue, Stmt, VarId};

/// Observation of the innermost loop of an activation: the state and path of each iteration.
pub(super) struct LoopTrack {
    head: NodeId,
    snap: Vec<Option<i128>>,
    path: Vec<EdgeId>,
    /// The path allows acceleration so far (no calls, inputs, array writes; not too long).
    clean: bool,
    prev_path: Vec<EdgeId>,
    prev_delta: Option<Vec<i128>>,
}

/// A jump over loop iterations: how many were skipped, the length of the iteration path, and
/// the variables the jump changed with their new values.
pub(super) type Jump = (u64, usize, Vec<(VarId, Option<i64>, i128)>);

/// A state as the values of the locals and of the globals.
type State = (Vec<Option<i128>>, Vec<Option<i128>>);

/// Longest iteration path that is considered for acceleration.
const MAX_ITERATION_EDGES: usize = 256;

impl<'p> Machine<'p> {
    /// Adds an edge to the path of the loop iteration being observed.
    pub(super) fn log_edge(&mut self, e: EdgeId) {
        if let Some(t) = &mut self.frames.last_mut().expect("a frame").track {
            if t.path.len() < MAX_ITERATION_EDGES {
                t.path.push(e);
            } else {
                t.clean = false;
            }
        }
    }

    /// The iteration being observed cannot be accelerated (a call, an input, an array write).
    pub(super) fn spoil(&mut self) {
        if let Some(t) = &mut self.frames.last_mut().expect("a frame").track {
            t.clean = false;
        }
    }

    /// At a loop head: completes the observed iteration and, after two identical affine
    /// iterations with equal deltas, jumps ahead. Returns the skipped iterations, the path
    /// length and the variables the jump changed.
    pub(super) fn loop_head(&mut self, p: &Program, plan: &Plan, node: NodeId) -> Option<Jump> {
        let func = self.frame().func;
        let nlocals = self.frame().locals.len();
        let mut snap: Vec<Option<i128>> = self.frame().locals.clone();
        snap.extend_from_slice(&self.globals);
        let frame = self.frames.last_mut().expect("a frame");
        let same = frame.track.as_ref().is_some_and(|t| t.head == node);
        if !same {
            frame.track = Some(LoopTrack { head: node, snap, path: Vec::new(), clean: true, prev_path: Vec::new(), prev_delta: None });
            return None;
        }
        let t = frame.track.as_mut().expect("tracked");
        let delta: Option<Vec<i128>> = t
            .snap
            .iter()
            .zip(&snap)
            .map(|(a, b)| match (a, b) {
                (Some(a), Some(b)) => Some(b - a),
                (None, None) => Some(0),
                _ => None,
            })
            .collect();
        let mut result = None;
        if t.clean && delta.is_some() && t.path == t.prev_path && delta == t.prev_delta && !t.path.is_empty() {
            let d = delta.clone().expect("checked");
            if d.iter().any(|&x| x != 0) && plan.is_affine(p, func, &t.path) {
                let k = max_jump(p, func, &t.path, &snap, &d, nlocals);
                if k >= 16 {
                    let mut changed = Vec::new();
                    for (i, x) in snap.iter_mut().enumerate() {
                        if let Some(v) = x {
                            *v += d[i] * k as i128;
                            if d[i] != 0 {
                                let var = if i < nlocals { VarId::local(func, i) } else { VarId::global(i - nlocals) };
                                changed.push((var, None, *v));
                            }
                        }
                    }
                    result = Some((k, t.path.len(), changed));
                }
            }
        }
        if result.is_some() {
            let globals = snap.split_off(nlocals);
            frame.locals = snap.clone();
            self.globals = globals;
            snap.extend_from_slice(&self.globals);
        }
        let frame = self.frames.last_mut().expect("a frame");
        let t = frame.track.as_mut().expect("tracked");
        t.prev_path = std::mem::take(&mut t.path);
        t.prev_delta = delta;
        t.snap = snap;
        t.clean = true;
        result
    }
}

/// An expression that is affine in the program's scalars.
pub(super) fn affine_expr(e: &Expr) -> bool {
    match e {
        Expr::Const(..) | Expr::Var(..) => true,
        Expr::Cast(a, _) | Expr::Unary(crate::ir::UnOp::Neg, a, _) => affine_expr(a),
        Expr::Binary(crate::ir::BinOp::Add | crate::ir::BinOp::Sub, a, b, _) => affine_expr(a) && affine_expr(b),
        Expr::Binary(crate::ir::BinOp::Mul, a, b, _) => {
            (matches!(**a, Expr::Const(..)) && affine_expr(b)) || (matches!(**b, Expr::Const(..)) && affine_expr(a))
        }
        _ => false,
    }
}

/// A condition that is a comparison of affine expressions (or its negation).
pub(super) fn affine_cond(e: &Expr) -> bool {
    match e {
        Expr::Binary(op, a, b, _) if op.is_comparison() => affine_expr(a) && affine_expr(b),
        Expr::Unary(crate::ir::UnOp::LNot, a, _) => affine_cond(a),
        Expr::Cast(a, _) => affine_cond(a),
        e => affine_expr(e),
    }
}

/// Evaluates an affine expression exactly; `None` if a value leaves its type (a wrap-around
/// would break affinity) or a variable is unknown.
fn math_eval(e: &Expr, locals: &[Option<i128>], globals: &[Option<i128>]) -> Option<i128> {
    let v = match e {
        Expr::Const(v, _) => *v,
        Expr::Var(v, _) => match v.func() {
            None => globals[v.index()]?,
            Some(_) => locals[v.index()]?,
        },
        Expr::Cast(a, _) | Expr::Unary(crate::ir::UnOp::Neg, a, _) => {
            let x = math_eval(a, locals, globals)?;
            if let Expr::Unary(..) = e {
                -x
            } else {
                x
            }
        }
        Expr::Binary(op, a, b, _) => {
            let x = math_eval(a, locals, globals)?;
            let y = math_eval(b, locals, globals)?;
            match op {
                crate::ir::BinOp::Add => x.checked_add(y)?,
                crate::ir::BinOp::Sub => x.checked_sub(y)?,
                crate::ir::BinOp::Mul => x.checked_mul(y)?,
                _ => return None,
            }
        }
        _ => return None,
    };
    // In range of the expression's type, the exact value is the machine value.
    e.ty().contains(v).then_some(v)
}

/// A condition's outcome and, for (dis)equalities, the difference whose zero flips it.
fn math_cond(e: &Expr, locals: &[Option<i128>], globals: &[Option<i128>]) -> Option<(bool, Option<i128>)> {
    match e {
        Expr::Binary(op, a, b, _) if op.is_comparison() => {
            let x = math_eval(a, locals, globals)?;
            let y = math_eval(b, locals, globals)?;
            let r = crate::ir::eval_binop(*op, x, y, IntTy::INT)? != 0;
            let diff = matches!(op, crate::ir::BinOp::Eq | crate::ir::BinOp::Ne).then(|| x - y);
            Some((r, diff))
        }
        Expr::Unary(crate::ir::UnOp::LNot, a, _) => math_cond(a, locals, globals).map(|(r, d)| (!r, d)),
        Expr::Cast(a, _) => math_cond(a, locals, globals),
        e => {
            let x = math_eval(e, locals, globals)?;
            Some((x != 0, Some(x)))
        }
    }
}

/// Runs an iteration path on exact integers from `locals`/`globals`: the (dis)equality
/// differences in order, or `None` if it leaves the path or wraps around.
fn math_path(
    p: &Program,
    func: FuncId,
    path: &[EdgeId],
    mut locals: Vec<Option<i128>>,
    mut globals: Vec<Option<i128>>,
) -> Option<Vec<i128>> {
    let cfa = p.cfa(func);
    let mut diffs = Vec::new();
    for &e in path {
        match &cfa.edge(e).kind {
            EdgeKind::Blank => {}
            EdgeKind::Assume { cond, truth } => {
                let (r, d) = math_cond(cond, &locals, &globals)?;
                if r != *truth {
                    return None;
                }
                if let Some(d) = d {
                    diffs.push(d);
                }
            }
            EdgeKind::Statement(Stmt::Assign(LValue::Var(v), x)) | EdgeKind::Declaration(Stmt::Assign(LValue::Var(v), x)) => {
                let val = math_eval(x, &locals, &globals)?;
                if !p.var(*v).int_ty().contains(val) {
                    return None;
                }
                match v.func() {
                    None => globals[v.index()] = Some(val),
                    Some(_) => locals[v.index()] = Some(val),
                }
            }
            _ => return None,
        }
    }
    Some(diffs)
}

/// The largest number of iterations, starting from the state `snap` (locals then globals) and
/// advancing by `delta` each time, that provably all follow `path`.
fn max_jump(p: &Program, func: FuncId, path: &[EdgeId], snap: &[Option<i128>], delta: &[i128], nlocals: usize) -> u64 {
    let at = |j: i128| -> Option<State> {
        let mut v = Vec::with_capacity(snap.len());
        for (x, d) in snap.iter().zip(delta) {
            v.push(match x {
                Some(x) => Some(x.checked_add(d.checked_mul(j)?)?),
                None => None,
            });
        }
        let g = v.split_off(nlocals);
        Some((v, g))
    };
    let run = |j: i128| -> Option<Vec<i128>> {
        let (l, g) = at(j)?;
        math_path(p, func, path, l, g)
    };
    let (Some(d0), Some(d1)) = (run(0), run(1)) else { return 0 };
    let ok = |k: u64| -> bool {
        if k <= 2 {
            return true;
        }
        let last = (k - 1) as i128;
        let Some(dl) = run(last) else { return false };
        // Affine differences: a zero strictly inside the range flips a (dis)equality.
        d0.iter().zip(&d1).zip(&dl).all(|((&a, &b), &c)| {
            let slope = b - a;
            if slope == 0 {
                return c == a;
            }
            if a % slope != 0 {
                return true;
            }
            let root = -a / slope;
            !(0..=last).contains(&root)
        })
    };
    let (mut lo, mut hi) = (2u64, 1u64 << 40);
    if !ok(lo) {
        return 0;
    }
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if ok(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}
