//! Templates, the precision of the template analysis (seed 004 §2 "Template Constraints
//! Domain", §4 "Template Synthesis"): linear forms `t·X` over program variables, read as
//! mathematical integers. A point's abstract state bounds each of its templates from above
//! (`t·X <= d`).
//!
//! Families: intervals `±x`, octagons `±x ± y`, the paper's "rich" templates `±2x ± y`,
//! `±x ± y ± z`, `±2x ± y ± z`, and templates derived from the source: the linear comparisons
//! of assertions and branch conditions (`assert(x >= 2*y)` gives `±(x - 2y)`) and linear
//! assignments (`y = 2*x + 1` gives `±(y - 2x)`). Templates range over the variables live at
//! the abstraction point. Which templates exist affects precision only, never soundness.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use crate::cfa::{Cfa, EdgeKind, Program};
use crate::ir::{BinOp, Expr, IntTy, Stmt, UnOp, VarId, VarKind};

/// A linear form `Σ c·x` over scalar variables: terms sorted by variable, no zero coefficient.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinearForm {
    pub terms: Vec<(VarId, i64)>,
}

impl LinearForm {
    pub fn new(mut terms: Vec<(VarId, i64)>) -> LinearForm {
        terms.sort();
        let mut out: Vec<(VarId, i64)> = Vec::new();
        for (v, c) in terms {
            match out.last_mut() {
                Some((w, d)) if *w == v => *d += c,
                _ => out.push((v, c)),
            }
        }
        out.retain(|&(_, c)| c != 0);
        LinearForm { terms: out }
    }

    pub fn var(v: VarId, c: i64) -> LinearForm {
        LinearForm::new(vec![(v, c)])
    }

    pub fn neg(&self) -> LinearForm {
        LinearForm { terms: self.terms.iter().map(|&(v, c)| (v, -c)).collect() }
    }

    pub fn vars(&self) -> impl Iterator<Item = VarId> + '_ {
        self.terms.iter().map(|&(v, _)| v)
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The least and greatest value of the form when every variable ranges over its C type.
    pub fn range(&self, p: &Program) -> (i128, i128) {
        let (mut lo, mut hi) = (0i128, 0i128);
        for &(v, c) in &self.terms {
            let t = p.var(v).int_ty();
            let (a, b) = (t.min() * c as i128, t.max() * c as i128);
            lo += a.min(b);
            hi += a.max(b);
        }
        (lo, hi)
    }

    /// The form with a positive first coefficient and coprime coefficients, and the sign
    /// that was taken off.
    pub fn canonical(&self) -> (LinearForm, i64) {
        let g = self.terms.iter().fold(0i64, |g, &(_, c)| gcd(g, c.abs()));
        if g == 0 {
            return (self.clone(), 1);
        }
        let sign = if self.terms[0].1 < 0 { -1 } else { 1 };
        (LinearForm { terms: self.terms.iter().map(|&(v, c)| (v, c / g * sign)).collect() }, sign)
    }

    /// C text of the form over the program's variable names (`x - 2*y`).
    pub fn display(&self, p: &Program) -> String {
        let mut s = String::new();
        for (i, &(v, c)) in self.terms.iter().enumerate() {
            let name = p.var_name(v);
            let mag = c.unsigned_abs();
            if i == 0 {
                if c < 0 {
                    s.push('-');
                }
            } else {
                s.push_str(if c < 0 { " - " } else { " + " });
            }
            if mag == 1 {
                s.push_str(name);
            } else {
                let _ = write!(s, "{}*{}", mag, name);
            }
        }
        s
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Which template families a configuration uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Families {
    /// `x` for every live variable (upper bounds only, as in the paper's Examples 1 and 3).
    pub upper: bool,
    /// `±x`.
    pub intervals: bool,
    /// `±x ± y`.
    pub octagons: bool,
    /// `±2x ± y`, `±x ± y ± z`, `±2x ± y ± z`.
    pub rich: bool,
    /// From assertions, branch conditions and assignments.
    pub source: bool,
}

/// Limits on the number of templates per abstraction point (each costs one optimisation
/// query per abstraction): octagons and rich templates range over at most this many
/// variables, preferring the ones the loop writes.
pub const MAX_RELATIONAL_VARS: usize = 8;
pub const MAX_RICH_VARS: usize = 5;
/// Terms of a source-derived template at most, and the largest coefficient kept.
const MAX_SOURCE_TERMS: usize = 4;
const MAX_SOURCE_COEFF: i128 = 1 << 20;

/// `e` as `Σ c·x + k` over mathematical integers, if it is linear. Conversions are looked
/// through when they keep every value of their operand (the form is only a template: reading
/// it over mathematical integers affects precision, never soundness).
pub fn linear(e: &Expr) -> Option<(BTreeMap<VarId, i128>, i128)> {
    fn go(e: &Expr, scale: i128, acc: &mut BTreeMap<VarId, i128>, k: &mut i128, depth: u32) -> Option<()> {
        if depth > 32 || scale.abs() > MAX_SOURCE_COEFF {
            return None;
        }
        match e {
            Expr::Const(v, _) => *k = k.checked_add(v.checked_mul(scale)?)?,
            Expr::Var(v, _) => *acc.entry(*v).or_default() += scale,
            Expr::Cast(a, to) => {
                let from = a.ty();
                if from.boolean || (IntTy::min(*to) <= from.min() && from.max() <= IntTy::max(*to)) {
                    go(a, scale, acc, k, depth + 1)?
                } else {
                    return None;
                }
            }
            Expr::Unary(UnOp::Neg, a, _) => go(a, -scale, acc, k, depth + 1)?,
            Expr::Binary(BinOp::Add, a, b, _) => {
                go(a, scale, acc, k, depth + 1)?;
                go(b, scale, acc, k, depth + 1)?
            }
            Expr::Binary(BinOp::Sub, a, b, _) => {
                go(a, scale, acc, k, depth + 1)?;
                go(b, -scale, acc, k, depth + 1)?
            }
            Expr::Binary(BinOp::Mul, a, b, _) => match (&**a, &**b) {
                (Expr::Const(c, _), x) | (x, Expr::Const(c, _)) => go(x, scale.checked_mul(*c)?, acc, k, depth + 1)?,
                _ => return None,
            },
            _ => return None,
        }
        Some(())
    }
    let mut acc = BTreeMap::new();
    let mut k = 0;
    go(e, 1, &mut acc, &mut k, 0)?;
    acc.retain(|_, c| *c != 0);
    Some((acc, k))
}

fn to_form(acc: &BTreeMap<VarId, i128>) -> Option<LinearForm> {
    if acc.is_empty() || acc.len() > MAX_SOURCE_TERMS || acc.values().any(|c| c.abs() > MAX_SOURCE_COEFF) {
        return None;
    }
    Some(LinearForm::new(acc.iter().map(|(&v, &c)| (v, c as i64)).collect()))
}

/// The linear forms of a comparison `a op b` (`a - b`), looking through `!`.
fn comparison_form(e: &Expr) -> Option<LinearForm> {
    match e {
        Expr::Unary(UnOp::LNot, a, _) => comparison_form(a),
        Expr::Binary(op, a, b, _) if op.is_comparison() => {
            let (mut la, _) = linear(a)?;
            let (lb, _) = linear(b)?;
            for (v, c) in lb {
                *la.entry(v).or_default() -= c;
            }
            la.retain(|_, c| *c != 0);
            to_form(&la)
        }
        _ => None,
    }
}

/// Linear forms written in a function: comparisons of branch conditions (assertions are
/// branches to a target) and of call arguments, and `lhs - rhs` of linear assignments.
pub fn source_forms(p: &Program, cfa: &Cfa) -> BTreeSet<LinearForm> {
    let mut out = BTreeSet::new();
    let mut add = |f: Option<LinearForm>| {
        if let Some(f) = f {
            if f.terms.len() >= 2 || f.terms.iter().any(|&(_, c)| c.abs() != 1) {
                out.insert(f.canonical().0);
            }
        }
    };
    for e in &cfa.edges {
        match &e.kind {
            EdgeKind::Assume { cond, .. } => add(comparison_form(cond)),
            EdgeKind::CallSummary(c) => {
                for a in &c.args {
                    add(comparison_form(a));
                }
            }
            EdgeKind::Statement(Stmt::Assign(crate::ir::LValue::Var(v), rhs))
            | EdgeKind::Declaration(Stmt::Assign(crate::ir::LValue::Var(v), rhs)) => {
                if let Some((mut acc, _)) = linear(rhs) {
                    if !acc.contains_key(v) && !acc.is_empty() && matches!(p.var(*v).kind, VarKind::Int(_)) {
                        *acc.entry(*v).or_default() -= 1;
                        add(to_form(&acc));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// True for variables templates may mention: integer scalars that are not pointers or
/// temporaries of the front end.
pub fn templatable(p: &Program, v: VarId) -> bool {
    let info = p.var(v);
    matches!(info.kind, VarKind::Int(t) if t.bits <= 64) && !info.pointer && !info.synthetic
}

/// The templates of one abstraction point: the configured families over `vars` (live at the
/// point, the ones the loop writes first), plus the source forms over live variables.
pub fn synthesize(
    _p: &Program,
    fam: &Families,
    vars: &[VarId],
    written: &BTreeSet<VarId>,
    source: &BTreeSet<LinearForm>,
) -> Vec<LinearForm> {
    let mut out: Vec<LinearForm> = Vec::new();
    let mut seen: BTreeSet<LinearForm> = BTreeSet::new();
    let mut push = |f: LinearForm, out: &mut Vec<LinearForm>| {
        if !f.is_empty() && seen.insert(f.clone()) {
            out.push(f);
        }
    };
    for &v in vars {
        if fam.intervals {
            push(LinearForm::var(v, 1), &mut out);
            push(LinearForm::var(v, -1), &mut out);
        } else if fam.upper {
            push(LinearForm::var(v, 1), &mut out);
        }
    }
    if fam.source {
        let live: BTreeSet<VarId> = vars.iter().copied().collect();
        for f in source {
            if f.vars().all(|v| live.contains(&v)) {
                push(f.clone(), &mut out);
                push(f.neg(), &mut out);
            }
        }
    }
    // Relational families over the variables the loop writes first (they are the ones whose
    // relations change), then the others.
    let mut rel: Vec<VarId> = vars.iter().copied().filter(|v| written.contains(v)).collect();
    rel.extend(vars.iter().copied().filter(|v| !written.contains(v)));
    if fam.octagons {
        let r = &rel[..rel.len().min(MAX_RELATIONAL_VARS)];
        for (i, &x) in r.iter().enumerate() {
            for &y in &r[i + 1..] {
                for (a, b) in [(1, 1), (1, -1), (-1, 1), (-1, -1)] {
                    push(LinearForm::new(vec![(x, a), (y, b)]), &mut out);
                }
            }
        }
    }
    if fam.rich {
        let r = &rel[..rel.len().min(MAX_RICH_VARS)];
        for &x in r {
            for &y in r {
                if x == y {
                    continue;
                }
                for (a, b) in [(2, 1), (2, -1), (-2, 1), (-2, -1)] {
                    push(LinearForm::new(vec![(x, a), (y, b)]), &mut out);
                }
            }
        }
        for (i, &x) in r.iter().enumerate() {
            for (j, &y) in r.iter().enumerate().skip(i + 1) {
                for &z in &r[j + 1..] {
                    for a in [1i64, -1] {
                        for b in [1i64, -1] {
                            for c in [1i64, -1] {
                                push(LinearForm::new(vec![(x, a), (y, b), (z, c)]), &mut out);
                            }
                        }
                    }
                }
            }
        }
        for &x in r {
            for (j, &y) in r.iter().enumerate() {
                for &z in &r[j + 1..] {
                    if x == y || x == z {
                        continue;
                    }
                    for a in [2i64, -2] {
                        for b in [1i64, -1] {
                            for c in [1i64, -1] {
                                push(LinearForm::new(vec![(x, a), (y, b), (z, c)]), &mut out);
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// The exact IR form of `form <= bound` over mathematical integers when C's `long long`
/// arithmetic computes it without overflow (variables of at most 32 bits, small
/// coefficients), or when it is a bound on one variable that fits its type; `None` otherwise.
pub fn constraint_expr(p: &Program, form: &LinearForm, bound: i128) -> Option<Expr> {
    let cmp = |op: BinOp, a: Expr, b: Expr| Expr::Binary(op, Box::new(a), Box::new(b), IntTy::INT);
    if let [(v, c)] = form.terms[..] {
        if c == 1 || c == -1 {
            let t = p.var(v).int_ty();
            let var = Expr::Var(v, t);
            // `x <= d` or `x >= -d` in x's own type, when the constant fits.
            let (op, k) = if c == 1 { (BinOp::Le, bound) } else { (BinOp::Ge, -bound) };
            if t.contains(k) {
                return Some(cmp(op, var, Expr::Const(k, t)));
            }
        }
    }
    if !IntTy::I64.contains(bound) {
        return None;
    }
    let sum = wide_sum(p, form)?;
    Some(cmp(BinOp::Le, sum, Expr::Const(bound, IntTy::I64)))
}

/// `form` as a `long long` sum that C computes without overflow (variables of at most 32
/// bits, coefficients of at most 2^20, at most 8 terms); `None` otherwise.
pub fn wide_sum(p: &Program, form: &LinearForm) -> Option<Expr> {
    let wide = IntTy::I64;
    let small = form.terms.iter().all(|&(v, c)| p.var(v).int_ty().bits <= 32 && c.abs() <= 1 << 20);
    if !small || form.terms.len() > 8 {
        return None;
    }
    let mut sum: Option<Expr> = None;
    for &(v, c) in &form.terms {
        let t = p.var(v).int_ty();
        let x = Expr::Cast(Box::new(Expr::Var(v, t)), wide);
        let term = if c.abs() == 1 { x } else { Expr::Binary(BinOp::Mul, Box::new(Expr::Const(c.abs() as i128, wide)), Box::new(x), wide) };
        sum = Some(match sum {
            None if c < 0 => Expr::Unary(UnOp::Neg, Box::new(term), wide),
            None => term,
            Some(s) => Expr::Binary(if c < 0 { BinOp::Sub } else { BinOp::Add }, Box::new(s), Box::new(term), wide),
        });
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(i: u32) -> VarId {
        VarId(i)
    }

    #[test]
    fn linear_forms_are_normalised() {
        let f = LinearForm::new(vec![(v(2), -2), (v(1), 4), (v(2), 0)]);
        assert_eq!(f.terms, vec![(v(1), 4), (v(2), -2)]);
        let (c, sign) = f.neg().canonical();
        assert_eq!(c.terms, vec![(v(1), 2), (v(2), -1)]);
        assert_eq!(sign, -1);
    }

    #[test]
    fn linear_reads_through_widening_casts_only() {
        let x = Expr::Var(v(1), IntTy::I32);
        let widened = Expr::Cast(Box::new(x.clone()), IntTy::I64);
        let e = Expr::Binary(
            BinOp::Sub,
            Box::new(widened),
            Box::new(Expr::Binary(BinOp::Mul, Box::new(Expr::Const(2, IntTy::I64)), Box::new(Expr::Var(v(2), IntTy::I64)), IntTy::I64)),
            IntTy::I64,
        );
        let (acc, k) = linear(&e).expect("linear");
        assert_eq!(acc.into_iter().collect::<Vec<_>>(), vec![(v(1), 1), (v(2), -2)]);
        assert_eq!(k, 0);
        let narrowed = Expr::Cast(Box::new(Expr::Var(v(3), IntTy::I64)), IntTy::I32);
        assert!(linear(&narrowed).is_none());
        let product = Expr::Binary(BinOp::Mul, Box::new(x.clone()), Box::new(x), IntTy::I32);
        assert!(linear(&product).is_none());
    }
}
