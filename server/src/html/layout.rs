//! A layered drawing of one function's CFA as inline SVG, computed here so that the report
//! page needs neither Graphviz nor a script library: back edges found by depth-first search
//! are reversed, nodes are put on layers by longest path from the entry, ordered within a
//! layer by a few barycenter sweeps, and edges drawn as curves (back edges bend to the right).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use analysis_engine::cfa::{pretty, EdgeKind, Function, Program};

const DX: f64 = 150.0;
const DY: f64 = 74.0;
const R: f64 = 13.0;
const MARGIN: f64 = 40.0;

/// Escapes text for HTML and SVG.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Node positions: `(layer, position within the layer)` by node index.
fn layers(n_nodes: usize, entry: usize, edges: &[(usize, usize)]) -> (Vec<Option<(usize, f64)>>, Vec<bool>) {
    let mut succ: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n_nodes];
    for (k, &(a, b)) in edges.iter().enumerate() {
        succ[a].push((b, k));
    }
    // Depth-first search from the entry (then from any node not yet seen that has edges):
    // an edge to a node on the stack is a back edge.
    let mut state = vec![0u8; n_nodes]; // 0 new, 1 on stack, 2 done
    let mut back = vec![false; edges.len()];
    let mut order = Vec::new();
    let has_edges: Vec<bool> = (0..n_nodes).map(|n| !succ[n].is_empty() || edges.iter().any(|&(_, b)| b == n)).collect();
    let roots: Vec<usize> = std::iter::once(entry).chain((0..n_nodes).filter(|&n| has_edges[n])).collect();
    for root in roots {
        if state[root] != 0 || (!has_edges[root] && root != entry) {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        state[root] = 1;
        order.push(root);
        while let Some(top) = stack.len().checked_sub(1) {
            let (n, i) = stack[top];
            if i < succ[n].len() {
                let (m, k) = succ[n][i];
                stack[top].1 += 1;
                match state[m] {
                    0 => {
                        state[m] = 1;
                        order.push(m);
                        stack.push((m, 0));
                    }
                    1 => back[k] = true,
                    _ => {}
                }
            } else {
                state[n] = 2;
                stack.pop();
            }
        }
    }
    // Longest-path layering over the forward edges, in DFS discovery order (a topological
    // order of the forward graph is obtained by relaxing until nothing changes).
    let mut layer: Vec<Option<usize>> = vec![None; n_nodes];
    for &n in &order {
        layer[n].get_or_insert(0);
    }
    let fwd: Vec<(usize, usize)> = edges.iter().zip(&back).filter(|(_, b)| !**b).map(|(e, _)| *e).collect();
    for _ in 0..n_nodes {
        let mut changed = false;
        for &(a, b) in &fwd {
            if a == b {
                continue;
            }
            let want = layer[a].unwrap_or(0) + 1;
            if layer[b].is_none_or(|l| l < want) {
                layer[b] = Some(want);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    // Order within layers: discovery order, then barycenter sweeps.
    let n_layers = layer.iter().flatten().max().map_or(0, |m| m + 1);
    let mut rows: Vec<Vec<usize>> = vec![Vec::new(); n_layers];
    for &n in &order {
        if let Some(l) = layer[n] {
            rows[l].push(n);
        }
    }
    let mut pos = vec![0.0f64; n_nodes];
    let place = |rows: &Vec<Vec<usize>>, pos: &mut Vec<f64>| {
        for row in rows {
            for (i, &n) in row.iter().enumerate() {
                pos[n] = i as f64 - (row.len() as f64 - 1.0) / 2.0;
            }
        }
    };
    place(&rows, &mut pos);
    for sweep in 0..6 {
        let down = sweep % 2 == 0;
        for l in 0..n_layers {
            let l = if down { l } else { n_layers - 1 - l };
            let mut keyed: Vec<(f64, usize)> = rows[l]
                .iter()
                .map(|&n| {
                    let nbrs: Vec<f64> = fwd
                        .iter()
                        .filter_map(|&(a, b)| {
                            if down && b == n {
                                Some(pos[a])
                            } else if !down && a == n {
                                Some(pos[b])
                            } else {
                                None
                            }
                        })
                        .collect();
                    let key = if nbrs.is_empty() { pos[n] } else { nbrs.iter().sum::<f64>() / nbrs.len() as f64 };
                    (key, n)
                })
                .collect();
            keyed.sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal));
            rows[l] = keyed.into_iter().map(|(_, n)| n).collect();
            for (i, &n) in rows[l].iter().enumerate() {
                pos[n] = i as f64 - (rows[l].len() as f64 - 1.0) / 2.0;
            }
        }
    }
    let res = (0..n_nodes).map(|n| layer[n].map(|l| (l, pos[n]))).collect();
    (res, back)
}

/// The SVG of a function's CFA. Edges carry `data-line`/`data-col` (absolute source
/// positions) so that the page can highlight the current counterexample step.
pub fn function_svg(p: &Program, f: &Function, index: usize) -> String {
    let cfa = &f.cfa;
    let edges: Vec<(usize, usize)> = cfa.edges.iter().map(|e| (e.src.0 as usize, e.dst.0 as usize)).collect();
    let (placed, back) = layers(cfa.nodes.len(), cfa.entry.0 as usize, &edges);
    let min_pos = placed.iter().flatten().map(|&(_, x)| x).fold(0.0f64, f64::min);
    let max_pos = placed.iter().flatten().map(|&(_, x)| x).fold(0.0f64, f64::max);
    let max_layer = placed.iter().flatten().map(|&(l, _)| l).max().unwrap_or(0);
    let width = (max_pos - min_pos) * DX + 2.0 * MARGIN + 260.0;
    let height = max_layer as f64 * DY + 2.0 * MARGIN;
    let xy = |n: usize| -> Option<(f64, f64)> { placed[n].map(|(l, x)| (MARGIN + 60.0 + (x - min_pos) * DX, MARGIN + l as f64 * DY)) };
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="cfa" id="cfa-{}" xmlns="http://www.w3.org/2000/svg" width="{:.0}" height="{:.0}" viewBox="0 0 {:.0} {:.0}" role="img" aria-label="control-flow automaton of {}">"#,
        index,
        width,
        height,
        width,
        height,
        esc(&f.name)
    );
    svg.push_str(r#"<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="context-stroke"/></marker></defs>"#);
    // Parallel edges between the same nodes are spread apart.
    let mut seen: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for (k, e) in cfa.edges.iter().enumerate() {
        let (a, b) = edges[k];
        let (Some((x1, y1)), Some((x2, y2))) = (xy(a), xy(b)) else { continue };
        let dup = seen.entry((a.min(b), a.max(b))).or_insert(0);
        let spread = *dup as f64 * 18.0;
        *dup += 1;
        let r = f.abs(e.span);
        let label = pretty::edge(p, &e.kind);
        let call = matches!(e.kind, EdgeKind::CallSummary(_));
        let (path, lx, ly) = if back[k] || a == b {
            // Back edges leave and enter on the right, bending outwards.
            let bend = 60.0 + spread + ((y1 - y2).abs() / DY) * 8.0;
            let cx = x1.max(x2) + bend;
            (
                format!("M{:.1},{:.1} C{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}", x1 + R, y1, cx, y1, cx, y2, x2 + R, y2),
                cx - 6.0,
                (y1 + y2) / 2.0,
            )
        } else {
            let (dx, dy) = (x2 - x1, y2 - y1);
            let len = (dx * dx + dy * dy).sqrt().max(1.0);
            let (sx, sy) = (x1 + dx / len * R, y1 + dy / len * R);
            let (ex, ey) = (x2 - dx / len * R, y2 - dy / len * R);
            let (mx, my) = ((sx + ex) / 2.0 + spread, (sy + ey) / 2.0);
            (format!("M{:.1},{:.1} Q{:.1},{:.1} {:.1},{:.1}", sx, sy, mx + spread, my, ex, ey), mx + 4.0, my)
        };
        let _ = write!(
            svg,
            r#"<g class="edge{}" data-line="{}" data-col="{}"{}><path d="{}" marker-end="url(#arrow)"/><text x="{:.1}" y="{:.1}">{}: {}</text><title>line {}: {}</title></g>"#,
            if call { " call" } else { "" },
            r.line,
            r.col,
            match e.kind {
                EdgeKind::Assume { truth, .. } => format!(r#" data-branch="{}""#, truth),
                _ => String::new(),
            },
            path,
            lx,
            ly + 4.0,
            r.line,
            esc(&short(&label, 28)),
            r.line,
            esc(&label)
        );
    }
    for (n, node) in cfa.nodes.iter().enumerate() {
        let Some((x, y)) = xy(n) else { continue };
        if node.inc.is_empty() && node.out.is_empty() && n != cfa.entry.0 as usize {
            continue;
        }
        let mut class = String::from("node");
        if node.loop_head {
            class.push_str(" loop");
        }
        if node.target.is_some() {
            class.push_str(" target");
        }
        if n == cfa.entry.0 as usize {
            class.push_str(" entry");
        }
        let _ = write!(svg, r#"<g class="{}"><circle cx="{:.1}" cy="{:.1}" r="{}"/>"#, class, x, y, R);
        if node.loop_head {
            let _ = write!(svg, r#"<circle cx="{:.1}" cy="{:.1}" r="{}"/>"#, x, y, R - 3.5);
        }
        let _ = write!(svg, r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#, x, y + 4.0, n);
        let tag = if n == cfa.entry.0 as usize {
            Some("entry")
        } else if n == cfa.exit.0 as usize {
            Some("exit")
        } else if node.loop_head {
            Some("loop head")
        } else if node.target.is_some() {
            Some("error")
        } else {
            None
        };
        if let Some(t) = tag {
            let _ = write!(svg, r#"<text class="tag" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#, x - R - 4.0, y + 4.0, t);
        }
        svg.push_str("</g>");
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::layers;

    #[test]
    fn a_loop_is_layered_with_its_back_edge() {
        // 0 -> 1 (head) -> 2 -> 1, 1 -> 3.
        let edges = [(0, 1), (1, 2), (2, 1), (1, 3)];
        let (placed, back) = layers(4, 0, &edges);
        assert_eq!(back, vec![false, false, true, false]);
        let layer = |n: usize| placed[n].unwrap().0;
        assert_eq!((layer(0), layer(1)), (0, 1));
        assert_eq!((layer(2), layer(3)), (2, 2));
        assert_ne!(placed[2].unwrap().1, placed[3].unwrap().1);
    }
}
