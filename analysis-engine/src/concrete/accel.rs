//! Loop acceleration in the concrete interpreter: the innermost loop of an activation is
//! observed iteration by iteration; after two iterations that follow the same affine path
//! and change the state by the same delta, the run jumps ahead by the largest number of
//! iterations that provably all follow that path (found by binary search on exact integers).

use super::machine::Machine;
use super::plan::Plan;
use crate::cfa::{EdgeId, EdgeKind, NodeId, Program};
use crate::ir::{Expr, FuncId, IntTy, LValue, Stmt, VarId};

/// Observation of the innermost loop of an activation: the state and path of each iteration.
/// Its buffers are reused from iteration to iteration (and by the next activation that uses
/// the frame): observing a loop allocates nothing once they are large enough.
pub(super) struct LoopTrack {
    /// The loop head observed, `None` when none is.
    head: Option<NodeId>,
    /// The state (locals then globals) at the start of the current iteration.
    snap: Vec<Option<i128>>,
    path: Vec<EdgeId>,
    /// The path allows acceleration so far (no calls, inputs, array writes; not too long).
    clean: bool,
    prev_path: Vec<EdgeId>,
    /// The previous iteration's change of every value, if every value was known at both ends
    /// or at neither.
    prev_delta: Vec<i128>,
    has_prev_delta: bool,
    /// Whether `prev_path` is affine, once checked.
    prev_affine: Option<bool>,
    /// Scratch buffers: the state at the head now, the current iteration's delta, and the
    /// exact-integer states of [`max_jump`].
    now: Vec<Option<i128>>,
    delta: Vec<i128>,
    scratch: Scratch,
}

/// Buffers of the exact-integer replay of an iteration path.
#[derive(Default)]
struct Scratch {
    state: Vec<Option<i128>>,
    d0: Vec<i128>,
    d1: Vec<i128>,
    dl: Vec<i128>,
}

/// A jump over loop iterations: how many were skipped, the length of the iteration path, and
/// the variables the jump changed with their new values.
pub(super) type Jump = (u64, usize, Vec<(VarId, Option<i64>, i128)>);

/// Longest iteration path that is considered for acceleration.
const MAX_ITERATION_EDGES: usize = 256;

impl LoopTrack {
    fn new() -> LoopTrack {
        LoopTrack {
            head: None,
            snap: Vec::new(),
            path: Vec::new(),
            clean: true,
            prev_path: Vec::new(),
            prev_delta: Vec::new(),
            has_prev_delta: false,
            prev_affine: None,
            now: Vec::new(),
            delta: Vec::new(),
            scratch: Scratch::default(),
        }
    }

    /// No loop observed (a reused frame).
    pub(super) fn reset(&mut self) {
        self.head = None;
    }
}

impl<'p> Machine<'p> {
    /// Adds an edge to the path of the loop iteration being observed.
    pub(super) fn log_edge(&mut self, e: EdgeId) {
        if let Some(t) = &mut self.frame_mut().track {
            if t.head.is_some() {
                if t.path.len() < MAX_ITERATION_EDGES {
                    t.path.push(e);
                } else {
                    t.clean = false;
                }
            }
        }
    }

    /// The iteration being observed cannot be accelerated (a call, an input, an array write).
    pub(super) fn spoil(&mut self) {
        if let Some(t) = &mut self.frame_mut().track {
            t.clean = false;
        }
    }

    /// At a loop head: completes the observed iteration and, after two identical affine
    /// iterations with equal deltas, jumps ahead. Returns the skipped iterations, the path
    /// length and the variables the jump changed.
    pub(super) fn loop_head(&mut self, p: &Program, plan: &Plan, node: NodeId) -> Option<Jump> {
        let func = self.frame().func;
        let (frame, globals) = self.frame_and_globals();
        let t: &mut LoopTrack = frame.track.get_or_insert_with(|| Box::new(LoopTrack::new()));
        let nlocals = frame.locals.len();
        t.now.clear();
        t.now.extend_from_slice(&frame.locals);
        t.now.extend_from_slice(globals);
        if t.head != Some(node) {
            t.head = Some(node);
            std::mem::swap(&mut t.snap, &mut t.now);
            t.path.clear();
            t.prev_path.clear();
            t.clean = true;
            t.has_prev_delta = false;
            t.prev_affine = None;
            return None;
        }
        t.delta.clear();
        let mut delta_ok = true;
        for (a, b) in t.snap.iter().zip(&t.now) {
            match (a, b) {
                (Some(a), Some(b)) => t.delta.push(b - a),
                (None, None) => t.delta.push(0),
                _ => {
                    delta_ok = false;
                    break;
                }
            }
        }
        let same_path = t.path == t.prev_path;
        if !same_path {
            t.prev_affine = None;
        }
        let mut result = None;
        if t.clean
            && delta_ok
            && t.has_prev_delta
            && same_path
            && t.delta == t.prev_delta
            && !t.path.is_empty()
            && t.delta.iter().any(|&x| x != 0)
            && *t.prev_affine.get_or_insert_with(|| plan.is_affine(p, func, &t.path))
        {
            let k = max_jump(p, func, &t.path, &t.now, &t.delta, nlocals, &mut t.scratch);
            if k >= 16 {
                let mut changed = Vec::new();
                for (i, x) in t.now.iter_mut().enumerate() {
                    if let Some(v) = x {
                        *v += t.delta[i] * k as i128;
                        if t.delta[i] != 0 {
                            let var = if i < nlocals { VarId::local(func, i) } else { VarId::global(i - nlocals) };
                            changed.push((var, None, *v));
                        }
                    }
                }
                frame.locals.copy_from_slice(&t.now[..nlocals]);
                globals.copy_from_slice(&t.now[nlocals..]);
                result = Some((k, t.path.len(), changed));
            }
        }
        std::mem::swap(&mut t.prev_path, &mut t.path);
        t.path.clear();
        std::mem::swap(&mut t.prev_delta, &mut t.delta);
        t.has_prev_delta = delta_ok;
        std::mem::swap(&mut t.snap, &mut t.now);
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

/// Runs an iteration path on exact integers from `state` (locals then globals, changed in
/// place): the (dis)equality differences in order into `diffs`, or `None` if it leaves the
/// path or wraps around.
fn math_path(p: &Program, func: FuncId, path: &[EdgeId], state: &mut [Option<i128>], nlocals: usize, diffs: &mut Vec<i128>) -> Option<()> {
    let cfa = p.cfa(func);
    diffs.clear();
    for &e in path {
        let (locals, globals) = state.split_at_mut(nlocals);
        match &cfa.edge(e).kind {
            EdgeKind::Blank => {}
            EdgeKind::Assume { cond, truth } => {
                let (r, d) = math_cond(cond, locals, globals)?;
                if r != *truth {
                    return None;
                }
                if let Some(d) = d {
                    diffs.push(d);
                }
            }
            EdgeKind::Statement(Stmt::Assign(LValue::Var(v), x)) | EdgeKind::Declaration(Stmt::Assign(LValue::Var(v), x)) => {
                let val = math_eval(x, locals, globals)?;
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
    Some(())
}

/// The largest number of iterations, starting from the state `snap` (locals then globals) and
/// advancing by `delta` each time, that provably all follow `path`.
fn max_jump(p: &Program, func: FuncId, path: &[EdgeId], snap: &[Option<i128>], delta: &[i128], nlocals: usize, s: &mut Scratch) -> u64 {
    // The differences of iteration `j` into `out`.
    let run = |j: i128, state: &mut Vec<Option<i128>>, out: &mut Vec<i128>| -> Option<()> {
        state.clear();
        for (x, d) in snap.iter().zip(delta) {
            state.push(match x {
                Some(x) => Some(x.checked_add(d.checked_mul(j)?)?),
                None => None,
            });
        }
        math_path(p, func, path, state, nlocals, out)
    };
    let Scratch { state, d0, d1, dl } = s;
    if run(0, state, d0).is_none() || run(1, state, d1).is_none() {
        return 0;
    }
    let mut ok = |k: u64| -> bool {
        if k <= 2 {
            return true;
        }
        let last = (k - 1) as i128;
        if run(last, state, dl).is_none() {
            return false;
        }
        // Affine differences: a zero strictly inside the range flips a (dis)equality.
        d0.iter().zip(d1.iter()).zip(dl.iter()).all(|((&a, &b), &c)| {
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
