//! The properties of a program (DESIGN.md "Properties"): every target node the entry can reach,
//! one property per call site for targets inside `__VERIFIER_assert`-style helpers.

use crate::cfa::CallSite;
use crate::cfa::{EdgeKind, Program, SrcRange, TargetKind};
use crate::ir::FuncId;

/// Identifies a property: a target node, and the call site of the helper it sits in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PropertyKey {
    pub func: FuncId,
    pub target: u32,
    pub site: Option<CallSite>,
}

/// A property with where it is shown.
#[derive(Clone, Debug)]
pub struct Property {
    pub key: PropertyKey,
    pub kind: TargetKind,
    /// The function the user wrote the check in (the caller, for helpers).
    pub function: FuncId,
    pub range: SrcRange,
    /// The checked condition as written, when known.
    pub condition: Option<String>,
}

/// Functions the start function reaches through calls from reachable nodes.
fn reachable_functions(p: &Program) -> Vec<bool> {
    let mut seen = vec![false; p.functions.len()];
    let mut stack = vec![p.start];
    while let Some(f) = stack.pop() {
        if std::mem::replace(&mut seen[f.0 as usize], true) {
            continue;
        }
        let cfa = p.cfa(f);
        for e in &cfa.edges {
            if let EdgeKind::CallSummary(c) = &e.kind {
                if cfa.node(e.src).rpo != u32::MAX {
                    stack.push(c.callee);
                }
            }
        }
    }
    seen
}

/// Enumerates the properties, in source order.
pub fn properties(p: &Program) -> Vec<Property> {
    let reach = reachable_functions(p);
    let mut out = Vec::new();
    for f in p.func_ids() {
        if !reach[f.0 as usize] {
            continue;
        }
        let cfa = p.cfa(f);
        for node in cfa.nodes.iter() {
            let Some(t) = node.target else { continue };
            // A target the CFA cannot reach (a constant-true assertion, code after `return`)
            // is still a property the user wrote: it holds.
            let target = &cfa.targets[t as usize];
            if cfa.assert_helper {
                // One property per reachable call site.
                for g in p.func_ids() {
                    if !reach[g.0 as usize] {
                        continue;
                    }
                    let gcfa = p.cfa(g);
                    for (eid, e) in gcfa.edges.iter().enumerate() {
                        let EdgeKind::CallSummary(c) = &e.kind else { continue };
                        if c.callee != f || gcfa.node(e.src).rpo == u32::MAX {
                            continue;
                        }
                        let site = (g, crate::cfa::EdgeId(eid as u32));
                        // A helper that is an entry of its own is called by the start function,
                        // which has no source: its property is shown at the check itself.
                        let (function, range, condition) = if g == p.start {
                            (f, target_range(p, f, target), target.condition.clone())
                        } else if crate::frontend::models::is_model_file(&p.func(f).file) {
                            // A library model's access, at the program's call: which one it is.
                            let what = target.condition.as_ref().map(|c| format!("{} in `{}`", c, p.func(f).name));
                            (g, p.func(g).abs(e.span), what)
                        } else {
                            (g, p.func(g).abs(e.span), None)
                        };
                        out.push(Property {
                            key: PropertyKey { func: f, target: t, site: Some(site) },
                            kind: target.kind,
                            function,
                            range,
                            condition,
                        });
                    }
                }
            } else {
                out.push(Property {
                    key: PropertyKey { func: f, target: t, site: None },
                    kind: target.kind,
                    function: f,
                    range: target_range(p, f, target),
                    condition: target.condition.clone(),
                });
            }
        }
    }
    out.sort_by(|a, b| (&a.range.file, a.range.line, a.range.col, a.key).cmp(&(&b.range.file, b.range.line, b.range.col, b.key)));
    out.dedup_by(|a, b| a.key == b.key);
    out
}

/// Where a target is shown: the check the user wrote.
fn target_range(p: &Program, f: FuncId, target: &crate::cfa::Target) -> SrcRange {
    let mut range = p.func(f).abs(target.span);
    if target.kind == TargetKind::Assert {
        macro_start(p, &mut range);
    }
    range
}

/// `assert(e)` is a macro: its expansion's positions are approximate. Points the range at the
/// `assert` the user wrote on that line, when there is one.
fn macro_start(p: &Program, r: &mut SrcRange) {
    if r.file != p.file {
        return;
    }
    let Some(line) = p.source.lines().nth((r.line as usize).saturating_sub(1)) else { return };
    let before = line.get(..(r.col as usize).saturating_sub(1)).unwrap_or(line);
    if let Some(i) = before.rfind("assert") {
        r.col = i as u32 + 1;
        if let Some(close) = line[i..].find(';') {
            r.end_line = r.line;
            r.end_col = (i + close) as u32 + 1;
        }
    }
}
