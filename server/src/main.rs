//! The `cpals` binary: the command-line verifier (`check`, `report`, `replay`, `cfa`) and the
//! language server (`lsp`, also `--stdio`).

fn main() {
    // Logs go to stderr, filtered by CPALS_LOG (e.g. `CPALS_LOG=debug`); stdout stays clean
    // (it carries the language server's messages).
    let filter = tracing_subscriber::EnvFilter::try_from_env("CPALS_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(false).try_init();
    std::process::exit(cpals::cli::main());
}
