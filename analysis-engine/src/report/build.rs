//! The one report builder: counterexample traces from confirmed paths (with the source text
//! of each step), loop invariants as C expressions, code proven unreachable, property
//! conditions, and the final [`Report`] from the analyses' [`Outcome`].

use std::collections::{BTreeSet, HashMap, HashSet};

use super::outcome::{Decision, FoundInvariant, Outcome};
use super::{
    InputOrigin, InvariantReport, InvariantSource, PropertyReport, Report, Stats, StepKind, TraceInput, TraceStep, TraceValue,
    UnknownReason, Verdict,
};
use crate::cfa::{EdgeKind, Loc, NodeId, Op, OpCtx, OpKind, Program, SrcRange, TargetKind};
use crate::config::{Analysis, TemplateMode};
use crate::invariants::Annotations;
use crate::ir::{Expr, FuncId, InputSource, LValue, Stmt, VarId};
use crate::properties::{Property, PropertyKey};
use crate::smt::path::StepValues;

/// The source text of a range (its first line), if it is in the main file.
pub fn excerpt(p: &Program, r: &SrcRange) -> Option<String> {
    if r.file != p.file || r.col == 0 {
        return None;
    }
    let line = p.source.lines().nth(r.line.checked_sub(1)? as usize)?;
    let start = (r.col as usize).checked_sub(1)?;
    let end = if r.end_line == r.line && r.end_col > r.col { (r.end_col as usize - 1).min(line.len()) } else { line.len() };
    let mut text = line.get(start..end)?.trim();
    // One statement: stop at a `;` outside parentheses (macro expansions span to the line's end).
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ';' if depth <= 0 => {
                text = text[..i].trim_end();
                break;
            }
            _ => {}
        }
    }
    if text.is_empty() {
        return None;
    }
    let mut t: String = text.chars().take(160).collect();
    if t.ends_with(';') {
        t.pop();
    }
    Some(t)
}

/// A variable's (or array element's) name and its value as the trace shows it.
pub fn value_text(p: &Program, v: VarId, idx: Option<i64>, val: i128) -> (String, TraceValue) {
    let info = p.var(v);
    let name = match idx {
        Some(i) => format!("{}[{}]", info.name, i),
        None => info.name.clone(),
    };
    let shown = match (info.pointer, p.show_pointer(val)) {
        (true, Some(text)) => TraceValue::Pointer(val, text.into()),
        (true, None) => TraceValue::Address(val),
        _ => TraceValue::Int(val),
    };
    (name, shown)
}

/// Whether the rest of a path depends on the indeterminate value of `v`: the value is followed
/// through assignments, parameters and results (a whole new value ends it), and the path
/// depends on it when a branch condition or an array index reads it. Copying it somewhere
/// that is overwritten before use (a by-reference parameter's copy-in) is no dependence.
fn depends_on(p: &Program, rest: &[(OpCtx, usize)], v: VarId) -> bool {
    let mut tainted: HashSet<VarId> = HashSet::from([v]);
    let mentions = |e: &Expr, t: &HashSet<VarId>| {
        let mut vs = Vec::new();
        e.vars(&mut vs);
        vs.iter().any(|x| t.contains(x))
    };
    // Assigns to `lv` a value that is tainted or not; `Err` when the index reads a tainted value.
    let assign = |lv: &LValue, taint: bool, t: &mut HashSet<VarId>| -> Result<(), ()> {
        match lv {
            LValue::Var(w) if taint => t.insert(*w),
            LValue::Var(w) => t.remove(w),
            LValue::Elem(_, i) if mentions(i, t) => return Err(()),
            LValue::Elem(a, _) if taint => t.insert(*a),
            LValue::Elem(..) => false,
        };
        Ok(())
    };
    for (op, _) in rest {
        if tainted.is_empty() {
            return false;
        }
        let step = match op.kind {
            OpKind::Edge(EdgeKind::Assume { cond, .. }) => {
                if mentions(cond, &tainted) {
                    return true;
                }
                Ok(())
            }
            OpKind::Edge(EdgeKind::Statement(st) | EdgeKind::Declaration(st)) => match st {
                Stmt::Assign(lv, e) => {
                    let taint = mentions(e, &tainted);
                    assign(lv, taint, &mut tainted)
                }
                Stmt::Input { lhs, .. } => assign(lhs, false, &mut tainted),
                Stmt::InitArray { var, .. } => {
                    tainted.remove(var);
                    Ok(())
                }
                Stmt::HavocMemory(_) | Stmt::Unsupported(_) => Ok(()),
            },
            OpKind::Edge(EdgeKind::Return(es)) => {
                let (f, _) = op.op.edge();
                for (r, e) in p.cfa(f).ret.iter().zip(es) {
                    let taint = mentions(e, &tainted);
                    let _ = assign(&LValue::Var(*r), taint, &mut tainted);
                }
                Ok(())
            }
            OpKind::Call { call, callee, .. } => {
                for (param, arg) in p.cfa(callee).params.iter().zip(&call.args) {
                    let taint = mentions(arg, &tainted);
                    let _ = assign(&LValue::Var(*param), taint, &mut tainted);
                }
                Ok(())
            }
            OpKind::Return { call, callee, .. } => {
                let mut step = Ok(());
                for (lv, r) in call.ret.iter().zip(&p.cfa(callee).ret) {
                    let taint = tainted.contains(r);
                    step = step.and(assign(lv, taint, &mut tainted));
                }
                step
            }
            OpKind::Edge(EdgeKind::Blank | EdgeKind::CallSummary(_)) => Ok(()),
        };
        if step.is_err() {
            return true;
        }
    }
    false
}

/// Turns a confirmed path (operations with their call depths) and its values into
/// user-facing steps.
pub fn trace(p: &Program, ops: &[(OpCtx, usize)], values: &[StepValues]) -> Vec<TraceStep> {
    let mut steps = Vec::new();
    for (i, (op, depth)) in ops.iter().enumerate() {
        let vals = &values[i];
        let (f, e) = op.op.edge();
        let func = p.func(f);
        let edge = func.cfa.edge(e);
        let range = func.abs(edge.span);
        if range.col == 0 {
            continue;
        }
        let (kind, hide) = match (&op.op, op.kind) {
            (_, OpKind::Edge(EdgeKind::Blank)) => (StepKind::Other, true),
            (_, OpKind::Edge(EdgeKind::Assume { truth, .. })) => (StepKind::Assume { taken: *truth }, false),
            // A declaration without initialiser is shown only when the path depends on the
            // indeterminate value (then it is an input no harness can supply).
            (_, OpKind::Edge(EdgeKind::Declaration(Stmt::Input { lhs, source: InputSource::Uninitialised }))) => {
                if depends_on(p, &ops[i + 1..], lhs.var()) {
                    (StepKind::Input, false)
                } else {
                    (StepKind::Declaration, true)
                }
            }
            (_, OpKind::Edge(EdgeKind::Statement(Stmt::Input { .. }) | EdgeKind::Declaration(Stmt::Input { .. }))) => {
                (StepKind::Input, false)
            }
            (_, OpKind::Edge(EdgeKind::Declaration(_))) => (StepKind::Declaration, false),
            (_, OpKind::Edge(_)) => (StepKind::Assign, false),
            (Op::Call(..), _) => (StepKind::Call, false),
            (Op::Return(..), _) => (StepKind::Return, false),
            _ => (StepKind::Other, false),
        };
        if hide {
            continue;
        }
        let shown: Vec<_> = match kind {
            StepKind::Assume { .. } => &vals.reads,
            _ => &vals.writes,
        }
        .iter()
        .filter(|(v, _, _)| !p.var(*v).synthetic)
        .map(|(v, i, x)| value_text(p, *v, *i, *x))
        .collect();
        let mut dedup: Vec<(String, TraceValue)> = Vec::new();
        for (n, v) in shown {
            if let Some(e) = dedup.iter_mut().find(|(m, _)| *m == n) {
                e.1 = v;
            } else {
                dedup.push((n, v));
            }
        }
        let input = match (&kind, op.kind) {
            (
                StepKind::Input,
                OpKind::Edge(EdgeKind::Statement(Stmt::Input { source, .. }) | EdgeKind::Declaration(Stmt::Input { source, .. })),
            ) => {
                let (src, origin) = match source {
                    InputSource::ExternObject(x) => (format!("extern {}", x), InputOrigin::External),
                    InputSource::External(f) => (f.clone(), InputOrigin::Unmodelled),
                    InputSource::Call(c) => (c.clone(), InputOrigin::Call),
                    InputSource::Uninitialised => ("uninitialised".into(), InputOrigin::Uninitialised),
                };
                vals.input.map(|value| TraceInput { source: src, origin, value })
            }
            _ => None,
        };
        // Steps that only move values between the builder's temporaries say nothing.
        let writes_only_temps = !vals.writes.is_empty() && vals.writes.iter().all(|(v, _, _)| p.var(*v).synthetic);
        if matches!(kind, StepKind::Assign | StepKind::Declaration) && writes_only_temps && input.is_none() {
            continue;
        }
        let text = match op.op {
            Op::Return(..) => format!("return from {}", p.cfa(edge.kind.callee().expect("call edge")).name),
            // The start function has no text of its own (global initialisers, entry arguments).
            _ if f == p.start && kind == StepKind::Input => crate::cfa::pretty::edge(p, &edge.kind),
            // `u = <uninitialised>`: the source text is only the declarator.
            _ if kind == StepKind::Input
                && matches!(edge.kind, EdgeKind::Declaration(Stmt::Input { source: InputSource::Uninitialised, .. })) =>
            {
                crate::cfa::pretty::edge(p, &edge.kind)
            }
            _ => excerpt(p, &range).unwrap_or_else(|| crate::cfa::pretty::edge(p, &edge.kind)),
        };
        steps.push(TraceStep { range, function: func.name.clone(), text, kind, values: dedup, input, depth: *depth });
    }
    steps
}

/// The condition text of a property: the assertion's string, or the helper call's argument.
pub fn prop_condition(p: &Program, prop: &Property) -> Option<String> {
    if prop.condition.is_some() {
        return prop.condition.clone();
    }
    let text = excerpt(p, &prop.range)?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    (close > open + 1).then(|| text[open + 1..close].trim().to_string())
}

/// The invariants at loop heads, as C expressions.
pub fn loop_invariants(p: &Program, inv: &Annotations, source: InvariantSource) -> Vec<FoundInvariant> {
    let mut out = Vec::new();
    for ((f, node), conj) in inv {
        let cfa = p.cfa(*f);
        if !cfa.node(*node).loop_head {
            continue;
        }
        let func = p.func(*f);
        let shown: Vec<String> = conj.iter().filter_map(|e| shown_conjunct(p, e)).collect();
        if shown.is_empty() {
            continue;
        }
        let expr = shown.join(" && ");
        out.push(FoundInvariant { func: *f, range: func.abs(cfa.node(*node).span), expr, source });
    }
    out.sort_by_key(|a| (a.range.line, a.range.col));
    out
}

/// A conjunct of an invariant as C the user wrote: a read of the memory model's arrays through
/// a pointer variable is a dereference (`__mem32[pa]` is `*pa`); a conjunct over other state
/// the front end made up (object sizes, reads at computed addresses) is left out of what is
/// shown (it still counts for the proof).
fn shown_conjunct(p: &Program, e: &Expr) -> Option<String> {
    let mut text = crate::cfa::pretty::expr(p, e, true);
    for array in crate::cfa::build::cell_arrays() {
        let class = format!("{}[", array);
        while let Some(at) = text.find(&class) {
            let rest = &text[at + class.len()..];
            let name_len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            if name_len == 0 || !rest[name_len..].starts_with(']') || rest.starts_with(|c: char| c.is_ascii_digit()) {
                return None;
            }
            let name = rest[..name_len].to_string();
            text.replace_range(at..at + class.len() + name_len + 1, &format!("*{}", name));
        }
    }
    let mut vars = Vec::new();
    e.vars(&mut vars);
    let hidden = vars.iter().any(|&v| p.var(v).synthetic && text.contains(p.var_name(v)));
    (!hidden).then_some(text)
}

/// Whether a function is one of the C library models linked into the program: its loop
/// invariants and dead code are the model's, not the user's, and are not reported.
fn in_library_model(p: &Program, f: crate::ir::FuncId) -> bool {
    crate::frontend::models::is_model_file(&p.func(f).file)
}

/// Code no explored state reaches, in functions the analysis entered.
pub fn unreachable_code(p: &Program, reached: &HashSet<Loc>) -> Vec<SrcRange> {
    let funcs: BTreeSet<_> = reached.iter().map(|l| l.func).collect();
    let mut out: Vec<SrcRange> = Vec::new();
    for f in funcs {
        if f == p.start || in_library_model(p, f) {
            continue;
        }
        let func = p.func(f);
        for e in &func.cfa.edges {
            // Blank edges carry no code; an unreachable target is a proof, not dead code.
            if e.span.col == 0 || matches!(e.kind, EdgeKind::Blank) || func.cfa.node(e.dst).target.is_some() {
                continue;
            }
            if reached.contains(&Loc { func: f, node: e.src }) {
                continue;
            }
            let r = func.abs(e.span);
            if !out.contains(&r) {
                out.push(r);
            }
        }
    }
    // Drop ranges inside others, keep source order.
    out.sort_by_key(|r| (r.line, r.col, std::cmp::Reverse((r.end_line, r.end_col))));
    let mut merged: Vec<SrcRange> = Vec::new();
    for r in out {
        if let Some(last) = merged.last() {
            let inside = (r.line, r.col) >= (last.line, last.col) && (r.end_line, r.end_col) <= (last.end_line, last.end_col);
            if inside {
                continue;
            }
        }
        merged.push(r);
    }
    merged
}

/// The trace of a long concrete run confirmed natively: its first and last steps, the
/// middle left out (as one [`StepKind::Omitted`] item), accelerated loops as one step each.
pub fn concrete_trace(p: &Program, run: &crate::concrete::Run) -> Vec<TraceStep> {
    let steps: Vec<&crate::concrete::ConcreteStep> = run.head.iter().chain(run.tail.iter()).collect();
    let mut out = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        if i == run.head.len() && !run.tail.is_empty() {
            let omitted = run.steps.saturating_sub(steps.len() as u64);
            out.push(TraceStep {
                range: SrcRange { file: p.file.clone(), line: 0, col: 0, end_line: 0, end_col: 0 },
                function: String::new(),
                text: format!("… {} operations not shown …", omitted),
                kind: StepKind::Omitted { steps: omitted },
                values: Vec::new(),
                input: None,
                depth: s.depth,
            });
        }
        let ctx = crate::cfa::op_ctx(p, s.op, s.recursive);
        if let Some(k) = s.accelerated {
            let (f, e) = s.op.edge();
            let func = p.func(f);
            let head = func.cfa.edge(e).src;
            out.push(TraceStep {
                range: func.abs(func.cfa.node(head).span),
                function: func.name.clone(),
                text: format!("the loop runs {} more iterations (accelerated)", k),
                kind: StepKind::Accelerated { iterations: k },
                values: s.values.iter().filter(|(v, _, _)| !p.var(*v).synthetic).map(|(v, i, x)| value_text(p, *v, *i, *x)).collect(),
                input: None,
                depth: s.depth,
            });
            continue;
        }
        let assume = matches!(ctx.kind, OpKind::Edge(EdgeKind::Assume { .. }));
        let values = StepValues {
            writes: if assume { Vec::new() } else { s.values.clone() },
            reads: if assume { s.values.clone() } else { Vec::new() },
            input: s.input,
        };
        out.extend(trace(p, &[(ctx, s.depth)], &[values]));
    }
    out
}

/// What the combination credits a proof to.
pub struct Credits<'a> {
    /// The configured analysis.
    pub analysis: Analysis,
    /// What the template phase found, when it ran.
    pub templates: Option<&'a TemplateCredit>,
    /// The template phase proved every property left and ended the run.
    pub all_by_templates: bool,
}

/// What the template phase of the combination found (seed 004).
pub struct TemplateCredit {
    pub proved: BTreeSet<PropertyKey>,
    pub invariants: Vec<FoundInvariant>,
    pub lp_queries: u64,
    pub value_determinations: u64,
    /// Optimisation, satisfiability and check queries.
    pub smt_queries: u64,
}

/// The analysis the template phase's proofs are credited to.
const TEMPLATES: Analysis = Analysis::Templates(TemplateMode::Ladder);

/// The report of a run from its final outcome.
pub fn assemble(p: &Program, props: &[Property], run: Outcome, credits: Credits, mut stats: Stats) -> Report {
    let mut invariants = Vec::new();
    if let Some(t) = credits.templates {
        stats.lp_queries += t.lp_queries;
        stats.value_determinations += t.value_determinations;
        stats.smt_queries += t.smt_queries;
        invariants.extend(t.invariants.iter().cloned());
    }
    invariants.extend(run.invariants.iter().cloned());
    let properties: Vec<PropertyReport> = props
        .iter()
        .map(|prop| {
            let by_templates = credits.templates.is_some_and(|t| t.proved.contains(&prop.key));
            let confirmed_by = match run.decisions.get(&prop.key) {
                Some(Decision::Violated(_, _, c)) => Some(*c),
                _ => None,
            };
            let (verdict, reason, trace, inputs) = match run.decisions.get(&prop.key) {
                Some(Decision::Violated(t, i, _)) => (Verdict::False, None, t.clone(), i.clone()),
                // Proved by the template invariants (checked inductive bit-precisely).
                _ if by_templates => (Verdict::True, None, Vec::new(), Vec::new()),
                // Proved by an earlier phase (the summary analysis).
                _ if run.proved.contains(&prop.key) => (Verdict::True, None, Vec::new(), Vec::new()),
                Some(Decision::Unknown(r)) => (Verdict::Unknown, Some(r.clone()), Vec::new(), Vec::new()),
                None => match &run.open_reason {
                    None => (Verdict::True, None, Vec::new(), Vec::new()),
                    Some(r) => (Verdict::Unknown, Some(r.clone()), Vec::new(), Vec::new()),
                },
            };
            // Credited to the template analysis where the CEGAR run alone did not prove it.
            let credited = by_templates && (credits.all_by_templates || run.open_reason.is_some() || run.decisions.contains_key(&prop.key));
            let mut r = property_report(p, prop, verdict, reason, if credited { TEMPLATES } else { credits.analysis }, trace, inputs);
            r.confirmed_by = confirmed_by;
            r
        })
        .collect();
    let mut semantics = vec![
        format!("data model {}", p.data_model.name()),
        "signed overflow modelled as wrap-around".to_string(),
        "counterexamples confirmed with a bit-precise SMT path check".to_string(),
    ];
    if !p.escaped.is_empty() {
        semantics.push("memory reached through pointers over-approximated".into());
    }
    if stats.proved_by_execution {
        semantics.push(
            "the program reads no input: its only execution, run to its end by the concrete interpreter, proves what it does not reach"
                .into(),
        );
    }
    if let Some(k) = stats.k_induction {
        semantics.push(format!(
            "k-induction (k up to {}) over the entry function's loops, its step case strengthened by the invariants shown as `k-induction`",
            k
        ));
    }
    if credits.templates.is_some() {
        semantics.push(
            "template invariants (local policy iteration) are linear constraints over mathematical integers, checked inductive bit-precisely"
                .into(),
        );
    }
    let properties = side_conditions(p, props, properties);
    Report {
        file: p.file.to_string(),
        verdict: Report::file_verdict(&properties, p.properties),
        properties,
        invariants: invariants.iter().filter(|i| !in_library_model(p, i.func)).map(|i| invariant_report(p, i)).collect(),
        unreachable: run.reached.as_ref().map(|r| unreachable_code(p, r)).unwrap_or_default(),
        analysis: credits.analysis,
        semantics,
        notes: p.notes.iter().map(|n| (n.pos.clone(), n.message.clone())).collect(),
        stats,
        precision: Some(run.precision),
    }
}

/// The report of the template analysis alone (`steps`: the ladder steps it ran).
pub fn assemble_templates(p: &Program, props: &[Property], run: Outcome, analysis: Analysis, stats: Stats, steps: &str) -> Report {
    let properties: Vec<PropertyReport> = props
        .iter()
        .map(|prop| match run.decisions.get(&prop.key) {
            Some(Decision::Unknown(r)) => property_report(p, prop, Verdict::Unknown, Some(r.clone()), analysis, Vec::new(), Vec::new()),
            _ => property_report(p, prop, Verdict::True, None, analysis, Vec::new(), Vec::new()),
        })
        .collect();
    let semantics = vec![
        format!("data model {}", p.data_model.name()),
        "signed overflow modelled as wrap-around".to_string(),
        "template invariants are linear constraints over mathematical integers, checked inductive bit-precisely".to_string(),
        format!("ladder steps run: {}", steps),
    ];
    let properties = side_conditions(p, props, properties);
    Report {
        file: p.file.to_string(),
        verdict: Report::file_verdict(&properties, p.properties),
        properties,
        invariants: run.invariants.iter().filter(|i| !in_library_model(p, i.func)).map(|i| invariant_report(p, i)).collect(),
        unreachable: Vec::new(),
        analysis,
        semantics,
        notes: p.notes.iter().map(|n| (n.pos.clone(), n.message.clone())).collect(),
        stats,
        precision: None,
    }
}

/// Out-of-bounds accesses are side conditions of the proofs after them: where one is not
/// proved impossible, a property otherwise proved that an execution may reach after the access
/// is `unknown`, naming the access (an access out of bounds is undefined behaviour; in memory
/// it may overwrite the very variables the proof is about). "After" is forward reachability
/// in the program's call graph of automata, leaving a function to every caller's return site
/// (an over-approximation of the executions, so no affected proof is kept).
fn side_conditions(p: &Program, props: &[Property], mut properties: Vec<PropertyReport>) -> Vec<PropertyReport> {
    let open: Vec<(usize, (FuncId, NodeId))> = (0..props.len())
        .filter(|&i| props[i].kind == TargetKind::OutOfBounds && properties[i].verdict != Verdict::True)
        .filter_map(|i| Some((i, target_node(p, &props[i].key, true)?)))
        .collect();
    if open.is_empty() {
        return properties;
    }
    let first = first_preceding(p, &open);
    for (i, prop) in props.iter().enumerate() {
        if prop.kind == TargetKind::OutOfBounds || properties[i].verdict != Verdict::True {
            continue;
        }
        let Some(&j) = target_node(p, &prop.key, false).and_then(|at| first.get(&at)) else { continue };
        let what = properties[j].condition.clone().unwrap_or_else(|| "array access".into());
        let range = properties[j].range.clone();
        let possible = properties[j].verdict == Verdict::False;
        properties[i].verdict = Verdict::Unknown;
        properties[i].reason = Some(UnknownReason::UndefinedBehaviour { what, range, possible });
    }
    properties
}

/// The node of a property's target, or for an out-of-bounds check (`check`), the node of the
/// access that branches to it (the target itself ends its path).
fn target_node(p: &Program, key: &PropertyKey, check: bool) -> Option<(FuncId, NodeId)> {
    let cfa = p.cfa(key.func);
    let t = cfa.node_ids().find(|&n| cfa.node(n).target == Some(key.target))?;
    if !check {
        return Some((key.func, t));
    }
    // The target hangs off the failing branch of the check (`access -> bad -> target`).
    let bad = cfa.edges.iter().find(|e| e.dst == t)?.src;
    cfa.edges.iter().find(|e| e.dst == bad).map(|e| (key.func, e.src))
}

/// For every node some access of `starts` (property index, node of the access, in source
/// order) may precede, the first such access: forward reachability through edges, calls (into
/// the callee and past the call) and returns (to every call site of the function). A node
/// reached from an earlier access is not explored again: all it reaches is labelled already,
/// so the whole labelling costs one pass over the program.
fn first_preceding(p: &Program, starts: &[(usize, (FuncId, NodeId))]) -> HashMap<(FuncId, NodeId), usize> {
    // Return sites of each function: the targets of the call edges that call it.
    let mut return_sites: HashMap<FuncId, Vec<(FuncId, NodeId)>> = HashMap::new();
    for f in p.func_ids() {
        for e in &p.cfa(f).edges {
            if let EdgeKind::CallSummary(c) = &e.kind {
                return_sites.entry(c.callee).or_default().push((f, e.dst));
            }
        }
    }
    let mut label: HashMap<(FuncId, NodeId), usize> = HashMap::new();
    for &(j, s) in starts {
        let mut stack = vec![s];
        while let Some((f, n)) = stack.pop() {
            if label.contains_key(&(f, n)) {
                continue;
            }
            label.insert((f, n), j);
            let cfa = p.cfa(f);
            if n == cfa.exit {
                stack.extend(return_sites.get(&f).into_iter().flatten().copied());
            }
            for (_, e) in cfa.out_edges(n) {
                if let EdgeKind::CallSummary(c) = &e.kind {
                    stack.push((c.callee, p.cfa(c.callee).entry));
                }
                stack.push((f, e.dst));
            }
        }
    }
    label
}

fn property_report(
    p: &Program,
    prop: &Property,
    verdict: Verdict,
    reason: Option<UnknownReason>,
    analysis: Analysis,
    trace: Vec<TraceStep>,
    inputs: Vec<(String, i128)>,
) -> PropertyReport {
    // A proof over `main`'s modelled command line holds only within the model's bounds: it is
    // not a proof of the program (soundness rule 1), so it is `unknown`, saying which bounds.
    let bounded = verdict == Verdict::True && p.notes.iter().any(|n| n.message == crate::frontend::models::args_note());
    let (verdict, reason) = match bounded {
        true => (Verdict::Unknown, Some(UnknownReason::NotProved(crate::frontend::models::args_bound()))),
        false => (verdict, reason),
    };
    // A thread, a signal handler or `longjmp` acts where the program does not say: the
    // analyses that go past an unsupported construct as a havoc at its place would miss that.
    let (verdict, reason) = match (&p.asynchronous, verdict) {
        (Some(n), Verdict::True) => {
            (Verdict::Unknown, Some(UnknownReason::Unsupported { construct: n.message.clone(), range: Some(n.pos.clone()) }))
        }
        _ => (verdict, reason),
    };
    PropertyReport {
        kind: prop.kind,
        function: p.func(prop.function).name.clone(),
        range: prop.range.clone(),
        condition: prop_condition(p, prop),
        verdict,
        reason,
        analysis,
        trace,
        inputs,
        confirmed_by: None,
    }
}

fn invariant_report(p: &Program, i: &FoundInvariant) -> InvariantReport {
    InvariantReport {
        function: p.func(i.func).name.clone(),
        range: i.range.clone(),
        expr: i.expr.clone(),
        source: i.source,
        inductive: true,
    }
}
