//! The `cpals` library behind the binary: the command-line verifier (`cli`, `bench`, `json`),
//! the evidence it writes for users and tools (`evidence`: inputs and executable harnesses,
//! `witness`: SV-COMP witnesses, `html`: the report page), the language server (`lsp`) and
//! its latency benchmark (`lsp_bench`), and what all of them say about a verdict
//! (`messages`: sentences and exit codes). Tests drive the language server in-process
//! through [`lsp::service`].

pub mod bench;
pub mod cli;
pub mod evidence;
pub mod html;
pub mod json;
pub mod lsp;
pub mod lsp_bench;
pub mod lsp_client;
pub mod messages;
pub mod witness;
pub mod yaml;
