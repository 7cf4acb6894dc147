//! `didOpen`, `didChange`, `didSave`, `didClose`: applied to the document store at once, in
//! the order received (no `.await` here), cancelling the file's running job on an edit and
//! moving the file's results along with the edit (they become stale).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tower_lsp::lsp_types::{
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams, DidSaveTextDocumentParams, Url,
};

use crate::lsp::job::UnitCache;
use crate::lsp::proto::uri_to_path;
use crate::lsp::scheduler::Request;
use crate::lsp::session::document::Document;
use crate::lsp::session::results::FileState;
use crate::lsp::session::settings::Trigger;
use crate::lsp::session::{DocEntry, Session};

/// The path the engine names a document with (a file in the temporary folder for URIs that are
/// not files, e.g. `untitled:`).
pub fn doc_path(uri: &Url) -> PathBuf {
    uri_to_path(uri).unwrap_or_else(|| {
        let name = uri.path_segments().and_then(|mut s| s.next_back()).filter(|s| !s.is_empty()).unwrap_or("untitled.c");
        std::env::temp_dir().join(name)
    })
}

pub fn did_open(session: &Session, p: DidOpenTextDocumentParams) -> Option<Request> {
    let uri = p.text_document.uri;
    let doc = Document::new(uri.clone(), doc_path(&uri), p.text_document.text, p.text_document.version);
    let trigger = session.settings().trigger;
    match session.docs.entry(uri.clone()) {
        dashmap::mapref::entry::Entry::Occupied(mut o) => {
            // Opened again without a close: start over with this text, keep the cache.
            let e = o.get_mut();
            if let Some(c) = e.job.take() {
                c.cancel();
            }
            e.doc = doc;
            e.state = FileState::default();
        }
        dashmap::mapref::entry::Entry::Vacant(v) => {
            v.insert(DocEntry {
                doc,
                state: FileState::default(),
                job: None,
                cache: Arc::new(Mutex::new(UnitCache::default())),
                focus_line: None,
            });
        }
    }
    Some(Request::Edited { uri, verify: trigger != Trigger::Manual, debounce: false })
}

pub fn did_change(session: &Session, p: DidChangeTextDocumentParams) -> Option<Request> {
    let uri = p.text_document.uri;
    let trigger = session.settings().trigger;
    let Some(mut e) = session.docs.get_mut(&uri) else {
        tracing::warn!("didChange for {uri}, which is not open: ignored");
        return None;
    };
    let e = &mut *e;
    let edits = match e.doc.apply(p.text_document.version, &p.content_changes) {
        Ok(edits) => edits,
        Err(err) => {
            tracing::warn!("{uri}: {err}");
            return None;
        }
    };
    if let Some(c) = e.job.take() {
        c.cancel();
    }
    for edit in &edits {
        e.state.shift(&uri, edit);
    }
    if let Some(first) = edits.first() {
        e.focus_line = Some(first.start.line);
    }
    Some(Request::Edited { uri, verify: trigger == Trigger::OnChange, debounce: true })
}

pub fn did_save(session: &Session, p: DidSaveTextDocumentParams) -> Option<Request> {
    let uri = p.text_document.uri;
    if !session.docs.contains_key(&uri) {
        tracing::warn!("didSave for {uri}, which is not open: ignored");
        return None;
    }
    let trigger = session.settings().trigger;
    Some(Request::Edited { uri, verify: trigger != Trigger::Manual, debounce: false })
}

pub fn did_close(session: &Session, p: DidCloseTextDocumentParams) -> Option<Request> {
    let uri = p.text_document.uri;
    let (_, e) = session.docs.remove(&uri)?;
    if let Some(c) = e.job {
        c.cancel();
    }
    Some(Request::Closed { uri })
}
