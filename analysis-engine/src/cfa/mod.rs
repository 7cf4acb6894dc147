//! Control-flow automata (seed 001 §1.1, CPAchecker's `CFA`): one frozen automaton per function,
//! nodes and edges in arenas with stable ids, edges labelled with the operations of [`crate::ir`].
//!
//! Architecture invariant: the CFA knows nothing of Z3 or of any analysis. A function's `Cfa`
//! stores source lines relative to the function's first line, so that an edit elsewhere in the
//! file leaves it equal (and the server can keep the same `Arc`).

pub mod block;
pub mod build;
pub mod cells;
pub mod check;
pub mod dot;
pub mod loops;
pub mod op;
pub mod pretty;
mod selection;

use std::collections::HashMap;
use std::sync::Arc;

use crate::ir::{Expr, FuncId, LValue, Stmt, VarId, VarInfo};

pub use op::{op_ctx, CallSite, Loc, Op, OpCtx, OpKind};
pub use selection::PropertySet;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EdgeId(pub u32);

/// A source range: `line`/`end_line` relative to the owning function's first line,
/// columns 1-based in bytes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub line: u32,
    pub col: u32,
    pub end_line: u32,
    pub end_col: u32,
}

/// A source range with absolute lines, as reports show it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SrcRange {
    pub file: Arc<str>,
    pub line: u32,
    pub col: u32,
    pub end_line: u32,
    pub end_col: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CfaNode {
    pub out: Vec<EdgeId>,
    pub inc: Vec<EdgeId>,
    /// Target of a back edge in the depth-first order from the entry.
    pub loop_head: bool,
    /// Index into [`Cfa::targets`] when reaching this node violates a property.
    pub target: Option<u32>,
    /// `abort()`/`exit()`: the path ends here without error.
    pub terminal: bool,
    /// Reverse post-order number (entry is 0); `u32::MAX` for nodes the entry cannot reach.
    pub rpo: u32,
    /// Where the node is in the source (start of the statement it precedes).
    pub span: Span,
}

/// A call in the caller's CFA: the call-to-return summary edge. The analysis follows it into
/// the callee (function call edge) and back (function return edge).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Call {
    pub callee: FuncId,
    /// One argument per flattened parameter of the callee, converted to its type.
    pub args: Vec<Expr>,
    /// Where the flattened return values go.
    pub ret: Vec<LValue>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    Blank,
    /// `[cond]` when `truth`, `[!cond]` otherwise; `cond` is non-zero for true.
    Assume {
        cond: Expr,
        truth: bool,
    },
    Statement(Stmt),
    Declaration(Stmt),
    /// `return e;`: assigns the function's return variables and leads to the exit node.
    Return(Vec<Expr>),
    CallSummary(Call),
}

impl EdgeKind {
    pub fn callee(&self) -> Option<FuncId> {
        match self {
            EdgeKind::CallSummary(c) => Some(c.callee),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CfaEdge {
    pub src: NodeId,
    pub dst: NodeId,
    pub kind: EdgeKind,
    pub span: Span,
}

/// What a target node reports.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TargetKind {
    /// `assert(e)` from `<assert.h>` (a call to `__assert_fail`).
    Assert,
    /// `reach_error()` / `__VERIFIER_error()`.
    ReachError,
    /// A label `ERROR:`.
    ErrorLabel,
    /// An array subscript whose index may lie outside the array (undefined behaviour: the
    /// access may read or overwrite other objects, so no proof may assume it does not happen).
    OutOfBounds,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    pub kind: TargetKind,
    pub span: Span,
    /// The asserted condition as written, when known.
    pub condition: Option<String>,
}

/// The automaton of one function.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Cfa {
    pub name: String,
    pub func: FuncId,
    pub params: Vec<VarId>,
    /// Flattened return-value variables (empty for `void`).
    pub ret: Vec<VarId>,
    pub locals: Vec<VarInfo>,
    pub nodes: Vec<CfaNode>,
    pub edges: Vec<CfaEdge>,
    pub entry: NodeId,
    pub exit: NodeId,
    pub targets: Vec<Target>,
    /// A function like `__VERIFIER_assert` that only checks its arguments and reaches an
    /// error: its properties are reported at each call site.
    pub assert_helper: bool,
}

impl Cfa {
    pub fn node(&self, n: NodeId) -> &CfaNode {
        &self.nodes[n.0 as usize]
    }

    pub fn edge(&self, e: EdgeId) -> &CfaEdge {
        &self.edges[e.0 as usize]
    }

    pub fn out_edges(&self, n: NodeId) -> impl Iterator<Item = (EdgeId, &CfaEdge)> + '_ {
        self.node(n).out.iter().map(move |&e| (e, self.edge(e)))
    }

    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> {
        (0..self.nodes.len() as u32).map(NodeId)
    }

    pub fn loop_heads(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.node_ids().filter(|&n| self.node(n).loop_head)
    }

    /// Callees named by call edges.
    pub fn callees(&self) -> Vec<FuncId> {
        let mut out: Vec<FuncId> = self
            .edges
            .iter()
            .filter_map(|e| match &e.kind {
                EdgeKind::CallSummary(c) => Some(c.callee),
                _ => None,
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// A function of the program: its automaton plus where it sits in the source.
#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub cfa: Arc<Cfa>,
    pub file: Arc<str>,
    /// Absolute line the CFA's relative lines count from.
    pub first_line: u32,
}

impl Function {
    pub fn abs(&self, span: Span) -> SrcRange {
        SrcRange {
            file: self.file.clone(),
            line: self.first_line + span.line,
            col: span.col,
            end_line: self.first_line + span.end_line,
            end_col: span.end_col,
        }
    }
}

/// How wide C's types are.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DataModel {
    /// 64-bit `long` and pointers (x86-64 Linux).
    Lp64,
    /// 32-bit `long` and pointers (SV-COMP's `data_model: ILP32`).
    Ilp32,
}

impl DataModel {
    pub fn long_bits(self) -> u8 {
        match self {
            DataModel::Lp64 => 64,
            DataModel::Ilp32 => 32,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DataModel::Lp64 => "LP64",
            DataModel::Ilp32 => "ILP32",
        }
    }
}

/// A note the builder records about something it over-approximated or could not model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildNote {
    pub pos: SrcRange,
    pub message: String,
}

/// A whole translation unit as automata.
#[derive(Clone, Debug)]
pub struct Program {
    pub file: Arc<str>,
    /// The user's source text (for excerpts in traces); empty if unknown.
    pub source: Arc<str>,
    pub data_model: DataModel,
    pub globals: Vec<VarInfo>,
    /// Every function with a body, plus the synthetic start function last.
    pub functions: Vec<Function>,
    pub by_name: HashMap<String, FuncId>,
    /// The synthetic function that initialises globals and calls the entry.
    pub start: FuncId,
    /// The entry function the start function calls (`main`), if there is one.
    pub entry: Option<FuncId>,
    /// The functions the start function may call (main, or every function nobody calls), with
    /// the start function's edge that chooses each.
    pub roots: Vec<(FuncId, EdgeId)>,
    /// Variables whose address escapes: a write through a pointer may change them.
    pub escaped: Vec<VarId>,
    /// Functions the program calls but does not define.
    pub externals: Vec<String>,
    pub notes: Vec<BuildNote>,
    /// Which kinds of targets are properties (what the program was built for).
    pub properties: PropertySet,
    /// With the memory model (`build/memory.rs`): the names of the static objects (object id
    /// `k` is `objects[k - 1]`), to show pointers as `&x + 4`; `None` without it.
    pub objects: Option<Vec<String>>,
    /// The first construct whose effects are not where it is (a thread, a signal handler,
    /// `setjmp`/`longjmp`), if the program has one: the analyses that go past an unsupported
    /// construct as a havoc would miss them, so no property is proved (`report::build`).
    pub asynchronous: Option<BuildNote>,
}

/// Object ids from here on are allocations (the memory model, `build/memory.rs`).
pub const HEAP_BASE: i128 = 1 << 30;

impl Program {
    /// A pointer value as a person reads it, with the memory model: `NULL`, `&x`, `&x + 8`,
    /// `&"abc"`, `&malloc#2 + 4` (the second allocation); `None` without the model.
    pub fn show_pointer(&self, v: i128) -> Option<String> {
        let names = self.objects.as_ref()?;
        if v == 0 {
            return Some("NULL".into());
        }
        let (id, off) = (v >> 32, v & 0xffff_ffff);
        let base = if id >= HEAP_BASE {
            format!("&malloc#{}", id - HEAP_BASE + 1)
        } else {
            match names.get((id as usize).wrapping_sub(1)) {
                Some(n) => format!("&{}", n),
                None => return Some(format!("{v:#x}")),
            }
        };
        Some(if off == 0 { base } else { format!("{} + {}", base, off) })
    }
}

impl Program {
    pub fn func(&self, f: FuncId) -> &Function {
        &self.functions[f.0 as usize]
    }

    pub fn cfa(&self, f: FuncId) -> &Cfa {
        &self.functions[f.0 as usize].cfa
    }

    pub fn var(&self, v: VarId) -> &VarInfo {
        match v.func() {
            None => &self.globals[v.index()],
            Some(f) => &self.cfa(f).locals[v.index()],
        }
    }

    /// The variable's name as a user reads it (locals of other functions qualified).
    pub fn var_name(&self, v: VarId) -> &str {
        &self.var(v).name
    }

    pub fn func_ids(&self) -> impl Iterator<Item = FuncId> {
        (0..self.functions.len() as u32).map(FuncId)
    }

    /// Functions reachable from `f` through calls, `f` included.
    pub fn reachable_functions(&self, f: FuncId) -> Vec<FuncId> {
        let mut seen = vec![false; self.functions.len()];
        let mut stack = vec![f];
        let mut out = Vec::new();
        while let Some(g) = stack.pop() {
            if std::mem::replace(&mut seen[g.0 as usize], true) {
                continue;
            }
            out.push(g);
            stack.extend(self.cfa(g).callees());
        }
        out.sort();
        out
    }

    /// The program restricted to one of its roots: the start function's edges to the other
    /// roots become infeasible. `None` if `root` is not a root.
    pub fn for_root(&self, root: FuncId) -> Option<Program> {
        if !self.roots.iter().any(|(r, _)| *r == root) {
            return None;
        }
        let mut p = self.clone();
        let mut start = (*p.cfa(p.start)).clone();
        for &(r, e) in &self.roots {
            if r != root {
                // Unlink the edge (ids stay stable) and make it infeasible should anything follow it.
                let (src, dst) = (start.edges[e.0 as usize].src, start.edges[e.0 as usize].dst);
                start.nodes[src.0 as usize].out.retain(|&x| x != e);
                start.nodes[dst.0 as usize].inc.retain(|&x| x != e);
                start.edges[e.0 as usize].kind = EdgeKind::Assume { cond: Expr::Const(0, crate::ir::IntTy::INT), truth: true };
            }
        }
        for n in start.nodes.iter_mut() {
            n.rpo = u32::MAX;
        }
        let idx = p.start.0 as usize;
        p.functions[idx].cfa = Arc::new(loops::finish_cfa(start));
        Some(p)
    }

    /// The program restricted to the root named `entry` (see [`Program::for_root`]); the
    /// whole program without an entry or when `entry` names no root.
    pub fn for_entry(&self, entry: Option<&str>) -> std::borrow::Cow<'_, Program> {
        match entry.and_then(|name| self.by_name.get(name)).and_then(|&f| self.for_root(f)) {
            Some(p) => std::borrow::Cow::Owned(p),
            None => std::borrow::Cow::Borrowed(self),
        }
    }

    /// The strongly connected components of the call graph, callees first: every function a
    /// component calls outside itself lies in an earlier component. Linear in the size of the
    /// call graph (Tarjan's algorithm, iterative: a long call chain must not overflow the
    /// stack); deterministic (functions and callees in increasing order).
    pub fn call_graph_components(&self) -> Vec<Vec<FuncId>> {
        let n = self.functions.len();
        let callees: Vec<Vec<FuncId>> = self.func_ids().map(|f| self.cfa(f).callees()).collect();
        const UNVISITED: u32 = u32::MAX;
        let mut index = vec![UNVISITED; n];
        let mut low = vec![0u32; n];
        let mut on_stack = vec![false; n];
        let mut stack: Vec<FuncId> = Vec::new();
        let mut components = Vec::new();
        let mut next_index = 0u32;
        // The depth-first path: a function and how many of its callees it has visited.
        let mut path: Vec<(usize, usize)> = Vec::new();
        macro_rules! enter {
            ($f:expr) => {{
                let f: usize = $f;
                index[f] = next_index;
                low[f] = next_index;
                next_index += 1;
                stack.push(FuncId(f as u32));
                on_stack[f] = true;
                path.push((f, 0));
            }};
        }
        for root in 0..n {
            if index[root] != UNVISITED {
                continue;
            }
            enter!(root);
            while let Some(&mut (f, ref mut done)) = path.last_mut() {
                if let Some(&g) = callees[f].get(*done) {
                    *done += 1;
                    let g = g.0 as usize;
                    if index[g] == UNVISITED {
                        enter!(g);
                    } else if on_stack[g] {
                        low[f] = low[f].min(index[g]);
                    }
                    continue;
                }
                path.pop();
                if let Some(&(caller, _)) = path.last() {
                    low[caller] = low[caller].min(low[f]);
                }
                if low[f] == index[f] {
                    let first = stack.iter().rposition(|g| g.0 as usize == f).expect("f is on the stack");
                    let mut members = stack.split_off(first);
                    for g in &members {
                        on_stack[g.0 as usize] = false;
                    }
                    members.sort();
                    components.push(members);
                }
            }
        }
        components
    }

    /// Functions that can call themselves, directly or through others, in increasing order:
    /// those that call themselves and those in a cycle of the call graph (a component of
    /// [`Program::call_graph_components`] with more than one function).
    pub fn recursive_functions(&self) -> Vec<FuncId> {
        let mut out: Vec<FuncId> = Vec::new();
        for c in self.call_graph_components() {
            if c.len() > 1 {
                out.extend(c);
            } else if self.cfa(c[0]).callees().contains(&c[0]) {
                out.push(c[0]);
            }
        }
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::frontend::SourceInput;

    fn recursive_names(src: &str) -> Vec<String> {
        let input = SourceInput { path: "rec.i".into(), text: src.to_string() };
        let p = crate::load(&input, super::DataModel::Lp64).expect("loads");
        p.recursive_functions().into_iter().map(|f| p.func(f).name.clone()).collect()
    }

    #[test]
    fn recursive_functions_are_self_calls_and_call_cycles() {
        // `self_call` calls itself; `ping` and `pong` call each other; `chain` only calls into
        // the cycle and `leaf` calls nothing: neither is recursive.
        let src = "int leaf(int x) { return x; }\n\
                   int self_call(int x) { return x > 0 ? self_call(x - 1) : leaf(x); }\n\
                   int pong(int x);\n\
                   int ping(int x) { return x > 0 ? pong(x - 1) : 0; }\n\
                   int pong(int x) { return ping(x) + leaf(x); }\n\
                   int chain(int x) { return ping(x) + self_call(x); }\n\
                   int main(void) { return chain(3); }\n";
        assert_eq!(recursive_names(src), vec!["self_call", "ping", "pong"]);
    }

    #[test]
    fn a_long_call_chain_is_not_recursive() {
        // 20,000 functions, each calling the previous one: no cycle, and deep enough that a
        // recursive depth-first search would need a very large stack.
        let mut src = String::from("int f0(int x) { return x; }\n");
        for k in 1..20_000 {
            src.push_str(&format!("int f{k}(int x) {{ return f{}(x) + 1; }}\n", k - 1));
        }
        src.push_str("int main(void) { return f19999(0); }\n");
        assert!(recursive_names(&src).is_empty());
    }
}
