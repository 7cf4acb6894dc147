//! The SMT side of interpolant-based transition relation approximation (Jhala & McMillan,
//! seed 003 §4, §6.1 and §7; extraction seeds-002-003.md part B): predicates as state
//! formulas, the abstract step formulas `T(π̄_i)` of a path with the concrete symbols hidden
//! per step (§5's `↓`), and symmetric transition interpolants for a path that is infeasible in
//! the exact abstraction.
//!
//! Z3 4.8.12 has no interpolating prover, so the transition interpolants come from route I6
//! of seeds-002-003.md part C.1 (propositional-skeleton lazy interpolation): per step a set of
//! clauses `C_i` over the predicate Booleans of times `i` and `i+1`, seeded with the current
//! approximation of the step's operation; a SAT model of `⋀ C_i` is checked step by step
//! against the exact step formula, and an inconsistent step minterm is shrunk to a minimal
//! cube whose negation joins `C_i` (each such clause is implied by the step). Once `⋀ C_i` is
//! unsatisfiable, the clauses of its unsatisfiable core are the transition interpolants: with
//! only shared (predicate) atoms every resolution is global, so the McMillan interpolant of
//! step `i` is the conjunction of its core clauses, the strong CNF form §7 aims for.

use std::collections::{HashMap, HashSet};

use z3::ast::{Ast, Bool, Dynamic, Int};
use z3::{AstKind, DeclKind, SatResult, Solver};

use crate::cfa::block::Block;
use crate::cfa::{EdgeKind, Program};
use crate::cfa::{OpCtx, OpKind};
use crate::core::Cancel;
use crate::ir::{IntTy, VarId, VarKind};
use crate::smt::encode::{Encoder, Theory, VTerm};
use crate::smt::interpolate::Strategy;
use crate::smt::linear::is_constant;
use crate::smt::solver;

/// Per-query limit.
const QUERY_MS: u64 = 5_000;

/// SAT rounds of one path's interpolation before giving up.
const MAX_ROUNDS: usize = 4_000;

/// Exact integers with C's wrap-around (bit operations over-approximated), as the predicate
/// abstraction encodes blocks: the abstraction over-approximates the program.
const THEORY: Theory = Theory::Int { ranges: true, exact: true, parity: false };

/// A literal of a transition formula: predicate `pred` at the current (`next == false`) or
/// the next state, positive or negated.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lit {
    pub pred: u32,
    pub next: bool,
    pub positive: bool,
}

/// A disjunction of literals; a transition interpolant is a conjunction of clauses.
pub type Clause = Vec<Lit>;

/// A predicate: a state formula over one symbol per program variable (`s<id>`).
#[derive(Clone, Debug)]
struct StatePred {
    formula: Bool,
    symbols: Vec<(VarId, Dynamic)>,
    text: String,
}

/// The predicates of a run, in the order they were found (indices are stable: a learned
/// transition interpolant stays valid when predicates are added, seed 003 §6.1).
#[derive(Clone, Debug, Default)]
pub struct Predicates {
    items: Vec<StatePred>,
    keys: HashSet<String>,
}

impl Predicates {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The predicate's text as a C condition over mathematical integers.
    pub fn text(&self, i: usize) -> &str {
        &self.items[i].text
    }

    /// Adds the atom of a formula over `v<id>_<version>` SSA symbols as a predicate over the
    /// program variables; false if it is not over program variables, is trivial, or is known.
    fn add_atom(&mut self, p: &Program, atom: &Bool, cancel: &Cancel) -> bool {
        let Some((formula, symbols)) = canonical(p, atom) else { return false };
        let formula = formula.simplify_checked();
        let key = formula.to_string();
        let negated = formula.not().simplify_checked().to_string();
        if self.keys.contains(&key) || self.keys.contains(&negated) || symbols.is_empty() || trivial(p, &formula, &symbols, cancel) {
            return false;
        }
        let names: HashMap<String, String> = symbols.iter().map(|(v, s)| (s.to_string(), p.var_name(*v).to_string())).collect();
        let text = c_text(&Dynamic::from_ast(&formula), &names);
        self.keys.insert(key);
        self.items.push(StatePred { formula, symbols, text });
        true
    }

    /// The predicates over the encoder's current SSA versions.
    fn instantiate(&self, enc: &mut Encoder) -> Vec<Bool> {
        self.items
            .iter()
            .map(|pr| {
                let to: Vec<(Dynamic, Dynamic)> = pr.symbols.iter().map(|(v, s)| (s.clone(), vterm(enc.cur_term(*v)))).collect();
                let pairs: Vec<(&Dynamic, &Dynamic)> = to.iter().map(|(a, b)| (a, b)).collect();
                pr.formula.substitute(&pairs)
            })
            .collect()
    }

    /// Builds a predicate from a C condition (for tests and fixtures: the predicates a paper
    /// gives).
    #[cfg(test)]
    pub(crate) fn add_condition(&mut self, p: &Program, cond: &crate::ir::Expr, cancel: &Cancel) -> bool {
        let mut enc = Encoder::new(p, THEORY, false);
        let (c, _) = enc.cond(cond);
        let c = c.simplify_checked();
        self.add_atom(p, &c, cancel)
    }
}

/// Z3's simplifier, which returns no term once the context is interrupted (where the `z3`
/// crate's `simplify` panics): the formula is then kept as it is.
trait SimplifyChecked {
    fn simplify_checked(&self) -> Bool;
}

impl SimplifyChecked for Bool {
    fn simplify_checked(&self) -> Bool {
        let ctx = self.get_ctx();
        // SAFETY: `self` is a term of this thread's context; a returned term is wrapped (and
        // reference-counted) by `Bool::wrap` in the same context.
        unsafe { z3_sys::Z3_simplify(ctx.get_z3_context(), self.get_z3_ast()).map_or_else(|| self.clone(), |a| Bool::wrap(ctx, a)) }
    }
}

fn vterm(t: VTerm) -> Dynamic {
    match t {
        VTerm::Scalar(d) => d,
        VTerm::Arr(a) => Dynamic::from_ast(&a),
    }
}

/// The variable behind an encoder symbol `v<id>_<version>`.
fn ssa_var(name: &str) -> Option<VarId> {
    let rest = name.strip_prefix('v')?;
    let (id, ver) = rest.split_once('_')?;
    ver.parse::<u32>().ok()?;
    id.parse::<u32>().ok().map(VarId)
}

/// Rewrites a formula over SSA symbols to one over the per-variable symbols `s<id>`; `None`
/// if it mentions another symbol (a fresh value, a Boolean of the abstraction).
fn canonical(p: &Program, f: &Bool) -> Option<(Bool, Vec<(VarId, Dynamic)>)> {
    let mut consts: Vec<Dynamic> = Vec::new();
    let mut stack = vec![Dynamic::from_ast(f)];
    let mut seen: HashSet<Dynamic> = HashSet::new();
    while let Some(x) = stack.pop() {
        if !seen.insert(x.clone()) {
            continue;
        }
        match x.kind() {
            AstKind::App if is_constant(&x) => consts.push(x),
            AstKind::App => stack.extend(x.children()),
            AstKind::Numeral => {}
            _ => return None,
        }
    }
    let mut pairs: Vec<(Dynamic, Dynamic)> = Vec::new();
    let mut symbols: Vec<(VarId, Dynamic)> = Vec::new();
    for c in consts {
        let v = ssa_var(&c.decl().name())?;
        if v.func().map_or(v.index() >= p.globals.len(), |g| g.0 as usize >= p.functions.len() || v.index() >= p.cfa(g).locals.len()) {
            return None;
        }
        let s = Dynamic::new_const(format!("s{}", v.0), &c.get_sort());
        if !symbols.iter().any(|(w, _)| *w == v) {
            symbols.push((v, s.clone()));
        }
        pairs.push((c, s));
    }
    symbols.sort_by_key(|(v, _)| *v);
    let refs: Vec<(&Dynamic, &Dynamic)> = pairs.iter().map(|(a, b)| (a, b)).collect();
    Some((f.substitute(&refs), symbols))
}

/// True if the predicate's truth follows from its variables' C types alone.
fn trivial(p: &Program, f: &Bool, symbols: &[(VarId, Dynamic)], cancel: &Cancel) -> bool {
    // The integer terms with a C type: scalar variables and the array elements read.
    let mut typed: Vec<(Int, IntTy)> = symbols
        .iter()
        .filter_map(|(v, sym)| match p.var(*v).kind {
            VarKind::Int(t) => sym.as_int().map(|x| (x, t)),
            VarKind::Array { .. } => None,
        })
        .collect();
    let mut stack = vec![Dynamic::from_ast(f)];
    let mut seen = HashSet::new();
    while let Some(x) = stack.pop() {
        if x.kind() != AstKind::App || !seen.insert(x.clone()) {
            continue;
        }
        let ch = x.children();
        if x.decl().kind() == DeclKind::Select && ch.len() == 2 {
            let elem = symbols.iter().find(|(_, s)| *s == ch[0]).and_then(|(v, _)| match p.var(*v).kind {
                VarKind::Array { elem, .. } => Some(elem),
                VarKind::Int(_) => None,
            });
            if let (Some(t), Some(e)) = (elem, x.as_int()) {
                typed.push((e, t));
            }
        }
        stack.extend(ch);
    }
    let s = solver(cancel, QUERY_MS);
    for (x, t) in &typed {
        s.assert(x.ge(Int::from_i128(IntTy::min(*t))));
        s.assert(x.le(Int::from_i128(IntTy::max(*t))));
    }
    s.check_assumptions(std::slice::from_ref(f)) == SatResult::Unsat || s.check_assumptions(&[f.not()]) == SatResult::Unsat
}

/// The atoms (comparisons of non-Boolean terms) of a Boolean formula, in formula order.
fn atoms(f: &Dynamic, out: &mut Vec<Bool>, seen: &mut HashSet<Dynamic>) {
    if f.kind() != AstKind::App || !seen.insert(f.clone()) {
        return;
    }
    let ch = f.children();
    let is_bool = |d: &Dynamic| d.as_bool().is_some();
    match f.decl().kind() {
        DeclKind::And | DeclKind::Or | DeclKind::Not | DeclKind::Implies | DeclKind::Xor | DeclKind::Iff => {
            ch.iter().for_each(|c| atoms(c, out, seen))
        }
        DeclKind::Ite => ch.iter().filter(|c| is_bool(c)).for_each(|c| atoms(c, out, seen)),
        DeclKind::Eq if ch.len() == 2 && is_bool(&ch[0]) => ch.iter().for_each(|c| atoms(c, out, seen)),
        DeclKind::Eq | DeclKind::Le | DeclKind::Ge | DeclKind::Lt | DeclKind::Gt | DeclKind::Distinct => {
            if let Some(b) = f.as_bool() {
                out.push(b);
            }
        }
        _ => {}
    }
}

/// A term as C-like text (symbols by variable name).
fn c_text(d: &Dynamic, names: &HashMap<String, String>) -> String {
    if d.kind() == AstKind::Numeral {
        return d.to_string().replace("(- ", "-").replace(')', "");
    }
    if d.kind() != AstKind::App {
        return d.to_string();
    }
    if is_constant(d) {
        let s = d.to_string();
        return names.get(&s).cloned().unwrap_or(s);
    }
    let ch: Vec<String> = d.children().iter().map(|c| c_text(c, names)).collect();
    let wrap = |s: &String| if s.contains(' ') { format!("({s})") } else { s.clone() };
    let infix = |op: &str| ch.iter().map(wrap).collect::<Vec<_>>().join(&format!(" {op} "));
    match d.decl().kind() {
        DeclKind::Not => format!("!{}", wrap(&ch[0])),
        DeclKind::And => infix("&&"),
        DeclKind::Or => infix("||"),
        DeclKind::Eq => infix("=="),
        DeclKind::Distinct if ch.len() == 2 => infix("!="),
        DeclKind::Le => infix("<="),
        DeclKind::Ge => infix(">="),
        DeclKind::Lt => infix("<"),
        DeclKind::Gt => infix(">"),
        DeclKind::Add => {
            // `t + (-1 * u)` reads `t - u`.
            let mut out = wrap(&ch[0]);
            for (c, text) in d.children().iter().zip(&ch).skip(1) {
                let neg = c.kind() == AstKind::App
                    && c.decl().kind() == DeclKind::Mul
                    && c.num_children() == 2
                    && c.children()[0].to_string() == "(- 1)";
                match neg {
                    true => out += &format!(" - {}", wrap(&c_text(&c.children()[1], names))),
                    false => out += &format!(" + {}", wrap(text)),
                }
            }
            out
        }
        DeclKind::Sub => infix("-"),
        DeclKind::Mul => infix("*"),
        DeclKind::Mod => infix("%"),
        DeclKind::Idiv => infix("/"),
        DeclKind::Uminus => format!("-{}", wrap(&ch[0])),
        DeclKind::Select if ch.len() == 2 => format!("{}[{}]", ch[0], ch[1]),
        DeclKind::Ite if ch.len() == 3 => format!("{} ? {} : {}", wrap(&ch[0]), wrap(&ch[1]), wrap(&ch[2])),
        _ => d.to_string(),
    }
}

/// Adds predicates for an infeasible concrete path (seed 003 §8: predicate discovery when the
/// approximation cannot be refined, by interpolation as HJMM04): the atoms of sequence
/// interpolants of the path cut after every operation; when interpolation fails or gives
/// nothing new, the atoms of the path's branch conditions. Returns how many were added.
pub fn discover(
    p: &Program,
    ops: &[OpCtx],
    preds: &mut Predicates,
    order: &[Strategy],
    max: usize,
    cancel: &Cancel,
) -> Result<usize, String> {
    let before = preds.len();
    let mut failure = None;
    let mut found: Vec<Bool> = Vec::new();
    let blocks: Vec<Block> = ops.iter().map(|o| Block::of_path(std::slice::from_ref(o))).collect();
    // Ideal integers first: without C's wrap-around terms the atoms are the plain relations a
    // user would write (`a[z] == y`); they are evaluated with C's semantics all the same.
    let encodings = [Theory::Int { ranges: false, exact: false, parity: false }, THEORY];
    match crate::smt::interpolate::sequence_interpolant_formulas_in(p, &blocks, order, &encodings, cancel) {
        Ok((strategy, itps, _)) => {
            tracing::debug!("tra: interpolants by {}", strategy.name());
            let mut seen = HashSet::new();
            for i in &itps {
                atoms(&Dynamic::from_ast(i), &mut found, &mut seen);
            }
        }
        Err(e) => failure = Some(e),
    }
    for a in &found {
        if preds.len() >= max {
            break;
        }
        preds.add_atom(p, a, cancel);
    }
    if preds.len() == before {
        let mut enc = Encoder::new(p, THEORY, false);
        let mut seen = HashSet::new();
        let mut conds = Vec::new();
        for op in ops {
            if let OpKind::Edge(EdgeKind::Assume { cond, .. }) = op.kind {
                let (c, _) = enc.cond(cond);
                atoms(&Dynamic::from_ast(&c.simplify_checked()), &mut conds, &mut seen);
            }
        }
        for a in &conds {
            if preds.len() >= max {
                break;
            }
            preds.add_atom(p, a, cancel);
        }
    }
    match (preds.len() - before, failure) {
        (0, Some(e)) => Err(e),
        (n, _) => Ok(n),
    }
}

/// The outcome of checking an abstract path in the exact abstraction.
#[derive(Debug)]
pub enum PathCheck {
    /// Infeasible: one transition interpolant (clauses) per step, together unsatisfiable.
    Refuted(Vec<Vec<Clause>>),
    /// Feasible in the exact abstraction: the predicates cannot refute it.
    Feasible,
    Unknown(String),
}

/// Every variable of the program.
fn all_vars(p: &Program) -> Vec<VarId> {
    let mut out: Vec<VarId> = (0..p.globals.len()).map(VarId::global).collect();
    for f in p.func_ids() {
        out.extend((0..p.cfa(f).locals.len()).map(|i| VarId::local(f, i)));
    }
    out
}

fn bit(step: usize, pred: usize) -> Bool {
    Bool::new_const(format!("tra_b{step}_{pred}"))
}

fn literal(step: usize, l: Lit) -> Bool {
    let b = bit(step + l.next as usize, l.pred as usize);
    if l.positive {
        b
    } else {
        b.not()
    }
}

/// Symmetric transition interpolants for `ops` under `preds` (seed 003 §6.1), by route I6.
/// `approx[i]` is the current approximation of operation `i` (it is implied by the exact
/// abstraction, so it seeds `C_i`). Counts solver queries in `queries`.
pub fn transition_interpolants(
    p: &Program,
    preds: &Predicates,
    ops: &[OpCtx],
    approx: &[&[Clause]],
    queries: &mut u64,
    cancel: &Cancel,
) -> PathCheck {
    let n = preds.len();
    let vars = all_vars(p);
    // The exact abstract step formulas, concrete symbols fresh per step.
    let mut enc = Encoder::new(p, THEORY, false);
    let mut steps: Vec<Solver> = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        let n0 = enc.constraints.len();
        for v in &vars {
            enc.bump(*v, None);
        }
        let pre = preds.instantiate(&mut enc);
        enc.op(op);
        let post = preds.instantiate(&mut enc);
        let s = solver(cancel, QUERY_MS);
        for c in &enc.constraints[n0..] {
            s.assert(c);
        }
        for (j, f) in pre.iter().enumerate() {
            s.assert(bit(i, j).iff(f));
        }
        for (j, f) in post.iter().enumerate() {
            s.assert(bit(i + 1, j).iff(f));
        }
        steps.push(s);
    }
    // The propositional skeleton, one tracking literal per clause.
    let skeleton = Solver::new();
    let mut tracked: Vec<(Bool, usize, Clause)> = Vec::new();
    let add = |skeleton: &Solver, tracked: &mut Vec<(Bool, usize, Clause)>, step: usize, c: Clause| {
        if tracked.iter().any(|(_, s, d)| *s == step && *d == c) {
            return;
        }
        let ind = Bool::new_const(format!("tra_c{}", tracked.len()));
        let lits: Vec<Bool> = c.iter().map(|l| literal(step, *l)).collect();
        let refs: Vec<&Bool> = lits.iter().collect();
        skeleton.assert(ind.implies(Bool::or(&refs)));
        tracked.push((ind, step, c));
    };
    for (i, cs) in approx.iter().enumerate() {
        for c in cs.iter() {
            add(&skeleton, &mut tracked, i, c.clone());
        }
    }
    for _ in 0..MAX_ROUNDS {
        if let Err(i) = cancel.check() {
            return PathCheck::Unknown(i.describe());
        }
        let inds: Vec<Bool> = tracked.iter().map(|(b, _, _)| b.clone()).collect();
        *queries += 1;
        match skeleton.check_assumptions(&inds) {
            SatResult::Unsat => {
                let core: Vec<Bool> = skeleton.get_unsat_core();
                let mut out: Vec<Vec<Clause>> = vec![Vec::new(); ops.len()];
                for (ind, step, c) in &tracked {
                    if core.contains(ind) {
                        out[*step].push(c.clone());
                    }
                }
                for cs in &mut out {
                    cs.sort();
                }
                return PathCheck::Refuted(out);
            }
            SatResult::Unknown => return PathCheck::Unknown("the propositional skeleton query gave up".into()),
            SatResult::Sat => {}
        }
        let Some(model) = skeleton.get_model() else { return PathCheck::Unknown("no model of the propositional skeleton".into()) };
        let value = |step: usize, j: usize| model.eval(&bit(step, j), true).and_then(|b| b.as_bool()).unwrap_or(false);
        let mut refuted = false;
        for (i, s) in steps.iter().enumerate() {
            let cube: Vec<Lit> = (0..n)
                .flat_map(|j| [(j, false), (j, true)])
                .map(|(j, next)| Lit { pred: j as u32, next, positive: value(i + next as usize, j) })
                .collect();
            match minimal_core(s, i, &cube, queries) {
                Ok(Some(core)) => {
                    refuted = true;
                    let clause: Clause = core.iter().map(|l| Lit { positive: !l.positive, ..*l }).collect();
                    add(&skeleton, &mut tracked, i, clause);
                }
                Ok(None) => {}
                Err(why) => return PathCheck::Unknown(why),
            }
        }
        if !refuted {
            return PathCheck::Feasible;
        }
    }
    PathCheck::Unknown(format!("more than {MAX_ROUNDS} rounds of transition interpolation"))
}

/// A minimal subset of `cube` inconsistent with step `i` (Das & Dill's greedy cube
/// minimisation, seed 003 §8), `None` if the cube is consistent.
fn minimal_core(s: &Solver, i: usize, cube: &[Lit], queries: &mut u64) -> Result<Option<Vec<Lit>>, String> {
    let lits: Vec<Bool> = cube.iter().map(|l| literal(i, *l)).collect();
    *queries += 1;
    match s.check_assumptions(&lits) {
        SatResult::Sat => return Ok(None),
        SatResult::Unknown => return Err(format!("a step query gave up ({})", s.get_reason_unknown().unwrap_or_default())),
        SatResult::Unsat => {}
    }
    let in_core: Vec<Bool> = s.get_unsat_core();
    let mut keep: Vec<Lit> = cube.iter().zip(&lits).filter(|(_, b)| in_core.contains(b)).map(|(l, _)| *l).collect();
    let mut k = 0;
    while k < keep.len() {
        let mut without = keep.clone();
        without.remove(k);
        let bs: Vec<Bool> = without.iter().map(|l| literal(i, *l)).collect();
        *queries += 1;
        if s.check_assumptions(&bs) == SatResult::Unsat {
            keep = without;
        } else {
            k += 1;
        }
    }
    Ok(Some(keep))
}

#[cfg(test)]
mod tests {
    use biodivine_lib_bdd::{BddVariable, BddVariableSet};

    use super::*;
    use crate::cfa::OpKind;
    use crate::ir::{BinOp, Expr, FuncId, IntTy, LValue, Stmt};
    use crate::smt::interpolate::tests_support::{load, path_to_target};

    const FIG2: &str = include_str!("../../../../fixtures/seed003/fig2_array_path.c");

    fn local(p: &Program, f: FuncId, name: &str) -> VarId {
        let i = p.cfa(f).locals.iter().position(|v| v.name == name).expect("local exists");
        VarId::local(f, i)
    }

    /// Seed 003 Fig. 2 with the paper's predicates (from HJMM04) `x = z`, `a[z] = y`,
    /// `a[z] = y − 1`: the path is infeasible in the exact abstraction, and the transition
    /// interpolant of `a[x] ← y` is the disjunction `(x=z)′ ⇒ (a[z]=y)′`, which neither a
    /// Cartesian image nor a cube can express (the paper's point: Blast fails on this path).
    #[test]
    fn fig2_transition_interpolants_refute_the_path() {
        let p = load(FIG2);
        let main = p.entry.expect("main");
        let (x, y, z) = (local(&p, main, "x"), local(&p, main, "y"), local(&p, main, "z"));
        let a = VarId::global(p.globals.iter().position(|v| v.name == "a").expect("global a"));
        let u = IntTy::U32;
        let var = |v| Box::new(Expr::Var(v, u));
        let elem = Expr::Elem(a, Box::new(Expr::Var(z, u).cast(IntTy::I64)), u);
        let eq = |l: Expr, r: Expr| Expr::Binary(BinOp::Eq, Box::new(l), Box::new(r), IntTy::INT);
        let cancel = Cancel::new();
        let mut preds = Predicates::default();
        assert!(preds.add_condition(&p, &eq(Expr::Var(x, u), Expr::Var(z, u)), &cancel));
        assert!(preds.add_condition(&p, &eq(elem.clone(), Expr::Var(y, u)), &cancel));
        assert!(preds.add_condition(&p, &eq(elem, Expr::Binary(BinOp::Sub, var(y), Box::new(Expr::Const(1, u)), u)), &cancel));
        let ops = path_to_target(&p);
        let none: Vec<&[Clause]> = vec![&[]; ops.len()];
        let mut queries = 0;
        let PathCheck::Refuted(itps) = transition_interpolants(&p, &preds, &ops, &none, &mut queries, &cancel) else {
            panic!("the Fig. 2 path is infeasible in the exact abstraction")
        };
        // Independently of how they were found: the interpolants together admit no path.
        let n = preds.len();
        let k = ops.len();
        let vars = BddVariableSet::new_anonymous(((k + 1) * n) as u16);
        let at =
            |step: usize, l: &Lit| vars.mk_literal(BddVariable::from_index((step + l.next as usize) * n + l.pred as usize), l.positive);
        let step_bdd =
            |i: usize| itps[i].iter().fold(vars.mk_true(), |acc, c| acc.and(&c.iter().fold(vars.mk_false(), |d, l| d.or(&at(i, l)))));
        let all = (0..k).fold(vars.mk_true(), |acc, i| acc.and(&step_bdd(i)));
        assert!(all.is_false(), "the transition interpolants rule out the path");
        // The store `a[x] = y`.
        let store = ops
            .iter()
            .position(|o| matches!(o.kind, OpKind::Edge(EdgeKind::Statement(Stmt::Assign(LValue::Elem(v, _), _))) if *v == a))
            .expect("the path stores into a");
        let t = step_bdd(store);
        let lit = |pred: u32, positive: bool| at(store, &Lit { pred, next: true, positive });
        let disjunction = lit(0, false).or(&lit(1, true));
        assert!(t.imp(&disjunction).is_true(), "T̂(a[x] ← y) implies (x=z)′ ⇒ (a[z]=y)′: {:?}", itps[store]);
        assert!(!t.imp(&lit(1, true)).is_true() && !t.imp(&lit(0, false)).is_true(), "and is no cube: {:?}", itps[store]);
        assert!(itps[store].iter().any(|c| c.len() >= 2), "a clause with two literals: {:?}", itps[store]);
    }

    /// Seed 003 §7: on a path that needs `p: x > 0` and `q: y > 0` across an operation that
    /// touches neither, the learned transition interpolant is the strong CNF form
    /// `(p ⇒ p′) ∧ (q ⇒ q′)`, not the weak `(p ∧ q) ⇒ (p′ ∧ q′)` (which rules out fewer other
    /// paths): minimal inconsistent cubes of an identity step have two literals.
    #[test]
    fn s7_strong_cnf_interpolant() {
        let src = "extern int __VERIFIER_nondet_int(void);\nextern void reach_error(void);\nint main(void) {\n  int x = __VERIFIER_nondet_int(), y = __VERIFIER_nondet_int(), w = 0;\n  if (!(x > 0)) return 0;\n  if (!(y > 0)) return 0;\n  w = w + 1;\n  if ((x > 0) + (y > 0) != 2) reach_error();\n  return w;\n}\n";
        let p = load(src);
        let main = p.entry.expect("main");
        let (x, y, w) = (local(&p, main, "x"), local(&p, main, "y"), local(&p, main, "w"));
        let cancel = Cancel::new();
        let mut preds = Predicates::default();
        for v in [x, y] {
            let gt = Expr::Binary(BinOp::Gt, Box::new(Expr::Var(v, IntTy::INT)), Box::new(Expr::Const(0, IntTy::INT)), IntTy::INT);
            assert!(preds.add_condition(&p, &gt, &cancel));
        }
        let ops = path_to_target(&p);
        let none: Vec<&[Clause]> = vec![&[]; ops.len()];
        let PathCheck::Refuted(itps) = transition_interpolants(&p, &preds, &ops, &none, &mut 0, &cancel) else {
            panic!("the path is infeasible in the exact abstraction")
        };
        let r = ops
            .iter()
            .rposition(|o| matches!(o.kind, OpKind::Edge(EdgeKind::Statement(Stmt::Assign(LValue::Var(v), _)) | EdgeKind::Declaration(Stmt::Assign(LValue::Var(v), _))) if *v == w))
            .expect("the path has w = w + 1");
        let vars = BddVariableSet::new_anonymous(4);
        let lit = |l: &Lit| vars.mk_literal(BddVariable::from_index(2 * l.pred as usize + l.next as usize), l.positive);
        let t = itps[r].iter().fold(vars.mk_true(), |acc, c| acc.and(&c.iter().fold(vars.mk_false(), |d, l| d.or(&lit(l)))));
        let keeps = |j: u32| lit(&Lit { pred: j, next: false, positive: false }).or(&lit(&Lit { pred: j, next: true, positive: true }));
        assert!(t.imp(&keeps(0).and(&keeps(1))).is_true(), "T̂(r) implies (p ⇒ p′) ∧ (q ⇒ q′): {:?}", itps[r]);
        assert!(itps[r].iter().all(|c| c.len() <= 2), "CNF of two-literal clauses: {:?}", itps[r]);
    }

    /// A path feasible in the program is feasible in every abstraction.
    #[test]
    fn feasible_path_is_not_refuted() {
        let p = load("extern int __VERIFIER_nondet_int(void);\nextern void reach_error(void);\nint main(void) { int x = __VERIFIER_nondet_int(); if (x > 5) reach_error(); return 0; }\n");
        let main = p.entry.expect("main");
        let x = local(&p, main, "x");
        let cancel = Cancel::new();
        let mut preds = Predicates::default();
        let cond = Expr::Binary(BinOp::Gt, Box::new(Expr::Var(x, IntTy::INT)), Box::new(Expr::Const(5, IntTy::INT)), IntTy::INT);
        assert!(preds.add_condition(&p, &cond, &cancel));
        assert!(!preds.add_condition(&p, &cond, &cancel), "a known predicate is not added twice");
        let ops = path_to_target(&p);
        let none: Vec<&[Clause]> = vec![&[]; ops.len()];
        assert!(matches!(transition_interpolants(&p, &preds, &ops, &none, &mut 0, &cancel), PathCheck::Feasible));
    }
}
