//! The CPA framework (seed 001 ch. 3-4, seed 000 §II): the configurable-program-analysis
//! interface, the abstract reachability graph, waitlist orders and the CPA+ algorithm.
//!
//! Architecture invariant: this module knows nothing of C syntax or of any particular
//! analysis; it sees states, precisions and the operations of the interprocedural CFA.

pub mod algorithm;
pub mod arg;
pub mod cpa;
pub mod waitlist;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::cfa::EdgeId;
use crate::ir::FuncId;

/// An operation of the interprocedural CFA, as the ARG records it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// An edge of a function's CFA (never a call-summary edge).
    Edge(FuncId, EdgeId),
    /// From a call-summary edge's source into the callee's entry (parameter passing).
    Call(FuncId, EdgeId),
    /// From the callee's exit to the call-summary edge's target (result passing).
    Return(FuncId, EdgeId),
}

impl Op {
    /// The caller-side CFA edge the operation belongs to.
    pub fn edge(self) -> (FuncId, EdgeId) {
        match self {
            Op::Edge(f, e) | Op::Call(f, e) | Op::Return(f, e) => (f, e),
        }
    }
}

/// Why an analysis stopped before its fixpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Interrupt {
    Cancelled,
    Timeout,
    /// A resource limit (states, refinements, memory) with its description.
    Limit(String),
}

impl Interrupt {
    pub fn describe(&self) -> String {
        match self {
            Interrupt::Cancelled => "cancelled".into(),
            Interrupt::Timeout => "timeout".into(),
            Interrupt::Limit(s) => s.clone(),
        }
    }
}

/// Cooperative cancellation: a flag another thread may set, and an optional deadline.
#[derive(Clone, Debug, Default)]
pub struct Cancel {
    flag: Arc<AtomicBool>,
    deadline: Option<Instant>,
}

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }

    pub fn with_deadline(deadline: Instant) -> Cancel {
        Cancel { flag: Arc::default(), deadline: Some(deadline) }
    }

    /// A token cancelled with this one, with a deadline that is the earlier of both.
    pub fn child(&self, deadline: Option<Instant>) -> Cancel {
        let d = match (self.deadline, deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Cancel { flag: self.flag.clone(), deadline: d }
    }

    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// `Err` once cancelled or past the deadline.
    pub fn check(&self) -> Result<(), Interrupt> {
        if self.is_cancelled() {
            return Err(Interrupt::Cancelled);
        }
        if let Some(d) = self.deadline {
            if Instant::now() >= d {
                return Err(Interrupt::Timeout);
            }
        }
        Ok(())
    }

    /// Milliseconds left before the deadline (for solver timeouts).
    pub fn remaining_ms(&self) -> Option<u64> {
        self.deadline.map(|d| d.saturating_duration_since(Instant::now()).as_millis() as u64)
    }
}
