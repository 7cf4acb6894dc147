//! Helpers for the end-to-end tests: the fixture format (expected verdicts written in the C
//! file) and the path of the built `cpals` binary.

pub mod layering;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The workspace's root directory.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// The `cpals` binary under test: `cpals-e2e`, this package's build of the server's own
/// `server/src/main.rs` (see `Cargo.toml`). Cargo builds a package's binaries before its
/// integration tests, in the same profile, so it is never stale and no test runs cargo; it
/// lies in the profile directory, beside the test executable's `deps` folder.
pub fn cpals_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target profile directory");
    let bin = dir.join(format!("cpals-e2e{}", std::env::consts::EXE_SUFFIX));
    assert!(bin.is_file(), "{} is missing: cargo builds it before the tests of cpals-tests", bin.display());
    bin
}

/// A folder whose `cpals` is a link to [`cpals_bin`], for tools that look the binary up by its
/// name (BenchExec's `--tool-directory`, an editor with `cpals` on its `PATH`). Not
/// `cpals-e2e.d`: that is cargo's dependency file of the binary, and a folder there made the
/// next `cargo build` fail.
pub fn cpals_dir() -> PathBuf {
    let bin = cpals_bin();
    let dir = bin.with_file_name("cpals-e2e-path");
    let link = dir.join(format!("cpals{}", std::env::consts::EXE_SUFFIX));
    if !link.exists() {
        std::fs::create_dir_all(&dir).expect("a folder for the cpals link");
        match std::os::unix::fs::symlink(&bin, &link) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => panic!("linking {} to {}: {e}", link.display(), bin.display()),
        }
    }
    dir
}

/// What a fixture expects of one property, per analysis (`None` key: every analysis).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expectation {
    pub line: u32,
    pub verdicts: BTreeMap<Option<String>, String>,
    /// The verdicts of the line's out-of-bounds checks (`// BOUNDS-UNSAFE`); without one,
    /// every array access of the line must be proved within bounds.
    pub bounds: BTreeMap<Option<String>, String>,
}

impl Expectation {
    pub fn for_analysis(&self, analysis: &str) -> Option<&str> {
        self.verdicts.get(&Some(analysis.to_string())).or_else(|| self.verdicts.get(&None)).map(|s| s.as_str())
    }

    /// The expected verdict of the line's out-of-bounds checks under `analysis`.
    pub fn bounds_for(&self, analysis: &str) -> Option<&str> {
        self.bounds.get(&Some(analysis.to_string())).or_else(|| self.bounds.get(&None)).map(|s| s.as_str())
    }
}

/// A parsed fixture.
#[derive(Clone, Debug)]
pub struct Fixture {
    pub path: PathBuf,
    pub analyses: Vec<String>,
    pub args: Vec<String>,
    pub expectations: Vec<Expectation>,
    /// `STATS[analysis]: key=value …`
    pub stats: BTreeMap<String, Vec<(String, String)>>,
    pub unreachable: Option<Vec<u32>>,
    /// `TRACE[analysis]: name=value …`
    pub trace: BTreeMap<String, Vec<(String, String)>>,
    /// `TRACE-TEXT[analysis]: line: text; text …`: the texts of the counterexample's steps on
    /// that line, in order (the first trace with steps there).
    pub trace_text: BTreeMap<String, Vec<(u32, Vec<String>)>>,
    /// `PREDICATES[analysis]: p1; p2 …`: predicates the analysis must derive.
    pub predicates: BTreeMap<String, Vec<String>>,
    /// `INVARIANT[analysis]: line: C expression`: the invariant reported at a loop head.
    pub invariants: BTreeMap<String, Vec<(u32, String)>>,
    /// `TIMEOUT[analysis]: seconds`: a wall-clock limit for an analysis that does not end by
    /// itself on this program (the others run without one, bounded by work).
    pub timeouts: BTreeMap<String, u64>,
}

impl Fixture {
    /// What the program is built for, from `ARGS`: `--property unreach-call|unreach-label`
    /// (the benchmark properties by name; the entry is then `main`, as their property files
    /// say), `--function NAME` and `--memory off`.
    pub fn build_options(&self) -> analysis_engine::cfa::build::BuildOptions {
        use analysis_engine::config::PropertySet;
        let mut opts = analysis_engine::cfa::build::BuildOptions::default();
        for w in self.args.windows(2) {
            match w[0].as_str() {
                "--property" => {
                    opts.properties = match w[1].as_str() {
                        "unreach-call" => PropertySet::UNREACH_CALL,
                        "unreach-label" => PropertySet::UNREACH_LABEL,
                        other => panic!("{}: unknown property `{}` in ARGS", self.path.display(), other),
                    };
                    opts.entry.get_or_insert_with(|| "main".into());
                }
                "--function" => opts.entry = Some(w[1].clone()),
                "--memory" => opts.no_memory_model = w[1] == "off",
                _ => {}
            }
        }
        opts
    }
}

fn tagged(s: &str, key: &str) -> Option<(Option<String>, String)> {
    let rest = s.split(key).nth(1)?;
    if let Some(r) = rest.strip_prefix('[') {
        let close = r.find(']')?;
        let analysis = r[..close].to_string();
        let body = r[close + 1..].strip_prefix(':')?.trim().to_string();
        Some((Some(analysis), body))
    } else {
        Some((None, rest.strip_prefix(':')?.trim().to_string()))
    }
}

fn pairs(s: &str) -> Vec<(String, String)> {
    s.split_whitespace().filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_string(), v.to_string()))).collect()
}

pub fn parse_fixture(path: &Path) -> Fixture {
    let text = std::fs::read_to_string(path).expect("fixture readable");
    let mut f = Fixture {
        path: path.to_path_buf(),
        analyses: vec!["value".into()],
        args: Vec::new(),
        expectations: Vec::new(),
        stats: BTreeMap::new(),
        unreachable: None,
        trace: BTreeMap::new(),
        trace_text: BTreeMap::new(),
        predicates: BTreeMap::new(),
        invariants: BTreeMap::new(),
        timeouts: BTreeMap::new(),
    };
    for (i, line) in text.lines().enumerate() {
        let lineno = i as u32 + 1;
        if let Some((_, body)) = tagged(line, "ANALYSES") {
            f.analyses = body.split_whitespace().map(String::from).collect();
        }
        if let Some((_, body)) = tagged(line, "ARGS") {
            f.args = body.split_whitespace().map(String::from).collect();
        }
        if let Some((Some(a), body)) = tagged(line, "STATS") {
            f.stats.insert(a, pairs(&body));
        }
        if let Some((Some(a), body)) = tagged(line, "TRACE") {
            f.trace.insert(a, pairs(&body));
        }
        if let Some((Some(a), body)) = tagged(line, "TRACE-TEXT") {
            if let Some((l, texts)) = body.split_once(':') {
                if let Ok(l) = l.trim().parse() {
                    let texts = texts.split(';').map(|t| t.trim().to_string()).filter(|t| !t.is_empty()).collect();
                    f.trace_text.entry(a).or_default().push((l, texts));
                }
            }
        }
        if let Some((Some(a), body)) = tagged(line, "PREDICATES") {
            f.predicates.insert(a, body.split(';').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect());
        }
        if let Some((Some(a), body)) = tagged(line, "INVARIANT") {
            if let Some((l, text)) = body.split_once(':') {
                if let Ok(l) = l.trim().parse() {
                    f.invariants.entry(a).or_default().push((l, text.trim().to_string()));
                }
            }
        }
        if let Some((Some(a), body)) = tagged(line, "TIMEOUT") {
            if let Some(secs) = body.split_whitespace().next().and_then(|n| n.parse().ok()) {
                f.timeouts.insert(a, secs);
            }
        }
        if let Some((_, body)) = tagged(line, "UNREACHABLE") {
            f.unreachable = Some(body.split_whitespace().filter_map(|n| n.parse().ok()).collect());
        }
        // `// SAFE`, `// UNSAFE`, `// UNKNOWN`, optionally `[analysis]`, at the end of a line.
        let Some(idx) = line.rfind("//") else { continue };
        let comment = &line[idx + 2..];
        // `// BOUNDS-UNSAFE` (also `BOUNDS-SAFE`, `BOUNDS-UNKNOWN`, with `[analysis]`): the
        // verdict of the line's out-of-bounds checks.
        let mut verdicts = BTreeMap::new();
        let mut bounds = BTreeMap::new();
        for word in comment.split_whitespace() {
            let (verdict, analysis) = match word.split_once('[') {
                Some((v, a)) => (v, Some(a.trim_end_matches(']').to_string())),
                None => (word, None),
            };
            if matches!(verdict, "SAFE" | "UNSAFE" | "UNKNOWN") {
                verdicts.insert(analysis, verdict.to_string());
            } else if let Some(v @ ("SAFE" | "UNSAFE" | "UNKNOWN")) = verdict.strip_prefix("BOUNDS-") {
                bounds.insert(analysis, v.to_string());
            }
        }
        if !verdicts.is_empty() || !bounds.is_empty() {
            f.expectations.push(Expectation { line: lineno, verdicts, bounds });
        }
    }
    f
}

/// Every fixture under `fixtures/`, sorted.
pub fn fixtures() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "c" || x == "i") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join("fixtures"), &mut out);
    out.sort();
    out
}

/// The `file:` URI of a path (for language-server tests).
pub fn file_uri(path: &Path) -> String {
    let abs = if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().expect("cwd").join(path) };
    let mut s = String::from("file://");
    for part in abs.components().skip(1) {
        s.push('/');
        for b in part.as_os_str().to_string_lossy().bytes() {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                s.push(b as char);
            } else {
                s.push_str(&format!("%{:02X}", b));
            }
        }
    }
    s
}

/// A URI in the temporary folder for a buffer that is never saved to disk.
pub fn temp_uri(name: &str) -> String {
    file_uri(&std::env::temp_dir().join(name))
}

/// A Python interpreter with `jsonschema`, `PyYAML` and (for the BenchExec test) `benchexec`:
/// `CPALS_PYTHON`, then `~/.cache/cpals/tools-venv/bin/python` (where `.ci/run` installs
/// them), then `python3`. Panics with install instructions when none has the modules.
pub fn python_with(modules: &[&str]) -> PathBuf {
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("CPALS_PYTHON") {
        candidates.push(PathBuf::from(p));
    }
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".cache/cpals/tools-venv/bin/python"));
    }
    candidates.push(PathBuf::from("python3"));
    let probe = modules.iter().map(|m| format!("import {m}")).collect::<Vec<_>>().join("; ");
    for c in &candidates {
        let ok = std::process::Command::new(c).args(["-c", &probe]).output().is_ok_and(|o| o.status.success());
        if ok {
            return c.clone();
        }
    }
    panic!(
        "no Python with the modules {modules:?} (tried {candidates:?}). Install them with \
         `python3 -m venv ~/.cache/cpals/tools-venv && ~/.cache/cpals/tools-venv/bin/pip install benchexec jsonschema pyyaml` \
         (what .ci/run does) or set CPALS_PYTHON"
    );
}

/// Reads a YAML file as JSON (through Python's PyYAML, so that the test does not trust
/// cpals's own writer).
pub fn yaml_as_json(path: &Path) -> serde_json::Value {
    let py = python_with(&["yaml"]);
    let out = std::process::Command::new(py)
        .args(["-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1], encoding='utf-8'))))"])
        .arg(path)
        .output()
        .expect("python runs");
    assert!(out.status.success(), "{} is not YAML: {}", path.display(), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON from python")
}

/// Validates witness files with `tests/witness-schema/validate.py`; `Err` with its report.
pub fn validate_witnesses(paths: &[PathBuf]) -> Result<String, String> {
    let py = python_with(&["jsonschema", "yaml", "referencing"]);
    let out =
        std::process::Command::new(py).arg(root().join("tests/witness-schema/validate.py")).args(paths).output().expect("python runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        Ok(text)
    } else {
        Err(text)
    }
}

/// A fresh temporary directory for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cpals-{}-{}", name, std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temporary directory");
    d
}

/// A program (for the CLI and report tests) with a violation whose counterexample has an input (so it has a harness and a
/// violation witness) and string literals the HTML report must not take for markup.
pub const SCRIPT_STRINGS_PROGRAM: &str = r#"extern int __VERIFIER_nondet_int(void);
extern void reach_error(void);
int main(void) {
  const char *tag = "<!--<script>";
  const char *end = "</script>";
  int x = __VERIFIER_nondet_int();
  if (x == 3) {
    reach_error();
  }
  return tag != end;
}
"#;
