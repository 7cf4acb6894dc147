//! Craig interpolation on BDDs, after seed 002 (Esparza, Kiefer, Schwoon) §2 and §4.2:
//!
//! - strongest `SI(F,G) = ∃(Supp F ∖ Supp G).F` and weakest `WI(F,G) = ∀(Supp G ∖ Supp F).¬G`
//!   interpolants (Prop. 2.4, with the semantic support of Def. 2.11: a BDD's support);
//! - conciliated interpolants (Def. 2.12): the maximal conciliating set of Fig. 1
//!   ([`conciliate`]) and a minimal one by the greedy Fig. 2 ([`conciliate_minimal`]);
//! - interpolants of a counterexample DAG (§4.2): strongest top-down with disjunction at merge
//!   nodes (Prop. 2.10(i)), weakest bottom-up with conjunction at branch nodes (Prop. 2.10(ii)),
//!   and conciliated ones chosen top-down between the two so that every arc keeps the
//!   tracking property (Prop. 2.8; the schedule of seeds-002-003.md A.1.3). The DAG is
//!   spurious exactly when the strongest interpolant of the error node is false
//!   (Prop. 2.6(i)).
//!
//! Every node of a DAG has its own copy of the state variables; an arc's relation is over the
//! copies of its two ends (with frame equalities for unchanged variables, as §4.1 requires).

pub use crate::config::Kind;
use std::collections::BTreeSet;

use biodivine_lib_bdd::{Bdd, BddVariable};

/// The BDD crate, for callers that build the formulas (tests, tools).
pub use biodivine_lib_bdd as bdd;

/// `Supp(F)`: the variables F depends on (for a reduced BDD, its support set).
pub fn supp(f: &Bdd) -> BTreeSet<BddVariable> {
    f.support_set().into_iter().collect()
}

fn vec_of(s: &BTreeSet<BddVariable>) -> Vec<BddVariable> {
    s.iter().copied().collect()
}

/// `F ↑ G = ∃(Supp F ∖ Supp G).F`: the strongest interpolant of `(F, G)` (Prop. 2.4).
pub fn strongest(f: &Bdd, g: &Bdd) -> Bdd {
    let out: BTreeSet<BddVariable> = supp(f).difference(&supp(g)).copied().collect();
    f.exists(&vec_of(&out))
}

/// `(¬G) ↓ F = ∀(Supp G ∖ Supp F).¬G`: the weakest interpolant of `(F, G)` (Prop. 2.4).
pub fn weakest(f: &Bdd, g: &Bdd) -> Bdd {
    let out: BTreeSet<BddVariable> = supp(g).difference(&supp(f)).copied().collect();
    g.not().for_all(&vec_of(&out))
}

/// A conciliated pair (Def. 2.12): `i = ∃(V∖Z).F`, `j = ∀(V∖Z).¬G`, both with support `set`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conciliated {
    pub set: BTreeSet<BddVariable>,
    pub i: Bdd,
    pub j: Bdd,
}

/// Fig. 1: the maximal conciliating set of `(F, G)` (requires `F ∧ G` unsatisfiable). Both
/// returned formulas are interpolants of `(F, G)`, and `i ⊨ j`.
pub fn conciliate(f: &Bdd, g: &Bdd) -> Conciliated {
    let mut i = f.clone();
    let mut j = g.not();
    let mut z: BTreeSet<BddVariable> = supp(f).union(&supp(g)).copied().collect();
    loop {
        let x: BTreeSet<BddVariable> = supp(&i).difference(&supp(&j)).copied().collect();
        i = i.exists(&vec_of(&x));
        z = z.difference(&x).copied().collect();
        let y: BTreeSet<BddVariable> = supp(&j).difference(&supp(&i)).copied().collect();
        j = j.for_all(&vec_of(&y));
        z = z.difference(&y).copied().collect();
        if y.is_empty() {
            break;
        }
    }
    // The common support (Z may still list variables neither formula depends on).
    let set = supp(&i);
    Conciliated { set, i, j }
}

/// Fig. 2: a minimal conciliating set, greedily dropping the lowest variable `z` with
/// `∃z.I ⊨ ∀z.J` (the paper leaves the choice open; this one is deterministic).
pub fn conciliate_minimal(f: &Bdd, g: &Bdd) -> Conciliated {
    let mut c = conciliate(f, g);
    loop {
        let pick = c.set.iter().copied().find(|&z| {
            let ei = c.i.var_exists(z);
            let aj = c.j.var_for_all(z);
            ei.and_not(&aj).is_false()
        });
        let Some(z) = pick else { return c };
        let ei = c.i.var_exists(z);
        let aj = c.j.var_for_all(z);
        c = conciliate(&ei, &aj.not());
    }
}

/// The interpolant of `(F, G)` of the given kind.
pub fn interpolant(kind: Kind, f: &Bdd, g: &Bdd) -> Bdd {
    match kind {
        Kind::Strongest => strongest(f, g),
        Kind::Weakest => weakest(f, g),
        Kind::Conciliated => conciliate(f, g).i,
    }
}

/// A counterexample DAG (§4.2): nodes `0..n` in topological order, node 0 the root and the
/// last node the error; `copies[n]` are node n's variables; each arc `(m, n, R)` has its
/// relation over the copies of m and n.
pub struct Dag {
    pub copies: Vec<Vec<BddVariable>>,
    pub arcs: Vec<(usize, usize, Bdd)>,
}

/// Interpolants of a DAG, one per node, over the node's copy.
#[derive(Clone, Debug)]
pub struct DagInterpolants {
    /// No path of the DAG is feasible (`strongest[error]` is false).
    pub spurious: bool,
    pub strongest: Vec<Bdd>,
    pub weakest: Vec<Bdd>,
    /// The chosen family (for a spurious DAG: a Hoare annotation `{true} D {false}`).
    pub chosen: Vec<Bdd>,
}

/// Computes the interpolants of a DAG (Prop. 2.6, 2.8 and 2.10). `t` is the constant true
/// of the variable set the relations live in.
pub fn dag_interpolants(dag: &Dag, kind: Kind, t: &Bdd) -> DagInterpolants {
    let n = dag.copies.len();
    let f = t.not();
    if n == 0 {
        return DagInterpolants { spurious: true, strongest: Vec::new(), weakest: Vec::new(), chosen: Vec::new() };
    }
    let into = |k: usize| dag.arcs.iter().filter(move |(_, to, _)| *to == k);
    let out_of = |k: usize| dag.arcs.iter().filter(move |(from, _, _)| *from == k);
    // Top-down strongest: disjunction over incoming arcs at merges (Prop. 2.10(i)).
    let mut s = vec![f.clone(); n];
    s[0] = t.clone();
    for k in 1..n {
        let mut acc = f.clone();
        for (m, _, r) in into(k) {
            acc = acc.or(&s[*m].and(r).exists(&dag.copies[*m]));
        }
        s[k] = acc;
    }
    let spurious = s[n - 1].is_false();
    // Bottom-up weakest: conjunction over outgoing arcs at branches (Prop. 2.10(ii)).
    let mut w = vec![t.clone(); n];
    w[n - 1] = f.clone();
    for k in (0..n - 1).rev() {
        let mut acc = t.clone();
        for (_, to, r) in out_of(k) {
            acc = acc.and(&r.imp(&w[*to]).for_all(&dag.copies[*to]));
        }
        w[k] = acc;
    }
    let chosen = match kind {
        Kind::Strongest => s.clone(),
        Kind::Weakest => w.clone(),
        Kind::Conciliated if spurious => {
            // Top-down: the image of the chosen parents, conciliated against the weakest
            // interpolant, which keeps tracking on every arc.
            let mut c = vec![t.clone(); n];
            for k in 1..n {
                let mut a = f.clone();
                for (m, _, r) in into(k) {
                    a = a.or(&c[*m].and(r).exists(&dag.copies[*m]));
                }
                c[k] = conciliate(&a, &w[k].not()).i;
            }
            c
        }
        Kind::Conciliated => s.clone(),
    };
    DagInterpolants { spurious, strongest: s, weakest: w, chosen }
}
