//! `workspace/didChangeWatchedFiles`: a compilation database or a project file changed on disk
//! (the server asks clients that can to watch `**/compile_commands.json` and `**/*.c`). The
//! open documents built with it are checked again; their next job re-reads the database.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use tower_lsp::lsp_types::{DidChangeWatchedFilesParams, Url};

use crate::lsp::proto::uri_to_path;
use crate::lsp::scheduler::Request;
use crate::lsp::session::results::ProjectUse;
use crate::lsp::session::Session;

/// The glob patterns the server asks clients to watch.
pub const WATCHED: [&str; 2] = ["**/compile_commands.json", "**/*.c"];

/// The folder whose files a database found as clangd finds it serves: its own folder, or the
/// parent of a `build/` folder.
fn project_dir(db: &Path) -> Option<&Path> {
    let dir = db.parent()?;
    match dir.file_name() {
        Some(n) if n == "build" => dir.parent(),
        _ => Some(dir),
    }
}

/// Whether a document at `doc` built in `used` is concerned by a change of `changed` (as the
/// client names it, and canonical).
fn concerns(doc: &Path, used: &ProjectUse, changed: &Path, canonical: &Path) -> bool {
    let same = |p: &Path| p == changed || p == canonical;
    if changed == doc {
        // The document itself: its own save re-checks it.
        return false;
    }
    if used.db.as_deref().is_some_and(same) || used.linked.iter().any(|l| same(l)) {
        return true;
    }
    // A database created, changed or removed where clangd would find one for the document.
    changed.file_name().is_some_and(|n| n == "compile_commands.json")
        && project_dir(changed).is_some_and(|d| doc.starts_with(d) || doc.starts_with(project_dir(canonical).unwrap_or(d)))
}

pub fn did_change_watched_files(session: &Session, p: DidChangeWatchedFilesParams) -> Option<Request> {
    let mut uris: BTreeSet<Url> = BTreeSet::new();
    for change in &p.changes {
        let Some(path) = uri_to_path(&change.uri) else { continue };
        let canonical: PathBuf = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        for e in session.docs.iter() {
            if concerns(&e.doc.path, &e.state.project, &path, &canonical) {
                tracing::info!("{}: {} changed on disk: checked again", e.key(), path.display());
                uris.insert(e.key().clone());
            }
        }
    }
    (!uris.is_empty()).then(|| Request::ProjectChanged(uris.into_iter().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_concern_the_documents_built_with_them() {
        let used = ProjectUse { db: Some("/p/build/compile_commands.json".into()), linked: vec!["/p/src/clamp.c".into()], problem: None };
        let doc = Path::new("/p/src/main.c");
        let c = |changed: &str| concerns(doc, &used, Path::new(changed), Path::new(changed));
        assert!(c("/p/build/compile_commands.json"));
        assert!(c("/p/src/clamp.c"), "a linked file");
        assert!(c("/p/src/compile_commands.json"), "a database nearer the document");
        assert!(c("/p/compile_commands.json"));
        assert!(!c("/q/compile_commands.json"), "another project's database");
        assert!(!c("/p/src/other.c"), "a file not in the database");
        assert!(!c("/p/src/main.c"), "the document itself");
        assert!(!concerns(Path::new("/q/a.c"), &ProjectUse::default(), Path::new("/p/src/clamp.c"), Path::new("/p/src/clamp.c")));
    }
}
