//! Sequence interpolants by Farkas multipliers: for paths of linear constraints, a
//! linear-programming certificate of infeasibility whose prefix sums are the interpolants.

use std::collections::{BTreeMap, BTreeSet};

use z3::ast::{Ast, Bool, Dynamic, Int, Real};
use z3::{AstKind, DeclKind, SatResult};

use super::path::EncodedPath;
use super::QUERY_MS;
use crate::core::Cancel;
use crate::smt::linear::{linear, Lin};
use crate::smt::solver;

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
pub(super) fn farkas(path: &EncodedPath, cancel: &Cancel) -> Result<Vec<Bool>, String> {
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
            s.assert(l.ge(real(0)));
        }
    }
    let syms: BTreeSet<&String> = rs.iter().flat_map(|r| r.coeffs.keys()).collect();
    for sym in syms {
        let terms: Vec<Real> =
            lambdas.iter().zip(rs).filter_map(|(l, r)| r.coeffs.get(sym).map(|c| Real::mul(&[l.clone(), real(*c)]))).collect();
        if !terms.is_empty() {
            s.assert(Real::add(&terms).eq(real(0)));
        }
    }
    let rhs: Vec<Real> = lambdas.iter().zip(rs).map(|(l, r)| Real::mul(&[l.clone(), real(r.b)])).collect();
    if rhs.is_empty() {
        return Err("no linear constraints".into());
    }
    // Σ λ·b < 0, normalised to ≤ -1 (Z3 4.8.12's strict-inequality caveat).
    s.assert(Real::add(&rhs).le(real(-1)));
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
        out.push(if all_eq { lhs.eq(Int::from_i128(k_sum)) } else { lhs.le(Int::from_i128(k_sum)) });
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
