//! Graphviz output of a program's CFAs (`cpals cfa FILE.c --dot`): one cluster per function,
//! loop heads as double circles, targets in red, call edges dashed to the callee's entry.

use std::fmt::Write;

use crate::cfa::{pretty, EdgeKind, Program};

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

pub fn to_dot(p: &Program) -> String {
    let mut out = String::from("digraph cfa {\n  node [shape=circle fontsize=10];\n  edge [fontsize=10];\n");
    // Interprocedural edges go outside the clusters so that nodes stay in their function's.
    let mut calls = String::new();
    for (fi, f) in p.functions.iter().enumerate() {
        let cfa = &f.cfa;
        let _ = writeln!(out, "  subgraph cluster_{} {{\n    label=\"{}\";", fi, escape(&f.name));
        for (ni, n) in cfa.nodes.iter().enumerate() {
            if n.rpo == u32::MAX && n.inc.is_empty() && n.out.is_empty() {
                continue;
            }
            let mut attrs = vec![format!("label=\"{}\"", ni)];
            if n.loop_head {
                attrs.push("shape=doublecircle".into());
            }
            if n.target.is_some() {
                attrs.push("color=red style=filled fillcolor=\"#ffdddd\"".into());
            }
            if n.terminal {
                attrs.push("shape=box".into());
            }
            if ni == cfa.entry.0 as usize {
                attrs.push("xlabel=\"entry\"".into());
            }
            if ni == cfa.exit.0 as usize {
                attrs.push("xlabel=\"exit\"".into());
            }
            let _ = writeln!(out, "    f{}n{} [{}];", fi, ni, attrs.join(" "));
        }
        for e in &cfa.edges {
            let line = f.first_line + e.span.line;
            let label = escape(&pretty::edge(p, &e.kind));
            let _ = writeln!(out, "    f{}n{} -> f{}n{} [label=\"{}: {}\"];", fi, e.src.0, fi, e.dst.0, line, label);
            if let EdgeKind::CallSummary(c) = &e.kind {
                let callee = p.cfa(c.callee);
                let _ = writeln!(calls, "  f{}n{} -> f{}n{} [style=dashed label=\"call\"];", fi, e.src.0, c.callee.0, callee.entry.0);
                let _ = writeln!(calls, "  f{}n{} -> f{}n{} [style=dashed label=\"return\"];", c.callee.0, callee.exit.0, fi, e.dst.0);
            }
        }
        out.push_str("  }\n");
    }
    out.push_str(&calls);
    out.push_str("}\n");
    out
}
