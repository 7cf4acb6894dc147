//! Projects with a compilation database (issue 23, Build 4): `compile_commands.json` found as
//! clangd finds it (the file's folder and its parents, each also with a `build/` subfolder) or
//! named with `--compile-commands` (the editor's `compileCommands` setting), and the
//! preprocessor flags of a file's entry in it (`-I`, `-isystem`, `-iquote`, `-D`, `-U`,
//! `-std=`, `-include`; relative paths resolved against the entry's `directory`). Other flags
//! (optimisation, warnings, output) do not change what the program means to the analysis and
//! are left out. [`Project::for_file`] is what the CLI and the language server both build a
//! file with.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The database for `file`: `compile_commands.json` in its folder or a parent's, or in a
/// `build/` subfolder of one of them, nearest first.
pub fn find(file: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(file).ok()?;
    let mut dir = abs.parent();
    while let Some(d) = dir {
        for candidate in [d.join("compile_commands.json"), d.join("build").join("compile_commands.json")] {
            if candidate.is_file() {
                return Some(candidate);
            }
        }
        dir = d.parent();
    }
    None
}

/// A database's files with their preprocessor flags.
type Entries = Vec<(PathBuf, Vec<String>)>;

/// [`parse`], kept per database while its text (`hash`) is the same: the editor reads the
/// database at every job, and a large one has thousands of paths to resolve.
fn parsed(db: &Path, hash: u64, bytes: &[u8]) -> Result<Arc<Entries>, String> {
    type Parsed = HashMap<PathBuf, (u64, Arc<Entries>)>;
    static PARSED: Mutex<Option<Parsed>> = Mutex::new(None);
    let lock = || PARSED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, entries)) = lock().as_ref().and_then(|m| m.get(db)).filter(|(h, _)| *h == hash) {
        return Ok(entries.clone());
    }
    let entries = Arc::new(parse(db, bytes)?);
    lock().get_or_insert_with(HashMap::new).insert(db.to_path_buf(), (hash, entries.clone()));
    Ok(entries)
}

/// Every file of the database at `db`, whose text is `bytes`, with its preprocessor flags.
fn parse(db: &Path, bytes: &[u8]) -> Result<Entries, String> {
    let entries: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("{} is not a compilation database: {}", db.display(), e))?;
    let entries = entries.as_array().ok_or_else(|| format!("{} is not a compilation database (not a JSON array)", db.display()))?;
    let db_dir = db.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for e in entries {
        let dir = e["directory"].as_str().map(|d| db_dir.join(d)).unwrap_or_else(|| db_dir.to_path_buf());
        let Some(f) = e["file"].as_str() else { continue };
        let args: Vec<String> = match (e["arguments"].as_array(), e["command"].as_str()) {
            (Some(a), _) => a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect(),
            (None, Some(c)) => split_command(c),
            (None, None) => Vec::new(),
        };
        out.push((canonical(&dir.join(f)), preprocessor_flags(&args, &dir)));
    }
    Ok(out)
}

/// What a file is built with in its project: the database, the preprocessor flags of the
/// file's entry, and the project's other files (linked in for the functions they define).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Project {
    pub db: PathBuf,
    /// A hash of the database's text (the editor's cache key: a changed database is never
    /// served results computed with the old one).
    pub db_hash: u64,
    pub flags: Vec<String>,
    pub linked: Vec<(PathBuf, Vec<String>)>,
}

impl Project {
    /// `file`'s project: the database `named` (`--compile-commands`, the editor's
    /// `compileCommands` setting) or the one [`find`] finds. `Ok(None)`: no database, or a
    /// found one without an entry for the file (not part of the project). An unreadable or
    /// malformed database is an error, and so is a named one without an entry for the file.
    /// The CLI and the editor both build with this (see [`Project::apply`]).
    pub fn for_file(file: &Path, named: Option<&Path>) -> Result<Option<Project>, String> {
        let Some(db) = named.map(Path::to_path_buf).or_else(|| find(file)) else { return Ok(None) };
        let bytes = analysis_engine::frontend::read_regular_file(&db).map_err(|e| format!("cannot read {}: {}", db.display(), e))?;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        std::hash::Hash::hash(&bytes, &mut h);
        let db_hash = std::hash::Hasher::finish(&h);
        let entries = parsed(&db, db_hash, &bytes)?;
        let me = canonical(file);
        let Some(flags) = entries.iter().find(|(f, _)| *f == me).map(|(_, flags)| flags.clone()) else {
            return match named {
                Some(_) => Err(format!("{} has no entry for {}", db.display(), file.display())),
                None => Ok(None),
            };
        };
        // The other files: those defining functions this one calls are linked in.
        let linked = entries.iter().filter(|(f, _)| *f != me).cloned().collect();
        Ok(Some(Project { db, db_hash, flags, linked }))
    }

    /// Builds with the file's flags and the project's other files.
    pub fn apply(&self, opts: &mut analysis_engine::cfa::build::BuildOptions) {
        opts.preprocessor_flags = self.flags.clone();
        opts.linked_files = self.linked.clone();
    }
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
}

/// The flags of a compiler command line that the preprocessor needs, with relative paths made
/// absolute against `dir`.
fn preprocessor_flags(args: &[String], dir: &Path) -> Vec<String> {
    let path = |p: &str| dir.join(p).display().to_string();
    let mut out = Vec::new();
    let mut i = 1; // args[0] is the compiler
    while i < args.len() {
        let a = args[i].as_str();
        let next = args.get(i + 1).map(String::as_str);
        let with_path = ["-I", "-isystem", "-iquote", "-include"];
        if let Some(flag) = with_path.iter().find(|f| a == **f) {
            if let Some(p) = next {
                out.push(flag.to_string());
                out.push(path(p));
                i += 2;
                continue;
            }
        } else if let Some(p) = a.strip_prefix("-I").filter(|p| !p.is_empty()) {
            out.push(format!("-I{}", path(p)));
        } else if a == "-D" || a == "-U" {
            if let Some(d) = next {
                out.push(format!("{a}{d}"));
                i += 2;
                continue;
            }
        } else if a.starts_with("-D") || a.starts_with("-U") || a.starts_with("-std=") {
            out.push(a.to_string());
        }
        i += 1;
    }
    out
}

/// A `command` string split into words as a POSIX shell would for plain words, quotes and
/// backslashes (no expansions).
fn split_command(c: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = c.chars();
    let mut quote: Option<char> = None;
    while let Some(ch) = chars.next() {
        match (quote, ch) {
            (Some(q), c2) if c2 == q => quote = None,
            (Some('"'), '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            (Some(_), c2) => cur.push(c2),
            (None, '"' | '\'') => {
                quote = Some(ch);
                in_word = true;
            }
            (None, '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                    in_word = true;
                }
            }
            (None, c2) if c2.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c2) => {
                cur.push(c2);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_split_and_filtered() {
        let args = split_command(r#"gcc -O2 -Iinclude -I /abs -DNAME="a b" -D X=1 -UY -std=c99 -Wall -c src/main.c -o main.o"#);
        let flags = preprocessor_flags(&args, Path::new("/proj"));
        assert_eq!(flags, ["-I/proj/include", "-I", "/abs", "-DNAME=a b", "-DX=1", "-UY", "-std=c99"]);
    }
}
