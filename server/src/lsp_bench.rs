//! `cpals lsp-bench`: replays edits against the language server (placeholder).

#[derive(clap::Args, Clone)]
pub struct LspBenchArgs {}

pub fn run(_: &LspBenchArgs) -> i32 {
    0
}
