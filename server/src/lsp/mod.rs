//! The language server (`cpals lsp`, `cpals --stdio`): tower-lsp on tokio.
//!
//! Layout (STYLE.md part C): `backend.rs` routes LSP methods to `handlers/`; `session/` holds
//! documents, results and settings; `scheduler.rs` runs one job per file on worker threads and
//! publishes; `job.rs` is what a job does with the engine (incremental automata, units, cache);
//! `proto.rs` converts positions; `progress.rs` reports work-done progress; `transport.rs` keeps
//! malformed input away from tower-lsp.

pub mod backend;
pub mod handlers;
pub mod job;
pub mod pool;
pub mod progress;
pub mod proto;
pub mod scheduler;
pub mod session;
pub mod transport;

use std::time::Duration;

use tower_lsp::{ClientSocket, LspService};

pub use backend::Backend;
use job::Verifier;

/// How the server is built (tests inject a verifier).
#[derive(Clone)]
pub struct ServerOptions {
    pub verifier: Verifier,
}

impl Default for ServerOptions {
    fn default() -> ServerOptions {
        ServerOptions { verifier: job::engine_verifier() }
    }
}

/// The service and the socket of its client side (call inside a tokio runtime).
pub fn service(options: ServerOptions) -> (LspService<Backend>, ClientSocket) {
    LspService::build(move |client| Backend::new(client, options.verifier))
        .custom_method("window/workDoneProgress/cancel", Backend::cancel_progress)
        .finish()
}

/// Serves LSP on stdin/stdout until the client sends `exit` (or closes stdin).
pub fn run_stdio() -> i32 {
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cpals: cannot start the runtime: {e}");
            return crate::messages::EXIT_ERROR;
        }
    };
    let ended = rt.block_on(async {
        let (service, socket) = service(ServerOptions::default());
        transport::serve(tokio::io::stdin(), tokio::io::stdout(), service, socket).await
    });
    // Jobs were cancelled by `shutdown`; do not wait long for one that is still unwinding.
    rt.shutdown_timeout(Duration::from_millis(500));
    // A job still compiling or running natively when the runtime stopped: end its processes
    // and remove its folders.
    analysis_engine::sandbox::close();
    ended.code()
}
