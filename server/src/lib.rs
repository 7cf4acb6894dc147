//! The `cpals` library behind the binary: the command-line verifier (`cli`, `bench`, `json`),
//! the language server (`lsp`) and its latency benchmark (`lsp_bench`). Tests drive the
//! language server in-process through [`lsp::service`].

pub mod bench;
pub mod cli;
pub mod json;
pub mod lsp;
pub mod lsp_bench;
pub mod lsp_client;
