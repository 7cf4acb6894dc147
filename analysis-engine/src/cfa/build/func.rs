//! Lowers one function body (statements and control flow) into a CFA: `if`, loops, `switch`
//! with fallthrough and `default`, `goto`/labels, `break`/`continue`, `return`, and the
//! short-circuit operators in conditions as branches.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use lang_c::ast::{
    BinaryOperator, BlockItem, Declaration, Expression, ForInitializer, FunctionDefinition, Label, Statement, UnaryOperator,
};
use lang_c::span::{Node, Span as LSpan};

use super::expr::Place;
use super::types::{CType, FuncSig, Obj};
use super::{Alloc, BResult, BuildError, ProgCx, Scope, Store, Sym};
use crate::cfa::{CfaEdge, CfaNode, EdgeId, EdgeKind, Function, NodeId, Span, Target, TargetKind};
use crate::ir::{Expr, FuncId, Imprecision, InputSource, IntTy, LValue, Stmt, VarId, VarInfo, VarKind};

/// Deepest nesting of statements and expressions the builder follows.
pub const MAX_DEPTH: u32 = 400;

struct BreakCtx {
    brk: NodeId,
    cont: Option<NodeId>,
}

struct SwitchCtx {
    cases: Vec<(i128, i128, NodeId, LSpan)>,
    default: Option<NodeId>,
}

/// The automaton under construction, separate from the builder so that the start function's
/// state can be swapped in while a function body is being lowered (static initialisers).
pub(super) struct FnState {
    pub func: FuncId,
    pub name: String,
    pub first_line: u32,
    pub locals: Vec<VarInfo>,
    pub nodes: Vec<CfaNode>,
    pub edges: Vec<CfaEdge>,
    pub entry: NodeId,
    pub exit: NodeId,
    pub cur: NodeId,
    pub targets: Vec<Target>,
    pub params: Vec<VarId>,
    pub ret_vars: Vec<VarId>,
    pub ret_ty: CType,
    pub ret_obj: Option<Rc<Obj>>,
    /// The copies of by-reference parameters' pointees: copied back to the caller at the
    /// return, after the return values.
    pub byref_out: Vec<VarId>,
    /// In the start function: the edge out of the fork that leads to each entry.
    pub root_edges: Vec<(FuncId, EdgeId)>,
    pub labels: HashMap<String, NodeId>,
    pub labels_defined: HashSet<String>,
    pub gotos: Vec<(String, LSpan)>,
    breaks: Vec<BreakCtx>,
    switches: Vec<SwitchCtx>,
    tmp_count: u32,
    /// While positive, lowering only computes types: no edges, targets or escapes.
    pub dry: u32,
    /// While positive, element accesses are not bounds-checked: the same access of the same
    /// place was just checked (the value of `a[i] = v`, the write of `a[i] += v`).
    pub checked: u32,
    /// Names the body may change after their declaration ([`super::blocks`]); `None` before
    /// the body is seen or when it is too deep to look at.
    pub modified: Option<HashSet<String>>,
    /// Local pointers that hold the start of an allocated block (or null) wherever they are in
    /// scope, with the block's length in elements.
    pub blocks: HashMap<VarId, u64>,
    /// Variable-length arrays (not in memory) with the length of their first dimension: its
    /// size expression when that reads only locals the body never changes, otherwise a
    /// synthetic local set where the declaration is reached.
    pub vla_lens: HashMap<VarId, Expr>,
    /// Set while the operand of `&` is lowered, taken by the outermost place: `&p[n]` (one past
    /// the end) is no access, so it is not bounds-checked (C11 6.5.3.2p3).
    pub address_of: bool,
    pub depth: u32,
}

impl FnState {
    pub fn new(func: FuncId, name: String, first_line: u32, ret_ty: CType) -> FnState {
        let mut st = FnState {
            func,
            name,
            first_line,
            locals: Vec::new(),
            nodes: Vec::new(),
            edges: Vec::new(),
            entry: NodeId(0),
            exit: NodeId(1),
            cur: NodeId(0),
            targets: Vec::new(),
            params: Vec::new(),
            ret_vars: Vec::new(),
            byref_out: Vec::new(),
            ret_ty,
            ret_obj: None,
            root_edges: Vec::new(),
            labels: HashMap::new(),
            labels_defined: HashSet::new(),
            gotos: Vec::new(),
            breaks: Vec::new(),
            switches: Vec::new(),
            tmp_count: 0,
            dry: 0,
            checked: 0,
            modified: None,
            blocks: HashMap::new(),
            vla_lens: HashMap::new(),
            address_of: false,
            depth: 0,
        };
        st.entry = st.add_node();
        st.exit = st.add_node();
        st.cur = st.entry;
        st
    }

    fn add_node(&mut self) -> NodeId {
        self.nodes.push(CfaNode {
            out: Vec::new(),
            inc: Vec::new(),
            loop_head: false,
            target: None,
            terminal: false,
            rpo: u32::MAX,
            span: Span::default(),
        });
        NodeId(self.nodes.len() as u32 - 1)
    }
}

pub(super) struct FnBuilder<'a, 'p> {
    pub cx: &'a mut ProgCx<'p>,
    pub st: &'a mut FnState,
}

impl<'a, 'p> FnBuilder<'a, 'p> {
    // ----- graph primitives -------------------------------------------------------------

    pub fn new_node(&mut self) -> NodeId {
        self.st.add_node()
    }

    /// Adds an edge (nothing in dry mode).
    pub fn edge(&mut self, src: NodeId, dst: NodeId, kind: EdgeKind, span: Span) {
        if self.st.dry > 0 {
            return;
        }
        let id = EdgeId(self.st.edges.len() as u32);
        self.st.edges.push(CfaEdge { src, dst, kind, span });
        self.st.nodes[src.0 as usize].out.push(id);
        self.st.nodes[dst.0 as usize].inc.push(id);
    }

    /// Appends an edge at the current node and moves to its new target.
    pub fn emit(&mut self, kind: EdgeKind, span: Span) {
        let n = self.new_node();
        let cur = self.st.cur;
        self.edge(cur, n, kind, span);
        self.st.cur = n;
    }

    pub fn stmt_edge(&mut self, s: Stmt, span: Span) {
        self.emit(EdgeKind::Statement(s), span);
    }

    /// Leaves a block by its end: the `cleanup` calls of its variables, unsupported, happen
    /// here (the analyses that go past an unsupported construct havoc what it may write, so
    /// the havoc must be where the call is).
    pub fn pop_scope(&mut self, span: LSpan) {
        let scope = self.cx.scopes.pop().expect("block scope");
        let sp = self.span(span);
        for what in scope.cleanups.into_iter().rev() {
            self.stmt_edge(Stmt::Unsupported(what), sp);
        }
    }

    /// Before a jump (`goto`, `break`, `continue`, `return`): the `cleanup` calls of every
    /// enclosing block's variables, as if the jump left them all (a havoc more than a jump
    /// within the block does is still an over-approximation).
    fn leave_scopes(&mut self, span: LSpan) {
        let whats: Vec<String> = self.cx.scopes.iter().rev().flat_map(|s| s.cleanups.iter().rev().cloned()).collect();
        let sp = self.span(span);
        for what in whats {
            self.stmt_edge(Stmt::Unsupported(what), sp);
        }
    }

    /// Continues at a fresh node that nothing reaches (after `return`, `break`, …).
    pub fn dead(&mut self) {
        self.st.cur = self.new_node();
    }

    pub fn span(&self, s: LSpan) -> Span {
        if s.is_none() {
            return Span::default();
        }
        let lm = &self.cx.parsed.linemap;
        let a = lm.pos(s.start);
        let b = lm.pos(s.end);
        let rel = |l: u32| l.saturating_sub(self.st.first_line);
        let (el, ec) = if b.file == a.file && (b.line, b.col) >= (a.line, a.col) { (b.line, b.col) } else { (a.line, a.col) };
        Span { line: rel(a.line), col: a.col, end_line: rel(el), end_col: ec }
    }

    pub fn err(&self, s: LSpan, msg: impl Into<String>) -> BuildError {
        self.cx.err(s, msg.into())
    }

    pub fn note(&mut self, s: LSpan, msg: impl Into<String>) {
        if self.st.dry == 0 {
            self.cx.note(s, msg);
        }
    }

    pub fn enter(&mut self, s: LSpan) -> BResult<()> {
        self.st.depth += 1;
        if self.st.depth > MAX_DEPTH {
            return Err(self.err(s, format!("expression or statement nested more than {} levels deep", MAX_DEPTH)));
        }
        Ok(())
    }

    pub fn leave(&mut self) {
        self.st.depth -= 1;
    }

    /// A fresh synthetic local of an integer type.
    pub fn temp(&mut self, ty: IntTy, pointer: bool) -> BResult<VarId> {
        self.st.tmp_count += 1;
        if self.st.locals.len() >= VarId::LIMIT {
            return Err(self.err(LSpan::none(), "too many local variables in one function"));
        }
        self.st.locals.push(VarInfo { name: format!("__tmp{}", self.st.tmp_count), kind: VarKind::Int(ty), synthetic: true, pointer });
        Ok(VarId::local(self.st.func, self.st.locals.len() - 1))
    }

    pub fn alloc(&mut self, name: &str, ty: &CType, store: Store, synthetic: bool) -> BResult<Obj> {
        let func = self.st.func;
        self.cx.alloc_obj(&mut self.st.locals, Alloc { func, store, synthetic }, name, ty, &[])
    }

    /// Marks a target node reached from the current node and continues at a dead node.
    pub fn target(&mut self, kind: TargetKind, span: LSpan, condition: Option<String>) {
        if !self.cx.props.counts(kind) {
            // Not a property (`--property`): a failing `assert` or `reach_error()` still aborts.
            return self.terminate(span);
        }
        let t = self.new_node();
        if self.st.dry == 0 {
            let sp = self.span(span);
            self.st.targets.push(Target { kind, span: sp, condition });
            self.st.nodes[t.0 as usize].target = Some(self.st.targets.len() as u32 - 1);
        }
        let cur = self.st.cur;
        let sp = self.span(span);
        self.edge(cur, t, EdgeKind::Blank, sp);
        self.dead();
    }

    /// Ends the path without error (`abort()`, `exit()`).
    pub fn terminate(&mut self, span: LSpan) {
        let t = self.new_node();
        self.st.nodes[t.0 as usize].terminal = true;
        let cur = self.st.cur;
        let sp = self.span(span);
        self.edge(cur, t, EdgeKind::Blank, sp);
        self.dead();
    }

    pub fn terminal_node(&mut self) -> NodeId {
        let t = self.new_node();
        self.st.nodes[t.0 as usize].terminal = true;
        t
    }

    // ----- function bodies ----------------------------------------------------------------

    pub fn body(&mut self, def: &FunctionDefinition, sig: &FuncSig, names: Vec<Option<String>>) -> BResult<()> {
        self.cx.scopes.push(Scope::default());
        let r = self.body_inner(def, sig, names);
        self.cx.scopes.pop();
        r
    }

    fn body_inner(&mut self, def: &FunctionDefinition, sig: &FuncSig, names: Vec<Option<String>>) -> BResult<()> {
        self.st.modified = super::blocks::modified_names(def);
        // K&R definitions declare their parameters' types separately.
        let mut kr_types: HashMap<String, CType> = HashMap::new();
        for d in &def.declarations {
            let base = self.cx.decl_base_type(&d.node.specifiers, d.span)?;
            for id in &d.node.declarators {
                let (n, t, _) = self.cx.declarator(base.clone(), &id.node.declarator.node)?;
                if let Some(n) = n {
                    kr_types.insert(n, t.decay());
                }
            }
        }
        for (i, name) in names.iter().enumerate() {
            let mut ty = sig.params.get(i).cloned().unwrap_or(CType::Int(IntTy::INT));
            let pname = name.clone().unwrap_or_else(|| format!("__param{}", i));
            if let Some(t) = kr_types.get(&pname) {
                ty = t.clone();
            }
            let by_ref = self.cx.byref.contains(&(self.st.name.clone(), i));
            if let Some(pointee) = self.cx.types.by_reference_pointee(&ty).filter(|_| by_ref) {
                let obj = self.alloc(&pname, &pointee, Store::Local, false)?;
                let mut vars = Vec::new();
                obj.vars(&mut vars);
                let (dot, arrow) = (format!("{}.", pname), format!("{}->", pname));
                for &v in &vars {
                    let info = &mut self.st.locals[v.index()];
                    info.name = info.name.replacen(&dot, &arrow, 1);
                }
                self.st.params.extend(vars.iter().copied());
                self.st.byref_out.extend(vars);
                self.cx.declare(pname, Sym::Ref(Rc::new(obj), ty));
                continue;
            }
            let obj = self.alloc(&pname, &ty, Store::Local, name.is_none())?;
            let mut vars = Vec::new();
            obj.vars(&mut vars);
            self.st.params.extend(vars);
            let key = (def.statement.span.start, pname.clone());
            let obj = Rc::new(obj);
            self.record_declaration(&obj, key.clone());
            if self.in_memory(&key) {
                // Its address is taken: the argument is copied into an object in memory.
                let arg = Place::Obj { obj, idx: Vec::new(), ty: ty.clone() };
                let span = def.statement.span;
                let value = self.read(&arg, span);
                let addr = self.memory_object(&pname, &ty, span);
                self.automatic_in_memory();
                let at = Place::At { addr: addr.clone(), ty: ty.clone(), opaque: false };
                self.st.checked += 1;
                let r = self.write(&at, value, span);
                self.st.checked -= 1;
                r?;
                self.cx.declare(pname, Sym::At(addr, ty));
                continue;
            }
            self.cx.declare(pname, Sym::Var(obj, ty));
        }
        let ret_ty = sig.ret.clone();
        if ret_ty != CType::Void {
            let obj = self.alloc("__retval", &ret_ty, Store::Local, true)?;
            let mut vars = Vec::new();
            obj.vars(&mut vars);
            self.st.ret_vars = vars;
            self.st.ret_obj = Some(Rc::new(obj));
        }
        // `__func__` and friends are strings; nothing to model.
        self.stmt(&def.statement)?;
        let end = LSpan::span(def.statement.span.end.saturating_sub(1), def.statement.span.end);
        if self.is_main() {
            self.run_atexit(end)?;
        }
        let cur = self.st.cur;
        let exit = self.st.exit;
        let sp = self.span(end);
        self.edge(cur, exit, EdgeKind::Blank, sp);
        Ok(())
    }

    /// Whether this is the body of the program's `main` (not the start function).
    fn is_main(&self) -> bool {
        self.st.name == "main" && self.cx.func_ids.get("main") == Some(&self.st.func)
    }

    /// The start function's tail: call the entry function(s) with arbitrary arguments.
    pub fn call_roots(&mut self, roots: &[FuncId], functions: &[Function]) -> BResult<()> {
        let join = self.new_node();
        let fork = self.st.cur;
        for &r in roots {
            // One edge per root out of the fork, so that a run can be restricted to one entry.
            let branch = self.new_node();
            let eid = EdgeId(self.st.edges.len() as u32);
            self.edge(fork, branch, EdgeKind::Blank, Span::default());
            self.st.root_edges.push((r, eid));
            self.st.cur = branch;
            let cfa = &functions[r.0 as usize].cfa;
            // Arguments of an entry are inputs, shown at the function's first line.
            let at = Span {
                line: functions[r.0 as usize].first_line.saturating_sub(1),
                col: 1,
                end_line: functions[r.0 as usize].first_line.saturating_sub(1),
                end_col: 1,
            };
            let fname = &functions[r.0 as usize].name;
            if fname == "main" {
                // `__attribute__((constructor))` functions run before `main`.
                let ctors: Vec<FuncId> = self.cx.indirect.constructors.iter().filter_map(|n| self.cx.func_ids.get(n).copied()).collect();
                for f in ctors {
                    self.emit(EdgeKind::CallSummary(crate::cfa::Call { callee: f, args: Vec::new(), ret: Vec::new() }), at);
                }
            }
            let mut args = self.main_command_line(fname, cfa, at)?;
            // With the memory model, a pointer argument of an entry points to an object of its
            // own: a buffer of an arbitrary number of elements of its pointee type.
            let pointees: Option<Vec<CType>> = match self.cx.lookup(fname) {
                Some(Sym::Func(_, sig)) if self.memory_on() && sig.params.len() == cfa.params.len() => Some(sig.params.clone()),
                _ => None,
            };
            for (k, &p) in cfa.params.iter().enumerate().skip(args.len()) {
                let info = &cfa.locals[p.index()];
                if let Some(CType::Ptr(pointee)) = pointees.as_ref().and_then(|ps| ps.get(k)) {
                    if !matches!(**pointee, CType::Func(_)) {
                        let what = format!("number of elements `{}` of {} points to", info.name, cfa.name);
                        args.push(self.entry_buffer(pointee, what, at)?);
                        continue;
                    }
                }
                match &info.kind {
                    VarKind::Int(t) if !info.pointer => {
                        let tmp = self.temp(*t, false)?;
                        self.st.locals[tmp.index()].name = info.name.clone();
                        self.st.locals[tmp.index()].synthetic = false;
                        self.stmt_edge(
                            Stmt::Input {
                                lhs: LValue::Var(tmp),
                                source: InputSource::Call(format!("argument `{}` of {}", info.name, cfa.name)),
                            },
                            at,
                        );
                        args.push(Expr::Var(tmp, *t));
                    }
                    k => {
                        let t = match k {
                            VarKind::Int(t) => *t,
                            VarKind::Array { elem, .. } => *elem,
                        };
                        args.push(Expr::Unknown(t, crate::ir::Imprecision::Address));
                    }
                }
            }
            self.emit(EdgeKind::CallSummary(crate::cfa::Call { callee: r, args, ret: Vec::new() }), Span::default());
            let cur = self.st.cur;
            self.edge(cur, join, EdgeKind::Blank, Span::default());
        }
        if roots.is_empty() {
            self.edge(fork, join, EdgeKind::Blank, Span::default());
        }
        let exit = self.st.exit;
        self.edge(join, exit, EdgeKind::Blank, Span::default());
        Ok(())
    }

    /// `main`'s `argc` and `argv` from the command line model (`libc/args.c`), when `main`
    /// takes them, uses one of them and the model is linked: the results of calls of
    /// `__cpals_argc()` and `__cpals_argv()`. Empty otherwise (a `main` that never looks at its
    /// command line gets arbitrary values it never reads, and its proofs need no bound on the
    /// command line).
    fn main_command_line(&mut self, fname: &str, cfa: &crate::cfa::Cfa, at: Span) -> BResult<Vec<Expr>> {
        use crate::frontend::models::{ARGC_MODEL, ARGV_MODEL};
        let models = (self.cx.func_ids.get(ARGC_MODEL).copied(), self.cx.func_ids.get(ARGV_MODEL).copied());
        let (Some(fc), Some(fv)) = models else { return Ok(Vec::new()) };
        if fname != "main" || cfa.params.len() < 2 {
            return Ok(Vec::new());
        }
        let mut used = Vec::new();
        for e in &cfa.edges {
            crate::cfa::check::edge_vars(&e.kind, &mut used);
        }
        if !used.iter().any(|v| cfa.params[..2].contains(v)) {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for (k, callee) in [(0, fc), (1, fv)] {
            let info = &cfa.locals[cfa.params[k].index()];
            let VarKind::Int(t) = info.kind else { return Ok(Vec::new()) };
            if info.pointer != (k == 1) {
                return Ok(Vec::new());
            }
            let tmp = self.temp(t, info.pointer)?;
            self.emit(EdgeKind::CallSummary(crate::cfa::Call { callee, args: Vec::new(), ret: vec![LValue::Var(tmp)] }), at);
            out.push(Expr::Var(tmp, t));
        }
        self.note(LSpan::none(), crate::frontend::models::args_note());
        Ok(out)
    }

    // ----- statements -------------------------------------------------------------------

    pub fn stmt(&mut self, s: &Node<Statement>) -> BResult<()> {
        self.enter(s.span)?;
        let r = self.stmt_inner(s);
        self.leave();
        r
    }

    fn label_node(&mut self, name: &str) -> NodeId {
        if let Some(&n) = self.st.labels.get(name) {
            return n;
        }
        let n = self.new_node();
        self.st.labels.insert(name.to_string(), n);
        n
    }

    fn stmt_inner(&mut self, s: &Node<Statement>) -> BResult<()> {
        let span = s.span;
        match &s.node {
            Statement::Labeled(l) => {
                match &l.node.label.node {
                    Label::Identifier(id) => {
                        let name = id.node.name.clone();
                        if !self.st.labels_defined.insert(name.clone()) {
                            return Err(self.err(id.span, format!("duplicate label `{}`", name)));
                        }
                        let n = self.label_node(&name);
                        let cur = self.st.cur;
                        let sp = self.span(id.span);
                        self.edge(cur, n, EdgeKind::Blank, sp);
                        self.st.cur = n;
                        // With every kind of property, `ERROR: reach_error();` is one property (the
                        // call's); with labels alone, the label is the property.
                        let props = self.cx.props;
                        let call_counts = props.assert && props.reach_error;
                        if name == "ERROR" && props.error_label && (!call_counts || !starts_with_target_call(&l.node.statement.node)) {
                            let t = self.new_node();
                            self.st.targets.push(Target { kind: TargetKind::ErrorLabel, span: sp, condition: None });
                            self.st.nodes[t.0 as usize].target = Some(self.st.targets.len() as u32 - 1);
                            // The label is reached when control passes it; execution goes on after it.
                            self.edge(n, t, EdgeKind::Blank, sp);
                            let after = self.new_node();
                            self.edge(t, after, EdgeKind::Blank, sp);
                            self.st.cur = after;
                        }
                    }
                    Label::Case(e) => {
                        let v = super::consts::eval(self.cx, &e.node)
                            .ok_or_else(|| self.err(e.span, "case label is not an integer constant"))?;
                        self.case_label(v, v, l.node.label.span)?;
                    }
                    Label::CaseRange(r) => {
                        let lo =
                            super::consts::eval(self.cx, &r.node.low.node).ok_or_else(|| self.err(r.span, "case range is not constant"))?;
                        let hi = super::consts::eval(self.cx, &r.node.high.node)
                            .ok_or_else(|| self.err(r.span, "case range is not constant"))?;
                        self.case_label(lo, hi, l.node.label.span)?;
                    }
                    Label::Default => {
                        let n = self.new_node();
                        let cur = self.st.cur;
                        let sp = self.span(l.node.label.span);
                        self.edge(cur, n, EdgeKind::Blank, sp);
                        self.st.cur = n;
                        match self.st.switches.last_mut() {
                            Some(sw) => sw.default = Some(n),
                            None => return Err(self.err(l.node.label.span, "`default` label outside a switch")),
                        }
                    }
                }
                self.stmt(&l.node.statement)
            }
            Statement::Compound(items) => {
                self.cx.scopes.push(Scope::default());
                let r = self.block_items(items);
                self.pop_scope(span);
                r
            }
            Statement::Expression(Some(e)) => self.effect(e),
            Statement::Expression(None) => Ok(()),
            Statement::If(i) => {
                let (t, f, j) = (self.new_node(), self.new_node(), self.new_node());
                self.cond(&i.node.condition, t, f)?;
                self.st.cur = t;
                self.stmt(&i.node.then_statement)?;
                let cur = self.st.cur;
                self.edge(cur, j, EdgeKind::Blank, Span::default());
                self.st.cur = f;
                if let Some(e) = &i.node.else_statement {
                    self.stmt(e)?;
                }
                let cur = self.st.cur;
                self.edge(cur, j, EdgeKind::Blank, Span::default());
                self.st.cur = j;
                Ok(())
            }
            Statement::While(w) => {
                let head = self.new_node();
                self.st.nodes[head.0 as usize].span = self.span(keyword(span, 5));
                let cur = self.st.cur;
                self.edge(cur, head, EdgeKind::Blank, Span::default());
                let (body, exit) = (self.new_node(), self.new_node());
                self.st.cur = head;
                self.cond(&w.node.expression, body, exit)?;
                self.st.breaks.push(BreakCtx { brk: exit, cont: Some(head) });
                self.st.cur = body;
                let r = self.stmt(&w.node.statement);
                self.st.breaks.pop();
                r?;
                let cur = self.st.cur;
                self.edge(cur, head, EdgeKind::Blank, Span::default());
                self.st.cur = exit;
                Ok(())
            }
            Statement::DoWhile(d) => {
                let body = self.new_node();
                self.st.nodes[body.0 as usize].span = self.span(keyword(span, 2));
                let cur = self.st.cur;
                self.edge(cur, body, EdgeKind::Blank, Span::default());
                let (cont, exit) = (self.new_node(), self.new_node());
                self.st.breaks.push(BreakCtx { brk: exit, cont: Some(cont) });
                self.st.cur = body;
                let r = self.stmt(&d.node.statement);
                self.st.breaks.pop();
                r?;
                let cur = self.st.cur;
                self.edge(cur, cont, EdgeKind::Blank, Span::default());
                self.st.cur = cont;
                self.cond(&d.node.expression, body, exit)?;
                self.st.cur = exit;
                Ok(())
            }
            Statement::For(f) => {
                self.cx.scopes.push(Scope::default());
                let r = self.for_stmt(f, span);
                self.pop_scope(span);
                r
            }
            Statement::Switch(sw) => self.switch_stmt(sw, span),
            Statement::Goto(id) => {
                let n = self.label_node(&id.node.name);
                if self.st.dry == 0 {
                    self.st.gotos.push((id.node.name.clone(), id.span));
                }
                self.leave_scopes(span);
                let cur = self.st.cur;
                let sp = self.span(span);
                self.edge(cur, n, EdgeKind::Blank, sp);
                self.dead();
                Ok(())
            }
            Statement::Continue => {
                let target = self.st.breaks.iter().rev().find_map(|b| b.cont);
                let Some(t) = target else { return Err(self.err(span, "`continue` outside a loop")) };
                self.leave_scopes(span);
                let cur = self.st.cur;
                let sp = self.span(span);
                self.edge(cur, t, EdgeKind::Blank, sp);
                self.dead();
                Ok(())
            }
            Statement::Break => {
                let Some(b) = self.st.breaks.last() else { return Err(self.err(span, "`break` outside a loop or switch")) };
                let t = b.brk;
                self.leave_scopes(span);
                let cur = self.st.cur;
                let sp = self.span(span);
                self.edge(cur, t, EdgeKind::Blank, sp);
                self.dead();
                Ok(())
            }
            Statement::Return(e) => {
                let mut vals = Vec::new();
                if let Some(e) = e {
                    let v = self.value(e)?;
                    let ret_ty = self.st.ret_ty.clone();
                    if ret_ty != CType::Void {
                        vals = self.flatten_value(v, &ret_ty, e.span)?;
                    }
                }
                self.leave_scopes(span);
                let exit = self.st.exit;
                let cur = self.st.cur;
                let sp = self.span(span);
                if self.is_main() {
                    // Returning from `main` is `exit`: the `atexit` handlers run first.
                    self.run_atexit(span)?;
                }
                if vals.len() != self.st.ret_vars.len() {
                    // `return;` in a non-void function: the value is indeterminate.
                    vals = self
                        .st
                        .ret_vars
                        .clone()
                        .iter()
                        .map(|&v| Expr::Unknown(self.st.locals[v.index()].int_ty(), crate::ir::Imprecision::Other))
                        .collect();
                }
                self.edge(cur, exit, EdgeKind::Return(vals), sp);
                self.dead();
                Ok(())
            }
            Statement::Asm(a) => {
                let sp = self.span(span);
                self.note(span, "inline assembly is not modelled");
                self.stmt_edge(Stmt::Unsupported("block of inline assembly".into()), sp);
                if let lang_c::ast::AsmStatement::GnuExtended(g) = &a.node {
                    // Its operands are evaluated, and its outputs are written with values
                    // nothing tells: the statement is unsupported (a pseudo-target for the
                    // analyses that stop there), but the Horn clauses, the transition relation
                    // and the invariants' checks go past it as a havoc, which must then cover
                    // what GCC lets the block write (its outputs; memory it clobbers is
                    // escaped memory, which the unsupported statement havocs).
                    for op in &g.inputs {
                        self.effect(&op.node.variable_name)?;
                    }
                    for op in &g.outputs {
                        let place = self.place(&op.node.variable_name)?;
                        let v = self.unknown_of(place.ty(), Imprecision::Asm);
                        self.write(&place, v, op.node.variable_name.span)?;
                    }
                }
                Ok(())
            }
        }
    }

    fn block_items(&mut self, items: &[Node<BlockItem>]) -> BResult<()> {
        for item in items {
            match &item.node {
                BlockItem::Declaration(d) => self.declaration(d, Store::Local)?,
                BlockItem::Statement(s) => self.stmt(s)?,
                BlockItem::StaticAssert(_) => {}
            }
        }
        Ok(())
    }

    fn for_stmt(&mut self, f: &Node<lang_c::ast::ForStatement>, span: LSpan) -> BResult<()> {
        match &f.node.initializer.node {
            ForInitializer::Empty | ForInitializer::StaticAssert(_) => {}
            ForInitializer::Expression(e) => self.effect(e)?,
            ForInitializer::Declaration(d) => self.declaration(d, Store::Local)?,
        }
        let head = self.new_node();
        self.st.nodes[head.0 as usize].span = self.span(keyword(span, 3));
        let cur = self.st.cur;
        self.edge(cur, head, EdgeKind::Blank, Span::default());
        let (body, exit, step) = (self.new_node(), self.new_node(), self.new_node());
        self.st.cur = head;
        match &f.node.condition {
            Some(c) => self.cond(c, body, exit)?,
            None => self.edge(head, body, EdgeKind::Blank, Span::default()),
        }
        self.st.breaks.push(BreakCtx { brk: exit, cont: Some(step) });
        self.st.cur = body;
        let r = self.stmt(&f.node.statement);
        self.st.breaks.pop();
        r?;
        let cur = self.st.cur;
        self.edge(cur, step, EdgeKind::Blank, Span::default());
        self.st.cur = step;
        if let Some(s) = &f.node.step {
            self.effect(s)?;
        }
        let cur = self.st.cur;
        self.edge(cur, head, EdgeKind::Blank, Span::default());
        self.st.cur = exit;
        Ok(())
    }

    fn case_label(&mut self, lo: i128, hi: i128, span: LSpan) -> BResult<()> {
        let n = self.new_node();
        let cur = self.st.cur;
        let sp = self.span(span);
        self.edge(cur, n, EdgeKind::Blank, sp);
        self.st.cur = n;
        match self.st.switches.last_mut() {
            Some(sw) => {
                sw.cases.push((lo, hi, n, span));
                Ok(())
            }
            None => Err(self.err(span, "`case` label outside a switch")),
        }
    }

    fn switch_stmt(&mut self, sw: &Node<lang_c::ast::SwitchStatement>, span: LSpan) -> BResult<()> {
        let v = self.value(&sw.node.expression)?;
        let ctl = match v {
            super::expr::Value::Int(e, _) => {
                let t = e.ty().promote();
                e.cast(t)
            }
            _ => Expr::Unknown(IntTy::INT, crate::ir::Imprecision::Float),
        };
        let dispatch = self.st.cur;
        let exit = self.new_node();
        self.st.switches.push(SwitchCtx { cases: Vec::new(), default: None });
        self.st.breaks.push(BreakCtx { brk: exit, cont: None });
        self.dead();
        let r = self.stmt(&sw.node.statement);
        self.st.breaks.pop();
        let ctx = self.st.switches.pop().expect("pushed above");
        r?;
        let cur = self.st.cur;
        self.edge(cur, exit, EdgeKind::Blank, Span::default());
        // The dispatch chain: one test per case, in source order, then `default`.
        let t = ctl.ty();
        let mut at = dispatch;
        for (lo, hi, node, lspan) in ctx.cases {
            let sp = self.span(lspan);
            let cond = if lo == hi {
                Expr::Binary(crate::ir::BinOp::Eq, Box::new(ctl.clone()), Box::new(Expr::Const(t.wrap(lo), t)), IntTy::INT)
            } else {
                // lo <= v && v <= hi as one expression: both sides are side-effect free.
                let ge = Expr::Binary(crate::ir::BinOp::Ge, Box::new(ctl.clone()), Box::new(Expr::Const(t.wrap(lo), t)), IntTy::INT);
                let le = Expr::Binary(crate::ir::BinOp::Le, Box::new(ctl.clone()), Box::new(Expr::Const(t.wrap(hi), t)), IntTy::INT);
                Expr::Binary(crate::ir::BinOp::BitAnd, Box::new(ge), Box::new(le), IntTy::INT)
            };
            let next = self.new_node();
            self.edge(at, node, EdgeKind::Assume { cond: cond.clone(), truth: true }, sp);
            self.edge(at, next, EdgeKind::Assume { cond, truth: false }, sp);
            at = next;
        }
        let sp = self.span(keyword(span, 6));
        self.edge(at, ctx.default.unwrap_or(exit), EdgeKind::Blank, sp);
        self.st.cur = exit;
        Ok(())
    }

    // ----- conditions -------------------------------------------------------------------

    /// Branches from the current node to `t` when `e` is non-zero and to `f` otherwise.
    pub fn cond(&mut self, e: &Node<Expression>, t: NodeId, f: NodeId) -> BResult<()> {
        self.enter(e.span)?;
        let r = self.cond_inner(e, t, f);
        self.leave();
        r
    }

    fn cond_inner(&mut self, e: &Node<Expression>, t: NodeId, f: NodeId) -> BResult<()> {
        match &e.node {
            Expression::UnaryOperator(u) if u.node.operator.node == UnaryOperator::Negate => {
                return self.cond(&u.node.operand, f, t);
            }
            Expression::BinaryOperator(b) if b.node.operator.node == BinaryOperator::LogicalAnd => {
                let m = self.new_node();
                self.cond(&b.node.lhs, m, f)?;
                self.st.cur = m;
                return self.cond(&b.node.rhs, t, f);
            }
            Expression::BinaryOperator(b) if b.node.operator.node == BinaryOperator::LogicalOr => {
                let m = self.new_node();
                self.cond(&b.node.lhs, t, m)?;
                self.st.cur = m;
                return self.cond(&b.node.rhs, t, f);
            }
            // gcc's `x ?: y` as a condition is `x || y`.
            Expression::Conditional(c) if super::expr::is_elvis(c) => {
                let m = self.new_node();
                self.cond(&c.node.condition, t, m)?;
                self.st.cur = m;
                return self.cond(&c.node.else_expression, t, f);
            }
            Expression::Conditional(c) => {
                let (a, b) = (self.new_node(), self.new_node());
                self.cond(&c.node.condition, a, b)?;
                self.st.cur = a;
                self.cond(&c.node.then_expression, t, f)?;
                self.st.cur = b;
                return self.cond(&c.node.else_expression, t, f);
            }
            Expression::Comma(items) => {
                let (last, init) = items.split_last().expect("comma has operands");
                for i in init {
                    self.effect(i)?;
                }
                return self.cond(last, t, f);
            }
            _ => {}
        }
        let v = self.value(e)?;
        let c = self.truth_value(v);
        let cur = self.st.cur;
        let sp = self.span(e.span);
        match c {
            Expr::Const(v, _) => {
                let dst = if v != 0 { t } else { f };
                self.edge(cur, dst, EdgeKind::Blank, sp);
            }
            c => {
                self.edge(cur, t, EdgeKind::Assume { cond: c.clone(), truth: true }, sp);
                self.edge(cur, f, EdgeKind::Assume { cond: c, truth: false }, sp);
            }
        }
        Ok(())
    }
}

/// The span of a statement's leading keyword (`while`, `for`, …).
fn keyword(s: LSpan, len: usize) -> LSpan {
    if s.is_none() {
        return s;
    }
    LSpan::span(s.start, (s.start + len).min(s.end))
}

/// `ERROR: reach_error();` reports one property: the call's. True if the statement (or the
/// first statement of a block) is a call to a target function.
fn starts_with_target_call(s: &Statement) -> bool {
    match s {
        Statement::Compound(items) => match items.first().map(|i| &i.node) {
            Some(BlockItem::Statement(st)) => starts_with_target_call(&st.node),
            _ => false,
        },
        Statement::Expression(Some(e)) => match &e.node {
            Expression::Call(c) => match &c.node.callee.node {
                Expression::Identifier(id) => super::expr::target_kind(&id.node.name).is_some(),
                _ => false,
            },
            _ => false,
        },
        _ => false,
    }
}

impl<'a, 'p> FnBuilder<'a, 'p> {
    /// Lowers a declaration (file scope into the start function, block scope here).
    pub fn declaration(&mut self, d: &Node<Declaration>, store: Store) -> BResult<()> {
        let lens = if store == Store::Local { self.vla_sizes(d)? } else { Vec::new() };
        super::init::declaration(self, d, store)?;
        for (name, len) in lens {
            if let Some(Sym::Var(obj, _)) = self.cx.lookup(&name) {
                if let Obj::Array(v, dims) = &**obj {
                    if dims.first() == Some(&0) {
                        self.st.vla_lens.insert(*v, len);
                    }
                }
            }
        }
        self.declaration_semantics(d, store);
        Ok(())
    }

    /// The side effects of the size expressions of variable-length arrays (`int a[n++]`): they
    /// happen when the declaration is reached, before its initialiser. The length of a VLA's
    /// first dimension bounds its accesses ([`Self::check_bounds`]): the names of the
    /// declarators with one, and that length (see [`FnState::vla_lens`]).
    fn vla_sizes(&mut self, d: &Node<Declaration>) -> BResult<Vec<(String, Expr)>> {
        use lang_c::ast::{ArraySize, DerivedDeclarator};
        let mut lens = Vec::new();
        for id in &d.node.declarators {
            let decl = &id.node.declarator.node;
            // Only a plain array declarator (`int a[n][4]`, not `int (*p)[n]`) names an array
            // whose first dimension is this size.
            let plain = decl.derived.iter().all(|dd| matches!(dd.node, DerivedDeclarator::Array(_)));
            for (k, dd) in decl.derived.iter().enumerate() {
                let DerivedDeclarator::Array(a) = &dd.node else { continue };
                let (ArraySize::VariableExpression(e) | ArraySize::StaticExpression(e)) = &a.node.size else { continue };
                if super::consts::eval(self.cx, &e.node).is_some() {
                    continue;
                }
                let name = super::declarator_name(decl).filter(|_| plain && k == 0 && self.st.dry == 0);
                let Some(name) = name else {
                    self.effect(e)?;
                    continue;
                };
                let v = self.value(e)?;
                let len = self.truth_value(v);
                if self.fixed_locals_only(&len) {
                    lens.push((name, len));
                    continue;
                }
                let ty = len.ty();
                let var = self.temp(ty, false)?;
                let sp = self.span(e.span);
                self.stmt_edge(Stmt::Assign(LValue::Var(var), len), sp);
                lens.push((name, Expr::Var(var, ty)));
            }
        }
        Ok(lens)
    }

    /// Whether `e` reads nothing but locals of this function that its body never changes after
    /// their declaration (so its value is the same wherever they are in scope).
    fn fixed_locals_only(&self, e: &Expr) -> bool {
        let mut unknown = false;
        e.walk(&mut |x| unknown |= matches!(x, Expr::Unknown(..) | Expr::Elem(..)));
        let mut vs = Vec::new();
        e.vars(&mut vs);
        let Some(modified) = &self.st.modified else { return false };
        !unknown
            && vs.iter().all(|v| {
                v.func() == Some(self.st.func) && {
                    let info = &self.st.locals[v.index()];
                    !info.synthetic && !modified.contains(&info.name) && !self.cx.indirect.volatile.contains(v)
                }
            })
    }

    /// What a declaration means beyond its storage and initialiser: a `volatile` object (or a
    /// global register variable, `register int sp asm("esp")`) may change at any time, so its
    /// reads give any value; a `cleanup` attribute calls a function when the variable goes out
    /// of scope, which is not modelled (`Unsupported`).
    fn declaration_semantics(&mut self, d: &Node<Declaration>, store: Store) {
        use lang_c::ast::TypeSpecifier;
        use lang_c::ast::{DeclarationSpecifier, DerivedDeclarator, Extension, StorageClassSpecifier, TypeQualifier};
        let specs = &d.node.specifiers;
        let volatile = specs.iter().any(|s| match &s.node {
            DeclarationSpecifier::TypeQualifier(q) => q.node == TypeQualifier::Volatile,
            DeclarationSpecifier::TypeSpecifier(t) => {
                matches!(&t.node, TypeSpecifier::TypedefName(n) if self.cx.indirect.volatile_typedefs.contains(&n.node.name))
            }
            _ => false,
        });
        if ProgCx::is_typedef_decl(specs) {
            for id in &d.node.declarators {
                let decl = &id.node.declarator.node;
                let pointer = decl.derived.iter().any(|x| matches!(x.node, DerivedDeclarator::Pointer(_)));
                if let Some(name) = super::declarator_name(decl).filter(|_| volatile && !pointer) {
                    self.cx.indirect.volatile_typedefs.insert(name);
                }
            }
            return;
        }
        let register = ProgCx::storage(specs) == Some(StorageClassSpecifier::Register);
        for id in &d.node.declarators {
            let decl = &id.node.declarator.node;
            let Some(name) = super::declarator_name(decl) else { continue };
            let attrs = super::indirect::attributes(specs, &decl.extensions);
            if store == Store::Local && attrs.iter().any(|a| super::indirect::is_attr(a, "cleanup")) {
                let sp = self.span(id.span);
                let what = format!("`cleanup` attribute of `{}` (a call when it goes out of scope)", name);
                self.note(id.span, format!("{} is not modelled", what));
                self.stmt_edge(Stmt::Unsupported(what.clone()), sp);
                self.cx.scopes.last_mut().expect("block scope").cleanups.push(what);
            }
            let pointer = decl.derived.iter().any(|x| matches!(x.node, DerivedDeclarator::Pointer(_)));
            let asm_register =
                register && store == Store::Global && decl.extensions.iter().any(|e| matches!(e.node, Extension::AsmLabel(_)));
            if (volatile && !pointer) || asm_register {
                if let Some(Sym::Var(obj, _)) = self.cx.lookup(&name).cloned() {
                    let mut vars = Vec::new();
                    obj.vars(&mut vars);
                    self.cx.indirect.volatile.extend(vars);
                }
            }
        }
    }
}
