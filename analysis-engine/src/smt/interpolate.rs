//! Sequence interpolants for an infeasible path without an interpolation API (Z3 4.8.12 has
//! none; extraction seeds-000-004 part C.3, seeds-002-003 part C.1):
//!
//! - **Spacer** on a chain of Horn clauses `P_1 ← A_1`, `P_k ← P_{k-1} ∧ A_k`,
//!   `false ← P_{n-1} ∧ A_n`, with inlining and slicing off so that the solved predicates
//!   are generalised interpolants;
//! - **QE + core weakening**: `I_k = ∃(local symbols). I_{k-1} ∧ A_k` by quantifier
//!   elimination, then literals dropped while the rest of the path stays refuted (the SMT lift
//!   of seed 000's Alg. 3);
//! - **Farkas**: for paths of linear constraints, a linear-programming certificate whose prefix
//!   sums are the interpolants.
//!
//! The path is encoded over mathematical integers (see `encode.rs`). Every interpolant
//! sequence is checked (`A_1 ⇒ I_1`, `I_{k-1} ∧ A_k ⇒ I_k`, `I_{n-1} ∧ A_n` unsatisfiable,
//! each `I_k` over the symbols shared by prefix and suffix) before its atoms are used; a
//! strategy whose result fails the check is skipped for the next one.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use z3::ast::{Ast, Bool, Dynamic, Int, Real};
use z3::{AstKind, DeclKind, Fixedpoint, FuncDecl, Goal, Params, SatResult, Sort, Tactic};

use crate::cfa::block::Block;
#[cfg(test)]
use crate::cfa::OpCtx;
use crate::cfa::Program;
use crate::core::Cancel;
use crate::smt::dag::encode_dag;
use crate::smt::encode::{Encoder, Theory};
use crate::smt::linear::{atoms, is_constant, linear, Lin};
use crate::smt::linpred::LinPred;
use crate::smt::solver;

/// Per-query limit for interpolation.
const QUERY_MS: u64 = 10_000;
/// Spacer's limit when another encoding is left to try.
const SPACER_FIRST_MS: u64 = 2_000;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    Spacer,
    QeCore,
    Farkas,
}

impl Strategy {
    pub const ALL: [Strategy; 3] = [Strategy::Spacer, Strategy::QeCore, Strategy::Farkas];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::Spacer => "spacer",
            Strategy::QeCore => "qe",
            Strategy::Farkas => "farkas",
        }
    }

    pub fn parse(s: &str) -> Option<Strategy> {
        Strategy::ALL.iter().copied().find(|x| x.name() == s)
    }
}

/// Interpolants of a path cut into blocks: one list of predicates per cut.
#[derive(Clone, Debug)]
pub struct Interpolants {
    pub strategy: Strategy,
    pub cuts: Vec<Vec<LinPred>>,
}

/// A path's blocks as constraints over integers, with the symbols each cut shares.
pub(crate) struct EncodedPath<'p> {
    enc: Encoder<'p>,
    blocks: Vec<Vec<Bool>>,
    /// Per cut (after block k): the symbols occurring both before and after it, by name.
    shared: Vec<Vec<Dynamic>>,
}

/// Collects the uninterpreted constants of a formula (visiting each shared subterm once:
/// block formulas are DAGs).
fn symbols(d: &Dynamic, out: &mut BTreeMap<String, Dynamic>) {
    let mut stack = vec![d.clone()];
    let mut seen: HashSet<Dynamic> = HashSet::new();
    while let Some(x) = stack.pop() {
        if x.kind() != AstKind::App || !seen.insert(x.clone()) {
            continue;
        }
        if x.num_children() == 0 {
            if is_constant(&x) {
                out.insert(x.decl().name(), x.clone());
            }
            continue;
        }
        stack.extend(x.children());
    }
}

pub(crate) fn symbols_of(fs: &[Bool]) -> BTreeMap<String, Dynamic> {
    let mut out = BTreeMap::new();
    for f in fs {
        symbols(&Dynamic::from_ast(f), &mut out);
    }
    out
}

pub(crate) fn and(fs: &[Bool]) -> Bool {
    let refs: Vec<&Bool> = fs.iter().collect();
    if refs.is_empty() {
        Bool::from_bool(true)
    } else {
        Bool::and(&refs)
    }
}

impl<'p> EncodedPath<'p> {
    #[cfg(test)]
    pub(crate) fn new(p: &'p Program, blocks: &[Vec<OpCtx>], ranges: bool) -> EncodedPath<'p> {
        let blocks: Vec<Block> = blocks.iter().map(|b| Block::of_path(b)).collect();
        Self::with_theory(p, &blocks, Theory::Int { ranges, exact: false, parity: false })
    }

    pub(crate) fn with_theory(p: &'p Program, blocks: &[Block], theory: Theory) -> EncodedPath<'p> {
        let mut enc = Encoder::new(p, theory, false);
        let mut out = Vec::new();
        for b in blocks {
            let n0 = enc.constraints.len();
            let dag = encode_dag(&mut enc, p, b);
            let mut fs = enc.constraints[n0..].to_vec();
            fs.push(dag.reach);
            out.push(fs);
        }
        let syms: Vec<BTreeMap<String, Dynamic>> = out.iter().map(|b| symbols_of(b)).collect();
        let mut shared = Vec::new();
        for k in 0..out.len().saturating_sub(1) {
            let mut pre: BTreeMap<String, Dynamic> = BTreeMap::new();
            for s in &syms[..=k] {
                pre.extend(s.iter().map(|(n, d)| (n.clone(), d.clone())));
            }
            let post: BTreeSet<&String> = syms[k + 1..].iter().flat_map(|s| s.keys()).collect();
            shared.push(pre.into_iter().filter(|(n, _)| post.contains(n)).map(|(_, d)| d).collect());
        }
        EncodedPath { enc, blocks: out, shared }
    }

    fn unsat(&self, fs: &[&Bool], cancel: &Cancel) -> bool {
        let s = solver(cancel, QUERY_MS);
        for f in fs {
            s.assert(*f);
        }
        s.check() == SatResult::Unsat
    }

    pub(crate) fn infeasible(&self, cancel: &Cancel) -> bool {
        let all: Vec<&Bool> = self.blocks.iter().flatten().collect();
        self.unsat(&all, cancel)
    }

    /// Checks the defining conditions of a sequence interpolant.
    fn valid(&self, itps: &[Bool], cancel: &Cancel) -> bool {
        let n = self.blocks.len();
        if itps.len() + 1 != n {
            return false;
        }
        for (k, i) in itps.iter().enumerate() {
            let allowed: BTreeSet<String> = self.shared[k].iter().map(|d| d.decl().name()).collect();
            let used = symbols_of(std::slice::from_ref(i));
            if used.keys().any(|s| !allowed.contains(s)) {
                return false;
            }
        }
        let t = Bool::from_bool(true);
        for k in 0..n {
            let pre = if k == 0 { &t } else { &itps[k - 1] };
            let mut fs: Vec<&Bool> = vec![pre];
            fs.extend(self.blocks[k].iter());
            let not_post;
            if k + 1 < n {
                not_post = itps[k].not();
                fs.push(&not_post);
            }
            if !self.unsat(&fs, cancel) {
                return false;
            }
        }
        true
    }
}

/// Computes sequence interpolants for blocks `A_1..A_n`, trying the strategies in order.
pub fn sequence_interpolants(p: &Program, blocks: &[Block], order: &[Strategy], cancel: &Cancel) -> Result<Interpolants, String> {
    let (strategy, itps, names) = sequence_interpolant_formulas(p, blocks, order, cancel)?;
    let cuts: Vec<Vec<LinPred>> = itps
        .iter()
        .map(|i| {
            let mut out = Vec::new();
            atoms(&Dynamic::from_ast(i), &names, &|_| None, &mut out);
            out.sort();
            out.dedup();
            out
        })
        .collect();
    Ok(Interpolants { strategy, cuts })
}

/// Sequence interpolants as formulas over the SSA symbols of the blocks' encoding (named
/// `v<id>_<version>`, as the encoder names them), with the map from names to variables.
pub(crate) fn sequence_interpolant_formulas(
    p: &Program,
    blocks: &[Block],
    order: &[Strategy],
    cancel: &Cancel,
) -> Result<(Strategy, Vec<Bool>, HashMap<String, (crate::ir::VarId, u32)>), String> {
    // C's arithmetic first (the interpolants then carry the bounds that rule out overflow,
    // which the exact abstraction needs); ideal integers, where interpolation is easier, next.
    let encodings = [
        Theory::Int { ranges: true, exact: true, parity: false },
        Theory::Int { ranges: false, exact: false, parity: false },
        Theory::Int { ranges: true, exact: false, parity: false },
    ];
    sequence_interpolant_formulas_in(p, blocks, order, &encodings, cancel)
}

/// `sequence_interpolant_formulas` trying the encodings in the given order.
pub(crate) fn sequence_interpolant_formulas_in(
    p: &Program,
    blocks: &[Block],
    order: &[Strategy],
    encodings: &[Theory],
    cancel: &Cancel,
) -> Result<(Strategy, Vec<Bool>, HashMap<String, (crate::ir::VarId, u32)>), String> {
    if blocks.len() < 2 {
        return Err("the path has no cut to interpolate at".into());
    }
    let mut why = Vec::new();
    let mut any_infeasible = false;
    for (i, &theory) in encodings.iter().enumerate() {
        // An encoding with another one after it gets a shorter Spacer query: Spacer either
        // answers a path of a few blocks in milliseconds or not within seconds (seen: 10 s
        // for nothing on a six-block path with the C ranges, 30 ms without them).
        let spacer_cancel =
            if i + 1 < encodings.len() { cancel.child(Some(std::time::Duration::from_millis(SPACER_FIRST_MS))) } else { cancel.clone() };
        let path = EncodedPath::with_theory(p, blocks, theory);
        if !path.infeasible(cancel) {
            continue;
        }
        any_infeasible = true;
        for &s in order {
            cancel.check().map_err(|i| i.describe())?;
            let t0 = std::time::Instant::now();
            let result = match s {
                Strategy::Spacer => spacer(&path, &spacer_cancel),
                Strategy::QeCore => qe_core(&path, cancel),
                Strategy::Farkas => farkas(&path, cancel),
            };
            tracing::debug!(
                "interpolation by {} over {} blocks ({:?}): {} in {:?}",
                s.name(),
                blocks.len(),
                theory,
                if result.is_ok() { "ok" } else { "failed" },
                t0.elapsed()
            );
            match result {
                Ok(itps) if path.valid(&itps, cancel) => return Ok((s, itps, path.enc.names.clone())),
                Ok(_) => why.push(format!("{}: interpolants failed the check", s.name())),
                Err(e) => why.push(format!("{}: {}", s.name(), e)),
            }
        }
    }
    if !any_infeasible {
        return Err("the path is infeasible only through machine arithmetic the integer encodings do not express".into());
    }
    Err(why.join("; "))
}

/// A Spacer context. After a query that was interrupted or timed out, Z3 4.8.12 may throw
/// from the context's destructor (a `rewriter_exception` that aborts the process), so such a
/// context is leaked instead of freed.
pub(crate) struct SpacerContext(std::mem::ManuallyDrop<Fixedpoint>, bool);

impl SpacerContext {
    /// A Spacer context with inlining and slicing off (so that every relation gets its own
    /// solution) and a time limit of `limit_ms` or the time left, whichever is less.
    pub(crate) fn new(cancel: &Cancel, limit_ms: u64) -> SpacerContext {
        let fp = SpacerContext(std::mem::ManuallyDrop::new(Fixedpoint::new()), false);
        let mut params = Params::new();
        params.set_symbol("engine", "spacer");
        params.set_bool("xform.inline_linear", false);
        params.set_bool("xform.inline_eager", false);
        params.set_bool("xform.slice", false);
        let ms = cancel.remaining_ms().map_or(limit_ms, |r| r.min(limit_ms)).max(1);
        params.set_u32("timeout", ms as u32);
        fp.set_params(&params);
        fp
    }

    /// Declares an unknown relation over arguments of these sorts and registers it.
    pub(crate) fn relation(&self, name: String, sorts: &[Sort]) -> FuncDecl {
        let refs: Vec<&Sort> = sorts.iter().collect();
        let r = FuncDecl::new(name, &refs, &Sort::bool());
        self.register_relation(&r);
        r
    }

    /// Keeps the context from being freed (after an interrupted or timed-out query).
    pub(crate) fn leak(&mut self) {
        self.1 = true;
    }
}

impl std::ops::Deref for SpacerContext {
    type Target = Fixedpoint;
    fn deref(&self) -> &Fixedpoint {
        &self.0
    }
}

impl Drop for SpacerContext {
    fn drop(&mut self) {
        if !self.1 {
            // SAFETY: dropped once, here; never used afterwards.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.0) }
        }
    }
}

/// Spacer on the chain of Horn clauses.
fn spacer(path: &EncodedPath, cancel: &Cancel) -> Result<Vec<Bool>, String> {
    let n = path.blocks.len();
    let fp = SpacerContext::new(cancel, QUERY_MS);
    let preds: Vec<FuncDecl> = (0..n - 1)
        .map(|k| {
            let sorts: Vec<Sort> = path.shared[k].iter().map(|d| d.get_sort()).collect();
            fp.relation(format!("itp_{}", k), &sorts)
        })
        .collect();
    let err = fp.relation("itp_false".into(), &[]);
    let app = |k: usize| -> Bool {
        let args: Vec<&dyn Ast> = path.shared[k].iter().map(|d| d as &dyn Ast).collect();
        preds[k].apply(&args).as_bool().expect("a relation")
    };
    for k in 0..n {
        let mut body: Vec<Bool> = path.blocks[k].clone();
        if k > 0 {
            body.push(app(k - 1));
        }
        let head = if k + 1 < n { app(k) } else { err.apply(&[]).as_bool().expect("a relation") };
        let rule = and(&body).implies(&head);
        let mut vars = symbols_of(&body);
        if k + 1 < n {
            for d in &path.shared[k] {
                vars.insert(d.decl().name(), d.clone());
            }
        }
        let bound: Vec<&dyn Ast> = vars.values().map(|d| d as &dyn Ast).collect();
        let rule = if bound.is_empty() { rule } else { z3::ast::forall_const(&bound, &[], &rule) };
        tracing::trace!("Spacer rule {}: {}", k, rule);
        fp.add_rule(&rule, None);
    }
    match fp.query(&err.apply(&[]).as_bool().expect("a relation")) {
        SatResult::Unsat => {}
        SatResult::Sat => return Err("Spacer finds the chain satisfiable".into()),
        SatResult::Unknown => {
            let why = fp.get_reason_unknown();
            let mut fp = fp;
            fp.leak();
            return Err(format!("Spacer gave up ({})", why));
        }
    }
    let mut out = Vec::new();
    for k in 0..n - 1 {
        let cover = fp.get_cover_delta(-1, &preds[k]).ok_or("no solution for a cut")?;
        out.push(substitute_vars(&cover, &path.shared[k]));
    }
    Ok(out)
}

/// Replaces de Bruijn variable `i` by `to[i]`.
fn substitute_vars(f: &Bool, to: &[Dynamic]) -> Bool {
    let ctx = f.get_ctx();
    let raw: Vec<z3_sys::Z3_ast> = to.iter().map(|d| d.get_z3_ast()).collect();
    // SAFETY: all ASTs belong to this thread's context; Z3 returns a new AST of the same sort,
    // which `wrap` takes a reference to.
    unsafe {
        let r = z3_sys::Z3_substitute_vars(ctx.get_z3_context(), f.get_z3_ast(), raw.len() as u32, raw.as_ptr());
        match r {
            Some(r) => Bool::wrap(ctx, r),
            None => Bool::from_bool(true),
        }
    }
}

/// Flattens top-level conjunctions.
fn conjuncts(f: &Bool, out: &mut Vec<Bool>) {
    let d = Dynamic::from_ast(f);
    if d.kind() == AstKind::App && d.decl().kind() == DeclKind::And {
        for c in d.children() {
            if let Some(b) = c.as_bool() {
                conjuncts(&b, out);
            }
        }
    } else if !(d.kind() == AstKind::App && d.decl().kind() == DeclKind::True) {
        out.push(f.clone());
    }
}

/// Strongest interpolants by quantifier elimination, weakened with unsat cores.
fn qe_core(path: &EncodedPath, cancel: &Cancel) -> Result<Vec<Bool>, String> {
    let n = path.blocks.len();
    let mut prev = Bool::from_bool(true);
    let mut out = Vec::new();
    for k in 0..n - 1 {
        cancel.check().map_err(|i| i.describe())?;
        let mut parts = vec![prev.clone()];
        parts.extend(path.blocks[k].iter().cloned());
        let f = and(&parts);
        let keep: BTreeSet<String> = path.shared[k].iter().map(|d| d.decl().name()).collect();
        let locals: Vec<Dynamic> =
            symbols_of(std::slice::from_ref(&f)).into_iter().filter(|(n, _)| !keep.contains(n)).map(|(_, d)| d).collect();
        let projected = if locals.is_empty() {
            f
        } else {
            let bound: Vec<&dyn Ast> = locals.iter().map(|d| d as &dyn Ast).collect();
            let q = z3::ast::exists_const(&bound, &[], &f);
            let goal = Goal::new(false, false, false);
            goal.assert(&q);
            let res = Tactic::new("qe").apply(&goal, None).map_err(|e| format!("qe failed: {}", e))?;
            let mut fs = Vec::new();
            for g in res.list_subgoals() {
                fs.extend(g.get_formulas());
            }
            let r = and(&fs);
            if Dynamic::from_ast(&r).kind() == AstKind::Quantifier {
                return Err("quantifier elimination left a quantifier".into());
            }
            r
        };
        // Keep only the conjuncts the rest of the path needs.
        let mut cs = Vec::new();
        conjuncts(&projected, &mut cs);
        let s = solver(cancel, QUERY_MS);
        for b in &path.blocks[k + 1..] {
            for c in b {
                s.assert(c);
            }
        }
        let marks: Vec<Bool> = (0..cs.len()).map(|i| Bool::new_const(format!("itp_keep_{}_{}", k, i))).collect();
        for (m, c) in marks.iter().zip(&cs) {
            s.assert(&m.implies(c));
        }
        let core: BTreeSet<String> = match s.check_assumptions(&marks) {
            SatResult::Unsat => s.get_unsat_core().iter().map(|b| b.to_string()).collect(),
            _ => return Err("the projected prefix does not refute the suffix".into()),
        };
        let mut kept: Vec<Bool> = marks.iter().zip(&cs).filter(|(m, _)| core.contains(&m.to_string())).map(|(_, c)| c.clone()).collect();
        // Greedy removal of what the core kept unnecessarily.
        let mut i = 0;
        while i < kept.len() && kept.len() > 1 {
            let trial: Vec<Bool> = kept.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, c)| c.clone()).collect();
            s.push();
            s.assert(&and(&trial));
            let still = s.check() == SatResult::Unsat;
            s.pop(1);
            if still {
                kept = trial;
            } else {
                i += 1;
            }
        }
        let itp = and(&kept);
        out.push(itp.clone());
        prev = itp;
    }
    Ok(out)
}

/// One row of a Farkas certificate: `Σ a·x ≤ b` (or `=` when `eq`), in block `block`.
struct Row {
    coeffs: BTreeMap<String, i128>,
    b: i128,
    eq: bool,
    block: usize,
}

/// A disequality `a ≠ b` met on the path: Farkas handles it by splitting into `<` and `>`.
struct Diseq {
    a: Lin,
    b: Lin,
    block: usize,
}

/// Linear rows of a constraint, or `None` if it is not a conjunction of linear atoms and
/// disequalities.
fn rows(f: &Bool, block: usize, out: &mut Vec<Row>, diseqs: &mut Vec<Diseq>) -> Option<()> {
    let d = Dynamic::from_ast(f);
    if d.kind() != AstKind::App {
        return None;
    }
    let ch = d.children();
    let kind = d.decl().kind();
    match kind {
        DeclKind::And => {
            for c in &ch {
                rows(&c.as_bool()?, block, out, diseqs)?;
            }
            Some(())
        }
        DeclKind::True => Some(()),
        DeclKind::Not if ch.len() == 1 => {
            // ¬(a ≤ b) is a > b, ¬(a < b) is a ≥ b; a disequality is not linear.
            let inner = &ch[0];
            if inner.kind() != AstKind::App {
                return None;
            }
            let ic = inner.children();
            let (a, b) = (linear(&ic.first()?.clone(), &|_| None)?, linear(&ic.get(1)?.clone(), &|_| None)?);
            match inner.decl().kind() {
                DeclKind::Le => push_le(out, b, a, -1, block),
                DeclKind::Lt => push_le(out, b, a, 0, block),
                DeclKind::Ge => push_le(out, a, b, -1, block),
                DeclKind::Gt => push_le(out, a, b, 0, block),
                DeclKind::Eq if ic[0].as_bool().is_none() => {
                    diseqs.push(Diseq { a, b, block });
                    Some(())
                }
                _ => None,
            }
        }
        DeclKind::Le | DeclKind::Lt | DeclKind::Ge | DeclKind::Gt | DeclKind::Eq if ch.len() == 2 => {
            if ch[0].as_bool().is_some() {
                return None;
            }
            let (a, b) = (linear(&ch[0], &|_| None)?, linear(&ch[1], &|_| None)?);
            match kind {
                DeclKind::Le => push_le(out, a, b, 0, block),
                DeclKind::Lt => push_le(out, a, b, -1, block),
                DeclKind::Ge => push_le(out, b, a, 0, block),
                DeclKind::Gt => push_le(out, b, a, -1, block),
                _ => {
                    let (c, k) = diff(a, b);
                    out.push(Row { coeffs: c, b: -k, eq: true, block });
                    Some(())
                }
            }
        }
        _ => None,
    }
}

/// `a - b` as coefficients and constant.
fn diff(a: Lin, b: Lin) -> (BTreeMap<String, i128>, i128) {
    let mut c = a.coeffs;
    for (s, v) in b.coeffs {
        *c.entry(s).or_insert(0) -= v;
    }
    c.retain(|_, v| *v != 0);
    (c, a.k - b.k)
}

/// `a ≤ b + slack` as a row `a - b ≤ slack`.
fn push_le(out: &mut Vec<Row>, a: Lin, b: Lin, slack: i128, block: usize) -> Option<()> {
    let (c, k) = diff(a, b);
    out.push(Row { coeffs: c, b: slack - k, eq: false, block });
    Some(())
}

fn real(v: i128) -> Real {
    Int::from_i128(v).to_real()
}

/// Farkas interpolants for paths of linear constraints (rational relaxation). Disequalities
/// are split into their two strict sides; the interpolants of the cases are joined by
/// disjunction, which is again an interpolant sequence of the whole path.
fn farkas(path: &EncodedPath, cancel: &Cancel) -> Result<Vec<Bool>, String> {
    let mut rs = Vec::new();
    let mut diseqs = Vec::new();
    for (k, b) in path.blocks.iter().enumerate() {
        for c in b {
            // A constraint that is not linear is left out (its linear conjuncts kept): a
            // certificate for the weaker path is one for the path.
            let _ = rows(c, k, &mut rs, &mut diseqs);
        }
    }
    if diseqs.len() > 4 {
        return Err("too many disequalities to split".into());
    }
    let n = path.blocks.len();
    let mut cases: Vec<Vec<Bool>> = Vec::new();
    for mask in 0..(1u32 << diseqs.len()) {
        let mut case_rows: Vec<Row> = rs.iter().map(|r| Row { coeffs: r.coeffs.clone(), b: r.b, eq: r.eq, block: r.block }).collect();
        for (i, d) in diseqs.iter().enumerate() {
            let (a, b) = (d.a.clone(), d.b.clone());
            // a < b (a - b ≤ -1) or a > b (b - a ≤ -1).
            if mask & (1 << i) == 0 {
                push_le(&mut case_rows, a, b, -1, d.block);
            } else {
                push_le(&mut case_rows, b, a, -1, d.block);
            }
        }
        cases.push(farkas_case(path, &case_rows, cancel)?);
    }
    Ok((0..n - 1)
        .map(|k| {
            let parts: Vec<Bool> = cases.iter().map(|c| c[k].clone()).collect();
            let refs: Vec<&Bool> = parts.iter().collect();
            if refs.len() == 1 {
                parts[0].clone()
            } else {
                Bool::or(&refs)
            }
        })
        .collect())
}

/// One Farkas certificate for a conjunction of linear rows.
fn farkas_case(path: &EncodedPath, rs: &[Row], cancel: &Cancel) -> Result<Vec<Bool>, String> {
    let s = solver(cancel, QUERY_MS);
    let lambdas: Vec<Real> = (0..rs.len()).map(|i| Real::new_const(format!("farkas_{}", i))).collect();
    for (l, r) in lambdas.iter().zip(rs) {
        if !r.eq {
            s.assert(&l.ge(&real(0)));
        }
    }
    let syms: BTreeSet<&String> = rs.iter().flat_map(|r| r.coeffs.keys()).collect();
    for sym in syms {
        let terms: Vec<Real> =
            lambdas.iter().zip(rs).filter_map(|(l, r)| r.coeffs.get(sym).map(|c| Real::mul(&[l.clone(), real(*c)]))).collect();
        if !terms.is_empty() {
            s.assert(&Real::add(&terms).eq(&real(0)));
        }
    }
    let rhs: Vec<Real> = lambdas.iter().zip(rs).map(|(l, r)| Real::mul(&[l.clone(), real(r.b)])).collect();
    if rhs.is_empty() {
        return Err("no linear constraints".into());
    }
    // Σ λ·b < 0, normalised to ≤ -1 (Z3 4.8.12's strict-inequality caveat).
    s.assert(&Real::add(&rhs).le(&real(-1)));
    if s.check() != SatResult::Sat {
        return Err("no Farkas certificate (the contradiction needs integer reasoning)".into());
    }
    let m = s.get_model().ok_or("no model")?;
    let values: Vec<(i128, i128)> = lambdas
        .iter()
        .map(|l| m.eval(l, true).and_then(|v| v.as_rational()).map(|(a, b)| (a as i128, b as i128)).unwrap_or((0, 1)))
        .collect();
    let n = path.blocks.len();
    let mut out = Vec::new();
    for k in 0..n - 1 {
        // Σ_{rows in blocks ≤ k} λ·(a·x - b) ≤ 0, scaled to integers.
        let used: Vec<(usize, &Row)> = rs.iter().enumerate().filter(|(i, r)| r.block <= k && values[*i].0 != 0).collect();
        if used.is_empty() {
            out.push(Bool::from_bool(true));
            continue;
        }
        let lcm = used.iter().fold(1i128, |acc, (i, _)| {
            let d = values[*i].1.abs().max(1);
            acc / gcd(acc, d) * d
        });
        let mut coeffs: BTreeMap<String, i128> = BTreeMap::new();
        let mut k_sum = 0i128;
        for (i, r) in &used {
            let (num, den) = values[*i];
            let f = num * (lcm / den.abs().max(1)) * den.signum();
            for (sym, c) in &r.coeffs {
                *coeffs.entry(sym.clone()).or_insert(0) += f * c;
            }
            k_sum += f * r.b;
        }
        coeffs.retain(|_, c| *c != 0);
        let all_eq = used.iter().all(|(_, r)| r.eq);
        let mut sum: Vec<Int> = Vec::new();
        for (sym, c) in &coeffs {
            let d = path.shared[k].iter().find(|d| &d.decl().name() == sym).ok_or("a Farkas sum mentions a local symbol")?;
            sum.push(Int::mul(&[d.as_int().ok_or("not an integer symbol")?, Int::from_i128(*c)]));
        }
        let lhs = if sum.is_empty() { Int::from_i64(0) } else { Int::add(&sum) };
        out.push(if all_eq { lhs.eq(&Int::from_i128(k_sum)) } else { lhs.le(&Int::from_i128(k_sum)) });
    }
    Ok(out)
}

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;
    use crate::cfa::EdgeKind;
    use crate::core::Op;
    use crate::frontend::SourceInput;

    pub fn load(src: &str) -> Program {
        let input = SourceInput { path: "/tmp/itp_test.c".into(), text: src.to_string() };
        crate::load(&input, crate::cfa::DataModel::Lp64).expect("test program loads")
    }

    /// The first path (by DFS, ignoring feasibility) from the start to a target node.
    pub fn path_to_target(p: &Program) -> Vec<OpCtx<'_>> {
        fn dfs<'p>(
            p: &'p Program,
            f: crate::ir::FuncId,
            n: crate::cfa::NodeId,
            stack: &mut Vec<(crate::ir::FuncId, crate::cfa::EdgeId)>,
            out: &mut Vec<OpCtx<'p>>,
            depth: usize,
        ) -> bool {
            let cfa = p.cfa(f);
            if cfa.node(n).target.is_some() {
                return true;
            }
            if depth > 500 {
                return false;
            }
            if n == cfa.exit {
                if let Some((g, e)) = stack.pop() {
                    out.push(crate::cfa::op_ctx(p, Op::Return(g, e), false));
                    if dfs(p, g, p.cfa(g).edge(e).dst, stack, out, depth + 1) {
                        return true;
                    }
                    out.pop();
                    stack.push((g, e));
                }
                return false;
            }
            for (eid, e) in cfa.out_edges(n) {
                match &e.kind {
                    EdgeKind::CallSummary(c) => {
                        out.push(crate::cfa::op_ctx(p, Op::Call(f, eid), false));
                        stack.push((f, eid));
                        if dfs(p, c.callee, p.cfa(c.callee).entry, stack, out, depth + 1) {
                            return true;
                        }
                        stack.pop();
                        out.pop();
                    }
                    _ => {
                        out.push(crate::cfa::op_ctx(p, Op::Edge(f, eid), false));
                        if dfs(p, f, e.dst, stack, out, depth + 1) {
                            return true;
                        }
                        out.pop();
                    }
                }
            }
            false
        }
        let mut out = Vec::new();
        assert!(dfs(p, p.start, p.cfa(p.start).entry, &mut Vec::new(), &mut out, 0), "a path to the target");
        out
    }

    /// Cuts a path into `k` blocks of (about) equal length.
    pub fn blocks<'p>(ops: &[OpCtx<'p>], k: usize) -> Vec<Vec<OpCtx<'p>>> {
        let n = ops.len();
        (0..k).map(|i| ops[i * n / k..(i + 1) * n / k].to_vec()).collect()
    }

    /// Independent check of the interpolant conditions with a fresh solver per condition.
    pub fn assert_sequence(path: &EncodedPath, itps: &[Bool]) {
        let cancel = Cancel::new();
        let n = path.blocks.len();
        assert_eq!(itps.len(), n - 1);
        for k in 0..n {
            let s = solver(&cancel, 10_000);
            if k > 0 {
                s.assert(&itps[k - 1]);
            }
            for c in &path.blocks[k] {
                s.assert(c);
            }
            if k + 1 < n {
                s.assert(&itps[k].not());
            }
            assert_eq!(s.check(), SatResult::Unsat, "interpolant condition {} fails", k);
        }
    }

    /// A random straight-line program with linear updates whose final check is infeasible.
    pub fn program(updates: &[(usize, usize, i64)], check: (usize, usize)) -> String {
        let mut src = String::from("extern int __VERIFIER_nondet_int(void);\nextern void reach_error(void);\nint main(void) {\n");
        let n = 4;
        for i in 0..n {
            src += &format!("  int x{} = __VERIFIER_nondet_int();\n  if (x{} < -1000 || x{} > 1000) return 0;\n", i, i, i);
        }
        // Symbolic values: each variable as input index + offset (or a constant).
        let mut sym: Vec<(Option<usize>, i64)> = (0..n).map(|i| (Some(i), 0)).collect();
        for &(dst, src_var, c) in updates {
            let (d, s) = (dst % n, src_var % n);
            src += &format!("  x{} = x{} + {};\n", d, s, c);
            sym[d] = (sym[s].0, sym[s].1 + c);
        }
        let (a, b) = (check.0 % n, check.1 % n);
        // x_a - x_b is fixed when both derive from the same input: check the opposite.
        match (sym[a], sym[b]) {
            ((Some(i), ca), (Some(j), cb)) if i == j => {
                src += &format!("  if (x{} - x{} != {}) reach_error();\n", a, b, ca - cb);
            }
            _ => {
                // Otherwise the values are bounded: check something out of range.
                src += &format!("  if (x{} > 100000) reach_error();\n", a);
            }
        }
        src += "  return 0;\n}\n";
        src
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::*;
    use super::*;
    use proptest::prelude::{prop_assert, prop_assume, proptest, ProptestConfig};

    #[test]
    fn every_strategy_refutes_the_spacer_recipe_path() {
        // extraction C.3: x := 0; y := 5 | x := x + 1 | assume(y > 5)
        let p = load("extern void reach_error(void);\nint main(void) {\n int x = 0; int y = 5;\n x = x + 1;\n if (y > 5) reach_error();\n return 0;\n}\n");
        let ops = path_to_target(&p);
        let cancel = Cancel::new();
        for s in Strategy::ALL {
            let bl = blocks(&ops, 3);
            let path = EncodedPath::new(&p, &bl, false);
            assert!(path.infeasible(&cancel));
            let itps = match s {
                Strategy::Spacer => spacer(&path, &cancel),
                Strategy::QeCore => qe_core(&path, &cancel),
                Strategy::Farkas => farkas(&path, &cancel),
            }
            .unwrap_or_else(|e| panic!("{}: {}", s.name(), e));
            assert_sequence(&path, &itps);
            let dags: Vec<Block> = bl.iter().map(|b| Block::of_path(b)).collect();
            let got = sequence_interpolants(&p, &dags, &[s], &cancel).expect("checked interpolants");
            let mentions_y = got.cuts.iter().flatten().any(|pr| pr.vars().any(|v| p.var_name(v) == "y"));
            assert!(mentions_y, "{}: the predicates are about y: {:?}", s.name(), got.cuts);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]
        #[test]
        fn interpolants_of_random_infeasible_paths_are_valid(
            updates in proptest::collection::vec((0usize..4, 0usize..4, -20i64..20), 1..8),
            check in (0usize..4, 0usize..4),
            cuts in 2usize..5,
        ) {
            let src = program(&updates, check);
            let p = load(&src);
            let ops = path_to_target(&p);
            let bl = blocks(&ops, cuts.min(ops.len()));
            let cancel = Cancel::new();
            let path = EncodedPath::new(&p, &bl, false);
            prop_assume!(path.infeasible(&cancel));
            let mut some = false;
            for s in Strategy::ALL {
                let r = match s {
                    Strategy::Spacer => spacer(&path, &cancel),
                    Strategy::QeCore => qe_core(&path, &cancel),
                    Strategy::Farkas => farkas(&path, &cancel),
                };
                if let Ok(itps) = r {
                    // Whatever a strategy returns passes the built-in check only if it is an
                    // interpolant sequence; the independent check must agree.
                    if path.valid(&itps, &cancel) {
                        assert_sequence(&path, &itps);
                        some = true;
                    }
                }
            }
            prop_assert!(some, "no strategy found interpolants for\n{}", src);
        }
    }
}

#[cfg(test)]
mod coverage {
    use super::tests_support::*;
    use super::*;

    #[test]
    fn every_strategy_interpolates_most_random_linear_paths() {
        // Deterministic companion of the property test: each strategy on its own must find
        // (checked) interpolants for most random infeasible linear paths.
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        let mut wins = [0usize; 3];
        let mut total = 0;
        for _ in 0..20 {
            let updates: Vec<(usize, usize, i64)> =
                (0..1 + next(6)).map(|_| (next(4) as usize, next(4) as usize, next(40) as i64 - 20)).collect();
            let src = program(&updates, (next(4) as usize, next(4) as usize));
            let p = load(&src);
            let ops = path_to_target(&p);
            let bl = blocks(&ops, 3);
            let cancel = Cancel::new();
            let path = EncodedPath::new(&p, &bl, false);
            if !path.infeasible(&cancel) {
                continue;
            }
            total += 1;
            for (i, s) in Strategy::ALL.iter().enumerate() {
                let r = match s {
                    Strategy::Spacer => spacer(&path, &cancel),
                    Strategy::QeCore => qe_core(&path, &cancel),
                    Strategy::Farkas => farkas(&path, &cancel),
                };
                if let Ok(itps) = r {
                    if path.valid(&itps, &cancel) {
                        assert_sequence(&path, &itps);
                        wins[i] += 1;
                    }
                }
            }
        }
        assert!(total >= 10, "too few infeasible paths generated: {}", total);
        for (i, s) in Strategy::ALL.iter().enumerate() {
            assert!(wins[i] * 2 >= total, "{} found interpolants for {} of {} paths", s.name(), wins[i], total);
        }
    }
}
