//! Sequence interpolants by quantifier elimination, weakened with unsat cores: the SMT lift
//! of seed 000's Alg. 3 (`I_k = ∃(local symbols). I_{k-1} ∧ A_k`, then conjuncts dropped
//! while the rest of the path stays refuted).

use std::collections::BTreeSet;

use z3::ast::{Ast, Bool, Dynamic};
use z3::{AstKind, DeclKind, Goal, SatResult, Tactic};

use super::path::{and, symbols_of, EncodedPath};
use super::QUERY_MS;
use crate::core::Cancel;
use crate::smt::solver;

/// Flattens top-level conjunctions.
fn conjuncts(f: &Bool, out: &mut Vec<Bool>) {
    let d = Dynamic::from_ast(f);
    if d.kind() == AstKind::App && d.decl().kind() == DeclKind::And {
        for c in d.children() {
            if let Some(b) = c.as_bool() {
                conjuncts(&b, out);
            }
        }
    } else if !(d.kind() == AstKind::App && d.decl().kind() == DeclKind::True) {
        out.push(f.clone());
    }
}

/// Strongest interpolants by quantifier elimination, weakened with unsat cores.
pub(super) fn qe_core(path: &EncodedPath, cancel: &Cancel) -> Result<Vec<Bool>, String> {
    let n = path.blocks.len();
    let mut prev = Bool::from_bool(true);
    let mut out = Vec::new();
    for k in 0..n - 1 {
        cancel.check().map_err(|i| i.describe())?;
        let mut parts = vec![prev.clone()];
        parts.extend(path.blocks[k].iter().cloned());
        let f = and(&parts);
        let keep: BTreeSet<String> = path.shared[k].iter().map(|d| d.decl().name()).collect();
        let locals: Vec<Dynamic> =
            symbols_of(std::slice::from_ref(&f)).into_iter().filter(|(n, _)| !keep.contains(n)).map(|(_, d)| d).collect();
        let projected = if locals.is_empty() {
            f
        } else {
            let bound: Vec<&dyn Ast> = locals.iter().map(|d| d as &dyn Ast).collect();
            let q = z3::ast::exists_const(&bound, &[], &f);
            let goal = Goal::new(false, false, false);
            goal.assert(&q);
            let res = Tactic::new("qe").apply(&goal, None).map_err(|e| format!("qe failed: {}", e))?;
            let mut fs = Vec::new();
            for g in res.list_subgoals() {
                fs.extend(g.get_formulas());
            }
            let r = and(&fs);
            if Dynamic::from_ast(&r).kind() == AstKind::Quantifier {
                return Err("quantifier elimination left a quantifier".into());
            }
            r
        };
        // Keep only the conjuncts the rest of the path needs.
        let mut cs = Vec::new();
        conjuncts(&projected, &mut cs);
        let s = solver(cancel, QUERY_MS);
        for b in &path.blocks[k + 1..] {
            for c in b {
                s.assert(c);
            }
        }
        let marks: Vec<Bool> = (0..cs.len()).map(|i| Bool::new_const(format!("itp_keep_{}_{}", k, i))).collect();
        for (m, c) in marks.iter().zip(&cs) {
            s.assert(m.implies(c));
        }
        let core: BTreeSet<String> = match s.check_assumptions(&marks) {
            SatResult::Unsat => s.get_unsat_core().iter().map(|b| b.to_string()).collect(),
            _ => return Err("the projected prefix does not refute the suffix".into()),
        };
        let mut kept: Vec<Bool> = marks.iter().zip(&cs).filter(|(m, _)| core.contains(&m.to_string())).map(|(_, c)| c.clone()).collect();
        // Greedy removal of what the core kept unnecessarily.
        let mut i = 0;
        while i < kept.len() && kept.len() > 1 {
            let trial: Vec<Bool> = kept.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, c)| c.clone()).collect();
            s.push();
            s.assert(and(&trial));
            let still = s.check() == SatResult::Unsat;
            s.pop(1);
            if still {
                kept = trial;
            } else {
                i += 1;
            }
        }
        let itp = and(&kept);
        out.push(itp.clone());
        prev = itp;
    }
    Ok(out)
}
