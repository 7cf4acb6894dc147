//! Horn clauses solved by a newer Z3 in a child process: Spacer with global guidance
//! (Vediramana Krishnan, Chen, Shoham, Gurfinkel, *Global Guidance for Local Generalization in
//! Model Checking*, CAV 2020: `fp.spacer.global`), which the Z3 4.8.12 cpals links lacks,
//! and which solves loop-counting clauses that 4.8.12's Spacer does not (docs/benchmarks.md).
//! The child also keeps a solver abort (4.8.12's `mbp_arrays` assertion) out of the process.
//!
//! The solver is `$CPALS_Z3`, else the `z3` of the tools' Python environment
//! (`~/.cache/cpals/tools-venv/bin/z3`, PyPI's `z3-solver`, which `.ci/run` installs), else a
//! `z3` on the `PATH`; it is used only if it says it is Z3 4.9 or later. Without one the
//! caller solves in-process. The child runs bounded (`sandbox::bound`: CPU time, address
//! space, its own process group, killed at its wall time or on cancellation); its answer is a
//! model read back with a small reader that accepts only the arithmetic Spacer writes, and
//! nothing rests on it: the solution's atoms are candidates, checked bit-precisely by the
//! caller.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use z3::ast::Bool;

use crate::core::Cancel;
use crate::sandbox::{self, End, Limits, TempDir};

/// The child's limits besides its time: 4 GiB of address space, no core file.
const MEMORY: u64 = 4 << 30;

/// The external solver, found once per process.
pub fn solver_path() -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND.get_or_init(find).as_deref()
}

fn find() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("CPALS_Z3") {
        candidates.push(PathBuf::from(p));
    }
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(Path::new(&home).join(".cache/cpals/tools-venv/bin/z3"));
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("z3")));
    }
    let found = candidates.into_iter().find(|c| c.is_file() && recent_enough(c));
    tracing::debug!("external Z3 for Horn clauses: {:?}", found);
    found
}

/// Whether `z3 -version` names version 4.9 or later.
fn recent_enough(path: &Path) -> bool {
    let limits = Limits { cpu_seconds: 5, address_space: MEMORY, file_size: Some(0), open_files: None, processes: None };
    let Ok(mut cmd) = sandbox::launch::command(path, limits) else { return false };
    cmd.arg("-version").stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
    let Ok(out) = cmd.output() else { return false };
    let text = String::from_utf8_lossy(&out.stdout);
    // "Z3 version 5.4.1 - 64 bit"
    let Some(v) = text.split_whitespace().nth(2) else { return false };
    let mut parts = v.split('.').map(|x| x.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    major > 4 || (major == 4 && minor >= 9)
}

/// The answer of the external solver.
pub(crate) enum HornAnswer {
    /// A solution: per relation, its parameters' names and its definition's text.
    Solved(HashMap<String, (Vec<String>, String)>),
    /// The query relation is derivable (in the clauses' arithmetic).
    Derivable,
}

/// Solves `rules` (closed Horn clauses over the relations `rels`, name and arity, with `Int`
/// arguments) for `query` not derivable, within `limit_ms` of CPU time and the time left.
pub(crate) fn solve_horn(
    path: &Path,
    rels: &[(String, usize)],
    rules: &[Bool],
    query: &str,
    cancel: &Cancel,
    limit_ms: u64,
) -> Result<HornAnswer, String> {
    let ms = cancel.remaining_ms().map_or(limit_ms, |r| r.min(limit_ms)).max(1);
    let mut text = String::from("(set-logic HORN)\n");
    for (name, arity) in rels {
        text.push_str(&format!("(declare-fun {} ({}) Bool)\n", name, vec!["Int"; *arity].join(" ")));
    }
    for r in rules {
        text.push_str(&format!("(assert {})\n", r));
    }
    text.push_str(&format!("(assert (=> {} false))\n(check-sat)\n(get-model)\n", query));
    let options = [
        "fp.engine=spacer",
        "fp.spacer.global=true",
        "fp.xform.inline_linear=false",
        "fp.xform.inline_eager=false",
        "fp.xform.slice=false",
    ];
    let answer = run(path, &options, &text, cancel, ms)?;
    let answer = answer.trim_start();
    if answer.starts_with("unsat") {
        return Ok(HornAnswer::Derivable);
    }
    let Some(model) = answer.strip_prefix("sat") else {
        return Err(format!("the external Z3 answered `{}`", answer.lines().next().unwrap_or("")));
    };
    Ok(HornAnswer::Solved(definitions(model)))
}

/// Whether the assertions of `s` are unsatisfiable for the external solver, which first
/// substitutes the equations and normalises every term to a sum of monomials (a polynomial
/// identity modulo 2^n is then plain: Z3 4.8.12's own rewriting misses some that 5.x finds at
/// once, such as `nla-digbench/ps4-ll.c`'s step); `None` when it does not say so within
/// `limit_ms`.
pub(crate) fn polynomial_unsat(path: &Path, s: &z3::Solver, cancel: &Cancel, limit_ms: u64) -> Option<bool> {
    let ms = cancel.remaining_ms().map_or(limit_ms, |r| r.min(limit_ms)).max(1);
    let text = format!("{}\n(check-sat-using (then simplify solve-eqs (using-params simplify :som true) smt))\n", s);
    let answer = run(path, &[], &text, cancel, ms);
    tracing::trace!("polynomial query: {:?}", answer.as_ref().map(|a| a.lines().next().unwrap_or("").to_string()));
    match answer.ok()?.trim_start() {
        a if a.starts_with("unsat") => Some(true),
        a if a.starts_with("sat") => Some(false),
        _ => None,
    }
}

/// Runs the external solver on the SMT-LIB `text` with `options` (bounded as the module's
/// header says, within `ms` of CPU time); its standard output.
fn run(path: &Path, options: &[&str], text: &str, cancel: &Cancel, ms: u64) -> Result<String, String> {
    let dir = TempDir::new().map_err(|e| format!("no temporary folder for the solver's input ({})", e))?;
    let input = dir.path().join("query.smt2");
    let output = dir.path().join("answer.txt");
    std::fs::write(&input, text).map_err(|e| format!("cannot write the solver's input ({})", e))?;
    let out = std::fs::File::create(&output).map_err(|e| format!("cannot create the solver's output ({})", e))?;
    // `ms` is CPU time (as the time limits of cpals are); the wall clock allows four times
    // that on a busy machine, and the caller's deadline ends it in any case.
    let cpu = ms.div_ceil(1000) + 1;
    let wall = cancel.remaining_ms().map_or(4 * ms, |r| r.min(4 * ms));
    let limits = Limits { cpu_seconds: cpu, address_space: MEMORY, file_size: Some(64 << 20), open_files: None, processes: Some(64) };
    let mut cmd = sandbox::launch::command(path, limits).map_err(|e| format!("cannot start {} ({})", path.display(), e))?;
    cmd.args(options).arg(&input).stdin(Stdio::null()).stdout(out).stderr(Stdio::null());
    let mut child = cmd.spawn().map_err(|e| format!("cannot start {} ({})", path.display(), e))?;
    drop(cmd);
    match sandbox::wait(&mut child, Duration::from_millis(wall.max(1)), &|| cancel.check().is_err()) {
        End::Exited(0) => {}
        End::Exited(c) => return Err(format!("the external Z3 ended with status {}", c)),
        End::Signalled(s) => return Err(format!("the external Z3 was killed by signal {}", s)),
        End::TimedOut => return Err("the external Z3 ran out of time".into()),
        End::Cancelled => return Err("cancelled".into()),
        End::Lost(e) => return Err(e),
    }
    std::fs::read_to_string(&output).map_err(|e| format!("cannot read the solver's answer ({})", e))
}

/// An s-expression with the byte range of its text.
enum Sexp {
    Atom(String),
    List(Vec<Sexp>, usize, usize),
}

/// Parses one s-expression from `s` at `*i` (whitespace skipped); `None` on unbalanced text.
fn parse(s: &[u8], i: &mut usize) -> Option<Sexp> {
    while *i < s.len() && s[*i].is_ascii_whitespace() {
        *i += 1;
    }
    match s.get(*i)? {
        b'(' => {
            let start = *i;
            *i += 1;
            let mut items = Vec::new();
            loop {
                while *i < s.len() && s[*i].is_ascii_whitespace() {
                    *i += 1;
                }
                match s.get(*i)? {
                    b')' => {
                        *i += 1;
                        return Some(Sexp::List(items, start, *i));
                    }
                    _ => items.push(parse(s, i)?),
                }
            }
        }
        b')' => None,
        _ => {
            let start = *i;
            while *i < s.len() && !s[*i].is_ascii_whitespace() && s[*i] != b'(' && s[*i] != b')' {
                *i += 1;
            }
            Some(Sexp::Atom(String::from_utf8_lossy(&s[start..*i]).into_owned()))
        }
    }
}

/// The `define-fun`s of a model whose definitions use only integer arithmetic, comparisons
/// and connectives (anything else is left out: the candidates are only fewer).
fn definitions(model: &str) -> HashMap<String, (Vec<String>, String)> {
    let bytes = model.as_bytes();
    let mut i = 0;
    let mut out = HashMap::new();
    let Some(Sexp::List(items, _, _)) = parse(bytes, &mut i) else { return out };
    for item in items {
        let Sexp::List(parts, _, _) = item else { continue };
        let [Sexp::Atom(kw), Sexp::Atom(name), Sexp::List(params, _, _), Sexp::Atom(sort), body] = &parts[..] else { continue };
        if kw != "define-fun" || sort != "Bool" {
            continue;
        }
        let names: Option<Vec<String>> = params
            .iter()
            .map(|p| match p {
                Sexp::List(pv, _, _) => match &pv[..] {
                    [Sexp::Atom(n), Sexp::Atom(s)] if s == "Int" && plain_name(n) => Some(n.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        let Some(names) = names else { continue };
        let text = match body {
            Sexp::Atom(a) => a.clone(),
            Sexp::List(_, s, e) => model[*s..*e].to_string(),
        };
        if arithmetic_only(body, &names) {
            out.insert(name.clone(), (names, text));
        }
    }
    out
}

fn plain_name(n: &str) -> bool {
    !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'!' || b == b'_')
}

/// Whether `e` uses only these operators, numerals, the parameters and `let`-bound names
/// (Z3 writes `a!1`, …).
fn arithmetic_only(e: &Sexp, params: &[String]) -> bool {
    const OPS: [&str; 17] = ["and", "or", "not", "=>", "=", "<=", ">=", "<", ">", "+", "-", "*", "ite", "let", "true", "false", "mod"];
    let bound = |a: &str| a.strip_prefix("a!").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    match e {
        Sexp::Atom(a) => {
            OPS.contains(&a.as_str()) || (!a.is_empty() && a.bytes().all(|b| b.is_ascii_digit())) || params.contains(a) || bound(a)
        }
        Sexp::List(items, _, _) => items.iter().all(|x| arithmetic_only(x, params)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_are_read_and_other_theories_left_out() {
        let model = "(\n  (define-fun inv ((x!0 Int) (x!1 Int)) Bool\n    (let ((a!1 (not (>= (+ x!0 (* (- 1) x!1)) 1)))) (and a!1 (>= x!1 0))))\n  (define-fun arr ((x!0 Int)) Bool (select q x!0 |weird name|))\n  (define-fun c () Int 3)\n)";
        let defs = definitions(model);
        assert_eq!(defs.len(), 1, "{:?}", defs.keys().collect::<Vec<_>>());
        let (params, body) = &defs["inv"];
        assert_eq!(params, &["x!0", "x!1"]);
        assert!(body.starts_with("(let ((a!1") && body.ends_with("(>= x!1 0)))"), "{}", body);
        assert!(definitions("(( unbalanced").is_empty());
    }
}
