//! The server's state: open documents (text, version, results, the running job's cancel
//! token, the per-file cache), settings and client capabilities. Edits mutate it synchronously
//! (no `.await` while a document is borrowed); jobs read snapshots of it.

pub mod document;
pub mod results;
pub mod settings;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use analysis_engine::Cancel;
use dashmap::DashMap;
use tower_lsp::lsp_types::{ClientCapabilities, Url};

use crate::lsp::job::UnitCache;
use document::Document;
use results::FileState;
use settings::Settings;

/// One open document and everything the server keeps for it.
pub struct DocEntry {
    pub doc: Document,
    pub state: FileState,
    /// The running job's token: an edit cancels it at once.
    pub job: Option<Cancel>,
    pub cache: Arc<Mutex<UnitCache>>,
    /// The line (0-based) last edited: the unit containing it is verified first.
    pub focus_line: Option<u32>,
}

/// What the client said it supports (in `initialize`).
#[derive(Clone, Debug, Default)]
pub struct ClientCaps {
    pub related_information: bool,
    pub work_done_progress: bool,
    pub inlay_hint_refresh: bool,
    pub code_lens_refresh: bool,
    pub configuration: bool,
    pub show_document: bool,
    /// `workspace/didChangeWatchedFiles` watchers may be registered dynamically.
    pub watch_files: bool,
}

impl ClientCaps {
    pub fn from_lsp(c: &ClientCapabilities) -> ClientCaps {
        let ws = c.workspace.as_ref();
        ClientCaps {
            related_information: c
                .text_document
                .as_ref()
                .and_then(|t| t.publish_diagnostics.as_ref())
                .and_then(|p| p.related_information)
                .unwrap_or(false),
            work_done_progress: c.window.as_ref().and_then(|w| w.work_done_progress).unwrap_or(false),
            inlay_hint_refresh: ws.and_then(|w| w.inlay_hint.as_ref()).and_then(|i| i.refresh_support).unwrap_or(false),
            code_lens_refresh: ws.and_then(|w| w.code_lens.as_ref()).and_then(|i| i.refresh_support).unwrap_or(false),
            configuration: ws.and_then(|w| w.configuration).unwrap_or(false),
            show_document: c.window.as_ref().and_then(|w| w.show_document.as_ref()).map(|s| s.support).unwrap_or(false),
            watch_files: ws.and_then(|w| w.did_change_watched_files.as_ref()).and_then(|d| d.dynamic_registration).unwrap_or(false),
        }
    }
}

/// Where "step through the counterexample" is.
#[derive(Clone, Debug, Default)]
pub struct TraceCursor {
    pub uri: Option<Url>,
    pub line: u32,
    pub step: usize,
}

#[derive(Default)]
pub struct Session {
    pub docs: DashMap<Url, DocEntry>,
    pub settings: RwLock<Settings>,
    pub caps: RwLock<ClientCaps>,
    /// Send `cpals/jobDone` notifications (tests and the benchmark ask for them).
    pub notify_jobs: AtomicBool,
    pub trace_cursor: Mutex<TraceCursor>,
    pub shutting_down: AtomicBool,
    /// The workspace's root folder (relative paths in the settings are resolved against it).
    pub root: RwLock<Option<std::path::PathBuf>>,
}

impl Session {
    pub fn settings(&self) -> Settings {
        self.settings.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn set_settings(&self, s: Settings) {
        *self.settings.write().unwrap_or_else(|e| e.into_inner()) = s;
    }

    pub fn root(&self) -> Option<std::path::PathBuf> {
        self.root.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn caps(&self) -> ClientCaps {
        self.caps.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn notify_jobs(&self) -> bool {
        self.notify_jobs.load(Ordering::Relaxed)
    }
}
