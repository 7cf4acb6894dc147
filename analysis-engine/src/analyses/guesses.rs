//! Loop invariants guessed from the program's own text and kept only where they are inductive
//! (Houdini: Flanagan and Leino, *Houdini, an Annotation Assistant for ESC/Java*, FME 2001,
//! §2): at every loop head, the conditions the function asserts (an assertion at the top of a
//! loop body is often the loop's invariant: the polynomial equalities of SV-COMP's
//! `nla-digbench`, such as `y*y - 2*x + y == 0`), equalities and orderings between its scalar
//! variables, and "`x` is at most `y`, or still zero" (a counter bounded by a variable the loop
//! may never reach); at an assertion helper's entry, that its parameter is nonzero. The
//! largest inductive subset is kept (bit-precise, `invariants::inductive_subset`, where a
//! polynomial identity is normalised to a sum of monomials), and a property is proved when
//! that annotation shows its target unreachable (`invariants::unreachable_targets`). It runs
//! first only for a program that asserts a condition beyond linear arithmetic (products of
//! variables, bitwise operations, division): linear invariants are the template and Horn
//! clause phases'. When that leaves a property open, a second round adds what the concrete
//! runs' loop-head states suggest (`learned`: DIG's polynomial equalities from the null
//! space of their monomials, and difference bounds). For a program whose assertions are
//! linear it runs later, after the template analysis (`prove_linear_program`), once, with the
//! runs' linear equalities (`a + b == 3*i`, which octagons do not express) and bounds.

use std::collections::{BTreeMap, BTreeSet};

use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{One, ToPrimitive, Zero};

use crate::cfa::{EdgeKind, NodeId, Program};
use crate::core::Cancel;
use crate::invariants::{inductive_subset, unreachable_targets, Annotations};
use crate::ir::{BinOp, Expr, FuncId, IntTy, UnOp, VarId, VarKind};
use crate::properties::{Property, PropertyKey};

/// Candidates per loop head at most (each costs a query per round of Houdini).
const MAX_CANDIDATES: usize = 300;
/// Scalars per function the pairwise candidates range over (their number is quadratic).
const MAX_SCALARS: usize = 12;

/// What one use of the phase guesses from.
#[derive(Clone, Copy)]
enum Mode<'k> {
    /// For a program that asserts a condition beyond linear arithmetic: the text's
    /// candidates, then, if that leaves a property open, with the runs' polynomial
    /// equalities and difference bounds.
    Polynomial,
    /// For a program whose assertions are linear, after the linear phases: its assertions
    /// and these candidates with the runs' linear equalities and bounds, in one round.
    Linear(&'k Annotations),
}

/// The open properties the guessed invariants show to hold, for a program that asserts a
/// condition beyond linear arithmetic (nothing otherwise).
pub fn prove_program(p: &Program, open: &[Property], cancel: &Cancel) -> BTreeSet<PropertyKey> {
    prove(p, open, cancel, Mode::Polynomial).proved
}

/// What the phase found.
#[derive(Default)]
pub struct Guessed {
    /// The properties shown to hold.
    pub proved: BTreeSet<PropertyKey>,
    /// The inductive annotation (at loop heads and assertion helpers' entries) of the last
    /// round, checked bit-precisely, whether or not it proved something.
    pub invariants: Annotations,
}

/// The open properties that invariants learned from runs (with the program's assertions and
/// `known`) show to hold, for a program whose assertions are linear (nothing otherwise):
/// equalities such as `a + b == 3*i` or `2*k + i == 2*n` that octagons do not express and
/// Spacer's solution over the integers may miss.
/// `known` are candidates from other phases (the templates' invariants, over mathematical
/// integers): their bounds (`n <= 1000000`) are what keeps a learned equality from wrapping
/// around bit-precisely.
pub fn prove_linear_program(p: &Program, open: &[Property], known: &Annotations, cancel: &Cancel) -> Guessed {
    prove(p, open, cancel, Mode::Linear(known))
}

fn prove(p: &Program, open: &[Property], cancel: &Cancel, mode: Mode) -> Guessed {
    let target_node = |k: &PropertyKey| p.cfa(k.func).node_ids().find(|&n| p.cfa(k.func).node(n).target == Some(k.target));
    let targets: BTreeSet<(FuncId, NodeId)> = open.iter().filter_map(|pr| Some((pr.key.func, target_node(&pr.key)?))).collect();
    if targets.is_empty() {
        return Guessed::default();
    }
    let funcs = p.reachable_functions(p.start);
    let polynomial = funcs.iter().any(|&f| asserted(p, f).iter().any(beyond_linear));
    if polynomial != matches!(mode, Mode::Polynomial) {
        tracing::debug!("guesses: {} assertion beyond linear arithmetic", if polynomial { "an" } else { "no" });
        return Guessed::default();
    }
    let mut cands = Annotations::new();
    let sizes = static_sizes(p);
    for f in funcs {
        let cfa = p.cfa(f);
        let memory = match mode {
            Mode::Linear(_) if f != p.start => memory_candidates(p, f),
            _ => Vec::new(),
        };
        // At the entry of a function that reads memory: the objects' sizes, and its checks
        // over its parameters (`pc->array` within bounds), checked at every call.
        if !memory.is_empty() {
            let params_only = |e: &Expr| {
                let mut vs = Vec::new();
                e.vars(&mut vs);
                vs.iter().all(|v| cfa.params.contains(v) || v.func().is_none())
            };
            let entry: Vec<Expr> = sizes.iter().chain(memory.iter().filter(|e| params_only(e))).cloned().collect();
            cands.insert((f, cfa.entry), entry);
        }
        let heads: Vec<NodeId> = cfa.loop_heads().filter(|&n| cfa.node(n).rpo != u32::MAX).collect();
        if heads.is_empty() {
            continue;
        }
        // (For a linear program, the pairwise orderings are the templates' and the runs'
        // bounds: only its assertions are taken from the text.)
        let at_loops = match mode {
            Mode::Polynomial => candidates(p, f),
            Mode::Linear(_) => {
                let mut here = asserted(p, f);
                if !memory.is_empty() {
                    here.extend(sizes.iter().chain(&memory).filter(|e| !here.contains(e)).cloned().collect::<Vec<_>>());
                }
                here
            }
        };
        for n in heads {
            let mut here = at_loops.clone();
            if let Mode::Linear(known) = mode {
                here.extend(known.get(&(f, n)).into_iter().flatten().filter(|e| !at_loops.contains(e)).cloned());
            }
            cands.insert((f, n), here);
        }
    }
    // At the entry of an assertion helper with a target: its parameters are nonzero.
    for &(f, _) in &targets {
        let cfa = p.cfa(f);
        if cfa.assert_helper && f != p.start {
            let nonzero: Vec<Expr> = cfa
                .params
                .iter()
                .filter(|&&v| matches!(p.var(v).kind, VarKind::Int(_)))
                .map(|&v| binary(BinOp::Ne, wide(p, v), Expr::Const(0, IntTy::I64)))
                .collect();
            cands.entry((f, cfa.entry)).or_default().extend(nonzero);
        }
    }
    let before: usize = cands.values().map(Vec::len).sum();
    // (Loop heads without candidates stay: the runs observe only annotated heads, and a
    // linear program's learned candidates are all it has there.)
    let observed = refute_by_runs(p, &mut cands, cancel);
    tracing::debug!("guesses: {} of {} candidates survive the runs", cands.values().map(Vec::len).sum::<usize>(), before);
    // What the runs' states suggest (it holds in every state seen). For polynomial programs
    // it is tried second, with the time the first try leaves: its products make queries
    // slower, and must not cost what the program's text alone proves.
    let mut with_learned = cands.clone();
    for (head, obs) in &observed {
        if let Some(list) = with_learned.get_mut(head) {
            let from_runs = learned(p, obs, mode);
            tracing::debug!(
                "guesses: {} candidates learned from {} states at {}@{}",
                from_runs.len(),
                obs.states.len(),
                p.cfa(head.0).name,
                head.1 .0
            );
            for e in from_runs {
                if !list.contains(&e) {
                    list.push(e);
                }
            }
        }
    }
    let mut found = match mode {
        Mode::Polynomial => houdini(p, open, &targets, cands.clone(), cancel),
        Mode::Linear(_) => Guessed::default(),
    };
    let linear = matches!(mode, Mode::Linear(_));
    if found.proved.len() < open.len() && (with_learned != cands || linear) && cancel.check().is_ok() {
        let left: Vec<Property> = open.iter().filter(|pr| !found.proved.contains(&pr.key)).cloned().collect();
        let second = houdini(p, &left, &targets, with_learned, cancel);
        found.proved.extend(second.proved);
        found.invariants = second.invariants;
    }
    tracing::debug!("guesses: {} of {} properties proved", found.proved.len(), open.len());
    found
}

/// The inductive subset of `cands` and the properties of `open` it shows to hold.
fn houdini(p: &Program, open: &[Property], targets: &BTreeSet<(FuncId, NodeId)>, cands: Annotations, cancel: &Cancel) -> Guessed {
    if cands.is_empty() {
        return Guessed::default();
    }
    tracing::debug!("guesses: {} candidates at {} cut points", cands.values().map(Vec::len).sum::<usize>(), cands.len());
    if tracing::enabled!(tracing::Level::TRACE) {
        for ((f, n), c) in &cands {
            let shown: Vec<String> = c.iter().map(|e| crate::cfa::pretty::expr(p, e, true)).collect();
            tracing::trace!("guesses: candidates at {}@{}: {}", p.cfa(*f).name, n.0, shown.join(" ; "));
        }
    }
    let inv = inductive_subset(p, cands, cancel);
    if cancel.check().is_err() || inv.is_empty() {
        tracing::debug!("guesses: nothing inductive{}", if cancel.check().is_err() { " (out of time)" } else { "" });
        return Guessed::default();
    }
    if tracing::enabled!(tracing::Level::DEBUG) {
        for ((f, n), c) in &inv {
            let shown: Vec<String> = c.iter().map(|e| crate::cfa::pretty::expr(p, e, true)).collect();
            tracing::debug!("guesses: inductive at {}@{}: {}", p.cfa(*f).name, n.0, shown.join(" && "));
        }
    }
    let target_node = |k: &PropertyKey| p.cfa(k.func).node_ids().find(|&n| p.cfa(k.func).node(n).target == Some(k.target));
    let shown = unreachable_targets(p, &inv, targets, cancel);
    if cancel.check().is_err() {
        return Guessed { proved: BTreeSet::new(), invariants: inv };
    }
    let proved = open.iter().map(|pr| pr.key).filter(|k| target_node(k).is_some_and(|n| shown.contains(&(k.func, n)))).collect();
    Guessed { proved, invariants: inv }
}

/// Whether `e` is beyond what the linear phases express: a product of variables, a division or
/// remainder, a bitwise operation or a shift (`y*y == 2*x + 1`, `(x & 5) == 5`).
fn beyond_linear(e: &Expr) -> bool {
    let mut found = crate::invariants::nonlinear(e);
    e.walk(&mut |x| {
        found |=
            matches!(x, Expr::Binary(BinOp::Div | BinOp::Rem | BinOp::Shl | BinOp::Shr | BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor, ..));
    });
    found
}

/// Runs of the program whose loop-head states refute candidates (a few steps each).
const RUNS: u64 = 18;
const RUN_STEPS: u64 = 20_000;
/// Loop-head states looked at per loop head and run at most.
const STATES_PER_HEAD: u32 = 200;

/// Drops the candidates some concrete run's state at their loop head refutes (Ernst et al.'s
/// Daikon, and DIG for `nla-digbench`, learn invariants from such states): an invariant holds
/// in every state a run reaches, so what remains is what Houdini has to check. Returns the
/// states seen at each annotated loop head, as the values of its function's scalars
/// ([`scalars`]), for [`learned`].
fn refute_by_runs(p: &Program, cands: &mut Annotations, cancel: &Cancel) -> BTreeMap<(FuncId, NodeId), Observed> {
    struct Refuter<'a> {
        p: &'a Program,
        cands: &'a mut Annotations,
        seen: std::collections::HashMap<(FuncId, NodeId), u32>,
        observed: BTreeMap<(FuncId, NodeId), Observed>,
    }
    impl crate::concrete::HeadObserver for Refuter<'_> {
        fn at_head(&mut self, func: FuncId, node: NodeId, eval: &mut dyn FnMut(&Expr) -> Option<i128>) {
            let Some(list) = self.cands.get_mut(&(func, node)) else { return };
            let seen = self.seen.entry((func, node)).or_default();
            *seen += 1;
            if *seen > STATES_PER_HEAD {
                return;
            }
            list.retain(|e| eval(e) != Some(0));
            let p = self.p;
            let obs = self.observed.entry((func, node)).or_insert_with(|| Observed { vars: scalars(p, func), states: BTreeSet::new() });
            // (A variable declared after the loop has no value at its head.)
            let state: Vec<Option<i128>> = obs.vars.iter().map(|&v| eval(&Expr::Var(v, p.var(v).int_ty()))).collect();
            obs.states.insert(state);
        }
    }
    let plan = crate::concrete::Plan::new(p);
    let limits = crate::concrete::RunLimits {
        max_steps: RUN_STEPS,
        max_inputs: 10_000,
        keep_ops: 0,
        trace_steps: 2,
        max_frames: 10_000,
        accelerate: false,
    };
    let mut r = Refuter { p, cands, seen: Default::default(), observed: BTreeMap::new() };
    for k in 0..RUNS {
        if cancel.check().is_err() {
            break;
        }
        let mut strategy: Box<dyn crate::concrete::InputStrategy> = match k {
            0 => Box::new(crate::concrete::Zeros),
            1..=4 => Box::new(crate::concrete::Boundary::new(k)),
            5..=11 => Box::new(crate::concrete::Constant(k as i128 - 3)),
            _ => Box::new(crate::concrete::Small::new(k)),
        };
        r.seen.clear();
        let run = crate::concrete::run_observed(p, &plan, strategy.as_mut(), &limits, cancel, &mut r);
        if run.inputs.is_empty() && run.choices == 0 {
            // Every run would be this one.
            break;
        }
    }
    r.observed
}

/// The states runs reached at one loop head: the values of `vars` (`None`: the variable had
/// none, not yet declared), each state once.
struct Observed {
    vars: Vec<VarId>,
    states: BTreeSet<Vec<Option<i128>>>,
}

impl Observed {
    /// The variables with a value in every state, and the states over them, each once.
    fn defined(&self) -> (Vec<VarId>, Vec<Vec<i128>>) {
        let cols: Vec<usize> = (0..self.vars.len()).filter(|&i| self.states.iter().all(|s| s[i].is_some())).collect();
        let states: BTreeSet<Vec<i128>> = self.states.iter().map(|s| cols.iter().filter_map(|&i| s[i]).collect()).collect();
        (cols.iter().map(|&i| self.vars[i]).collect(), states.into_iter().collect())
    }
}

/// Equalities learned per loop head at most (the null space's sparsest vectors).
const MAX_EQUALITIES: usize = 6;
/// The degree of the monomials equalities are learned over (DIG's default; cubic ones put
/// products of three 64-bit terms into every query of Houdini, which then does not end in
/// its time on `nla-digbench`'s loops).
const MAX_DEGREE: usize = 2;
/// Difference bounds `x - y <= c` are learned for `|c|` up to this: the off-by-one bounds
/// of counters against their limits (`n <= a + 1` when the loop ends at `n == a + 1`); a
/// large observed bound is the runs' inputs, not an invariant.
const MAX_OFFSET: i128 = 8;

/// Candidates learned from the states runs reached at a loop head (Nguyen, Kapur, Weimer and
/// Forrest, *Using Dynamic Analysis to Discover Polynomial and Array Invariants*, ICSE 2012,
/// §3.1 and §3.2): the polynomial equalities every state satisfies (the null space of the
/// matrix of their monomials, up to degree [`MAX_DEGREE`] when there are enough states, else lower),
/// and octagonal difference bounds `x - y <= c` with their "or still zero" form. They hold in
/// every observed state by construction; Houdini decides whether they are invariants.
fn learned(p: &Program, obs: &Observed, mode: Mode) -> Vec<Expr> {
    let mut out = Vec::new();
    let (vars, states) = obs.defined();
    let n = vars.len();
    if states.len() < 2 || n == 0 {
        return out;
    }
    let degree = match mode {
        Mode::Polynomial => MAX_DEGREE,
        Mode::Linear(_) => 1,
    };
    // Monomials of the highest degree the states determine (at least as many states as
    // monomials; fewer would make the null space mostly coincidence).
    let Some(monomials) = (1..=degree).rev().map(|d| monomials(n, d)).find(|m| m.len() <= states.len()) else {
        return out;
    };
    let rows: Vec<Vec<BigRational>> = states
        .iter()
        .map(|s| monomials.iter().map(|m| BigRational::from_integer(m.iter().map(|&i| BigInt::from(s[i])).product())).collect())
        .collect();
    let mut basis = null_space(rows, monomials.len());
    // A relation whose monomials share a variable is that variable times a smaller relation
    // (`a*z - 6*a*n - 6*a == 0` of `z - 6*n - 6 == 0`): nothing Houdini needs, at the cost of
    // a product in every query.
    basis.retain(|v| {
        let mut common: Option<BTreeSet<usize>> = None;
        for (c, m) in v.iter().zip(&monomials) {
            if !c.is_zero() {
                let vars: BTreeSet<usize> = m.iter().copied().collect();
                common = Some(match common {
                    None => vars,
                    Some(s) => s.intersection(&vars).copied().collect(),
                });
            }
        }
        common.is_some_and(|s| s.is_empty())
    });
    basis.sort_by_key(|v| v.iter().filter(|c| !c.is_zero()).count());
    for v in basis.into_iter().take(MAX_EQUALITIES) {
        // A linear equality over variables of one type is taken in that type's own
        // wrap-around arithmetic: it then holds modulo 2^bits whatever the values, so its
        // step is a linear identity without the bounds its `long long` form needs to rule
        // out a wrap (`a + b - 3*i == 0` in `int`: a query of microseconds, where the wide
        // form's took Houdini's limit).
        let modular = match mode {
            Mode::Linear(_) => modular_eq(p, &vars, &monomials, &v),
            Mode::Polynomial => None,
        };
        if let Some(e) = modular.or_else(|| polynomial_eq(p, &vars, &monomials, &v)) {
            out.push(e);
        }
    }
    // For linear programs, bounds of one variable (`0 <= j` of a counter, `i <= 1`):
    // cheap in the queries, and what an equality needs beside it.
    if matches!(mode, Mode::Linear(_)) {
        for (i, &x) in vars.iter().enumerate() {
            let (lo, hi) = (states.iter().map(|s| s[i]).min(), states.iter().map(|s| s[i]).max());
            if let (Some(lo), Some(hi)) = (lo, hi) {
                if lo != hi && lo.abs() <= MAX_OFFSET {
                    out.push(binary(BinOp::Le, Expr::Const(lo, IntTy::I64), wide(p, x)));
                }
                if lo != hi && hi.abs() <= MAX_OFFSET {
                    out.push(binary(BinOp::Le, wide(p, x), Expr::Const(hi, IntTy::I64)));
                }
            }
        }
    }
    // Difference bounds, both ways, for each pair: over all states, and over the states where
    // the first is not zero (`n <= a + 1 | n == 0` for a counter that stays 0 when its limit
    // is negative).
    for i in 0..n {
        for j in 0..n {
            if i == j {
                continue;
            }
            let (x, y) = (vars[i], vars[j]);
            let diff = || Expr::Binary(BinOp::Sub, Box::new(wide(p, x)), Box::new(wide(p, y)), IntTy::I64);
            let all = states.iter().map(|s| s[i] - s[j]).max().expect("two states");
            let constant = states.iter().all(|s| s[i] - s[j] == all);
            // (A constant difference is an equality, learned above.)
            if all.abs() <= MAX_OFFSET && !constant {
                out.push(binary(BinOp::Le, diff(), Expr::Const(all, IntTy::I64)));
            }
            if let Some(c) = states.iter().filter(|s| s[i] != 0).map(|s| s[i] - s[j]).max() {
                if c.abs() <= MAX_OFFSET && c < all {
                    let bound = binary(BinOp::Le, diff(), Expr::Const(c, IntTy::I64));
                    out.push(binary(BinOp::BitOr, bound, binary(BinOp::Eq, wide(p, x), Expr::Const(0, IntTy::I64))));
                }
            }
        }
    }
    out
}

/// The monomials over `n` variables up to degree `d`, each as the indices of its factors
/// (the empty one is the constant 1).
fn monomials(n: usize, d: usize) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = vec![Vec::new()];
    let mut last: Vec<Vec<usize>> = vec![Vec::new()];
    for _ in 0..d {
        let next: Vec<Vec<usize>> = last
            .iter()
            .flat_map(|m| {
                let from = m.last().copied().unwrap_or(0);
                (from..n).map(move |i| {
                    let mut m2 = m.clone();
                    m2.push(i);
                    m2
                })
            })
            .collect();
        out.extend(next.iter().cloned());
        last = next;
    }
    out
}

/// A basis of the null space of `rows` (each `cols` long), exactly, by Gauss-Jordan
/// elimination over the rationals: the vectors `v` with `row · v == 0` for every row.
fn null_space(mut rows: Vec<Vec<BigRational>>, cols: usize) -> Vec<Vec<BigRational>> {
    let mut pivots: Vec<usize> = Vec::new();
    let mut r = 0;
    for c in 0..cols {
        let Some(k) = (r..rows.len()).find(|&k| !rows[k][c].is_zero()) else { continue };
        rows.swap(r, k);
        let inv = rows[r][c].recip();
        for x in rows[r].iter_mut() {
            *x = &*x * &inv;
        }
        let pivot_row = rows[r].clone();
        for (k, row) in rows.iter_mut().enumerate() {
            if k != r && !row[c].is_zero() {
                let f = row[c].clone();
                for (x, y) in row.iter_mut().zip(&pivot_row) {
                    *x = &*x - &(&f * y);
                }
            }
        }
        pivots.push(c);
        r += 1;
        if r == rows.len() {
            break;
        }
    }
    (0..cols)
        .filter(|c| !pivots.contains(c))
        .map(|free| {
            let mut v = vec![BigRational::zero(); cols];
            v[free] = BigRational::one();
            for (row, &pc) in pivots.iter().enumerate() {
                v[pc] = -rows[row][free].clone();
            }
            v
        })
        .collect()
}

/// A null-space vector scaled to coprime integers, each of magnitude below `limit`; `None`
/// for the zero vector or a larger coefficient.
fn coprime(v: &[BigRational], limit: u64) -> Option<Vec<i64>> {
    let lcm = v.iter().fold(BigInt::one(), |acc, c| acc.lcm(c.denom()));
    let ints: Vec<BigInt> = v.iter().map(|c| (c * BigRational::from_integer(lcm.clone())).to_integer()).collect();
    let gcd = ints.iter().fold(BigInt::zero(), |acc, c| acc.gcd(c));
    if gcd.is_zero() {
        return None;
    }
    ints.iter().map(|c| (c / &gcd).to_i64().filter(|c| c.unsigned_abs() < limit)).collect()
}

/// `Σ c·m == 0` in `long long` for a null-space vector, scaled to coprime integer
/// coefficients; `None` when one does not fit comfortably.
fn polynomial_eq(p: &Program, vars: &[VarId], monomials: &[Vec<usize>], v: &[BigRational]) -> Option<Expr> {
    let mut sum: Option<Expr> = None;
    for (c, m) in coprime(v, 1 << 31)?.into_iter().zip(monomials) {
        if c == 0 {
            continue;
        }
        let term = m.iter().fold(Expr::Const(c as i128, IntTy::I64), |acc, &i| {
            Expr::Binary(BinOp::Mul, Box::new(acc), Box::new(wide(p, vars[i])), IntTy::I64)
        });
        sum = Some(match sum {
            None => term,
            Some(s) => Expr::Binary(BinOp::Add, Box::new(s), Box::new(term), IntTy::I64),
        });
    }
    Some(binary(BinOp::Eq, sum?, Expr::Const(0, IntTy::I64)))
}

/// A linear relation (`monomials` of degree at most 1) `Σ c·x == 0` computed in the type its
/// variables share (at least 32 bits: `int`'s arithmetic wraps around there, not promoted),
/// scaled by [`coprime`]; `None` when the variables' types differ or are narrower.
fn modular_eq(p: &Program, vars: &[VarId], monomials: &[Vec<usize>], v: &[BigRational]) -> Option<Expr> {
    let used: Vec<(i64, &Vec<usize>)> = coprime(v, 1 << 20)?.into_iter().zip(monomials).filter(|(c, _)| *c != 0).collect();
    let ty = used.iter().find_map(|(_, m)| m.first().map(|&i| p.var(vars[i]).int_ty()))?;
    if ty.boolean || ty.bits < 32 || used.iter().any(|(_, m)| m.len() > 1 || m.iter().any(|&i| p.var(vars[i]).int_ty() != ty)) {
        return None;
    }
    let sum = used
        .iter()
        .map(|(c, m)| match m.first() {
            Some(&i) => Expr::Binary(BinOp::Mul, Box::new(Expr::Const(*c as i128, ty)), Box::new(Expr::Var(vars[i], ty)), ty),
            None => Expr::Const(*c as i128, ty),
        })
        .reduce(|a, b| Expr::Binary(BinOp::Add, Box::new(a), Box::new(b), ty))?;
    Some(binary(BinOp::Eq, sum, Expr::Const(0, ty)))
}

fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::Binary(op, Box::new(a), Box::new(b), IntTy::INT)
}

/// `v` as a `long long` expression.
fn wide(p: &Program, v: VarId) -> Expr {
    Expr::Var(v, p.var(v).int_ty()).cast(IntTy::I64)
}

/// The candidates at the loop heads of `f`: its asserted conditions, then the pairwise ones
/// over its scalars.
fn candidates(p: &Program, f: FuncId) -> Vec<Expr> {
    let mut out: Vec<Expr> = Vec::new();
    let push = |out: &mut Vec<Expr>, e: Expr| {
        if !out.contains(&e) {
            out.push(e);
        }
    };
    for e in asserted(p, f) {
        push(&mut out, e);
    }
    let scalars = scalars(p, f);
    let zero = Expr::Const(0, IntTy::I64);
    for (i, &x) in scalars.iter().enumerate() {
        for &y in &scalars[i + 1..] {
            push(&mut out, binary(BinOp::Eq, wide(p, x), wide(p, y)));
        }
        for &y in scalars.iter().filter(|&&y| y != x) {
            push(&mut out, binary(BinOp::Le, wide(p, x), wide(p, y)));
            let still_zero = binary(BinOp::Eq, wide(p, x), zero.clone());
            push(&mut out, binary(BinOp::BitOr, binary(BinOp::Le, wide(p, x), wide(p, y)), still_zero));
        }
    }
    out.truncate(MAX_CANDIDATES);
    out
}

/// The conditions `f` asserts, over its own variables and the globals: the arguments of its
/// calls to assertion helpers (`__VERIFIER_assert(c)`: `c != 0`), and the condition of each
/// branch that avoids a target (`if (!(c)) reach_error();`, `assert(c)`).
fn asserted(p: &Program, f: FuncId) -> Vec<Expr> {
    let cfa = p.cfa(f);
    let mut out = Vec::new();
    for e in &cfa.edges {
        match &e.kind {
            EdgeKind::CallSummary(call) if p.cfa(call.callee).assert_helper => {
                for a in call.args.iter().filter(|a| !mentions_synthetic(p, a)) {
                    out.push(match a {
                        // A comparison is its own truth value.
                        Expr::Binary(op, ..) if op.is_comparison() => a.clone(),
                        _ => binary(BinOp::Ne, a.clone(), Expr::Const(0, a.ty())),
                    });
                }
            }
            EdgeKind::Assume { cond, truth } if cfa.node(e.dst).target.is_some() && !mentions_synthetic(p, cond) => {
                // The branch to the target is taken when `cond == truth`: the other one holds.
                out.push(if *truth { Expr::Unary(UnOp::LNot, Box::new(cond.clone()), IntTy::INT) } else { cond.clone() });
            }
            _ => {}
        }
    }
    out
}

/// Pointer variables per function the pairwise equalities of [`memory_candidates`] range over.
const MAX_POINTERS: usize = 6;
/// Candidates over memory per function at most (besides the pointers' equalities).
const MAX_MEMORY: usize = 24;
/// Static objects whose sizes are candidates at most.
const MAX_SIZES: usize = 16;

/// `__size[k] == n` for each static object the start function gives its size (globals,
/// address-taken locals, literals: objects never freed, so their sizes never change); the
/// accesses' checks compare with them.
fn static_sizes(p: &Program) -> Vec<Expr> {
    use crate::cfa::cells::strip;
    let mut out = Vec::new();
    for e in &p.cfa(p.start).edges {
        let (EdgeKind::Statement(crate::ir::Stmt::Assign(crate::ir::LValue::Elem(v, k), n))
        | EdgeKind::Declaration(crate::ir::Stmt::Assign(crate::ir::LValue::Elem(v, k), n))) = &e.kind
        else {
            continue;
        };
        let info = p.var(*v);
        let constant = |x: &Expr| matches!(strip(x), Expr::Const(..));
        if info.synthetic && info.name == crate::cfa::build::SIZES && constant(k) && constant(n) && out.len() < MAX_SIZES {
            let size = Expr::Elem(*v, Box::new(k.clone()), info.int_ty());
            out.push(Expr::Binary(BinOp::Eq, Box::new(size), Box::new(n.clone()), IntTy::INT));
        }
    }
    out
}

/// Candidates over memory for a function that reads it (the memory model's arrays): the
/// non-strict form of each strict comparison it branches on whose sides read memory (`i <
/// *pa` gives `i <= *pa`, a counter's bound read through a pointer that the loop does not
/// write), each assignment of a value read from memory as an equality, the conditions of its
/// accesses' checks, and equalities between its pointer variables (`pa == pd2`, which ties
/// such a bound to what is read through another pointer after the loop). Houdini keeps what
/// is inductive.
fn memory_candidates(p: &Program, f: FuncId) -> Vec<Expr> {
    let cfa = p.cfa(f);
    let reads_memory = |e: &Expr| {
        let mut found = false;
        e.walk(&mut |x| found |= matches!(x, Expr::Elem(a, ..) if p.var(*a).synthetic && a.func().is_none()));
        found
    };
    // Synthetic scalars (temporaries) mean nothing at a loop head; the memory arrays do.
    let own_vars_only = |e: &Expr| {
        let mut vs = Vec::new();
        e.vars(&mut vs);
        vs.iter().all(|&v| !p.var(v).synthetic || matches!(p.var(v).kind, VarKind::Array { .. }))
    };
    let mut out: Vec<Expr> = Vec::new();
    for e in &cfa.edges {
        // `x = e` reading memory: `x == e` where neither changes (`pa == cont.array + 4` for
        // `pa = &cont.array[0].b`).
        if let EdgeKind::Statement(crate::ir::Stmt::Assign(crate::ir::LValue::Var(x), rhs)) = &e.kind {
            let info = p.var(*x);
            if !info.synthetic && matches!(info.kind, VarKind::Int(_)) && reads_memory(rhs) && own_vars_only(rhs) {
                let cand = Expr::Binary(BinOp::Eq, Box::new(Expr::Var(*x, info.int_ty())), Box::new(rhs.clone()), IntTy::INT);
                if !out.contains(&cand) {
                    out.push(cand);
                }
            }
            continue;
        }
        // A check's condition (`pa % 2^32 + 4 <= __size[pa / 2^32]`: `*pa` within bounds).
        if let EdgeKind::Assume { cond, truth: false } = &e.kind {
            if crate::cfa::cells::leads_to_target(cfa, e.dst) && reads_memory(cond) && own_vars_only(cond) && !out.contains(cond) {
                out.push(cond.clone());
            }
            continue;
        }
        let EdgeKind::Assume { cond: Expr::Binary(op, a, b, t), truth: true } = &e.kind else { continue };
        let weak = match op {
            BinOp::Lt => BinOp::Le,
            BinOp::Gt => BinOp::Ge,
            _ => continue,
        };
        let cand = Expr::Binary(weak, a.clone(), b.clone(), *t);
        if (reads_memory(a) || reads_memory(b)) && own_vars_only(&cand) && !out.contains(&cand) {
            out.push(cand);
        }
    }
    if out.is_empty() {
        return out;
    }
    out.truncate(MAX_MEMORY);
    // (Parameters are locals.)
    let pointers: Vec<VarId> = (0..cfa.locals.len())
        .map(|i| VarId::local(f, i))
        .filter(|&v| p.var(v).pointer && !p.var(v).synthetic && matches!(p.var(v).kind, VarKind::Int(_)))
        .take(MAX_POINTERS)
        .collect();
    for (i, &x) in pointers.iter().enumerate() {
        for &y in &pointers[i + 1..] {
            out.push(binary(BinOp::Eq, wide(p, x), wide(p, y)));
        }
    }
    out
}

/// Whether `e` reads a variable the front end made up (its value at a loop head means
/// nothing).
fn mentions_synthetic(p: &Program, e: &Expr) -> bool {
    let mut vs = Vec::new();
    e.vars(&mut vs);
    vs.iter().any(|&v| p.var(v).synthetic)
}

/// The integer scalars of `f` its edges assign or compare (locals and globals, not made up by
/// the front end), at most [`MAX_SCALARS`] in order of first use.
fn scalars(p: &Program, f: FuncId) -> Vec<VarId> {
    let cfa = p.cfa(f);
    let mut out: Vec<VarId> = Vec::new();
    let add = |v: VarId, out: &mut Vec<VarId>| {
        if matches!(p.var(v).kind, VarKind::Int(_)) && !p.var(v).synthetic && !out.contains(&v) && v.func().is_none_or(|g| g == f) {
            out.push(v);
        }
    };
    for e in &cfa.edges {
        let mut vs = Vec::new();
        match &e.kind {
            EdgeKind::Assume { cond, .. } => cond.vars(&mut vs),
            EdgeKind::Statement(crate::ir::Stmt::Assign(lhs, x)) | EdgeKind::Declaration(crate::ir::Stmt::Assign(lhs, x)) => {
                vs.push(lhs.var());
                x.vars(&mut vs);
            }
            _ => {}
        }
        for v in vs {
            add(v, &mut out);
        }
    }
    out.truncate(MAX_SCALARS);
    out
}

#[cfg(test)]
mod tests {
    /// How many of the program's properties the phase proves, of how many.
    fn proved(body: &str) -> (usize, usize) {
        crate::analyses::proved_in_main(body, super::prove_program)
    }

    /// `nla-digbench/ps2-ll.c`'s loop: the asserted polynomial equality is inductive modulo
    /// 2^64 (its step is a polynomial identity).
    const SQUARES: &str = "int k = __VERIFIER_nondet_int();\nlong long y = 0, x = 0, c = 0;\n\
                           while (1) {\n__VERIFIER_assert(y * y - 2 * x + y == 0);\nif (!(c < k)) break;\n\
                           c = c + 1;\ny = y + 1;\nx = y + x;\n}\n";

    #[test]
    fn an_asserted_polynomial_equality_is_the_loops_invariant() {
        let (p, all) = proved(&format!("{SQUARES}__VERIFIER_assert(y * y - 2 * x + y == 0);\n"));
        assert_eq!(p, all);
    }

    #[test]
    fn a_wrong_equality_is_not_proved() {
        // One step off: `y*y - 2*x + y == 0` fails after the first iteration.
        let (p, _) = proved(&SQUARES.replace("x = y + x", "x = y + x + 1"));
        assert_eq!(p, 0);
    }

    /// Whether the learning phase proves the `reach_error()` call of a program reachable
    /// (its other properties, the accesses' bounds, are not asked).
    fn reach_error_proved(text: &str) -> bool {
        let input = crate::frontend::SourceInput { path: "phase.c".into(), text: text.to_string() };
        let p = crate::load(&input, crate::cfa::DataModel::Lp64).expect("loads");
        let props = crate::properties::properties(&p);
        let cancel = crate::core::Cancel::new().child(Some(std::time::Duration::from_secs(60)));
        let r = super::prove_linear_program(&p, &props, &Default::default(), &cancel);
        let error: Vec<_> = props.iter().filter(|pr| pr.kind == crate::cfa::TargetKind::ReachError).collect();
        assert_eq!(error.len(), 1);
        r.proved.contains(&error[0].key)
    }

    /// A loop bounded by a value read through a pointer it never writes (`i < *pa`), and a
    /// helper that compares the counter with that value through another pointer to the same
    /// object: `i <= *pa` and `pa == q` are the invariant, and the helper's result is known
    /// after the call only because its body is entered (SV-COMP's `ldv-regression/test22`).
    const BOUND_THROUGH_POINTER: &str = "extern void abort(void);\nextern int __VERIFIER_nondet_int(void);\n\
        void reach_error(void) { abort(); }\nstruct d { int a, b; } d1, d2;\n\
        int check(struct d *s, int i) { return s->a == i; }\n\
        int main(void) {\n  d1.a = __VERIFIER_nondet_int();\n  d2.a = __VERIFIER_nondet_int();\n\
          struct d *p = __VERIFIER_nondet_int() ? &d1 : &d2;\n  struct d *q = p;\n\
          if (q->a > 0) {\n    int *pa = &p->a;\n    int i = q->a - 10;\n\
            while (i < *pa) { i++; }\n    if (!check(q, i)) reach_error();\n  }\n  return 0;\n}\n";

    #[test]
    fn a_bound_read_through_a_pointer_is_an_invariant_across_a_helper() {
        assert!(reach_error_proved(BOUND_THROUGH_POINTER));
    }

    #[test]
    fn a_helper_that_compares_with_another_object_is_not_proved() {
        // `check(&d2, i)` compares with `d2.a`, which is not the loop's bound when `p` is `&d1`.
        assert!(!reach_error_proved(&BOUND_THROUGH_POINTER.replace("check(q, i)", "check(&d2, i)")));
    }

    /// The null space of states `(1, y, z)` with `z == 2*y + 1` is that relation.
    #[test]
    fn the_null_space_of_observed_states_is_their_linear_relation() {
        use num_rational::BigRational;
        use num_traits::Zero;
        let q = |x: i64| BigRational::from_integer(x.into());
        let rows: Vec<Vec<BigRational>> = (0..5).map(|y| vec![q(1), q(y), q(2 * y + 1)]).collect();
        let basis = super::null_space(rows.clone(), 3);
        assert_eq!(basis.len(), 1);
        let v = &basis[0];
        // Proportional to (-1, -2, 1), and zero on every row.
        assert_eq!((&v[0] / &v[2], &v[1] / &v[2]), (q(-1), q(-2)));
        assert!(rows.iter().all(|r| r.iter().zip(v).fold(BigRational::zero(), |acc, (a, b)| acc + a * b).is_zero()));
        // A state off the line leaves nothing.
        let mut off = rows;
        off.push(vec![q(1), q(7), q(3)]);
        assert!(super::null_space(off, 3).is_empty());
    }

    /// The runs' states at the loop head give `z == 2*y + 1` (linear, from the null space),
    /// `y*y`'s relation to the sum `s` (degree 2), and `y <= n | y == 0` (a difference bound).
    #[test]
    fn equalities_and_bounds_are_learned_from_the_runs_states() {
        let text = "extern int __VERIFIER_nondet_int(void);\nint main(void) {\nint n = __VERIFIER_nondet_int();\n\
                    long long y = 0, z = 1, s = 0;\nwhile (y < n) { s = s + z; z = z + 2; y = y + 1; }\nreturn 0;\n}\n";
        let input = crate::frontend::SourceInput { path: "learn.c".into(), text: text.into() };
        let p = crate::load(&input, crate::cfa::DataModel::Lp64).expect("loads");
        let main = p.entry.expect("main");
        let head = p.cfa(main).loop_heads().next().expect("a loop");
        let mut cands = crate::invariants::Annotations::new();
        cands.insert(
            (main, head),
            vec![super::binary(
                crate::ir::BinOp::Eq,
                super::wide(&p, super::scalars(&p, main)[0]),
                super::wide(&p, super::scalars(&p, main)[0]),
            )],
        );
        let observed = super::refute_by_runs(&p, &mut cands, &crate::core::Cancel::new());
        let obs = observed.get(&(main, head)).expect("states at the loop head");
        let shown: Vec<String> =
            super::learned(&p, obs, super::Mode::Polynomial).iter().map(|e| crate::cfa::pretty::expr(&p, e, true)).collect();
        for want in ["-1 + -2 * y + 1 * z == 0", "-1 * s + 1 * y * y == 0", "y - n <= 0 | y == 0"] {
            assert!(shown.iter().any(|s| s == want), "`{want}` not learned: {shown:?}");
        }
    }

    #[test]
    fn counters_are_equal_and_bounded_by_their_limit_or_zero() {
        // `c == y` and `c <= k | c == 0` at the head (with the asserted equality).
        let (p, all) = proved(&format!("{SQUARES}__VERIFIER_assert(y == c);\n__VERIFIER_assert(y <= k || y == 0);\n"));
        assert_eq!((p, all), (3, 3));
    }

    /// The learning phase on a linear program, given at every loop head the bounds
    /// `-1000 <= n <= 1000` of the variables `n0`, `n1` (as the templates find them).
    fn proved_linear(
        p: &crate::cfa::Program,
        open: &[crate::properties::Property],
        cancel: &crate::core::Cancel,
    ) -> std::collections::BTreeSet<crate::properties::PropertyKey> {
        use crate::ir::{BinOp, Expr, IntTy};
        let main = p.entry.expect("main");
        let mut known = crate::invariants::Annotations::new();
        for head in p.cfa(main).loop_heads() {
            let bounds = super::scalars(p, main)
                .into_iter()
                .filter(|&v| p.var(v).name == "n0" || p.var(v).name == "n1")
                .flat_map(|v| {
                    [
                        super::binary(BinOp::Le, Expr::Const(-1000, IntTy::I64), super::wide(p, v)),
                        super::binary(BinOp::Le, super::wide(p, v), Expr::Const(1000, IntTy::I64)),
                    ]
                })
                .collect();
            known.insert((main, head), bounds);
        }
        super::prove_linear_program(p, open, &known, cancel).proved
    }

    /// `seq-3`'s shape: `k` counts two loops' iterations and a third loop counts it down as
    /// often. The proof needs `k == i0 + i1 - j1` (learned from runs, in `int`'s arithmetic)
    /// with the loops' exit bounds; octagons do not express it.
    const COUNTS: &str = "int n0 = __VERIFIER_nondet_int(), n1 = __VERIFIER_nondet_int();
                          if (n0 < -1000 || n0 > 1000 || n1 < -1000 || n1 > 1000) return 0;
                          int i0 = 0, k = 0;
while (i0 < n0) { i0++; k++; }
int i1 = 0;
                          while (i1 < n1) { i1++; k++; }
int j1 = 0;
";

    #[test]
    fn an_equality_learned_from_runs_proves_a_linear_assertion() {
        let body = format!("{COUNTS}while (j1 < n0 + n1) {{ __VERIFIER_assert(k > 0); j1++; k--; }}");
        assert_eq!(crate::analyses::proved_in_main(&body, proved_linear), (1, 1));
    }

    #[test]
    fn a_reachable_violation_is_not_proved_by_learned_invariants() {
        // One iteration too many: `k` is 0 in the last one.
        let body = format!("{COUNTS}while (j1 <= n0 + n1) {{ __VERIFIER_assert(k > 0); j1++; k--; }}");
        assert_eq!(crate::analyses::proved_in_main(&body, proved_linear), (0, 1));
    }

    #[test]
    fn the_learning_phase_leaves_polynomial_assertions_to_the_guessing_phase() {
        let body = format!("{SQUARES}__VERIFIER_assert(y * y - 2 * x + y == 0);\n");
        assert_eq!(crate::analyses::proved_in_main(&body, proved_linear), (0, 2));
        // and the other way round
        let body = format!("{COUNTS}while (j1 < n0 + n1) {{ __VERIFIER_assert(k > 0); j1++; k--; }}");
        assert_eq!(crate::analyses::proved_in_main(&body, super::prove_program), (0, 1));
    }

    /// A linear equality over `int`s is learned in `int`'s arithmetic; over variables of
    /// different types, in `long long`.
    #[test]
    fn a_linear_equality_is_learned_in_its_variables_own_type() {
        let text = "extern int __VERIFIER_nondet_int(void);\nint main(void) {\nint n = __VERIFIER_nondet_int();\n\
                    int i = 0, a = 0; long long w = 0;\nwhile (i < n) { i++; a += 3; w += 2; }\nreturn 0;\n}\n";
        let input = crate::frontend::SourceInput { path: "learn.c".into(), text: text.into() };
        let p = crate::load(&input, crate::cfa::DataModel::Lp64).expect("loads");
        let main = p.entry.expect("main");
        let head = p.cfa(main).loop_heads().next().expect("a loop");
        let mut cands = crate::invariants::Annotations::new();
        cands.insert((main, head), Vec::new());
        let observed = super::refute_by_runs(&p, &mut cands, &crate::core::Cancel::new());
        let obs = observed.get(&(main, head)).expect("states at the loop head");
        let known = crate::invariants::Annotations::new();
        let learned = super::learned(&p, obs, super::Mode::Linear(&known));
        // The type an equality is computed in is its right-hand side's (`... == 0`).
        let typed = |want: &str| {
            learned.iter().find(|e| crate::cfa::pretty::expr(&p, e, true) == want).and_then(|e| match e {
                crate::ir::Expr::Binary(_, _, zero, _) => Some(zero.ty()),
                _ => None,
            })
        };
        assert_eq!(typed("-3 * i + 1 * a == 0"), Some(crate::ir::IntTy::INT));
        assert_eq!(typed("-2 * i + 1 * w == 0"), Some(crate::ir::IntTy::I64));
    }
}
