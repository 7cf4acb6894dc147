//! Reading integer formulas back from Z3: linear forms over the SSA constants of a path
//! encoding, and the atoms of an interpolant as predicates over program variables.

use std::collections::{BTreeMap, HashMap};

use z3::ast::{Ast, Dynamic};
use z3::{AstKind, DeclKind};

use crate::ir::VarId;
use crate::smt::linpred::{LinPred, Rel};

/// `Σ c·s + k` over symbol names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Lin {
    pub coeffs: BTreeMap<String, i128>,
    pub k: i128,
}

impl Lin {
    fn scale(mut self, c: i128) -> Option<Lin> {
        for v in self.coeffs.values_mut() {
            *v = v.checked_mul(c)?;
        }
        self.k = self.k.checked_mul(c)?;
        Some(self)
    }

    fn add(mut self, o: Lin) -> Option<Lin> {
        for (s, c) in o.coeffs {
            let e = self.coeffs.entry(s).or_insert(0);
            *e = e.checked_add(c)?;
        }
        self.k = self.k.checked_add(o.k)?;
        self.coeffs.retain(|_, c| *c != 0);
        Some(self)
    }
}

/// An uninterpreted constant (a symbol). Z3 4.8.12 numbers declaration kinds differently
/// from the `z3-sys` enum for kinds newer than the core ones, so "uninterpreted" is
/// recognised by shape: an application without arguments that is not `true` or `false`.
pub(crate) fn is_constant(d: &Dynamic) -> bool {
    d.kind() == AstKind::App && d.num_children() == 0 && !matches!(d.decl().kind(), DeclKind::True | DeclKind::False)
}

/// Names a symbol of a formula: an uninterpreted constant, or a bound variable through
/// `bound` (index to name, for formulas with de Bruijn variables).
fn symbol(d: &Dynamic, bound: &dyn Fn(u32) -> Option<String>) -> Option<String> {
    match d.kind() {
        AstKind::Var => {
            // SAFETY: `d` is a variable AST of this thread's context.
            let idx = unsafe { z3_sys::Z3_get_index_value(d.get_ctx().get_z3_context(), d.get_z3_ast()) };
            bound(idx)
        }
        AstKind::App if is_constant(d) => Some(d.decl().name()),
        _ => None,
    }
}

/// The linear form of an integer term, if it is linear.
pub(crate) fn linear(d: &Dynamic, bound: &dyn Fn(u32) -> Option<String>) -> Option<Lin> {
    if let Some(i) = d.as_int() {
        if let Some(v) = i.as_i128() {
            return Some(Lin { coeffs: BTreeMap::new(), k: v });
        }
    }
    if let Some(name) = symbol(d, bound) {
        return Some(Lin { coeffs: BTreeMap::from([(name, 1)]), k: 0 });
    }
    if d.kind() != AstKind::App {
        return None;
    }
    let ch = d.children();
    match d.decl().kind() {
        DeclKind::Add => ch.iter().try_fold(Lin::default(), |acc, c| acc.add(linear(c, bound)?)),
        DeclKind::Sub => {
            let (first, rest) = ch.split_first()?;
            rest.iter().try_fold(linear(first, bound)?, |acc, c| acc.add(linear(c, bound)?.scale(-1)?))
        }
        DeclKind::Uminus => linear(ch.first()?, bound)?.scale(-1),
        DeclKind::Mul => {
            let mut constant = 1i128;
            let mut term: Option<Lin> = None;
            for c in &ch {
                let l = linear(c, bound)?;
                if l.coeffs.is_empty() {
                    constant = constant.checked_mul(l.k)?;
                } else if term.is_none() {
                    term = Some(l);
                } else {
                    return None; // non-linear
                }
            }
            match term {
                Some(t) => t.scale(constant),
                None => Some(Lin { coeffs: BTreeMap::new(), k: constant }),
            }
        }
        DeclKind::ToInt | DeclKind::ToReal => linear(ch.first()?, bound),
        _ => None,
    }
}

/// Translates an atom `lhs ⋈ rhs` (as linear forms) into a predicate over program variables.
fn to_pred(lin: Lin, rel: Rel, vars: &HashMap<String, (VarId, u32)>) -> Option<LinPred> {
    let mut terms = Vec::new();
    for (name, c) in lin.coeffs {
        let (v, _) = vars.get(&name)?;
        // Keep predicates small and their arithmetic far from overflow.
        if c.abs() > 1 << 40 {
            return None;
        }
        terms.push((*v, c));
    }
    if terms.len() > 8 || lin.k.abs() > 1 << 64 {
        return None;
    }
    LinPred::new(terms, lin.k, rel)
}

/// The atoms of a Boolean formula as predicates over program variables. Atoms that are not
/// linear, or mention symbols that are not program variables, are skipped.
pub(crate) fn atoms(f: &Dynamic, vars: &HashMap<String, (VarId, u32)>, bound: &dyn Fn(u32) -> Option<String>, out: &mut Vec<LinPred>) {
    atoms_in(f, vars, bound, out, &mut std::collections::HashSet::new());
}

/// `atoms`, visiting each shared subformula once.
fn atoms_in(
    f: &Dynamic,
    vars: &HashMap<String, (VarId, u32)>,
    bound: &dyn Fn(u32) -> Option<String>,
    out: &mut Vec<LinPred>,
    seen: &mut std::collections::HashSet<Dynamic>,
) {
    if !seen.insert(f.clone()) {
        return;
    }
    if f.kind() != AstKind::App {
        if f.kind() == AstKind::Quantifier {
            // Quantified interpolant parts are not predicates over the state.
        }
        return;
    }
    let ch = f.children();
    let kind = f.decl().kind();
    let is_bool = |d: &Dynamic| d.as_bool().is_some();
    match kind {
        DeclKind::And | DeclKind::Or | DeclKind::Not | DeclKind::Implies | DeclKind::Xor | DeclKind::Iff => {
            for c in &ch {
                atoms_in(c, vars, bound, out, seen);
            }
        }
        DeclKind::Ite => {
            for c in &ch {
                if is_bool(c) {
                    atoms_in(c, vars, bound, out, seen);
                }
            }
        }
        DeclKind::Eq if ch.len() == 2 && is_bool(&ch[0]) => {
            atoms_in(&ch[0], vars, bound, out, seen);
            atoms_in(&ch[1], vars, bound, out, seen);
        }
        DeclKind::Eq | DeclKind::Le | DeclKind::Ge | DeclKind::Lt | DeclKind::Gt | DeclKind::Distinct => {
            if let Some((p, _)) = leaf(f, vars, bound) {
                out.push(p);
            }
        }
        _ => {}
    }
}

/// A comparison `lhs ⋈ rhs` of linear forms as a predicate over program variables, with
/// whether the comparison is the predicate's negation (`a != b` is `¬(a == b)`). `None` for
/// anything else (non-linear, other symbols, not a comparison).
pub(crate) fn leaf(f: &Dynamic, vars: &HashMap<String, (VarId, u32)>, bound: &dyn Fn(u32) -> Option<String>) -> Option<(LinPred, bool)> {
    if f.kind() != AstKind::App {
        return None;
    }
    let ch = f.children();
    let kind = f.decl().kind();
    if ch.len() != 2 || ch[0].as_bool().is_some() {
        return None;
    }
    match kind {
        DeclKind::Distinct => {
            let (a, b) = (linear(&ch[0], bound)?, linear(&ch[1], bound)?);
            let p = b.scale(-1).and_then(|nb| a.add(nb)).and_then(|l| to_pred(l, Rel::Eq, vars))?;
            Some((p, true))
        }
        DeclKind::Eq | DeclKind::Le | DeclKind::Ge | DeclKind::Lt | DeclKind::Gt => {
            // `(t mod m) = r` is a congruence.
            if kind == DeclKind::Eq {
                for (a, b) in [(&ch[0], &ch[1]), (&ch[1], &ch[0])] {
                    if a.kind() == AstKind::App && a.decl().kind() == DeclKind::Mod {
                        let mc = a.children();
                        if let (Some(t), Some(m), Some(r)) = (linear(&mc[0], bound), linear(&mc[1], bound), linear(b, bound)) {
                            if m.coeffs.is_empty() && r.coeffs.is_empty() && m.k > 1 {
                                let shifted = Lin { coeffs: t.coeffs, k: t.k - r.k };
                                return to_pred(shifted, Rel::Mod(m.k), vars).map(|p| (p, false));
                            }
                        }
                    }
                }
            }
            let (a, b) = (linear(&ch[0], bound)?, linear(&ch[1], bound)?);
            let b_neg = b.clone().scale(-1)?;
            let a_neg = a.clone().scale(-1)?;
            let (lin, rel) = match kind {
                DeclKind::Eq => (a.add(b_neg), Rel::Eq),
                DeclKind::Le => (a.add(b_neg), Rel::Le),
                DeclKind::Ge => (b.add(a_neg), Rel::Le),
                // a < b  ⇔  a - b + 1 <= 0 over the integers.
                DeclKind::Lt => (a.add(b_neg).map(|l| Lin { k: l.k + 1, ..l }), Rel::Le),
                _ => (b.add(a_neg).map(|l| Lin { k: l.k + 1, ..l }), Rel::Le),
            };
            to_pred(lin?, rel, vars).map(|p| (p, false))
        }
        _ => None,
    }
}
