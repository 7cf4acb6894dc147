//! The scheduler: one ordered loop that owns the job slots and publishes every result.
//!
//! - At most one job per file; a request while one runs leaves one pending entry (no backlog,
//!   whatever the number of edits). An edit cancels the running job at once (the handler flips
//!   its token; the engine polls it and interrupts Z3).
//! - Edits wait for the debounce; opening, saving and commands start at once.
//! - Jobs run on the worker threads of `pool.rs` (a whole `verify` call stays on one thread: Z3
//!   objects are thread-local), at most `workers` at a time, each inside `catch_unwind`: a panic is
//!   logged, reported once with `window/showMessage`, and the previous results stay.
//! - A job's results are installed only if the document is still at the version the job read;
//!   diagnostics are published with that version, only when they changed.
//! - A job that does not stop within [`ABANDON_GRACE`] of being cancelled, or of its time limit,
//!   is abandoned (a solver that hangs where cancelling does not reach): its results are never
//!   published, its slot is free for the next job, and since its thread stays busy the pool
//!   starts a new worker for the next one.
//! - A unit's verdicts are published as its phases decide them (the quick ones first), the
//!   rest shown as pending until the unit's result arrives.
//! - After a job, inlay hints and code lenses are refreshed (when the client supports it).
//! - Clients that ask for it (`initializationOptions.notifyJobs`) get `cpals/jobStarted` when a
//!   job starts and `cpals/jobDone` after the diagnostics it produced (editor status bars).

use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use analysis_engine::Cancel;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::time::Instant;
use tower_lsp::lsp_types::notification::Notification;
use tower_lsp::lsp_types::{Diagnostic, MessageType, NumberOrString, Url};
use tower_lsp::Client;

use crate::lsp::handlers::diagnostics;
use crate::lsp::job::{self, Force, JobInput, JobMsg, JobSummary, Verifier};
use crate::lsp::progress::Progress;
use crate::lsp::session::Session;

/// What handlers ask of the scheduler.
#[derive(Debug)]
pub enum Request {
    /// The document was opened, changed or saved: re-parse it (and verify when `verify`).
    Edited {
        uri: Url,
        verify: bool,
        debounce: bool,
    },
    /// Verify now (commands), the given units even when cached.
    Verify {
        uri: Url,
        force: Force,
        focus_function: Option<String>,
    },
    Closed {
        uri: Url,
    },
    /// The settings changed: every open file is re-checked with them.
    SettingsChanged,
    /// A compilation database or a project file changed on disk: these open files, built
    /// with it, are re-checked.
    ProjectChanged(Vec<Url>),
    CancelProgress(NumberOrString),
    CancelFile(Url),
    Shutdown,
}

enum Event {
    Request(Request),
    Job { uri: Url, generation: u64, msg: JobMsg },
    Done { uri: Url, generation: u64, summary: JobSummary },
}

/// `cpals/jobStarted`: a job began for a file (sent when the client asked for it with
/// `initializationOptions.notifyJobs`); `verify` is false for a job that only re-parses.
pub enum JobStarted {}

impl Notification for JobStarted {
    type Params = JobStart;
    const METHOD: &'static str = "cpals/jobStarted";
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct JobStart {
    pub uri: String,
    pub version: i32,
    pub verify: bool,
}

/// A job notification waiting to be sent (after the diagnostics of the same loop turn).
enum Notice {
    Started(JobStart),
    Done(JobSummary),
}

/// `cpals/jobDone`: what a job did (sent when the client asked for it with
/// `initializationOptions.notifyJobs`).
pub enum JobDone {}

impl Notification for JobDone {
    type Params = JobSummary;
    const METHOD: &'static str = "cpals/jobDone";
}

#[derive(Clone)]
pub struct Scheduler {
    tx: UnboundedSender<Event>,
}

impl Scheduler {
    /// Starts the loop on the current tokio runtime.
    pub fn start(session: Arc<Session>, client: Client, verifier: Verifier) -> Scheduler {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let sched = Scheduler { tx: tx.clone() };
        let lp = Loop {
            session,
            client,
            verifier,
            tx,
            slots: HashMap::new(),
            generation: 0,
            running: 0,
            dirty: HashSet::new(),
            published: HashMap::new(),
            outbox: Vec::new(),
            reported: HashSet::new(),
            refresh_hints: Arc::new(AtomicBool::new(false)),
            refresh_lenses: Arc::new(AtomicBool::new(false)),
            shutting_down: false,
            pool: crate::lsp::pool::Pool::default(),
        };
        tokio::spawn(lp.run(rx));
        sched
    }

    pub fn send(&self, r: Request) {
        let _ = self.tx.send(Event::Request(r));
    }
}

struct Pending {
    due: Instant,
    verify: bool,
    force: Force,
    focus_function: Option<String>,
}

struct Running {
    generation: u64,
    version: i32,
    cancel: Cancel,
    /// When the job started, and its time limit.
    started: Instant,
    timeout: Duration,
    /// When the loop first saw the job cancelled.
    cancelled_at: Option<Instant>,
    token: NumberOrString,
    progress: Option<Progress>,
    units: usize,
    done: usize,
}

#[derive(Default)]
struct Slot {
    running: Option<Running>,
    pending: Option<Pending>,
}

struct Loop {
    session: Arc<Session>,
    client: Client,
    verifier: Verifier,
    tx: UnboundedSender<Event>,
    slots: HashMap<Url, Slot>,
    generation: u64,
    running: usize,
    dirty: HashSet<Url>,
    published: HashMap<Url, (i32, Vec<Diagnostic>)>,
    /// `cpals/jobStarted` and `cpals/jobDone` notifications, sent after the diagnostics they
    /// describe.
    outbox: Vec<Notice>,
    /// Files whose internal error was already shown to the user.
    reported: HashSet<Url>,
    refresh_hints: Arc<AtomicBool>,
    refresh_lenses: Arc<AtomicBool>,
    shutting_down: bool,
    pool: crate::lsp::pool::Pool,
}

fn merge_force(a: Force, b: Force) -> Force {
    match (a, b) {
        (Force::All, _) | (_, Force::All) => Force::All,
        (Force::Nothing, x) | (x, Force::Nothing) => x,
        (Force::Functions(mut x), Force::Functions(y)) => {
            x.extend(y);
            x.sort();
            x.dedup();
            Force::Functions(x)
        }
    }
}

/// How long a job may go on after it was cancelled or reached its time limit before it is
/// abandoned.
pub const ABANDON_GRACE: Duration = Duration::from_secs(2);

impl Running {
    /// When the job is abandoned if it has not ended by then.
    fn abandon_at(&self) -> Instant {
        let late = self.started + self.timeout + ABANDON_GRACE;
        self.cancelled_at.map_or(late, |c| late.min(c + ABANDON_GRACE))
    }
}

impl Loop {
    async fn run(mut self, mut rx: UnboundedReceiver<Event>) {
        loop {
            let wake = match (self.next_due(), self.next_abandon()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let ev = tokio::select! {
                ev = rx.recv() => match ev {
                    Some(ev) => Some(ev),
                    None => break,
                },
                _ = sleep_until(wake) => None,
            };
            if let Some(ev) = ev {
                self.handle(ev).await;
            }
            // Take everything already queued before publishing: a burst of edits is one publish.
            while let Ok(ev) = rx.try_recv() {
                self.handle(ev).await;
            }
            self.abandon_stuck();
            self.start_due();
            self.publish().await;
            if self.shutting_down && self.running == 0 {
                break;
            }
        }
    }

    fn next_due(&self) -> Option<Instant> {
        if self.shutting_down || self.running >= self.session.settings().workers {
            return None;
        }
        self.slots.values().filter(|s| s.running.is_none()).filter_map(|s| s.pending.as_ref().map(|p| p.due)).min()
    }

    /// When the next running job is abandoned if it has not ended.
    fn next_abandon(&self) -> Option<Instant> {
        self.slots.values().filter_map(|s| s.running.as_ref()).map(Running::abandon_at).min()
    }

    /// Abandons the jobs that did not stop in time after being cancelled or at their limit.
    fn abandon_stuck(&mut self) {
        let now = Instant::now();
        let mut stuck = Vec::new();
        for (uri, slot) in &mut self.slots {
            let Some(r) = slot.running.as_mut() else { continue };
            if r.cancelled_at.is_none() && r.cancel.is_cancelled() {
                r.cancelled_at = Some(now);
            }
            if r.abandon_at() <= now {
                stuck.push(uri.clone());
            }
        }
        for uri in stuck {
            self.abandon(&uri);
        }
    }

    /// Gives up on a running job: it is cancelled and forgotten. Its thread is left to end on
    /// its own (its results, if any, are dropped: the slot no longer knows its generation), the
    /// slot is free for the next job, and the pool starts a new worker since this one is busy.
    fn abandon(&mut self, uri: &Url) {
        let Some(slot) = self.slots.get_mut(uri) else { return };
        let Some(r) = slot.running.take() else { return };
        r.cancel.cancel();
        self.running -= 1;
        let by_cancel = r.cancelled_at.is_some_and(|c| c <= r.started + r.timeout);
        let why = if by_cancel {
            format!("it did not stop within {} s of being cancelled", ABANDON_GRACE.as_secs())
        } else {
            format!("it did not stop within {} s of its time limit of {} s", ABANDON_GRACE.as_secs(), r.timeout.as_secs_f64())
        };
        tracing::warn!("{uri}: verification job {} abandoned: {why}; a new worker serves the next job", r.generation);
        if slot.pending.is_none() && !self.session.docs.contains_key(uri) {
            self.slots.remove(uri);
        }
        if let Some(p) = &r.progress {
            p.end("abandoned".into());
        }
        if let Some(mut e) = self.session.docs.get_mut(uri) {
            e.job = None;
            e.state.running = false;
            e.state.drop_pending();
            // A job that hung at its limit on the current text is a failure the user sees; one
            // cancelled by an edit is simply replaced.
            if !by_cancel && e.doc.version == r.version {
                e.state.failure = Some(format!("the verification job was abandoned: {why}"));
            }
        }
        self.dirty.insert(uri.clone());
        if self.session.notify_jobs() {
            let summary =
                JobSummary { uri: uri.to_string(), version: r.version, cancelled: true, abandoned: true, ..JobSummary::default() };
            self.outbox.push(Notice::Done(summary));
        }
        self.refresh();
    }

    fn request(&mut self, uri: Url, due: Instant, verify: bool, force: Force, focus_function: Option<String>) {
        let slot = self.slots.entry(uri).or_default();
        slot.pending = Some(match slot.pending.take() {
            None => Pending { due, verify, force, focus_function },
            Some(p) => Pending {
                due,
                verify: p.verify || verify,
                force: merge_force(p.force, force),
                focus_function: focus_function.or(p.focus_function),
            },
        });
    }

    async fn handle(&mut self, ev: Event) {
        match ev {
            Event::Request(r) => self.handle_request(r),
            Event::Job { uri, generation, msg } => self.handle_job(uri, generation, msg),
            Event::Done { uri, generation, summary } => self.handle_done(uri, generation, summary).await,
        }
    }

    fn handle_request(&mut self, r: Request) {
        let now = Instant::now();
        match r {
            Request::Edited { uri, verify, debounce } => {
                let due = if debounce { now + self.session.settings().debounce } else { now };
                // The edit cancelled the running job; its results will not be installed.
                self.dirty.insert(uri.clone());
                self.request(uri, due, verify, Force::Nothing, None);
            }
            Request::Verify { uri, force, focus_function } => {
                if let Some(e) = self.session.docs.get(&uri) {
                    if let Some(c) = &e.job {
                        c.cancel();
                    }
                }
                self.request(uri, now, true, force, focus_function);
            }
            Request::Closed { uri } => {
                if let Some(slot) = self.slots.remove(&uri) {
                    if let Some(r) = slot.running {
                        r.cancel.cancel();
                        // Its Done event still arrives; keep counting it as running until then.
                        self.slots.insert(uri.clone(), Slot { running: Some(r), pending: None });
                    }
                }
                self.published.remove(&uri);
                self.reported.remove(&uri);
                self.dirty.remove(&uri);
                let client = self.client.clone();
                tokio::spawn(async move { client.publish_diagnostics(uri, Vec::new(), None).await });
            }
            Request::SettingsChanged => {
                let uris: Vec<Url> = self.session.docs.iter().map(|e| e.key().clone()).collect();
                self.recheck(uris, now);
            }
            Request::ProjectChanged(uris) => self.recheck(uris, now),
            Request::CancelProgress(token) => {
                for (uri, slot) in &mut self.slots {
                    if let Some(r) = slot.running.as_ref().filter(|r| r.token == token) {
                        tracing::info!("{uri}: verification cancelled from the client");
                        r.cancel.cancel();
                        slot.pending = None;
                    }
                }
            }
            Request::CancelFile(uri) => {
                if let Some(slot) = self.slots.get_mut(&uri) {
                    if let Some(r) = &slot.running {
                        r.cancel.cancel();
                    }
                    slot.pending = None;
                }
            }
            Request::Shutdown => {
                self.shutting_down = true;
                for slot in self.slots.values_mut() {
                    slot.pending = None;
                    if let Some(r) = &slot.running {
                        r.cancel.cancel();
                    }
                }
            }
        }
    }

    /// Cancels the files' running jobs and checks them again (verifies them unless the trigger
    /// is manual).
    fn recheck(&mut self, uris: Vec<Url>, now: Instant) {
        let verify = self.session.settings().trigger != crate::lsp::session::settings::Trigger::Manual;
        for uri in uris {
            let Some(e) = self.session.docs.get(&uri) else { continue };
            if let Some(c) = &e.job {
                c.cancel();
            }
            drop(e);
            self.dirty.insert(uri.clone());
            self.request(uri, now, verify, Force::Nothing, None);
        }
    }

    fn current_version(&self, uri: &Url, generation: u64) -> Option<i32> {
        let r = self.slots.get(uri)?.running.as_ref().filter(|r| r.generation == generation)?;
        let e = self.session.docs.get(uri)?;
        (e.doc.version == r.version && !r.cancel.is_cancelled()).then_some(r.version)
    }

    fn handle_job(&mut self, uri: Url, generation: u64, msg: JobMsg) {
        if let JobMsg::Unit(_) = &msg {
            if let Some(r) = self.slots.get_mut(&uri).and_then(|s| s.running.as_mut()).filter(|r| r.generation == generation) {
                r.done += 1;
                if let Some(p) = &r.progress {
                    let pct = (100 * r.done / r.units.max(1)) as u32;
                    p.report(format!("{} of {} units", r.done, r.units), pct);
                }
            }
        }
        // Results of a version the document has left are dropped: never shown as current.
        let Some(version) = self.current_version(&uri, generation) else { return };
        let Some(mut e) = self.session.docs.get_mut(&uri) else { return };
        let state = &mut e.state;
        match msg {
            JobMsg::Project(p) => state.project = p,
            JobMsg::Loaded(Ok(l)) => {
                state.parse_error = None;
                state.functions = l.functions;
                let old = std::mem::take(&mut state.units);
                for root in &l.roots {
                    state.units.insert(root.clone(), old.get(root).cloned().flatten());
                }
                if let Some(r) = self.slots.get_mut(&uri).and_then(|s| s.running.as_mut()) {
                    r.units = l.roots.len();
                }
            }
            JobMsg::Loaded(Err(pe)) => {
                debug_assert_eq!(pe.version, version);
                state.parse_error = Some(pe);
            }
            JobMsg::Partial(view) => state.install_partial(view),
            JobMsg::Unit(view) => {
                state.units.insert(view.root.clone(), Some(view));
            }
        }
        drop(e);
        self.dirty.insert(uri);
    }

    async fn handle_done(&mut self, uri: Url, generation: u64, summary: JobSummary) {
        let Some(slot) = self.slots.get_mut(&uri) else { return };
        let Some(r) = slot.running.take_if(|r| r.generation == generation) else { return };
        self.running -= 1;
        if slot.pending.is_none() && !self.session.docs.contains_key(&uri) {
            self.slots.remove(&uri);
        }
        if let Some(p) = &r.progress {
            let how = if summary.panicked.is_some() {
                "failed".to_string()
            } else if summary.cancelled {
                "cancelled".to_string()
            } else {
                format!("{} verified, {} cached, {} ms", summary.verified.len(), summary.cached.len(), summary.ms)
            };
            p.end(how);
        }
        let mut show = None;
        if let Some(mut e) = self.session.docs.get_mut(&uri) {
            // One job per file: the token in the entry (if an edit left it there) is this job's.
            e.job = None;
            e.state.running = false;
            e.state.drop_pending();
            match &summary.panicked {
                Some(msg) if e.doc.version == r.version => {
                    e.state.failure = Some(msg.clone());
                    if self.reported.insert(uri.clone()) {
                        show = Some(msg.clone());
                    }
                }
                Some(_) => {}
                None if !summary.cancelled && e.doc.version == r.version => {
                    e.state.failure = None;
                    self.reported.remove(&uri);
                }
                None => {}
            }
        }
        if let Some(msg) = show {
            tracing::error!("{uri}: verification job failed: {msg}");
            let client = self.client.clone();
            let name = uri.path_segments().and_then(|mut s| s.next_back()).unwrap_or("").to_string();
            tokio::spawn(async move {
                client
                    .show_message(MessageType::ERROR, format!("cpals: verifying {name} failed with an internal error ({msg}); the previous results stay (see the server's log)"))
                    .await
            });
        }
        self.dirty.insert(uri.clone());
        if self.session.notify_jobs() {
            self.outbox.push(Notice::Done(summary));
        }
        self.refresh();
    }

    /// Starts the jobs whose time has come, as long as workers are free.
    fn start_due(&mut self) {
        if self.shutting_down {
            return;
        }
        let settings = self.session.settings();
        let now = Instant::now();
        let mut due: Vec<(Instant, Url)> = self
            .slots
            .iter()
            .filter(|(_, s)| s.running.is_none())
            .filter_map(|(u, s)| s.pending.as_ref().filter(|p| p.due <= now).map(|p| (p.due, u.clone())))
            .collect();
        due.sort();
        let mut started = false;
        for (_, uri) in due {
            if self.running >= settings.workers {
                break;
            }
            let Some(slot) = self.slots.get_mut(&uri) else { continue };
            let Some(pending) = slot.pending.take() else { continue };
            let Some(mut e) = self.session.docs.get_mut(&uri) else {
                self.slots.remove(&uri);
                continue;
            };
            self.generation += 1;
            let generation = self.generation;
            let cancel = Cancel::new();
            e.job = Some(cancel.clone());
            e.state.running = pending.verify || matches!(pending.force, Force::All | Force::Functions(_));
            let input = JobInput {
                uri: uri.clone(),
                path: e.doc.path.clone(),
                text: e.doc.text.clone(),
                version: e.doc.version,
                settings: settings.clone(),
                verify: pending.verify,
                force: pending.force,
                focus_line: e.focus_line,
                focus_function: pending.focus_function,
                cache: e.cache.clone(),
                cancel: cancel.clone(),
                verifier: self.verifier.clone(),
            };
            let verifying = e.state.running;
            drop(e);
            if self.session.notify_jobs() {
                self.outbox.push(Notice::Started(JobStart { uri: uri.to_string(), version: input.version, verify: verifying }));
            }
            let token = NumberOrString::String(format!("cpals/job/{generation}"));
            let progress = (verifying && self.session.caps().work_done_progress).then(|| {
                let name = uri.path_segments().and_then(|mut s| s.next_back()).unwrap_or("").to_string();
                Progress::start(self.client.clone(), token.clone(), format!("Verifying {name}"))
            });
            slot.running = Some(Running {
                generation,
                version: input.version,
                cancel,
                started: now,
                timeout: settings.timeout,
                cancelled_at: None,
                token,
                progress,
                units: 0,
                done: 0,
            });
            self.running += 1;
            started = true;
            self.dirty.insert(uri.clone());
            let tx = self.tx.clone();
            self.pool.spawn(move || {
                let uri = input.uri.clone();
                let summary = {
                    let tx = tx.clone();
                    let job_uri = uri.clone();
                    let mut emit = move |msg: JobMsg| {
                        let _ = tx.send(Event::Job { uri: job_uri.clone(), generation, msg });
                    };
                    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| job::run(&input, &mut emit)));
                    drop(emit);
                    match outcome {
                        Ok(s) => s,
                        Err(payload) => {
                            let msg = payload
                                .downcast_ref::<&str>()
                                .map(|s| s.to_string())
                                .or_else(|| payload.downcast_ref::<String>().cloned())
                                .unwrap_or_else(|| "panic".into());
                            JobSummary { uri: uri.to_string(), version: input.version, panicked: Some(msg), ..Default::default() }
                        }
                    }
                };
                move || {
                    let _ = tx.send(Event::Done { uri, generation, summary });
                }
            });
        }
        if started {
            // Lenses show "running".
            self.refresh_lenses_only();
        }
    }

    async fn publish(&mut self) {
        let settings = self.session.settings();
        let caps = self.session.caps();
        for uri in std::mem::take(&mut self.dirty) {
            let Some(e) = self.session.docs.get(&uri) else { continue };
            let diags = diagnostics::build(&e.state, &e.doc, settings.proved_as_information, caps.related_information);
            let version = e.doc.version;
            drop(e);
            if self.published.get(&uri).is_some_and(|(v, d)| *v == version && d == &diags) {
                continue;
            }
            self.published.insert(uri.clone(), (version, diags.clone()));
            self.client.publish_diagnostics(uri, diags, Some(version)).await;
        }
        for notice in std::mem::take(&mut self.outbox) {
            match notice {
                Notice::Started(start) => self.client.send_notification::<JobStarted>(start).await,
                Notice::Done(summary) => self.client.send_notification::<JobDone>(summary).await,
            }
        }
    }

    fn refresh(&self) {
        let caps = self.session.caps();
        if caps.inlay_hint_refresh {
            spawn_refresh(self.client.clone(), self.refresh_hints.clone(), true);
        }
        if caps.code_lens_refresh {
            spawn_refresh(self.client.clone(), self.refresh_lenses.clone(), false);
        }
    }

    fn refresh_lenses_only(&self) {
        if self.session.caps().code_lens_refresh {
            spawn_refresh(self.client.clone(), self.refresh_lenses.clone(), false);
        }
    }
}

/// One refresh request in flight at a time per kind.
fn spawn_refresh(client: Client, busy: Arc<AtomicBool>, hints: bool) {
    if busy.swap(true, Ordering::SeqCst) {
        return;
    }
    tokio::spawn(async move {
        let res = if hints { client.inlay_hint_refresh().await } else { client.code_lens_refresh().await };
        if let Err(e) = res {
            tracing::debug!("refresh request failed: {e}");
        }
        busy.store(false, Ordering::SeqCst);
    });
}

async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// Debounce used by tests (no waiting).
pub const NO_DEBOUNCE: Duration = Duration::ZERO;
