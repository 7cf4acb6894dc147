//! The SMT layer: the only module that imports z3 (system Z3 4.8.12 through the `z3` crate,
//! which keeps one context per thread). It encodes C's machine-integer semantics as
//! bit-vectors and answers path queries.

pub mod block;
pub mod dag;
pub mod encode;
pub mod external;
pub mod interpolate;
pub mod linear;
pub mod linpred;
pub mod path;

use z3::{Params, SatResult, Solver};

use crate::core::Cancel;

/// Default limit for one query when no deadline is closer.
pub const QUERY_TIMEOUT_MS: u64 = 10_000;

/// A solver with a timeout derived from the cancellation token's deadline.
pub fn solver(cancel: &Cancel, limit_ms: u64) -> Solver {
    let s = Solver::new();
    s.set_params(&timeout(cancel, limit_ms));
    s
}

/// Parameters with a timeout of `limit_ms` or the time `cancel` has left, whichever is less.
fn timeout(cancel: &Cancel, limit_ms: u64) -> Params {
    let ms = cancel.remaining_ms().map_or(limit_ms, |r| r.min(limit_ms)).max(1);
    let mut p = Params::new();
    p.set_u32("timeout", ms.min(u32::MAX as u64) as u32);
    p
}

/// Z3's resource units per millisecond of one of its queries, roughly (measured on Z3 4.8.12
/// over the bit-vector queries of `invariants`: 4 000 to 5 000).
pub const RLIMIT_PER_MS: u64 = 5_000;

/// A solver whose queries are bounded by work rather than time: about `work_ms` of Z3's own
/// work (its resource limit), so that an answer does not depend on how busy the machine is;
/// the deadline, and twenty times `work_ms` of wall-clock time (a query that ends by its work
/// takes about `work_ms` alone, and several times that on a busy machine), still end a query
/// whose work Z3 does not count.
pub fn solver_by_work(cancel: &Cancel, work_ms: u64) -> Solver {
    let s = Solver::new();
    let mut p = timeout(cancel, work_ms.saturating_mul(20));
    p.set_u32("rlimit", work_ms.saturating_mul(RLIMIT_PER_MS).min(u32::MAX as u64) as u32);
    s.set_params(&p);
    s
}

/// The outcome of a satisfiability query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sat {
    Sat,
    Unsat,
    Unknown(String),
}

pub fn check(s: &Solver) -> Sat {
    match s.check() {
        SatResult::Sat => Sat::Sat,
        SatResult::Unsat => Sat::Unsat,
        SatResult::Unknown => Sat::Unknown(s.get_reason_unknown().unwrap_or_else(|| "unknown".into())),
    }
}

/// Runs `f` on this thread while a watcher interrupts this thread's Z3 context as soon as
/// `cancel` is cancelled or its deadline has passed, so that a long query (including the
/// ones that ignore their own timeout, such as Spacer's) returns `unknown` at once (the
/// analyses check the token between queries).
pub fn interruptible<R>(cancel: &Cancel, f: impl FnOnce() -> R) -> R {
    use std::sync::atomic::{AtomicBool, Ordering};
    let ctx = z3::Context::thread_local();
    let handle = ctx.handle();
    let done = AtomicBool::new(false);
    /// Stops the watcher when `f` returns or unwinds: a panic in `f` must reach the caller,
    /// not leave the scope waiting for a watcher that never ends.
    struct Stop<'a>(&'a AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
        }
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Acquire) {
                if cancel.check().is_err() {
                    handle.interrupt();
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        });
        let _stop = Stop(&done);
        f()
    })
}

/// The Z3 version string (for `cpals --version` and reports).
pub fn z3_version() -> String {
    z3::full_version().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic inside `interruptible` reaches the caller (it used to leave the scope waiting
    /// for the watcher forever: a run that hung with no CPU use).
    #[test]
    fn a_panic_inside_interruptible_reaches_the_caller() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(|| interruptible(&Cancel::new(), || panic!("inside")));
            let _ = tx.send(r.is_err());
        });
        assert_eq!(rx.recv_timeout(std::time::Duration::from_secs(30)), Ok(true));
    }
}
