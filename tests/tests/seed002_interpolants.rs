//! Unit tests of the BDD interpolants of seed 002 (Esparza, Kiefer, Schwoon) §2 and §4.2 on
//! the paper's examples: Ex. 2.2, 2.5, 2.13, Prop. 2.14(ii), the §4.1 trace (strongest, weakest
//! and conciliated families and their tracking property), a Fig. 5-style DAG of diamonds
//! refuted by one set of interpolants (Prop. 2.10(i)), and Prop. 2.10 on small formulas.

use std::collections::BTreeSet;

use analysis_engine::analyses::summaries::interpolants::bdd::{Bdd, BddVariable, BddVariableSet};
use analysis_engine::analyses::summaries::interpolants::{
    conciliate, conciliate_minimal, dag_interpolants, strongest, supp, weakest, Dag, Kind,
};

fn vars(names: &[&str]) -> BddVariableSet {
    BddVariableSet::new(names)
}

fn v(s: &BddVariableSet, n: &str) -> Bdd {
    s.mk_var_by_name(n)
}

/// I is an interpolant of (F, G): F ⊨ I, I ∧ G unsat, Supp(I) ⊆ Supp(F) ∩ Supp(G).
fn is_interpolant(i: &Bdd, f: &Bdd, g: &Bdd) -> bool {
    let common: BTreeSet<BddVariable> = supp(f).intersection(&supp(g)).copied().collect();
    f.and_not(i).is_false() && i.and(g).is_false() && supp(i).is_subset(&common)
}

#[test]
fn example_2_2_and_2_5() {
    let s = vars(&["w", "x", "y", "z"]);
    let (w, x, y, z) = (v(&s, "w"), v(&s, "x"), v(&s, "y"), v(&s, "z"));
    // Ex. 2.2: x interpolates (x ∧ y, ¬x ∧ z).
    assert!(is_interpolant(&x, &x.and(&y), &x.not().and(&z)));
    // Ex. 2.5: SI(w∧x∧y, ¬x∧¬y∧¬z) = x∧y, WI = x∨y.
    let f = w.and(&x).and(&y);
    let g = x.not().and(&y.not()).and(&z.not());
    assert_eq!(strongest(&f, &g), x.and(&y));
    assert_eq!(weakest(&f, &g), x.or(&y));
    assert!(is_interpolant(&strongest(&f, &g), &f, &g));
    assert!(is_interpolant(&weakest(&f, &g), &f, &g));
}

#[test]
fn example_2_13_conciliates_to_x() {
    let s = vars(&["w", "x", "y", "z"]);
    let (w, x, y, z) = (v(&s, "w"), v(&s, "x"), v(&s, "y"), v(&s, "z"));
    let f = x.and(&y.or(&z));
    let g = x.or(&y).or(&z.and(&w)).not();
    assert_eq!(strongest(&f, &g), f);
    assert_eq!(weakest(&f, &g), x.or(&y));
    let c = conciliate(&f, &g);
    assert_eq!(c.i, x);
    assert_eq!(c.j, x);
    assert_eq!(c.set.len(), 1);
    assert!(is_interpolant(&c.i, &f, &g));
}

#[test]
fn prop_2_14_conciliating_sets_are_not_closed_under_intersection() {
    let s = vars(&["x", "y", "z"]);
    let (x, y, z) = (v(&s, "x"), v(&s, "y"), v(&s, "z"));
    let f = x.and(&y).or(&z);
    let not_g = x.or(&y).or(&z);
    let g = not_g.not();
    // The maximal set is {x, y, z}: I = F, J = ¬G.
    let c = conciliate(&f, &g);
    assert_eq!(c.set.len(), 3);
    assert_eq!((c.i.clone(), c.j.clone()), (f.clone(), not_g.clone()));
    // Fig. 2 drops x first (the lowest variable): {y, z}, I = J = y ∨ z.
    let m = conciliate_minimal(&f, &g);
    assert_eq!(m.i, y.or(&z));
    assert_eq!(m.j, y.or(&z));
    assert!(is_interpolant(&m.i, &f, &g));
}

/// The §4.1 trace `X := true; Y := X; assume(¬Y ∧ Z)` with copies 0..3 of X, Y, Z.
fn section_4_1() -> (BddVariableSet, Dag) {
    let names: Vec<String> = (0..4).flat_map(|i| ["X", "Y", "Z"].map(|n| format!("{}{}", n, i))).collect();
    let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    let s = BddVariableSet::new(&refs);
    let c = |n: &str, i: usize| s.mk_var_by_name(&format!("{}{}", n, i));
    let copy = |i: usize| ["X", "Y", "Z"].iter().map(|n| s.var_by_name(&format!("{}{}", n, i)).expect("var")).collect::<Vec<_>>();
    let r1 = c("X", 1).and(&c("Y", 1).iff(&c("Y", 0))).and(&c("Z", 1).iff(&c("Z", 0)));
    let r2 = c("Y", 2).iff(&c("X", 1)).and(&c("X", 2).iff(&c("X", 1))).and(&c("Z", 2).iff(&c("Z", 1)));
    let r3 =
        c("Y", 2).not().and(&c("Z", 2)).and(&c("X", 3).iff(&c("X", 2))).and(&c("Y", 3).iff(&c("Y", 2))).and(&c("Z", 3).iff(&c("Z", 2)));
    let dag = Dag { copies: (0..4).map(copy).collect(), arcs: vec![(0, 1, r1), (1, 2, r2), (2, 3, r3)] };
    (s, dag)
}

#[test]
fn section_4_1_trace_strongest_weakest_conciliated() {
    let (s, dag) = section_4_1();
    let c = |n: &str, i: usize| s.mk_var_by_name(&format!("{}{}", n, i));
    let t = s.mk_true();
    let si = dag_interpolants(&dag, Kind::Strongest, &t);
    assert!(si.spurious);
    assert_eq!(si.chosen[1], c("X", 1));
    assert_eq!(si.chosen[2], c("X", 2).and(&c("Y", 2)));
    assert_eq!(si.weakest[1], c("X", 1).or(&c("Z", 1).not()));
    assert_eq!(si.weakest[2], c("Y", 2).or(&c("Z", 2).not()));
    assert!(si.weakest[0].is_true(), "W(root) = true: the trace is spurious (Prop. 2.6(i))");
    let ci = dag_interpolants(&dag, Kind::Conciliated, &t);
    assert_eq!(ci.chosen[1], c("X", 1));
    assert_eq!(ci.chosen[2], c("Y", 2));
    // Tracking (Prop. 2.8): {P_m} R {P_n} on every arc, true at the root, false at the error.
    for kind in [Kind::Strongest, Kind::Weakest, Kind::Conciliated] {
        let d = dag_interpolants(&dag, kind, &t);
        assert!(d.chosen[0].is_true() && d.chosen[3].is_false());
        for (m, n, r) in &dag.arcs {
            assert!(d.chosen[*m].and(r).and_not(&d.chosen[*n]).is_false(), "{:?} tracks on {}->{}", kind, m, n);
        }
    }
}

/// Fig. 5 in miniature: `A := 1`, three diamonds on B, `assume(!A)`; the merges' strongest
/// interpolant is `A` (Prop. 2.10(i)), so one refinement covers all 8 paths.
#[test]
fn dag_with_diamonds_is_refuted_at_once() {
    // Nodes: 0 root, 1 after A:=1, then per diamond two branch nodes and a merge, error last.
    let mut names = Vec::new();
    let n_nodes = 1 + 1 + 3 * 3 + 1;
    for k in 0..n_nodes {
        names.push(format!("A{}", k));
        names.push(format!("B{}", k));
    }
    let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    let s = BddVariableSet::new(&refs);
    let a = |k: usize| s.mk_var_by_name(&format!("A{}", k));
    let b = |k: usize| s.mk_var_by_name(&format!("B{}", k));
    let copy = |k: usize| vec![s.var_by_name(&format!("A{}", k)).expect("a"), s.var_by_name(&format!("B{}", k)).expect("b")];
    let frame_a = |m: usize, n: usize| a(n).iff(&a(m));
    let mut arcs = vec![(0, 1, a(1).and(&b(1).iff(&b(0))))];
    let mut prev = 1;
    for d in 0..3 {
        let (t1, t2, merge) = (2 + 3 * d, 3 + 3 * d, 4 + 3 * d);
        arcs.push((prev, t1, frame_a(prev, t1).and(&b(t1))));
        arcs.push((prev, t2, frame_a(prev, t2).and(&b(t2).not())));
        arcs.push((t1, merge, frame_a(t1, merge).and(&b(merge).iff(&b(t1)))));
        arcs.push((t2, merge, frame_a(t2, merge).and(&b(merge).iff(&b(t2)))));
        prev = merge;
    }
    let err = n_nodes - 1;
    arcs.push((prev, err, a(prev).not().and(&frame_a(prev, err)).and(&b(err).iff(&b(prev)))));
    let dag = Dag { copies: (0..n_nodes).map(copy).collect(), arcs };
    let t = s.mk_true();
    let d = dag_interpolants(&dag, Kind::Strongest, &t);
    assert!(d.spurious);
    for merge in [4, 7, 10] {
        assert_eq!(d.strongest[merge], a(merge), "SI at a merge is A");
    }
    let c = dag_interpolants(&dag, Kind::Conciliated, &t);
    for k in 1..err {
        assert_eq!(c.chosen[k], a(k), "conciliated keeps only A at node {}", k);
    }
}

#[test]
fn prop_2_10_on_random_small_formulas() {
    let s = vars(&["a", "b", "c", "d"]);
    let lits: Vec<Bdd> = ["a", "b", "c", "d"].iter().map(|n| v(&s, n)).collect();
    // A small deterministic family of formulas.
    let mut fs = Vec::new();
    for i in 0..4 {
        for j in 0..4 {
            fs.push(lits[i].and(&lits[j].not()));
            fs.push(lits[i].or(&lits[j]));
        }
    }
    let mut checked = 0;
    for f in fs.iter().take(12) {
        for g in fs.iter().skip(12).take(8) {
            for h in fs.iter().skip(20).take(6) {
                // (i) SI(F∨G, H) = SI(F,H) ∨ SI(G,H), when both pairs are unsat and the
                // vocabularies agree (Supp(F) = Supp(G)).
                if f.or(g).and(h).is_false() && supp(f) == supp(g) {
                    assert_eq!(strongest(&f.or(g), h), strongest(f, h).or(&strongest(g, h)));
                    checked += 1;
                }
                // (ii) WI(F, G∨H) = WI(F,G) ∧ WI(F,H) when Supp(G) = Supp(H).
                if f.and(&g.or(h)).is_false() && supp(g) == supp(h) {
                    assert_eq!(weakest(f, &g.or(h)), weakest(f, g).and(&weakest(f, h)));
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 0);
}
