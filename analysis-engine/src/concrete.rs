//! Concrete execution of the program's CFAs with chosen inputs: a fast interpreter that finds
//! violations needing long executions (millions of loop iterations) that state-space
//! exploration cannot unroll. It never proves anything; every violation it finds is confirmed
//! independently (SMT path check, or a native run of the compiled program) before it is
//! reported.
//!
//! The interpreter stops instead of guessing: an over-approximated value (`Unknown`), havocked
//! memory, an unsupported construct or undefined behaviour ends the run without a verdict.

use std::collections::{HashMap, VecDeque};

use crate::cfa::{EdgeId, EdgeKind, NodeId, Program};
use crate::core::{Cancel, Op};
use crate::cpa::callstack::CallSite;
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
}

/// How a run ended.
#[derive(Clone, Debug)]
pub enum RunEnd {
    Target(PropertyKey),
    Exit,
    Aborted,
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
}

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
    /// Operations kept for the SMT confirmation (longer runs keep head and tail only).
    pub keep_ops: usize,
    pub trace_steps: usize,
    pub max_frames: usize,
}

impl<'p> Machine<'p> {
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
    Branch { t: EdgeId, f: EdgeId, reads: Vec<VarId> },
    General,
}

/// Execution plans of every function of a program.
pub struct Plan {
    nodes: Vec<Vec<NodePlan>>,
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
        Plan { nodes }
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
        }],
    };
    let mut out = Run { end: RunEnd::Exit, inputs: Vec::new(), ops: Some(Vec::new()), head: Vec::new(), tail: VecDeque::new(), steps: 0 };
    // The last steps, in a ring whose slots (and their value buffers) are reused.
    let mut ring: Vec<ConcreteStep> = Vec::with_capacity(limits.trace_steps);
    let mut ring_next = 0usize;
    let mut values: Vec<(VarId, Option<i64>, i128)> = Vec::new();
    let mut record = |out: &mut Run, op: Op, depth: usize, recursive: bool, values: &[(VarId, Option<i64>, i128)], input: Option<i128>| {
        if let Some(ops) = &mut out.ops {
            if ops.len() < limits.keep_ops {
                ops.push((op, recursive));
            } else {
                out.ops = None;
            }
        }
        if out.head.len() < limits.trace_steps {
            out.head.push(ConcreteStep { op, depth, recursive, values: values.to_vec(), input });
        } else if ring.len() < limits.trace_steps {
            ring.push(ConcreteStep { op, depth, recursive, values: values.to_vec(), input });
        } else {
            let slot = &mut ring[ring_next];
            ring_next = (ring_next + 1) % limits.trace_steps;
            slot.op = op;
            slot.depth = depth;
            slot.recursive = recursive;
            slot.values.clear();
            slot.values.extend_from_slice(values);
            slot.input = input;
        }
    };
    let end = loop {
        out.steps += 1;
        if out.steps > limits.max_steps {
            break RunEnd::StepLimit;
        }
        if out.steps % (1 << 20) == 0 && cancel.check().is_err() {
            break RunEnd::Cancelled;
        }
        let (func, node) = (m.frame().func, m.frame().node);
        let cfa = p.cfa(func);
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
                record(&mut out, Op::Return(caller, eid), depth, recursive, &values, None);
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
                        m.frames.last_mut().expect("frame").node = cfa.edge(eid).dst;
                        let depth = m.frames.len() - 1;
                        record(&mut out, Op::Edge(func, eid), depth, false, &values, None);
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
        let depth = m.frames.len() - 1;
        values.clear();
        let mut input = None;
        let res: Result<(), Stop> = (|| {
            match &e.kind {
                EdgeKind::Blank => {}
                EdgeKind::Assume { .. } => {}
                EdgeKind::Statement(s) | EdgeKind::Declaration(s) => match s {
                    Stmt::Assign(lhs, ex) => {
                        let v = m.eval(ex)?;
                        let idx = m.write(lhs, Some(v))?;
                        values.push((lhs.var(), idx, v));
                    }
                    Stmt::Input { lhs, source: InputSource::Call(name) } if !name.starts_with("extern ") => {
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
                    let args: Vec<i128> = call.args.iter().map(|x| m.eval(x)).collect::<Result<_, _>>()?;
                    let callee = p.cfa(call.callee);
                    let mut frame = Frame {
                        func: call.callee,
                        node: callee.entry,
                        locals: vec![None; callee.locals.len()],
                        arrays: HashMap::new(),
                        site: Some((func, eid)),
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
        record(&mut out, op, depth, recursive, &values, input);
    };
    drop(record);
    let shift = if ring.len() == limits.trace_steps { ring_next } else { 0 };
    ring.rotate_left(shift);
    out.tail = ring.into();
    out.end = end;
    out
}
