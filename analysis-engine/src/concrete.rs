//! Concrete execution of the program's CFAs with chosen inputs: a fast interpreter that finds
//! violations needing long executions (millions of loop iterations) that state-space
//! exploration cannot unroll. It never proves anything; every violation it finds is confirmed
//! independently (SMT path check, or a native run of the compiled program) before it is
//! reported.
//!
//! The interpreter stops instead of guessing: an over-approximated value (`Unknown`), havocked
//! memory, an unsupported construct or undefined behaviour ends the run without a verdict.

use std::collections::{HashMap, VecDeque};

use crate::cfa::CallSite;
use crate::cfa::{EdgeId, EdgeKind, NodeId, Program};
use crate::core::{Cancel, Op};
use crate::ir::{eval_binop, eval_unop, Expr, FuncId, InputSource, IntTy, LValue, Stmt, VarId, VarKind};
use crate::properties::PropertyKey;

/// Where input values come from.
pub trait InputStrategy {
    fn value(&mut self, ty: IntTy) -> i128;
    /// Picks one of `n` nondeterministic control-flow choices.
    fn choose(&mut self, n: usize) -> usize;
}

/// All inputs zero (false).
pub struct Zeros;

impl InputStrategy for Zeros {
    fn value(&mut self, _ty: IntTy) -> i128 {
        0
    }
    fn choose(&mut self, _n: usize) -> usize {
        0
    }
}

/// Every input the same small value (and every choice its remainder): small recursion
/// depths and loop counts that random values rarely hit.
pub struct Constant(pub i128);

impl InputStrategy for Constant {
    fn value(&mut self, ty: IntTy) -> i128 {
        ty.wrap(self.0)
    }
    fn choose(&mut self, n: usize) -> usize {
        (self.0.unsigned_abs() % n.max(1) as u128) as usize
    }
}

/// Deterministic pseudo-random inputs biased towards boundary values (xorshift64*).
pub struct Boundary {
    state: u64,
}

impl Boundary {
    pub fn new(seed: u64) -> Boundary {
        Boundary { state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1 }
    }

    fn next(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

impl InputStrategy for Boundary {
    fn value(&mut self, ty: IntTy) -> i128 {
        if ty.boolean {
            return (self.next() & 1) as i128;
        }
        let r = self.next();
        let v: i128 = match r % 10 {
            0 => 0,
            1 => 1,
            2 => -1,
            3 => ty.min(),
            4 => ty.max(),
            5 => ty.max() - 1,
            6 => ty.min() + 1,
            7 | 8 => (self.next() % 201) as i128 - 100,
            _ => self.next() as i128,
        };
        ty.wrap(v)
    }

    fn choose(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A step of a concrete run with the values it wrote or read.
#[derive(Clone, Debug)]
pub struct ConcreteStep {
    pub op: Op,
    pub depth: usize,
    /// For calls and returns: another activation of the callee is suspended.
    pub recursive: bool,
    pub values: Vec<(VarId, Option<i64>, i128)>,
    pub input: Option<i128>,
    /// Iterations of the loop starting with this operation that were skipped by acceleration.
    pub accelerated: Option<u64>,
}

/// How a run ended.
#[derive(Clone, Debug)]
pub enum RunEnd {
    Target(PropertyKey),
    Exit,
    Aborted,
    /// The step or input limit of `RunLimits`.
    StepLimit,
    /// The run cannot continue precisely (an over-approximated value, undefined behaviour…).
    Stuck(String),
    Cancelled,
}

/// A finished run: how it ended, its inputs, and its recorded steps.
#[derive(Clone, Debug)]
pub struct Run {
    pub end: RunEnd,
    /// Input values in the order they were read, with their source.
    pub inputs: Vec<(String, IntTy, i128)>,
    /// Every operation (with its recursion flag), if the run was short enough to keep them all.
    pub ops: Option<Vec<(Op, bool)>>,
    pub head: Vec<ConcreteStep>,
    pub tail: VecDeque<ConcreteStep>,
    pub steps: u64,
    /// Loop iterations skipped by acceleration.
    pub accelerated: u64,
}

#[derive(Clone, Debug)]
struct ArrayVal {
    default: Option<i128>,
    cells: HashMap<i64, i128>,
}

struct Frame {
    func: FuncId,
    node: NodeId,
    locals: Vec<Option<i128>>,
    arrays: HashMap<usize, ArrayVal>,
    /// The call site this activation returns to.
    site: Option<CallSite>,
    /// The loop this activation iterates, for acceleration.
    track: Option<LoopTrack>,
}

/// Observation of the innermost loop of an activation: the state and path of each iteration.
struct LoopTrack {
    head: NodeId,
    snap: Vec<Option<i128>>,
    path: Vec<EdgeId>,
    /// The path allows acceleration so far (no calls, inputs, array writes; not too long).
    clean: bool,
    prev_path: Vec<EdgeId>,
    prev_delta: Option<Vec<i128>>,
}

/// Longest iteration path that is considered for acceleration.
const MAX_ITERATION_EDGES: usize = 256;

struct Machine<'p> {
    p: &'p Program,
    globals: Vec<Option<i128>>,
    garrays: HashMap<usize, ArrayVal>,
    frames: Vec<Frame>,
}

/// Why evaluation cannot go on.
struct Stop(String);

/// Limits of one run.
pub struct RunLimits {
    pub max_steps: u64,
    /// Inputs a run may read (each is kept for the replay; a run that reads more, such as one
    /// that a constant input keeps in a `while (nondet())` loop, ends at the step limit).
    pub max_inputs: usize,
    /// Operations kept for the SMT confirmation (longer runs keep head and tail only).
    pub keep_ops: usize,
    pub trace_steps: usize,
    pub max_frames: usize,
    /// Jump over iterations of affine loops (the run's operations are then not all kept).
    pub accelerate: bool,
}

impl<'p> Machine<'p> {
    fn log_edge(&mut self, e: EdgeId) {
        if let Some(t) = &mut self.frames.last_mut().expect("a frame").track {
            if t.path.len() < MAX_ITERATION_EDGES {
                t.path.push(e);
            } else {
                t.clean = false;
            }
        }
    }

    fn spoil(&mut self) {
        if let Some(t) = &mut self.frames.last_mut().expect("a frame").track {
            t.clean = false;
        }
    }

    /// At a loop head: completes the observed iteration and, after two identical affine
    /// iterations with equal deltas, jumps ahead. Returns the skipped iterations, the path
    /// length and the variables the jump changed.
    fn loop_head(&mut self, p: &Program, plan: &Plan, node: NodeId) -> Option<(u64, usize, Vec<(VarId, Option<i64>, i128)>)> {
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

    fn frame(&self) -> &Frame {
        self.frames.last().expect("a frame")
    }

    fn read_var(&self, v: VarId) -> Result<i128, Stop> {
        let val = match v.func() {
            None => self.globals[v.index()],
            Some(_) => self.frame().locals[v.index()],
        };
        val.ok_or_else(|| Stop("read of a value the interpreter does not know".into()))
    }

    fn array(&self, v: VarId) -> Option<&ArrayVal> {
        match v.func() {
            None => self.garrays.get(&v.index()),
            Some(_) => self.frame().arrays.get(&v.index()),
        }
    }

    fn array_mut(&mut self, v: VarId) -> &mut ArrayVal {
        let map = match v.func() {
            None => &mut self.garrays,
            Some(_) => &mut self.frames.last_mut().expect("a frame").arrays,
        };
        map.entry(v.index()).or_insert(ArrayVal { default: None, cells: HashMap::new() })
    }

    fn eval(&self, e: &Expr) -> Result<i128, Stop> {
        Ok(match e {
            Expr::Const(v, _) => *v,
            Expr::Var(v, _) => self.read_var(*v)?,
            Expr::Elem(v, i, _) => {
                let i = self.eval(i)?;
                let idx = self.index(*v, i)?;
                let a = self.array(*v);
                a.and_then(|a| a.cells.get(&idx).copied().or(a.default))
                    .ok_or_else(|| Stop("read of an uninitialised array element".into()))?
            }
            Expr::Unary(op, a, _) => eval_unop(*op, self.eval(a)?, a.ty()),
            Expr::Binary(op, a, b, t) => {
                let x = self.eval(a)?;
                let y = self.eval(b)?;
                eval_binop(*op, x, y, *t).ok_or_else(|| Stop("undefined behaviour (division by zero or shift out of range)".into()))?
            }
            Expr::Cast(a, t) => t.wrap(self.eval(a)?),
            Expr::Ite(c, a, b, _) => {
                if self.eval(c)? != 0 {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            Expr::Unknown(_, why) => return Err(Stop(why.describe().to_string())),
        })
    }

    fn index(&self, v: VarId, i: i128) -> Result<i64, Stop> {
        let len = match &self.p.var(v).kind {
            VarKind::Array { len, .. } => *len,
            VarKind::Int(_) => None,
        };
        if i < 0 || len.is_some_and(|n| i >= n as i128) {
            return Err(Stop("array index out of bounds (undefined behaviour)".into()));
        }
        i64::try_from(i).map_err(|_| Stop("array index out of range".into()))
    }

    fn write(&mut self, lhs: &LValue, val: Option<i128>) -> Result<Option<i64>, Stop> {
        match lhs {
            LValue::Var(v) => {
                match v.func() {
                    None => self.globals[v.index()] = val,
                    Some(_) => self.frames.last_mut().expect("a frame").locals[v.index()] = val,
                }
                Ok(None)
            }
            LValue::Elem(v, i) => {
                let i = self.eval(i)?;
                let idx = self.index(*v, i)?;
                let a = self.array_mut(*v);
                match val {
                    Some(x) => {
                        a.cells.insert(idx, x);
                    }
                    None => {
                        a.cells.remove(&idx);
                    }
                }
                Ok(Some(idx))
            }
        }
    }
}

/// What the interpreter does at a node, computed once per program: most nodes have a single
/// successor or branch on one condition, which is then evaluated once.
enum NodePlan {
    Target(u32),
    Exit,
    End,
    Single(EdgeId),
    /// `[c]` to `t`, `[!c]` to `f`; `reads` are the condition's variables (for traces).
    Branch {
        t: EdgeId,
        f: EdgeId,
        reads: Vec<VarId>,
    },
    General,
}

/// Execution plans of every function of a program.
pub struct Plan {
    nodes: Vec<Vec<NodePlan>>,
    heads: Vec<Vec<bool>>,
    /// Iteration paths found affine (or not), by function and path.
    affine: std::cell::RefCell<HashMap<(FuncId, Vec<EdgeId>), bool>>,
}

impl Plan {
    pub fn new(p: &Program) -> Plan {
        let nodes = p
            .functions
            .iter()
            .map(|f| {
                let cfa = &f.cfa;
                cfa.node_ids()
                    .map(|n| {
                        let node = cfa.node(n);
                        if let Some(t) = node.target {
                            return NodePlan::Target(t);
                        }
                        if n == cfa.exit {
                            return NodePlan::Exit;
                        }
                        if node.terminal || node.out.is_empty() {
                            return NodePlan::End;
                        }
                        match node.out.as_slice() {
                            [e] if !matches!(cfa.edge(*e).kind, EdgeKind::Assume { .. }) => NodePlan::Single(*e),
                            [a, b] => match (&cfa.edge(*a).kind, &cfa.edge(*b).kind) {
                                (EdgeKind::Assume { cond: c1, truth: t1 }, EdgeKind::Assume { cond: c2, truth: t2 })
                                    if c1 == c2 && t1 != t2 =>
                                {
                                    let (t, f) = if *t1 { (*a, *b) } else { (*b, *a) };
                                    let mut reads = Vec::new();
                                    c1.vars(&mut reads);
                                    NodePlan::Branch { t, f, reads }
                                }
                                _ => NodePlan::General,
                            },
                            _ => NodePlan::General,
                        }
                    })
                    .collect()
            })
            .collect();
        let heads = p.functions.iter().map(|f| f.cfa.nodes.iter().map(|n| n.loop_head).collect()).collect();
        Plan { nodes, heads, affine: Default::default() }
    }

    /// True if every operation of an iteration path is affine in the program's scalars, so
    /// that the iteration map is affine and branch conditions are monotone in the iteration.
    fn is_affine(&self, p: &Program, func: FuncId, path: &[EdgeId]) -> bool {
        let key = (func, path.to_vec());
        if let Some(&b) = self.affine.borrow().get(&key) {
            return b;
        }
        let cfa = p.cfa(func);
        let ok = path.iter().all(|&e| match &cfa.edge(e).kind {
            EdgeKind::Blank => true,
            EdgeKind::Assume { cond, .. } => affine_cond(cond),
            EdgeKind::Statement(Stmt::Assign(LValue::Var(_), e)) | EdgeKind::Declaration(Stmt::Assign(LValue::Var(_), e)) => affine_expr(e),
            _ => false,
        });
        self.affine.borrow_mut().insert(key, ok);
        ok
    }
}

fn affine_expr(e: &Expr) -> bool {
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

fn affine_cond(e: &Expr) -> bool {
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
    let at = |j: i128| -> Option<(Vec<Option<i128>>, Vec<Option<i128>>)> {
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

/// Keeps the first steps of a run, the last ones in a ring whose slots (and their value
/// buffers) are reused, and all operations while the run is short.
struct Recorder<'l> {
    ring: Vec<ConcreteStep>,
    next: usize,
    limits: &'l RunLimits,
}

impl<'l> Recorder<'l> {
    fn record(&mut self, out: &mut Run, op: Op, depth: usize, recursive: bool, values: &[(VarId, Option<i64>, i128)], input: Option<i128>) {
        if let Some(ops) = &mut out.ops {
            if ops.len() < self.limits.keep_ops {
                ops.push((op, recursive));
            } else {
                out.ops = None;
            }
        }
        let n = self.limits.trace_steps;
        if out.head.len() < n {
            out.head.push(ConcreteStep { op, depth, recursive, values: values.to_vec(), input, accelerated: None });
        } else if self.ring.len() < n {
            self.ring.push(ConcreteStep { op, depth, recursive, values: values.to_vec(), input, accelerated: None });
        } else {
            let slot = &mut self.ring[self.next];
            self.next = (self.next + 1) % n;
            slot.op = op;
            slot.depth = depth;
            slot.recursive = recursive;
            slot.values.clear();
            slot.values.extend_from_slice(values);
            slot.input = input;
            slot.accelerated = None;
        }
    }

    /// Records a step that is not an operation (an accelerated loop).
    fn push(&mut self, out: &mut Run, step: ConcreteStep) {
        let n = self.limits.trace_steps;
        if out.head.len() < n {
            out.head.push(step);
        } else if self.ring.len() < n {
            self.ring.push(step);
        } else {
            self.ring[self.next] = step;
            self.next = (self.next + 1) % n;
        }
    }

    fn finish(mut self) -> VecDeque<ConcreteStep> {
        if self.ring.len() == self.limits.trace_steps {
            self.ring.rotate_left(self.next);
        }
        self.ring.into()
    }
}

/// Runs the program from its start function with `inputs`.
pub fn run(p: &Program, plan: &Plan, inputs: &mut dyn InputStrategy, limits: &RunLimits, cancel: &Cancel) -> Run {
    let start = p.start;
    let mut m = Machine {
        p,
        globals: vec![None; p.globals.len()],
        garrays: HashMap::new(),
        frames: vec![Frame {
            func: start,
            node: p.cfa(start).entry,
            locals: vec![None; p.cfa(start).locals.len()],
            arrays: HashMap::new(),
            site: None,
            track: None,
        }],
    };
    let mut out = Run {
        end: RunEnd::Exit,
        inputs: Vec::new(),
        ops: Some(Vec::new()),
        head: Vec::new(),
        tail: VecDeque::new(),
        steps: 0,
        accelerated: 0,
    };
    let mut rec = Recorder { ring: Vec::with_capacity(limits.trace_steps), next: 0, limits };
    let mut values: Vec<(VarId, Option<i64>, i128)> = Vec::new();
    let end = loop {
        out.steps += 1;
        if out.steps > limits.max_steps || out.inputs.len() >= limits.max_inputs {
            break RunEnd::StepLimit;
        }
        // Every 65,536 steps (a few milliseconds): an edit in the editor cancels within that.
        if out.steps % (1 << 16) == 0 && cancel.check().is_err() {
            break RunEnd::Cancelled;
        }
        let (func, node) = (m.frame().func, m.frame().node);
        let cfa = p.cfa(func);
        if limits.accelerate && plan.heads[func.0 as usize][node.0 as usize] {
            if let Some((k, len, changed)) = m.loop_head(p, plan, node) {
                out.steps = out.steps.saturating_add(k.saturating_mul(len as u64));
                // The skipped operations are not recorded: confirmation replays natively.
                out.ops = None;
                let first = cfa.node(node).out.first().copied().unwrap_or(EdgeId(0));
                let depth = m.frames.len() - 1;
                out.accelerated += k;
                rec.push(
                    &mut out,
                    ConcreteStep { op: Op::Edge(func, first), depth, recursive: false, values: changed, input: None, accelerated: Some(k) },
                );
            }
        }
        let eid = match &plan.nodes[func.0 as usize][node.0 as usize] {
            NodePlan::Target(t) => {
                let site = if cfa.assert_helper { m.frame().site } else { None };
                break RunEnd::Target(PropertyKey { func, target: *t, site });
            }
            NodePlan::Exit => {
                let Some(frame) = m.frames.pop() else { break RunEnd::Exit };
                let Some((caller, eid)) = frame.site else { break RunEnd::Exit };
                let rets: Vec<Option<i128>> = cfa.ret.iter().map(|r| frame.locals[r.index()]).collect();
                let EdgeKind::CallSummary(call) = &p.cfa(caller).edge(eid).kind else { unreachable!("call site") };
                values.clear();
                for (lhs, v) in call.ret.iter().zip(rets) {
                    match m.write(lhs, v) {
                        Ok(idx) => {
                            if let Some(v) = v {
                                values.push((lhs.var(), idx, v));
                            }
                        }
                        Err(Stop(why)) => {
                            out.end = RunEnd::Stuck(why);
                            return out;
                        }
                    }
                }
                m.frames.last_mut().expect("caller frame").node = p.cfa(caller).edge(eid).dst;
                let depth = m.frames.len();
                let recursive = m.frames.iter().any(|f| f.func == func);
                rec.record(&mut out, Op::Return(caller, eid), depth, recursive, &values, None);
                continue;
            }
            NodePlan::End => break RunEnd::Aborted,
            NodePlan::Single(e) => *e,
            NodePlan::Branch { t, f, reads } => {
                let EdgeKind::Assume { cond, .. } = &cfa.edge(*t).kind else { unreachable!("branch") };
                match m.eval(cond) {
                    Ok(v) => {
                        values.clear();
                        for &r in reads {
                            if let Ok(x) = m.read_var(r) {
                                values.push((r, None, x));
                            }
                        }
                        let eid = if v != 0 { *t } else { *f };
                        m.log_edge(eid);
                        m.frames.last_mut().expect("frame").node = cfa.edge(eid).dst;
                        let depth = m.frames.len() - 1;
                        rec.record(&mut out, Op::Edge(func, eid), depth, false, &values, None);
                        continue;
                    }
                    Err(Stop(why)) => break RunEnd::Stuck(why),
                }
            }
            NodePlan::General => {
                let n = cfa.node(node);
                // The enabled edges: assumes whose condition holds, every other edge.
                let mut first = None;
                let mut count = 0usize;
                let mut stuck = None;
                for &eid in &n.out {
                    let enabled = match &cfa.edge(eid).kind {
                        EdgeKind::Assume { cond, truth } => match m.eval(cond) {
                            Ok(v) => (v != 0) == *truth,
                            Err(Stop(why)) => {
                                stuck = Some(why);
                                false
                            }
                        },
                        _ => true,
                    };
                    if enabled {
                        count += 1;
                        first.get_or_insert(eid);
                    }
                }
                if let Some(why) = stuck {
                    break RunEnd::Stuck(why);
                }
                match (count, first) {
                    (0, _) | (_, None) => break RunEnd::Aborted,
                    (1, Some(e)) => e,
                    (k, Some(_)) => {
                        // A nondeterministic choice between edges without conditions.
                        let pick = inputs.choose(k);
                        n.out
                            .iter()
                            .copied()
                            .filter(|&e| !matches!(cfa.edge(e).kind, EdgeKind::Assume { .. }))
                            .nth(pick)
                            .unwrap_or(n.out[0])
                    }
                }
            }
        };
        let e = cfa.edge(eid);
        m.log_edge(eid);
        let depth = m.frames.len() - 1;
        values.clear();
        let mut input = None;
        let res: Result<(), Stop> = (|| {
            match &e.kind {
                EdgeKind::Blank => {}
                EdgeKind::Assume { .. } => {}
                EdgeKind::Statement(s) | EdgeKind::Declaration(s) => match s {
                    Stmt::Assign(lhs, ex) => {
                        if matches!(lhs, LValue::Elem(..)) {
                            m.spoil();
                        }
                        let v = m.eval(ex)?;
                        let idx = m.write(lhs, Some(v))?;
                        values.push((lhs.var(), idx, v));
                    }
                    Stmt::Input { lhs, source: InputSource::Call(name) } if !name.starts_with("extern ") => {
                        m.spoil();
                        let ty = p.var(lhs.var()).int_ty();
                        let v = inputs.value(ty);
                        out.inputs.push((name.clone(), ty, v));
                        let idx = m.write(lhs, Some(v))?;
                        values.push((lhs.var(), idx, v));
                        input = Some(v);
                    }
                    Stmt::Input { lhs, .. } => {
                        // Uninitialised: a native run would read whatever memory holds, so
                        // the value stays unknown and reading it stops the run.
                        m.write(lhs, None)?;
                    }
                    Stmt::InitArray { var, zero } => {
                        if !*zero {
                            return Err(Stop("an array with arbitrary contents".into()));
                        }
                        let a = m.array_mut(*var);
                        a.cells.clear();
                        a.default = Some(0);
                    }
                    Stmt::HavocMemory(why) => return Err(Stop(why.describe().into())),
                    Stmt::Unsupported(what) => return Err(Stop(format!("{} is not modelled", what))),
                },
                EdgeKind::Return(es) => {
                    let vals: Vec<i128> = es.iter().map(|x| m.eval(x)).collect::<Result<_, _>>()?;
                    for (&rv, v) in cfa.ret.iter().zip(vals) {
                        m.write(&LValue::Var(rv), Some(v))?;
                    }
                }
                EdgeKind::CallSummary(call) => {
                    if m.frames.len() >= limits.max_frames {
                        return Err(Stop("call stack too deep".into()));
                    }
                    m.spoil();
                    let args: Vec<i128> = call.args.iter().map(|x| m.eval(x)).collect::<Result<_, _>>()?;
                    let callee = p.cfa(call.callee);
                    let mut frame = Frame {
                        func: call.callee,
                        node: callee.entry,
                        locals: vec![None; callee.locals.len()],
                        arrays: HashMap::new(),
                        site: Some((func, eid)),
                        track: None,
                    };
                    for (i, &param) in callee.params.iter().enumerate() {
                        if matches!(p.var(param).kind, VarKind::Array { .. }) {
                            return Err(Stop("array passed by value".into()));
                        }
                        frame.locals[param.index()] = args.get(i).copied();
                        if let Some(&a) = args.get(i) {
                            values.push((param, None, a));
                        }
                    }
                    m.frames.push(frame);
                    return Ok(());
                }
            }
            m.frames.last_mut().expect("frame").node = e.dst;
            Ok(())
        })();
        if let Err(Stop(why)) = res {
            break RunEnd::Stuck(why);
        }
        let (op, recursive) = match &e.kind {
            EdgeKind::CallSummary(c) => {
                let n = m.frames.len();
                (Op::Call(func, eid), m.frames[..n - 1].iter().any(|f| f.func == c.callee))
            }
            _ => (Op::Edge(func, eid), false),
        };
        rec.record(&mut out, op, depth, recursive, &values, input);
    };
    out.tail = rec.finish();
    out.end = end;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smt::interpolate::tests_support::load;

    /// A constant input keeps `while (nondet())` going forever; the run stops at its input
    /// limit instead of filling memory with inputs until the time runs out.
    #[test]
    fn a_run_stops_at_its_input_limit() {
        let p = load("extern _Bool __VERIFIER_nondet_bool(void);\nint main(void) { int n = 0; while (__VERIFIER_nondet_bool()) { n = n + 1; if (n > 100000) n = 0; } return 0; }\n");
        let limits = RunLimits { max_steps: u64::MAX, max_inputs: 1000, keep_ops: 10, trace_steps: 4, max_frames: 10, accelerate: true };
        let run = super::run(&p, &Plan::new(&p), &mut Constant(2), &limits, &Cancel::new());
        assert!(matches!(run.end, RunEnd::StepLimit), "{:?}", run.end);
        assert_eq!(run.inputs.len(), 1000);
        // With zeros, the loop is never entered.
        let run = super::run(&p, &Plan::new(&p), &mut Zeros, &limits, &Cancel::new());
        assert!(matches!(run.end, RunEnd::Exit), "{:?}", run.end);
    }
}
