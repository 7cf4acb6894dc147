//! Predicates from the counterexample DAG of the summary analysis, after seed 002 §4.2–§4.3
//! (Esparza, Kiefer, Schwoon, "Abstraction Refinement with Craig Interpolation and Symbolic
//! Pushdown Systems"): all abstract error paths of one round are refined together.
//!
//! The DAG is the witness graph of the tabulation (`summaries`): one node per abstract fact,
//! abstract values dropped, each node with every derivation from earlier facts (so it is
//! acyclic, recursive invocations being distinct facts). A callee's facts are shared by all
//! the invocations that reach them with the same entry valuation: the compressed form of
//! §4.3. Each node gets an unknown relation over the variables in scope at it (the globals
//! and its function's locals, which include the `@entry` copies), each derivation a Horn
//! clause with the concrete relation of its rule (step, push, or eval with the callee's exit
//! relation as the procedure effect), each target `P_t → false`. The system is non-recursive;
//! Spacer's solution is an annotation of the DAG with `{P_m} R {P_n}` on every arc:
//! disjunctions at merge nodes and conjunctions at branch nodes (Prop. 2.10) come with the
//! Horn semantics, the exit relations are the effect predicates `P_<f` relative to the
//! callee's entry. The atoms of each node's solution become predicates of its function.
//!
//! Z3 4.8.12 has no BDD interpolation, so this replaces the paper's strongest/weakest/
//! conciliated computation by Spacer's generalisation (route I1 of seeds-002-003.md C.1);
//! the predicates feed the exact abstraction, whose exhaustion is the proof, so they need
//! no validity check of their own.

use std::collections::{BTreeMap, HashMap};

use z3::ast::{Ast, Bool, Dynamic};
use z3::{FuncDecl, SatResult, Sort};

use crate::analyses::summaries::rules::{encode_eval, enter};
use crate::cfa::{EdgeId, EdgeKind, NodeId, Program};
use crate::core::{Cancel, Op};
use crate::ir::{FuncId, VarId, VarKind};
use crate::smt::encode::{Encoder, Theory, VTerm};
use crate::smt::external::HornAnswer;
use crate::smt::interpolate::{and, symbols_of, SpacerContext};
use crate::smt::linear::{atoms, leaf};
use crate::smt::linpred::{LinPred, Rel};

/// Spacer's limit for one DAG (per encoding).
pub const DAG_MS: u64 = 2_000;

/// How a DAG node was derived (indices of earlier nodes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DagArc {
    /// The program's start.
    Init,
    /// An intraprocedural edge of the node's function from node `.0`.
    Step(usize, EdgeId),
    /// The callee's entry from the caller's node `.0` at its call edge `.1`.
    Call(usize, EdgeId),
    /// After the call edge `edge` of the caller at node `caller`, with the callee's exit node.
    Return { caller: usize, exit: usize, edge: EdgeId },
}

/// One node of a counterexample DAG.
#[derive(Clone, Debug)]
pub struct DagNode {
    pub func: FuncId,
    /// The control point of the node's fact (where its interpolant's atoms are tracked).
    pub node: NodeId,
    pub arcs: Vec<DagArc>,
    /// An error node (the relation implies false).
    pub target: bool,
}

/// The variables a node's relation ranges over: the scalar globals and the scalar locals of
/// its function (arrays are left out: their contents are not carried from one rule to the
/// next, an over-approximation of the DAG).
pub(crate) fn signature(p: &Program, f: FuncId) -> Vec<VarId> {
    let scalar = |v: &VarId| matches!(p.var(*v).kind, VarKind::Int(_));
    let globals = (0..p.globals.len()).map(VarId::global);
    let locals = (0..p.cfa(f).locals.len()).map(|i| VarId::local(f, i));
    globals.chain(locals).filter(scalar).collect()
}

/// The call of the call edge `e` of `f`.
fn call_at(p: &Program, f: FuncId, e: EdgeId) -> Result<&crate::cfa::Call, DagFailure> {
    match &p.cfa(f).edge(e).kind {
        EdgeKind::CallSummary(call) => Ok(call),
        _ => Err(DagFailure::GaveUp("internal error: not a call edge".into())),
    }
}

fn terms(enc: &mut Encoder, sig: &[VarId]) -> Vec<Dynamic> {
    sig.iter()
        .filter_map(|&v| match enc.cur_term(v) {
            VTerm::Scalar(d) => Some(d),
            VTerm::Arr(_) => None,
        })
        .collect()
}

/// The concrete relation of one arc into a node with signature `sig`: the terms of the
/// source node's variables (the caller's, for an eval), of the callee's at its exit (for an
/// eval), of the node's own, and the constraints that relate them (every other symbol is
/// internal to the arc).
pub(crate) struct ArcRel {
    pub src: Vec<Dynamic>,
    pub exit: Vec<Dynamic>,
    pub post: Vec<Dynamic>,
    pub body: Vec<Bool>,
}

/// The node an arc comes from (the caller's node, for an eval).
pub(crate) fn arc_source(arc: &DagArc) -> Option<usize> {
    match *arc {
        DagArc::Init => None,
        DagArc::Step(j, _) | DagArc::Call(j, _) => Some(j),
        DagArc::Return { caller, .. } => Some(caller),
    }
}

/// Encodes `arc` (step, push, or eval with the callee's exit values as the procedure effect).
pub(crate) fn encode_arc(
    p: &Program,
    dag: &[DagNode],
    sigs: &HashMap<FuncId, Vec<VarId>>,
    arc: DagArc,
    sig: &[VarId],
    theory: Theory,
    copies: &dyn Fn(FuncId) -> Vec<(VarId, VarId)>,
) -> Result<ArcRel, DagFailure> {
    let mut enc = Encoder::new(p, theory, false);
    let src = match arc_source(&arc) {
        Some(j) => terms(&mut enc, &sigs[&dag[j].func]),
        None => Vec::new(),
    };
    let mut exit_terms = Vec::new();
    let mut body = Vec::new();
    match arc {
        DagArc::Init => {}
        DagArc::Step(j, e) => {
            let ctx = crate::cfa::op_ctx(p, Op::Edge(dag[j].func, e), false);
            if matches!(ctx.kind, crate::cfa::OpKind::Edge(EdgeKind::CallSummary(_))) {
                return Err(DagFailure::GaveUp("internal error: a call edge taken as a statement".into()));
            }
            enc.op(&ctx);
        }
        DagArc::Call(j, e) => {
            enter(p, &mut enc, call_at(p, dag[j].func, e)?);
        }
        DagArc::Return { caller, exit, edge } => {
            let call = call_at(p, dag[caller].func, edge)?;
            let exit_sig = &sigs[&dag[exit].func];
            body = encode_eval(p, &mut enc, call, &copies(call.callee), &mut |enc| exit_terms = terms(enc, exit_sig));
        }
    }
    let post = terms(&mut enc, sig);
    body.extend(enc.constraints.iter().cloned());
    Ok(ArcRel { src, exit: exit_terms, post, body })
}

/// The atoms of a relation's definition read back from the external solver's text: its
/// parameters named as the in-process solution names them, then parsed by this process's Z3.
fn read_definition(sig: &[VarId], (params, body): &(Vec<String>, String)) -> Vec<Clause> {
    if params.len() != sig.len() {
        return Vec::new();
    }
    let names: Vec<String> = sig.iter().map(|v| format!("v{}_0", v.0)).collect();
    let mut text: String = names.iter().map(|n| format!("(declare-const {} Int)\n", n)).collect();
    if params.is_empty() {
        text.push_str(&format!("(assert {})\n", body));
    } else {
        let binds: Vec<String> = params.iter().zip(&names).map(|(p, n)| format!("({} {})", p, n)).collect();
        text.push_str(&format!("(assert (let ({}) {}))\n", binds.join(" "), body));
    }
    let s = z3::Solver::new();
    s.from_string(text);
    let scope: HashMap<String, (VarId, u32)> = sig.iter().zip(&names).map(|(v, n)| (n.clone(), (*v, 0))).collect();
    let bound = |k: u32| names.get(k as usize).cloned();
    // A literal: a comparison or its negation.
    let literal = |c: &Dynamic| -> Option<LinPred> {
        if c.kind() != z3::AstKind::App {
            return None;
        }
        if c.decl().kind() == z3::DeclKind::Not {
            let (pr, neg) = leaf(&c.children()[0], &scope, &bound)?;
            return with_polarity(pr, !neg);
        }
        let (pr, neg) = leaf(c, &scope, &bound)?;
        with_polarity(pr, neg)
    };
    // The top-level conjuncts that are literals or disjunctions of literals (any other
    // conjunct is left out: fewer candidates, never wrong ones).
    let mut clauses: Vec<Clause> = Vec::new();
    let mut stack: Vec<Dynamic> = s.get_assertions().iter().map(|a| Dynamic::from_ast(a)).collect();
    while let Some(c) = stack.pop() {
        if c.kind() != z3::AstKind::App {
            continue;
        }
        match c.decl().kind() {
            z3::DeclKind::And => stack.extend(c.children()),
            z3::DeclKind::Or => {
                if let Some(mut lits) = c.children().iter().map(literal).collect::<Option<Clause>>() {
                    lits.sort();
                    lits.dedup();
                    clauses.push(lits);
                }
            }
            _ => clauses.extend(literal(&c).map(|l| vec![l])),
        }
    }
    clauses.sort();
    clauses.dedup();
    clauses
}

/// `pred`, or its negation when `negated` (`None` if that is not a predicate: `!=`, `≢`).
fn with_polarity(pred: LinPred, negated: bool) -> Option<LinPred> {
    match (negated, pred.rel) {
        (false, _) => Some(pred),
        (true, Rel::Le) => LinPred::new(pred.terms.iter().map(|&(v, c)| (v, -c)).collect(), 1 - pred.constant, Rel::Le),
        (true, _) => None,
    }
}

/// A disjunction of predicates (a conjunct of a relation's solution).
pub type Clause = Vec<LinPred>;

/// Why a DAG has no solution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DagFailure {
    /// Some path of the DAG is feasible in the integer encodings.
    Feasible,
    /// Spacer gave up (timeout, interruption, an unsupported theory).
    GaveUp(String),
}

/// Per node of `dag`, the atoms of its relation in a solution of the DAG's Horn clauses (on
/// ideal integers; on C's ranges and wrap-around when a path is feasible on ideal integers).
/// An error when there is no solution: some path of the DAG is feasible in both, or Spacer
/// gave up (then the other encoding is not tried: it is no easier). Spacer gets `limit_ms`
/// per encoding. The arcs may form cycles (the whole program's clauses, `analyses::chc`).
pub fn dag_predicates(
    p: &Program,
    dag: &[DagNode],
    copies: &dyn Fn(FuncId) -> Vec<(VarId, VarId)>,
    cancel: &Cancel,
    limit_ms: u64,
) -> Result<Vec<Vec<LinPred>>, DagFailure> {
    let solution = dag_solution(p, dag, copies, cancel, limit_ms, false)?;
    Ok(solution
        .into_iter()
        .map(|node| {
            let mut atoms: Vec<LinPred> = node.into_iter().flatten().collect();
            atoms.sort();
            atoms.dedup();
            atoms
        })
        .collect())
}

/// [`dag_predicates`] with the solution's shape: per node the conjuncts of its relation's
/// solution that are disjunctions of comparisons (from the external solver, whose solution
/// is read as formulas; `external`), or its atoms, each as a clause of its own (from Z3
/// 4.8.12 in this process, whose covers are read as atoms).
pub fn dag_solution(
    p: &Program,
    dag: &[DagNode],
    copies: &dyn Fn(FuncId) -> Vec<(VarId, VarId)>,
    cancel: &Cancel,
    limit_ms: u64,
    external: bool,
) -> Result<Vec<Vec<Clause>>, DagFailure> {
    let external = if external { crate::smt::external::solver_path() } else { None };
    let encodings = [Theory::Int { ranges: false, exact: false, parity: true }, Theory::Int { ranges: true, exact: true, parity: true }];
    for theory in encodings {
        cancel.check().map_err(|i| DagFailure::GaveUp(i.describe()))?;
        match solve(p, dag, theory, copies, cancel, limit_ms, external) {
            Err(DagFailure::Feasible) => continue,
            r => return r,
        }
    }
    Err(DagFailure::Feasible)
}

fn solve(
    p: &Program,
    dag: &[DagNode],
    theory: Theory,
    copies: &dyn Fn(FuncId) -> Vec<(VarId, VarId)>,
    cancel: &Cancel,
    limit_ms: u64,
    external: Option<&std::path::Path>,
) -> Result<Vec<Vec<Clause>>, DagFailure> {
    let t0 = std::time::Instant::now();
    let fp = SpacerContext::new(cancel, limit_ms);
    let sigs: HashMap<FuncId, Vec<VarId>> = dag.iter().map(|n| (n.func, signature(p, n.func))).collect();
    let rels: Vec<FuncDecl> = dag
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let sorts: Vec<Sort> = sigs[&n.func].iter().map(|_| Sort::int()).collect();
            fp.relation(format!("dag_{}", i), &sorts)
        })
        .collect();
    let error = fp.relation("dag_error".into(), &[]);
    let app = |i: usize, args: &[Dynamic]| -> Bool {
        let refs: Vec<&dyn Ast> = args.iter().map(|d| d as &dyn Ast).collect();
        rels[i].apply(&refs).as_bool().expect("a relation")
    };
    let mut rules: Vec<Bool> = Vec::new();
    for (i, node) in dag.iter().enumerate() {
        let sig = &sigs[&node.func];
        for arc in &node.arcs {
            let rel = encode_arc(p, dag, &sigs, *arc, sig, theory, copies)?;
            let mut body = Vec::new();
            let mut args: Vec<Dynamic> = Vec::new();
            if let Some(j) = arc_source(arc) {
                body.push(app(j, &rel.src));
                args.extend(rel.src.iter().cloned());
            }
            if let DagArc::Return { exit, .. } = *arc {
                body.push(app(exit, &rel.exit));
                args.extend(rel.exit.iter().cloned());
            }
            args.extend(rel.post.iter().cloned());
            let mut vars: BTreeMap<String, Dynamic> = symbols_of(&rel.body);
            for d in &args {
                vars.insert(d.decl().name(), d.clone());
            }
            let post = rel.post;
            body.extend(rel.body);
            let rule = and(&body).implies(app(i, &post));
            let bound: Vec<&dyn Ast> = vars.values().map(|d| d as &dyn Ast).collect();
            let rule = if bound.is_empty() { rule } else { z3::ast::forall_const(&bound, &[], &rule) };
            rules.push(rule);
        }
        if node.target {
            let mut enc = Encoder::new(p, theory, false);
            let args = terms(&mut enc, sig);
            let rule = app(i, &args).implies(error.apply(&[]).as_bool().expect("a relation"));
            let bound: Vec<&dyn Ast> = args.iter().map(|d| d as &dyn Ast).collect();
            let rule = if bound.is_empty() { rule } else { z3::ast::forall_const(&bound, &[], &rule) };
            rules.push(rule);
        }
    }
    let clauses = rules.len();
    if let Some(path) = external {
        let decls: Vec<(String, usize)> = dag
            .iter()
            .enumerate()
            .map(|(i, n)| (format!("dag_{}", i), sigs[&n.func].len()))
            .chain([("dag_error".to_string(), 0)])
            .collect();
        let r = crate::smt::external::solve_horn(path, &decls, &rules, "dag_error", cancel, limit_ms);
        tracing::debug!("summaries: {} nodes, {} clauses ({:?}): external Spacer in {:?}", dag.len(), clauses, theory, t0.elapsed());
        return match r {
            Ok(HornAnswer::Derivable) => Err(DagFailure::Feasible),
            Err(why) => Err(DagFailure::GaveUp(why)),
            Ok(HornAnswer::Solved(defs)) => Ok(dag
                .iter()
                .enumerate()
                .map(|(i, node)| defs.get(&format!("dag_{}", i)).map_or_else(Vec::new, |d| read_definition(&sigs[&node.func], d)))
                .collect()),
        };
    }
    for rule in &rules {
        fp.add_rule(rule, None);
    }
    let r = fp.query(&error.apply(&[]).as_bool().expect("a relation"));
    tracing::debug!("summaries: DAG of {} nodes, {} clauses ({:?}): Spacer {:?} in {:?}", dag.len(), clauses, theory, r, t0.elapsed());
    match r {
        SatResult::Unsat => {}
        SatResult::Sat => return Err(DagFailure::Feasible),
        SatResult::Unknown => {
            let why = fp.get_reason_unknown();
            let mut fp = fp;
            fp.leak();
            return Err(DagFailure::GaveUp(format!("Spacer gave up on the counterexample DAG ({})", why)));
        }
    }
    let mut out = Vec::with_capacity(dag.len());
    for (i, node) in dag.iter().enumerate() {
        let sig = &sigs[&node.func];
        let cover = fp.get_cover_delta(-1, &rels[i]).ok_or_else(|| DagFailure::GaveUp("no solution for a node of the DAG".into()))?;
        let names: Vec<String> = sig.iter().map(|v| format!("v{}_0", v.0)).collect();
        let scope: HashMap<String, (VarId, u32)> = sig.iter().zip(&names).map(|(v, n)| (n.clone(), (*v, 0))).collect();
        let mut preds = Vec::new();
        atoms(&Dynamic::from_ast(&cover), &scope, &|k| names.get(k as usize).cloned(), &mut preds);
        preds.sort();
        preds.dedup();
        out.push(preds.into_iter().map(|a| vec![a]).collect());
    }
    Ok(out)
}
