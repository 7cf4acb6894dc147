//! C front end: runs the preprocessor on a buffer, parses the result with lang-c, and keeps the
//! line map that takes every span back to the user's file, line and column.
//!
//! Broken input is data, not a crash: every failure is a [`FrontendError`] with a position
//! where one is known.

pub mod linemap;
mod linking;
pub mod models;
pub mod rewrite;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use lang_c::ast::TranslationUnit;
use lang_c::driver::{parse_preprocessed, Config};

pub use linemap::{LineMap, SrcPos};

/// Deepest bracket nesting the front end accepts; deeper input is refused before parsing so
/// that no recursive pass can exhaust the stack.
pub const MAX_NESTING: usize = 256;

/// Largest preprocessed text the front end parses (bytes).
pub const MAX_PP_BYTES: usize = 8 << 20;

/// The text to verify and the path it belongs to (the path names it in positions and sets
/// the include directory; the text need not be saved).
#[derive(Clone, Debug)]
pub struct SourceInput {
    pub path: PathBuf,
    pub text: String,
}

/// Reads a file that must be a regular file: a FIFO, a device (`/dev/zero`), a socket or a
/// directory is refused at once, without waiting for data (the file is opened non-blocking,
/// so that opening a FIFO without a writer does not block, and checked before it is read).
pub fn read_regular_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let mut file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(std::io::Error::other(format!("it is {what}; only regular files are read")));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

impl SourceInput {
    /// Reads a file from disk (a regular file only, see [`read_regular_file`]).
    pub fn read(path: &Path) -> Result<SourceInput, FrontendError> {
        let bytes = read_regular_file(path).map_err(|e| FrontendError::Io { message: format!("cannot read {}: {}", path.display(), e) })?;
        let text = String::from_utf8(bytes).map_err(|_| FrontendError::Io { message: format!("{} is not UTF-8 text", path.display()) })?;
        Ok(SourceInput { path: path.to_path_buf(), text })
    }

    /// The name positions use for this input.
    pub fn display_name(&self) -> String {
        self.path.display().to_string()
    }

    /// `.i` files are already preprocessed and are read as they are.
    pub fn is_preprocessed(&self) -> bool {
        self.path.extension().is_some_and(|e| e == "i")
    }
}

/// Why a buffer could not be turned into an AST.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrontendError {
    Io { message: String },
    Preprocess { message: String, pos: Option<SrcPos> },
    Syntax { message: String, pos: SrcPos },
    TooComplex { message: String, pos: SrcPos },
}

impl FrontendError {
    pub fn message(&self) -> &str {
        match self {
            FrontendError::Io { message }
            | FrontendError::Preprocess { message, .. }
            | FrontendError::Syntax { message, .. }
            | FrontendError::TooComplex { message, .. } => message,
        }
    }

    pub fn pos(&self) -> Option<&SrcPos> {
        match self {
            FrontendError::Io { .. } => None,
            FrontendError::Preprocess { pos, .. } => pos.as_ref(),
            FrontendError::Syntax { pos, .. } | FrontendError::TooComplex { pos, .. } => Some(pos),
        }
    }
}

impl std::fmt::Display for FrontendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.pos() {
            Some(p) => write!(f, "{}:{}:{}: {}", p.file, p.line, p.col, self.message()),
            None => write!(f, "{}", self.message()),
        }
    }
}

/// A parsed translation unit with the text it was parsed from.
pub struct Parsed {
    pub unit: TranslationUnit,
    /// The preprocessed text; lang-c spans are byte offsets into it.
    pub pp: String,
    pub linemap: LineMap,
}

/// Preprocesses and parses a buffer for the LP64 data model.
pub fn parse(input: &SourceInput) -> Result<Parsed, FrontendError> {
    parse_for(input, false)
}

/// Preprocesses (with `ilp32`, for the ILP32 data model, with the 32-bit target's headers,
/// `cc -m32`, so that `int64_t` and friends are `long long` there) and parses a buffer.
pub fn parse_for(input: &SourceInput, ilp32: bool) -> Result<Parsed, FrontendError> {
    parse_within(input, ilp32, &|| None)
}

/// Asked while the preprocessor runs: why it must stop now (a job's deadline passed, the job
/// was cancelled), or `None` to let it go on.
pub type Stop<'a> = &'a dyn Fn() -> Option<&'static str>;

/// [`parse_for`] under a job's limits: the preprocessor is stopped as soon as `stop` gives a
/// reason (an included FIFO, a slow expansion), with an error that names it.
pub fn parse_within(input: &SourceInput, ilp32: bool, stop: Stop<'_>) -> Result<Parsed, FrontendError> {
    parse_with_flags(input, ilp32, &[], stop)
}

/// [`parse_within`] with the file's own preprocessor flags (`-I`, `-D`, … from a
/// `compile_commands.json`), given to `cc -E` after cpals's own.
pub fn parse_with_flags(input: &SourceInput, ilp32: bool, flags: &[String], stop: Stop<'_>) -> Result<Parsed, FrontendError> {
    parse_project(input, ilp32, flags, &[], stop)
}

/// [`parse_with_flags`] in a project: the files of `linked` (each with its own flags) that
/// define functions the unit calls without defining them are preprocessed on their own and
/// appended, transitively (whole-program for the file's entries). A linked file that does not
/// preprocess or parse is left out (its functions stay external).
pub fn parse_project(
    input: &SourceInput,
    ilp32: bool,
    flags: &[String],
    linked: &[(PathBuf, Vec<String>)],
    stop: Stop<'_>,
) -> Result<Parsed, FrontendError> {
    let name = input.display_name();
    // Checked before the preprocessor runs: `cc -E` drops NUL bytes with a warning.
    if let Some(off) = input.text.find('\0') {
        let before = &input.text[..off];
        let line = before.matches('\n').count() + 1;
        let col = off - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        return Err(FrontendError::Syntax {
            message: "input contains NUL bytes; it does not look like C source".into(),
            pos: SrcPos { file: name.as_str().into(), line: line as u32, col: col as u32 },
        });
    }
    // `.i` files are parsed without the preprocessor, which would have removed comments.
    let (pp, follow_markers) = if input.is_preprocessed() {
        // A byte-order mark is dropped (it is before any column), comments are blanked.
        (rewrite::blank_comments(input.text.strip_prefix('\u{FEFF}').unwrap_or(&input.text)), false)
    } else {
        (preprocess(input, ilp32, flags, stop)?, true)
    };
    if pp.len() > MAX_PP_BYTES {
        return Err(FrontendError::TooComplex {
            message: format!("preprocessed input is {} bytes; the limit is {} bytes", pp.len(), MAX_PP_BYTES),
            pos: SrcPos { file: name.as_str().into(), line: 1, col: 1 },
        });
    }
    let linemap = LineMap::new(&pp, &name, follow_markers);
    // Columns of the user's lines as written, not as `cc -E` re-spaced and expanded them.
    let linemap = if follow_markers { linemap.aligned(&pp, &input.text) } else { linemap };
    if pp.contains('\0') {
        return Err(FrontendError::Syntax {
            message: "input contains NUL bytes; it does not look like C source".into(),
            pos: linemap.pos(pp.find('\0').unwrap_or(0)),
        });
    }
    if let Some(off) = too_deep(&pp) {
        return Err(FrontendError::TooComplex {
            message: format!("brackets nest deeper than {} levels", MAX_NESTING),
            pos: linemap.pos(off),
        });
    }
    let mut parsed = parse_text(&pp, linemap.clone(), &name)?;
    let (mut pp, mut linemap) = (pp, linemap);
    if !linked.is_empty() {
        let mut used = linking::undefined_calls(&parsed.unit);
        let mut appended = false;
        for (path, flags) in linked {
            if used.is_empty() {
                break;
            }
            let Ok(other) = SourceInput::read(path) else { continue };
            if other.path == input.path || !used.iter().any(|n| other.text.contains(n.as_str())) {
                continue;
            }
            let Ok(other_pp) = preprocess(&other, ilp32, flags, stop) else { continue };
            let other_map = LineMap::new(&other_pp, &other.display_name(), true);
            let Ok(other_parsed) = parse_text(&other_pp, other_map.clone(), &other.display_name()) else { continue };
            let defined = linking::defined_functions(&other_parsed.unit);
            if !used.iter().any(|n| defined.contains(n)) {
                continue;
            }
            if !pp.ends_with('\n') {
                pp.push('\n');
            }
            linemap.append_map(pp.len(), &other_map);
            pp.push_str(&other_pp);
            appended = true;
            used.extend(linking::undefined_calls(&other_parsed.unit));
            used.retain(|n| !defined.contains(n));
        }
        if appended {
            parsed = parse_text(&pp, linemap.clone(), &name)?;
        }
    }
    // The C library models the unit calls, appended and parsed with it.
    let wanted = models::needed(&parsed.unit);
    if wanted.is_empty() {
        return Ok(parsed);
    }
    if !pp.ends_with('\n') {
        pp.push('\n');
    }
    for (file, line, text) in models::units(&wanted) {
        linemap.append(pp.len(), &text, &file, line);
        pp.push_str(&text);
    }
    parse_text(&pp, linemap, &name)
}

/// Rewrites (`rewrite.rs`) and parses preprocessed text whose positions `linemap` maps.
fn parse_text(pp: &str, linemap: LineMap, name: &str) -> Result<Parsed, FrontendError> {
    let (pp, edits) = rewrite::rewrite(pp);
    let linemap = linemap.with_edits(edits);
    let config = Config::with_gcc();
    match parse_preprocessed(&config, pp) {
        Ok(p) => Ok(Parsed { unit: p.unit, pp: p.source, linemap }),
        Err(e) => {
            let mut expected: Vec<&str> = e.expected.iter().copied().collect();
            expected.sort_unstable();
            let more = expected.len() > 6;
            expected.truncate(6);
            let list = expected.iter().map(|t| format!("`{}`", t)).collect::<Vec<_>>().join(", ");
            let list = if more { format!("one of {}, …", list) } else { list };
            let pos = linemap.pos(e.offset);
            if *pos.file != *name {
                // Not the user's text (an included file, maybe not C at all: `/etc/passwd`, a
                // binary): its contents are not echoed, only where the error is.
                let message =
                    format!("syntax error in the included file {}, line {}, column {} (expected {})", pos.file, pos.line, pos.col, list);
                return Err(FrontendError::Syntax { message, pos });
            }
            let found = token_at(&e.source, e.offset);
            let mut message = short_syntax_message(&found, &e.expected.iter().copied().collect::<Vec<_>>(), &list);
            // `int g(void) {` inside a block: most likely a `}` missing above.
            let before = e.source.get(..e.offset).unwrap_or("");
            if found == "{" && before.trim_end().ends_with(')') && before.matches('{').count() > before.matches('}').count() {
                message = "syntax error: a function defined inside another (is a `}` missing above?)".into();
            }
            Err(FrontendError::Syntax { message, pos })
        }
    }
}

/// Runs `cc -E` on the buffer, naming it after its path so that the line markers point at it.
fn preprocess(input: &SourceInput, ilp32: bool, flags: &[String], stop: Stop<'_>) -> Result<String, FrontendError> {
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    if ilp32 {
        let mut extra = vec!["-m32"];
        extra.extend(&flags);
        match preprocess_with(input, &extra, stop) {
            Ok(t) => return Ok(t),
            // Without the 32-bit headers (`gnu/stubs-32.h`) the 64-bit ones are used, as before.
            Err(FrontendError::Preprocess { message, .. }) if message.contains("stubs-32") || message.contains("-m32") => {}
            Err(e) => return Err(e),
        }
    }
    preprocess_with(input, &flags, stop)
}

/// Limits of one `cc -E` run: its address space and CPU time (each process of the compiler
/// driver has its own, `cc1` included), and the wall-clock time until the whole process group
/// is killed. A file that includes `/dev/zero` or expands a macro bomb ends with a clear error
/// instead of growing `cc1` to gigabytes or running for minutes. The job's [`Stop`] ends it
/// sooner: at the job's deadline or when the job is cancelled.
const PP_ADDRESS_SPACE: u64 = 2 << 30;
const PP_CPU_SECONDS: u64 = 20;
const PP_WALL: std::time::Duration = std::time::Duration::from_secs(60);

fn preprocess_with(input: &SourceInput, extra: &[&str], stop: Stop<'_>) -> Result<String, FrontendError> {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let name = input.display_name();
    let dir = input.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let cc = crate::sandbox::objcache::compiler();
    // Its own process group (a kill reaches `cc1` as well as the driver), memory and CPU
    // limits, and it dies with cpals.
    let limits = crate::sandbox::Limits {
        cpu_seconds: PP_CPU_SECONDS,
        address_space: PP_ADDRESS_SPACE,
        file_size: None,
        open_files: None,
        processes: None,
    };
    let mut cmd = crate::sandbox::launch::command(&cc, limits)
        .map_err(|e| FrontendError::Preprocess { message: format!("cannot run the C preprocessor `{} -E`: {}", cc, e), pos: None })?;
    cmd.args(["-E", "-x", "c", "-std=gnu11", "-D__CPALS__"])
        .args(extra)
        .arg("-I")
        .arg(dir)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| FrontendError::Preprocess { message: format!("cannot run the C preprocessor `{} -E`: {}", cc, e), pos: None })?;
    let pid = child.id() as libc::pid_t;
    let mut text = String::with_capacity(input.text.len() + 64);
    text.push_str(&format!("#line 1 \"{}\"\n", name.replace('\\', "\\\\").replace('"', "\\\"")));
    text.push_str(&input.text);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    // Feed stdin and drain both outputs on threads, so that no pipe can fill up; the output is
    // read only up to the parser's limit.
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(text.as_bytes());
    });
    let too_big = Arc::new(AtomicBool::new(false));
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let flag = too_big.clone();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = (&mut stdout).take(MAX_PP_BYTES as u64 + 1).read_to_end(&mut out);
        if out.len() > MAX_PP_BYTES {
            flag.store(true, Ordering::SeqCst);
        }
        out
    });
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let err_reader = std::thread::spawn(move || {
        let mut err = Vec::new();
        let _ = (&mut stderr).take(1 << 20).read_to_end(&mut err);
        // Drain the rest without keeping it.
        let _ = std::io::copy(&mut stderr, &mut std::io::sink());
        err
    });
    let started = std::time::Instant::now();
    let mut killed: Option<&str> = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {}
            Err(_) => break None,
        }
        let why = if too_big.load(Ordering::SeqCst) {
            Some("its output exceeds the input limit")
        } else if started.elapsed() > PP_WALL {
            Some("it ran longer than 60 s")
        } else {
            stop()
        };
        if let Some(why) = why {
            // SAFETY: signals the process group the child leads (it called setpgid).
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
            killed = Some(why);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    // The driver may be gone while `cc1` still writes: end the group before joining.
    // SAFETY: as above; the group may be gone already.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
    let _ = writer.join();
    let out = reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    let pos = Some(SrcPos { file: name.as_str().into(), line: 1, col: 1 });
    if too_big.load(Ordering::SeqCst) {
        return Err(FrontendError::TooComplex {
            message: format!("the preprocessed input exceeds the limit of {} bytes", MAX_PP_BYTES),
            pos: SrcPos { file: name.as_str().into(), line: 1, col: 1 },
        });
    }
    if let Some(why) = killed {
        return Err(FrontendError::Preprocess { message: format!("the C preprocessor was stopped: {}", why), pos });
    }
    let Some(status) = status else {
        return Err(FrontendError::Preprocess { message: "the C preprocessor could not be waited for".into(), pos });
    };
    if let Some(sig) = status.signal() {
        let why = match sig {
            libc::SIGXCPU | libc::SIGKILL => format!("it used more than {} s of CPU time", PP_CPU_SECONDS),
            libc::SIGSEGV | libc::SIGABRT => format!("it ran out of memory (limit {} GiB)", PP_ADDRESS_SPACE >> 30),
            s => format!("it was killed by signal {}", s),
        };
        return Err(FrontendError::Preprocess { message: format!("the C preprocessor was stopped: {}", why), pos });
    }
    if !status.success() {
        let stderr = String::from_utf8_lossy(&err);
        if stderr.lines().any(|l| l.starts_with("cc1: out of memory") || l.contains("virtual memory exhausted")) {
            let why = format!("it ran out of memory (limit {} GiB): an included file is too large or endless", PP_ADDRESS_SPACE >> 30);
            return Err(FrontendError::Preprocess { message: format!("the C preprocessor was stopped: {}", why), pos });
        }
        return Err(preprocess_error(&stderr, &name));
    }
    String::from_utf8(out).map_err(|_| FrontendError::Preprocess { message: "the preprocessed text is not UTF-8".into(), pos: None })
}

/// The error of a failed `cc -E` from its diagnostics. Only gcc's own words for an error in
/// the user's file are kept: lines that quote source (the excerpt under a diagnostic), errors
/// in other files (whose text could be anything, `#error` lines, a binary) and unexpected
/// output are named by file and position, never echoed.
fn preprocess_error(stderr: &str, name: &str) -> FrontendError {
    let diagnostic = stderr.lines().find_map(|l| {
        let (at, msg) = l.split_once(": error: ").or_else(|| l.split_once(": fatal error: "))?;
        let mut parts = at.rsplitn(3, ':');
        let col: u32 = parts.next()?.trim().parse().ok()?;
        let line: u32 = parts.next()?.trim().parse().ok()?;
        let file = parts.next()?;
        Some((file, line, col, msg))
    });
    // The user's `#include` line that led to an error in another file.
    let include = stderr.lines().find_map(|l| {
        let l = l.trim_start();
        let at = l.strip_prefix("In file included from ").or_else(|| l.strip_prefix("from "))?;
        let (file, line) = at.trim_end_matches([':', ',']).rsplit_once(':')?;
        (file == name).then(|| SrcPos { file: name.into(), line: line.parse().unwrap_or(1), col: 1 })
    });
    match diagnostic {
        Some((file, line, col, msg)) if file == name => {
            FrontendError::Preprocess { message: msg.trim().to_string(), pos: Some(SrcPos { file: name.into(), line, col }) }
        }
        // A missing header is reported with its name wherever the `#include` is.
        Some((file, line, col, msg)) if msg.ends_with(": No such file or directory") => FrontendError::Preprocess {
            message: format!("{} (the `#include` in {}, line {}, column {})", msg.trim(), file, line, col),
            pos: include,
        },
        Some((file, line, col, _)) => FrontendError::Preprocess {
            message: format!("the C preprocessor failed in the included file {file}, line {line}, column {col}"),
            pos: include,
        },
        // The compiler driver's own complaints (`cc: error: unrecognized command-line option
        // '-m32'`) quote no file.
        None => {
            let driver = stderr.lines().find_map(|l| {
                let (prog, msg) = l.split_once(": error: ").or_else(|| l.split_once(": fatal error: "))?;
                (!prog.contains([':', ' '])).then(|| msg.trim().to_string())
            });
            FrontendError::Preprocess { message: driver.unwrap_or_else(|| "the C preprocessor failed".into()), pos: None }
        }
    }
}

/// The offset where bracket nesting first exceeds [`MAX_NESTING`], if it does.
fn too_deep(pp: &str) -> Option<usize> {
    let bytes = pp.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    let mut line_start = true;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'\n' => line_start = true,
            b'#' if line_start => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' | b'\'' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b && bytes[i] != b'\n' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(i);
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b' ' | b'\t' | b'\r' => {}
            _ => line_start = false,
        }
        if b != b' ' && b != b'\t' && b != b'\n' && b != b'\r' {
            line_start = false;
        }
        i += 1;
    }
    None
}

/// The token text at an offset, for error messages.
fn token_at(src: &str, offset: usize) -> String {
    let rest = src.get(offset..).unwrap_or("");
    let word = |c: char| c.is_alphanumeric() || c == '_';
    match rest.chars().next() {
        None => String::new(),
        Some(c) if word(c) => rest.chars().take_while(|&c| word(c)).take(24).collect(),
        Some(c) => c.to_string(),
    }
}

/// A syntax error as a person would say it, from the token found and the tokens the grammar
/// expected there (`list`: the latter, quoted, for when no shorter form fits): an
/// expression or a closing `;`, `)`, `]`, `}` missing before the token, a literal left
/// open, the end of the file inside a block.
fn short_syntax_message(found: &str, expected: &[&str], list: &str) -> String {
    let has = |t: &str| expected.contains(&t);
    // Inside a literal the grammar wants its characters, not an expression.
    if (has("\"") || has("'")) && !has("!") {
        return "syntax error: a string or character literal is not closed".into();
    }
    if found.is_empty() {
        if has("}") {
            return "syntax error: the file ends inside a block (a `}` is missing)".into();
        }
        return format!("syntax error: unexpected end of file (expected {})", list);
    }
    let before = if found.trim().is_empty() { "at the end of the line".to_string() } else { format!("before `{}`", found) };
    if has("!") && has("(") {
        return format!("syntax error: expected an expression {}", before);
    }
    for closer in [";", ")", "]", "}"] {
        if has(closer) && found != closer {
            return format!("syntax error: expected `{}` {}", closer, before);
        }
    }
    format!("syntax error: unexpected `{}` (expected {})", found.trim(), list)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(name: &str, text: &str) -> SourceInput {
        SourceInput { path: PathBuf::from(name), text: text.to_string() }
    }

    #[test]
    fn syntax_error_has_user_position() {
        let err = parse(&input("/tmp/bad.c", "int main(void) {\n  int x = ;\n}\n")).err().unwrap();
        let pos = err.pos().unwrap();
        assert_eq!((pos.line, pos.col), (2, 11), "{err}");
        assert!(err.message().contains("syntax error"), "{err}");
    }

    #[test]
    fn syntax_errors_say_what_is_missing_at_the_token() {
        let msg = |body: &str| {
            let text = format!("int main(void) {{\n{body}  return 0;\n}}\n\nint g(int a) {{\n  return a;\n}}\n");
            let err = parse(&input("/tmp/bad.c", &text)).err().unwrap();
            let pos = err.pos().unwrap();
            (pos.line, pos.col, err.message().to_string())
        };
        assert_eq!(msg("  int x = 1\n  int y = 2;\n"), (3, 3, "syntax error: expected `;` before `int`".into()));
        assert_eq!(msg("  int x = 1;\n  if (x > 0 {\n  }\n"), (3, 13, "syntax error: expected `)` before `{`".into()));
        assert_eq!(msg("  int x;\n  x = x + ;\n"), (3, 11, "syntax error: expected an expression before `;`".into()));
        let (line, _, m) = msg("  int x = 1;\n  while (x < 3) {\n    x++;\n");
        assert_eq!((line, m.as_str()), (8, "syntax error: a function defined inside another (is a `}` missing above?)"));
        let (line, _, m) = msg("  char *s = \"abc;\n");
        assert_eq!((line, m.as_str()), (2, "syntax error: a string or character literal is not closed"));
    }

    #[test]
    fn deep_nesting_is_refused() {
        let text = format!("int x = {}1{};\n", "(".repeat(5000), ")".repeat(5000));
        let err = parse(&input("/tmp/deep.c", &text)).err().unwrap();
        assert!(matches!(err, FrontendError::TooComplex { .. }), "{err}");
    }

    #[test]
    fn ilp32_uses_the_32_bit_headers_where_the_machine_has_them() {
        let src = "#include <stdint.h>\nint64_t x;\n";
        let lp64 = parse_for(&input("/tmp/m.c", src), false).ok().unwrap();
        assert!(lp64.pp.contains("typedef signed long int __int64_t"), "LP64 int64_t is long");
        let ilp32 = parse_for(&input("/tmp/m.c", src), true).ok().unwrap();
        let has_m32 = std::process::Command::new("cc")
            .args(["-m32", "-E", "-x", "c", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .and_then(|mut c| {
                c.stdin.take().expect("piped").write_all(b"#include <stdint.h>\n")?;
                c.wait()
            })
            .is_ok_and(|s| s.success());
        if has_m32 {
            assert!(ilp32.pp.contains("typedef signed long long int __int64_t"), "ILP32 int64_t is long long");
        }
    }

    #[test]
    fn rewritten_constructs_keep_user_positions() {
        let err = parse(&input("/tmp/elvis.c", "int f(int x) { return x ?: 1; }\nint g(void) { return @; }\n")).err().unwrap();
        let pos = err.pos().unwrap();
        assert_eq!((pos.line, pos.col), (2, 22), "{err}");
    }

    #[test]
    fn includes_of_system_headers_work() {
        let p = parse(&input("/tmp/inc.c", "#include <assert.h>\nint main(void){ assert(1); return 0; }\n"));
        assert!(p.is_ok());
    }
}
