//! The `cpals` library behind the binary: the command-line verifier (`cli`, `json`), the
//! evidence it writes for users and tools (`evidence`: inputs and executable harnesses,
//! `witness`: SV-COMP witnesses, `html`: the report page, `sarif`: results for CI), the language server (`lsp`), and
//! what all of them say about a verdict (`messages`: sentences and exit codes), and the
//! preprocessor flags of a file in a project's compilation database (`compile_db`). Tests drive
//! the language server in-process through [`lsp::service`]; the benchmarks and the test
//! client are in the `xtask` and `lsp-test-client` crates.

pub mod cli;
pub mod compile_db;
pub mod evidence;
pub mod html;
pub mod invariant_text;
pub mod json;
pub mod lsp;
pub mod messages;
pub mod sarif;
pub mod witness;
pub mod yaml;
