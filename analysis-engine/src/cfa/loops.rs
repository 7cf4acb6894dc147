//! Loop structure of a CFA: reverse post-order numbering and loop heads (targets of back edges
//! in a depth-first search from the entry), computed once when a CFA is frozen.

use crate::cfa::{Cfa, CfaEdge, CfaNode, NodeId, Span};

/// Depth-first search from `entry`: `(postorder, back-edge targets)`. Iterative, so that long
/// functions cannot exhaust the stack.
fn dfs(nodes: &[CfaNode], edges: &[CfaEdge], entry: NodeId) -> (Vec<NodeId>, Vec<bool>) {
    #[derive(Copy, Clone, PartialEq)]
    enum Color {
        White,
        Gray,
        Black,
    }
    let mut color = vec![Color::White; nodes.len()];
    let mut heads = vec![false; nodes.len()];
    let mut post = Vec::with_capacity(nodes.len());
    let mut stack: Vec<(NodeId, usize)> = vec![(entry, 0)];
    color[entry.0 as usize] = Color::Gray;
    while let Some(&mut (n, ref mut i)) = stack.last_mut() {
        let out = &nodes[n.0 as usize].out;
        if *i < out.len() {
            let e = &edges[out[*i].0 as usize];
            *i += 1;
            let d = e.dst;
            match color[d.0 as usize] {
                Color::White => {
                    color[d.0 as usize] = Color::Gray;
                    stack.push((d, 0));
                }
                Color::Gray => heads[d.0 as usize] = true,
                Color::Black => {}
            }
        } else {
            color[n.0 as usize] = Color::Black;
            post.push(n);
            stack.pop();
        }
    }
    (post, heads)
}

/// Numbers nodes in reverse post-order, marks loop heads and fills in node positions.
pub fn finish_cfa(mut cfa: Cfa) -> Cfa {
    let (post, heads) = dfs(&cfa.nodes, &cfa.edges, cfa.entry);
    let n = post.len() as u32;
    for (i, node) in post.iter().enumerate() {
        cfa.nodes[node.0 as usize].rpo = n - 1 - i as u32;
    }
    for (i, node) in cfa.nodes.iter_mut().enumerate() {
        node.loop_head = heads[i];
    }
    for i in 0..cfa.nodes.len() {
        if cfa.nodes[i].span == Span::default() {
            let sp = cfa.nodes[i]
                .out
                .iter()
                .map(|e| cfa.edges[e.0 as usize].span)
                .find(|s| *s != Span::default())
                .or_else(|| cfa.nodes[i].inc.iter().map(|e| cfa.edges[e.0 as usize].span).find(|s| *s != Span::default()));
            if let Some(sp) = sp {
                cfa.nodes[i].span = sp;
            }
        }
    }
    cfa
}

/// True if a cycle is reachable from `entry`.
pub fn has_cycle(nodes: &[CfaNode], edges: &[CfaEdge], entry: NodeId) -> bool {
    dfs(nodes, edges, entry).1.iter().any(|&h| h)
}
