//! The CPA framework (seed 001 ch. 3-4, seed 000 §II): the configurable-program-analysis
//! interface, the abstract reachability graph, waitlist orders and the CPA+ algorithm.
//!
//! Architecture invariant: this module knows nothing of C syntax or of any particular
//! analysis; it sees states, precisions and the operations of the interprocedural CFA.

pub mod algorithm;
pub mod arg;
pub mod cegar;
pub mod cpa;
pub mod waitlist;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use crate::cfa::Op;

/// Why an analysis stopped before its fixpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Interrupt {
    Cancelled,
    Timeout,
    /// A resource limit (states, refinements, memory).
    Limit(Limit),
}

impl Interrupt {
    pub fn describe(&self) -> String {
        match self {
            Interrupt::Cancelled => "cancelled".into(),
            Interrupt::Timeout => "timeout".into(),
            Interrupt::Limit(l) => l.to_string(),
        }
    }
}

/// A resource limit that stopped an analysis.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Limit {
    #[error("memory limit reached ({mb} MB)")]
    Memory { mb: u64 },
    #[error("state limit reached ({0} abstract states)")]
    States(usize),
    #[error("more than {0} refinements")]
    Refinements(u64),
    #[error("more than {0} predicates")]
    Predicates(usize),
    /// Any other bound of an analysis (its text names it).
    #[error("{0}")]
    Bound(String),
}

/// Which clock a [`Cancel`]'s deadline is measured on.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Clock {
    /// Wall-clock time (the editor's latency budget).
    #[default]
    Wall,
    /// CPU time of the whole process (`cpals check --timeout`, as SV-COMP and BenchExec
    /// limit it): a verdict does not depend on how busy the machine is.
    ProcessCpu,
}

impl Clock {
    /// The clock's reading.
    pub fn now(self) -> Duration {
        match self {
            Clock::Wall => {
                static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
                EPOCH.get_or_init(Instant::now).elapsed()
            }
            Clock::ProcessCpu => {
                let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                // SAFETY: `ts` is a valid out-pointer; the call only writes to it.
                let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
                if rc != 0 {
                    return Clock::Wall.now();
                }
                Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
            }
        }
    }
}

/// Cooperative cancellation: a flag another thread may set, and an optional deadline on
/// a [`Clock`] that the tokens derived from it share.
#[derive(Clone, Debug, Default)]
pub struct Cancel {
    flag: Arc<AtomicBool>,
    clock: Clock,
    /// The clock's reading at which the work times out.
    deadline: Option<Duration>,
}

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// A token whose deadlines are measured in the process's CPU time.
    pub fn on_cpu_time() -> Cancel {
        Cancel { clock: Clock::ProcessCpu, ..Cancel::default() }
    }

    /// A wall-clock token that times out at `deadline`.
    pub fn with_deadline(deadline: Instant) -> Cancel {
        let left = deadline.saturating_duration_since(Instant::now());
        Cancel { flag: Arc::default(), clock: Clock::Wall, deadline: Some(Clock::Wall.now() + left) }
    }

    /// A token cancelled with this one, on the same clock, timing out after `budget` (from
    /// now) or at this one's deadline, whichever comes first.
    pub fn child(&self, budget: Option<Duration>) -> Cancel {
        let own = budget.map(|b| self.clock.now() + b);
        let d = match (self.deadline, own) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Cancel { flag: self.flag.clone(), clock: self.clock, deadline: d }
    }

    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// `Err` once cancelled or past the deadline.
    pub fn check(&self) -> Result<(), Interrupt> {
        if self.is_cancelled() {
            return Err(Interrupt::Cancelled);
        }
        if let Some(d) = self.deadline {
            if self.clock.now() >= d {
                return Err(Interrupt::Timeout);
            }
        }
        Ok(())
    }

    /// Milliseconds left before the deadline (for solver timeouts).
    pub fn remaining_ms(&self) -> Option<u64> {
        self.deadline.map(|d| d.saturating_sub(self.clock.now()).as_millis() as u64)
    }
}
