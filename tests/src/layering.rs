//! The layering check of both crates: a module may use the modules of the layers below its
//! own, never those of its own layer or above, so the modules form no import circle.
//!
//! A module is a file of `src/` (`lsp/job.rs` is `lsp::job`, `lsp/mod.rs` is `lsp`; an
//! inline `mod tests` belongs to its file). A layer entry covers its module and the modules
//! under it that no longer entry names; the modules one entry covers are one unit and may use
//! each other. What counts as a use (comment lines are skipped):
//! - a path `crate::a::b::…`, `use crate::a::{b, c::{d}}` included: a use of the longest
//!   module it names;
//! - `use super::…` at the start of a line (a file's own imports; the indented `use super::*`
//!   of a test module is the file itself): the same, from the parent module;
//! - in a file that declares `mod c;`, a path `c::…`: a use of its child `c`.

use std::collections::BTreeSet;
use std::path::Path;

/// Every breach of `layers` in the crate whose sources are in `src` (the crate roots
/// `lib.rs` and `main.rs` are not checked).
pub fn check_layers(src: &Path, layers: &[&[&str]]) -> Vec<String> {
    let files = rust_files(src);
    let modules: BTreeSet<String> = files.iter().filter_map(|(m, _)| m.clone()).collect();
    let mut problems = Vec::new();
    for entry in layers.iter().flat_map(|l| l.iter()) {
        if !modules.contains(*entry) {
            problems.push(format!("`{entry}` is listed but there is no such module"));
        }
    }
    let place = |module: &str| -> Option<(usize, &str)> {
        layers
            .iter()
            .enumerate()
            .flat_map(|(i, l)| l.iter().map(move |e| (i, *e)))
            .filter(|(_, e)| module == *e || module.starts_with(&format!("{e}::")))
            .max_by_key(|(_, e)| e.len())
    };
    for (module, text) in &files {
        let Some(module) = module else { continue };
        let Some((layer, entry)) = place(module) else {
            problems.push(format!("`{module}` is in no layer"));
            continue;
        };
        for used in uses(module, text, &modules) {
            let Some((used_layer, used_entry)) = place(&used) else { continue };
            if used_entry != entry && used_layer >= layer {
                problems.push(format!("`{module}` (layer {layer}) uses `{used}` (layer {used_layer})"));
            }
        }
    }
    problems
}

/// Every `.rs` file under `dir` with its module path (`None` for a crate root).
fn rust_files(dir: &Path) -> Vec<(Option<String>, String)> {
    fn walk(dir: &Path, prefix: &[String], out: &mut Vec<(Option<String>, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).expect("source folder").flatten().map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            let name = path.file_stem().expect("file name").to_string_lossy().into_owned();
            if path.is_dir() {
                let mut p = prefix.to_vec();
                p.push(name);
                walk(&path, &p, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let mut p = prefix.to_vec();
                let root = prefix.is_empty() && (name == "lib" || name == "main");
                if name != "mod" {
                    p.push(name);
                }
                let module = (!root).then(|| p.join("::"));
                out.push((module, std::fs::read_to_string(&path).expect("source file")));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &[], &mut out);
    out
}

/// The modules `module` (source `text`) uses, other than itself, by the rules at the top.
fn uses(module: &str, text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let code: Vec<&str> = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect();
    let mut paths = Vec::new();
    for line in &code {
        for (i, _) in line.match_indices("crate::") {
            if !preceded_by_ident(line, i) {
                paths.extend(expand(&line[i + "crate::".len()..]));
            }
        }
        if let Some(rest) = line.strip_prefix("use super::").or_else(|| line.strip_prefix("pub use super::")) {
            let parent = module.rsplit_once("::").map(|(p, _)| p.to_string()).unwrap_or_default();
            paths.extend(expand(rest).into_iter().map(|p| if parent.is_empty() { p } else { format!("{parent}::{p}") }));
        }
    }
    let children: Vec<&str> = code
        .iter()
        .filter_map(|l| l.trim().strip_prefix("pub ").unwrap_or(l.trim()).strip_prefix("mod "))
        .filter_map(|l| l.strip_suffix(';'))
        .collect();
    for line in &code {
        for child in &children {
            for (i, _) in line.match_indices(&format!("{child}::")) {
                if !preceded_by_ident(line, i) && !line[..i].ends_with("::") {
                    paths.extend(expand(&line[i..]).into_iter().map(|p| format!("{module}::{p}")));
                }
            }
        }
    }
    paths
        .into_iter()
        .filter_map(|p| {
            // The longest module the path names.
            let segments: Vec<&str> = p.split("::").collect();
            (1..=segments.len()).rev().map(|n| segments[..n].join("::")).find(|m| modules.contains(m))
        })
        .filter(|m| m != module)
        .collect()
}

fn preceded_by_ident(line: &str, i: usize) -> bool {
    line[..i].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_')
}

/// The paths a path expression starting at `s` names: `a::b::c(…)` gives `a::b::c`,
/// `a::{b, c::{d, e}}` gives `a::b`, `a::c::d`, `a::c::e`.
fn expand(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    expand_into(s, "", &mut out);
    out
}

/// Reads one path (or brace group) from `s`, prefixed with `prefix`; returns the bytes read.
fn expand_into(s: &str, prefix: &str, out: &mut Vec<String>) -> usize {
    let mut path = String::from(prefix);
    let mut i = 0;
    let b = s.as_bytes();
    loop {
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        let segment = &s[start..i];
        if !segment.is_empty() && segment != "self" {
            if !path.is_empty() {
                path.push_str("::");
            }
            path.push_str(segment);
        }
        if s[i..].starts_with("::{") {
            i += 3;
            loop {
                while i < b.len() && (b[i] == b' ' || b[i] == b',') {
                    i += 1;
                }
                if i >= b.len() || b[i] == b'}' {
                    return i + 1;
                }
                let read = expand_into(&s[i..], &path, out);
                if read == 0 {
                    return i;
                }
                i += read;
            }
        } else if s[i..].starts_with("::") {
            i += 2;
        } else {
            if !path.is_empty() {
                out.push(path);
            }
            return i;
        }
    }
}

#[cfg(test)]
#[test]
fn paths_and_brace_groups_are_read() {
    assert_eq!(expand("lsp::job::run(x)"), vec!["lsp::job::run"]);
    assert_eq!(
        expand("lsp::{handlers::{self, code_lens, commands::Effect}, job};"),
        vec!["lsp::handlers", "lsp::handlers::code_lens", "lsp::handlers::commands::Effect", "lsp::job"]
    );
    let modules: BTreeSet<String> = ["a", "a::b", "c", "c::d"].iter().map(|s| s.to_string()).collect();
    let text = "//! crate::c is only mentioned\nmod b;\nuse crate::c::d::{X, Y};\nfn f() { b::g(); crate::c::h(); }\n";
    assert_eq!(uses("a", text, &modules), ["a::b", "c", "c::d"].iter().map(|s| s.to_string()).collect());
    let text = "use super::d::X;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n";
    assert_eq!(uses("c::e", text, &modules), ["c::d"].iter().map(|s| s.to_string()).collect());
}
