//! Calls in the expression lowering: property violations (`reach_error`, failed asserts),
//! assumptions, functions that end the path, a few built-ins, calls of defined functions
//! (call summary edges with copy-in/copy-out of by-reference structs) and external functions
//! (inputs, havocked memory).

use std::rc::Rc;

use lang_c::ast::{CallExpression, Expression, UnaryOperator};
use lang_c::span::{Node, Span as LSpan};

use super::{Place, Value};
use crate::cfa::build::func::FnBuilder;
use crate::cfa::build::indirect;
use crate::cfa::build::types::{CType, FuncSig, Obj, TypeTable};
use crate::cfa::build::{Alloc, BResult, Store, Sym};
use crate::cfa::{Call, EdgeKind, Span, TargetKind};
use crate::ir::{BinOp, Expr, FuncId, Imprecision, InputSource, IntTy, LValue, Stmt, VarId};

/// Functions whose call is a property violation.
pub fn target_kind(name: &str) -> Option<TargetKind> {
    match name {
        "reach_error" | "__VERIFIER_error" => Some(TargetKind::ReachError),
        "__assert_fail" | "__assert_perror_fail" | "__assert" | "__assert_rtn" => Some(TargetKind::Assert),
        _ => None,
    }
}

fn is_terminating(name: &str) -> bool {
    matches!(
        name,
        "abort"
            | "exit"
            | "_exit"
            | "_Exit"
            | "__VERIFIER_abort"
            | "__builtin_trap"
            | "__builtin_unreachable"
            | "pthread_exit"
            | "quick_exit"
    )
}

/// External functions known not to write through their pointer arguments.
fn is_pure_external(name: &str) -> bool {
    matches!(
        name,
        "printf"
            | "puts"
            | "putchar"
            | "strlen"
            | "strcmp"
            | "strncmp"
            | "memcmp"
            | "free"
            | "fprintf"
            | "fputs"
            | "__VERIFIER_atomic_begin"
            | "__VERIFIER_atomic_end"
            | "atoi"
            | "atol"
            | "strchr"
            | "isdigit"
            | "isalpha"
            | "isspace"
    )
}

/// A function a call through a pointer may reach, with its signature if it is declared here.
type Candidate = (String, Option<Rc<FuncSig>>);

/// What a dispatch over candidates does besides them: the imprecision of a result it does not
/// know, and the construct reached when no candidate's condition holds (else the run ends).
struct Otherwise<'e> {
    why: Imprecision,
    /// The construct a run that takes none of the branches reaches (it goes on past it, with
    /// `args` evaluated for their effects and an unknown result), or none: such a run ends.
    unsupported: Option<String>,
    args: &'e [Node<Expression>],
}

/// The C library's allocators and the Linux kernel's (`kmalloc`, `kzalloc`, `kcalloc`, as
/// the kernel documents them: a block, zeroed for the last two, or null).
fn is_allocator(name: &str) -> bool {
    matches!(
        name,
        "malloc"
            | "calloc"
            | "realloc"
            | "alloca"
            | "__builtin_alloca"
            | "valloc"
            | "strdup"
            | "kmalloc"
            | "__kmalloc"
            | "kzalloc"
            | "kcalloc"
    )
}

/// The type `__VERIFIER_nondet_X` returns by its name (SV-COMP's convention), whether it is
/// declared or not; `None` for a name the convention does not give a type.
fn nondet_type(name: &str, types: &TypeTable) -> Option<CType> {
    let suffix = name.strip_prefix("__VERIFIER_nondet_")?;
    let long = |signed| CType::Int(types.long(signed));
    Some(match suffix {
        "bool" | "_Bool" => CType::Int(IntTy::BOOL),
        "char" | "schar" | "signed_char" | "s8" => CType::Int(IntTy::I8),
        "uchar" | "unsigned_char" | "u8" => CType::Int(IntTy::U8),
        "short" | "s16" => CType::Int(IntTy::I16),
        "ushort" | "unsigned_short" | "u16" => CType::Int(IntTy::U16),
        "int" | "s32" => CType::Int(IntTy::I32),
        "uint" | "unsigned_int" | "unsigned" | "u32" => CType::Int(IntTy::U32),
        "long" | "ssize_t" => long(true),
        "ulong" | "unsigned_long" | "size_t" | "pthread_t" => long(false),
        "longlong" | "long_long" | "s64" | "loff_t" => CType::Int(IntTy::I64),
        "ulonglong" | "unsigned_long_long" | "u64" => CType::Int(IntTy::U64),
        "float" => CType::Float(4),
        "double" => CType::Float(8),
        "pointer" => CType::Ptr(Box::new(CType::Void)),
        "pchar" => CType::Ptr(Box::new(CType::Int(IntTy::I8))),
        _ => return None,
    })
}

impl<'a, 'p> FnBuilder<'a, 'p> {
    /// Lowers a call. With `dest`, a scalar result may be written straight into it (the
    /// returned value is then `Void`).
    pub fn call(&mut self, c: &Node<CallExpression>, span: LSpan, dest: Option<&Place>) -> BResult<Value> {
        let call = &c.node;
        let Some(mut name) = self.callee_name(call) else { return self.call_through_pointer(call, span, dest) };
        if let Some(target) = self.cx.indirect.aliases.get(&name).filter(|t| self.cx.func_ids.contains_key(*t)) {
            // `f __attribute__((alias("g")))`: `f` is `g`.
            name = target.clone();
        }
        let sig = match self.cx.lookup(&name) {
            Some(Sym::Func(_, s)) => Some(s.clone()),
            _ => None,
        };
        self.call_named(name, sig, call, span, dest)
    }

    /// A call of the function `name` (directly or as a candidate of a call through a pointer).
    fn call_named(
        &mut self,
        name: String,
        sig: Option<Rc<FuncSig>>,
        call: &CallExpression,
        span: LSpan,
        dest: Option<&Place>,
    ) -> BResult<Value> {
        // The library models' own primitives (`__cpals_assume`, standard input's
        // `__cpals_stdin_*`, the command line's `__cpals_arg_*`) are no functions a native run calls.
        let primitive = name == "__cpals_assume"
            || name.starts_with(crate::frontend::models::STDIN_INPUT_PREFIX)
            || crate::frontend::models::is_model_input(&name);
        if !self.cx.func_ids.contains_key(&name) && self.st.dry == 0 && !primitive {
            self.cx.externals.insert(name.clone());
        }
        if let Some(v) = self.call_control(&name, sig.is_some(), call, span)? {
            return Ok(v);
        }
        if let Some(v) = self.call_atexit(&name, call, span)? {
            return Ok(v);
        }
        if let Some(v) = self.call_builtin(&name, call, span)? {
            return Ok(v);
        }
        if let Some(v) = self.call_stdin(&name, call, span, dest)? {
            return Ok(v);
        }
        let mut sig = sig;
        if let Some(model) = self.cx.models.get(&name).cloned() {
            // A library model is used with the memory model only (without it, every read in it
            // would be any value), and a byte-wise one only on pointers to bytes. Elsewhere the
            // call is an external's, as without the model.
            let applies = self.memory_on() && (!crate::frontend::models::bytes_only(&name) || self.byte_pointers(call)?);
            if !applies {
                // The second build (with memory) uses the model.
                self.cx.uses_memory = true;
                if self.st.dry == 0 {
                    self.cx.externals.insert(name.clone());
                }
                return self.call_external(name, sig, call, span, dest);
            }
            sig = Some(model);
        }
        if let Some(&callee) = self.cx.func_ids.get(&name) {
            return self.call_defined(callee, &name, sig, call, span, dest);
        }
        self.call_external(name, sig, call, span, dest)
    }

    /// A call that reads standard input in a way the models cover (`scanf` with a literal
    /// format, `fgetc(stdin)`, `fgets(s, n, stdin)`; [`crate::frontend::models::stdin_call`]):
    /// a call of its model, without the format and the stream. `None` otherwise, and without
    /// the memory model (the call is then an external's, and the second build models it).
    fn call_stdin(&mut self, name: &str, call: &CallExpression, span: LSpan, dest: Option<&Place>) -> BResult<Option<Value>> {
        use crate::frontend::models::{scanf_name, stdin_call, Stdin};
        if self.cx.func_ids.contains_key(name) {
            return Ok(None);
        }
        if let Some(convs) = crate::frontend::models::sscanf_call(call) {
            // `sscanf` reads a string in memory, with the conversions of `scanf`'s models.
            if !self.memory_on() {
                self.cx.uses_memory = true;
                return Ok(None);
            }
            let target = crate::frontend::models::sscanf_name(&convs);
            let (Some(&callee), Some(sig)) = (self.cx.func_ids.get(&target), self.cx.models.get(&target).cloned()) else { return Ok(None) };
            let redirected =
                CallExpression { callee: call.callee.clone(), arguments: [&call.arguments[..1], &call.arguments[2..]].concat() };
            return Ok(Some(self.call_defined(callee, &target, Some(sig), &redirected, span, dest)?));
        }
        let Some(kind) = stdin_call(call) else { return Ok(None) };
        if !self.memory_on() {
            self.cx.uses_memory = true;
            return Ok(None);
        }
        let (target, args) = match kind {
            Stdin::Scanf(convs, first) => (scanf_name(&convs), call.arguments[first..].to_vec()),
            Stdin::Getchar => ("getchar".to_string(), Vec::new()),
            Stdin::Fgets => ("__cpals_fgets_stdin".to_string(), call.arguments[..2].to_vec()),
            Stdin::Fread => {
                let first = CallExpression { callee: call.callee.clone(), arguments: call.arguments[..1].to_vec() };
                if !self.byte_pointers(&first)? {
                    // Into wider objects the typed memory could not follow the bytes, and the
                    // other standard input models assume they see every read.
                    let sp = self.span(span);
                    self.stmt_edge(Stmt::Unsupported("`fread` from standard input into objects that are not bytes".into()), sp);
                    return Ok(None);
                }
                ("__cpals_fread_stdin".to_string(), call.arguments[..3].to_vec())
            }
        };
        let (Some(&callee), Some(sig)) = (self.cx.func_ids.get(&target), self.cx.models.get(&target).cloned()) else { return Ok(None) };
        let redirected = CallExpression { callee: call.callee.clone(), arguments: args };
        Ok(Some(self.call_defined(callee, &target, Some(sig), &redirected, span, dest)?))
    }

    /// Whether every pointer (or array) argument of a call points to bytes (`char`, `signed
    /// char`, `unsigned char`), as a byte-wise library model needs ([`crate::frontend::models`]).
    fn byte_pointers(&mut self, call: &CallExpression) -> BResult<bool> {
        for a in &call.arguments {
            if let CType::Ptr(p) | CType::Array(p, _) = self.type_of(a)? {
                if !matches!(*p, CType::Int(t) if t.bits == 8 && !t.boolean) {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// The name of the called function, unless the callee is an object (a function pointer).
    /// `(*f)(x)`, `(&f)(x)` and `((T) f)(x)` on a function `f` call `f` directly.
    fn callee_name(&self, call: &CallExpression) -> Option<String> {
        match &call.callee.node {
            Expression::Identifier(id) => match self.cx.lookup(&id.node.name) {
                Some(Sym::Var(..)) | Some(Sym::Ref(..)) | Some(Sym::At(..)) => None,
                _ => Some(id.node.name.clone()),
            },
            e => match indirect::designator(e) {
                Some(n) if matches!(self.cx.lookup(n), Some(Sym::Func(..))) => Some(n.to_string()),
                _ => None,
            },
        }
    }

    /// The functions a call through a pointer of signature `site` with `nargs` arguments may
    /// reach: those used as values in the file whose type fits ([`indirect::fits`]), each with
    /// its signature if it is declared here (else only the pre-pass knows it).
    fn pointer_candidates(&self, site: Option<&FuncSig>, nargs: usize) -> Vec<(String, Option<Rc<FuncSig>>)> {
        let mut out = Vec::new();
        for name in &self.cx.indirect.values {
            let sig = match self.cx.lookup(name) {
                Some(Sym::Func(_, s)) => Some(s.clone()),
                _ => match self.cx.scopes[0].ordinary.get(name) {
                    Some(Sym::Func(_, s)) => Some(s.clone()),
                    Some(_) => continue,
                    None => None,
                },
            };
            let Some(fsig) = sig.clone().or_else(|| self.cx.indirect.sigs.get(name).cloned()) else { continue };
            if indirect::fits(site, nargs, &fsig) {
                out.push((name.clone(), sig));
            }
        }
        out
    }

    /// A call through a function pointer: a branch per candidate ([`Self::pointer_candidates`]),
    /// each an ordinary call, chosen by an over-approximated condition (pointer values are not
    /// tracked), so proofs cover every candidate and no counterexample through one is
    /// confirmed. Without candidates, or when a pointer may come from outside the file, the
    /// call is `Unsupported`.
    fn call_through_pointer(&mut self, call: &CallExpression, span: LSpan, dest: Option<&Place>) -> BResult<Value> {
        let sp = self.span(span);
        let site = match self.type_of(&call.callee)? {
            CType::Ptr(p) => match *p {
                CType::Func(sig) => Some(sig),
                _ => None,
            },
            CType::Func(sig) => Some(sig),
            _ => None,
        };
        let ret = site.as_ref().map(|s| s.ret.clone()).unwrap_or(CType::Int(IntTy::INT));
        let callee = self.value(&call.callee)?;
        let cands = self.pointer_candidates(site.as_deref(), call.arguments.len());
        let foreign = self.cx.indirect.foreign.clone();
        if cands.is_empty() {
            let what = match &foreign {
                Some(why) => format!("call through a function pointer ({})", why),
                None => "call through a function pointer (no function of a matching type is used as a value)".to_string(),
            };
            self.note(span, format!("{} is not modelled", what));
            self.stmt_edge(Stmt::Unsupported(what), sp);
            for a in &call.arguments {
                self.effect(a)?;
            }
            return Ok(self.unknown_of(&ret, Imprecision::FunctionPointer));
        }
        let _ = dest;
        // The memory model knows which function a pointer holds: a branch per candidate on the
        // exact condition. Without it the choice is an unknown value.
        let exact: Option<Vec<Expr>> = match (self.memory_on(), &callee) {
            (true, Value::Int(fp, _)) => {
                let fp = fp.clone().cast(IntTy::U64);
                Some(
                    cands
                        .iter()
                        .map(|(name, _)| {
                            let f = self.function_address(name, span);
                            Expr::Binary(crate::ir::BinOp::Eq, Box::new(fp.clone()), Box::new(f), IntTy::INT)
                        })
                        .collect(),
                )
            }
            _ => None,
        };
        // A pointer that holds none of them is null or garbage (the run crashes there), unless
        // it may come from outside the file: then the call reaches what the model does not
        // follow, instead of a candidate (not before one).
        let what = foreign.map(|why| {
            format!("call through `{}` ({}), which may hold a function outside the file", self.source_text(call.callee.span), why)
        });
        let why = Imprecision::FunctionPointer;
        let indexed: Vec<(usize, Candidate)> = cands.into_iter().enumerate().collect();
        let how = Otherwise { why, unsupported: what, args: &call.arguments };
        self.dispatch(
            &indexed,
            &ret,
            span,
            how,
            |_, (k, _)| exact.as_ref().map_or(Expr::Unknown(IntTy::INT, why), |c| c[*k].clone()),
            |b, (_, (name, sig))| b.call_candidate(name, sig.clone(), call, span),
        )
    }

    /// One branch of a call through a pointer: `name` called with the call's arguments.
    fn call_candidate(&mut self, name: &str, sig: Option<Rc<FuncSig>>, call: &CallExpression, span: LSpan) -> BResult<Value> {
        let sig = match sig {
            Some(s) => s,
            None => {
                let s = self.cx.indirect.sigs[name].clone();
                if indirect::mentions_struct(&s) {
                    // Declared only after this call, with struct types this table cannot name yet.
                    let sp = self.span(span);
                    let what = format!("call through a function pointer to `{}` (declared after the call, with struct types)", name);
                    self.note(span, format!("{} is not modelled", what));
                    self.stmt_edge(Stmt::Unsupported(what), sp);
                    for a in &call.arguments {
                        self.effect(a)?;
                    }
                    return Ok(self.unknown_of(&s.ret, Imprecision::FunctionPointer));
                }
                s
            }
        };
        self.call_named(name.to_string(), Some(sig), call, span, None)
    }

    /// Branches over `cands` on their conditions (`cond`: exact, or an over-approximated
    /// unknown), lowering each with `each`, and joins them; the result (of type `ret`) is the
    /// chosen branch's. A run that takes none of the branches ends (the candidates are all the
    /// functions it can reach), or, with `otherwise`, reaches that unsupported construct.
    fn dispatch<T>(
        &mut self,
        cands: &[T],
        ret: &CType,
        span: LSpan,
        how: Otherwise<'_>,
        cond: impl Fn(&Self, &T) -> Expr,
        mut each: impl FnMut(&mut Self, &T) -> BResult<Value>,
    ) -> BResult<Value> {
        let Otherwise { why, unsupported: otherwise, args } = how;
        let sp = self.span(span);
        let holder = match ret {
            CType::Int(_) | CType::Ptr(_) => {
                let it = self.cx.types.int_of(ret).expect("scalar");
                let tmp = self.temp(it, ret.is_pointer())?;
                Some(Place::Obj { obj: Rc::new(Obj::Scalar(tmp)), idx: Vec::new(), ty: ret.clone() })
            }
            CType::Struct(_) => {
                let obj = Rc::new(self.alloc("__ret", ret, Store::Local, true)?);
                Some(Place::Obj { obj, idx: Vec::new(), ty: ret.clone() })
            }
            _ => None,
        };
        let join = self.new_node();
        let mut at = self.st.cur;
        for c in cands {
            let (yes, no) = (self.new_node(), self.new_node());
            let cond = cond(self, c);
            self.edge(at, yes, EdgeKind::Assume { cond: cond.clone(), truth: true }, sp);
            self.edge(at, no, EdgeKind::Assume { cond, truth: false }, sp);
            self.st.cur = yes;
            let v = each(self, c)?;
            if let Some(h) = &holder {
                let v = match v {
                    Value::Void => self.unknown_of(ret, why),
                    v => v,
                };
                self.write(h, v, span)?;
            }
            let cur = self.st.cur;
            self.edge(cur, join, EdgeKind::Blank, sp);
            at = no;
        }
        match otherwise {
            Some(what) => {
                // The analyses that stop at an unsupported construct stop here; those that go
                // past it as a havoc go on to the join, as the call of an unknown function.
                self.st.cur = at;
                self.note(span, format!("{} is not modelled", what));
                for a in args {
                    self.effect(a)?;
                }
                self.stmt_edge(Stmt::Unsupported(what), sp);
                if let Some(h) = &holder {
                    let v = self.unknown_of(ret, why);
                    self.write(h, v, span)?;
                }
                let cur = self.st.cur;
                self.edge(cur, join, EdgeKind::Blank, sp);
            }
            None => self.st.nodes[at.0 as usize].terminal = true,
        }
        self.st.cur = join;
        Ok(match &holder {
            Some(h) => self.read(h, span),
            None => self.unknown_of(ret, why),
        })
    }

    /// Callbacks an external function receives (`qsort`'s comparator, a handler): it may call
    /// each of them any number of times with any arguments, modelled as a loop that calls a
    /// candidate on an over-approximated condition or stops.
    fn external_callbacks(&mut self, cands: &[(String, Option<Rc<FuncSig>>)], span: LSpan) -> BResult<()> {
        let sp = self.span(span);
        let head = self.new_node();
        let cur = self.st.cur;
        self.edge(cur, head, EdgeKind::Blank, sp);
        let (body, out) = (self.new_node(), self.new_node());
        self.edge(head, out, EdgeKind::Blank, sp);
        self.edge(head, body, EdgeKind::Blank, sp);
        self.st.cur = body;
        let why = Imprecision::Callback;
        let how = Otherwise { why, unsupported: None, args: &[] };
        self.dispatch(
            cands,
            &CType::Void,
            span,
            how,
            |_, _| Expr::Unknown(IntTy::INT, why),
            |b, (name, sig)| b.call_arbitrary(name, sig.clone(), span),
        )?;
        let cur = self.st.cur;
        self.edge(cur, head, EdgeKind::Blank, sp);
        self.st.cur = out;
        Ok(())
    }

    /// A call of `name` with arbitrary arguments (a callback called by an external function).
    fn call_arbitrary(&mut self, name: &str, sig: Option<Rc<FuncSig>>, span: LSpan) -> BResult<Value> {
        let sp = self.span(span);
        if let Some(kind) = target_kind(name) {
            self.target(kind, span, None);
            return Ok(Value::Void);
        }
        // An external function called by an external one: its effects are the caller's.
        let Some(&callee) = self.cx.func_ids.get(name) else { return Ok(Value::Void) };
        let sig = match sig {
            Some(s) => s,
            None => {
                let s = self.cx.indirect.sigs[name].clone();
                if indirect::mentions_struct(&s) {
                    let what = format!("callback `{}` (declared after the call, with struct types)", name);
                    self.note(span, format!("{} is not modelled", what));
                    self.stmt_edge(Stmt::Unsupported(what), sp);
                    return Ok(Value::Void);
                }
                s
            }
        };
        let mut args = Vec::new();
        for (k, p) in sig.params.iter().enumerate() {
            if let (true, CType::Ptr(pointee)) = (self.memory_on(), p) {
                if !matches!(**pointee, CType::Func(_)) {
                    // As for an entry: a pointer argument points to an object of its own.
                    let what = format!("number of elements argument {} of callback `{}` points to", k + 1, name);
                    args.push(self.entry_buffer(pointee, what, sp)?);
                    continue;
                }
            }
            let v = self.unknown_of(p, Imprecision::Callback);
            args.extend(self.flatten_value(v, p, span)?);
        }
        self.emit(EdgeKind::CallSummary(Call { callee, args, ret: Vec::new() }), sp);
        Ok(Value::Void)
    }

    /// `atexit(f)` for a function `f` defined in the file: pushes `f`'s id on the synthetic
    /// handler stack that [`Self::run_atexit`] pops. Other registrations (`on_exit`,
    /// `at_quick_exit`, a handler given by a pointer) are `Unsupported`. `None` for other calls.
    fn call_atexit(&mut self, name: &str, call: &CallExpression, span: LSpan) -> BResult<Option<Value>> {
        if !matches!(name, "atexit" | "on_exit" | "at_quick_exit") || self.cx.func_ids.contains_key(name) {
            return Ok(None);
        }
        let sp = self.span(span);
        let handler = match (name, call.arguments.as_slice()) {
            ("atexit", [h]) => indirect::designator(&h.node)
                .filter(|h| matches!(self.cx.lookup(h), Some(Sym::Func(..))) && self.cx.func_ids.contains_key(*h))
                .and_then(|h| self.cx.indirect.handler_id(h)),
            _ => None,
        };
        for a in &call.arguments {
            self.effect(a)?;
        }
        let Some(id) = handler else {
            let what = format!("`{}` handler that is not a function defined in the file", name);
            self.note(span, format!("{} is not modelled", what));
            self.stmt_edge(Stmt::Unsupported(what), sp);
            return Ok(Some(Value::Int(Expr::Unknown(IntTy::INT, Imprecision::Other), CType::Int(IntTy::INT))));
        };
        let (n, slots) = self.atexit_vars()?;
        let count = Expr::Var(n, IntTy::INT);
        self.stmt_edge(Stmt::Assign(LValue::Elem(slots, count.clone().cast(IntTy::I64)), Expr::Const(id as i128, IntTy::INT)), sp);
        let next = Expr::Binary(BinOp::Add, Box::new(count), Box::new(Expr::Const(1, IntTy::INT)), IntTy::INT);
        self.stmt_edge(Stmt::Assign(LValue::Var(n), next), sp);
        Ok(Some(Value::Int(Expr::Const(0, IntTy::INT), CType::Int(IntTy::INT))))
    }

    /// The synthetic `atexit` stack (its height and its slots, ids of handlers), allocated on
    /// first use and emptied in the start function before the entry runs.
    fn atexit_vars(&mut self) -> BResult<(VarId, VarId)> {
        if let Some(v) = self.cx.indirect.atexit_vars {
            return Ok(v);
        }
        let how = Alloc { func: self.st.func, store: Store::Global, synthetic: true };
        let int = CType::Int(IntTy::INT);
        let Obj::Scalar(n) = self.cx.alloc_obj(&mut Vec::new(), how, "__atexit_count", &int, &[])? else {
            unreachable!("an int is a scalar")
        };
        let Obj::Array(slots, _) = self.cx.alloc_obj(&mut Vec::new(), how, "__atexit_handlers", &CType::Array(Box::new(int), None), &[])?
        else {
            unreachable!("an int array is an array")
        };
        self.cx.indirect.atexit_vars = Some((n, slots));
        let init = |b: &mut FnBuilder| {
            b.emit(EdgeKind::Declaration(Stmt::Assign(LValue::Var(n), Expr::Const(0, IntTy::INT))), Span::default());
            b.emit(EdgeKind::Declaration(Stmt::InitArray { var: slots, zero: true }), Span::default());
        };
        match self.cx.start.take() {
            Some(mut start) => {
                std::mem::swap(self.st, &mut start);
                init(self);
                std::mem::swap(self.st, &mut start);
                self.cx.start = Some(start);
            }
            None => init(self),
        }
        Ok((n, slots))
    }

    /// At `exit()` and the return from `main`: pops and calls the registered `atexit` handlers,
    /// last registered first; a handler that registers another gets it called next (C11
    /// 7.22.4.2, as glibc runs them). Nothing when the file registers no handler.
    pub fn run_atexit(&mut self, span: LSpan) -> BResult<()> {
        let handlers: Vec<(usize, FuncId)> =
            (self.cx.indirect.atexit.iter().enumerate()).filter_map(|(k, n)| self.cx.func_ids.get(n).map(|&f| (k + 1, f))).collect();
        if !handlers.is_empty() {
            self.run_handlers(&handlers, span)?;
        }
        // Then the destructors (glibc registers `.fini_array` before `main` runs).
        let sp = self.span(span);
        let dtors: Vec<FuncId> = self.cx.indirect.destructors.iter().filter_map(|n| self.cx.func_ids.get(n).copied()).collect();
        for f in dtors {
            self.emit(EdgeKind::CallSummary(Call { callee: f, args: Vec::new(), ret: Vec::new() }), sp);
        }
        Ok(())
    }

    /// The loop that pops and calls `atexit` handlers (`(id, function)` pairs).
    fn run_handlers(&mut self, handlers: &[(usize, FuncId)], span: LSpan) -> BResult<()> {
        let (n, slots) = self.atexit_vars()?;
        let sp = self.span(span);
        let head = self.new_node();
        let cur = self.st.cur;
        self.edge(cur, head, EdgeKind::Blank, sp);
        let (pop, done) = (self.new_node(), self.new_node());
        let count = Expr::Var(n, IntTy::INT);
        let more = Expr::Binary(BinOp::Gt, Box::new(count.clone()), Box::new(Expr::Const(0, IntTy::INT)), IntTy::INT);
        self.edge(head, pop, EdgeKind::Assume { cond: more.clone(), truth: true }, sp);
        self.edge(head, done, EdgeKind::Assume { cond: more, truth: false }, sp);
        self.st.cur = pop;
        let prev = Expr::Binary(BinOp::Sub, Box::new(count.clone()), Box::new(Expr::Const(1, IntTy::INT)), IntTy::INT);
        self.stmt_edge(Stmt::Assign(LValue::Var(n), prev), sp);
        let id = Expr::Elem(slots, Box::new(count.cast(IntTy::I64)), IntTy::INT);
        let mut at = self.st.cur;
        for &(k, f) in handlers {
            let (yes, no) = (self.new_node(), self.new_node());
            let is = Expr::Binary(BinOp::Eq, Box::new(id.clone()), Box::new(Expr::Const(k as i128, IntTy::INT)), IntTy::INT);
            self.edge(at, yes, EdgeKind::Assume { cond: is.clone(), truth: true }, sp);
            self.edge(at, no, EdgeKind::Assume { cond: is, truth: false }, sp);
            self.st.cur = yes;
            self.emit(EdgeKind::CallSummary(Call { callee: f, args: Vec::new(), ret: Vec::new() }), sp);
            let cur = self.st.cur;
            self.edge(cur, head, EdgeKind::Blank, sp);
            at = no;
        }
        // Every id pushed is one of the handlers above.
        self.st.nodes[at.0 as usize].terminal = true;
        self.st.cur = done;
        Ok(())
    }

    /// Calls that change the control flow: property violations, `assert` without a
    /// declaration, `__VERIFIER_assume`, and functions that end the path. `None` for others.
    fn call_control(&mut self, name: &str, declared: bool, call: &CallExpression, span: LSpan) -> BResult<Option<Value>> {
        if target_kind(name) == Some(TargetKind::ReachError)
            && !self.cx.props.counts(TargetKind::ReachError)
            && !self.cx.func_ids.contains_key(name)
        {
            // Not the property (`--property unreach-label`) and not defined: SV-COMP's
            // `reach_error` aborts, an external function may return. Neither is assumed.
            let sp = self.span(span);
            self.note(span, format!("`{}` is not the property and has no definition: whether it returns is not known", name));
            self.stmt_edge(Stmt::Unsupported(format!("a call of `{}`, which is not the property and has no definition", name)), sp);
            return Ok(Some(Value::Void));
        }
        // A defined `reach_error` that is not a property (`--property`) is an ordinary call.
        let target = target_kind(name).filter(|&k| self.cx.props.counts(k) || !self.cx.func_ids.contains_key(name));
        if let Some(kind) = target {
            let condition = match (kind, call.arguments.first().map(|a| &a.node)) {
                (TargetKind::Assert, Some(Expression::StringLiteral(s))) => {
                    let bytes = crate::cfa::build::consts::string_literal(&s.node);
                    Some(bytes.iter().filter_map(|&b| char::from_u32(b)).collect())
                }
                _ => None,
            };
            self.target(kind, span, condition);
            return Ok(Some(Value::Void));
        }
        if name == "assert" && !declared && !self.cx.func_ids.contains_key("assert") && call.arguments.len() == 1 {
            let (ok, bad) = (self.new_node(), self.new_node());
            self.cond(&call.arguments[0], ok, bad)?;
            self.st.cur = bad;
            self.target(TargetKind::Assert, span, None);
            self.st.cur = ok;
            return Ok(Some(Value::Void));
        }
        if (name == "__VERIFIER_assume" || name == "__cpals_assume") && call.arguments.len() == 1 {
            let ok = self.new_node();
            let stop = self.terminal_node();
            self.cond(&call.arguments[0], ok, stop)?;
            self.st.cur = ok;
            return Ok(Some(Value::Void));
        }
        if is_terminating(name) && !self.cx.func_ids.contains_key(name) {
            for a in &call.arguments {
                self.effect(a)?;
            }
            if name == "exit" {
                self.run_atexit(span)?;
            }
            self.terminate(span);
            return Ok(Some(Value::Void));
        }
        Ok(None)
    }

    /// A call of an external function: any result, and it may write through pointer arguments.
    fn call_external(
        &mut self,
        name: String,
        sig: Option<Rc<FuncSig>>,
        call: &CallExpression,
        span: LSpan,
        dest: Option<&Place>,
    ) -> BResult<Value> {
        let sp = self.span(span);
        let mut writes = false;
        // Functions the external may call back: named ones, and the candidates of pointers.
        let mut callbacks: Vec<(String, Option<Rc<FuncSig>>)> = Vec::new();
        let mut unknown_callback = false;
        let mut arg_values = Vec::new();
        for a in &call.arguments {
            let v = self.value(a)?;
            arg_values.push(v.clone());
            if let Value::Int(_, t) = &v {
                writes |= t.is_pointer();
                let CType::Ptr(p) = t else { continue };
                let CType::Func(fsig) = &**p else {
                    // A pointer to something holding function pointers (a struct of handlers):
                    // the external may call any function used as a value.
                    if indirect::holds_fn_ptr(&self.cx.types, p, 0) {
                        for c in self.pointer_candidates(None, usize::MAX) {
                            if !callbacks.iter().any(|(n, _)| *n == c.0) {
                                callbacks.push(c);
                            }
                        }
                    }
                    continue;
                };
                let named = indirect::designator(&a.node).and_then(|n| match self.cx.lookup(n) {
                    Some(Sym::Func(_, s)) => Some((n.to_string(), Some(s.clone()))),
                    _ => None,
                });
                let cands = match named {
                    Some(c) => vec![c],
                    None => self.pointer_candidates(Some(fsig), fsig.params.len()),
                };
                unknown_callback |= cands.is_empty();
                for c in cands {
                    if !callbacks.iter().any(|(n, _)| *n == c.0) {
                        callbacks.push(c);
                    }
                }
            }
        }
        if self.memory_on()
            && (is_allocator(&name) || super::super::memory::is_deallocator(&name))
            && sig.as_ref().is_none_or(|s| !s.variadic)
        {
            return self.memory_call(&name, &arg_values, span);
        }
        if is_allocator(&name) {
            self.cx.uses_memory = true;
            let pointee = CType::Void;
            return Ok(self.unknown_ptr(pointee, Imprecision::Allocation));
        }
        if writes && !is_pure_external(&name) {
            self.stmt_edge(Stmt::HavocMemory(Imprecision::ExternalWrite), sp);
        }
        if (!callbacks.is_empty() || unknown_callback) && !is_pure_external(&name) {
            // A pointer from outside the file points to an external function: calling it is the
            // external's own behaviour, already over-approximated. Only an unknown one in the
            // file is not.
            if unknown_callback {
                let what = format!("function pointer passed to `{}`, which may call it", name);
                self.note(span, format!("{} is not modelled", what));
                self.stmt_edge(Stmt::Unsupported(what), sp);
            }
            if !callbacks.is_empty() {
                self.external_callbacks(&callbacks, span)?;
            }
        }
        let named = nondet_type(&name, &self.cx.types);
        let ret = match (&sig, &named) {
            (Some(s), _) => s.ret.clone(),
            (None, Some(t)) => t.clone(),
            (None, None) => CType::Int(IntTy::INT),
        };
        if let (Some(CType::Int(nt)), CType::Int(_)) = (&named, &ret) {
            // Declared with another integer type: a value of the name's type, converted.
            if CType::Int(*nt) != ret {
                let tmp = self.temp(*nt, false)?;
                self.stmt_edge(Stmt::Input { lhs: LValue::Var(tmp), source: InputSource::Call(name.clone()) }, sp);
                return Ok(self.convert(Value::Int(Expr::Var(tmp, *nt), CType::Int(*nt)), &ret));
            }
        }
        // Only SV-COMP's input functions are inputs; any other external's result is a value
        // cpals does not model (it never confirms a counterexample).
        // The standard input model's bytes and numbers are inputs too (`libc/stdio.c`), and
        // the command line's (`libc/args.c`).
        let stdin_input = crate::frontend::models::is_model_input(&name);
        let source =
            if name.starts_with("__VERIFIER_nondet_") || stdin_input { InputSource::Call(name) } else { InputSource::External(name) };
        match &ret {
            CType::Int(t) => {
                let t = *t;
                if let Some(lhs) = self.input_destination(dest, t) {
                    if let (LValue::Elem(v, i), Some(Place::Obj { obj, .. })) = (&lhs, dest) {
                        if let Obj::Array(_, dims) = &**obj {
                            self.check_bounds(*v, i, dims, span);
                        }
                    }
                    self.stmt_edge(Stmt::Input { lhs, source }, sp);
                    return Ok(Value::Void);
                }
                let tmp = self.temp(t, false)?;
                self.stmt_edge(Stmt::Input { lhs: LValue::Var(tmp), source }, sp);
                Ok(Value::Int(Expr::Var(tmp, t), ret.clone()))
            }
            CType::Ptr(_) => Ok(self.unknown_of(&ret, Imprecision::Address)),
            CType::Struct(_) => Ok(self.unknown_of(&ret, Imprecision::Other)),
            CType::Float(_) => Ok(Value::Float),
            _ => Ok(Value::Void),
        }
    }

    /// The variable or array element an external call's integer result of type `t` can be
    /// read into directly: `dest` if it is a scalar or fully subscripted element of that type.
    fn input_destination(&self, dest: Option<&Place>, t: IntTy) -> Option<LValue> {
        let Some(Place::Obj { obj, idx, ty: dty }) = dest else { return None };
        if self.cx.types.int_of(dty) != Some(t) || dty.is_pointer() {
            return None;
        }
        match &**obj {
            Obj::Scalar(v) if idx.is_empty() => Some(LValue::Var(*v)),
            Obj::Array(v, dims) => Self::linear_index(idx, dims).map(|i| LValue::Elem(*v, i)),
            _ => None,
        }
    }

    fn call_defined(
        &mut self,
        callee: FuncId,
        name: &str,
        sig: Option<Rc<FuncSig>>,
        call: &CallExpression,
        span: LSpan,
        dest: Option<&Place>,
    ) -> BResult<Value> {
        let sp = self.span(span);
        let params: Vec<CType> = sig.as_ref().map(|s| s.params.clone()).unwrap_or_default();
        let ret_ty = sig.as_ref().map(|s| s.ret.clone()).unwrap_or(CType::Int(IntTy::INT));
        let mut args = Vec::new();
        // Copies of by-reference arguments, assigned back after the return values.
        let mut copy_out: Vec<LValue> = Vec::new();
        for (i, a) in call.arguments.iter().enumerate() {
            let by_ref = self.cx.byref.contains(&(name.to_string(), i));
            if let Some(pointee) = params.get(i).and_then(|t| self.cx.types.by_reference_pointee(t)).filter(|_| by_ref) {
                let place = match &a.node {
                    Expression::UnaryOperator(u) if u.node.operator.node == UnaryOperator::Address => Some(self.place(&u.node.operand)?),
                    _ => self.by_reference(a),
                };
                let Some(Place::Obj { obj, idx, ty }) =
                    place.filter(|p| *p.ty() == pointee && matches!(p, Place::Obj { idx, .. } if idx.is_empty()))
                else {
                    return Err(self.err(a.span, "argument does not match the parameter's struct type"));
                };
                let mut vars = Vec::new();
                obj.vars(&mut vars);
                copy_out.extend(vars.into_iter().map(LValue::Var));
                let flat = self.flatten_value(Value::Agg(Place::Obj { obj, idx, ty }, pointee.clone()), &pointee, a.span)?;
                args.extend(flat);
                continue;
            }
            let v = self.value(a)?;
            match params.get(i) {
                Some(pt) => {
                    let flat = self.flatten_value(v, pt, a.span)?;
                    args.extend(flat);
                }
                None => {
                    // Extra (variadic or unprototyped) arguments: default promotions.
                    if let Value::Int(e, CType::Int(t)) = v {
                        if sig.as_ref().is_some_and(|s| s.unprototyped) {
                            args.push(e.cast(t.promote()));
                        }
                    } else if let Value::Int(e, _) = v {
                        if sig.as_ref().is_some_and(|s| s.unprototyped) {
                            args.push(e);
                        }
                    }
                }
            }
        }
        // The callee's own flattened parameters decide the arity; pad or cut.
        let ret_vals: Vec<LValue>;
        let mut result = Value::Void;
        match &ret_ty {
            CType::Void => ret_vals = Vec::new(),
            CType::Int(_) | CType::Ptr(_) => {
                let it = self.cx.types.int_of(&ret_ty).expect("scalar");
                let direct = match dest.filter(|_| copy_out.is_empty()) {
                    Some(Place::Obj { obj, idx, ty }) if self.cx.types.int_of(ty) == Some(it) && *ty == ret_ty => match &**obj {
                        Obj::Scalar(v) if idx.is_empty() => Some(LValue::Var(*v)),
                        _ => None,
                    },
                    _ => None,
                };
                match direct {
                    Some(l) => ret_vals = vec![l],
                    None => {
                        let tmp = self.temp(it, ret_ty.is_pointer())?;
                        ret_vals = vec![LValue::Var(tmp)];
                        result = Value::Int(Expr::Var(tmp, it), ret_ty.clone());
                    }
                }
            }
            CType::Struct(_) => {
                let obj = Rc::new(self.alloc("__ret", &ret_ty, Store::Local, true)?);
                let mut vars = Vec::new();
                obj.vars(&mut vars);
                ret_vals = vars.into_iter().map(LValue::Var).collect();
                result = Value::Agg(Place::Obj { obj, idx: Vec::new(), ty: ret_ty.clone() }, ret_ty.clone());
            }
            CType::Float(_) => {
                ret_vals = Vec::new();
                result = Value::Float;
            }
            _ => ret_vals = Vec::new(),
        }
        let mut ret_vals = ret_vals;
        ret_vals.extend(copy_out);
        self.emit(EdgeKind::CallSummary(Call { callee, args, ret: ret_vals }), sp);
        Ok(result)
    }
}
