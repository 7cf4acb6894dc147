//! Sequence interpolants by Spacer: the solved predicates of a chain of Horn clauses
//! `P_1 ← A_1`, `P_k ← P_{k-1} ∧ A_k`, `false ← P_{n-1} ∧ A_n` (extraction C.3), and the
//! Spacer context the summary analysis's Horn queries use as well.

use z3::ast::{Ast, Bool, Dynamic};
use z3::{Fixedpoint, FuncDecl, Params, SatResult, Sort};

use super::path::{and, symbols_of, EncodedPath};
use super::QUERY_MS;
use crate::core::Cancel;

/// A Spacer context. After a query that was interrupted or timed out, Z3 4.8.12 may throw
/// from the context's destructor (a `rewriter_exception` that aborts the process), so such a
/// context is leaked instead of freed.
pub(crate) struct SpacerContext(std::mem::ManuallyDrop<Fixedpoint>, bool);

impl SpacerContext {
    /// A Spacer context with inlining and slicing off (so that every relation gets its own
    /// solution) and a time limit of `limit_ms` or the time left, whichever is less.
    pub(crate) fn new(cancel: &Cancel, limit_ms: u64) -> SpacerContext {
        let fp = SpacerContext(std::mem::ManuallyDrop::new(Fixedpoint::new()), false);
        let mut params = Params::new();
        params.set_symbol("engine", "spacer");
        params.set_bool("xform.inline_linear", false);
        params.set_bool("xform.inline_eager", false);
        params.set_bool("xform.slice", false);
        let ms = cancel.remaining_ms().map_or(limit_ms, |r| r.min(limit_ms)).max(1);
        params.set_u32("timeout", ms as u32);
        fp.set_params(&params);
        fp
    }

    /// Declares an unknown relation over arguments of these sorts and registers it.
    pub(crate) fn relation(&self, name: String, sorts: &[Sort]) -> FuncDecl {
        let refs: Vec<&Sort> = sorts.iter().collect();
        let r = FuncDecl::new(name, &refs, &Sort::bool());
        self.register_relation(&r);
        r
    }

    /// Keeps the context from being freed (after an interrupted or timed-out query).
    pub(crate) fn leak(&mut self) {
        self.1 = true;
    }
}

impl std::ops::Deref for SpacerContext {
    type Target = Fixedpoint;
    fn deref(&self) -> &Fixedpoint {
        &self.0
    }
}

impl Drop for SpacerContext {
    fn drop(&mut self) {
        if !self.1 {
            // SAFETY: dropped once, here; never used afterwards.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.0) }
        }
    }
}

/// Spacer on the chain of Horn clauses.
pub(super) fn spacer(path: &EncodedPath, cancel: &Cancel) -> Result<Vec<Bool>, String> {
    let n = path.blocks.len();
    let fp = SpacerContext::new(cancel, QUERY_MS);
    let preds: Vec<FuncDecl> = (0..n - 1)
        .map(|k| {
            let sorts: Vec<Sort> = path.shared[k].iter().map(|d| d.get_sort()).collect();
            fp.relation(format!("itp_{}", k), &sorts)
        })
        .collect();
    let err = fp.relation("itp_false".into(), &[]);
    let app = |k: usize| -> Bool {
        let args: Vec<&dyn Ast> = path.shared[k].iter().map(|d| d as &dyn Ast).collect();
        preds[k].apply(&args).as_bool().expect("a relation")
    };
    for k in 0..n {
        let mut body: Vec<Bool> = path.blocks[k].clone();
        if k > 0 {
            body.push(app(k - 1));
        }
        let head = if k + 1 < n { app(k) } else { err.apply(&[]).as_bool().expect("a relation") };
        let rule = and(&body).implies(&head);
        let mut vars = symbols_of(&body);
        if k + 1 < n {
            for d in &path.shared[k] {
                vars.insert(d.decl().name(), d.clone());
            }
        }
        let bound: Vec<&dyn Ast> = vars.values().map(|d| d as &dyn Ast).collect();
        let rule = if bound.is_empty() { rule } else { z3::ast::forall_const(&bound, &[], &rule) };
        tracing::trace!("Spacer rule {}: {}", k, rule);
        fp.add_rule(&rule, None);
    }
    match fp.query(&err.apply(&[]).as_bool().expect("a relation")) {
        SatResult::Unsat => {}
        SatResult::Sat => return Err("Spacer finds the chain satisfiable".into()),
        SatResult::Unknown => {
            let why = fp.get_reason_unknown();
            let mut fp = fp;
            fp.leak();
            return Err(format!("Spacer gave up ({})", why));
        }
    }
    let mut out = Vec::new();
    for (pred, shared) in preds.iter().zip(&path.shared) {
        let cover = fp.get_cover_delta(-1, pred).ok_or("no solution for a cut")?;
        out.push(substitute_vars(&cover, shared));
    }
    Ok(out)
}

/// Replaces de Bruijn variable `i` by `to[i]`.
fn substitute_vars(f: &Bool, to: &[Dynamic]) -> Bool {
    let ctx = f.get_ctx();
    let raw: Vec<z3_sys::Z3_ast> = to.iter().map(|d| d.get_z3_ast()).collect();
    // SAFETY: all ASTs belong to this thread's context; Z3 returns a new AST of the same sort,
    // which `wrap` takes a reference to.
    unsafe {
        let r = z3_sys::Z3_substitute_vars(ctx.get_z3_context(), f.get_z3_ast(), raw.len() as u32, raw.as_ptr());
        match r {
            Some(r) => Bool::wrap(ctx, r),
            None => Bool::from_bool(true),
        }
    }
}
