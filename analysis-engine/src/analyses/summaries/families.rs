//! Strongest, weakest and conciliated interpolants of a counterexample DAG of the summary
//! analysis, by quantifier elimination, after seed 002 (Esparza, Kiefer, Schwoon,
//! "Abstraction Refinement with Craig Interpolation and Symbolic Pushdown Systems"):
//!
//! - **strongest** (top-down): a node's formula is the disjunction over its arcs of
//!   `∃ source. (S_source ∧ R)` (Prop. 2.6 and 2.10(i)); at an eval, the caller's formula at
//!   the call and the callee's at its exit are composed (Table 1, `S_m(i+1)` from `S_mi>` and
//!   `S_<f`). A callee's entry is context-free (Table 1: `S_f0` only relates the state to
//!   the entry copies, which the copy edges of `summaries::program` assign), except where the
//!   error is reached inside the call without returning: that call is inlined (§4.3,
//!   "unfinished calls").
//! - **weakest** (bottom-up): an error node's formula is `false`, any other node's the
//!   conjunction over its outgoing arcs of `∀ target. (R → W_target)` (Prop. 2.6 and
//!   2.10(ii)). At an eval, the caller's part uses the callee's strongest effect (`W_mi>`
//!   from `S_<f`), and the callee's exit gets the weakest effect that maps the caller's part
//!   into the formula after the return (`W_<f`), conjoined over every invocation of the
//!   shared exit node (the compressed witness graphs of §4.3).
//! - **conciliated** (top-down again, Prop. 2.8 with Fig. 1): the image of the chosen parent
//!   formulas is conciliated with the node's weakest formula, which drops the variables the
//!   two do not both depend on; the weaker of the conciliated pair is kept.
//!
//! The DAG is spurious exactly when the strongest formula of every error node is
//! unsatisfiable (Prop. 2.6(i)). Formulas are over mathematical integers (linear arithmetic
//! with divisibility, which Z3's `qe` eliminates exactly); semantic supports (Def. 2.11) are
//! one satisfiability query per variable. The atoms of each node's formula, or the formula
//! itself (`Form::Formulas`, as the paper does), become predicates at its control point (see
//! `summaries::precision`); like Spacer's, they feed the exact abstraction, whose exhaustion
//! is the proof, so they need no validity check of their own.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use z3::ast::{Ast, Bool, Dynamic, Int};
use z3::{AstKind, Goal, SatResult, Tactic};

use crate::analyses::summaries::formula::{Form, Pred};
use crate::analyses::summaries::horn::{arc_source, encode_arc, signature, ArcRel, DagArc, DagFailure, DagNode};
use crate::analyses::summaries::interpolants::Kind;
use crate::cfa::Program;
use crate::core::Cancel;
use crate::ir::{FuncId, VarId};
use crate::smt::encode::Theory;
use crate::smt::interpolate::{and, symbols_of};
use crate::smt::linear::atoms;
use crate::smt::linpred::LinPred;

/// Time for the formulas of one DAG.
const FAMILY_MS: u64 = 10_000;

/// Nodes of a DAG whose formulas are computed (larger ones are left to Spacer).
pub const MAX_FAMILY_NODES: usize = 400;

/// Mathematical integers: the formulas only suggest predicates.
const THEORY: Theory = Theory::Int { ranges: false, exact: false, parity: true };

/// Quantifier elimination and satisfiability under one budget.
struct Qe {
    cancel: Cancel,
    queries: u64,
    /// `Supp(f)` as computed (formulas repeat across the nodes of a DAG; Z3 shares equal
    /// terms, so equal formulas are one key).
    supports: HashMap<(Bool, Vec<Dynamic>), BTreeSet<String>>,
}

fn or(fs: &[Bool]) -> Bool {
    let refs: Vec<&Bool> = fs.iter().collect();
    if refs.is_empty() {
        Bool::from_bool(false)
    } else {
        Bool::or(&refs)
    }
}

fn names(ds: &[Dynamic]) -> BTreeSet<String> {
    ds.iter().map(|d| d.decl().name()).collect()
}

/// `f` with `from[k]` replaced by `to[k]`.
fn rename(f: &Bool, from: &[Dynamic], to: &[Dynamic]) -> Bool {
    let pairs: Vec<(&Dynamic, &Dynamic)> = from.iter().zip(to).collect();
    if pairs.is_empty() {
        f.clone()
    } else {
        f.substitute(&pairs)
    }
}

fn has_quantifier(f: &Bool) -> bool {
    let mut stack = vec![Dynamic::from_ast(f)];
    let mut seen = std::collections::HashSet::new();
    while let Some(d) = stack.pop() {
        if !seen.insert(d.clone()) {
            continue;
        }
        match d.kind() {
            AstKind::Quantifier => return true,
            AstKind::App => stack.extend(d.children()),
            _ => {}
        }
    }
    false
}

impl Qe {
    fn out_of_time(&self) -> DagFailure {
        DagFailure::GaveUp(match self.cancel.check() {
            Err(i) => i.describe(),
            Ok(()) => "quantifier elimination failed".into(),
        })
    }

    /// The formula `tactic` reduces `goal` to within the remaining budget: its subgoals are a
    /// disjunction, each the conjunction of its formulas.
    fn apply(&self, tactic: Tactic, goal: &Goal) -> Result<Bool, DagFailure> {
        let ms = self.cancel.remaining_ms().unwrap_or(FAMILY_MS).max(1);
        let res = tactic.try_for(Duration::from_millis(ms)).apply(goal, None).map_err(|_| self.out_of_time())?;
        let parts: Vec<Bool> = res.list_subgoals().map(|g| and(&g.get_formulas())).collect();
        Ok(or(&parts).simplify())
    }

    /// `∃ (symbols of f not in keep). f`, quantifier-free.
    fn project(&mut self, f: &Bool, keep: &BTreeSet<String>) -> Result<Bool, DagFailure> {
        self.cancel.check().map_err(|i| DagFailure::GaveUp(i.describe()))?;
        let bound: Vec<Dynamic> =
            symbols_of(std::slice::from_ref(f)).into_iter().filter(|(n, _)| !keep.contains(n)).map(|(_, d)| d).collect();
        if bound.is_empty() {
            return Ok(f.simplify());
        }
        self.queries += 1;
        let refs: Vec<&dyn Ast> = bound.iter().map(|d| d as &dyn Ast).collect();
        let goal = Goal::new(false, false, false);
        goal.assert(&z3::ast::exists_const(&refs, &[], f));
        let elim =
            Tactic::new("simplify").and_then(&Tactic::new("qe-light")).and_then(&Tactic::new("qe")).and_then(&Tactic::new("simplify"));
        let mut r = self.apply(elim, &goal)?;
        if has_quantifier(&r) {
            // `qe` gives up on some divisibility constraints; model-based projection does not.
            let rest = Goal::new(false, false, false);
            rest.assert(&r);
            r = self.apply(Tactic::new("qe2").and_then(&Tactic::new("simplify")), &rest)?;
        }
        if has_quantifier(&r) {
            return Err(DagFailure::GaveUp("quantifier elimination left a quantifier".into()));
        }
        Ok(r)
    }

    /// `∀ (symbols of f not in keep). f`, quantifier-free.
    fn forall(&mut self, f: &Bool, keep: &BTreeSet<String>) -> Result<Bool, DagFailure> {
        Ok(self.project(&f.not(), keep)?.not().simplify())
    }

    /// Whether `f` is satisfiable (`None`: unknown).
    fn sat(&mut self, f: &Bool) -> Result<Option<bool>, DagFailure> {
        self.cancel.check().map_err(|i| DagFailure::GaveUp(i.describe()))?;
        self.queries += 1;
        let s = crate::smt::solver(&self.cancel, FAMILY_MS);
        s.assert(f);
        Ok(match s.check() {
            SatResult::Sat => Some(true),
            SatResult::Unsat => Some(false),
            SatResult::Unknown => None,
        })
    }

    /// `Supp(f)` among `vars` (Def. 2.11): `v` is in it iff `f ∧ ¬f[v ↦ v′]` is satisfiable
    /// (unknown counts as in it).
    fn support(&mut self, f: &Bool, vars: &[Dynamic]) -> Result<BTreeSet<String>, DagFailure> {
        let key = (f.clone(), vars.to_vec());
        if let Some(s) = self.supports.get(&key) {
            return Ok(s.clone());
        }
        let occurs = symbols_of(std::slice::from_ref(f));
        let mut out = BTreeSet::new();
        for v in vars {
            let name = v.decl().name();
            if !occurs.contains_key(&name) {
                continue;
            }
            let other = Dynamic::fresh_const("supp", &v.get_sort());
            let g = Bool::and(&[f, &rename(f, std::slice::from_ref(v), &[other]).not()]);
            if self.sat(&g)? != Some(false) {
                out.insert(name);
            }
        }
        self.supports.insert(key, out.clone());
        Ok(out)
    }

    /// Fig. 1: the maximal conciliating set of `(i, ¬j)` for `i ⊨ j`, as the pair
    /// `(∃X.i, ∀Y.j)` with a common support.
    fn conciliate(&mut self, i: &Bool, j: &Bool, vars: &[Dynamic]) -> Result<(Bool, Bool), DagFailure> {
        let all = names(vars);
        let (mut i, mut j) = (i.clone(), j.clone());
        let mut si = self.support(&i, vars)?;
        loop {
            let sj = self.support(&j, vars)?;
            if si.difference(&sj).next().is_some() {
                let keep: BTreeSet<String> = si.intersection(&sj).cloned().collect();
                i = self.project(&i, &keep)?;
                si = self.support(&i, vars)?;
            }
            let y: BTreeSet<String> = sj.difference(&si).cloned().collect();
            if y.is_empty() {
                return Ok((i, j));
            }
            let keep: BTreeSet<String> = all.difference(&y).cloned().collect();
            j = self.forall(&j, &keep)?;
        }
    }
}

/// The constant that stands for `v` in a node's formula.
fn canonical(v: VarId) -> Dynamic {
    Dynamic::from_ast(&Int::new_const(format!("dag!{}", v.0)))
}

/// Per node: whether an error node is reached from it within its invocation or deeper
/// (through steps, calls, and from a call to its return, but not from an exit to a return).
/// A call into such a callee entry is inlined (§4.3, unfinished calls).
fn unfinished(dag: &[DagNode]) -> Vec<bool> {
    let mut out: Vec<bool> = dag.iter().map(|n| n.target).collect();
    for i in (0..dag.len()).rev() {
        if !out[i] {
            continue;
        }
        for arc in &dag[i].arcs {
            if let Some(j) = arc_source(arc) {
                out[j] = true;
            }
        }
    }
    out
}

/// The encoded DAG with each node's formula vocabulary.
struct Encoded<'d> {
    dag: &'d [DagNode],
    rels: Vec<Vec<ArcRel>>,
    canon: HashMap<FuncId, Vec<Dynamic>>,
    inline: Vec<bool>,
}

impl Encoded<'_> {
    fn canon(&self, i: usize) -> &[Dynamic] {
        &self.canon[&self.dag[i].func]
    }

    /// Whether the arc contributes to the formulas (a call into a callee that returns does
    /// not: the callee's formulas are relative to its entry).
    fn relevant(&self, i: usize, arc: &DagArc) -> bool {
        match arc {
            DagArc::Init => false,
            DagArc::Call(..) => self.inline[i],
            _ => true,
        }
    }

    /// The disjunction over the arcs into node `i` of the image of the source formulas
    /// `vals` (the caller's and the callee's exit formula, for an eval).
    fn image(&self, qe: &mut Qe, i: usize, vals: &[Bool]) -> Result<Bool, DagFailure> {
        let mut parts = Vec::new();
        for (arc, rel) in self.dag[i].arcs.iter().zip(&self.rels[i]) {
            if !self.relevant(i, arc) {
                return Ok(Bool::from_bool(true));
            }
            let mut conj = Vec::new();
            if let Some(j) = arc_source(arc) {
                conj.push(rename(&vals[j], self.canon(j), &rel.src));
            }
            if let DagArc::Return { exit, .. } = *arc {
                conj.push(rename(&vals[exit], self.canon(exit), &rel.exit));
            }
            conj.extend(rel.body.iter().cloned());
            let g = qe.project(&and(&conj), &names(&rel.post))?;
            parts.push(rename(&g, &rel.post, self.canon(i)));
        }
        Ok(or(&parts).simplify())
    }
}

/// Per node of `dag`, its interpolant of family `kind` as predicates: its atoms, or for
/// `Form::Formulas` the interpolant itself (its atoms if it cannot be one). Errors: some path of
/// the DAG is feasible on mathematical integers (or a callee's formulas mix the contexts of
/// its invocations), or the elimination gave up (time, non-linear arithmetic).
pub fn family_predicates(
    p: &Program,
    dag: &[DagNode],
    copies: &dyn Fn(FuncId) -> Vec<(VarId, VarId)>,
    kind: Kind,
    form: Form,
    cancel: &Cancel,
) -> Result<Vec<Vec<Pred>>, DagFailure> {
    if dag.len() > MAX_FAMILY_NODES {
        return Err(DagFailure::GaveUp(format!("more than {} nodes", MAX_FAMILY_NODES)));
    }
    let t0 = std::time::Instant::now();
    let mut qe = Qe { cancel: cancel.child(Some(Duration::from_millis(FAMILY_MS))), queries: 0, supports: HashMap::new() };
    let sigs: HashMap<FuncId, Vec<VarId>> = dag.iter().map(|n| (n.func, signature(p, n.func))).collect();
    let mut rels = Vec::with_capacity(dag.len());
    for n in dag {
        let sig = &sigs[&n.func];
        rels.push(n.arcs.iter().map(|a| encode_arc(p, dag, &sigs, *a, sig, THEORY, copies)).collect::<Result<Vec<_>, _>>()?);
    }
    let canon = sigs.iter().map(|(f, sig)| (*f, sig.iter().map(|v| canonical(*v)).collect())).collect();
    let enc = Encoded { dag, rels, canon, inline: unfinished(dag) };

    // Strongest, top-down; the DAG is spurious iff no error node is reachable.
    let mut s: Vec<Bool> = Vec::with_capacity(dag.len());
    for i in 0..dag.len() {
        let f = enc.image(&mut qe, i, &s)?;
        s.push(f);
    }
    for (i, n) in dag.iter().enumerate() {
        if n.target && qe.sat(&s[i])? != Some(false) {
            return Err(DagFailure::Feasible);
        }
    }

    // Weakest, bottom-up.
    let mut parts: Vec<Vec<Bool>> = vec![Vec::new(); dag.len()];
    let mut w: Vec<Bool> = vec![Bool::from_bool(true); dag.len()];
    for i in (0..dag.len()).rev() {
        w[i] = if dag[i].target { Bool::from_bool(false) } else { and(&parts[i]).simplify() };
        for (arc, rel) in dag[i].arcs.iter().zip(&enc.rels[i]) {
            if !enc.relevant(i, arc) {
                continue;
            }
            let goal = rename(&w[i], enc.canon(i), &rel.post);
            let body = and(&rel.body);
            match *arc {
                DagArc::Return { caller, exit, .. } => {
                    // The caller at the call, with the callee's strongest effect (W_mi>) ...
                    let effect = rename(&s[exit], enc.canon(exit), &rel.exit);
                    let at_call = qe.forall(&Bool::and(&[&effect, &body]).implies(&goal), &names(&rel.src))?;
                    // ... and the weakest effect that maps it into the return (W_<f).
                    let eff = qe.forall(&Bool::and(&[&at_call, &body]).implies(&goal), &names(&rel.exit))?;
                    parts[caller].push(rename(&at_call, &rel.src, enc.canon(caller)));
                    parts[exit].push(rename(&eff, &rel.exit, enc.canon(exit)));
                }
                _ => {
                    let j = arc_source(arc).expect("a step or call has a source");
                    let pre = qe.forall(&body.implies(&goal), &names(&rel.src))?;
                    parts[j].push(rename(&pre, &rel.src, enc.canon(j)));
                }
            }
        }
    }

    let chosen: Vec<Bool> = match kind {
        Kind::Strongest => s,
        Kind::Weakest => w,
        Kind::Conciliated => {
            let mut out: Vec<Bool> = Vec::with_capacity(dag.len());
            for (i, wi) in w.iter().enumerate().take(dag.len()) {
                let a = enc.image(&mut qe, i, &out)?;
                let (_, j) = qe.conciliate(&a, wi, enc.canon(i))?;
                out.push(j);
            }
            out
        }
    };
    let mut out = Vec::with_capacity(dag.len());
    for (i, f) in chosen.iter().enumerate() {
        let sig = &sigs[&dag[i].func];
        let scope: HashMap<String, (VarId, u32)> = sig.iter().map(|v| (canonical(*v).decl().name(), (*v, 0))).collect();
        if form == Form::Formulas {
            // Z3's `simplify` keeps redundant parts (`x <= y - 1 || x <= y - 2`).
            let goal = Goal::new(false, false, false);
            goal.assert(f);
            let f = &qe.apply(Tactic::new("ctx-solver-simplify"), &goal).unwrap_or_else(|_| f.clone());
            if let Some(whole) = Pred::from_formula(f, &scope) {
                out.push(vec![whole]);
                continue;
            }
        }
        let mut preds: Vec<LinPred> = Vec::new();
        atoms(&Dynamic::from_ast(f), &scope, &|_| None, &mut preds);
        preds.sort();
        preds.dedup();
        out.push(preds.into_iter().map(Pred::from).collect());
    }
    tracing::debug!("summaries: {:?} interpolants of a DAG of {} nodes: {} queries in {:?}", kind, dag.len(), qe.queries, t0.elapsed());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cfa::{EdgeId, NodeId};

    fn node(func: u32, arcs: Vec<DagArc>, target: bool) -> DagNode {
        DagNode { func: FuncId(func), node: NodeId(0), arcs, target }
    }

    /// main calls f, which returns; the error is in main after the call: the call returns,
    /// so f's formulas stay relative to its entry. With a second error inside f, reached
    /// from its entry, the call is unfinished and inlined.
    #[test]
    fn calls_that_reach_the_error_inside_are_unfinished() {
        let (call, step) = (EdgeId(0), EdgeId(1));
        let mut dag = vec![
            node(0, vec![DagArc::Init], false),
            node(1, vec![DagArc::Call(0, call)], false),
            node(1, vec![DagArc::Step(1, step)], false),
            node(0, vec![DagArc::Return { caller: 0, exit: 2, edge: call }], false),
            node(0, vec![DagArc::Step(3, step)], true),
        ];
        assert_eq!(unfinished(&dag), vec![true, false, false, true, true]);
        dag.push(node(1, vec![DagArc::Step(1, step)], true));
        assert_eq!(unfinished(&dag), vec![true, true, false, true, true, true]);
    }
}
