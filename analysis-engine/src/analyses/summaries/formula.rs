//! The predicates of the summary analysis: a linear atom, or a Boolean combination of atoms.
//! The paper adds a DAG node's *whole* interpolant `P_n` as one abstract Boolean at its
//! control point (seed 002 §4, A.1.6 of seeds-002-003.md: `preds[point(n)].push(P_n)`);
//! `Form::Formulas` does the same, `Form::Atoms` (the default) adds its atoms one by one.

pub use crate::config::Form;
use std::collections::HashMap;
use std::fmt;

use z3::ast::{Ast, Bool, Dynamic};
use z3::{AstKind, DeclKind};

use crate::analyses::predicate::predabs::pred_formula;
use crate::cfa::Program;
use crate::ir::VarId;
use crate::smt::encode::Encoder;
use crate::smt::linear::leaf;
use crate::smt::linpred::LinPred;

/// Atoms one formula predicate may have (a larger interpolant adds its atoms instead).
pub const MAX_ATOMS: usize = 24;

/// A predicate: a linear atom or a Boolean combination of atoms.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pred {
    Atom(LinPred),
    Not(Box<Pred>),
    And(Vec<Pred>),
    Or(Vec<Pred>),
}

impl From<LinPred> for Pred {
    fn from(p: LinPred) -> Pred {
        Pred::Atom(p)
    }
}

impl Pred {
    /// The atom, if the predicate is one.
    pub fn atom(&self) -> Option<&LinPred> {
        match self {
            Pred::Atom(p) => Some(p),
            _ => None,
        }
    }

    /// The predicate over the encoder's variables at versions `ssa`; `None` if an atom
    /// cannot be stated (arrays): the predicate is then left out, an over-approximation.
    pub(crate) fn encode(&self, enc: &mut Encoder, ssa: &HashMap<VarId, u32>) -> Option<Bool> {
        Some(match self {
            Pred::Atom(p) => pred_formula(enc, p, ssa)?,
            Pred::Not(p) => p.encode(enc, ssa)?.not(),
            Pred::And(ps) | Pred::Or(ps) => {
                let fs = ps.iter().map(|p| p.encode(enc, ssa)).collect::<Option<Vec<Bool>>>()?;
                let refs: Vec<&Bool> = fs.iter().collect();
                if matches!(self, Pred::And(_)) {
                    Bool::and(&refs)
                } else {
                    Bool::or(&refs)
                }
            }
        })
    }

    /// The predicate as a C-like condition with the program's variable names.
    pub fn display<'a>(&'a self, p: &'a Program) -> impl fmt::Display + 'a {
        Shown { pred: self, p }
    }

    /// The predicate a quantifier-free formula over the symbols of `vars` stands for, up to
    /// negation (a predicate and its negation are the same abstract Boolean). `None` if it is
    /// a constant, has an atom that is not linear over `vars`, or more than [`MAX_ATOMS`].
    pub fn from_formula(f: &Bool, vars: &HashMap<String, (VarId, u32)>) -> Option<Pred> {
        // Reading is bounded too: Z3 shares subformulas, a tree can be far larger.
        let mut budget = 4 * MAX_ATOMS;
        let mut p = read(&Dynamic::from_ast(f), vars, &mut budget)?.normal();
        if let Pred::Not(q) = p {
            p = *q;
        }
        (p.size() <= MAX_ATOMS).then_some(p)
    }

    /// The number of atom occurrences.
    fn size(&self) -> usize {
        match self {
            Pred::Atom(_) => 1,
            Pred::Not(p) => p.size(),
            Pred::And(ps) | Pred::Or(ps) => ps.iter().map(Pred::size).sum(),
        }
    }

    /// The predicate with nested conjunctions and disjunctions flattened, their operands
    /// sorted and deduplicated, and double negations removed (`(a && b) || (b && a)` is
    /// `a && b`): a cheap normal form, so that most repeats of one formula are equal.
    fn normal(self) -> Pred {
        match self {
            Pred::Atom(_) => self,
            Pred::Not(q) => match q.normal() {
                Pred::Not(r) => *r,
                r => Pred::Not(Box::new(r)),
            },
            Pred::And(qs) => flatten(qs, true),
            Pred::Or(qs) => flatten(qs, false),
        }
    }
}

/// The normal form of the conjunction (`and`) or disjunction of `qs`.
fn flatten(qs: Vec<Pred>, and: bool) -> Pred {
    let mut out = Vec::new();
    for q in qs {
        match q.normal() {
            Pred::And(rs) if and => out.extend(rs),
            Pred::Or(rs) if !and => out.extend(rs),
            r => out.push(r),
        }
    }
    out.sort();
    out.dedup();
    match (out.len(), and) {
        (1, _) => out.swap_remove(0),
        (_, true) => Pred::And(out),
        (_, false) => Pred::Or(out),
    }
}

/// [`Pred::from_formula`] before the checks of the whole; `None` once more than `budget`
/// atoms were read.
fn read(f: &Dynamic, vars: &HashMap<String, (VarId, u32)>, budget: &mut usize) -> Option<Pred> {
    if f.kind() != AstKind::App || f.as_bool().is_none() {
        return None;
    }
    let ch = f.children();
    if ch.is_empty() {
        // `true`, `false`, a Boolean constant, or an empty operator: no predicate.
        return None;
    }
    let kind = f.decl().kind();
    let connective = match kind {
        DeclKind::And | DeclKind::Or | DeclKind::Not | DeclKind::Implies | DeclKind::Ite | DeclKind::Iff => true,
        DeclKind::Eq => ch[0].as_bool().is_some(),
        _ => false,
    };
    if !connective {
        *budget = budget.checked_sub(1)?;
        let (p, negated) = leaf(f, vars, &|_| None)?;
        return Some(if negated { Pred::Not(Box::new(Pred::Atom(p))) } else { Pred::Atom(p) });
    }
    let mut parts = Vec::with_capacity(ch.len());
    for c in &ch {
        parts.push(read(c, vars, budget)?);
    }
    let not = |p: Pred| Pred::Not(Box::new(p));
    let both = |a: Pred, b: Pred| Pred::And(vec![a, b]);
    let n = parts.len();
    let mut it = parts.into_iter();
    Some(match (kind, n) {
        (DeclKind::And, _) => Pred::And(it.collect()),
        (DeclKind::Or, _) => Pred::Or(it.collect()),
        (DeclKind::Not, 1) => not(it.next()?),
        (DeclKind::Implies, 2) => {
            let (a, b) = (it.next()?, it.next()?);
            Pred::Or(vec![not(a), b])
        }
        (DeclKind::Iff | DeclKind::Eq, 2) => {
            let (a, b) = (it.next()?, it.next()?);
            Pred::Or(vec![both(a.clone(), b.clone()), both(not(a), not(b))])
        }
        (DeclKind::Ite, 3) => {
            let (c, a, b) = (it.next()?, it.next()?, it.next()?);
            Pred::Or(vec![both(c.clone(), a), both(not(c), b)])
        }
        _ => return None,
    })
}

struct Shown<'a> {
    pred: &'a Pred,
    p: &'a Program,
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sub = |q| Shown { pred: q, p: self.p };
        match self.pred {
            Pred::Atom(a) => write!(f, "{}", a.display(self.p)),
            Pred::Not(q) => match &**q {
                // `x != y`, `x > y` rather than `!(x == y)`, `!(x <= y)`.
                Pred::Atom(a) => write!(f, "{}", a.display_negated(self.p)),
                _ => write!(f, "!({})", sub(q)),
            },
            Pred::And(qs) | Pred::Or(qs) => {
                let op = if matches!(self.pred, Pred::And(_)) { " && " } else { " || " };
                for (i, q) in qs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(op)?;
                    }
                    match q {
                        Pred::Atom(_) | Pred::Not(_) => write!(f, "{}", sub(q))?,
                        _ => write!(f, "({})", sub(q))?,
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smt::linpred::Rel;
    use z3::ast::Int;

    fn eq(a: usize, b: usize) -> Pred {
        Pred::Atom(LinPred::new(vec![(VarId::global(a), 1), (VarId::global(b), -1)], 0, Rel::Eq).expect("an atom"))
    }

    #[test]
    fn interpolants_read_as_one_predicate_in_a_normal_form() {
        let vars: HashMap<String, (VarId, u32)> =
            ["x", "y", "z"].iter().enumerate().map(|(i, n)| (n.to_string(), (VarId::global(i), 0))).collect();
        let [x, y, z] = ["x", "y", "z"].map(Int::new_const);
        let (xy, z0) = (x.eq(&y), z.eq(Int::from_i64(0)));
        let z_atom = Pred::Atom(LinPred::new(vec![(VarId::global(2), 1)], 0, Rel::Eq).expect("an atom"));
        // Repeated and reordered operands are one; `!=` is a negated equality.
        let f = Bool::or(&[&Bool::and(&[&xy, &z0]), &Bool::and(&[&z0, &xy])]);
        assert_eq!(Pred::from_formula(&f, &vars), Some(Pred::And(vec![eq(0, 1), z_atom.clone()])));
        let g = Bool::and(&[&x.eq(&y).not(), &z0.not()]).not();
        assert_eq!(
            Pred::from_formula(&g, &vars),
            Some(Pred::And(vec![Pred::Not(Box::new(eq(0, 1))), Pred::Not(Box::new(z_atom.clone()))]))
        );
        // `ite(c, a, b)` is `(c && a) || (!c && b)`.
        let h = xy.ite(&z0, &z0.not());
        let want = Pred::Or(vec![
            Pred::And(vec![eq(0, 1), z_atom.clone()]),
            Pred::And(vec![Pred::Not(Box::new(eq(0, 1))), Pred::Not(Box::new(z_atom))]),
        ]);
        assert_eq!(Pred::from_formula(&h, &vars), Some(want));
        // Constants, symbols outside the vocabulary and too many atoms make no predicate.
        assert_eq!(Pred::from_formula(&Bool::from_bool(true), &vars), None);
        assert_eq!(Pred::from_formula(&x.eq(Int::new_const("w")), &vars), None);
        let many: Vec<Bool> = (0..=MAX_ATOMS as i64).map(|k| x.eq(Int::from_i64(k))).collect();
        assert_eq!(Pred::from_formula(&Bool::or(&many.iter().collect::<Vec<_>>()), &vars), None);
        assert!(Pred::from_formula(&Bool::or(&many[1..].iter().collect::<Vec<_>>()), &vars).is_some());
    }
}
