//! Both crates' modules form layers (docs/architecture.md, "Layers"): each list below is a
//! crate's modules bottom up; adding a module means placing it here.

use cpals_tests::layering::check_layers;

/// The engine's modules, bottom up (docs/architecture.md, "Layers").
const ENGINE: &[&[&str]] = &[
    // Running the user's code (and the C compiler): processes only, no program model.
    &["sandbox"],
    &["frontend"],
    &["ir"],
    &["cfa"],
    &["properties", "core"],
    // The solver kernel: no analysis, report or portfolio.
    &["smt"],
    &["invariants", "concrete", "harness"],
    &["fuzz"],
    &["config"],
    &["report"],
    // One module tree per paper, the CPAs they share first.
    &["analyses", "analyses::location", "analyses::callstack", "analyses::value"],
    &["analyses::composite", "analyses::predicate", "analyses::tra", "analyses::symbolic"],
    &["analyses::combined", "analyses::template", "analyses::summaries", "analyses::cells", "analyses::guesses"],
    // Whole-program Horn clauses, on the summary analysis's rules and the templates' forms.
    &["analyses::chc"],
    &["portfolio"],
];

/// The server's modules, bottom up (docs/architecture.md, "Layers").
const SERVER: &[&[&str]] = &[
    // What cpals says about a verdict, and the formats it writes.
    &["messages", "json", "yaml", "invariant_text", "compile_db"],
    &["evidence", "html::layout", "sarif"],
    &["witness", "html"],
    // The language server, from positions up to the transport.
    &["lsp::proto", "lsp::pool", "lsp::progress", "lsp::session::settings"],
    &["lsp::session::document"],
    &["lsp::session::results"],
    &["lsp::job"],
    &["lsp::session"],
    &["lsp::handlers::code_lens", "lsp::handlers::diagnostics", "lsp::handlers::hover", "lsp::handlers::inlay_hints"],
    &["lsp::scheduler"],
    &["lsp::handlers::commands", "lsp::handlers::text_document", "lsp::handlers::watched_files"],
    &["lsp::handlers"],
    &["lsp::backend"],
    &["lsp::transport"],
    &["lsp"],
    // The command line.
    &["cli::args", "cli::watchdog"],
    &["cli::check", "cli::replay", "cli::cfa"],
    &["cli::report"],
    &["cli"],
];

fn src(krate: &str) -> std::path::PathBuf {
    cpals_tests::root().join(krate).join("src")
}

#[test]
fn engine_modules_use_only_lower_layers() {
    let problems = check_layers(&src("analysis-engine"), ENGINE);
    assert!(problems.is_empty(), "engine layering (tests/tests/layering.rs):\n{}", problems.join("\n"));
}

#[test]
fn server_modules_use_only_lower_layers() {
    let problems = check_layers(&src("server"), SERVER);
    assert!(problems.is_empty(), "server layering (tests/tests/layering.rs):\n{}", problems.join("\n"));
}

#[test]
fn a_use_against_the_order_is_reported() {
    let mut layers = SERVER.to_vec();
    let bottom = layers.remove(0);
    layers.push(bottom);
    let problems = check_layers(&src("server"), &layers);
    assert!(problems.iter().any(|p| p.starts_with("`evidence` (layer 0) uses `messages`")), "{problems:#?}");
    // The solver kernel above an analysis: the analysis's uses of it are breaches.
    let mut layers = ENGINE.to_vec();
    let smt = layers.remove(layers.iter().position(|l| l == &["smt"]).expect("the smt layer"));
    layers.push(smt);
    let problems = check_layers(&src("analysis-engine"), &layers);
    assert!(problems.iter().any(|p| p.starts_with("`analyses::predicate") && p.contains("uses `smt")), "{problems:#?}");
}
