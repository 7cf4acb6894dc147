//! Starting child processes without `fork()`. Z3 4.8.12 registers a `pthread_atfork` handler
//! (`scoped_timer::finalize`) that tears down its timer threads in the parent at every
//! `fork()`, while other threads of cpals may be using them for their queries' timeouts: a
//! use after free that corrupted the heap of a test process (Z3 fixed the race in 2025, pull
//! request #7618). Rust's `Command` forks whenever a `pre_exec` hook is set and uses
//! `posix_spawn` otherwise, which runs no fork handlers. So every child starts through a
//! small launcher of ours (`launcher.c`, compiled once and cached like the sandbox's other
//! objects, [`super::objcache`]) with `posix_spawn`; the launcher does what the hook did (dies
//! with the thread that started it, resource limits, descriptors moved into place, every
//! other descriptor closed) and executes the program in its place.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use super::{End, Limits, TempDir};

/// The launcher's source.
const SOURCE: &str = include_str!("launcher.c");

/// A command that runs a program bounded through the launcher. It dereferences to the
/// launcher's [`Command`]: arguments, environment and standard streams are set on it as on
/// the program's (they pass to the program); `spawn` starts it. Descriptors handed to the
/// program stay open (inheritable) as long as this value lives: drop it once started.
pub struct Launch {
    cmd: Command,
    _inherited: Vec<OwnedFd>,
}

impl std::ops::Deref for Launch {
    type Target = Command;
    fn deref(&self) -> &Command {
        &self.cmd
    }
}

impl std::ops::DerefMut for Launch {
    fn deref_mut(&mut self) -> &mut Command {
        &mut self.cmd
    }
}

/// The program a [`Launch`] runs.
pub enum Program<'a> {
    /// By name (looked up on cpals's `PATH` when it has no `/`) or path.
    Path(&'a OsStr),
    /// An open executable (run from `/proc/self/fd/N`; nothing needs to stay on disk).
    Open(BorrowedFd<'a>),
}

/// `program` under `limits`: in its own process group, dying with the thread that starts it.
pub fn command(program: impl AsRef<OsStr>, limits: Limits) -> Result<Launch, String> {
    command_with(Program::Path(program.as_ref()), limits, &[])
}

/// [`command`] for `program`, which also gets each descriptor of `fds` as the number paired
/// with it (numbers 3 to 99).
pub fn command_with(program: Program<'_>, limits: Limits, fds: &[(BorrowedFd<'_>, i32)]) -> Result<Launch, String> {
    let launcher = launcher()?;
    let mut inherited = Vec::new();
    let mut cmd = Command::new(launcher);
    let limit = |v: Option<u64>| v.map_or("-1".to_string(), |v| v.min(i64::MAX as u64).to_string());
    cmd.arg(std::process::id().to_string())
        .arg(limit(Some(limits.cpu_seconds)))
        .arg(limit(Some(limits.address_space)))
        .arg(limit(limits.file_size))
        .arg(limit(limits.open_files))
        .arg(limit(limits.processes))
        .arg(fds.len().to_string());
    for (fd, to) in fds {
        if !(3..100).contains(to) {
            return Err(format!("descriptor number {} for a child is out of range", to));
        }
        let from = inheritable(*fd).map_err(|e| format!("cannot pass a descriptor to a child: {}", e))?;
        cmd.arg(from.as_raw_fd().to_string()).arg(to.to_string());
        inherited.push(from);
    }
    cmd.arg("--");
    match program {
        Program::Path(p) => {
            cmd.arg(resolve(p).ok_or_else(|| format!("{}: not found", p.to_string_lossy()))?);
        }
        Program::Open(fd) => {
            let f = inheritable(fd).map_err(|e| format!("cannot pass the program to its process: {}", e))?;
            cmd.arg(format!("/proc/self/fd/{}", f.as_raw_fd()));
            inherited.push(f);
        }
    }
    cmd.process_group(0);
    Ok(Launch { cmd, _inherited: inherited })
}

/// A copy of `fd` numbered 100 or above that a child inherits (the launcher closes it again
/// at the program's exec, or moves it into place).
fn inheritable(fd: BorrowedFd<'_>) -> std::io::Result<OwnedFd> {
    // SAFETY: duplicating a descriptor we borrow; the new one is owned by the result.
    let n = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD, 100) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `n` is a new descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(n) })
}

/// `program` as a path: itself when it has a `/`, else the first executable file of that
/// name on cpals's `PATH`.
fn resolve(program: &OsStr) -> Option<OsString> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    if program.as_bytes().contains(&b'/') {
        return Some(program.to_os_string());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
        .map(PathBuf::into_os_string)
}

/// The launcher's executable: from the cache folder, or compiled into it now (into a
/// temporary folder kept for the process's life when there is no cache folder).
fn launcher() -> Result<&'static Path, String> {
    static LAUNCHER: OnceLock<Result<(PathBuf, Option<TempDir>), String>> = OnceLock::new();
    LAUNCHER.get_or_init(build).as_ref().map(|(p, _)| p.as_path()).map_err(Clone::clone)
}

fn build() -> Result<(PathBuf, Option<TempDir>), String> {
    let err = |e: String| format!("cannot build the process launcher: {}", e);
    let (dir, temp) = match super::objcache::folder() {
        Some(d) => (d.to_path_buf(), None),
        None => {
            let t = TempDir::new().map_err(|e| err(e.to_string()))?;
            (t.path().to_path_buf(), Some(t))
        }
    };
    let key = super::objcache::key(SOURCE, &["-O2", "-static", "launcher"]).ok_or_else(|| err("no C compiler found".into()))?;
    let exe = dir.join(format!("launcher-{}", key));
    if super::objcache::ours(&exe) {
        return Ok((exe, temp));
    }
    let work = TempDir::new().map_err(|e| err(e.to_string()))?;
    let src = work.path().join("launcher.c");
    std::fs::write(&src, SOURCE).map_err(|e| err(e.to_string()))?;
    let partial = dir.join(format!("launcher-{}.{}.tmp", key, std::process::id()));
    // The compiler of our own fixed source, started without the launcher (there is none yet)
    // and without fork: no limits but the wall clock, its own process group.
    let mut cmd = Command::new(resolve(OsStr::new(&super::objcache::compiler())).ok_or_else(|| err("no C compiler found".into()))?);
    cmd.args(["-O2", "-static", "-o"])
        .arg(&partial)
        .arg(&src)
        .env("TMPDIR", work.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    let mut child = cmd.spawn().map_err(|e| err(e.to_string()))?;
    let end = super::wait(&mut child, Duration::from_secs(60), &|| false);
    if end != End::Exited(0) || std::fs::rename(&partial, &exe).is_err() {
        let _ = std::fs::remove_file(&partial);
        return Err(err(format!("the compiler ended with {:?}", end)));
    }
    Ok((exe, temp))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Z3's fork handler must never run: no child of cpals may be started with `fork()`. A
    /// handler of our own counts forks while the launcher starts a program with limits, a
    /// descriptor and an open executable.
    #[test]
    fn children_start_without_fork() {
        static FORKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        extern "C" fn count() {
            FORKS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        // SAFETY: registers a handler that only increments an atomic.
        assert_eq!(unsafe { libc::pthread_atfork(Some(count), None, None) }, 0);
        let sh = std::fs::File::open("/bin/sh").expect("/bin/sh");
        let (mine, theirs) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
        let limits = Limits { cpu_seconds: 5, address_space: 1 << 30, file_size: Some(0), open_files: Some(16), processes: None };
        let mut cmd = command_with(Program::Open(std::os::fd::AsFd::as_fd(&sh)), limits, &[(std::os::fd::AsFd::as_fd(&theirs), 7)])
            .expect("the launcher");
        // The script sees descriptor 7, its limits, and no other descriptor above 2 but the
        // one its shell opens for the script itself.
        cmd.args(["-c", "echo hello >&7; ulimit -t; ulimit -f; ls /proc/self/fd | sort -n | tr '\\n' ' '"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let out = cmd.output().expect("the program runs");
        drop(cmd);
        drop(theirs);
        assert!(out.status.success(), "{:?}", out);
        let mut got = String::new();
        std::io::Read::read_to_string(&mut &mine, &mut got).expect("read the socket");
        assert_eq!(got, "hello\n");
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(&lines[..2], ["5", "0"], "{}", text);
        let fds: Vec<u32> = lines[2].split_whitespace().filter_map(|s| s.parse().ok()).collect();
        assert!(fds.iter().all(|&fd| fd <= 7), "descriptors leaked into the child: {:?}", fds);
        assert_eq!(FORKS.load(std::sync::atomic::Ordering::SeqCst), 0, "a child was started with fork()");
    }

    /// A program that cannot be found is an error before anything starts; one that cannot be
    /// executed ends the launcher with status 127 and a message.
    #[test]
    fn a_missing_program_is_a_clear_error() {
        let limits = Limits { cpu_seconds: 5, address_space: 1 << 30, file_size: None, open_files: None, processes: None };
        let e = command("no-such-program-of-cpals", limits).err().expect("not found");
        assert!(e.contains("no-such-program-of-cpals: not found"), "{}", e);
        let mut cmd = command("/proc/version", limits).expect("the launcher");
        let out = cmd.stderr(Stdio::piped()).output().expect("the launcher runs");
        assert_eq!(out.status.code(), Some(127));
        assert!(String::from_utf8_lossy(&out.stderr).contains("cannot run /proc/version"), "{:?}", out);
    }
}
