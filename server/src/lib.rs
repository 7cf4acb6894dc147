//! The `cpals` library behind the binary: the command-line verifier (`cli`, `bench`, `json`),
//! the evidence it writes for users and tools (`evidence`: inputs and executable harnesses,
//! `witness`: SV-COMP witnesses, `html`: the report page), the language server (`lsp`) and
//! its latency benchmark (`lsp_bench`). Tests drive the language server in-process through
//! [`lsp::service`].

pub mod bench;
pub mod cli;
pub mod evidence;
pub mod html;
pub mod json;
pub mod lsp;
pub mod lsp_bench;
pub mod lsp_client;
pub mod witness;
pub mod yaml;
