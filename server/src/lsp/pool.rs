//! The worker threads that run verification jobs. A thread is started only when no idle one
//! is left (so there are never more threads than jobs ever ran at once, which the scheduler
//! bounds by the `workers` setting), and it lives on: Z3 keeps one context per thread, so a
//! long-lived thread starts each job with a warm solver context and memory stays bounded
//! (a pool that retires and replaces threads would build a new context each time).

use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Stack of a worker thread (the analyses recurse over expressions).
const STACK: usize = 64 << 20;

#[derive(Clone, Default)]
pub struct Pool {
    free: Arc<Mutex<Vec<Sender<Job>>>>,
}

impl Pool {
    /// Runs `job` on an idle worker thread, or on a new one, then `job`'s result (after the
    /// thread is back in the pool, so that whatever it triggers finds the thread free). The job
    /// must not panic (jobs catch their own panics).
    pub fn spawn<F, A>(&self, job: F)
    where
        F: FnOnce() -> A + Send + 'static,
        A: FnOnce(),
    {
        let tx = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let tx = match tx {
            Some(tx) => tx,
            None => match start_thread() {
                Some(tx) => tx,
                None => {
                    // No thread could be started: run where we are rather than lose the job.
                    tracing::error!("cannot start a worker thread; running the job inline");
                    job()();
                    return;
                }
            },
        };
        let free = self.free.clone();
        let back = tx.clone();
        let _ = tx.send(Box::new(move || {
            let then = job();
            free.lock().unwrap_or_else(|e| e.into_inner()).push(back);
            then();
        }));
    }

    /// Worker threads started so far.
    pub fn idle(&self) -> usize {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

fn start_thread() -> Option<Sender<Job>> {
    let (tx, rx) = channel::<Job>();
    std::thread::Builder::new()
        .name("cpals-verify".into())
        .stack_size(STACK)
        .spawn(move || {
            for job in rx {
                job();
            }
        })
        .ok()?;
    Some(tx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_reused() {
        let pool = Pool::default();
        let (tx, rx) = channel();
        for _ in 0..5 {
            let tx = tx.clone();
            let id = std::thread::current().id();
            let _ = id;
            pool.spawn(move || move || tx.send(std::thread::current().id()).unwrap());
            // One job at a time: the thread is back in the pool when the job's result runs.
            let _ = rx.recv().unwrap();
            assert_eq!(pool.idle(), 1);
        }
        assert_eq!(pool.idle(), 1);
    }
}
