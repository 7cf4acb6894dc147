//! Request and notification handlers. Document handlers mutate the session synchronously and
//! return what the scheduler should do; the others are pure functions of a file's results and
//! its document (they never start verification themselves).

pub mod code_lens;
pub mod commands;
pub mod diagnostics;
pub mod hover;
pub mod inlay_hints;
pub mod text_document;
pub mod watched_files;
