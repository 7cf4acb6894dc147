//! Objects of cpals's own generated C (the sandbox's entry point, the harnesses' runtimes)
//! compiled once and kept in a cache folder, so that a native build compiles only the user's
//! program and links. An object's name is the SHA-256 of the compiler (its resolved path, size
//! and modification time), the flags and the source; it is compiled under a temporary name in
//! the folder and renamed into place, so a reader never sees half an object. The folder is
//! `$CPALS_CACHE_DIR`, else `$XDG_CACHE_HOME/cpals/objects`, else `~/.cache/cpals/objects`,
//! created with mode 0700; it is used only when it is a real folder owned by this user that
//! nobody else may write (an object linked into a sandboxed program runs before the sandbox's
//! filter is in place, so nobody else may be able to replace it). Without a usable folder the
//! callers compile the sources with the program, as before. No user code is compiled here.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::sandbox::{self, End};

/// The compiler's command (`$CPALS_CC`, else `cc`).
pub fn compiler() -> String {
    std::env::var("CPALS_CC").unwrap_or_else(|_| "cc".to_string())
}

/// What identifies the compiler: its resolved path, size and modification time (looked up
/// once per process); `None` when it is not found on the `PATH`.
fn compiler_identity() -> Option<&'static str> {
    static ID: OnceLock<Option<String>> = OnceLock::new();
    ID.get_or_init(|| {
        let cc = compiler();
        let found = if cc.contains('/') {
            Some(PathBuf::from(&cc))
        } else {
            std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(&cc)).find(|p| p.is_file())
        }?;
        let real = std::fs::canonicalize(found).ok()?;
        let m = std::fs::metadata(&real).ok()?;
        Some(format!("{}\0{}\0{}.{}", real.display(), m.len(), m.mtime(), m.mtime_nsec()))
    })
    .as_deref()
}

/// The cache folder, created if needed; `None` when there is none that is safe to use.
pub(super) fn folder() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = match std::env::var_os("CPALS_CACHE_DIR") {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => match std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
                Some(d) => PathBuf::from(d).join("cpals").join("objects"),
                None => PathBuf::from(std::env::var_os("HOME").filter(|d| !d.is_empty())?).join(".cache").join("cpals").join("objects"),
            },
        };
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir).ok()?;
        private(&dir).then_some(dir)
    })
    .as_deref()
}

/// The name of what `source` compiled with `flags` gives: the SHA-256 of the compiler's
/// identity, the flags and the source; `None` when there is no compiler.
pub(super) fn key(source: &str, flags: &[&str]) -> Option<String> {
    let mut h = Sha256::new();
    h.update(compiler_identity()?.as_bytes());
    for f in flags {
        h.update([0u8]);
        h.update(f.as_bytes());
    }
    h.update([1u8]);
    h.update(source.as_bytes());
    Some(h.finalize().iter().map(|b| format!("{:02x}", b)).collect())
}

/// Whether `path` is a non-empty regular file (not a link) owned by this user.
pub(super) fn ours(path: &Path) -> bool {
    // SAFETY: geteuid only reads the process's user id.
    let me = unsafe { libc::geteuid() };
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.uid() == me && m.len() > 0)
}

/// Whether `dir` is a folder (not a link) owned by this user that nobody else may write.
fn private(dir: &Path) -> bool {
    // SAFETY: geteuid only reads the process's user id.
    let me = unsafe { libc::geteuid() };
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir() && m.uid() == me && m.mode() & 0o022 == 0)
}

/// The object of `source` compiled with `flags` (plus `-c`), from the cache or compiled into
/// it now; `None` when there is no usable cache or the compiler fails (the caller then
/// compiles the source with the program). The compiler runs bounded and is killed when
/// `cancelled()` holds.
pub fn object(source: &str, flags: &[&str], cancelled: &dyn Fn() -> bool) -> Option<PathBuf> {
    let dir = folder()?;
    let key = key(source, flags)?;
    let obj = dir.join(format!("{}.o", key));
    if ours(&obj) {
        return Some(obj);
    }
    let tmp = sandbox::TempDir::new().ok()?;
    let src = tmp.path().join("generated.c");
    std::fs::File::create(&src).and_then(|mut f| f.write_all(source.as_bytes())).ok()?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let partial = dir.join(format!("{}.{}-{}.tmp", key, std::process::id(), nanos));
    let Ok(mut cmd) = sandbox::launch::command(compiler(), sandbox::COMPILER) else { return None };
    cmd.args(flags)
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(&partial)
        .env("TMPDIR", tmp.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let ok = match cmd.spawn() {
        Ok(mut child) => sandbox::wait(&mut child, Duration::from_secs(60), cancelled) == End::Exited(0),
        Err(_) => false,
    };
    if ok && std::fs::rename(&partial, &obj).is_ok() {
        return Some(obj);
    }
    let _ = std::fs::remove_file(&partial);
    tracing::debug!("no cached object for a generated source (flags {:?})", flags);
    None
}

#[cfg(test)]
mod tests {
    use super::private;

    #[test]
    fn only_private_folders_are_used() {
        let d = crate::sandbox::TempDir::new().expect("a temporary folder");
        let dir = d.path().join("objects");
        std::fs::create_dir(&dir).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(private(&dir));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(!private(&dir));
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(!private(&link));
    }
}
