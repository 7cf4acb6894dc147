//! The template analysis (local policy iteration, seed 004; issue 5): every invariant the
//! seed 004 fixtures show is re-checked inductive by the engine's other Houdini
//! (`invariants::inductive_subset`, over the CFA's block formulas, independent of the template
//! analysis's own check), and random loop programs are executed concretely (with C's
//! wrap-around) to see that every reported invariant holds at every visit of its loop head.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use analysis_engine::analyses::template::{template_invariants, LoopInvariant, TemplateMode};
use analysis_engine::cfa::{DataModel, Program};
use analysis_engine::frontend::SourceInput;
use analysis_engine::Cancel;
use cpals_tests::parse_fixture;
use proptest::prelude::*;

fn load(path: &str, text: &str) -> Program {
    let input = SourceInput { path: path.into(), text: text.into() };
    analysis_engine::load(&input, DataModel::Lp64).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The tests of this file run one at a time: the template analysis running in several test
/// threads at once crashed Z3 4.8.12 once (SIGSEGV, not reproduced yet; see the issue report).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Fixtures where `invariants::inductive_subset` keeps less than the template analysis
/// shows. derived_template_from_assert.c: it drops `x - 2*y == 0` (written with `long long`
/// casts) and then the bounds of x that depend on it, although the invariant is inductive
/// (from x == 2y, y < 1000, the body x += 2, y += 1 keeps it, without overflow). Open: which
/// of the two checkers is wrong there (the template analysis's own check, `check.rs`, accepts
/// it; the property test below never saw it fail on executions).
const KNOWN_WEAKER: [&str; 1] = ["derived_template_from_assert.c"];

fn run(p: &Program, mode: TemplateMode) -> Vec<LoopInvariant> {
    let cancel = Cancel::with_deadline(Instant::now() + Duration::from_secs(60));
    template_invariants(p, &analysis_engine::analyses::template::TemplateConfig::for_mode(mode), &cancel).invariants
}

#[test]
fn seed004_fixture_invariants_are_inductive_for_the_other_checker() {
    let _guard = serial();
    let dir = cpals_tests::root().join("fixtures/seed004");
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("fixtures/seed004").flatten().map(|e| e.path()).collect();
    files.sort();
    assert!(files.len() >= 10, "seed 004 fixtures missing");
    let mut shown = 0;
    for path in files {
        let f = parse_fixture(&path);
        let text = std::fs::read_to_string(&path).expect("readable");
        let p = load(&path.display().to_string(), &text);
        for a in &f.analyses {
            let mode = TemplateMode::parse(a).expect("a template analysis");
            let invs = run(&p, mode);
            let mut cands = analysis_engine::invariants::Annotations::new();
            for inv in &invs {
                // Every conjunct has a C form for these programs (int variables).
                assert_eq!(inv.exprs.len(), inv.constraints.len() + inv.parity.len(), "{}: {}", path.display(), inv.text);
                cands.entry((inv.func, inv.node)).or_default().extend(inv.exprs.iter().cloned());
            }
            let total: usize = cands.values().map(Vec::len).sum();
            let kept = analysis_engine::invariants::inductive_subset(&p, cands.clone(), &Cancel::new());
            let kept_total: usize = kept.values().map(Vec::len).sum();
            let known = KNOWN_WEAKER.iter().any(|k| path.ends_with(k));
            if known {
                assert!(kept_total > 0 || total == 0, "{}: nothing kept", path.display());
            } else {
                assert_eq!(
                    kept_total,
                    total,
                    "{} [{a}]: not every conjunct of {:?} is inductive: kept {:?}",
                    path.display(),
                    invs.iter().map(|i| &i.text).collect::<Vec<_>>(),
                    kept
                );
            }
            shown += invs.len();
        }
    }
    assert!(shown >= 10, "the fixtures show only {shown} invariants");
}

#[test]
fn paper_counts_on_the_running_example() {
    let _guard = serial();
    // seed 004 Example 3: with the templates {i, j} (upper bounds), 10 LP problems and 2
    // value determinations, and the least inductive invariant.
    let path = cpals_tests::root().join("fixtures/seed004/running_example.c");
    let p = load("running_example.c", &std::fs::read_to_string(path).expect("readable"));
    let cancel = Cancel::with_deadline(Instant::now() + Duration::from_secs(60));
    let r = template_invariants(&p, &analysis_engine::analyses::template::TemplateConfig::for_mode(TemplateMode::Upper), &cancel);
    assert_eq!(r.stats.lp_queries, 10);
    assert_eq!(r.stats.value_determinations, 2);
    let texts: Vec<&str> = r.invariants.iter().map(|i| i.text.as_str()).collect();
    assert_eq!(texts, ["i <= 10 && j <= 0", "i <= 10 && j <= 10"]);
}

// ---- random loop programs, executed concretely ----

#[derive(Clone, Debug)]
enum St {
    AddConst(usize, i32),
    Copy(usize, usize, i32),
    Set(usize, i32),
    Double(usize, usize),
    Choice(Box<St>, Box<St>),
    IfLess(usize, i32, Box<St>),
}

#[derive(Clone, Debug)]
enum Cond {
    Less(usize, i32),
    LessEq(usize, i32),
    SumLess(usize, usize, i32),
    Nondet,
}

#[derive(Clone, Debug)]
struct Prog {
    /// `None`: a nondeterministic initial value.
    init: [Option<i32>; 3],
    cond: Cond,
    body: Vec<St>,
}

const NAMES: [&str; 3] = ["x", "y", "z"];

fn st_c(s: &St) -> String {
    match s {
        St::AddConst(v, c) => format!("{0} = {0} + {1};", NAMES[*v], c),
        St::Copy(v, w, c) => format!("{} = {} + {};", NAMES[*v], NAMES[*w], c),
        St::Set(v, c) => format!("{} = {};", NAMES[*v], c),
        St::Double(v, w) => format!("{} = 2 * {};", NAMES[*v], NAMES[*w]),
        St::Choice(a, b) => format!("if (__VERIFIER_nondet_int()) {{ {} }} else {{ {} }}", st_c(a), st_c(b)),
        St::IfLess(v, c, a) => format!("if ({} < {}) {{ {} }}", NAMES[*v], c, st_c(a)),
    }
}

fn to_c(p: &Prog) -> String {
    let mut s = String::from("extern int __VERIFIER_nondet_int(void);\nint main(void) {\n");
    for (i, init) in p.init.iter().enumerate() {
        match init {
            Some(c) => s.push_str(&format!("  int {} = {};\n", NAMES[i], c)),
            None => s.push_str(&format!("  int {} = __VERIFIER_nondet_int();\n", NAMES[i])),
        }
    }
    let cond = match &p.cond {
        Cond::Less(v, c) => format!("{} < {}", NAMES[*v], c),
        Cond::LessEq(v, c) => format!("{} <= {}", NAMES[*v], c),
        Cond::SumLess(v, w, c) => format!("{} + {} < {}", NAMES[*v], NAMES[*w], c),
        Cond::Nondet => "__VERIFIER_nondet_int()".into(),
    };
    s.push_str(&format!("  while ({}) {{\n", cond));
    for st in &p.body {
        s.push_str(&format!("    {}\n", st_c(st)));
    }
    s.push_str("  }\n  return 0;\n}\n");
    s
}

/// xorshift for the executions' nondeterministic choices.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn int(&mut self) -> i32 {
        match self.next() % 8 {
            0 => i32::MIN,
            1 => i32::MAX,
            2 => 0,
            3 => 1,
            4 => -1,
            _ => (self.next() % 41) as i32 - 20,
        }
    }
}

fn exec(s: &St, env: &mut [i32; 3], rng: &mut Rng) {
    match s {
        St::AddConst(v, c) => env[*v] = env[*v].wrapping_add(*c),
        St::Copy(v, w, c) => env[*v] = env[*w].wrapping_add(*c),
        St::Set(v, c) => env[*v] = *c,
        St::Double(v, w) => env[*v] = env[*w].wrapping_mul(2),
        St::Choice(a, b) => {
            if rng.int() != 0 {
                exec(a, env, rng)
            } else {
                exec(b, env, rng)
            }
        }
        St::IfLess(v, c, a) => {
            if env[*v] < *c {
                exec(a, env, rng)
            }
        }
    }
}

fn holds(p: &Program, inv: &LoopInvariant, env: &[i32; 3]) -> Result<(), String> {
    let val = |v| {
        let name = p.var_name(v);
        let i = NAMES.iter().position(|n| *n == name).unwrap_or_else(|| panic!("unknown variable {name}"));
        env[i] as i128
    };
    for (form, bound) in &inv.constraints {
        let sum: i128 = form.terms.iter().map(|&(v, c)| c as i128 * val(v)).sum();
        if sum > *bound {
            return Err(format!("{} <= {} fails with {:?}", form.display(p), bound, env));
        }
    }
    for &(v, r) in &inv.parity {
        if val(v).rem_euclid(2) as u8 != r {
            return Err(format!("{} % 2 == {} fails with {:?}", p.var_name(v), r, env));
        }
    }
    Ok(())
}

fn var() -> impl Strategy<Value = usize> {
    0usize..3
}

fn simple() -> impl Strategy<Value = St> {
    prop_oneof![
        (var(), -3i32..=3).prop_map(|(v, c)| St::AddConst(v, c)),
        (var(), var(), -3i32..=3).prop_map(|(v, w, c)| St::Copy(v, w, c)),
        (var(), -5i32..=5).prop_map(|(v, c)| St::Set(v, c)),
        (var(), var()).prop_map(|(v, w)| St::Double(v, w)),
    ]
}

fn stmt() -> impl Strategy<Value = St> {
    prop_oneof![
        3 => simple(),
        1 => (simple(), simple()).prop_map(|(a, b)| St::Choice(Box::new(a), Box::new(b))),
        1 => (var(), -10i32..=10, simple()).prop_map(|(v, c, a)| St::IfLess(v, c, Box::new(a))),
    ]
}

fn prog() -> impl Strategy<Value = Prog> {
    let init = prop::option::weighted(0.8, -10i32..=10);
    let cond = prop_oneof![
        (var(), -20i32..=30).prop_map(|(v, c)| Cond::Less(v, c)),
        (var(), -20i32..=30).prop_map(|(v, c)| Cond::LessEq(v, c)),
        (var(), var(), -20i32..=30).prop_map(|(v, w, c)| Cond::SumLess(v, w, c)),
        Just(Cond::Nondet),
    ];
    ([init.clone(), init.clone(), init], cond, prop::collection::vec(stmt(), 1..=3)).prop_map(|(init, cond, body)| Prog {
        init,
        cond,
        body,
    })
}

fn check_program(prog: &Prog, mode: TemplateMode, seed: u64) -> Result<usize, String> {
    let text = to_c(prog);
    let p = load("random.c", &text);
    let invs = run(&p, mode);
    let mut rng = Rng(seed | 1);
    let mut checked = 0;
    for _ in 0..24 {
        let mut env = [0i32; 3];
        for (i, init) in prog.init.iter().enumerate() {
            env[i] = init.unwrap_or_else(|| rng.int());
        }
        for _ in 0..80 {
            for inv in &invs {
                holds(&p, inv, &env).map_err(|e| format!("{e}\nprogram:\n{text}invariant: {}", inv.text))?;
                checked += 1;
            }
            let go = match &prog.cond {
                Cond::Less(v, c) => env[*v] < *c,
                Cond::LessEq(v, c) => env[*v] <= *c,
                Cond::SumLess(v, w, c) => env[*v].wrapping_add(env[*w]) < *c,
                Cond::Nondet => rng.int() != 0,
            };
            if !go {
                break;
            }
            for st in &prog.body {
                exec(st, &mut env, &mut rng);
            }
        }
    }
    Ok(checked)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn reported_invariants_hold_on_concrete_executions(prog in prog(), seed in any::<u64>(), rich in any::<bool>()) {
        let _guard = serial();
        let mode = if rich { TemplateMode::Congruence } else { TemplateMode::Octagons };
        if let Err(e) = check_program(&prog, mode, seed) {
            return Err(TestCaseError::fail(e));
        }
    }
}

#[test]
fn random_programs_get_invariants() {
    // The property above is not vacuous: on a fixed counter loop an invariant is shown and
    // checked on every visit (templates range over live variables: y is never read).
    let _guard = serial();
    let prog = Prog { init: [Some(0), Some(0), None], cond: Cond::Less(0, 10), body: vec![St::AddConst(0, 1), St::Copy(1, 0, 0)] };
    let n = check_program(&prog, TemplateMode::Octagons, 7).expect("invariants hold");
    assert!(n > 0);
    let p = load("counter.c", &to_c(&prog));
    let invs = run(&p, TemplateMode::Octagons);
    let by_line: BTreeMap<u32, &str> = invs.iter().map(|i| (i.range.line, i.text.as_str())).collect();
    assert_eq!(by_line.get(&6).copied(), Some("0 <= x && x <= 10"), "{:?}", by_line);
}
