//! Explicit values × predicates with dynamic precision adjustment (seed 001 §4.4.5, the CPA⁺
//! configuration 𝒞1; seed 000 §III-F d): the explicit-value analysis tracks the variables
//! its refinement asked for until one shows more than a threshold of distinct values at a
//! loop head; then it stops tracking it and the predicate analysis takes over, seeded with
//! the branch conditions that mention the variable (the thesis's `InferPred`).
//!
//! Either component can be switched off: the value analysis alone (seed 000), or predicates
//! alone (the value precision then stays empty). The predicate component abstracts at loop
//! heads, function entries and exits, return sites and targets (adjustable block encoding,
//! "lf" blocks), or after every operation (single-edge blocks).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use biodivine_lib_bdd::{Bdd, BddPartialValuation, BddVariable, BddVariableSet};

use crate::analyses::predicate::precision::{PredId, PredPrecision, PredTable, MAX_PREDICATES};
use crate::analyses::predicate::predabs::{abstraction, AbsResult, Dnf};
use crate::analyses::predicate::state::{Abstraction, PredState};
use crate::analyses::value::precision::ValuePrecision;
use crate::analyses::value::state::ValueState;
use crate::analyses::value::transfer;
use crate::analyses::DataCpa;
use crate::cfa::Loc;
use crate::cfa::{EdgeKind, Program};
use crate::cfa::{OpCtx, OpKind};
use crate::core::cpa::{AbstractDomain, PrecisionStep};
use crate::core::Cancel;
use crate::ir::VarId;
use crate::smt::linpred::from_condition;

pub mod cegar;

pub use crate::config::BlockEncoding;

#[derive(Clone, Debug)]
pub struct PredicateConfig {
    pub cartesian: bool,
    pub blocks: BlockEncoding,
}

/// A state of the combination.
#[derive(Clone, Debug)]
pub struct CState {
    pub value: ValueState,
    pub pred: Option<PredState>,
}

impl AbstractDomain for CState {
    fn leq(&self, other: &Self) -> bool {
        self.value.leq(&other.value)
            && match (&self.pred, &other.pred) {
                (Some(a), Some(b)) => a.leq(b),
                (None, None) => true,
                _ => false,
            }
    }

    fn join(&self, other: &Self) -> Self {
        let pred = match (&self.pred, &other.pred) {
            (Some(a), Some(b)) if a.is_abstraction() && b.is_abstraction() => Some(PredState {
                abs: Arc::new(Abstraction {
                    region: a.abs.region.or(&b.abs.region),
                    id: a.abs.id,
                    block: a.abs.block.clone(),
                    prev: a.abs.prev.clone(),
                }),
                block: Default::default(),
            }),
            (Some(a), _) => Some(a.clone()),
            (None, _) => None,
        };
        CState { value: self.value.join(&other.value), pred }
    }
}

#[derive(Clone, Debug)]
pub struct CPrecision {
    pub value: Arc<ValuePrecision>,
    pub pred: Arc<PredPrecision>,
}

pub struct CombinedCpa<'p> {
    program: &'p Program,
    pub predicates: Option<PredicateConfig>,
    /// Distinct values at a loop head above which a variable leaves the value analysis.
    pub threshold: Option<usize>,
    pub initial: CPrecision,
    pub table: RefCell<PredTable>,
    vars: BddVariableSet,
    next_id: Cell<u64>,
    cancel: Cancel,
    /// Values seen per (loop head, variable), up to the threshold.
    seen: RefCell<HashMap<(Loc, VarId), BTreeSet<i128>>>,
    /// Variables handed over to the predicate analysis.
    abandoned: RefCell<BTreeSet<VarId>>,
    pub abstractions: Cell<u64>,
    /// The predicate precision the exploration has reached (dynamic adjustments included).
    current: RefCell<Arc<PredPrecision>>,
    merge: crate::core::cpa::MergeOp,
}

impl<'p> CombinedCpa<'p> {
    pub fn new(
        program: &'p Program,
        predicates: Option<PredicateConfig>,
        threshold: Option<usize>,
        initial: CPrecision,
        cancel: Cancel,
        merge: crate::core::cpa::MergeOp,
    ) -> Self {
        let current = RefCell::new(initial.pred.clone());
        CombinedCpa {
            current,
            merge,
            program,
            predicates,
            threshold,
            initial,
            table: RefCell::new(PredTable::default()),
            vars: BddVariableSet::new_anonymous(MAX_PREDICATES as u16),
            next_id: Cell::new(1),
            cancel,
            seen: RefCell::new(HashMap::new()),
            abandoned: RefCell::new(BTreeSet::new()),
            abstractions: Cell::new(0),
        }
    }

    /// The predicate precision including what dynamic adjustment added to `base`.
    pub fn current_predicates(&self, base: &Arc<PredPrecision>) -> Arc<PredPrecision> {
        let cur = self.current.borrow();
        if Arc::ptr_eq(&cur, base) {
            return base.clone();
        }
        let mut merged = (**base).clone();
        merged.everywhere.extend(cur.everywhere.iter().copied());
        for (f, s) in &cur.in_func {
            merged.in_func.entry(*f).or_default().extend(s.iter().copied());
        }
        Arc::new(merged)
    }

    pub fn set_predicates(&self, p: Arc<PredPrecision>) {
        *self.current.borrow_mut() = p;
    }

    pub fn is_abandoned(&self, v: VarId) -> bool {
        self.abandoned.borrow().contains(&v)
    }

    pub fn abandoned(&self) -> BTreeSet<VarId> {
        self.abandoned.borrow().clone()
    }

    fn is_abstraction_point(&self, loc: Loc) -> bool {
        let Some(cfg) = &self.predicates else { return false };
        if cfg.blocks == BlockEncoding::SingleEdge {
            return true;
        }
        let cfa = self.program.cfa(loc.func);
        let n = cfa.node(loc.node);
        n.loop_head
            || loc.node == cfa.entry
            || loc.node == cfa.exit
            || n.target.is_some()
            || n.out.iter().any(|e| matches!(cfa.edge(*e).kind, EdgeKind::Statement(crate::ir::Stmt::Unsupported(_))))
            || n.inc.iter().any(|e| matches!(cfa.edge(*e).kind, EdgeKind::CallSummary(_)))
    }

    fn to_dnf(&self, region: &Bdd) -> Dnf {
        region
            .to_optimized_dnf()
            .iter()
            .map(|c: &BddPartialValuation| c.to_values().into_iter().map(|(v, b)| (v.to_index() as PredId, b)).collect())
            .collect()
    }

    fn region_of(&self, dnf: &Dnf) -> Bdd {
        let clauses: Vec<BddPartialValuation> = dnf
            .iter()
            .map(|cube| {
                BddPartialValuation::from_values(&cube.iter().map(|&(id, b)| (BddVariable::from_index(id as usize), b)).collect::<Vec<_>>())
            })
            .collect();
        self.vars.mk_dnf(&clauses)
    }

    /// The abstraction of a state's block over the predicates of `loc`; `None` if ⊥.
    fn abstract_state(&self, s: &PredState, prec: &PredPrecision, loc: Loc) -> Option<PredState> {
        let preds: Vec<PredId> = prec.at(loc).into_iter().collect();
        let start = self.to_dnf(&s.abs.region);
        self.abstractions.set(self.abstractions.get() + 1);
        let table = self.table.borrow();
        let cartesian = self.predicates.as_ref().is_some_and(|c| c.cartesian);
        let t0 = std::time::Instant::now();
        let result = abstraction(self.program, &table, &start, &s.block, &preds, cartesian, &self.cancel);
        tracing::trace!(
            "abstraction at {:?} over {} predicates, block depth {}: {:?} in {:?}",
            loc,
            preds.len(),
            s.block.depth(),
            result,
            t0.elapsed()
        );
        let region = match result {
            AbsResult::False => return None,
            AbsResult::GaveUp => self.vars.mk_true(),
            AbsResult::Region(dnf) => self.region_of(&dnf),
        };
        if region.is_false() {
            return None;
        }
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let abs = Abstraction { region, id, block: s.block.clone(), prev: Some(s.abs.clone()) };
        Some(PredState { abs: Arc::new(abs), block: Default::default() })
    }

    /// Counts a loop head's values of tracked variables; a variable over the threshold is
    /// handed to the predicate analysis with the branch conditions that mention it.
    fn count_values(&self, s: &ValueState, loc: Loc, prec: &CPrecision) -> Option<Arc<PredPrecision>> {
        let k = self.threshold?;
        self.predicates.as_ref()?;
        if !self.program.cfa(loc.func).node(loc.node).loop_head {
            return None;
        }
        let mut newly = Vec::new();
        {
            let mut seen = self.seen.borrow_mut();
            for v in s.vars() {
                if self.is_abandoned(v) || !matches!(self.program.var(v).kind, crate::ir::VarKind::Int(_)) {
                    continue;
                }
                let Some(x) = s.get(v) else { continue };
                let set = seen.entry((loc, v)).or_default();
                if set.len() <= k {
                    set.insert(x);
                }
                if set.len() > k {
                    newly.push(v);
                }
            }
        }
        if newly.is_empty() {
            return None;
        }
        let mut pred = (*self.current_predicates(&prec.pred)).clone();
        let mut table = self.table.borrow_mut();
        for v in newly {
            self.abandoned.borrow_mut().insert(v);
            // InferPred: the branch conditions of the variable's function that mention it.
            let funcs: Vec<crate::ir::FuncId> = match v.func() {
                Some(f) => vec![f],
                None => self.program.func_ids().collect(),
            };
            for f in funcs {
                let cfa = self.program.cfa(f);
                for e in &cfa.edges {
                    if let EdgeKind::Assume { cond, truth: true } = &e.kind {
                        let mut vars = Vec::new();
                        cond.vars(&mut vars);
                        if !vars.contains(&v) {
                            continue;
                        }
                        if let Some(p) = from_condition(cond) {
                            let global_only = p.vars().all(|x| x.func().is_none());
                            if let Some(id) = table.intern(p) {
                                pred.add(Loc { func: f, node: e.src }, id, global_only);
                            }
                        }
                    }
                }
            }
        }
        let pred = Arc::new(pred);
        *self.current.borrow_mut() = pred.clone();
        Some(pred)
    }
}

impl<'p> DataCpa for CombinedCpa<'p> {
    type State = CState;
    type Precision = CPrecision;

    fn merge_op(&self) -> crate::core::cpa::MergeOp {
        self.merge
    }

    /// Inside a block, states with the same abstraction and the same explicit values are
    /// merged into one whose block has the paths of both (adjustable-block encoding with
    /// merge-join within blocks); elsewhere the configured merge of the value analysis.
    fn merge(&self, new: &CState, reached: &CState, _prec: &CPrecision, _loc: Loc) -> Option<CState> {
        match (&new.pred, &reached.pred) {
            (Some(a), Some(b)) => {
                if a.is_abstraction() || b.is_abstraction() || !Arc::ptr_eq(&a.abs, &b.abs) || a.block.leq(&b.block) {
                    return None;
                }
                if new.value != reached.value {
                    return None;
                }
                Some(CState { value: reached.value.clone(), pred: Some(PredState { abs: b.abs.clone(), block: b.block.merge(&a.block) }) })
            }
            _ => match self.merge {
                crate::core::cpa::MergeOp::Sep => None,
                crate::core::cpa::MergeOp::Join => {
                    let j = reached.join(new);
                    (!j.leq(reached)).then_some(j)
                }
            },
        }
    }

    fn initial(&self, _program: &Program) -> (CState, CPrecision) {
        let pred = self.predicates.as_ref().map(|_| PredState {
            abs: Arc::new(Abstraction { region: self.vars.mk_true(), id: 0, block: Default::default(), prev: None }),
            block: Default::default(),
        });
        (CState { value: ValueState::default(), pred }, self.initial.clone())
    }

    fn transfer(&self, program: &Program, state: &CState, _prec: &CPrecision, op: &OpCtx) -> Option<CState> {
        let value = transfer::successor(program, &state.value, op)?;
        let pred = state.pred.as_ref().map(|p| {
            let recursive = match op.kind {
                OpKind::Call { recursive, .. } | OpKind::Return { recursive, .. } => recursive,
                OpKind::Edge(_) => false,
            };
            PredState { abs: p.abs.clone(), block: p.block.step(op.op, recursive) }
        });
        Some(CState { value, pred })
    }

    fn adjust_precision(&self, mut state: CState, prec: CPrecision, loc: Loc) -> PrecisionStep<CState, CPrecision> {
        let prec = match self.count_values(&state.value, loc, &prec) {
            Some(p) => CPrecision { value: prec.value.clone(), pred: p },
            None => prec,
        };
        if !prec.value.full {
            let abandoned = self.abandoned.borrow();
            state.value.restrict(|v| prec.value.tracks(loc, v) && !abandoned.contains(&v));
        }
        if let Some(p) = &state.pred {
            if self.is_abstraction_point(loc) {
                match self.abstract_state(p, &prec.pred, loc) {
                    Some(a) => state.pred = Some(a),
                    None => return PrecisionStep::Bottom,
                }
            }
        }
        PrecisionStep::Continue(state, prec)
    }
}
