//! Predicates of the predicate analysis: linear constraints over program variables read as
//! mathematical integers (a variable's value is the integer its C type gives it), so that a
//! predicate such as `x + y <= n` never overflows itself. Interpolation produces them; the
//! abstraction evaluates them exactly on the machine-integer semantics.

use std::fmt;

use crate::cfa::Program;
use crate::ir::VarId;

/// How the linear form `Σ c·x + k` relates to zero.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rel {
    /// `Σ c·x + k <= 0`
    Le,
    /// `Σ c·x + k == 0`
    Eq,
    /// `Σ c·x + k ≡ 0 (mod m)`
    Mod(i128),
}

/// A linear predicate `Σ c·x + k ⋈ 0` with sorted variables and no zero coefficient.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinPred {
    pub terms: Vec<(VarId, i128)>,
    pub constant: i128,
    pub rel: Rel,
}

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl LinPred {
    /// Builds a normalised predicate; `None` if it is trivially true or false (no variable).
    pub fn new(mut terms: Vec<(VarId, i128)>, constant: i128, rel: Rel) -> Option<LinPred> {
        terms.sort();
        let mut merged: Vec<(VarId, i128)> = Vec::new();
        for (v, c) in terms {
            match merged.last_mut() {
                Some((w, d)) if *w == v => *d += c,
                _ => merged.push((v, c)),
            }
        }
        merged.retain(|(_, c)| *c != 0);
        if merged.is_empty() {
            return None;
        }
        let mut p = LinPred { terms: merged, constant, rel };
        p.normalize();
        Some(p)
    }

    fn normalize(&mut self) {
        let g = self.terms.iter().fold(0, |g, (_, c)| gcd(g, *c));
        match self.rel {
            Rel::Le => {
                // Σ (c/g)·x <= floor(-k/g)  ⇔  Σ (c/g)·x + ceil(k/g) <= 0 over the integers.
                if g > 1 {
                    for (_, c) in &mut self.terms {
                        *c /= g;
                    }
                    self.constant = -((-self.constant).div_euclid(g));
                }
            }
            Rel::Eq => {
                if g > 1 && self.constant % g == 0 {
                    for (_, c) in &mut self.terms {
                        *c /= g;
                    }
                    self.constant /= g;
                }
                if self.terms[0].1 < 0 {
                    for (_, c) in &mut self.terms {
                        *c = -*c;
                    }
                    self.constant = -self.constant;
                }
            }
            Rel::Mod(m) => {
                let m = m.abs();
                for (_, c) in &mut self.terms {
                    *c = c.rem_euclid(m);
                }
                self.terms.retain(|(_, c)| *c != 0);
                self.constant = self.constant.rem_euclid(m);
                self.rel = Rel::Mod(m);
            }
        }
    }

    pub fn vars(&self) -> impl Iterator<Item = VarId> + '_ {
        self.terms.iter().map(|(v, _)| *v)
    }

    /// Evaluates on concrete values (for tests and the interpreter).
    pub fn holds(&self, value: impl Fn(VarId) -> i128) -> bool {
        let s: i128 = self.terms.iter().map(|(v, c)| c * value(*v)).sum::<i128>() + self.constant;
        match self.rel {
            Rel::Le => s <= 0,
            Rel::Eq => s == 0,
            Rel::Mod(m) => s.rem_euclid(m) == 0,
        }
    }

    /// The predicate as a C-like condition with the program's variable names.
    pub fn display<'a>(&'a self, p: &'a Program) -> impl fmt::Display + 'a {
        Shown { pred: self, p, negated: false }
    }

    /// The predicate's negation, shown as one condition (`x != y`, `x > y`).
    pub fn display_negated<'a>(&'a self, p: &'a Program) -> impl fmt::Display + 'a {
        Shown { pred: self, p, negated: true }
    }
}

/// The linear form of an integer expression read over mathematical integers, if it is linear.
fn linear(e: &crate::ir::Expr) -> Option<(Vec<(VarId, i128)>, i128)> {
    use crate::ir::{BinOp, Expr, UnOp};
    Some(match e {
        Expr::Const(c, _) => (Vec::new(), *c),
        Expr::Var(v, _) => (vec![(*v, 1)], 0),
        Expr::Cast(a, t) if !t.boolean => linear(a)?,
        Expr::Unary(UnOp::Neg, a, _) => {
            let (t, k) = linear(a)?;
            (t.into_iter().map(|(v, c)| (v, -c)).collect(), -k)
        }
        Expr::Binary(op @ (BinOp::Add | BinOp::Sub), a, b, _) => {
            let (mut t, k) = linear(a)?;
            let (t2, k2) = linear(b)?;
            let s = if *op == BinOp::Add { 1 } else { -1 };
            t.extend(t2.into_iter().map(|(v, c)| (v, s * c)));
            (t, k + s * k2)
        }
        Expr::Binary(BinOp::Mul, a, b, _) => match (&**a, &**b) {
            (Expr::Const(c, _), x) | (x, Expr::Const(c, _)) => {
                let (t, k) = linear(x)?;
                (t.into_iter().map(|(v, d)| (v, d * c)).collect(), k * c)
            }
            _ => return None,
        },
        _ => return None,
    })
}

/// The predicate a branch condition states (`a < b` gives `a - b + 1 <= 0`), for conditions
/// comparing linear expressions; a disequality gives the equality (its negation is tracked).
pub fn from_condition(e: &crate::ir::Expr) -> Option<LinPred> {
    use crate::ir::{BinOp, Expr, UnOp};
    match e {
        Expr::Unary(UnOp::LNot, a, _) => from_condition(a),
        // `e % m == r` (or `!=`): the congruence `e ≡ r (mod m)`.
        Expr::Binary(BinOp::Eq | BinOp::Ne, a, b, _) if congruence(a, b).is_some() => congruence(a, b),
        Expr::Binary(op, a, b, _) if op.is_comparison() => {
            let (ta, ka) = linear(a)?;
            let (tb, kb) = linear(b)?;
            let diff = |s: i128| -> Vec<(VarId, i128)> {
                ta.iter().map(|&(v, c)| (v, s * c)).chain(tb.iter().map(|&(v, c)| (v, -s * c))).collect()
            };
            match op {
                BinOp::Lt => LinPred::new(diff(1), ka - kb + 1, Rel::Le),
                BinOp::Le => LinPred::new(diff(1), ka - kb, Rel::Le),
                BinOp::Gt => LinPred::new(diff(-1), kb - ka + 1, Rel::Le),
                BinOp::Ge => LinPred::new(diff(-1), kb - ka, Rel::Le),
                _ => LinPred::new(diff(1), ka - kb, Rel::Eq),
            }
        }
        Expr::Var(v, _) => LinPred::new(vec![(*v, 1)], 0, Rel::Eq),
        _ => None,
    }
}

/// `e % m ⋈ r` as the congruence of `e - r` modulo `m` (either operand order).
fn congruence(a: &crate::ir::Expr, b: &crate::ir::Expr) -> Option<LinPred> {
    use crate::ir::{BinOp, Expr};
    let strip = |e: &Expr| -> Expr {
        match e {
            Expr::Cast(x, _) => (**x).clone(),
            other => other.clone(),
        }
    };
    for (x, y) in [(a, b), (b, a)] {
        if let (Expr::Binary(BinOp::Rem, e, m, _), Expr::Const(r, _)) = (&strip(x), &strip(y)) {
            if let (Some((t, k)), Expr::Const(m, _)) = (linear(e), &strip(m)) {
                if *m > 1 {
                    return LinPred::new(t, k - r, Rel::Mod(*m));
                }
            }
        }
    }
    None
}

struct Shown<'a> {
    pred: &'a LinPred,
    p: &'a Program,
    negated: bool,
}

fn side(p: &Program, terms: &[(VarId, i128)], k: i128) -> String {
    let mut out = String::new();
    for (v, c) in terms {
        let name = p.var_name(*v);
        let term = match c.abs() {
            1 => name.to_string(),
            a => format!("{}*{}", a, name),
        };
        out = match (out.is_empty(), *c < 0) {
            (true, false) => term,
            (true, true) => format!("-{}", term),
            (false, false) => format!("{} + {}", out, term),
            (false, true) => format!("{} - {}", out, term),
        };
    }
    if k != 0 || out.is_empty() {
        if out.is_empty() {
            out = k.to_string();
        } else if k > 0 {
            out = format!("{} + {}", out, k);
        } else {
            out = format!("{} - {}", out, -k);
        }
    }
    out
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.pred.terms;
        match self.pred.rel {
            Rel::Mod(m) => {
                // Coefficients in (-m/2, m/2]: `x - y` rather than `x + 4294967295*y`.
                let balanced = |c: i128| if c > m / 2 { c - m } else { c };
                let terms: Vec<(VarId, i128)> = t.iter().map(|&(v, c)| (v, balanced(c))).collect();
                let lhs = side(self.p, &terms, balanced(self.pred.constant));
                write!(f, "({}) % {} {} 0", lhs, m, if self.negated { "!=" } else { "==" })
            }
            rel => {
                // Positive terms on the left, the rest on the right: `x + y <= n + 3`.
                let pos: Vec<(VarId, i128)> = t.iter().copied().filter(|(_, c)| *c > 0).collect();
                let neg: Vec<(VarId, i128)> = t.iter().map(|&(v, c)| (v, -c)).filter(|(_, c)| *c > 0).collect();
                let (lhs, rhs) = if pos.is_empty() {
                    // -x + k <= 0  is  k <= x
                    (side(self.p, &[], self.pred.constant), side(self.p, &neg, 0))
                } else {
                    (side(self.p, &pos, 0), side(self.p, &neg, -self.pred.constant))
                };
                let op = match (rel, self.negated) {
                    (Rel::Le, false) => "<=",
                    (Rel::Le, true) => ">",
                    (_, false) => "==",
                    (_, true) => "!=",
                };
                write!(f, "{} {} {}", lhs, op, rhs)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation_divides_by_the_gcd() {
        // 2x + 4y + 3 <= 0  ⇔  x + 2y + 2 <= 0 over the integers (2x+4y <= -3 ⇔ x+2y <= -2).
        let p = LinPred::new(vec![(VarId(1), 2), (VarId(2), 4)], 3, Rel::Le).unwrap();
        assert_eq!(p.terms, vec![(VarId(1), 1), (VarId(2), 2)]);
        assert_eq!(p.constant, 2);
        let e = LinPred::new(vec![(VarId(1), -2), (VarId(2), 2)], 0, Rel::Eq).unwrap();
        assert_eq!(e.terms, vec![(VarId(1), 1), (VarId(2), -1)]);
        assert!(LinPred::new(vec![(VarId(1), 1), (VarId(1), -1)], 5, Rel::Le).is_none());
    }

    #[test]
    fn evaluation() {
        let p = LinPred::new(vec![(VarId(1), 1), (VarId(2), -1)], 0, Rel::Le).unwrap(); // x <= y
        assert!(p.holds(|v| if v == VarId(1) { 3 } else { 5 }));
        assert!(!p.holds(|v| if v == VarId(1) { 6 } else { 5 }));
        let m = LinPred::new(vec![(VarId(1), 1)], 0, Rel::Mod(2)).unwrap();
        assert!(m.holds(|_| 4) && !m.holds(|_| 3));
    }
}
