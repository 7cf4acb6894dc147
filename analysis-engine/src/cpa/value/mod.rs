//! Explicit-value analysis with CEGAR (seed 000: Beyer & Löwe, "Explicit-Value Analysis Based
//! on CEGAR and Interpolation", §II-B and §III): the CPA `C` with merge-sep, stop-sep and the
//! precision operator `prec(v, π) = v|π` over per-location precisions.

pub mod interpolation;
pub mod precision;
pub mod state;
pub mod transfer;

use std::sync::Arc;

use crate::cfa::Program;
use crate::core::cpa::{MergeOp, PrecisionStep};
use crate::cpa::location::Loc;
use crate::cpa::{DataCpa, OpCtx};
use precision::ValuePrecision;
use state::ValueState;

pub struct ValueCpa {
    pub initial_precision: Arc<ValuePrecision>,
    /// Merge-sep (the paper's explicit-value CPA) or merge-join (constant propagation as a
    /// data-flow analysis, seed 001 §3.2.2).
    pub merge: MergeOp,
}

impl DataCpa for ValueCpa {
    type State = ValueState;
    type Precision = Arc<ValuePrecision>;

    fn initial(&self, _program: &Program) -> (ValueState, Arc<ValuePrecision>) {
        (ValueState::default(), self.initial_precision.clone())
    }

    fn transfer(&self, program: &Program, state: &ValueState, _prec: &Self::Precision, op: &OpCtx) -> Option<ValueState> {
        transfer::successor(program, state, op)
    }

    fn merge_op(&self) -> MergeOp {
        self.merge
    }

    fn adjust_precision(&self, mut state: ValueState, prec: Self::Precision, loc: Loc) -> PrecisionStep<ValueState, Self::Precision> {
        if !prec.full {
            state.restrict(|v| prec.tracks(loc, v));
        }
        PrecisionStep::Continue(state, prec)
    }
}
