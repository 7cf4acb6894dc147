//! The composite CPA (seed 001 §2.6, §3.4): location × call stack × a data analysis, with the
//! direct-product domain, component-wise merge and stop, and the data analysis's precision.
//! It also decides which states are targets: a target node whose property is still open, and
//! two pseudo-targets whose paths CEGAR checks like an error path's: a call beyond the recursion
//! bound, and a state about to take a construct cpals does not model (an infeasible path to it
//! is refined away; a feasible one makes the exploration incomplete).

use crate::core::Limit;
use crate::report::UnknownReason;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};

use crate::analyses::callstack::{CallStack, CallStackCpa, Push};
use crate::analyses::location::LocationCpa;
use crate::analyses::DataCpa;
use crate::cfa::Loc;
use crate::cfa::{EdgeKind, Program};
use crate::cfa::{OpCtx, OpKind};
use crate::core::arg::ArgId;
use crate::core::cpa::{Cpa, PrecisionStep};
use crate::core::Op;

use crate::ir::Stmt;
use crate::properties::PropertyKey;

#[derive(Clone, Debug)]
pub struct CompositeState<D> {
    pub loc: Loc,
    pub stack: CallStack,
    pub data: D,
    /// The call that led here exceeded the recursion bound: the state is not expanded, and
    /// (unless the path to it is refuted) the analysis is incomplete.
    pub too_deep: bool,
}

pub struct CompositeCpa<'p, D: DataCpa> {
    pub program: &'p Program,
    pub location: LocationCpa<'p>,
    pub callstack: CallStackCpa<'p>,
    pub data: D,
    /// Properties already violated or given up on: their target states are ordinary states.
    decided: RefCell<HashSet<PropertyKey>>,
    /// Why the exploration may have missed behaviours (each makes open properties unknown).
    /// Why the exploration is incomplete, keyed (and ordered) by the reason's text.
    incomplete: RefCell<BTreeMap<String, UnknownReason>>,
    /// Deep recursion was found feasible: states beyond the bound are no longer targets.
    recursion_bound_feasible: std::cell::Cell<bool>,
    /// Locations before an unsupported construct whose path was not refuted: their states are
    /// no longer targets (the exploration is already incomplete).
    unsupported_reached: RefCell<HashSet<Loc>>,
}

impl<'p, D: DataCpa> CompositeCpa<'p, D> {
    pub fn new(program: &'p Program, data: D, max_depth: usize) -> Self {
        CompositeCpa {
            program,
            location: LocationCpa { program },
            callstack: CallStackCpa { program, max_depth },
            data,
            decided: RefCell::new(HashSet::new()),
            incomplete: RefCell::new(BTreeMap::new()),
            recursion_bound_feasible: std::cell::Cell::new(false),
            unsupported_reached: RefCell::new(HashSet::new()),
        }
    }

    /// Why a location's outgoing edge is not modelled, if it has such an edge.
    pub fn unsupported_at(&self, loc: Loc) -> Option<UnknownReason> {
        let func = self.program.func(loc.func);
        func.cfa.node(loc.node).out.iter().find_map(|&e| match &func.cfa.edge(e).kind {
            EdgeKind::Statement(Stmt::Unsupported(what)) => {
                Some(UnknownReason::Unsupported { construct: what.to_string(), range: Some(func.abs(func.cfa.edge(e).span)) })
            }
            _ => None,
        })
    }

    /// The path to a state before an unsupported construct could not be refuted: the
    /// exploration is incomplete, and states there are no longer targets.
    pub fn unsupported_reached(&self, loc: Loc) {
        if let Some(why) = self.unsupported_at(loc) {
            self.incomplete(why);
        }
        self.unsupported_reached.borrow_mut().insert(loc);
    }

    /// A state about to take an unsupported construct, not yet known to be reachable.
    fn is_unsupported_target(&self, s: &CompositeState<D::State>) -> bool {
        !s.too_deep && self.unsupported_at(s.loc).is_some() && !self.unsupported_reached.borrow().contains(&s.loc)
    }

    /// The path to a state beyond the recursion bound could not be refuted.
    pub fn recursion_bound_reached(&self) {
        self.recursion_bound_feasible.set(true);
        self.incomplete(UnknownReason::Limit(Limit::Bound(format!(
            "recursion deeper than {} calls was not explored",
            self.callstack.max_depth
        ))));
    }

    pub fn decide(&self, key: PropertyKey) {
        self.decided.borrow_mut().insert(key);
    }

    pub fn is_decided(&self, key: &PropertyKey) -> bool {
        self.decided.borrow().contains(key)
    }

    pub fn incomplete(&self, why: UnknownReason) {
        self.incomplete.borrow_mut().entry(why.to_string()).or_insert(why);
    }

    pub fn incompleteness(&self) -> Vec<UnknownReason> {
        self.incomplete.borrow().values().cloned().collect()
    }

    /// The property a state's location violates, if it is a target node.
    pub fn property_of(&self, s: &CompositeState<D::State>) -> Option<PropertyKey> {
        let cfa = self.program.cfa(s.loc.func);
        let t = cfa.node(s.loc.node).target?;
        let site = if cfa.assert_helper { s.stack.top() } else { None };
        Some(PropertyKey { func: s.loc.func, target: t, site })
    }

    /// The operation's context when taken from `from` (recursion flags from its stack).
    pub fn op_ctx(&self, op: Op, from: &CompositeState<D::State>, to: Loc) -> OpCtx<'p> {
        let recursive = match op {
            Op::Edge(..) => false,
            Op::Call(f, e) => {
                let callee = self.program.cfa(f).edge(e).kind.callee().expect("call edge");
                from.loc.func == callee || self.callstack.is_active(&from.stack, callee)
            }
            // The same condition as at the matching call: the callee was already active.
            Op::Return(f, e) => {
                let callee = self.program.cfa(f).edge(e).kind.callee().expect("call edge");
                self.callstack.is_active(&from.stack, callee)
            }
        };
        let mut ctx = crate::cfa::op_ctx(self.program, op, recursive);
        ctx.from = from.loc;
        ctx.to = to;
        ctx
    }

    /// All successors of a state with their operations (control flow only); the flag marks
    /// calls beyond the recursion bound.
    pub fn control_successors(&self, s: &CompositeState<D::State>, out: &mut Vec<(Op, Loc, CallStack, bool)>) {
        if s.too_deep {
            return;
        }
        if self.location.is_exit(s.loc) {
            if let Some((caller, edge)) = s.stack.top() {
                let dst = self.program.cfa(caller).edge(edge).dst;
                out.push((Op::Return(caller, edge), Loc { func: caller, node: dst }, s.stack.pop(), false));
            }
            return;
        }
        let mut locs = Vec::new();
        self.location.successors(s.loc, &mut locs);
        for (op, to) in locs {
            match op {
                Op::Call(f, e) => match self.callstack.call(&s.stack, (f, e)) {
                    Push::Ok(stack) => out.push((op, to, stack, false)),
                    Push::TooDeep(stack) => {
                        if self.recursion_bound_feasible.get() {
                            continue;
                        }
                        out.push((op, to, stack, true))
                    }
                },
                _ => out.push((op, to, s.stack.clone(), false)),
            }
        }
    }
}

impl<'p, D: DataCpa> Cpa for CompositeCpa<'p, D> {
    type State = CompositeState<D::State>;
    type Precision = D::Precision;
    type Key = (Loc, CallStack);

    fn initial(&self) -> (Self::State, Self::Precision) {
        let (d, p) = self.data.initial(self.program);
        (CompositeState { loc: self.location.initial(), stack: CallStack::default(), data: d, too_deep: false }, p)
    }

    fn partition(&self, s: &Self::State) -> Self::Key {
        (s.loc, s.stack.clone())
    }

    fn transfer(&self, s: &Self::State, prec: &Self::Precision, out: &mut Vec<(Self::State, Op)>) {
        let mut ctrl = Vec::new();
        self.control_successors(s, &mut ctrl);
        for (op, to, stack, too_deep) in ctrl {
            let ctx = self.op_ctx(op, s, to);
            if let OpKind::Edge(EdgeKind::Statement(Stmt::Unsupported(what))) = ctx.kind {
                let (f, e) = op.edge();
                let func = self.program.func(f);
                let range = Some(func.abs(func.cfa.edge(e).span));
                self.incomplete(UnknownReason::Unsupported { construct: what.to_string(), range });
            }
            if let Some(d) = self.data.transfer(self.program, &s.data, prec, &ctx) {
                out.push((CompositeState { loc: to, stack, data: d, too_deep }, op));
            }
        }
    }

    fn merge(&self, new: &Self::State, reached: &Self::State, prec: &Self::Precision) -> Option<Self::State> {
        self.data.merge(&new.data, &reached.data, prec, new.loc).map(|d| CompositeState {
            loc: new.loc,
            stack: new.stack.clone(),
            data: d,
            too_deep: new.too_deep,
        })
    }

    fn stop(&self, s: &Self::State, reached: &[(ArgId, &Self::State)], _prec: &Self::Precision) -> Option<ArgId> {
        let same: Vec<(ArgId, &D::State)> =
            reached.iter().filter(|(_, r)| r.too_deep == s.too_deep).map(|(id, r)| (*id, &r.data)).collect();
        self.data.covering(&s.data, &same)
    }

    fn adjust_precision(&self, s: Self::State, prec: Self::Precision) -> PrecisionStep<Self::State, Self::Precision> {
        let CompositeState { loc, stack, data, too_deep } = s;
        match self.data.adjust_precision(data, prec, loc) {
            PrecisionStep::Continue(d, p) => PrecisionStep::Continue(CompositeState { loc, stack, data: d, too_deep }, p),
            PrecisionStep::Break(d, p, why) => PrecisionStep::Break(CompositeState { loc, stack, data: d, too_deep }, p, why),
            PrecisionStep::Bottom => PrecisionStep::Bottom,
        }
    }

    fn is_target(&self, s: &Self::State) -> bool {
        if s.too_deep {
            return !self.recursion_bound_feasible.get();
        }
        match self.property_of(s) {
            Some(k) if !self.is_decided(&k) => true,
            _ => self.is_unsupported_target(s),
        }
    }

    fn priority(&self, s: &Self::State) -> u64 {
        // Deeper call stacks first, then the CFA's topological order.
        let depth = u32::MAX - s.stack.depth() as u32;
        ((depth as u64) << 32) | self.location.rpo(s.loc) as u64
    }
}
