//! The cpals verification engine: C front end, control-flow automata, the CPA framework with
//! CEGAR, the analyses of the seed papers, the SMT layer and plain-data reports.
//!
//! Architecture invariant: this crate knows nothing of LSP, tokio or JSON-RPC. Its surface is
//! [`load`] (text to automata) and [`verify`] (automata to a [`report::Report`]).

pub mod analyses;
pub mod cfa;
pub mod concrete;
pub mod config;
pub mod core;
pub mod frontend;
pub mod fuzz;
pub mod harness;
pub mod invariants;
pub mod ir;
pub mod portfolio;
pub mod properties;
pub mod report;
pub mod sandbox;
pub mod smt;

pub use config::{Analysis, VerifyConfig};
pub use core::Cancel;
pub use portfolio::{unanswered, verify};

use cfa::build::BuildError;
use cfa::{DataModel, Program};
use frontend::{FrontendError, SourceInput, SrcPos};

/// Why a buffer could not be turned into automata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadError {
    Frontend(FrontendError),
    Build(BuildError),
}

impl LoadError {
    pub fn message(&self) -> &str {
        match self {
            LoadError::Frontend(e) => e.message(),
            LoadError::Build(e) => &e.message,
        }
    }

    pub fn pos(&self) -> Option<&SrcPos> {
        match self {
            LoadError::Frontend(e) => e.pos(),
            LoadError::Build(e) => Some(&e.pos),
        }
    }
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Frontend(e) => e.fmt(f),
            LoadError::Build(e) => e.fmt(f),
        }
    }
}

/// Stack size of the thread that parses and builds (the parser and the builder recurse).
const FRONTEND_STACK: usize = 256 << 20;

/// Preprocesses, parses and builds the automata of a buffer.
pub fn load(input: &SourceInput, model: DataModel) -> Result<Program, LoadError> {
    load_with(input, model, &cfa::build::BuildOptions::default())
}

/// Like [`load`], for the given properties and entry (`--property`, `--function`).
pub fn load_with(input: &SourceInput, model: DataModel, opts: &cfa::build::BuildOptions) -> Result<Program, LoadError> {
    load_within(input, model, opts, &Cancel::new())
}

/// Like [`load_with`], under a job's token: the preprocessor stops at the token's deadline
/// (best on the wall clock) or when it is cancelled, with an error that says so.
pub fn load_within(input: &SourceInput, model: DataModel, opts: &cfa::build::BuildOptions, cancel: &Cancel) -> Result<Program, LoadError> {
    let input = input.clone();
    let opts = opts.clone();
    let cancel = cancel.clone();
    let worker = std::thread::Builder::new().name("cpals-frontend".into()).stack_size(FRONTEND_STACK).spawn(move || {
        let stop = || match cancel.check() {
            Ok(()) => None,
            Err(core::Interrupt::Timeout) => Some("the time limit ran out before it finished"),
            Err(_) => Some("the job was cancelled"),
        };
        let ilp32 = model == DataModel::Ilp32;
        let build = |linked: &[(std::path::PathBuf, Vec<String>)]| -> Result<Program, LoadError> {
            let parsed = frontend::parse_project(&input, ilp32, &opts.preprocessor_flags, linked, &stop).map_err(LoadError::Frontend)?;
            cfa::build::build_program_with(&parsed, model, &opts).map_err(LoadError::Build)
        };
        let mut program = match build(&opts.linked_files) {
            Ok(p) => p,
            // The project's other files conflict with this one (a `static` function of the same
            // name, another `main`): verified without them, as a note says.
            Err(e) if !opts.linked_files.is_empty() => {
                let mut p = build(&[])?;
                let pos = cfa::SrcRange { file: p.file.clone(), line: 1, col: 1, end_line: 1, end_col: 1 };
                let message = format!("the project's other files are not linked (their functions are external): {}", e);
                p.notes.insert(0, cfa::BuildNote { pos, message });
                p
            }
            Err(e) => return Err(e),
        };
        program.source = std::sync::Arc::from(input.text.as_str());
        Ok(program)
    });
    match worker {
        Ok(h) => {
            h.join().unwrap_or_else(|_| Err(LoadError::Frontend(FrontendError::Io { message: "internal error in the front end".into() })))
        }
        Err(e) => Err(LoadError::Frontend(FrontendError::Io { message: format!("cannot start the front end: {}", e) })),
    }
}
