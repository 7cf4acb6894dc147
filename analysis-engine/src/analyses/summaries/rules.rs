//! Abstract rules of the Boolean program of the summary analysis (seed 002 §5, "Computing the
//! abstract SPDS"): the exact existential abstraction `Abs([src] ∧ R ∧ [dst])` of one rule
//! with respect to the predicates of its source and target, computed by enumerating the
//! models' predicate valuations (route I9 of seeds-002-003.md part C.1) instead of a BDD
//! relational product over bit-blasted variables.
//!
//! Three kinds of rules, as in the paper's push/eval/pop split:
//! - intraprocedural edges (`EdgeRule`, prepared once per precision; `edge_image`);
//! - push (`call_image`): the callee's valuations at its entry from the caller's at the call;
//! - eval (`return_image`): the caller's valuations after the call from its valuation at the
//!   call and one valuation of the callee's exit. The callee's predicates are relative to its
//!   entry values (the `@entry` copies), which the call binds to the arguments and to the
//!   globals at the call: that is the paper's effect predicate `P_<f(G_fin, L_fin, G')`.
//!
//! Everything is encoded on exact integers (C's wrap-around included, bit operations
//! over-approximated), in the over-approximating mode of the encoder: an abstraction that
//! over-approximates can cost precision, never soundness.

use z3::ast::Bool;
use z3::SatResult;

use crate::analyses::summaries::formula::Pred;
use crate::cfa::OpKind;
use crate::cfa::{EdgeKind, Program};
use crate::core::{Cancel, Op};
use crate::ir::{FuncId, LValue, VarId, VarKind};
use crate::smt::encode::{Encoder, Obs, Term, Theory, VTerm};
use crate::smt::linpred::LinPred;
use crate::smt::solver;

/// Per-query limit.
const QUERY_MS: u64 = 5_000;

/// Most valuations one image enumerates before giving up.
pub const MAX_VALUATIONS: usize = 4096;

/// A valuation of a function's predicates: bit `i` is the truth of predicate `i`.
pub type Valuation = u64;

/// The outcome of one abstract image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Image {
    /// Every valuation of the target's predicates some concrete step reaches.
    Valuations(Vec<Valuation>),
    /// The solver gave up (or too many valuations): no sound result.
    GaveUp(String),
}

fn theory() -> Theory {
    Theory::Int { ranges: true, exact: true, parity: true }
}

/// `[val]` over the current versions of the encoder: the conjunction of the predicates'
/// literals. Predicates the encoding cannot state (arrays) are left out (over-approximation).
fn valuation_formula(enc: &mut Encoder, preds: &[Pred], val: Valuation) -> Bool {
    let ssa = enc.cur.clone();
    let mut lits = Vec::new();
    for (i, p) in preds.iter().enumerate() {
        if let Some(f) = p.encode(enc, &ssa) {
            lits.push(if val >> i & 1 == 1 { f } else { f.not() });
        }
    }
    let refs: Vec<&Bool> = lits.iter().collect();
    if refs.is_empty() {
        Bool::from_bool(true)
    } else {
        Bool::and(&refs)
    }
}

/// Enumerates the valuations of `preds` (at the encoder's current versions) that the
/// encoder's constraints and `extra` allow.
fn enumerate(enc: &mut Encoder, extra: &[Bool], preds: &[Pred], cancel: &Cancel) -> Image {
    let ssa = enc.cur.clone();
    let lits: Vec<Option<Bool>> = preds.iter().map(|p| p.encode(enc, &ssa)).collect();
    let s = solver(cancel, QUERY_MS);
    for c in &enc.constraints {
        s.assert(c);
    }
    for c in extra {
        s.assert(c);
    }
    let marks: Vec<Bool> = (0..preds.len()).map(|i| Bool::new_const(format!("summary_mark_{}", i))).collect();
    for (m, l) in marks.iter().zip(&lits) {
        if let Some(l) = l {
            s.assert(m.eq(l));
        }
    }
    let mut out = Vec::new();
    loop {
        if out.len() > MAX_VALUATIONS {
            return Image::GaveUp(format!("more than {} abstract valuations at one step", MAX_VALUATIONS));
        }
        let t0 = std::time::Instant::now();
        let r = s.check();
        if t0.elapsed().as_millis() > 200 {
            tracing::debug!("summaries: slow abstract step ({:?}, {} valuations so far): {:?}", r, out.len(), t0.elapsed());
        }
        match r {
            SatResult::Unsat => return Image::Valuations(out),
            SatResult::Unknown => {
                let why = s.get_reason_unknown().unwrap_or_else(|| "unknown".into());
                return every_valuation(preds.len(), &why);
            }
            SatResult::Sat => {}
        }
        let Some(model) = s.get_model() else { return Image::GaveUp("no model".into()) };
        let mut val: Valuation = 0;
        let mut block = Vec::new();
        for (i, m) in marks.iter().enumerate() {
            let b = model.eval(m, true).and_then(|b| b.as_bool()).unwrap_or(false);
            if b {
                val |= 1 << i;
            }
            block.push(if b { m.not() } else { m.clone() });
        }
        out.push(val);
        let refs: Vec<&Bool> = block.iter().collect();
        if refs.is_empty() {
            return Image::Valuations(out);
        }
        s.assert(Bool::or(&refs));
    }
}

/// Whether predicate `a` adds no abstract Boolean over C's values: it is constant, or it is
/// one Boolean with a predicate of `known` (equivalent, or each the other's negation). A BDD
/// package sees this at once; formulas need queries. Unknown counts as new.
pub fn redundant_boolean(p: &Program, a: &Pred, known: &[Pred], cancel: &Cancel) -> bool {
    let mut enc = Encoder::new(p, theory(), false);
    let ssa = enc.cur.clone();
    let Some(x) = a.encode(&mut enc, &ssa) else { return false };
    if unsat(&enc, &x, cancel) || unsat(&enc, &x.not(), cancel) {
        return true;
    }
    known.iter().any(|b| {
        let Some(y) = b.encode(&mut enc, &ssa) else { return false };
        let differ = x.eq(&y).not();
        // `a != b` unsatisfiable: equivalent; `a == b` unsatisfiable: complements.
        unsat(&enc, &differ, cancel) || unsat(&enc, &differ.not(), cancel)
    })
}

/// Whether `g` is unsatisfiable under the encoder's constraints (unknown: `false`).
fn unsat(enc: &Encoder, g: &Bool, cancel: &Cancel) -> bool {
    let s = solver(cancel, QUERY_MS);
    for c in &enc.constraints {
        s.assert(c);
    }
    s.assert(g);
    s.check() == SatResult::Unsat
}

/// The valuations a program starts with (nothing is known).
pub fn initial_image(p: &Program, preds: &[Pred], cancel: &Cancel) -> Image {
    let mut enc = Encoder::new(p, theory(), false);
    enumerate(&mut enc, &[], preds, cancel)
}

/// The image of valuation `val` of `pre` under the intraprocedural edge `(f, e)`.
pub fn edge_image(p: &Program, f: FuncId, e: crate::cfa::EdgeId, pre: &[Pred], val: Valuation, post: &[Pred], cancel: &Cancel) -> Image {
    let mut enc = Encoder::new(p, theory(), false);
    let start = valuation_formula(&mut enc, pre, val);
    let ctx = crate::cfa::op_ctx(p, Op::Edge(f, e), false);
    if matches!(ctx.kind, OpKind::Edge(EdgeKind::CallSummary(_))) {
        return Image::GaveUp("internal error: a call edge taken as a statement".into());
    }
    enc.op(&ctx);
    enumerate(&mut enc, &[start], post, cancel)
}

/// An intraprocedural edge's abstract rule prepared once per precision: the edge's formula
/// with indicator constants for its source's and its target's predicates, so that the image
/// of each source valuation is an all-SAT enumeration under assumptions on one solver.
pub struct EdgeRule {
    solver: z3::Solver,
    pre: Vec<Bool>,
    post: Vec<Bool>,
}

impl EdgeRule {
    pub fn new(p: &Program, f: FuncId, e: crate::cfa::EdgeId, pre: &[Pred], post: &[Pred], cancel: &Cancel) -> EdgeRule {
        let mut enc = Encoder::new(p, theory(), false);
        let ssa0 = enc.cur.clone();
        let pre_f: Vec<Option<Bool>> = pre.iter().map(|q| q.encode(&mut enc, &ssa0)).collect();
        let ctx = crate::cfa::op_ctx(p, Op::Edge(f, e), false);
        if !matches!(ctx.kind, OpKind::Edge(EdgeKind::CallSummary(_))) {
            enc.op(&ctx);
        }
        let ssa1 = enc.cur.clone();
        let post_f: Vec<Option<Bool>> = post.iter().map(|q| q.encode(&mut enc, &ssa1)).collect();
        let solver = solver(cancel, QUERY_MS);
        for c in &enc.constraints {
            solver.assert(c);
        }
        let mark = |prefix: &str, fs: &[Option<Bool>]| -> Vec<Bool> {
            fs.iter()
                .enumerate()
                .map(|(i, f)| {
                    let m = Bool::new_const(format!("{}_{}", prefix, i));
                    if let Some(f) = f {
                        solver.assert(m.eq(f));
                    }
                    m
                })
                .collect()
        };
        let pre = mark("summary_pre", &pre_f);
        let post = mark("summary_post", &post_f);
        EdgeRule { solver, pre, post }
    }

    /// The target valuations reachable from source valuation `val`.
    pub fn image(&self, val: Valuation) -> Image {
        let assumptions: Vec<Bool> =
            self.pre.iter().enumerate().map(|(i, m)| if val >> i & 1 == 1 { m.clone() } else { m.not() }).collect();
        self.solver.push();
        let r = self.all_sat(&assumptions);
        self.solver.pop(1);
        r
    }

    fn all_sat(&self, assumptions: &[Bool]) -> Image {
        let s = &self.solver;
        let mut out = Vec::new();
        loop {
            if out.len() > MAX_VALUATIONS {
                return Image::GaveUp(format!("more than {} abstract valuations at one step", MAX_VALUATIONS));
            }
            match s.check_assumptions(assumptions) {
                SatResult::Unsat => return Image::Valuations(out),
                SatResult::Unknown => {
                    let why = s.get_reason_unknown().unwrap_or_else(|| "unknown".into());
                    return every_valuation(self.post.len(), &why);
                }
                SatResult::Sat => {}
            }
            let Some(model) = s.get_model() else { return Image::GaveUp("no model".into()) };
            let mut val: Valuation = 0;
            let mut block = Vec::new();
            for (i, m) in self.post.iter().enumerate() {
                let b = model.eval(m, true).and_then(|b| b.as_bool()).unwrap_or(false);
                if b {
                    val |= 1 << i;
                }
                block.push(if b { m.not() } else { m.clone() });
            }
            out.push(val);
            if block.is_empty() {
                return Image::Valuations(out);
            }
            let refs: Vec<&Bool> = block.iter().collect();
            s.assert(Bool::or(&refs));
        }
    }
}

/// Most predicates for which a step the solver gives up on is over-approximated by every
/// valuation (beyond, the analysis gives up).
const MAX_FALLBACK_PREDICATES: usize = 10;

/// The sound fallback when the solver gives up on a step: every valuation (or none of the
/// analysis, if there are too many). Interruptions are passed on.
fn every_valuation(n: usize, why: &str) -> Image {
    if n > MAX_FALLBACK_PREDICATES || why.contains("interrupt") || why.contains("canceled") {
        return Image::GaveUp(format!("the SMT solver gave up on an abstract step ({})", why));
    }
    tracing::debug!("summaries: abstract step over-approximated ({})", why);
    Image::Valuations((0..1u64 << n).collect())
}

/// Gives every local of `g` a fresh version (a new activation), returning the old versions.
fn new_frame(p: &Program, enc: &mut Encoder, g: FuncId) -> Vec<(VarId, u32)> {
    let n = p.cfa(g).locals.len();
    let mut saved = Vec::with_capacity(n);
    for i in 0..n {
        let v = VarId::local(g, i);
        saved.push((v, enc.version(v)));
        enc.bump(v, None);
    }
    saved
}

/// Binds the callee's parameters to the arguments (evaluated in the caller's frame, which
/// must be current) in a fresh frame of the callee. Returns the argument terms.
pub(crate) fn enter(p: &Program, enc: &mut Encoder, call: &crate::cfa::Call) -> (Vec<Term>, Vec<(VarId, u32)>) {
    let args: Vec<Term> = call.args.iter().map(|e| enc.expr(e)).collect();
    let saved = new_frame(p, enc, call.callee);
    let params = p.cfa(call.callee).params.clone();
    let mut obs = Obs::default();
    for (i, param) in params.iter().enumerate() {
        if matches!(p.var(*param).kind, VarKind::Array { .. }) {
            continue; // a fresh array: any contents
        }
        if let Some(t) = args.get(i) {
            enc.write(&LValue::Var(*param), Some(t.clone()), false, &mut obs);
        }
    }
    (args, saved)
}

/// The callee's valuations at its entry when the caller at the call site `(f, e)` has `val`.
pub fn call_image(p: &Program, f: FuncId, e: crate::cfa::EdgeId, pre: &[Pred], val: Valuation, post: &[Pred], cancel: &Cancel) -> Image {
    let EdgeKind::CallSummary(call) = &p.cfa(f).edge(e).kind else {
        return Image::GaveUp("internal error: not a call edge".into());
    };
    let mut enc = Encoder::new(p, theory(), false);
    let start = valuation_formula(&mut enc, pre, val);
    enter(p, &mut enc, call);
    enumerate(&mut enc, &[start], post, cancel)
}

/// Encodes a call and its return from the caller's current frame (the eval rule's concrete
/// relation): the callee is entered with the arguments, its entry copies (`(copy, original)`
/// pairs, originals being the callee's parameters and the globals) are linked to the values
/// at the call, then it runs: its locals other than the copies and every global take new
/// versions, the values at its exit, at which `at_exit` is called (the callee's frame is
/// current then). Back in the caller's frame (memory reached through pointers havocked), the
/// results are assigned. Returns the links of the entry copies.
pub(crate) fn encode_eval(
    p: &Program,
    enc: &mut Encoder,
    call: &crate::cfa::Call,
    copies: &[(VarId, VarId)],
    at_exit: &mut dyn FnMut(&mut Encoder),
) -> Vec<Bool> {
    let g = call.callee;
    let globals_at_call: Vec<(VarId, u32)> = (0..p.globals.len()).map(|i| (VarId::global(i), enc.version(VarId::global(i)))).collect();
    let (_, saved) = enter(p, enc, call);
    // The entry copies hold the parameters' values at entry and the globals at the call.
    let mut links = Vec::new();
    for &(copy, orig) in copies {
        let copy_t = enc.cur_term(copy);
        let orig_t = match orig.func() {
            None => {
                let ver = globals_at_call.iter().find(|(v, _)| *v == orig).map_or(0, |(_, n)| *n);
                enc.term(orig, ver)
            }
            Some(_) => enc.cur_term(orig),
        };
        if let (VTerm::Scalar(a), VTerm::Scalar(b)) = (copy_t, orig_t) {
            links.push(a.eq(&b));
        }
    }
    // Then the callee runs: its locals and every global take the values at its exit, except
    // the entry copies, which nothing assigns after the entry.
    for i in 0..p.cfa(g).locals.len() {
        let v = VarId::local(g, i);
        if !copies.iter().any(|(c, _)| *c == v) {
            enc.bump(v, None);
        }
    }
    for i in 0..p.globals.len() {
        enc.bump(VarId::global(i), None);
    }
    at_exit(enc);
    let rets: Vec<Term> = p
        .cfa(g)
        .ret
        .iter()
        .map(|&r| match enc.cur_term(r) {
            VTerm::Scalar(d) => Term { t: d, taint: None },
            VTerm::Arr(_) => Term { t: enc.fresh(crate::ir::IntTy::INT), taint: None },
        })
        .collect();
    // Back in the caller's frame: its locals as at the call, except memory reached through
    // pointers, which the callee may have changed.
    for (v, ver) in saved {
        enc.cur.insert(v, ver);
    }
    for v in p.escaped.clone() {
        enc.bump(v, None);
    }
    let mut obs = Obs::default();
    for (lhs, t) in call.ret.iter().zip(rets) {
        enc.write(lhs, Some(t), false, &mut obs);
    }
    links
}

/// The caller's valuations after the call at `(f, e)` (the eval rule): the caller had `val`
/// over `pre` at the call, the callee ends with `exit_val` over its predicates `callee_preds`
/// (relative to its entry copies `copies`: `(copy, original)` pairs, originals being the
/// callee's parameters and the globals).
#[allow(clippy::too_many_arguments)]
pub fn return_image(
    p: &Program,
    f: FuncId,
    e: crate::cfa::EdgeId,
    pre: &[Pred],
    val: Valuation,
    callee_preds: &[Pred],
    copies: &[(VarId, VarId)],
    exit_val: Valuation,
    post: &[Pred],
    cancel: &Cancel,
) -> Image {
    let EdgeKind::CallSummary(call) = &p.cfa(f).edge(e).kind else {
        return Image::GaveUp("internal error: not a call edge".into());
    };
    let mut enc = Encoder::new(p, theory(), false);
    let start = valuation_formula(&mut enc, pre, val);
    let mut exit = None;
    let links = encode_eval(p, &mut enc, call, copies, &mut |enc| exit = Some(valuation_formula(enc, callee_preds, exit_val)));
    let exit = exit.unwrap_or_else(|| Bool::from_bool(true));
    let mut extra = vec![start, exit];
    extra.extend(links);
    enumerate(&mut enc, &extra, post, cancel)
}

/// Predicates from sequence interpolants of an infeasible interprocedural path (one list per
/// cut, after each operation but the last), each over the variables in scope at its cut: the
/// globals and the current activation's locals. Values of the caller's frame that the
/// interpolant uses are rewritten through the parameter passing into the callee's entry
/// copies where the argument is a variable plus a constant (so that a callee's predicates
/// are relative to its entry, seed 002 §4.3); atoms over any other out-of-scope value are
/// dropped.
pub fn path_predicates(
    p: &Program,
    ops: &[crate::cfa::OpCtx],
    copies: &dyn Fn(FuncId) -> Vec<(VarId, VarId)>,
    order: &[crate::smt::interpolate::Strategy],
    cancel: &Cancel,
) -> Result<(crate::smt::interpolate::Strategy, Vec<Vec<LinPred>>), String> {
    use std::collections::HashMap;
    use z3::ast::{Ast, Dynamic, Int};

    use crate::cfa::block::Block;
    use crate::ir::{BinOp, Expr};

    let blocks: Vec<Block> = ops.iter().map(|o| Block::of_path(std::slice::from_ref(o))).collect();
    // Ideal integers first: linear paths stay conjunctions of linear constraints there, so
    // that Farkas interpolation applies (the predicates are then evaluated exactly).
    let encodings = [
        Theory::Int { ranges: false, exact: false, parity: true },
        Theory::Int { ranges: true, exact: true, parity: true },
        Theory::Int { ranges: true, exact: false, parity: true },
    ];
    let (strategy, itps, names) = crate::smt::interpolate::sequence_interpolant_formulas_in(p, &blocks, order, &encodings, cancel)?;
    // Replay the encoding the interpolants are over (same SSA numbering) to learn the current
    // versions at each cut and the caller's versions at each call.
    let mut enc = Encoder::new(p, theory(), false);
    let mut after: Vec<std::collections::HashMap<VarId, u32>> = Vec::with_capacity(ops.len());
    let mut active: Vec<usize> = Vec::new();
    let mut activation: Vec<Option<(usize, std::collections::HashMap<VarId, u32>)>> = Vec::with_capacity(ops.len());
    let mut before_call: HashMap<usize, HashMap<VarId, u32>> = HashMap::new();
    for (j, b) in blocks.iter().enumerate() {
        match ops[j].kind {
            OpKind::Call { .. } => {
                before_call.insert(j, enc.cur.clone());
                active.push(j);
            }
            OpKind::Return { .. } => {
                active.pop();
            }
            OpKind::Edge(_) => {}
        }
        crate::smt::dag::encode_dag(&mut enc, p, b);
        after.push(enc.cur.clone());
        activation.push(active.last().map(|&c| (c, before_call[&c].clone())));
    }
    let ver = |m: &HashMap<VarId, u32>, v: VarId| m.get(&v).copied().unwrap_or(0);
    let name = |v: VarId, n: u32| format!("v{}_{}", v.0, n);
    // `x`, `(T)x`, `x + k`, `x - k` (with casts): the variable and the offset.
    fn var_plus_const(e: &Expr) -> Option<(VarId, i128)> {
        match e {
            Expr::Var(v, _) => Some((*v, 0)),
            Expr::Cast(a, _) => var_plus_const(a),
            Expr::Binary(BinOp::Add, a, b, _) => match (var_plus_const(a), &**b) {
                (Some((v, k)), Expr::Const(c, _)) => Some((v, k + c)),
                _ => None,
            },
            Expr::Binary(BinOp::Sub, a, b, _) => match (var_plus_const(a), &**b) {
                (Some((v, k)), Expr::Const(c, _)) => Some((v, k - c)),
                _ => None,
            },
            _ => None,
        }
    }
    let mut cuts = Vec::with_capacity(itps.len());
    for (j, itp) in itps.iter().enumerate() {
        let h = ops[j].to.func;
        let cur = &after[j];
        let mut scope: HashMap<String, (VarId, u32)> = HashMap::new();
        for (n, &(v, k)) in &names {
            let in_scope = match v.func() {
                None => true,
                Some(f) => f == h,
            };
            if in_scope && k == ver(cur, v) {
                scope.insert(n.clone(), (v, k));
            }
        }
        let mut subst: Vec<(Int, Int)> = Vec::new();
        if let Some((c, caller)) = &activation[j] {
            if let OpKind::Call { call, callee, .. } = ops[*c].kind {
                if callee == h {
                    let cp = copies(h);
                    let params = &p.cfa(h).params;
                    let add = |from: String,
                               copy: VarId,
                               offset: i128,
                               subst: &mut Vec<(Int, Int)>,
                               scope: &mut HashMap<String, (VarId, u32)>| {
                        if scope.contains_key(&from) || !names.contains_key(&from) {
                            return;
                        }
                        let cname = name(copy, ver(cur, copy));
                        let copy_t = Int::new_const(cname.clone());
                        scope.insert(cname, (copy, ver(cur, copy)));
                        // caller value x satisfies  param = x + offset,  param = copy.
                        let to = Int::sub(&[copy_t, Int::from_i128(offset)]);
                        subst.push((Int::new_const(from), to));
                    };
                    for (i, param) in params.iter().enumerate() {
                        let Some(&(copy, _)) = cp.iter().find(|(_, o)| o == param) else { continue };
                        let Some((x, k)) = call.args.get(i).and_then(var_plus_const) else { continue };
                        add(name(x, ver(caller, x)), copy, k, &mut subst, &mut scope);
                    }
                    for &(copy, orig) in &cp {
                        if orig.func().is_none() {
                            add(name(orig, ver(caller, orig)), copy, 0, &mut subst, &mut scope);
                        }
                    }
                }
            }
        }
        let refs: Vec<(&Int, &Int)> = subst.iter().map(|(a, b)| (a, b)).collect();
        let f = if refs.is_empty() { itp.clone() } else { itp.substitute(&refs) };
        let mut out = Vec::new();
        crate::smt::linear::atoms(&Dynamic::from_ast(&f), &scope, &|_| None, &mut out);
        out.sort();
        out.dedup();
        cuts.push(out);
    }
    Ok((strategy, cuts))
}
