//! Test support for interpolation (and other analyses' tests): loading a program, a path to
//! its target cut into blocks, an independent check of interpolant conditions, and random
//! straight-line programs with an infeasible check.

use z3::ast::Bool;
use z3::SatResult;

use super::EncodedPath;
use crate::cfa::{EdgeKind, OpCtx, Program};
use crate::core::{Cancel, Op};
use crate::frontend::SourceInput;
use crate::smt::solver;

pub fn load(src: &str) -> Program {
    let input = SourceInput { path: "/tmp/itp_test.c".into(), text: src.to_string() };
    crate::load(&input, crate::cfa::DataModel::Lp64).expect("test program loads")
}

/// The first path (by DFS, ignoring feasibility) from the start to a target node.
pub fn path_to_target(p: &Program) -> Vec<OpCtx<'_>> {
    fn dfs<'p>(
        p: &'p Program,
        f: crate::ir::FuncId,
        n: crate::cfa::NodeId,
        stack: &mut Vec<(crate::ir::FuncId, crate::cfa::EdgeId)>,
        out: &mut Vec<OpCtx<'p>>,
        depth: usize,
    ) -> bool {
        let cfa = p.cfa(f);
        if cfa.node(n).target.is_some() {
            return true;
        }
        if depth > 500 {
            return false;
        }
        if n == cfa.exit {
            if let Some((g, e)) = stack.pop() {
                out.push(crate::cfa::op_ctx(p, Op::Return(g, e), false));
                if dfs(p, g, p.cfa(g).edge(e).dst, stack, out, depth + 1) {
                    return true;
                }
                out.pop();
                stack.push((g, e));
            }
            return false;
        }
        for (eid, e) in cfa.out_edges(n) {
            match &e.kind {
                EdgeKind::CallSummary(c) => {
                    out.push(crate::cfa::op_ctx(p, Op::Call(f, eid), false));
                    stack.push((f, eid));
                    if dfs(p, c.callee, p.cfa(c.callee).entry, stack, out, depth + 1) {
                        return true;
                    }
                    stack.pop();
                    out.pop();
                }
                _ => {
                    out.push(crate::cfa::op_ctx(p, Op::Edge(f, eid), false));
                    if dfs(p, f, e.dst, stack, out, depth + 1) {
                        return true;
                    }
                    out.pop();
                }
            }
        }
        false
    }
    let mut out = Vec::new();
    assert!(dfs(p, p.start, p.cfa(p.start).entry, &mut Vec::new(), &mut out, 0), "a path to the target");
    out
}

/// Cuts a path into `k` blocks of (about) equal length.
pub fn blocks<'p>(ops: &[OpCtx<'p>], k: usize) -> Vec<Vec<OpCtx<'p>>> {
    let n = ops.len();
    (0..k).map(|i| ops[i * n / k..(i + 1) * n / k].to_vec()).collect()
}

/// Independent check of the interpolant conditions with a fresh solver per condition.
pub fn assert_sequence(path: &EncodedPath, itps: &[Bool]) {
    let cancel = Cancel::new();
    let n = path.blocks.len();
    assert_eq!(itps.len(), n - 1);
    for k in 0..n {
        let s = solver(&cancel, 10_000);
        if k > 0 {
            s.assert(&itps[k - 1]);
        }
        for c in &path.blocks[k] {
            s.assert(c);
        }
        if k + 1 < n {
            s.assert(itps[k].not());
        }
        assert_eq!(s.check(), SatResult::Unsat, "interpolant condition {} fails", k);
    }
}

/// A random straight-line program with linear updates whose final check is infeasible.
pub fn program(updates: &[(usize, usize, i64)], check: (usize, usize)) -> String {
    let mut src = String::from("extern int __VERIFIER_nondet_int(void);\nextern void reach_error(void);\nint main(void) {\n");
    let n = 4;
    for i in 0..n {
        src += &format!("  int x{} = __VERIFIER_nondet_int();\n  if (x{} < -1000 || x{} > 1000) return 0;\n", i, i, i);
    }
    // Symbolic values: each variable as input index + offset (or a constant).
    let mut sym: Vec<(Option<usize>, i64)> = (0..n).map(|i| (Some(i), 0)).collect();
    for &(dst, src_var, c) in updates {
        let (d, s) = (dst % n, src_var % n);
        src += &format!("  x{} = x{} + {};\n", d, s, c);
        sym[d] = (sym[s].0, sym[s].1 + c);
    }
    let (a, b) = (check.0 % n, check.1 % n);
    // x_a - x_b is fixed when both derive from the same input: check the opposite.
    match (sym[a], sym[b]) {
        ((Some(i), ca), (Some(j), cb)) if i == j => {
            src += &format!("  if (x{} - x{} != {}) reach_error();\n", a, b, ca - cb);
        }
        _ => {
            // Otherwise the values are bounded: check something out of range.
            src += &format!("  if (x{} > 100000) reach_error();\n", a);
        }
    }
    src += "  return 0;\n}\n";
    src
}
