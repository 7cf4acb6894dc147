//! The `LanguageServer` implementation: a router. Each method converts its parameters, calls
//! one handler and returns. Document notifications mutate the session before any `.await`;
//! nothing here awaits a request to the client (those run in tasks of their own, see
//! peers.md §3.2 on tower-lsp's deadlock).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::Value;
use tower_lsp::jsonrpc::Result;
use tower_lsp::lsp_types::*;
use tower_lsp::{Client, LanguageServer};

use crate::lsp::handlers::{self, code_lens, commands::Effect};
use crate::lsp::job::Verifier;
use crate::lsp::scheduler::{Request, Scheduler};
use crate::lsp::session::{ClientCaps, Session};

pub struct Backend {
    session: Arc<Session>,
    client: Client,
    scheduler: Scheduler,
}

impl Backend {
    pub fn new(client: Client, verifier: Verifier) -> Backend {
        let session = Arc::new(Session::default());
        let scheduler = Scheduler::start(session.clone(), client.clone(), verifier);
        Backend { session, client, scheduler }
    }

    /// `window/workDoneProgress/cancel` (not dispatched by tower-lsp; routed as a custom method).
    pub async fn cancel_progress(&self, params: WorkDoneProgressCancelParams) {
        self.scheduler.send(Request::CancelProgress(params.token));
    }

    fn schedule(&self, r: Option<Request>) {
        if let Some(r) = r {
            self.scheduler.send(r);
        }
    }

    /// Applies a `cpals` settings object; problems are shown to the user.
    fn apply_settings(session: &Session, client: &Client, scheduler: &Scheduler, v: &Value) {
        let old = session.settings();
        let (mut new, errors) = old.updated(v);
        if let (Some(p), Some(root)) = (&new.compile_commands, session.root()) {
            if p.is_relative() {
                new.compile_commands = Some(root.join(p));
            }
        }
        if !errors.is_empty() {
            let client = client.clone();
            let msg = format!("cpals: {}", errors.join("; "));
            tokio::spawn(async move { client.show_message(MessageType::WARNING, msg).await });
        }
        if new != old {
            session.set_settings(new);
            scheduler.send(Request::SettingsChanged);
        }
    }

    /// Asks the client to watch the files a project is made of (compilation databases, C
    /// files), from a task of its own; without it, each job still re-reads the database.
    fn watch_project_files(&self) {
        if !self.session.caps().watch_files {
            return;
        }
        let client = self.client.clone();
        tokio::spawn(async move {
            let watchers = handlers::watched_files::WATCHED
                .iter()
                .map(|g| FileSystemWatcher { glob_pattern: GlobPattern::String(g.to_string()), kind: None })
                .collect();
            let options = DidChangeWatchedFilesRegistrationOptions { watchers };
            let registration = Registration {
                id: "cpals-project-files".into(),
                method: "workspace/didChangeWatchedFiles".into(),
                register_options: serde_json::to_value(options).ok(),
            };
            if let Err(e) = client.register_capability(vec![registration]).await {
                tracing::warn!("cannot watch compile_commands.json: {e}");
            }
        });
    }

    /// Asks the client for the `cpals` section, from a task of its own.
    fn fetch_settings(&self) {
        if !self.session.caps().configuration {
            return;
        }
        let (session, client, scheduler) = (self.session.clone(), self.client.clone(), self.scheduler.clone());
        tokio::spawn(async move {
            let item = ConfigurationItem { scope_uri: None, section: Some("cpals".into()) };
            match client.configuration(vec![item]).await {
                Ok(values) => {
                    if let Some(v) = values.first() {
                        Backend::apply_settings(&session, &client, &scheduler, v);
                    }
                }
                Err(e) => tracing::warn!("workspace/configuration failed: {e}"),
            }
        });
    }
}

#[tower_lsp::async_trait]
impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        *self.session.caps.write().unwrap_or_else(|e| e.into_inner()) = ClientCaps::from_lsp(&params.capabilities);
        #[allow(deprecated)] // `root_uri`: clients without workspace folders still send it.
        let root = params
            .workspace_folders
            .as_ref()
            .and_then(|f| f.first())
            .map(|f| &f.uri)
            .or(params.root_uri.as_ref())
            .and_then(crate::lsp::proto::uri_to_path);
        *self.session.root.write().unwrap_or_else(|e| e.into_inner()) = root;
        if let Some(opts) = &params.initialization_options {
            if opts.get("notifyJobs").and_then(|v| v.as_bool()) == Some(true) {
                self.session.notify_jobs.store(true, Ordering::Relaxed);
            }
            if let Some(s) = opts.get("settings") {
                Backend::apply_settings(&self.session, &self.client, &self.scheduler, s);
            }
        }
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                position_encoding: Some(PositionEncodingKind::UTF16),
                text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(TextDocumentSyncKind::INCREMENTAL),
                    will_save: None,
                    will_save_wait_until: None,
                    save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions { include_text: Some(false) })),
                })),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                inlay_hint_provider: Some(OneOf::Left(true)),
                code_lens_provider: Some(CodeLensOptions { resolve_provider: Some(false) }),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: code_lens::COMMANDS.iter().map(|s| s.to_string()).collect(),
                    work_done_progress_options: Default::default(),
                }),
                ..Default::default()
            },
            server_info: Some(ServerInfo { name: "cpals".into(), version: Some(env!("CARGO_PKG_VERSION").into()) }),
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        self.fetch_settings();
        self.watch_project_files();
    }

    async fn shutdown(&self) -> Result<()> {
        self.session.shutting_down.store(true, Ordering::SeqCst);
        for e in self.session.docs.iter() {
            if let Some(c) = &e.job {
                c.cancel();
            }
        }
        self.scheduler.send(Request::Shutdown);
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        self.schedule(handlers::text_document::did_open(&self.session, params));
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        self.schedule(handlers::text_document::did_change(&self.session, params));
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        self.schedule(handlers::text_document::did_save(&self.session, params));
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        self.schedule(handlers::text_document::did_close(&self.session, params));
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        self.schedule(handlers::watched_files::did_change_watched_files(&self.session, params));
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        match params.settings.get("cpals") {
            Some(v) if v.is_object() => Backend::apply_settings(&self.session, &self.client, &self.scheduler, v),
            // Clients that send no settings (or other sections) expect the server to ask.
            _ => self.fetch_settings(),
        }
    }

    async fn inlay_hint(&self, params: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        let Some(e) = self.session.docs.get(&params.text_document.uri) else { return Ok(None) };
        Ok(Some(handlers::inlay_hints::build(&e.state, &e.doc, params.range)))
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let p = params.text_document_position_params;
        let Some(e) = self.session.docs.get(&p.text_document.uri) else { return Ok(None) };
        Ok(handlers::hover::build(&e.state, &e.doc, p.position))
    }

    async fn code_lens(&self, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        let Some(e) = self.session.docs.get(&params.text_document.uri) else { return Ok(None) };
        Ok(Some(handlers::code_lens::build(&e.state, &e.doc)))
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        let (value, effects) = handlers::commands::execute(&self.session, params)?;
        for effect in effects {
            match effect {
                Effect::Schedule(r) => self.scheduler.send(r),
                Effect::ShowDocument(p) => {
                    let client = self.client.clone();
                    tokio::spawn(async move {
                        if let Err(e) = client.show_document(p).await {
                            tracing::debug!("window/showDocument failed: {e}");
                        }
                    });
                }
            }
        }
        Ok(value)
    }
}
