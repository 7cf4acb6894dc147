//! The template analysis: loop invariants by local policy iteration over template domains
//! (seed 004: E. G. Karpenkov, D. Monniaux, P. Wendler, *Program Analysis with Local Policy
//! Iteration*, VMCAI 2016; §3 the algorithm, §4 its extensions; `seeds-000-004.md` part B).
//!
//! - `templates.rs`: the precision (linear templates: intervals, octagons, rich, from source);
//! - `block.rs`: abstraction points and the transfer relation on intermediate states (one
//!   loop-free block per point, calls inlined);
//! - `state.rs`: abstracted states with policies and backpointers, join and preorder;
//! - `lpi.rs`: policy improvement by OPT-SMT, merge, stop, local value determination;
//! - `check.rs`: the independent bit-precise inductiveness check and the property check;
//! - `loops.rs`: loop bodies, nesting and liveness.
//!
//! [`template_invariants`] runs one configuration or the paper's ladder (intervals →
//! octagons → unrolling → rich templates → congruence, each step only while a property is
//! unproved) and returns per loop head an invariant checked inductive, the properties it
//! proves and statistics. [`verify_templates`] wraps it as a [`Report`] (`--analysis
//! templates`). The analysis never reports a violation: it proves or stays silent.
//!
//! Semantics: variables are C integers in their type's range, arithmetic wraps around as in
//! C (signed overflow too, the engine's model), and templates are read over mathematical
//! integers. Invariants are what the bit-precise check accepted; nothing rests on the
//! optimiser alone.

pub mod block;
pub mod check;
pub mod loops;
pub mod lpi;
pub mod optimize;
pub mod state;
pub mod templates;

pub use crate::config::TemplateMode;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::analyses::template::optimize::CheckSmt;
use crate::cfa::{NodeId, Program, SrcRange};
use crate::core::Cancel;
use crate::ir::{BinOp, Expr, FuncId, IntTy, VarId};
use crate::properties::{properties, PropertyKey};
use crate::report::outcome::FoundInvariant;
use crate::report::{InvariantSource, UnknownReason};
pub use block::Blocks;
use state::Conj;
pub use templates::{Families, LinearForm};

/// One configuration of the analysis (a rung of the paper's ladder).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub name: &'static str,
    pub families: Families,
    /// Iterations of each loop kept apart before they are joined (the paper uses 2).
    pub unroll: u8,
    /// Parity tracking, conjoined to every optimisation query.
    pub congruence: bool,
    /// The syntactic skip of §4 (templates a block does not touch keep their bound without a
    /// query). Off reproduces the query counts of the paper's Example 3.
    pub syntactic_skip: bool,
}

const NONE: Families = Families { upper: false, intervals: false, octagons: false, rich: false, source: false };

impl Step {
    /// Upper bounds `x <= d` only and no §4 optimisations: the setting of the paper's
    /// Examples 1 and 3.
    pub const UPPER: Step =
        Step { name: "upper", families: Families { upper: true, ..NONE }, unroll: 0, congruence: false, syntactic_skip: false };
    pub const INTERVALS: Step =
        Step { name: "intervals", families: Families { intervals: true, ..NONE }, unroll: 0, congruence: false, syntactic_skip: true };
    pub const OCTAGONS: Step = Step {
        name: "octagons",
        families: Families { intervals: true, octagons: true, source: true, ..NONE },
        unroll: 0,
        congruence: false,
        syntactic_skip: true,
    };
    pub const UNROLLING: Step = Step { name: "unrolling", unroll: 2, ..Step::OCTAGONS };
    pub const RICH: Step = Step { name: "rich", families: Families { rich: true, ..Step::OCTAGONS.families }, ..Step::UNROLLING };
    pub const CONGRUENCE: Step = Step { name: "congruence", congruence: true, ..Step::RICH };
    /// The ladder of seed 004 §4 "Abstraction Refinement for LPI".
    pub const LADDER: [Step; 5] = [Step::INTERVALS, Step::OCTAGONS, Step::UNROLLING, Step::RICH, Step::CONGRUENCE];
}

/// Everything a run of the template analysis depends on besides the program.
#[derive(Clone, Debug)]
pub struct TemplateConfig {
    /// Configurations tried in order; a step runs only while a property is unproved (the
    /// first always runs, so that loops get invariants).
    pub steps: Vec<Step>,
    pub blocks: Blocks,
    /// Limit of one optimisation or satisfiability query.
    pub query_ms: u64,
    /// Points taken from the worklist at most, per step.
    pub max_iterations: u64,
}

impl TemplateConfig {
    /// The configuration `--analysis` names.
    pub fn for_mode(mode: TemplateMode) -> TemplateConfig {
        let steps = match mode {
            TemplateMode::Ladder => Step::LADDER.to_vec(),
            TemplateMode::Upper => vec![Step::UPPER],
            TemplateMode::Intervals => vec![Step::INTERVALS],
            TemplateMode::Octagons => vec![Step::OCTAGONS],
            TemplateMode::Unrolling => vec![Step::UNROLLING],
            TemplateMode::Rich => vec![Step::RICH],
            TemplateMode::Congruence => vec![Step::CONGRUENCE],
        };
        TemplateConfig { steps, ..TemplateConfig::ladder() }
    }

    pub fn ladder() -> TemplateConfig {
        TemplateConfig { steps: Step::LADDER.to_vec(), blocks: Blocks::LoopHeads, query_ms: 10_000, max_iterations: 4_000 }
    }
}

/// An invariant at one loop head, checked inductive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopInvariant {
    pub func: FuncId,
    pub node: NodeId,
    /// The loop's head in the source.
    pub range: SrcRange,
    /// `form <= bound` over mathematical integers (redundant and trivial ones left out).
    pub constraints: Vec<(LinearForm, i128)>,
    /// `var ≡ r (mod 2)`.
    pub parity: Vec<(VarId, u8)>,
    /// The conjuncts as IR conditions with C's semantics, where one says exactly the same
    /// (see [`templates::constraint_expr`]); for other analyses to use as predicates.
    pub exprs: Vec<Expr>,
    /// The invariant as a C expression.
    pub text: String,
}

impl LoopInvariant {
    /// The invariant as an analysis outcome carries it.
    pub fn found(&self) -> FoundInvariant {
        FoundInvariant { func: self.func, range: self.range.clone(), expr: self.text.clone(), source: InvariantSource::Lpi }
    }
}

/// Counters of a run (summed over ladder steps).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TemplateStats {
    /// `Optimize` queries: one per template per abstraction, one per objective of value
    /// determination.
    pub lp_queries: u64,
    pub value_determinations: u64,
    /// Abstractions that ran optimisation queries.
    pub abstractions: u64,
    /// Successors the stop operator found covered (one satisfiability query each).
    pub covered: u64,
    /// Worklist iterations.
    pub iterations: u64,
    /// Plain queries of the iteration (coverage, confirmations of bounds, parity).
    pub sat_queries: u64,
    /// Queries of the independent bit-precise check.
    pub check_queries: u64,
    /// Bounds dropped because a query gave no answer or the confirmation failed.
    pub dropped_bounds: u64,
    /// Abstraction points and templates of the last step.
    pub points: u64,
    pub templates: u64,
}

/// What one ladder step ended with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepReport {
    pub name: &'static str,
    pub proved: usize,
    pub time_ms: u64,
    /// Why the step gave no result, or stopped early.
    pub note: Option<String>,
}

/// The result of [`template_invariants`].
#[derive(Clone, Debug, Default)]
pub struct TemplateResult {
    /// Per loop head, in source order (from the last step whose check succeeded).
    pub invariants: Vec<LoopInvariant>,
    /// Properties proved (by any step).
    pub proved: BTreeSet<PropertyKey>,
    /// Properties not proved, with the reason (from the last step run).
    pub unproved: BTreeMap<PropertyKey, UnknownReason>,
    pub stats: TemplateStats,
    pub steps: Vec<StepReport>,
}

/// Runs local policy iteration with the configured ladder and checks what it finds.
pub fn template_invariants(program: &Program, cfg: &TemplateConfig, cancel: &Cancel) -> TemplateResult {
    crate::smt::interruptible(cancel, || run_ladder(program, cfg, cancel))
}

fn run_ladder(p: &Program, cfg: &TemplateConfig, cancel: &Cancel) -> TemplateResult {
    let props = properties(p);
    let facts = lpi::Facts::new(p);
    let mut res = TemplateResult::default();
    // Shares of the time left: the first step (the cheapest, and the one whose invariants the
    // editor shows) half of it, the others equal shares of what is left after each. A step
    // that suffices ends early and leaves its time to the next (most proofs need only the
    // first steps, seed 004 Fig. 3a); an interrupted step gives no result at all.
    let first = cfg.steps.first().copied();
    let weight = |s: &Step| if Some(*s) == first { (cfg.steps.len() as u32).saturating_sub(1).max(1) } else { 1 };
    for (i, step) in cfg.steps.iter().enumerate() {
        if i > 0 && props.iter().all(|pr| res.proved.contains(&pr.key)) {
            break;
        }
        if cancel.check().is_err() {
            break;
        }
        let left: u32 = cfg.steps[i..].iter().map(weight).sum();
        let budget = cancel.remaining_ms().map(|ms| Duration::from_millis(ms * weight(step) as u64 / left.max(1) as u64));
        let step_cancel = cancel.child(budget);
        let t0 = Instant::now();
        let out = run_step(p, &facts, cfg, *step, &step_cancel, cancel, &props);
        // A reason given while the step's time ran out depends on the machine.
        let interrupted = step_cancel.check().err();
        let reason = |text: String| match &interrupted {
            Some(i) => UnknownReason::Interrupted { by: i.clone(), detail: text },
            None => UnknownReason::NotProved(text),
        };
        res.stats.lp_queries += out.stats.lp_queries;
        res.stats.value_determinations += out.stats.value_determinations;
        res.stats.abstractions += out.stats.abstractions;
        res.stats.covered += out.stats.covered;
        res.stats.iterations += out.stats.iterations;
        res.stats.sat_queries += out.stats.sat_queries;
        res.stats.check_queries += out.stats.check_queries;
        res.stats.dropped_bounds += out.stats.dropped_bounds;
        res.stats.points = out.stats.points;
        res.stats.templates = out.stats.templates;
        let mut note = out.note.clone();
        match out.checked {
            Some((invariants, proved, unproved)) => {
                res.proved.extend(proved.iter().copied());
                res.unproved = unproved.into_iter().filter(|(k, _)| !res.proved.contains(k)).map(|(k, why)| (k, reason(why))).collect();
                res.invariants = invariants;
                res.steps.push(StepReport {
                    name: step.name,
                    proved: proved.len(),
                    time_ms: t0.elapsed().as_millis() as u64,
                    note: note.take(),
                });
            }
            None => {
                for pr in &props {
                    if !res.proved.contains(&pr.key) {
                        res.unproved.insert(pr.key, reason(note.clone().unwrap_or_else(|| "no result".into())));
                    }
                }
                res.steps.push(StepReport { name: step.name, proved: 0, time_ms: t0.elapsed().as_millis() as u64, note });
            }
        }
    }
    res
}

/// What a step's check kept: the invariants, the properties proved, the others with why.
type Checked = (Vec<LoopInvariant>, BTreeSet<PropertyKey>, BTreeMap<PropertyKey, String>);

struct StepOutcome {
    stats: TemplateStats,
    /// Why the step stopped early or failed.
    note: Option<String>,
    checked: Option<Checked>,
}

fn run_step(
    p: &Program,
    facts: &lpi::Facts,
    cfg: &TemplateConfig,
    step: Step,
    cancel: &Cancel,
    overall: &Cancel,
    props: &[crate::properties::Property],
) -> StepOutcome {
    let mut lpi = lpi::Lpi::new(p, facts, step, cfg.blocks, cancel.clone(), cfg.query_ms);
    let run = lpi.run(cfg.max_iterations);
    let mut stats = TemplateStats {
        lp_queries: lpi.smt.stats.lp_queries,
        value_determinations: lpi.stats.value_determinations,
        abstractions: lpi.stats.abstractions,
        covered: lpi.stats.covered,
        iterations: lpi.stats.iterations,
        sat_queries: lpi.smt.stats.sat_queries,
        dropped_bounds: lpi.smt.stats.gave_up,
        points: lpi.points.iter().filter(|pt| pt.state.is_some()).count() as u64,
        templates: lpi.points.iter().filter(|pt| pt.state.is_some()).map(|pt| pt.templates.len() as u64).sum(),
        ..Default::default()
    };
    let mut note = run.err();
    // The check runs under the whole run's deadline, not the step's: it is what turns the
    // step's candidates into results.
    let check_cancel = overall.clone();
    let mut chk = CheckSmt::new(p, facts.mods.clone(), check_cancel.clone(), cfg.query_ms);
    let cands = check::candidates(&lpi);
    let inv = match check::houdini(&mut lpi, &mut chk, cands, &check_cancel) {
        Ok(a) => a,
        Err(why) => {
            stats.check_queries = chk.queries;
            let why = match note {
                Some(n) => format!("{}; {}", n, why),
                None => why,
            };
            return StepOutcome { stats, note: Some(why), checked: None };
        }
    };
    let (ok, failed) = check::targets(&mut lpi, &mut chk, &inv, &check_cancel);
    // Properties in code the analysis did not enter (recursion, deep calls) stay unknown.
    let mut unexplored: BTreeSet<FuncId> = BTreeSet::new();
    for (pid, c) in &inv {
        if c.as_slice() == [Conj::False] {
            continue;
        }
        for &f in &lpi.block(*pid).summarized {
            unexplored.extend(p.reachable_functions(f));
        }
    }
    let mut proved = BTreeSet::new();
    let mut unproved = BTreeMap::new();
    for pr in props {
        let k = pr.key;
        if unexplored.contains(&k.func) || k.site.is_some_and(|(f, _)| unexplored.contains(&f)) {
            unproved.insert(k, "the template analysis does not enter recursive calls".to_string());
        } else if let Some(why) = failed.get(&k) {
            unproved.insert(k, why.clone());
        } else {
            // Shown unreachable from every point whose block contains it, or in no block of
            // a reached point at all (the annotation covers every execution).
            debug_assert!(ok.contains(&k) || !failed.contains_key(&k));
            proved.insert(k);
        }
    }
    // What is shown per loop head: the join over its points (calling contexts, unrolled
    // iterations), checked inductive once more when that join differs from the annotation.
    let report_inv = match report_annotation(&lpi, &inv) {
        None => inv.clone(),
        Some(joined) => match check::houdini(&mut lpi, &mut chk, joined, &check_cancel) {
            Ok(a) => a,
            Err(why) => {
                note.get_or_insert(why);
                BTreeMap::new()
            }
        },
    };
    stats.check_queries = chk.queries;
    let invariants = loop_invariants(p, &lpi, &report_inv);
    StepOutcome { stats, note, checked: Some((invariants, proved, unproved)) }
}

/// Points grouped by CFA loop head.
fn groups(lpi: &lpi::Lpi, inv: &check::Annotation) -> BTreeMap<(FuncId, NodeId), Vec<state::PointId>> {
    let mut g: BTreeMap<(FuncId, NodeId), Vec<state::PointId>> = BTreeMap::new();
    for (&pid, c) in inv {
        if c.as_slice() == [Conj::False] {
            continue;
        }
        let k = &lpi.points[pid as usize].key;
        if lpi.p.cfa(k.func).node(k.node).loop_head {
            g.entry((k.func, k.node)).or_default().push(pid);
        }
    }
    g
}

/// Conjuncts every point of a group agrees on (the larger bound of each template).
fn join_group(inv: &check::Annotation, pts: &[state::PointId]) -> Vec<Conj> {
    let mut out: Vec<Conj> = Vec::new();
    let Some(first) = pts.first() else { return out };
    for c in &inv[first] {
        match c {
            Conj::Le(f, _) => {
                let mut best: Option<i128> = Some(i128::MIN);
                for q in pts {
                    let b = inv[q].iter().find_map(|x| match x {
                        Conj::Le(g, d) if g == f => Some(*d),
                        _ => None,
                    });
                    best = match (best, b) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        _ => None,
                    };
                }
                if let Some(d) = best {
                    if !out.contains(&Conj::Le(f.clone(), d)) {
                        out.push(Conj::Le(f.clone(), d));
                    }
                }
            }
            Conj::Parity(..) => {
                if pts.iter().all(|q| inv[q].contains(c)) {
                    out.push(c.clone());
                }
            }
            Conj::False => {}
        }
    }
    out
}

/// The annotation where each loop head's points carry their group's join, if that differs.
fn report_annotation(lpi: &lpi::Lpi, inv: &check::Annotation) -> Option<check::Annotation> {
    let mut out = inv.clone();
    let mut changed = false;
    for pts in groups(lpi, inv).values() {
        if pts.len() < 2 {
            continue;
        }
        let j = join_group(inv, pts);
        for q in pts {
            if out[q] != j {
                changed = true;
                out.insert(*q, j.clone());
            }
        }
    }
    changed.then_some(out)
}

/// The invariants per loop head, simplified for reading.
fn loop_invariants(p: &Program, lpi: &lpi::Lpi, inv: &check::Annotation) -> Vec<LoopInvariant> {
    let mut out = Vec::new();
    for ((f, node), pts) in groups(lpi, inv) {
        // Conjuncts every point keeps (each is part of an annotation checked inductive).
        let common: Vec<Conj> = inv[&pts[0]].iter().filter(|c| pts.iter().all(|q| inv[q].contains(c))).cloned().collect();
        let (constraints, parity) = simplify(p, &common);
        if constraints.is_empty() && parity.is_empty() {
            continue;
        }
        let func = p.func(f);
        let mut exprs = Vec::new();
        for (form, d) in &constraints {
            if let Some(e) = templates::constraint_expr(p, form, *d) {
                exprs.push(e);
            }
        }
        for &(v, r) in &parity {
            exprs.push(parity_expr(p, v, r));
        }
        let text = render(p, &constraints, &parity);
        out.push(LoopInvariant { func: f, node, range: func.abs(func.cfa.node(node).span), constraints, parity, exprs, text });
    }
    out.sort_by_key(|a| (a.range.line, a.range.col));
    out
}

fn parity_expr(p: &Program, v: VarId, r: u8) -> Expr {
    let t = p.var(v).int_ty();
    let pt = t.promote();
    let x = Expr::Var(v, t).cast(pt);
    let rem = Expr::Binary(BinOp::Rem, Box::new(x), Box::new(Expr::Const(2, pt)), pt);
    Expr::Binary(if r == 0 { BinOp::Eq } else { BinOp::Ne }, Box::new(rem), Box::new(Expr::Const(0, pt)), IntTy::INT)
}

/// Drops constraints the variables' types imply and relational constraints the interval
/// constraints imply (the result is equivalent to the input).
/// Constraints `form <= bound` and parities `var ≡ r (mod 2)`.
type Simplified = (Vec<(LinearForm, i128)>, Vec<(VarId, u8)>);

fn simplify(p: &Program, conj: &[Conj]) -> Simplified {
    let mut cons: Vec<(LinearForm, i128)> = Vec::new();
    let mut parity = Vec::new();
    for c in conj {
        match c {
            Conj::Le(f, d) => {
                if *d < f.range(p).1 && !cons.iter().any(|(g, e)| g == f && e <= d) {
                    cons.retain(|(g, _)| g != f);
                    cons.push((f.clone(), *d));
                }
            }
            Conj::Parity(v, r) => parity.push((*v, *r)),
            Conj::False => {}
        }
    }
    // The box the interval constraints give.
    let mut lo: BTreeMap<VarId, i128> = BTreeMap::new();
    let mut hi: BTreeMap<VarId, i128> = BTreeMap::new();
    for (f, d) in &cons {
        if let [(v, c)] = f.terms[..] {
            if c == 1 {
                hi.insert(v, *d);
            } else if c == -1 {
                lo.insert(v, -*d);
            }
        }
    }
    let box_max = |f: &LinearForm| -> i128 {
        f.terms
            .iter()
            .map(|&(v, c)| {
                let t = p.var(v).int_ty();
                let (l, h) = (lo.get(&v).copied().unwrap_or(t.min()), hi.get(&v).copied().unwrap_or(t.max()));
                (l * c as i128).max(h * c as i128)
            })
            .sum()
    };
    cons.retain(|(f, d)| f.terms.len() == 1 || box_max(f) > *d);
    cons.sort_by(|a, b| {
        let ka = (a.0.canonical().0, a.0.terms.len());
        let kb = (b.0.canonical().0, b.0.terms.len());
        (ka.1, ka.0, a.0.terms[0].1 < 0).cmp(&(kb.1, kb.0, b.0.terms[0].1 < 0))
    });
    parity.sort();
    parity.dedup();
    (cons, parity)
}

/// C text: `lo <= t && t <= hi`, `t == v`, `x % 2 == 0`.
fn render(p: &Program, cons: &[(LinearForm, i128)], parity: &[(VarId, u8)]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut done: BTreeSet<usize> = BTreeSet::new();
    for (i, (f, d)) in cons.iter().enumerate() {
        if done.contains(&i) {
            continue;
        }
        done.insert(i);
        let (canon, sign) = f.canonical();
        let scale = f.terms[0].1.abs() / canon.terms[0].1.abs();
        // Bounds on the canonical form: an upper one from `f` if sign > 0, a lower one else.
        let mut upper: Option<i128> = None;
        let mut lower: Option<i128> = None;
        let mut note = |sign: i64, scale: i64, d: i128| {
            if sign > 0 {
                let u = d.div_euclid(scale as i128);
                upper = Some(upper.map_or(u, |x: i128| x.min(u)));
            } else {
                let l = -(d.div_euclid(scale as i128));
                lower = Some(lower.map_or(l, |x: i128| x.max(l)));
            }
        };
        note(sign, scale, *d);
        for (j, (g, e)) in cons.iter().enumerate() {
            if done.contains(&j) {
                continue;
            }
            let (c2, s2) = g.canonical();
            if c2 == canon {
                done.insert(j);
                let sc2 = g.terms[0].1.abs() / c2.terms[0].1.abs();
                note(s2, sc2, *e);
            }
        }
        let t_in = canon.display(p);
        match (lower, upper) {
            (Some(l), Some(u)) if l == u => parts.push(format!("{} == {}", t_in, u)),
            (Some(l), Some(u)) => parts.push(format!("{} <= {} && {} <= {}", l, t_in, t_in, u)),
            (Some(l), None) => parts.push(format!("{} >= {}", t_in, l)),
            (None, Some(u)) => parts.push(format!("{} <= {}", t_in, u)),
            (None, None) => {}
        }
    }
    for &(v, r) in parity {
        parts.push(format!("{} % 2 {} 0", p.var_name(v), if r == 0 { "==" } else { "!=" }));
    }
    parts.join(" && ")
}
