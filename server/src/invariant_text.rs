//! Loop invariants as a person would write them, for the editor's hints and the text output:
//! without the conjuncts the variables' types already imply (`0ULL <= klen` for an unsigned
//! `klen`, `n - i <= 2147483646` when `i >= 1`) or that only restate the machine's ranges (a
//! bound at a type's limit, such as `items - done >= -2147483648`), bounds of one variable
//! joined (`0 <= i && i <= n`), relations written `a <= b` rather than `b - a >= 0`, no
//! duplicates. Dropping a conjunct only weakens what is shown, so what is shown still holds;
//! the full form stays available (the hover, `--json`).

use std::collections::BTreeMap;

use analysis_engine::cfa::Program;
use analysis_engine::ir::VarKind;
use analysis_engine::report::InvariantReport;

/// The range of values of a variable's type: `(min, max)`.
pub type Bounds = (i128, i128);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Le,
    Ge,
    Lt,
    Gt,
    Eq,
}

/// `Σ coef·var  op  c`, variables in order of first appearance.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Lin {
    terms: Vec<(String, i128)>,
    op: Op,
    c: i128,
}

/// The conjuncts of `e` at the top level (outside parentheses).
fn conjuncts(e: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    let b = e.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b'&' if depth == 0 && b.get(i + 1) == Some(&b'&') => {
                out.push(e[start..i].trim());
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(e[start..].trim());
    out.into_iter().filter(|c| !c.is_empty()).collect()
}

/// An integer literal with C's suffixes (`7ULL`, `-3`, `0x10`).
fn literal(t: &str) -> Option<i128> {
    let t = t.trim_end_matches(['u', 'U', 'l', 'L']);
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r.trim()),
        None => (false, t),
    };
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i128::from_str_radix(h, 16).ok()?
    } else if t.chars().all(|c| c.is_ascii_digit()) && !t.is_empty() {
        t.parse().ok()?
    } else {
        return None;
    };
    Some(if neg { -v } else { v })
}

fn is_ident(t: &str) -> bool {
    t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// A linear expression `a - 2*b + 3` as terms and a constant (`None` for anything else).
fn linear(e: &str) -> Option<(Vec<(String, i128)>, i128)> {
    let mut terms: Vec<(String, i128)> = Vec::new();
    let mut c = 0i128;
    // Split at top-level `+` / `-` (a leading `-` is a sign).
    let mut parts: Vec<(i128, String)> = Vec::new();
    let mut sign = 1i128;
    let mut cur = String::new();
    for ch in e.chars() {
        match ch {
            '+' | '-' if !cur.trim().is_empty() => {
                parts.push((sign, std::mem::take(&mut cur)));
                sign = if ch == '-' { -1 } else { 1 };
            }
            '-' => sign = -sign,
            '+' => {}
            '(' | ')' => return None,
            _ => cur.push(ch),
        }
    }
    parts.push((sign, cur));
    for (s, p) in parts {
        let p = p.trim();
        if p.is_empty() {
            return None;
        }
        let (k, v) = match p.split_once('*') {
            Some((a, b)) => {
                let (a, b) = (a.trim(), b.trim());
                match (literal(a), literal(b)) {
                    (Some(k), None) if is_ident(b) => (k, Some(b)),
                    (None, Some(k)) if is_ident(a) => (k, Some(a)),
                    _ => return None,
                }
            }
            None => match literal(p) {
                Some(k) => (k, None),
                None if is_ident(p) => (1, Some(p)),
                None => return None,
            },
        };
        match v {
            None => c = c.checked_add(s.checked_mul(k)?)?,
            Some(v) => match terms.iter_mut().find(|(n, _)| n == v) {
                Some(t) => t.1 = t.1.checked_add(s.checked_mul(k)?)?,
                None => terms.push((v.to_string(), s.checked_mul(k)?)),
            },
        }
    }
    terms.retain(|(_, k)| *k != 0);
    Some((terms, c))
}

/// `lhs op rhs` as `Σ terms op c`.
fn parse(conj: &str) -> Option<Lin> {
    for (tok, op) in [("<=", Op::Le), (">=", Op::Ge), ("==", Op::Eq), ("<", Op::Lt), (">", Op::Gt)] {
        if let Some((l, r)) = conj.split_once(tok) {
            if tok.len() == 1 && (r.starts_with('=') || l.ends_with(['<', '>', '=', '!'])) {
                continue;
            }
            let (lt, lc) = linear(l)?;
            let (rt, rc) = linear(r)?;
            let mut terms = lt;
            for (v, k) in rt {
                match terms.iter_mut().find(|(n, _)| *n == v) {
                    Some(t) => t.1 -= k,
                    None => terms.push((v, -k)),
                }
            }
            terms.retain(|(_, k)| *k != 0);
            return Some(Lin { terms, op, c: rc.checked_sub(lc)? });
        }
    }
    None
}

/// The range of `Σ terms` given each variable's range.
fn range(terms: &[(String, i128)], var: &dyn Fn(&str) -> Option<Bounds>) -> Option<Bounds> {
    let (mut lo, mut hi) = (0i128, 0i128);
    for (v, k) in terms {
        let (a, b) = var(v)?;
        let (x, y) = (a.checked_mul(*k)?, b.checked_mul(*k)?);
        lo = lo.checked_add(x.min(y))?;
        hi = hi.checked_add(x.max(y))?;
    }
    Some((lo, hi))
}

/// Whether `l` holds for every value in the ranges.
fn implied(l: &Lin, var: &dyn Fn(&str) -> Option<Bounds>) -> bool {
    let Some((lo, hi)) = range(&l.terms, var) else { return false };
    match l.op {
        Op::Le => hi <= l.c,
        Op::Lt => hi < l.c,
        Op::Ge => lo >= l.c,
        Op::Gt => lo > l.c,
        Op::Eq => lo == l.c && hi == l.c,
    }
}

/// Whether the bound only restates a limit of the variables' types: its constant lies within
/// 2^16 of a large limit (beyond ±2^20: `INT_MIN`, `INT_MAX - 1`, `UINT_MAX`) of the type of
/// one of its variables.
fn at_type_limit(l: &Lin, types: &dyn Fn(&str) -> Option<Bounds>) -> bool {
    const NEAR: i128 = 1 << 16;
    const LARGE: i128 = 1 << 20;
    l.op != Op::Eq
        && l.terms
            .iter()
            .filter_map(|(v, _)| types(v))
            .any(|(lo, hi)| [lo, hi].iter().any(|&limit| limit.abs() > LARGE && (l.c - limit).abs() <= NEAR))
}

/// The bounds one conjunct puts on its only variable.
fn var_bound(l: &Lin) -> Option<(&str, Option<i128>, Option<i128>)> {
    let [(v, k)] = l.terms.as_slice() else { return None };
    let (k, c) = (*k, l.c);
    // k·v op c
    let floor = |a: i128, b: i128| a.div_euclid(b);
    let ceil = |a: i128, b: i128| -(-a).div_euclid(b);
    let (op, k, c) = if k < 0 {
        let flipped = match l.op {
            Op::Le => Op::Ge,
            Op::Ge => Op::Le,
            Op::Lt => Op::Gt,
            Op::Gt => Op::Lt,
            Op::Eq => Op::Eq,
        };
        (flipped, -k, -c)
    } else {
        (l.op, k, c)
    };
    Some(match op {
        Op::Le => (v, None, Some(floor(c, k))),
        Op::Lt => (v, None, Some(ceil(c, k) - 1)),
        Op::Ge => (v, Some(ceil(c, k)), None),
        Op::Gt => (v, Some(floor(c, k) + 1), None),
        Op::Eq if c % k == 0 => (v, Some(c / k), Some(c / k)),
        Op::Eq => return None,
    })
}

fn sum_text(terms: &[(String, i128)]) -> String {
    let mut s = String::new();
    for (i, (v, k)) in terms.iter().enumerate() {
        let (neg, a) = (*k < 0, k.abs());
        if i == 0 {
            if neg {
                s.push('-');
            }
        } else {
            s.push_str(if neg { " - " } else { " + " });
        }
        if a != 1 {
            s.push_str(&format!("{a} * "));
        }
        s.push_str(v);
    }
    s
}

/// A relation between several variables, the positive terms on the left: `a <= b + 3`.
fn relation_text(l: &Lin) -> String {
    let pos: Vec<(String, i128)> = l.terms.iter().filter(|(_, k)| *k > 0).cloned().collect();
    let neg: Vec<(String, i128)> = l.terms.iter().filter(|(_, k)| *k < 0).map(|(v, k)| (v.clone(), -k)).collect();
    let op = match l.op {
        Op::Le => "<=",
        Op::Ge => ">=",
        Op::Lt => "<",
        Op::Gt => ">",
        Op::Eq => "==",
    };
    // pos - neg op c  ⇒  pos op neg + c (or, with nothing positive, neg op' -c).
    let (left, right, op, c) = if pos.is_empty() {
        let flipped = match op {
            "<=" => ">=",
            ">=" => "<=",
            "<" => ">",
            ">" => "<",
            o => o,
        };
        (neg, Vec::new(), flipped, -l.c)
    } else {
        (pos, neg, op, l.c)
    };
    let mut r = if right.is_empty() { String::new() } else { sum_text(&right) };
    if r.is_empty() {
        r = c.to_string();
    } else if c > 0 {
        r.push_str(&format!(" + {c}"));
    } else if c < 0 {
        r.push_str(&format!(" - {}", -c));
    }
    // `a >= b` reads better as `b <= a`.
    match op {
        ">=" if !right.is_empty() => format!("{} <= {}", r, sum_text(&left)),
        ">" if !right.is_empty() => format!("{} < {}", r, sum_text(&left)),
        _ => format!("{} {} {}", sum_text(&left), op, r),
    }
}

/// `expr` without its conjuncts over the library models' own state (`__cpals_in_state`),
/// which is no variable of the program's; `None` when nothing else is left. Dropping
/// conjuncts only weakens it.
pub fn without_model_state(expr: &str) -> Option<String> {
    if !expr.contains("__cpals_") {
        return Some(expr.to_string());
    }
    if expr.contains("||") {
        // Splitting at `&&` alone would not give its conjuncts.
        return None;
    }
    let kept: Vec<&str> = conjuncts(expr).into_iter().filter(|c| !c.contains("__cpals_")).collect();
    (!kept.is_empty()).then(|| kept.join(" && "))
}

/// The invariant `expr` as shown, `types` giving each variable's range by its type (`None`:
/// unknown, then nothing about it is dropped). `None` when every conjunct is implied by the
/// types (the invariant says nothing more).
pub fn present(expr: &str, types: &dyn Fn(&str) -> Option<Bounds>) -> Option<String> {
    let mut seen = Vec::new();
    let parts: Vec<(&str, Option<Lin>)> = conjuncts(expr)
        .into_iter()
        .filter(|c| {
            let new = !seen.contains(c);
            seen.push(*c);
            // The state of cpals's library models (`__cpals_in_state`, standard input's) is
            // no variable of the user's.
            new && !c.contains("__cpals_")
        })
        .map(|c| (c, parse(c)))
        .collect();
    // Drop, one at a time, what the types and the conjuncts kept so far imply.
    let mut keep = vec![true; parts.len()];
    for i in 0..parts.len() {
        let Some(l) = &parts[i].1 else { continue };
        let bounds_without = |v: &str| -> Option<Bounds> {
            let (mut lo, mut hi) = types(v)?;
            for (j, (_, m)) in parts.iter().enumerate() {
                if j == i || !keep[j] {
                    continue;
                }
                if let Some((w, a, b)) = m.as_ref().and_then(var_bound) {
                    if w == v {
                        lo = lo.max(a.unwrap_or(lo));
                        hi = hi.min(b.unwrap_or(hi));
                    }
                }
            }
            Some((lo, hi))
        };
        if implied(l, &bounds_without) || at_type_limit(l, types) {
            keep[i] = false;
        }
    }
    let kept: Vec<&(&str, Option<Lin>)> = parts.iter().zip(&keep).filter(|(_, k)| **k).map(|(p, _)| p).collect();
    if kept.is_empty() {
        return None;
    }
    // One variable's bounds joined (`lo <= v && v <= hi`), in order of first appearance;
    // relations after them as `a <= b`; what does not parse as it was.
    let mut bounds: BTreeMap<String, (usize, Option<i128>, Option<i128>)> = BTreeMap::new();
    let mut out: Vec<(usize, String)> = Vec::new();
    for (i, (text, lin)) in kept.iter().enumerate() {
        match lin.as_ref() {
            Some(l) if var_bound(l).is_some() => {
                let (v, lo, hi) = var_bound(l).expect("checked");
                let e = bounds.entry(v.to_string()).or_insert((i, None, None));
                e.1 = match (e.1, lo) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
                e.2 = match (e.2, hi) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            Some(l) if l.terms.is_empty() => {}
            Some(l) => out.push((i, relation_text(l))),
            None => out.push((i, text.to_string())),
        }
    }
    for (v, (i, lo, hi)) in bounds {
        let text = match (lo, hi) {
            (Some(a), Some(b)) if a == b => format!("{v} == {a}"),
            (Some(a), Some(b)) => format!("{a} <= {v} && {v} <= {b}"),
            (Some(a), None) => format!("{a} <= {v}"),
            (None, Some(b)) => format!("{v} <= {b}"),
            (None, None) => continue,
        };
        out.push((i, text));
    }
    out.sort_by_key(|(i, _)| *i);
    let mut texts: Vec<String> = Vec::new();
    for (_, t) in out {
        if !texts.contains(&t) {
            texts.push(t);
        }
    }
    Some(texts.join(" && "))
}

/// Joins invariants reported for the same loop (by different analyses) into one, each
/// conjunct once.
pub fn join(exprs: &[&str]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in exprs {
        for c in conjuncts(e) {
            if !seen.contains(&c) {
                seen.push(c);
            }
        }
    }
    seen.join(" && ")
}

/// The range of each variable of function `func` (then of the globals) by its type: `None`
/// for a name that is not an integer variable or that names variables of different types.
pub fn type_bounds<'p>(program: &'p Program, func: &'p str) -> impl Fn(&str) -> Option<Bounds> + 'p {
    let locals = program.by_name.get(func).map(|&f| &program.cfa(f).locals[..]).unwrap_or(&[]);
    move |name: &str| {
        let of = |vars: &[analysis_engine::ir::VarInfo]| {
            let mut found = vars.iter().filter(|v| v.name == name && !v.synthetic);
            let first = found.next()?;
            let bounds = |v: &analysis_engine::ir::VarInfo| match v.kind {
                VarKind::Int(t) if !v.pointer => Some((t.min(), t.max())),
                _ => None,
            };
            let b = bounds(first)?;
            found.all(|v| bounds(v) == Some(b)).then_some(b)
        };
        if locals.iter().any(|v| v.name == name) {
            of(locals)
        } else {
            of(&program.globals)
        }
    }
}

/// The invariants of a report as shown: one per loop (what several analyses found there
/// joined), presented with the variables' types when the program is at hand; each with the
/// first report of its loop, the text shown, the full joined form and the analyses that found
/// it (`lpi, value`). Loops whose invariant says nothing beyond the types are left out.
pub fn shown<'r>(invariants: &'r [InvariantReport], program: Option<&Program>) -> Vec<(&'r InvariantReport, String, String, String)> {
    let mut loops: Vec<(&InvariantReport, Vec<&str>, Vec<String>)> = Vec::new();
    for i in invariants {
        let same = |(j, _, _): &&mut (&InvariantReport, Vec<&str>, Vec<String>)| j.range == i.range && j.function == i.function;
        match loops.iter_mut().find(|l| same(l)) {
            Some(l) => {
                l.1.push(&i.expr);
                let src = i.source.to_string();
                if !l.2.contains(&src) {
                    l.2.push(src);
                }
            }
            None => loops.push((i, vec![&i.expr], vec![i.source.to_string()])),
        }
    }
    loops
        .into_iter()
        .filter_map(|(i, exprs, sources)| {
            let expr = join(&exprs);
            let text = match program {
                Some(p) => present(&expr, &type_bounds(p, &i.function))?,
                None => present(&expr, &|_| None)?,
            };
            Some((i, text, expr, sources.join(", ")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const INT: Bounds = (-(1 << 31), (1 << 31) - 1);
    const ULL: Bounds = (0, (1 << 64) - 1);

    fn show(e: &str) -> Option<String> {
        present(e, &|v| match v {
            "klen" => Some(ULL),
            "x" | "y" | "i" | "n" | "done" | "items" | "written" | "read" => Some(INT),
            _ => None,
        })
    }

    #[test]
    fn type_bounds_go_and_bounds_of_one_variable_are_joined() {
        assert_eq!(show("0ULL <= klen && klen <= 7ULL").as_deref(), Some("klen <= 7"));
        assert_eq!(show("i >= 0 && n - i >= 0").as_deref(), Some("0 <= i && i <= n"));
        assert_eq!(show("i >= 1 && n - i <= 2147483646 && i <= 10").as_deref(), Some("1 <= i && i <= 10"));
        assert_eq!(
            show("done >= 0 && items - done >= -2147483648 && written - read == 0").as_deref(),
            Some("0 <= done && written == read")
        );
        assert_eq!(show("0 <= i && i <= 10").as_deref(), Some("0 <= i && i <= 10"));
        assert_eq!(show("x - y <= 3 && x == 2").as_deref(), Some("x <= y + 3 && x == 2"));
    }

    #[test]
    fn what_does_not_parse_stays_and_nothing_left_is_none() {
        assert_eq!(show("(x + y) % 2 == 0 && i >= 0").as_deref(), Some("(x + y) % 2 == 0 && 0 <= i"));
        assert_eq!(show("0ULL <= klen"), None);
        // Unknown variables' conjuncts are kept.
        assert_eq!(show("z >= 0 && z >= 0").as_deref(), Some("0 <= z"));
        // The library models' own state is not shown.
        assert_eq!(show("__cpals_in_state == 0 && __cpals_in_base == 0 && n <= 7").as_deref(), Some("n <= 7"));
        assert_eq!(show("__cpals_in_state == 0"), None);
        assert_eq!(without_model_state("__cpals_in_base == 0 && (x + y) % 2 == 0").as_deref(), Some("(x + y) % 2 == 0"));
        assert_eq!(without_model_state("__cpals_in_state == 0"), None);
    }

    #[test]
    fn invariants_of_one_loop_are_joined_once() {
        assert_eq!(join(&["0 <= i && i <= 10", "i <= 10 && s == 2 * i"]), "0 <= i && i <= 10 && s == 2 * i");
    }
}
