//! The run driver of the concrete interpreter: executes the program one operation at a time
//! from its start function, through calls and returns, accelerating loops at their heads and
//! recording the run.

use std::collections::VecDeque;

use super::machine::{Machine, Stop};
use super::plan::{NodePlan, Plan};
use super::recorder::Recorder;
use super::{ConcreteStep, HeadObserver, InputStrategy, Run, RunEnd, RunLimits};
use crate::cfa::{Call, EdgeId, EdgeKind, NodeId, Program};
use crate::core::{Cancel, Op};
use crate::ir::{FuncId, InputSource, LValue, Stmt, VarId, VarKind};
use crate::properties::PropertyKey;

/// Why a run does not go on after a step.
enum Halt {
    /// The run ends; its record is finished.
    End(RunEnd),
    /// Writing a callee's return values got stuck: the run ends at once, without the tail of
    /// its record.
    Abandon(String),
}

impl From<Stop> for Halt {
    fn from(Stop(why): Stop) -> Halt {
        Halt::End(RunEnd::Stuck(why))
    }
}

/// One run: the machine, what drives it, and what it has recorded so far.
struct Runner<'r> {
    p: &'r Program,
    plan: &'r Plan,
    inputs: &'r mut dyn InputStrategy,
    limits: &'r RunLimits,
    m: Machine<'r>,
    out: Run,
    rec: Recorder<'r>,
    /// The values the current step wrote or read (a buffer reused by every step).
    values: Vec<(VarId, Option<i64>, i128)>,
    /// A call's arguments, a return's values (a buffer reused by every step).
    scratch: Vec<i128>,
    /// Steps executed (`out.steps` also counts the operations of iterations jumped over).
    executed: u64,
    observer: Option<&'r mut dyn HeadObserver>,
}

/// Runs the program from its start function with `inputs`.
pub fn run(p: &Program, plan: &Plan, inputs: &mut dyn InputStrategy, limits: &RunLimits, cancel: &Cancel) -> Run {
    run_with(p, plan, inputs, limits, cancel, None)
}

/// [`run`], telling `observer` the state at each loop head it passes (before acceleration).
pub fn run_observed(
    p: &Program,
    plan: &Plan,
    inputs: &mut dyn InputStrategy,
    limits: &RunLimits,
    cancel: &Cancel,
    observer: &mut dyn HeadObserver,
) -> Run {
    run_with(p, plan, inputs, limits, cancel, Some(observer))
}

fn run_with<'r>(
    p: &'r Program,
    plan: &'r Plan,
    inputs: &'r mut dyn InputStrategy,
    limits: &'r RunLimits,
    cancel: &Cancel,
    observer: Option<&'r mut dyn HeadObserver>,
) -> Run {
    let mut r = Runner {
        p,
        plan,
        inputs,
        limits,
        m: Machine::new(p),
        out: Run {
            end: RunEnd::Exit,
            inputs: Vec::new(),
            ops: Some(Vec::new()),
            head: Vec::new(),
            tail: VecDeque::new(),
            steps: 0,
            accelerated: 0,
            choices: 0,
        },
        rec: Recorder::new(limits),
        values: Vec::new(),
        scratch: Vec::new(),
        executed: 0,
        observer,
    };
    let end = loop {
        match r.step(cancel) {
            Ok(()) => {}
            Err(Halt::End(end)) => break end,
            Err(Halt::Abandon(why)) => {
                r.out.end = RunEnd::Stuck(why);
                return r.out;
            }
        }
    };
    r.out.tail = r.rec.finish();
    r.out.end = end;
    r.out
}

impl<'r> Runner<'r> {
    /// One step: the limits, acceleration at a loop head, then the operation the node's plan
    /// chooses.
    fn step(&mut self, cancel: &Cancel) -> Result<(), Halt> {
        self.out.steps += 1;
        self.executed += 1;
        if self.executed > self.limits.max_steps || self.out.inputs.len() >= self.limits.max_inputs {
            return Err(Halt::End(RunEnd::StepLimit));
        }
        // Every 65,536 steps (a few milliseconds): an edit in the editor cancels within that.
        if self.executed.is_multiple_of(1 << 16) && cancel.check().is_err() {
            return Err(Halt::End(RunEnd::Cancelled));
        }
        let (func, node) = (self.m.frame().func, self.m.frame().node);
        let plan = self.plan;
        if plan.heads[func.0 as usize][node.0 as usize] {
            if let Some(o) = self.observer.as_deref_mut() {
                let m = &self.m;
                o.at_head(func, node, &mut |e| m.eval(e).ok());
            }
            if self.limits.accelerate {
                self.accelerate(func, node);
            }
        }
        let eid = match &plan.nodes[func.0 as usize][node.0 as usize] {
            NodePlan::Target(t) => {
                let site = if self.p.cfa(func).assert_helper { self.m.frame().site } else { None };
                return Err(Halt::End(RunEnd::Target(PropertyKey { func, target: *t, site })));
            }
            NodePlan::Exit => return self.return_to_caller(func),
            NodePlan::End => return Err(Halt::End(RunEnd::Aborted)),
            NodePlan::Single(e) => *e,
            NodePlan::Branch { t, f, reads } => return self.branch(func, *t, *f, reads),
            NodePlan::General => self.choose_edge(func, node)?,
        };
        self.execute(func, eid)
    }

    /// At a loop head: jumps over iterations if the loop allows it, and records the jump.
    fn accelerate(&mut self, func: FuncId, node: NodeId) {
        let Some((k, len, changed)) = self.m.loop_head(self.p, self.plan, node) else { return };
        self.out.steps = self.out.steps.saturating_add(k.saturating_mul(len as u64));
        // The skipped operations are not recorded: confirmation replays natively.
        self.out.ops = None;
        let first = self.p.cfa(func).node(node).out.first().copied().unwrap_or(EdgeId(0));
        let depth = self.m.depth() - 1;
        self.out.accelerated += k;
        self.rec.push(
            &mut self.out,
            ConcreteStep { op: Op::Edge(func, first), depth, recursive: false, values: changed, input: None, accelerated: Some(k) },
        );
    }

    /// At the exit of `func`: pops its activation and writes its return values in the caller.
    fn return_to_caller(&mut self, func: FuncId) -> Result<(), Halt> {
        let p = self.p;
        let Some(frame) = self.m.pop_frame() else { return Err(Halt::End(RunEnd::Exit)) };
        let Some((caller, eid)) = frame.site else { return Err(Halt::End(RunEnd::Exit)) };
        let EdgeKind::CallSummary(call) = &p.cfa(caller).edge(eid).kind else { unreachable!("call site") };
        self.values.clear();
        for (lhs, r) in call.ret.iter().zip(&p.cfa(func).ret) {
            let v = frame.locals[r.index()];
            match self.m.write(lhs, v) {
                Ok(idx) => {
                    if let Some(v) = v {
                        self.values.push((lhs.var(), idx, v));
                    }
                }
                Err(Stop(why)) => return Err(Halt::Abandon(why)),
            }
        }
        self.m.recycle(frame);
        self.m.frame_mut().node = p.cfa(caller).edge(eid).dst;
        let depth = self.m.depth();
        let recursive = self.m.is_active(func);
        self.rec.record(&mut self.out, Op::Return(caller, eid), depth, recursive, &self.values, None);
        Ok(())
    }

    /// A planned branch: evaluates its condition once and takes `t` or `f`.
    fn branch(&mut self, func: FuncId, t: EdgeId, f: EdgeId, reads: &[VarId]) -> Result<(), Halt> {
        let cfa = self.p.cfa(func);
        let EdgeKind::Assume { cond, .. } = &cfa.edge(t).kind else { unreachable!("branch") };
        let v = self.m.eval(cond)?;
        self.values.clear();
        for &r in reads {
            if let Ok(x) = self.m.read_var(r) {
                self.values.push((r, None, x));
            }
        }
        let eid = if v != 0 { t } else { f };
        self.m.log_edge(eid);
        self.m.frame_mut().node = cfa.edge(eid).dst;
        let depth = self.m.depth() - 1;
        self.rec.record(&mut self.out, Op::Edge(func, eid), depth, false, &self.values, None);
        Ok(())
    }

    /// The edge taken at a node without a plan: the only enabled one, or the input strategy's
    /// choice among enabled edges without conditions.
    fn choose_edge(&mut self, func: FuncId, node: NodeId) -> Result<EdgeId, Halt> {
        let cfa = self.p.cfa(func);
        let n = cfa.node(node);
        // The enabled edges: assumes whose condition holds, every other edge.
        let mut first = None;
        let mut count = 0usize;
        let mut stuck = None;
        for &eid in &n.out {
            let enabled = match &cfa.edge(eid).kind {
                EdgeKind::Assume { cond, truth } => match self.m.eval(cond) {
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
            return Err(Halt::End(RunEnd::Stuck(why)));
        }
        match (count, first) {
            (0, _) | (_, None) => Err(Halt::End(RunEnd::Aborted)),
            (1, Some(e)) => Ok(e),
            (k, Some(_)) => {
                // A nondeterministic choice between edges without conditions.
                let pick = self.inputs.choose(k);
                self.out.choices += 1;
                Ok(n.out.iter().copied().filter(|&e| !matches!(cfa.edge(e).kind, EdgeKind::Assume { .. })).nth(pick).unwrap_or(n.out[0]))
            }
        }
    }

    /// Executes an edge of `func` and records it.
    fn execute(&mut self, func: FuncId, eid: EdgeId) -> Result<(), Halt> {
        let e = self.p.cfa(func).edge(eid);
        self.m.log_edge(eid);
        let depth = self.m.depth() - 1;
        self.values.clear();
        let input = self.apply(func, eid)?;
        let (op, recursive) = match &e.kind {
            // Another activation of the callee than the one the call pushed.
            EdgeKind::CallSummary(c) => (Op::Call(func, eid), self.m.activations(c.callee) > 1),
            _ => (Op::Edge(func, eid), false),
        };
        self.rec.record(&mut self.out, op, depth, recursive, &self.values, input);
        Ok(())
    }

    /// The effect of an edge of `func` on the machine; the input it read, if any.
    fn apply(&mut self, func: FuncId, eid: EdgeId) -> Result<Option<i128>, Stop> {
        let cfa = self.p.cfa(func);
        let e = cfa.edge(eid);
        let mut input = None;
        match &e.kind {
            EdgeKind::Blank => {}
            EdgeKind::Assume { .. } => {}
            EdgeKind::Statement(s) | EdgeKind::Declaration(s) => input = self.statement(s)?,
            EdgeKind::Return(es) => {
                // Every value first: a return expression may read a variable another one sets.
                self.scratch.clear();
                for x in es {
                    let v = self.m.eval(x)?;
                    self.scratch.push(v);
                }
                for (&rv, &v) in cfa.ret.iter().zip(&self.scratch) {
                    self.m.write(&LValue::Var(rv), Some(v))?;
                }
            }
            EdgeKind::CallSummary(call) => {
                self.call(func, eid, call)?;
                return Ok(None);
            }
        }
        self.m.frame_mut().node = e.dst;
        Ok(input)
    }

    /// Executes a statement; the input it read, if any.
    fn statement(&mut self, s: &Stmt) -> Result<Option<i128>, Stop> {
        match s {
            Stmt::Assign(lhs, ex) => {
                if matches!(lhs, LValue::Elem(..)) {
                    self.m.spoil();
                }
                let v = self.m.eval(ex)?;
                let idx = self.m.write(lhs, Some(v))?;
                self.values.push((lhs.var(), idx, v));
            }
            Stmt::Input { lhs, source: InputSource::Call(name) } => {
                self.m.spoil();
                let ty = self.p.var(lhs.var()).int_ty();
                let v = self.inputs.value(ty);
                self.out.inputs.push((name.clone(), ty, v));
                let idx = self.m.write(lhs, Some(v))?;
                self.values.push((lhs.var(), idx, v));
                return Ok(Some(v));
            }
            Stmt::Input { lhs, .. } => {
                // Uninitialised, or the value of an external cpals does not model: a native
                // run would read whatever memory or the real function gives, so the value
                // stays unknown and reading it stops the run.
                self.m.write(lhs, None)?;
            }
            Stmt::InitArray { var, zero } => {
                // The memory model's cells (synthetic arrays without a length) are not run: a
                // run that gets further through such a program confirms violations that the
                // value analysis would otherwise find itself, and it then proves less
                // (`fixtures/memory/bsearch.c`). A variable-length array of the program is.
                let info = self.p.var(*var);
                if !*zero && info.synthetic && matches!(info.kind, VarKind::Array { len: None, .. }) {
                    return Err(Stop("an array with arbitrary contents".into()));
                }
                // Zeros, or arbitrary contents (an uninitialised array): a read of a cell not
                // written since then stops the run, as a read of an uninitialised scalar does.
                let a = self.m.array_mut(*var);
                a.cells.clear();
                a.default = zero.then_some(0);
            }
            Stmt::HavocMemory(why) => return Err(Stop(why.describe().into())),
            Stmt::Unsupported(what) => return Err(Stop(format!("{} is not modelled", what))),
        }
        Ok(None)
    }

    /// A call: a new activation of the callee, its parameters bound to the arguments.
    fn call(&mut self, func: FuncId, eid: EdgeId, call: &Call) -> Result<(), Stop> {
        if self.m.depth() >= self.limits.max_frames {
            return Err(Stop("call stack too deep".into()));
        }
        self.m.spoil();
        self.scratch.clear();
        for x in &call.args {
            let v = self.m.eval(x)?;
            self.scratch.push(v);
        }
        let p = self.p;
        let callee = p.cfa(call.callee);
        if callee.params.iter().any(|&param| matches!(p.var(param).kind, VarKind::Array { .. })) {
            return Err(Stop("array passed by value".into()));
        }
        let frame = self.m.push_frame(call.callee, Some((func, eid)));
        for (&param, &a) in callee.params.iter().zip(&self.scratch) {
            frame.locals[param.index()] = Some(a);
            self.values.push((param, None, a));
        }
        Ok(())
    }
}
