//! The concrete interpreter's machine: global and per-activation values (scalars and
//! sparse arrays), evaluation of IR expressions and writes to lvalues. Anything it cannot
//! evaluate exactly (an unknown value, undefined behaviour) stops the run.

use std::collections::HashMap;

use super::accel::LoopTrack;
use crate::cfa::CallSite;
use crate::cfa::{NodeId, Program};
use crate::ir::{eval_binop, eval_unop, Expr, FuncId, LValue, VarId, VarKind};

/// An array's cells that were written, and the value of all others (if known).
#[derive(Clone, Debug)]
pub(super) struct ArrayVal {
    pub(super) default: Option<i128>,
    pub(super) cells: HashMap<i64, i128>,
}

/// One activation of a function.
pub(super) struct Frame {
    pub(super) func: FuncId,
    pub(super) node: NodeId,
    pub(super) locals: Vec<Option<i128>>,
    pub(super) arrays: HashMap<usize, ArrayVal>,
    /// The call site this activation returns to.
    pub(super) site: Option<CallSite>,
    /// The loop this activation iterates, for acceleration.
    pub(super) track: Option<LoopTrack>,
}

/// The state of a run: global values and the stack of activations.
pub(super) struct Machine<'p> {
    p: &'p Program,
    pub(super) globals: Vec<Option<i128>>,
    garrays: HashMap<usize, ArrayVal>,
    pub(super) frames: Vec<Frame>,
}

/// Why evaluation cannot go on.
pub(super) struct Stop(pub(super) String);

impl<'p> Machine<'p> {
    /// The machine at the entry of the program's start function, every value unknown.
    pub(super) fn new(p: &'p Program) -> Machine<'p> {
        let start = p.start;
        Machine {
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
        }
    }

    pub(super) fn frame(&self) -> &Frame {
        self.frames.last().expect("a frame")
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
        map.entry(v.index()).or_insert(ArrayVal { default: None, cells: HashMap::new() })
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
