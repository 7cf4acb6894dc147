//! The watchdog of `cpals check`: the run ends at its time limit plus a short grace whatever
//! the analysis does (a solver that hangs and never sees its interrupt), printing every property
//! as `unknown` (timeout); and the progress line shown while a run lasts, on a terminal only.
//!
//! `--timeout` limits CPU time (the engine stops itself there), so a verdict does not depend on
//! how busy the machine is. The watchdog measures wall-clock time: once the limit plus the grace
//! has passed it ends the run if the run has used its CPU time by then, or if it has stopped
//! using CPU (blocked: a deadlock in the solver, a child that does not end); in any case at
//! [`HARD_FACTOR`] times the limit plus the grace (a run that only trickles along).

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use analysis_engine::core::Clock;

/// Wall-clock time the watchdog grants after the limit.
pub const GRACE: Duration = Duration::from_secs(2);

/// A run using less CPU than this over the last [`WINDOW`] counts as stopped (a deadlocked run
/// uses none; a run on a machine as busy as 10 processes per core still gets about 10 %).
const IDLE_CPU: Duration = Duration::from_millis(20);
const WINDOW: Duration = Duration::from_secs(1);

/// The wall-clock bound of a run that keeps using a little CPU: this many times the limit,
/// plus the grace.
pub const HARD_FACTOR: u32 = 4;

/// How often the watchdog looks.
const TICK: Duration = Duration::from_millis(50);

/// When the watchdog ends a run.
#[derive(Copy, Clone, Debug)]
pub struct Limits {
    /// The CPU-time limit of the run.
    pub limit: Duration,
    pub grace: Duration,
}

impl Limits {
    /// Whether a run that started `wall` ago, has used `cpu`, and `recent` of it over the last
    /// [`WINDOW`] of wall-clock time (`None` before a whole window has passed) is over its time.
    pub fn overdue(&self, wall: Duration, cpu: Duration, recent: Option<Duration>) -> bool {
        if wall >= self.limit * HARD_FACTOR + self.grace {
            return true;
        }
        wall >= self.limit + self.grace && (cpu >= self.limit || recent.is_some_and(|r| r < IDLE_CPU))
    }
}

/// What the watchdog prints when it ends a run, and the exit code it ends it with.
pub type Fallback = Box<dyn FnOnce() -> i32 + Send>;

enum State {
    /// The run goes on; the fallback is set once the program is loaded.
    Running(Option<Fallback>),
    /// The run printed its own result.
    Finished,
    /// The watchdog is ending the run.
    Fired,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

pub struct Watchdog {
    shared: Arc<Shared>,
    progress: bool,
}

impl Watchdog {
    /// Starts the watchdog of a run that began at `started`. `before_load` is what it prints
    /// (to stderr) if it ends the run before [`Watchdog::arm`]; `label` names the run on the
    /// progress line, which is drawn only when stderr is a terminal.
    pub fn start(limits: Limits, started: Instant, label: String, before_load: Fallback) -> Watchdog {
        Watchdog::start_with(limits, started, label, before_load, Box::new(exit_now))
    }

    /// [`Watchdog::start`] with what is done after the fallback ran (tests: not exiting).
    fn start_with(limits: Limits, started: Instant, label: String, before_load: Fallback, end: Box<dyn FnOnce(i32) + Send>) -> Watchdog {
        let shared = Arc::new(Shared { state: Mutex::new(State::Running(None)), wake: Condvar::new() });
        let progress = std::io::stderr().is_terminal();
        let s = shared.clone();
        let spawned = std::thread::Builder::new().name("cpals-watchdog".into()).spawn(move || {
            let mut samples: std::collections::VecDeque<(Duration, Duration)> = std::collections::VecDeque::new();
            let mut shown = 0u64;
            loop {
                let state = s.state.lock().unwrap_or_else(|e| e.into_inner());
                let (state, _) = s.wake.wait_timeout(state, TICK).unwrap_or_else(|e| e.into_inner());
                if !matches!(*state, State::Running(_)) {
                    return;
                }
                drop(state);
                let (wall, cpu) = (started.elapsed(), Clock::ProcessCpu.now());
                samples.push_back((wall, cpu));
                while samples.len() > 1 && samples[1].0 + WINDOW <= wall {
                    samples.pop_front();
                }
                let recent = samples.front().filter(|(w, _)| *w + WINDOW <= wall).map(|&(_, c)| cpu.saturating_sub(c));
                if limits.overdue(wall, cpu, recent) {
                    let mut state = s.state.lock().unwrap_or_else(|e| e.into_inner());
                    let fallback = match std::mem::replace(&mut *state, State::Fired) {
                        State::Running(f) => f,
                        // The run finished meanwhile: it prints its own result.
                        other => {
                            *state = other;
                            return;
                        }
                    };
                    drop(state);
                    if progress {
                        clear_line();
                    }
                    let code = match fallback {
                        Some(f) => f(),
                        None => before_load(),
                    };
                    end(code);
                    return;
                }
                if progress && wall.as_secs() > shown {
                    shown = wall.as_secs();
                    let mut err = std::io::stderr().lock();
                    let _ = write!(
                        err,
                        "\r\x1b[Kcpals: verifying {label}: {} s, {:.0} s of CPU time of {} s",
                        shown,
                        cpu.as_secs_f64(),
                        limits.limit.as_secs_f64()
                    );
                    let _ = err.flush();
                }
            }
        });
        if let Err(e) = spawned {
            eprintln!("cpals: cannot start the watchdog ({e}); the time limit relies on the analysis alone");
        }
        Watchdog { shared, progress }
    }

    /// Sets what the watchdog prints if it ends the run from now on (the program is loaded).
    pub fn arm(&self, fallback: Fallback) {
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        if let State::Running(f) = &mut *state {
            *f = Some(fallback);
        }
    }

    /// The run is over and prints its own result: true, unless the watchdog is ending it (then
    /// the caller must print nothing; the watchdog exits the process).
    pub fn finish(&self) -> bool {
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        if let State::Fired = *state {
            return false;
        }
        *state = State::Finished;
        drop(state);
        self.shared.wake.notify_all();
        if self.progress {
            clear_line();
        }
        true
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.finish();
    }
}

fn clear_line() {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[K");
    let _ = err.flush();
}

/// Ends the process at once: flushes what was printed, then `_exit`, so that no destructor or
/// exit handler runs (the solver's may wait for a lock the hung thread holds).
fn exit_now(code: i32) {
    let _ = std::io::stdout().lock().flush();
    let _ = std::io::stderr().lock().flush();
    // SAFETY: `_exit` ends the process; nothing runs after it.
    unsafe { libc::_exit(code) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn a_run_ends_at_the_limit_plus_the_grace_if_it_used_its_time_or_stopped() {
        let l = Limits { limit: 2 * SECOND, grace: 2 * SECOND };
        let busy = Some(SECOND);
        // Before the limit plus the grace, never (unless far past the limit).
        assert!(!l.overdue(3 * SECOND, 3 * SECOND, busy));
        assert!(!l.overdue(3 * SECOND, Duration::ZERO, Some(Duration::ZERO)));
        // After it: a run that used its CPU time, or that is idle (hangs).
        assert!(l.overdue(4 * SECOND, 2 * SECOND, busy));
        assert!(l.overdue(4 * SECOND, SECOND, Some(Duration::ZERO)));
        // A run that works on a busy machine has its CPU time left...
        assert!(!l.overdue(5 * SECOND, SECOND, Some(SECOND / 4)));
        // ...up to the hard bound.
        assert!(l.overdue(10 * SECOND, SECOND, Some(SECOND / 4)));
    }

    /// A run blocked for good (as in a solver deadlock) is ended at the limit plus the grace,
    /// with the fallback the run armed.
    #[test]
    fn a_blocked_run_is_ended_with_its_fallback() {
        let limits = Limits { limit: Duration::from_millis(300), grace: Duration::from_millis(200) };
        let (tx, rx) = channel();
        let started = Instant::now();
        let dog = Watchdog::start_with(limits, started, "t.c".into(), Box::new(|| 9), Box::new(move |code| tx.send(code).unwrap()));
        dog.arm(Box::new(|| 2));
        // This thread "hangs": it waits and uses no CPU.
        let code = rx.recv_timeout(10 * SECOND).expect("the watchdog fired");
        assert_eq!(code, 2);
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(500) && took < 5 * SECOND, "fired after {took:?}");
        assert!(!dog.finish(), "a run the watchdog ended prints nothing more");
    }

    #[test]
    fn a_run_that_finishes_in_time_is_left_alone() {
        let limits = Limits { limit: Duration::from_millis(100), grace: Duration::from_millis(100) };
        let (tx, rx) = channel();
        let dog = Watchdog::start_with(limits, Instant::now(), "t.c".into(), Box::new(|| 9), Box::new(move |code| tx.send(code).unwrap()));
        assert!(dog.finish());
        assert!(rx.recv_timeout(2 * SECOND).is_err(), "the watchdog of a finished run never fires");
    }
}
