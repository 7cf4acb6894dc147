//! k-induction over the cut points of the program's entry function (issue 27, Build 1), after
//! Donaldson, Haller, Kroening and Rümmer, *Software Verification Using k-Induction* (SAS 2011,
//! §3: base case and step case over a transition system), with the step case strengthened by
//! invariants other analyses found (Beyer, Dangl and Wendler, *Boosting k-Induction with
//! Continuously-Refined Invariants*, CAV 2015, §3).
//!
//! The transition system: a state is a cut point of the entry function (its entry, loop heads,
//! target nodes, exit) and the values of the globals and the function's locals; a transition
//! is one block between cut points (`smt::block`, every path at once). Calls are not entered:
//! their results and what they may modify are arbitrary (an over-approximation, sound for
//! proofs); a call to an assertion helper also reaches the helper's target when the helper's
//! own block from its entry does for the arguments. A property is violated at step `i` when
//! state `i` is its target node, or when the block from state `i` reaches it in a helper.
//!
//! - Base case at depth `k`: no run from the start reaches the violation in step `k`.
//! - Step case at depth `k`: from any state that satisfies the strengthening invariants, `k`
//!   steps without the violation are not followed by one.
//!
//! Both unsatisfiable for every depth up to `k` proves the property. Everything is
//! bit-precise; the strengthening invariants are first reduced to their inductive subset
//! (`invariants::inductive_subset`), whatever analysis proposed them. The phase proves or
//! stays silent: a satisfiable base case may be spurious (calls over-approximated), so
//! violations are left to the analyses that confirm them.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use z3::ast::{Array, Bool, Int};
use z3::Solver;

use crate::cfa::{NodeId, Program};
use crate::core::Cancel;
use crate::invariants::{decide, has_products, inductive_subset, Annotations};
use crate::ir::{FuncId, VarId};
use crate::properties::{Property, PropertyKey};
use crate::smt::block::{bind_params, encode_block, modified_by};
use crate::smt::encode::{Encoder, Theory, VTerm};
use crate::smt::{solver_by_work, Sat};

/// Depths tried at most (each adds a copy of the function's blocks to both unrollings).
const MAX_K: u32 = 24;
/// Scalars and arrays a state may have at most (each step equates them at every exit).
const MAX_STATE_VARS: usize = 400;
/// Blocks (cut points) the entry function may have at most.
const MAX_CUTS: usize = 64;
/// Z3's work per query, in milliseconds (`smt::solver_by_work`).
const QUERY_MS: u64 = 2_000;

/// What the phase found.
#[derive(Default, Debug)]
pub struct KindResult {
    /// Properties shown to hold.
    pub proved: BTreeSet<PropertyKey>,
    /// The largest depth a proof needed.
    pub k: u32,
    /// The strengthening invariants the step case assumed (inductive), when a proof used any.
    pub strengthening: Annotations,
}

/// Proves what it can of `open` by k-induction, with the step case strengthened by the
/// inductive subset of `candidates` (loop-head conjuncts from other analyses).
pub fn prove_program(p: &Program, open: &[Property], candidates: Annotations, cancel: &Cancel) -> KindResult {
    let Some(sys) = System::new(p, open) else {
        return KindResult::default();
    };
    let mut cands = candidates;
    cands.retain(|(f, n), c| *f == sys.func && sys.index.contains_key(n) && !c.is_empty());
    let strengthening = if cands.is_empty() { Annotations::new() } else { inductive_subset(p, cands, cancel) };
    tracing::debug!(
        "k-induction: {} properties, {} cut points, {} state variables, {} strengthening conjuncts",
        sys.keys.len(),
        sys.cuts.len(),
        sys.vars.len(),
        strengthening.values().map(Vec::len).sum::<usize>()
    );
    let products = has_products(p, &p.reachable_functions(p.start));
    let Some(mut base) = Unrolling::new(&sys, p, Start::Init, cancel) else {
        return KindResult::default();
    };
    let Some(mut step) = Unrolling::new(&sys, p, Start::Free(&strengthening), cancel) else {
        return KindResult::default();
    };
    let mut pending: Vec<PropertyKey> = sys.keys.clone();
    let mut result = KindResult::default();
    for k in 0..=MAX_K {
        if pending.is_empty() || cancel.check().is_err() {
            break;
        }
        while base.depth() < k {
            base.extend();
            step.extend();
        }
        // What is proved holds at every depth of both unrollings.
        base.exclude_proved();
        step.exclude_proved();
        // Base case: no violation in step `k` of a run from the start.
        pending.retain(|key| base.query(&[], key, products, cancel) == Sat::Unsat);
        // Step case: `k` steps without a violation are not followed by one.
        let mut proved_now = Vec::new();
        for key in &pending {
            if cancel.check().is_err() {
                break;
            }
            let before: Vec<Bool> = (0..k as usize).map(|j| step.bad(j, key).not()).collect();
            if step.query(&before, key, products, cancel) == Sat::Unsat {
                proved_now.push(*key);
            }
        }
        if cancel.check().is_err() {
            break;
        }
        if !proved_now.is_empty() {
            tracing::debug!("k-induction: {} properties proved at k = {}", proved_now.len(), k);
            result.k = k;
            pending.retain(|key| !proved_now.contains(key));
            for key in proved_now {
                result.proved.insert(key);
                base.proved.push(key);
                step.proved.push(key);
            }
        }
    }
    if !result.proved.is_empty() {
        result.strengthening = strengthening;
    }
    result
}

/// The transition system of the entry function: its cut points, state variables and the
/// properties it can judge.
struct System {
    func: FuncId,
    /// Cut points; a state's location is the index of one.
    cuts: Vec<NodeId>,
    index: HashMap<NodeId, usize>,
    /// The globals and the function's locals.
    vars: Vec<VarId>,
    /// The properties judged here: targets of the function itself, and of assertion helpers
    /// (without loops) it calls.
    keys: Vec<PropertyKey>,
    /// Target node of each of the function's own properties.
    own_targets: BTreeMap<PropertyKey, NodeId>,
    mods: HashMap<FuncId, BTreeSet<VarId>>,
}

impl System {
    /// The entry function's system, when there is one to judge `open` in: the start function
    /// calls it, nothing else does (a second activation's targets would not be states here),
    /// and it is small enough.
    fn new(p: &Program, open: &[Property]) -> Option<System> {
        let start = p.cfa(p.start);
        let roots: BTreeSet<FuncId> = start.callees().into_iter().collect();
        let func = p.entry.filter(|f| roots.contains(f)).or_else(|| (roots.len() == 1).then(|| *roots.iter().next().expect("one")))?;
        let funcs = p.reachable_functions(p.start);
        let called_elsewhere = funcs.iter().any(|&g| g != p.start && p.cfa(g).callees().contains(&func));
        if called_elsewhere {
            return None;
        }
        let cfa = p.cfa(func);
        let cuts: Vec<NodeId> = cfa
            .node_ids()
            .filter(|&n| cfa.node(n).rpo != u32::MAX)
            .filter(|&n| n == cfa.entry || n == cfa.exit || cfa.node(n).loop_head || cfa.node(n).target.is_some())
            .collect();
        if cuts.len() > MAX_CUTS || !cuts.iter().any(|&n| cfa.node(n).loop_head) {
            return None;
        }
        let index: HashMap<NodeId, usize> = cuts.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        let vars: Vec<VarId> =
            (0..p.globals.len()).map(VarId::global).chain((0..cfa.locals.len()).map(|i| VarId::local(func, i))).collect();
        if vars.len() > MAX_STATE_VARS {
            return None;
        }
        let loop_free = |g: FuncId| !p.cfa(g).loop_heads().any(|n| p.cfa(g).node(n).rpo != u32::MAX);
        let mut keys = Vec::new();
        let mut own_targets = BTreeMap::new();
        for pr in open {
            let k = pr.key;
            match k.site {
                None if k.func == func => {
                    if let Some(&n) = cuts.iter().find(|&&n| cfa.node(n).target == Some(k.target)) {
                        own_targets.insert(k, n);
                        keys.push(k);
                    }
                }
                Some((g, _)) if g == func && p.cfa(k.func).assert_helper && loop_free(k.func) => keys.push(k),
                _ => {}
            }
        }
        if keys.is_empty() {
            return None;
        }
        let mods = funcs.iter().map(|&g| (g, modified_by(p, g))).collect();
        Some(System { func, cuts, index, vars, keys, own_targets, mods })
    }

    fn mods(&self, f: FuncId) -> BTreeSet<VarId> {
        self.mods.get(&f).cloned().unwrap_or_default()
    }

    fn is_cut(&self, p: &Program, n: NodeId) -> bool {
        let cfa = p.cfa(self.func);
        n == cfa.exit || cfa.node(n).loop_head || cfa.node(n).target.is_some()
    }
}

/// Where an unrolling starts.
enum Start<'a> {
    /// The function's entry as the start function calls it.
    Init,
    /// Any cut point and any values that satisfy these invariants (at every state).
    Free(&'a Annotations),
}

/// The step out of one state: its formula (over this state and the next), the next state's
/// SSA versions and location.
struct Step {
    formula: Bool,
    next: HashMap<VarId, u32>,
    next_loc: Int,
}

/// States `0..=depth` and the steps between them, in one encoder and one solver.
struct Unrolling<'s, 'p> {
    sys: &'s System,
    p: &'p Program,
    enc: Encoder<'p>,
    solver: Solver,
    /// Constraints of `enc` given to the solver so far.
    asserted: usize,
    states: Vec<HashMap<VarId, u32>>,
    locs: Vec<Int>,
    /// Per state, once its blocks are encoded: the step out of it, and the conditions of
    /// reaching each helper property's target from it.
    steps: Vec<Option<(Step, BTreeMap<PropertyKey, Bool>)>>,
    /// The strengthening invariants (free unrollings only).
    invariants: Annotations,
    /// Properties proved: their violation is excluded at every state.
    proved: Vec<PropertyKey>,
    excluded: BTreeSet<(usize, PropertyKey)>,
    tag: &'static str,
}

impl<'s, 'p> Unrolling<'s, 'p> {
    fn new(sys: &'s System, p: &'p Program, start: Start, cancel: &Cancel) -> Option<Unrolling<'s, 'p>> {
        let mut enc = Encoder::new(p, Theory::BitVec, false);
        let (state, loc0, tag, invariants) = match start {
            Start::Init => {
                let scfa = p.cfa(p.start);
                let is_cut = |n: NodeId| scfa.node(n).loop_head || n == scfa.exit;
                let mods = |f: FuncId| sys.mods(f);
                let b = encode_block(&mut enc, p, p.start, scfa.entry, &is_cut, &mods, 0);
                let site = b.calls.into_iter().find(|s| s.call.callee == sys.func)?;
                let ssa = bind_params(&mut enc, p, &site);
                enc.constraints.push(site.reach);
                let state: HashMap<VarId, u32> = sys.vars.iter().map(|&v| (v, ssa.get(&v).copied().unwrap_or(0))).collect();
                (state, Some(sys.index[&p.cfa(sys.func).entry]), "b", Annotations::new())
            }
            Start::Free(inv) => {
                enc.cur = HashMap::new();
                for &v in &sys.vars {
                    enc.bump(v, None);
                }
                (enc.cur.clone(), None, "s", inv.clone())
            }
        };
        let mut u = Unrolling {
            sys,
            p,
            enc,
            solver: solver_by_work(cancel, QUERY_MS),
            asserted: 0,
            states: Vec::new(),
            locs: Vec::new(),
            steps: Vec::new(),
            invariants,
            proved: Vec::new(),
            excluded: BTreeSet::new(),
            tag,
        };
        let l0 = Int::new_const(format!("kloc_{}_0", tag));
        let c = match loc0 {
            Some(i) => l0.eq(Int::from_u64(i as u64)),
            // Any cut point but the exit, from which no step leaves.
            None => {
                let exit = sys.index[&p.cfa(sys.func).exit];
                let choices: Vec<Bool> = (0..sys.cuts.len()).filter(|&i| i != exit).map(|i| l0.eq(Int::from_u64(i as u64))).collect();
                let refs: Vec<&Bool> = choices.iter().collect();
                Bool::or(&refs)
            }
        };
        u.enc.constraints.push(c);
        u.push_state(state, l0);
        Some(u)
    }

    fn depth(&self) -> u32 {
        self.states.len() as u32 - 1
    }

    /// Adds a state and, in a free unrolling, the strengthening invariants at its location.
    fn push_state(&mut self, state: HashMap<VarId, u32>, loc: Int) {
        self.enc.cur = state.clone();
        for ((_, n), conj) in &self.invariants {
            let at = loc.eq(Int::from_u64(self.sys.index[n] as u64));
            let terms: Vec<Bool> = conj.iter().map(|e| self.enc.cond(e).0).collect();
            let refs: Vec<&Bool> = terms.iter().collect();
            self.enc.constraints.push(at.implies(Bool::and(&refs)));
        }
        self.states.push(state);
        self.locs.push(loc);
        self.steps.push(None);
    }

    /// Adds state `depth + 1` and asserts the step into it.
    fn extend(&mut self) {
        let i = self.states.len() - 1;
        self.encode_blocks(i);
        let (step, _) = self.steps[i].as_ref().expect("encoded");
        let (formula, next, next_loc) = (step.formula.clone(), step.next.clone(), step.next_loc.clone());
        self.enc.constraints.push(formula);
        self.push_state(next, next_loc);
    }

    /// The violation of `key` at state `i`.
    fn bad(&mut self, i: usize, key: &PropertyKey) -> Bool {
        if let Some(&n) = self.sys.own_targets.get(key) {
            return self.locs[i].eq(Int::from_u64(self.sys.index[&n] as u64));
        }
        self.encode_blocks(i);
        let (_, helpers) = self.steps[i].as_ref().expect("encoded");
        helpers.get(key).cloned().unwrap_or_else(|| Bool::from_bool(false))
    }

    /// Excludes the violations of the proved properties at every state.
    fn exclude_proved(&mut self) {
        for key in self.proved.clone() {
            for i in 0..self.states.len() {
                if self.excluded.insert((i, key)) {
                    let b = self.bad(i, &key).not();
                    self.enc.constraints.push(b);
                }
            }
        }
    }

    /// Whether `before` and the violation of `key` at the last state can hold together.
    fn query(&mut self, before: &[Bool], key: &PropertyKey, products: bool, cancel: &Cancel) -> Sat {
        let last = self.states.len() - 1;
        let bad = self.bad(last, key);
        for c in &self.enc.constraints[self.asserted..] {
            self.solver.assert(c);
        }
        self.asserted = self.enc.constraints.len();
        self.solver.push();
        for b in before {
            self.solver.assert(b);
        }
        self.solver.assert(&bad);
        let r = decide(&self.solver, products, cancel);
        self.solver.pop(1);
        r
    }

    /// Encodes the blocks out of state `i` (once): the step to the next state and the helper
    /// targets they reach. Nothing is asserted of the step here: the base case of state `i`
    /// must not require a step out of it.
    fn encode_blocks(&mut self, i: usize) {
        if self.steps[i].is_some() {
            return;
        }
        let (sys, p) = (self.sys, self.p);
        let cfa = p.cfa(sys.func);
        self.enc.cur = HashMap::new();
        for &v in &sys.vars {
            self.enc.bump(v, None);
        }
        let next = self.enc.cur.clone();
        let next_loc = Int::new_const(format!("kloc_{}_{}", self.tag, i + 1));
        let mut alternatives: Vec<Bool> = Vec::new();
        let mut helpers: BTreeMap<PropertyKey, Vec<Bool>> = BTreeMap::new();
        let is_cut = |n: NodeId| sys.is_cut(p, n);
        let mods = |f: FuncId| sys.mods(f);
        for (ci, &c) in sys.cuts.iter().enumerate() {
            if c == cfa.exit {
                continue;
            }
            let at = self.locs[i].eq(Int::from_u64(ci as u64));
            self.enc.cur = self.states[i].clone();
            let b = encode_block(&mut self.enc, p, sys.func, c, &is_cut, &mods, 0);
            for ex in &b.exits {
                let Some(&d) = sys.index.get(&ex.node) else { continue };
                let mut conj = vec![at.clone(), ex.reach.clone(), next_loc.eq(Int::from_u64(d as u64))];
                for &v in &sys.vars {
                    let from = self.enc.term(v, ex.ssa.get(&v).copied().unwrap_or(0));
                    let to = self.enc.term(v, next[&v]);
                    conj.push(equal(&from, &to));
                }
                let refs: Vec<&Bool> = conj.iter().collect();
                alternatives.push(Bool::and(&refs));
            }
            for site in &b.calls {
                let callee = site.call.callee;
                let wanted: Vec<PropertyKey> =
                    sys.keys.iter().filter(|k| k.func == callee && k.site == Some((sys.func, site.edge))).copied().collect();
                if wanted.is_empty() {
                    continue;
                }
                let hcfa = p.cfa(callee);
                let ssa = bind_params(&mut self.enc, p, site);
                self.enc.cur = ssa;
                let h_cut = |n: NodeId| n == hcfa.exit || hcfa.node(n).loop_head || hcfa.node(n).target.is_some();
                let hb = encode_block(&mut self.enc, p, callee, hcfa.entry, &h_cut, &mods, 0);
                for ex in &hb.exits {
                    let Some(t) = hcfa.node(ex.node).target else { continue };
                    for key in wanted.iter().filter(|k| k.target == t) {
                        helpers.entry(*key).or_default().push(Bool::and(&[&at, &site.reach, &ex.reach]));
                    }
                }
            }
        }
        let refs: Vec<&Bool> = alternatives.iter().collect();
        let step = Step { formula: Bool::or(&refs), next, next_loc };
        let helpers = helpers
            .into_iter()
            .map(|(k, v)| {
                let refs: Vec<&Bool> = v.iter().collect();
                (k, Bool::or(&refs))
            })
            .collect();
        self.steps[i] = Some((step, helpers));
    }
}

/// `a == b` for two terms of one variable.
fn equal(a: &VTerm, b: &VTerm) -> Bool {
    match (a, b) {
        (VTerm::Scalar(x), VTerm::Scalar(y)) => x.eq(y),
        (VTerm::Arr(x), VTerm::Arr(y)) => Array::eq(x, y),
        _ => Bool::from_bool(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many of the properties of a `main` with `body` k-induction proves, of how many,
    /// without strengthening.
    fn proved(body: &str) -> (usize, usize) {
        crate::analyses::proved_in_main(body, |p, open, cancel| prove_program(p, open, Annotations::new(), cancel).proved)
    }

    /// The same, with the step case strengthened by `i >= 2` at every loop head of `main`
    /// (what the template analysis finds there; given here, so that the test does not depend
    /// on how far the template ladder gets in its time).
    fn proved_strengthened(body: &str) -> (usize, usize) {
        crate::analyses::proved_in_main(body, |p, open, cancel| {
            let main = p.entry.expect("main");
            let cfa = p.cfa(main);
            let i = cfa.locals.iter().position(|v| v.name == "i").expect("a local `i`");
            let int = crate::ir::IntTy::INT;
            let at_least_2 = crate::ir::Expr::Binary(
                crate::ir::BinOp::Ge,
                Box::new(crate::ir::Expr::Var(VarId::local(main, i), int)),
                Box::new(crate::ir::Expr::Const(2, int)),
                int,
            );
            let cands: Annotations = cfa.loop_heads().map(|h| ((main, h), vec![at_least_2.clone()])).collect();
            let r = prove_program(p, open, cands, cancel);
            assert!(r.proved.is_empty() || !r.strengthening.is_empty(), "a proof that needed strengthening reports it");
            r.proved
        })
    }

    /// A counter that cycles through 0, 1, 2: the check after the loop is not 0-inductive (a
    /// state with `x == 3` at the loop head leaves it at once) but 1-inductive (no step
    /// leads to `x == 3`).
    const CYCLE: &str = "int x = 0;\nwhile (__VERIFIER_nondet_int()) {\nif (x == 0) x = 1; else if (x == 1) x = 2; else x = 0;\n\
                         __VERIFIER_assert(x != 3);\n}\n__VERIFIER_assert(x <= 2);\n";

    #[test]
    fn a_check_that_needs_one_more_step_is_proved() {
        assert_eq!(proved(CYCLE), (2, 2));
    }

    /// The same cycle through 0 to 6 reaches 5: the base case finds it, nothing is proved.
    #[test]
    fn a_reachable_violation_is_never_proved() {
        let body = "int x = 0;\nwhile (__VERIFIER_nondet_int()) {\nx++;\nif (x >= 7) x = 0;\n}\n__VERIFIER_assert(x != 5);\n";
        assert_eq!(proved(body), (0, 1));
        // Six steps deep in the loop itself: the base case goes that far too.
        let inside = "int x = 0;\nwhile (__VERIFIER_nondet_int()) {\nx++;\n__VERIFIER_assert(x != 6);\nif (x >= 9) x = 0;\n}\n";
        assert_eq!(proved(inside), (0, 1));
        // Violated in the first iteration only: the step case holds at depth 1 (after one
        // iteration `x` is 0 for good), the base case does not.
        let first = "int x = 5;\nwhile (__VERIFIER_nondet_int()) {\n__VERIFIER_assert(x != 5);\nx = 0;\n}\n";
        assert_eq!(proved(first), (0, 1));
    }

    /// `x` is 0 or `2*i - 2`, never `i - 1` once `i >= 2`: the templates' convex invariant
    /// (`2 <= i`, `0 <= x`) does not show it, k-induction alone does not either (from `i == 0`
    /// every depth has a path to the violation), together they do at depth 1.
    const STRENGTHENED: &str = "int n = __VERIFIER_nondet_int();\nif (n > 1000) return 0;\nint i = 2;\nint x = 0;\n\
                                while (i < n) {\n__VERIFIER_assert(x != i - 1);\n\
                                if (__VERIFIER_nondet_int()) x = 0; else x = 2 * i;\ni++;\n}\n";

    #[test]
    fn the_step_case_strengthened_by_loop_invariants_proves_what_neither_does_alone() {
        assert_eq!(proved(STRENGTHENED), (0, 1));
        assert_eq!(proved_strengthened(STRENGTHENED), (1, 1));
    }

    /// A target inside a function the entry calls (not an assertion helper) is not judged
    /// here: that function's activations are not states of the entry function's system.
    #[test]
    fn targets_in_other_functions_are_left_alone() {
        let text = "extern int __VERIFIER_nondet_int(void);\nextern void abort(void);\nvoid reach_error(void) { abort(); }\n\
                    int g;\nvoid f(void) { if (g == 3) { ERROR: reach_error(); } }\n\
                    int main(void) {\nwhile (__VERIFIER_nondet_int()) { g = 1 - g; f(); }\nreturn 0;\n}\n";
        let input = crate::frontend::SourceInput { path: "phase.c".into(), text: text.into() };
        let p = crate::load(&input, crate::cfa::DataModel::Lp64).expect("loads");
        let props = crate::properties::properties(&p);
        assert!(!props.is_empty());
        assert!(prove_program(&p, &props, Annotations::new(), &Cancel::new()).proved.is_empty());
    }
}
