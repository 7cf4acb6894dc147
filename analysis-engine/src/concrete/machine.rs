//! The concrete interpreter's machine: global and per-activation values (scalars and
//! sparse arrays), evaluation of IR expressions and writes to lvalues. Anything it cannot
//! evaluate exactly (an unknown value, undefined behaviour) stops the run.
//!
//! The activations are an explicit stack (no Rust recursion per C call); an activation that
//! returns keeps its buffers for the next call, so that a run allocates only while its stack
//! grows deeper than it was.

use rustc_hash::FxHashMap;

use super::accel::LoopTrack;
use crate::cfa::CallSite;
use crate::cfa::{NodeId, Program};
use crate::ir::{eval_binop, eval_unop, Expr, FuncId, LValue, VarId, VarKind};

/// An array's cells that were written, and the value of all others (if known).
#[derive(Clone, Debug)]
pub(super) struct ArrayVal {
    pub(super) default: Option<i128>,
    pub(super) cells: FxHashMap<i64, i128>,
}

/// One activation of a function.
pub(super) struct Frame {
    pub(super) func: FuncId,
    pub(super) node: NodeId,
    pub(super) locals: Vec<Option<i128>>,
    pub(super) arrays: FxHashMap<usize, ArrayVal>,
    /// The call site this activation returns to.
    pub(super) site: Option<CallSite>,
    /// The loop this activation iterates, for acceleration (kept, reset, when the frame is
    /// reused).
    pub(super) track: Option<Box<LoopTrack>>,
}

/// The state of a run: global values and the stack of activations.
pub(super) struct Machine<'p> {
    p: &'p Program,
    pub(super) globals: Vec<Option<i128>>,
    garrays: FxHashMap<usize, ArrayVal>,
    /// The active activations, the current one last.
    frames: Vec<Frame>,
    /// Activations that returned, kept with their buffers for the next calls.
    spare: Vec<Frame>,
    /// How many activations of each function are on the stack.
    active: Vec<u32>,
}

/// Why evaluation cannot go on.
pub(super) struct Stop(pub(super) String);

impl<'p> Machine<'p> {
    /// The machine at the entry of the program's start function, every value unknown.
    pub(super) fn new(p: &'p Program) -> Machine<'p> {
        let mut m = Machine {
            p,
            globals: vec![None; p.globals.len()],
            garrays: FxHashMap::default(),
            frames: Vec::new(),
            spare: Vec::new(),
            active: vec![0; p.functions.len()],
        };
        m.push_frame(p.start, None);
        m
    }

    /// The current activation.
    pub(super) fn frame(&self) -> &Frame {
        self.frames.last().expect("a frame")
    }

    pub(super) fn frame_mut(&mut self) -> &mut Frame {
        self.frames.last_mut().expect("a frame")
    }

    /// The current activation and the globals, both writable.
    pub(super) fn frame_and_globals(&mut self) -> (&mut Frame, &mut [Option<i128>]) {
        (self.frames.last_mut().expect("a frame"), &mut self.globals)
    }

    /// How many activations are on the stack.
    pub(super) fn depth(&self) -> usize {
        self.frames.len()
    }

    /// Whether an activation of `func` is on the stack.
    pub(super) fn is_active(&self, func: FuncId) -> bool {
        self.active[func.0 as usize] > 0
    }

    /// How many activations of `func` are on the stack.
    pub(super) fn activations(&self, func: FuncId) -> u32 {
        self.active[func.0 as usize]
    }

    /// Pushes a new activation of `func` at its entry, every local unknown (a returned
    /// activation's buffers are reused).
    pub(super) fn push_frame(&mut self, func: FuncId, site: Option<CallSite>) -> &mut Frame {
        let cfa = self.p.cfa(func);
        let mut frame = self.spare.pop().unwrap_or_else(|| Frame {
            func,
            node: cfa.entry,
            locals: Vec::new(),
            arrays: FxHashMap::default(),
            site: None,
            track: None,
        });
        frame.func = func;
        frame.node = cfa.entry;
        frame.locals.clear();
        frame.locals.resize(cfa.locals.len(), None);
        frame.arrays.clear();
        frame.site = site;
        if let Some(t) = &mut frame.track {
            t.reset();
        }
        self.active[func.0 as usize] += 1;
        self.frames.push(frame);
        self.frames.last_mut().expect("pushed")
    }

    /// Pops the current activation; give it back with [`Machine::recycle`] once read.
    pub(super) fn pop_frame(&mut self) -> Option<Frame> {
        let f = self.frames.pop()?;
        self.active[f.func.0 as usize] -= 1;
        Some(f)
    }

    /// Keeps a popped activation's buffers for the next call.
    pub(super) fn recycle(&mut self, f: Frame) {
        self.spare.push(f);
    }

    pub(super) fn read_var(&self, v: VarId) -> Result<i128, Stop> {
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

    pub(super) fn array_mut(&mut self, v: VarId) -> &mut ArrayVal {
        let map = match v.func() {
            None => &mut self.garrays,
            Some(_) => &mut self.frames.last_mut().expect("a frame").arrays,
        };
        map.entry(v.index()).or_insert_with(|| ArrayVal { default: None, cells: FxHashMap::default() })
    }

    pub(super) fn eval(&self, e: &Expr) -> Result<i128, Stop> {
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

    pub(super) fn write(&mut self, lhs: &LValue, val: Option<i128>) -> Result<Option<i64>, Stop> {
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
