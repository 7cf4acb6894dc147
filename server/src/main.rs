//! The `cpals` binary: the command-line verifier (`check`, `cfa`, `bench`) and the language
//! server (`lsp`).

mod cli;
mod json;

fn main() {
    std::process::exit(cli::main());
}
