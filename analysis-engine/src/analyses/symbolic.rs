//! Exhaustive symbolic execution (King, *Symbolic Execution and Program Testing*, CACM 1976;
//! as CPAchecker's symbolic-execution configuration uses it, Beyer and Lemberger, *Symbolic
//! Execution with CEGAR*, ISoLA 2016, §2): every path of the program from its start, one at a
//! time in depth-first order, with its path condition in one incremental bit-vector solver
//! (`smt::encode`, the analyses' over-approximating encoding: memory, allocations that may fail,
//! machine arithmetic). A branch whose condition contradicts the path's is not followed.
//!
//! Nothing is merged or abstracted, so the phase ends only on programs whose every path is
//! finite and short: loops with constant bounds, inputs checked against ranges, lists of
//! bounded length. There it is a proof: when every path has been followed and none reaches a
//! property's target, the property holds. A path that reaches one only keeps it from being
//! proved: violations are left to the phases that confirm them (the fuzzer, CEGAR), whose
//! counterexamples read better than a depth-first search's first path (it took `atoi`'s
//! whitespace branch five times: `argv[1] = "     200"` where the fuzzer finds `"100"`).
//!
//! It gives up (proving nothing) when a path is too long,
//! a loop head is visited too often on one path, a call nests too deep, a feasible path takes
//! a construct cpals does not model, the solver gives up, or time runs out. A loop head
//! revisited with every variable unchanged (`while (1);`) ends its path: what follows was
//! already reachable from the earlier visit.

use std::collections::{BTreeSet, HashMap};

use crate::analyses::callstack::{CallStack, CallStackCpa, Push};
use crate::analyses::location::LocationCpa;
use crate::cfa::{EdgeKind, Loc, OpCtx, Program};
use crate::core::{Cancel, Op};
use crate::ir::{Stmt, VarId};
use crate::properties::{Property, PropertyKey};
use crate::smt::encode::{Encoder, Snapshot, Theory};
use crate::smt::{check, solver, Sat};
use z3::ast::{Ast, Bool, Dynamic};

/// Operations one path may have at most.
const MAX_PATH: usize = 50_000;
/// Visits of one loop head (in one activation) one path may make at most.
const MAX_UNROLL: u32 = 300;
/// Nested calls at most (the value analysis's bound is the configuration's; recursion this
/// deep is not what the phase is for).
const MAX_DEPTH: usize = 64;
/// One branch query's time at most, in milliseconds.
const QUERY_MS: u64 = 2_000;

/// What the phase found.
#[derive(Default, Debug)]
pub struct SymbolicResult {
    /// Properties no path reaches (only when every path was followed).
    pub proved: BTreeSet<PropertyKey>,
    /// Paths followed to their end.
    pub paths: u64,
    /// Why not every path was followed, if not.
    pub gave_up: Option<String>,
    /// Queries of a path's condition, and of a constraint over new constants alone.
    pub queries: u64,
    pub alone_queries: u64,
}

/// One operation still to take: where it leaves from and the path up to there.
struct Pending {
    op: Op,
    to: Loc,
    stack: CallStack,
    /// The solver's scope depth, the path's length and its loop-head visits at the branch.
    level: u32,
    path_len: usize,
    visits_len: usize,
    used_len: usize,
    /// The encoder's versions at the branch (`None` for the only operation leaving its
    /// location: it is taken next, from where the encoder is).
    at: Option<Snapshot>,
    /// One of several operations leaving its location: its condition must be checked.
    branch: bool,
    /// The path condition at the branch was not checked since its last constraint.
    dirty: bool,
}

/// Follows every path of `p` from its start, for the properties `open`.
pub fn run(p: &Program, open: &[Property], cancel: &Cancel) -> SymbolicResult {
    let open_keys: BTreeSet<PropertyKey> = open.iter().map(|q| q.key).collect();
    let mut ex = Explorer {
        p,
        cancel,
        location: LocationCpa { program: p },
        calls: CallStackCpa { program: p, max_depth: MAX_DEPTH },
        solver: solver(cancel, QUERY_MS),
        enc: Encoder::new(p, Theory::BitVec, false),
        dirty: false,
        used: HashMap::new(),
        used_trail: Vec::new(),
        scratch: solver(cancel, QUERY_MS),
        level: 0,
        path_len: 0,
        visits: Vec::new(),
        open: open_keys.clone(),
        reached: BTreeSet::new(),
        result: SymbolicResult::default(),
    };
    ex.enc.inline = true;
    // A query stops as soon as the run is cancelled (an edit in the editor), not at its limit.
    let outcome = crate::smt::interruptible(cancel, || ex.explore());
    let mut result = ex.result;
    match outcome {
        Ok(()) => {
            result.proved = open_keys.into_iter().filter(|k| !ex.reached.contains(k)).collect();
        }
        Err(why) => result.gave_up = Some(why),
    }
    tracing::debug!(
        "symbolic execution: {} paths, {} queries ({} of a constraint alone), {} proved, {} reached{}",
        result.paths,
        result.queries + result.alone_queries,
        result.alone_queries,
        result.proved.len(),
        ex.reached.len(),
        result.gave_up.as_ref().map(|w| format!(", gave up: {}", w)).unwrap_or_default()
    );
    result
}

struct Explorer<'p, 'a> {
    p: &'p Program,
    cancel: &'a Cancel,
    location: LocationCpa<'p>,
    calls: CallStackCpa<'p>,
    solver: z3::Solver,
    enc: Encoder<'p>,
    /// Constraints were asserted since the last satisfiable check.
    dirty: bool,
    /// The constants (inputs, unknown values) the path's constraints mention, with how many
    /// constraints do, and the order they were added in (for backtracking).
    used: HashMap<Dynamic, u32>,
    used_trail: Vec<Dynamic>,
    /// A solver for a constraint over constants no other constraint mentions, alone.
    scratch: z3::Solver,
    /// Scopes pushed on the solver (one per branch on the current path).
    level: u32,
    /// How many operations the current path has (proofs need only its length).
    path_len: usize,
    /// The current path's visits of loop heads: location, stack, the variables' versions.
    visits: Vec<(Loc, CallStack, HashMap<VarId, u32>)>,
    /// Properties still to decide.
    open: BTreeSet<PropertyKey>,
    /// Properties some feasible path reaches without a confirmed violation.
    reached: BTreeSet<PropertyKey>,
    result: SymbolicResult,
}

impl<'p> Explorer<'p, '_> {
    /// Follows every path; `Err` says why it stopped before.
    fn explore(&mut self) -> Result<(), String> {
        let mut work: Vec<Pending> = Vec::new();
        let start = self.location.initial();
        self.successors(start, &CallStack::default(), &mut work)?;
        while let Some(next) = work.pop() {
            self.cancel.check().map_err(|i| format!("interrupted ({:?})", i))?;
            let Pending { op, to, stack, level, path_len, visits_len, used_len, at, branch, dirty } = next;
            self.dirty = dirty;
            if self.level > level {
                self.solver.pop(self.level - level);
                self.level = level;
            }
            if let Some(at) = &at {
                self.enc.restore(at);
            }
            self.path_len = path_len;
            self.visits.truncate(visits_len);
            while self.used_trail.len() > used_len {
                let k = self.used_trail.pop().expect("longer than used_len");
                if let Some(n) = self.used.get_mut(&k) {
                    *n -= 1;
                    if *n == 0 {
                        self.used.remove(&k);
                    }
                }
            }
            if branch {
                self.solver.push();
                self.level += 1;
            }
            let ctx = self.op_ctx(op, &stack);
            self.enc.op(&ctx);
            self.path_len += 1;
            let mut contradiction = false;
            let new: Vec<Bool> = self.enc.constraints.drain(..).collect();
            for c in new {
                let c = c.simplify();
                match c.as_bool() {
                    Some(true) => continue,
                    Some(false) => contradiction = true,
                    None => contradiction |= !self.independent_and_satisfiable(&c)?,
                }
                self.solver.assert(&c);
            }
            if contradiction {
                continue;
            }
            if self.path_len > MAX_PATH {
                return Err(format!("a path longer than {} operations", MAX_PATH));
            }
            if branch && !self.feasible()? {
                continue;
            }
            let stack = match op {
                Op::Call(f, e) => match self.calls.call(&stack, (f, e)) {
                    Push::Ok(s) => s,
                    Push::TooDeep(_) => return Err(format!("calls nested deeper than {}", MAX_DEPTH)),
                },
                Op::Return(..) => stack.pop(),
                Op::Edge(..) => stack,
            };
            self.arrive(to, &stack)?;
            if !self.revisits(to, &stack)? {
                let before = work.len();
                self.successors(to, &stack, &mut work)?;
                if work.len() == before {
                    self.result.paths += 1;
                }
            }
        }
        Ok(())
    }

    /// An operation taken with the call stack `stack` (recursion flags as the composite's).
    fn op_ctx(&self, op: Op, stack: &CallStack) -> OpCtx<'p> {
        let recursive = match op {
            Op::Edge(..) => false,
            Op::Call(f, e) => {
                let callee = self.p.cfa(f).edge(e).kind.callee().expect("call edge");
                f == callee || self.calls.is_active(stack, callee)
            }
            Op::Return(f, e) => {
                let callee = self.p.cfa(f).edge(e).kind.callee().expect("call edge");
                self.calls.is_active(stack, callee)
            }
        };
        crate::cfa::op_ctx(self.p, op, recursive)
    }

    /// Records the constants `c` mentions. Without a query of the path's condition when no
    /// other constraint of the path mentions them (a branch on an input just read): then the
    /// two are satisfiable together exactly when `c` is alone, which a small query decides;
    /// `Ok(false)` if it is not. Otherwise the path's condition must be checked again.
    fn independent_and_satisfiable(&mut self, c: &Bool) -> Result<bool, String> {
        let mut consts = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![Dynamic::from_ast(c)];
        // Bound variables and quantifiers (none in the encoding) would hide constants.
        let mut opaque = false;
        while let Some(t) = stack.pop() {
            if !seen.insert(t.clone()) {
                continue;
            }
            match t.kind() {
                // A constant other than `true` and `false` (numerals are their own kind; the
                // declaration kinds of the `z3` crate do not match Debian's Z3 4.8.12).
                z3::AstKind::App if t.is_const() => {
                    if t.as_bool().and_then(|b| b.as_bool()).is_none() {
                        consts.push(t);
                    }
                }
                z3::AstKind::App => stack.extend(t.children()),
                z3::AstKind::Numeral => {}
                _ => opaque = true,
            }
        }
        let independent = !opaque && !consts.is_empty() && consts.iter().all(|k| !self.used.contains_key(k));
        for k in consts {
            *self.used.entry(k.clone()).or_insert(0) += 1;
            self.used_trail.push(k);
        }
        if !independent {
            self.dirty = true;
            return Ok(true);
        }
        self.result.alone_queries += 1;
        self.scratch.push();
        self.scratch.assert(c);
        let alone = check(&self.scratch);
        self.scratch.pop(1);
        match alone {
            Sat::Sat => Ok(true),
            Sat::Unsat => Ok(false),
            Sat::Unknown(_) => {
                self.dirty = true;
                Ok(true)
            }
        }
    }

    /// Whether the current path condition is satisfiable (without a query when nothing was
    /// asserted since the last satisfiable one but constants' conditions that folded to true).
    fn feasible(&mut self) -> Result<bool, String> {
        if !self.dirty {
            return Ok(true);
        }
        self.result.queries += 1;
        match check(&self.solver) {
            Sat::Sat => {
                self.dirty = false;
                Ok(true)
            }
            Sat::Unsat => Ok(false),
            Sat::Unknown(r) => Err(format!("the solver gave up on a path ({})", r)),
        }
    }

    /// At `loc`: a target of an open property on a satisfiable path keeps it from being proved.
    fn arrive(&mut self, loc: Loc, stack: &CallStack) -> Result<(), String> {
        let cfa = self.p.cfa(loc.func);
        let Some(t) = cfa.node(loc.node).target else { return Ok(()) };
        let site = if cfa.assert_helper { stack.top() } else { None };
        let key = PropertyKey { func: loc.func, target: t, site };
        if !self.open.contains(&key) || !self.feasible()? {
            return Ok(());
        }
        self.open.remove(&key);
        self.reached.insert(key);
        Ok(())
    }

    /// Whether `loc` is a loop head this path visited before with every variable unchanged
    /// (the path ends there); counts the visits otherwise.
    fn revisits(&mut self, loc: Loc, stack: &CallStack) -> Result<bool, String> {
        if !self.p.cfa(loc.func).node(loc.node).loop_head {
            return Ok(false);
        }
        let at = self.enc.snapshot();
        let mut seen = 0;
        for (l, s, cur) in self.visits.iter().rev() {
            if *l == loc && s == stack {
                if seen == 0 && *cur == at.cur {
                    return Ok(true);
                }
                seen += 1;
            }
        }
        if seen >= MAX_UNROLL {
            return Err(format!("a loop iterated more than {} times on one path", MAX_UNROLL));
        }
        self.visits.push((loc, stack.clone(), at.cur));
        Ok(false)
    }

    /// Queues the operations leaving `loc` (the first to be taken first).
    fn successors(&mut self, loc: Loc, stack: &CallStack, work: &mut Vec<Pending>) -> Result<(), String> {
        let mut out: Vec<(Op, Loc, CallStack)> = Vec::new();
        if self.location.is_exit(loc) {
            if let Some((caller, edge)) = stack.top() {
                let dst = self.p.cfa(caller).edge(edge).dst;
                out.push((Op::Return(caller, edge), Loc { func: caller, node: dst }, stack.clone()));
            }
        } else {
            let mut locs = Vec::new();
            self.location.successors(loc, &mut locs);
            for (op, to) in locs {
                if let Op::Edge(f, e) = op {
                    if let EdgeKind::Statement(Stmt::Unsupported(what)) = &self.p.cfa(f).edge(e).kind {
                        if self.feasible()? {
                            return Err(format!("{} is not modelled", what));
                        }
                        return Ok(());
                    }
                }
                out.push((op, to, stack.clone()));
            }
        }
        let branch = out.len() > 1;
        let at = branch.then(|| self.enc.snapshot());
        for (op, to, stack) in out.into_iter().rev() {
            work.push(Pending {
                op,
                to,
                stack,
                level: self.level,
                path_len: self.path_len,
                visits_len: self.visits.len(),
                used_len: self.used_trail.len(),
                at: at.clone(),
                branch,
                dirty: self.dirty,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many of the properties of a `main` with `body` symbolic execution proves, of how many.
    fn proved(body: &str) -> (usize, usize) {
        crate::analyses::proved_in_main(body, |p, open, cancel| run(p, open, cancel).proved)
    }

    /// Inputs checked against ranges, stored into an array by a loop with a constant bound.
    const RANGES: &str = "int a[5];\nfor (int i = 0; i < 5; i++) {\nint n = __VERIFIER_nondet_int();\n\
                          if (n < i || n > i + 3) return 0;\na[i] = n;\n}\n\
                          for (int i = 0; i < 5; i++) __VERIFIER_assert(a[i] >= i && a[i] - i <= 3);\n";

    #[test]
    fn bounded_loops_over_checked_inputs_are_proved() {
        let (proved, all) = proved(RANGES);
        assert!(all >= 1);
        assert_eq!(proved, all, "every path is short: each check holds on all of them");
    }

    #[test]
    fn an_endless_loop_that_changes_nothing_ends_its_path() {
        let body = "int x = __VERIFIER_nondet_int();\nif (x > 3) { while (1); }\n__VERIFIER_assert(x <= 3);\n";
        assert_eq!(proved(body), (1, 1));
    }

    #[test]
    fn a_loop_bounded_by_an_input_proves_nothing() {
        let body = "int x = 0;\nwhile (__VERIFIER_nondet_int()) x++;\n__VERIFIER_assert(x >= 0);\n";
        assert_eq!(proved(body), (0, 1), "the loop may iterate more often than any bound");
    }

    #[test]
    fn a_reachable_violation_is_not_proved_and_the_other_check_is() {
        let text = "extern void abort(void);\nextern int __VERIFIER_nondet_int(void);\n\
                    void reach_error(void) { abort(); }\nint main(void) {\nint s = 0;\n\
                    for (int i = 0; i < 3; i++) { int n = __VERIFIER_nondet_int(); if (n < 0 || n > 2) return 0; s += n; }\n\
                    if (s == 6) reach_error();\nif (s > 6) reach_error();\nreturn 0;\n}\n";
        let input = crate::frontend::SourceInput { path: "violated.c".into(), text: text.into() };
        let p = crate::load(&input, crate::cfa::DataModel::Lp64).expect("loads");
        let props = crate::properties::properties(&p);
        assert_eq!(props.len(), 2);
        let r = run(&p, &props, &crate::core::Cancel::new().child(Some(std::time::Duration::from_secs(60))));
        assert_eq!(r.proved.len(), 1, "s never exceeds 6, and s == 6 when every input is 2");
        let six = props.iter().find(|q| q.range.line == 7).expect("the check s == 6");
        assert!(!r.proved.contains(&six.key), "s == 6 is reachable");
        assert!(r.gave_up.is_none());
    }
}
