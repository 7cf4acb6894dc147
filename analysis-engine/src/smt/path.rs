//! SSA path formulas with C's semantics on bit-vectors: sized two's-complement integers,
//! wrap-around on overflow (signed overflow too: the engine's documented model), truncating
//! division, sign- or zero-extension by type, arrays as SMT arrays, recursion frames.
//!
//! A path is confirmed (soundness rule 1) only when the formula is satisfiable and no
//! constraint depends on an over-approximated value (`Unknown`, havocked memory): a taint
//! analysis follows such values through the path. Undefined behaviour (division by zero, shift
//! out of range) cuts the path, so a confirmed path never relies on it.

use z3::ast::Dynamic;

use crate::cfa::block::Block;
use crate::cfa::OpCtx;
use crate::cfa::Program;
use crate::core::{Cancel, Op};
use crate::ir::{IntTy, VarId};
use crate::smt::dag::{encode_dag, DagFormula};
use crate::smt::encode::{value_of, Encoder, Theory};
use crate::smt::{check, solver, Sat, QUERY_TIMEOUT_MS};

/// A violation confirmed by `check_path`, as the path analyses (summaries, tra) report it:
/// the operations (with the call depth before each) and the values.
pub struct Violation<'p> {
    pub steps: Vec<(OpCtx<'p>, usize)>,
    pub values: Vec<StepValues>,
}

/// What the model says about one step of a feasible path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepValues {
    /// Variables (and array elements) the step wrote, with their new values.
    pub writes: Vec<(VarId, Option<i64>, i128)>,
    /// Variables a branch condition read, with their values.
    pub reads: Vec<(VarId, Option<i64>, i128)>,
    /// The value an input (nondet call, uninitialised variable) produced.
    pub input: Option<i128>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathResult {
    /// Satisfiable with every constraint modelled precisely: one entry per operation.
    Feasible(Vec<StepValues>),
    /// Unsatisfiable (even with over-approximations): the path is spurious.
    Infeasible,
    /// Satisfiable only through an over-approximation: cannot be confirmed.
    Imprecise(String),
    Unknown(String),
}

/// Checks a path (from the program's start) for feasibility under C's semantics.
pub fn check_path(p: &Program, ops: &[OpCtx], cancel: &Cancel) -> PathResult {
    let mut enc = Encoder::new(p, Theory::BitVec, true);
    let mut obs = Vec::with_capacity(ops.len());
    for op in ops {
        obs.push(enc.op(op));
    }
    let s = solver(cancel, QUERY_TIMEOUT_MS);
    for c in &enc.constraints {
        s.assert(c);
    }
    for c in &enc.allocations {
        s.assert(c);
    }
    for (c, _) in &enc.separations {
        s.assert(c);
    }
    let sat = check(&s);
    if let (Sat::Unsat, Some((_, why))) = (&sat, enc.separations.first()) {
        // Feasible only if a read sees a cell that holds a value the model does not know.
        let s = solver(cancel, QUERY_TIMEOUT_MS);
        for c in enc.constraints.iter().chain(&enc.allocations) {
            s.assert(c);
        }
        if check(&s) == Sat::Sat {
            return PathResult::Imprecise(format!("the counterexample depends on a {}", why));
        }
    }
    if sat == Sat::Unsat && !enc.allocations.is_empty() {
        // Feasible only if an allocation fails: a real run in C, but not one to report (SV-COMP
        // assumes allocations succeed), and no refinement can refute it.
        let s = solver(cancel, QUERY_TIMEOUT_MS);
        for c in &enc.constraints {
            s.assert(c);
        }
        if check(&s) == Sat::Sat {
            return PathResult::Imprecise("the error path needs an allocation to fail (counterexamples assume allocations succeed)".into());
        }
    }
    match sat {
        Sat::Unsat => PathResult::Infeasible,
        Sat::Unknown(r) => PathResult::Unknown(format!("the SMT solver gave up on the path ({})", r)),
        Sat::Sat => {
            if let Some(why) = enc.tainted {
                return PathResult::Imprecise(format!("the counterexample depends on a {}", why));
            }
            prefer_short_arguments(ops, &obs, &s);
            let Some(m) = s.get_model() else { return PathResult::Unknown("no model".into()) };
            let ty = |v: VarId| Some(p.var(v).int_ty());
            let conv = |list: &[(VarId, Option<Dynamic>, Dynamic)]| -> Vec<(VarId, Option<i64>, i128)> {
                list.iter()
                    .filter_map(|(v, i, b)| {
                        let idx = match i {
                            Some(i) => Some(value_of(&m, i, Some(IntTy::I64))? as i64),
                            None => None,
                        };
                        Some((*v, idx, value_of(&m, b, ty(*v))?))
                    })
                    .collect()
            };
            let steps = obs
                .iter()
                .map(|o| StepValues {
                    writes: conv(&o.writes),
                    reads: conv(&o.reads),
                    input: o.input.as_ref().and_then(|b| {
                        let (v, _, _) = o.writes.first()?;
                        value_of(&m, b, ty(*v))
                    }),
                })
                .collect();
            PathResult::Feasible(steps)
        }
    }
}

/// Makes the command line of a satisfiable path's model the shortest one (`libc/args.c`): each
/// byte of argv's strings, in order, is a NUL wherever the path allows it, so that a
/// counterexample shows `argv[1] = "48"` and not `"48\xff…"`. Leaves `s` satisfiable (its
/// model is the last check's).
fn prefer_short_arguments(ops: &[OpCtx], obs: &[crate::smt::encode::Obs], s: &z3::Solver) {
    let is_arg_byte = |op: &OpCtx| {
        matches!(op.kind, crate::cfa::OpKind::Edge(crate::cfa::EdgeKind::Statement(crate::ir::Stmt::Input {
            source: crate::ir::InputSource::Call(name), ..
        })) if name == "__cpals_arg_byte")
    };
    // Whether the last check was satisfiable (the model is the last check's).
    let mut last_sat = true;
    for (op, o) in ops.iter().zip(obs) {
        let Some(bv) = o.input.as_ref().filter(|_| is_arg_byte(op)).and_then(|b| b.as_bv()) else { continue };
        s.push();
        s.assert(bv.eq(z3::ast::BV::from_u64(0, bv.get_size())));
        last_sat = check(s) == Sat::Sat;
        if !last_sat {
            s.pop(1);
        }
    }
    if !last_sat {
        check(s);
    }
}

/// The outcome of checking an abstract path whose blocks are DAGs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlocksResult {
    /// No path through the blocks is feasible.
    Infeasible,
    /// The operations of one path through the blocks that the bit-precise formula allows
    /// (to be confirmed by `check_path`, which also gives its values).
    Path(Vec<(Op, bool)>),
    Unknown(String),
}

/// Checks the paths through a sequence of blocks (from the program's start) at once, under
/// C's semantics, and picks a feasible one.
pub fn check_blocks(p: &Program, blocks: &[Block], cancel: &Cancel) -> BlocksResult {
    let mut enc = Encoder::new(p, Theory::BitVec, true);
    let dags: Vec<DagFormula> = blocks.iter().map(|b| encode_dag(&mut enc, p, b)).collect();
    let s = solver(cancel, QUERY_TIMEOUT_MS);
    for c in &enc.constraints {
        s.assert(c);
    }
    for d in &dags {
        s.assert(&d.reach);
    }
    match check(&s) {
        Sat::Unsat => BlocksResult::Infeasible,
        Sat::Unknown(r) => BlocksResult::Unknown(format!("the SMT solver gave up on the error paths ({})", r)),
        Sat::Sat => {
            let Some(m) = s.get_model() else { return BlocksResult::Unknown("no model".into()) };
            let mut ops = Vec::new();
            for d in &dags {
                match d.path_in(&m) {
                    Some(path) => ops.extend(path),
                    None => return BlocksResult::Unknown("the model follows no path of a block".into()),
                }
            }
            BlocksResult::Path(ops)
        }
    }
}
