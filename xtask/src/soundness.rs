//! The soundness campaign against gcc (`xtask soundness`): random integer programs from Csmith,
//! whose checksum gcc computes natively, are given to `cpals check` with the checksum turned
//! into two assertions; cpals must never refute the true one nor prove the false one.
//!
//! For every seed of `--seeds A..B` (both ends included):
//!
//! 1. `csmith --seed S` with [`CSMITH_OPTIONS`]: integer-only programs (no pointers, arrays,
//!    structs, unions, bit-fields, volatiles, floats), small (at most 3 functions besides
//!    `main`, blocks nested at most 3 deep, expressions of complexity at most 5), with
//!    `main(void)` (`--no-argc`: no `argv`/`strcmp` to print the hash). 64-bit arithmetic,
//!    `goto`, the comma operator, compound and embedded assignments, `++`/`--` and divisions
//!    stay enabled: they are what an integer front end and value analysis must get right.
//! 2. The program is compiled by gcc (`-w -O0`) against the campaign's own `csmith.h` (written
//!    into the work folder, see [`PRELUDE`]): Csmith's integer `safe_math.h` (taken from the
//!    installed `/usr/include/csmith/safe_math.h` up to its floating-point part, which needs
//!    `math.h`) and the checksum of Csmith's minimal platform (`csmith_minimal.h`): every global
//!    is added to a `uint64_t crc32_context` by `transparent_crc`, and `main` ends with
//!    `platform_main_end(crc32_context ^ 0xFFFFFFFFUL, …)`. The native run prints that value,
//!    the checksum K; a program that does not end within `--native-timeout` seconds or whose
//!    run crashes is dropped.
//! 3. The call `platform_main_end(E, …)` is rewritten to
//!    `{ uint64_t checksum = E; assert(checksum == K); assert(checksum != K); }`, the program
//!    preprocessed (`gcc -E -P`, with `<assert.h>` and `<stdint.h>`) into a `.i` file, which is
//!    compiled and run natively once more: it must fail the second assertion and only it.
//! 4. `cpals check --json --timeout T` on the `.i` file (`--jobs` at a time). Outcomes:
//!    *decided* (`checksum == K` true and `checksum != K` false), *unknown* (either unknown),
//!    *disagreement* (`checksum == K` false, or `checksum != K` true: a soundness bug),
//!    *error* (cpals exits with 3, or crashes: grouped by the first line of its message with
//!    the location and numbers taken out, so that front-end gaps show up).
//! 5. Every disagreement is minimised by C-Reduce (`--reduce-time` seconds at most) with an
//!    interestingness test that keeps one assertion (the refuted or the proved one), requires
//!    the program to compile with gcc's `-Wall` checks for undefined behaviour as errors and to
//!    run under UBSan with the outcome gcc gave, and cpals to keep its wrong verdict. The
//!    programs, the test and the reduced program are kept in `--keep DIR/disagreements/`.
//!
//! A summary table follows (programs, decided %, unknown reasons, disagreements, error groups,
//! CPU times); the exit code is 1 when there is a disagreement (CI fails on it), else 0.
//!
//! ```text
//! cargo build --release -p cpals -p xtask
//! cargo xtask soundness --seeds 1..200 --timeout 10 --jobs 2 --keep /tmp/csmith
//! ```
//!
//! Requires the Debian packages `csmith`, `libcsmith-dev` (its `safe_math.h`) and `creduce`.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cpals::messages::EXIT_ERROR;

/// The Csmith options of the campaign (besides `--seed`): integer-only, small programs.
pub const CSMITH_OPTIONS: &[&str] = &[
    "--no-argc",
    "--no-pointers",
    "--no-arrays",
    "--no-structs",
    "--no-unions",
    "--no-bitfields",
    "--no-volatiles",
    "--no-packed-struct",
    "--no-builtins",
    "--max-funcs",
    "3",
    "--max-block-depth",
    "3",
    "--max-block-size",
    "4",
    "--max-expr-complexity",
    "5",
];

/// The campaign's `csmith.h`: Csmith's integer runtime with the minimal platform's checksum.
/// `CPALS_CHECKSUM` is defined for the checked program, whose `platform_main_end` call has been
/// replaced by the assertions; otherwise the checksum is printed.
pub const PRELUDE: &str = r#"/* The runtime of the cpals soundness campaign (xtask/src/soundness.rs). */
#include <stdint.h>
#include <limits.h>
#include <assert.h>
#define STATIC static
#define UNDEFINED(__val) (__val)
#define LOG_INDEX
#define LOG_EXEC
#define FUNC_NAME(x) (safe_##x)
#include "safe_math_int.h"
#undef FUNC_NAME
static uint64_t crc32_context = 0;
static void platform_main_begin(void) {}
static void crc32_gentab(void) {}
#define transparent_crc(val, vname, flag) (crc32_context += (uint64_t)(val))
int printf(const char *, ...); /* Csmith's main prints array indices if asked (dead code here) */
#ifndef CPALS_CHECKSUM
#define platform_main_end(x, flag) printf("checksum = %llu\n", (unsigned long long)(x))
#endif
"#;

/// gcc's warnings that flag undefined behaviour (or a program C-Reduce broke), errors in the
/// reduction's sanity check.
const SANITY_FLAGS: &str = "-std=gnu11 -O1 -Wall -Wextra -Werror=uninitialized -Werror=maybe-uninitialized \
-Werror=implicit-function-declaration -Werror=implicit-int -Werror=return-type -Werror=int-conversion \
-Werror=incompatible-pointer-types -Werror=div-by-zero -Werror=overflow -Werror=shift-count-overflow \
-Werror=shift-count-negative -Werror=shift-negative-value -Werror=sequence-point -Werror=main \
-Werror=builtin-declaration-mismatch -Werror=int-to-pointer-cast -Werror=pointer-to-int-cast \
-Werror=address -Werror=init-self -Werror=missing-parameter-type -Werror=old-style-declaration \
-fsanitize=undefined -fno-sanitize-recover=all";

#[derive(clap::Args)]
pub struct SoundnessArgs {
    /// The Csmith seeds, `A..B` with both ends included (or one seed).
    #[arg(long, default_value = "1..50")]
    pub seeds: String,
    /// CPU-time limit of `cpals check` per program in seconds.
    #[arg(long, default_value_t = 30.0)]
    pub timeout: f64,
    /// Programs checked at a time.
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// CPU-time limit of a program's native run in seconds (slower programs are dropped).
    #[arg(long, default_value_t = 3.0)]
    pub native_timeout: f64,
    /// Keeps the disagreements (original, reduced, interestingness test), one example of each
    /// error group, and `results.tsv` in this folder.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Wall-time limit of C-Reduce per disagreement in seconds (0: no reduction).
    #[arg(long, default_value_t = 600)]
    pub reduce_time: u64,
    /// Extra options for Csmith, after the campaign's own.
    #[arg(long, allow_hyphen_values = true)]
    pub csmith_args: Option<String>,
    /// Extra arguments for `cpals check`, e.g. `--analysis=value`.
    #[arg(long, allow_hyphen_values = true)]
    pub check_args: Option<String>,
    /// Where Csmith's headers are (`safe_math.h`).
    #[arg(long, default_value = "/usr/include/csmith", value_name = "DIR")]
    pub csmith_include: PathBuf,
    /// The `cpals` binary to check the programs with (default: `cpals` beside this program).
    #[arg(long, value_name = "PATH")]
    pub cpals: Option<PathBuf>,
}

/// What became of one seed.
#[derive(Clone, Debug)]
enum Outcome {
    /// Not checked: Csmith, gcc or the native run failed, or the run did not end in time.
    Dropped(String),
    Checked(Check),
}

#[derive(Clone, Debug)]
struct Check {
    class: Class,
    /// cpals's verdicts on `checksum == K` and `checksum != K` (`-` if not reported).
    eq: String,
    ne: String,
    cpu: f64,
    /// The checked program (in the work folder, removed at the end unless kept).
    file: PathBuf,
    checksum: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Class {
    Decided,
    /// Either assertion unknown: the reason (of the first unknown one).
    Unknown(String),
    /// `checksum == K` refuted (`eq_false`) or `checksum != K` proved.
    Disagreement {
        eq_false: bool,
    },
    /// cpals rejected the program or crashed: the first line of its message.
    Error(String),
}

/// A finished child process.
struct Run {
    stdout: String,
    stderr: String,
    /// The exit code, or `None` if the process died of a signal.
    code: Option<i32>,
    signal: Option<i32>,
    cpu: f64,
    killed: bool,
    /// Killed because it was still running [`STALL`] after its own CPU-time limit (a deadlock).
    stalled: bool,
}

/// How long a child may go on after its own CPU-time limit before it counts as hung.
const STALL: Duration = Duration::from_secs(60);

/// Runs `cmd` to its end or until `wall` has passed, or with `cpu = (soft, hard)` until it has
/// used `hard` seconds of CPU time or is still running [`STALL`] after it used `soft` (then
/// kills it, or with `group` its process group: the caller has made it a group leader);
/// measures its CPU time.
fn run_with(mut cmd: Command, wall: Duration, cpu: Option<(f64, f64)>, group: bool) -> Result<Run, String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {:?}: {}", cmd, e))?;
    let pid = child.id() as libc::pid_t;
    let done = Arc::new(AtomicBool::new(false));
    let killed = Arc::new(AtomicBool::new(false));
    let stalled = Arc::new(AtomicBool::new(false));
    {
        let (done, killed, stalled) = (done.clone(), killed.clone(), stalled.clone());
        std::thread::spawn(move || {
            let start = Instant::now();
            let mut over_soft: Option<Instant> = None;
            while start.elapsed() < wall {
                if done.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
                if let Some((soft, hard)) = cpu {
                    let used = process_cpu(pid).unwrap_or(0.0);
                    if used > hard {
                        break;
                    }
                    // Past its own limit the child should stop at once; one that is still there
                    // a while later is stuck (it may still use a little CPU time, polling).
                    if used > soft {
                        let since = *over_soft.get_or_insert_with(Instant::now);
                        if since.elapsed() > STALL {
                            stalled.store(true, Ordering::SeqCst);
                            break;
                        }
                    }
                }
            }
            if !done.load(Ordering::SeqCst) {
                killed.store(true, Ordering::SeqCst);
                if group {
                    // SAFETY: signals the process group our child leads (it cleans up on TERM).
                    unsafe {
                        libc::kill(-pid, libc::SIGTERM);
                    }
                    std::thread::sleep(Duration::from_secs(3));
                    if !done.load(Ordering::SeqCst) {
                        // SAFETY: as above; whatever of the group is left.
                        unsafe {
                            libc::kill(-pid, libc::SIGKILL);
                        }
                    }
                } else {
                    // SAFETY: signals the child we spawned and have not reaped yet (`done` is
                    // set before the reaping `wait4` returns control to anything else).
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                    }
                }
            }
        });
    }
    let read = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = r.read_to_end(&mut b);
            String::from_utf8_lossy(&b).into_owned()
        })
    };
    let out = read(Box::new(child.stdout.take().expect("piped")));
    let err = read(Box::new(child.stderr.take().expect("piped")));
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data filled in by the kernel.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child; `status` and `usage` are valid out-pointers.
    unsafe {
        libc::wait4(pid, &mut status, 0, &mut usage);
    }
    done.store(true, Ordering::SeqCst);
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let (code, signal) = if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else if libc::WIFSIGNALED(status) {
        (None, Some(libc::WTERMSIG(status)))
    } else {
        (None, None)
    };
    Ok(Run {
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        code,
        signal,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        killed: killed.load(Ordering::SeqCst),
        stalled: stalled.load(Ordering::SeqCst),
    })
}

/// [`run_with`] for a single process.
fn run(cmd: Command, wall: Duration) -> Result<Run, String> {
    run_with(cmd, wall, None, false)
}

/// CPU seconds a running process has used so far (from `/proc`), if readable.
fn process_cpu(pid: libc::pid_t) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid)).ok()?;
    // After the command name (which may hold spaces): utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    Some(ticks / if hz > 0 { hz as f64 } else { 100.0 })
}

/// `A..B` (both included) or `A`.
fn parse_seeds(s: &str) -> Result<Vec<u64>, String> {
    let bad = || format!("bad --seeds `{}`: expected A..B or A", s);
    match s.split_once("..") {
        Some((a, b)) => {
            let a: u64 = a.trim().parse().map_err(|_| bad())?;
            let b: u64 = b.trim().trim_start_matches('=').parse().map_err(|_| bad())?;
            if a > b {
                return Err(bad());
            }
            Ok((a..=b).collect())
        }
        None => Ok(vec![s.trim().parse().map_err(|_| bad())?]),
    }
}

/// Writes the campaign's `csmith.h` and `safe_math_int.h` (the installed `safe_math.h` without
/// its floating-point functions) into `dir`.
fn write_runtime(dir: &Path, csmith_include: &Path) -> Result<(), String> {
    let src = csmith_include.join("safe_math.h");
    let text = std::fs::read_to_string(&src)
        .map_err(|e| format!("cannot read {} ({}): install the Debian package libcsmith-dev", src.display(), e))?;
    let int_part = integer_part(&text).ok_or_else(|| format!("{}: no floating-point part found", src.display()))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {}", dir.display(), e))?;
    std::fs::write(dir.join("safe_math_int.h"), int_part).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("csmith.h"), PRELUDE).map_err(|e| e.to_string())?;
    Ok(())
}

/// Csmith's `safe_math.h` without its floating-point wrappers (which need `math.h` and
/// `float.h`): they start at the first `#ifdef __STDC__`, after the integer ones; the include
/// guard's `#endif` is added back.
fn integer_part(safe_math: &str) -> Option<String> {
    let cut = safe_math.find("\n#ifdef __STDC__")?;
    Some(format!("{}\n#endif /* SAFE_MATH_H (cut before the floating-point part) */\n", &safe_math[..cut]))
}

/// Replaces the call `platform_main_end(E, flag);` by the two assertions on `E`.
fn add_assertions(program: &str, checksum: u64) -> Option<String> {
    let mut out = String::with_capacity(program.len() + 200);
    let mut found = false;
    for line in program.lines() {
        let t = line.trim_start();
        if let Some(args) = t.strip_prefix("platform_main_end(").and_then(|r| r.strip_suffix(");")) {
            // The checksum expression is the first argument (no commas at depth 0 inside it).
            let mut depth = 0i32;
            let mut end = args.len();
            for (i, c) in args.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    ',' if depth == 0 => {
                        end = i;
                        break;
                    }
                    _ => {}
                }
            }
            let indent = &line[..line.len() - t.len()];
            out.push_str(&format!(
                "{indent}{{\n{indent}    uint64_t checksum = {};\n{indent}    assert(checksum == {checksum}ULL);\n{indent}    assert(checksum != {checksum}ULL);\n{indent}}}\n",
                args[..end].trim()
            ));
            found = true;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    found.then_some(out)
}

fn gcc(args: &[&str], inputs: &[&Path], wall: Duration) -> Result<Run, String> {
    let mut cmd = Command::new("gcc");
    cmd.args(args).args(inputs);
    let r = run(cmd, wall)?;
    if r.code == Some(0) {
        Ok(r)
    } else {
        Err(format!("gcc failed: {}", r.stderr.lines().find(|l| l.contains("error")).unwrap_or("").trim()))
    }
}

/// Steps 1 to 3 for one seed: the checked program (`S.i` in `work`) and its checksum.
fn prepare(seed: u64, args: &SoundnessArgs, work: &Path, runtime: &Path) -> Result<(PathBuf, u64), String> {
    let c = work.join(format!("{}.c", seed));
    let mut cmd = Command::new("csmith");
    cmd.arg("--seed").arg(seed.to_string()).args(CSMITH_OPTIONS);
    if let Some(extra) = &args.csmith_args {
        cmd.args(extra.split_whitespace());
    }
    // Csmith writes `platform.info` into its working folder.
    cmd.arg("-o").arg(&c).current_dir(work);
    let r = run(cmd, Duration::from_secs(60))?;
    if r.code != Some(0) {
        return Err(format!("csmith failed: {}", r.stderr.lines().next().unwrap_or("").trim()));
    }
    let inc = format!("-I{}", runtime.display());
    let native = work.join(format!("{}.native", seed));
    let compile = Duration::from_secs(120);
    gcc(&["-w", "-O0", &inc, "-o", &native.to_string_lossy()], &[&c], compile)?;
    // Limited in CPU time, not wall time: on a loaded machine a wall limit drops the program
    // for the load, not for its own run.
    let native_limit = |cmd| {
        run_with(cmd, Duration::from_secs_f64(30.0 * args.native_timeout + 30.0), Some((args.native_timeout, args.native_timeout)), false)
    };
    let r = native_limit(Command::new(&native))?;
    let _ = std::fs::remove_file(&native);
    if r.killed {
        return Err("native run: no end in time".into());
    }
    if r.code != Some(0) {
        return Err(format!("native run: crashed ({:?}, signal {:?})", r.code, r.signal));
    }
    let checksum: u64 = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("checksum = ")?.trim().parse().ok())
        .ok_or_else(|| "native run: no checksum printed".to_string())?;
    let text = std::fs::read_to_string(&c).map_err(|e| e.to_string())?;
    let checked = add_assertions(&text, checksum).ok_or_else(|| "harness: no platform_main_end call".to_string())?;
    let cc = work.join(format!("{}.check.c", seed));
    std::fs::write(&cc, checked).map_err(|e| e.to_string())?;
    let i = work.join(format!("{}.i", seed));
    gcc(&["-w", "-E", "-P", "-DCPALS_CHECKSUM", &inc, "-o", &i.to_string_lossy()], &[&cc], compile)?;
    let _ = std::fs::remove_file(&c);
    let _ = std::fs::remove_file(&cc);
    // The checked program natively: it must fail `checksum != K`, and nothing before it.
    let bin = work.join(format!("{}.check", seed));
    gcc(&["-w", "-O0", "-o", &bin.to_string_lossy()], &[&i], compile)?;
    let r = native_limit(Command::new(&bin))?;
    let _ = std::fs::remove_file(&bin);
    if r.signal != Some(libc::SIGABRT) || !r.stderr.contains(&format!("Assertion `checksum != {}ULL' failed", checksum)) {
        return Err(format!("harness: the checked program does not fail `checksum != K` natively ({})", r.stderr.trim()));
    }
    Ok((i, checksum))
}

/// A message without its location prefix (`file:line:col: `) and with numbers as `N`, to group.
fn message_group(msg: &str) -> String {
    let mut m = msg.trim();
    // `path:12:5: message`: drop everything up to the third colon if the 2nd and 3rd fields are
    // numbers.
    let parts: Vec<&str> = m.splitn(4, ':').collect();
    if parts.len() == 4 && parts[1].trim().parse::<u64>().is_ok() && parts[2].trim().parse::<u64>().is_ok() {
        m = parts[3].trim();
    }
    let mut out = String::new();
    let mut in_num = false;
    for c in m.chars() {
        if c.is_ascii_digit() {
            if !in_num {
                out.push('N');
            }
            in_num = true;
        } else {
            in_num = false;
            out.push(c);
        }
    }
    out
}

/// Step 4 for one program.
fn check(exe: &Path, file: &Path, checksum: u64, timeout: f64, extra: &[String]) -> Result<Check, String> {
    let mut cmd = Command::new(exe);
    cmd.arg("check").arg("--json").arg("--timeout").arg(format!("{}", timeout)).args(extra).arg(file);
    // cpals stops itself at the limit; the child is killed 5 s of CPU time after it, or when the
    // wall clock shows it is stuck (generously: the machine may be loaded).
    let r = run_with(cmd, Duration::from_secs_f64(60.0 * timeout + 120.0), Some((timeout, timeout + 5.0)), false)?;
    let mut c = Check { class: Class::Decided, eq: "-".into(), ne: "-".into(), cpu: r.cpu, file: file.to_path_buf(), checksum };
    let parsed: Option<serde_json::Value> = serde_json::from_str(&r.stdout).ok();
    c.class = match (&parsed, r.killed) {
        (_, true) if r.stalled => Class::Unknown(format!("hung: still running {} s after its CPU-time limit (killed)", STALL.as_secs())),
        (_, true) => Class::Unknown("killed (time limit)".into()),
        (None, _) if r.code == Some(EXIT_ERROR) => Class::Error(message_group(r.stderr.lines().next().unwrap_or("no message"))),
        (None, _) => {
            let first = r.stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("no message");
            Class::Error(format!("crash (exit {:?}, signal {:?}): {}", r.code, r.signal, message_group(first)))
        }
        (Some(v), _) => {
            let props = v["properties"].as_array().cloned().unwrap_or_default();
            let find =
                |op: &str| props.iter().find(|p| p["condition"].as_str().is_some_and(|s| s.starts_with(&format!("checksum {} ", op))));
            let (eq, ne) = (find("=="), find("!="));
            let verdict = |p: Option<&serde_json::Value>| p.and_then(|p| p["verdict"].as_str()).unwrap_or("-").to_string();
            c.eq = verdict(eq);
            c.ne = verdict(ne);
            let reason = |p: Option<&serde_json::Value>| p.and_then(|p| p["reason"].as_str()).map(message_group);
            if c.eq == "false" || c.ne == "true" {
                Class::Disagreement { eq_false: c.eq == "false" }
            } else if c.eq == "true" && c.ne == "false" {
                Class::Decided
            } else if eq.is_none() || ne.is_none() {
                Class::Unknown("an assertion on the checksum was not reported".into())
            } else {
                let why = if c.eq != "true" { reason(eq) } else { reason(ne) };
                Class::Unknown(why.unwrap_or_else(|| "no reason given".into()))
            }
        }
    };
    Ok(c)
}

/// The C-Reduce interestingness test of a disagreement, a shell script run in C-Reduce's
/// folder on `name`.
fn interestingness_test(exe: &Path, name: &str, eq_false: bool, timeout: f64, extra: &[String]) -> String {
    let (native, verdict, what) = if eq_false {
        (
            "[ \"$status\" = 0 ] || exit 1",
            "false",
            "cpals refutes an assertion that holds natively (the run ends normally, without UBSan errors)",
        )
    } else {
        (
            "[ \"$status\" = 134 ] && grep -q 'Assertion' err.txt && ! grep -q 'runtime error' err.txt || exit 1",
            "true",
            "cpals proves every assertion although one fails natively (the run aborts on it, without UBSan errors)",
        )
    };
    format!(
        r#"#!/bin/sh
# C-Reduce interestingness test (xtask soundness): {what}.
gcc {SANITY_FLAGS} {name} -o prog.bin >/dev/null 2>&1 || exit 1
timeout 5 ./prog.bin >/dev/null 2>err.txt
status=$?
{native}
timeout {wall} {exe} check --json --timeout {timeout} {extra} {name} > out.json 2>/dev/null
grep -q '^  "verdict": "{verdict}"' out.json
"#,
        wall = (60.0 * timeout + 120.0) as u64,
        exe = exe.display(),
        extra = extra.join(" "),
    )
}

/// Step 5 for one disagreement: the kept folder with the program, the test and the reduction.
fn reduce(exe: &Path, c: &Check, seed: u64, dir: &Path, args: &SoundnessArgs, extra: &[String]) -> Result<PathBuf, String> {
    let Class::Disagreement { eq_false } = c.class else { return Err("not a disagreement".into()) };
    let d = dir.join("disagreements").join(format!("seed-{}", seed));
    std::fs::create_dir_all(&d).map_err(|e| format!("cannot create {}: {}", d.display(), e))?;
    let text = std::fs::read_to_string(&c.file).map_err(|e| e.to_string())?;
    std::fs::write(d.join("original.i"), &text).map_err(|e| e.to_string())?;
    // Keep only the assertion the disagreement is about: the other one would be a second,
    // unrelated property for C-Reduce to preserve.
    let drop = if eq_false { format!("checksum != {}ULL", c.checksum) } else { format!("checksum == {}ULL", c.checksum) };
    let one: String = text.lines().filter(|l| !(l.contains(&drop) && l.contains("__assert_fail"))).map(|l| format!("{}\n", l)).collect();
    let name = "reduced.i";
    std::fs::write(d.join(name), one).map_err(|e| e.to_string())?;
    let test = d.join("interesting.sh");
    std::fs::write(&test, interestingness_test(exe, name, eq_false, args.timeout, extra)).map_err(|e| e.to_string())?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&test, std::fs::Permissions::from_mode(0o755)).map_err(|e| e.to_string())?;
    }
    // The test must hold on the unreduced program, or the reduction means nothing.
    let holds = |d: &Path| {
        let tmp = d.join("check-test");
        let _ = std::fs::create_dir_all(&tmp);
        let _ = std::fs::copy(d.join(name), tmp.join(name));
        let ok = Command::new(&test).current_dir(&tmp).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
        let _ = std::fs::remove_dir_all(&tmp);
        ok
    };
    if !holds(&d) {
        return Err(format!("the interestingness test fails on the unreduced program ({})", d.display()));
    }
    if args.reduce_time == 0 {
        return Ok(d);
    }
    let mut cmd = Command::new("creduce");
    cmd.arg("--n").arg(args.jobs.max(1).to_string()).arg("--timeout").arg(format!("{}", (8.0 * args.timeout + 60.0) as u64));
    cmd.arg(&test).arg(name).current_dir(&d);
    {
        use std::os::unix::process::CommandExt;
        // Its own process group, so that a time-out ends C-Reduce's helpers too.
        cmd.process_group(0);
    }
    let started = Instant::now();
    let r = run_with(cmd, Duration::from_secs(args.reduce_time), None, true)?;
    std::fs::write(d.join("creduce.log"), format!("{}\n{}", r.stdout, r.stderr)).map_err(|e| e.to_string())?;
    if !holds(&d) {
        // An interrupted reduction may leave a file that is not interesting: start again from
        // the unreduced one.
        let _ = std::fs::copy(d.join("reduced.i.orig"), d.join(name));
    }
    // What each side says on the reduced program, beside it.
    let mut cmd = Command::new(exe);
    cmd.arg("check").arg("--json").arg("--timeout").arg(format!("{}", args.timeout)).args(extra).arg(name).current_dir(&d);
    if let Ok(r) = run_with(cmd, Duration::from_secs_f64(20.0 * args.timeout + 60.0), Some((args.timeout, args.timeout + 5.0)), false) {
        let _ = std::fs::write(d.join("cpals.json"), r.stdout);
    }
    let bin = d.join("native.bin");
    if gcc(&["-w", "-O0", "-o", &bin.to_string_lossy()], &[&d.join(name)], Duration::from_secs(120)).is_ok() {
        if let Ok(r) = run(Command::new(&bin), Duration::from_secs(10)) {
            let _ = std::fs::write(d.join("native.txt"), format!("exit {:?}, signal {:?}\n{}{}", r.code, r.signal, r.stdout, r.stderr));
        }
        let _ = std::fs::remove_file(&bin);
    }
    eprintln!("reduced seed {} in {:.0} s{}", seed, started.elapsed().as_secs_f64(), if r.killed { " (time limit)" } else { "" });
    Ok(d)
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub fn run_campaign(args: &SoundnessArgs) -> i32 {
    match campaign(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("xtask soundness: {}", e);
            EXIT_ERROR
        }
    }
}

fn campaign(args: &SoundnessArgs) -> Result<i32, String> {
    let seeds = parse_seeds(&args.seeds)?;
    let exe = crate::cpals_binary(args.cpals.as_ref(), "--cpals")?;
    let exe = exe.canonicalize().unwrap_or(exe);
    for tool in ["csmith", "gcc"] {
        // In the temporary folder: even `csmith --version` writes `platform.info`.
        let probe =
            Command::new(tool).arg("--version").current_dir(std::env::temp_dir()).stdout(Stdio::null()).stderr(Stdio::null()).status();
        if probe.is_err() {
            return Err(format!("`{}` not found: install the Debian packages csmith, libcsmith-dev and creduce", tool));
        }
    }
    let work = std::env::temp_dir().join(format!("cpals-soundness-{}", std::process::id()));
    let runtime = work.join("runtime");
    write_runtime(&runtime, &args.csmith_include)?;
    let keep = match &args.keep {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {}", d.display(), e))?;
            Some(d.canonicalize().unwrap_or_else(|_| d.clone()))
        }
        None => None,
    };
    let extra: Vec<String> = args.check_args.as_deref().map(|s| s.split_whitespace().map(String::from).collect()).unwrap_or_default();
    let started = Instant::now();
    let results: Mutex<BTreeMap<u64, Outcome>> = Mutex::default();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..args.jobs.max(1) {
            let (seeds, results, next, extra, work, runtime, exe) = (&seeds, &results, &next, &extra, &work, &runtime, &exe);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(&seed) = seeds.get(i) else { break };
                let outcome = match prepare(seed, args, work, runtime) {
                    Err(why) => Outcome::Dropped(why),
                    Ok((file, checksum)) => match check(exe, &file, checksum, args.timeout, extra) {
                        Ok(c) => Outcome::Checked(c),
                        Err(why) => Outcome::Dropped(why),
                    },
                };
                let line = match &outcome {
                    Outcome::Dropped(why) => format!("dropped: {}", why),
                    Outcome::Checked(c) => {
                        let what = match &c.class {
                            Class::Decided => "decided".to_string(),
                            Class::Unknown(why) => format!("unknown: {}", why),
                            Class::Disagreement { .. } => "DISAGREEMENT".to_string(),
                            Class::Error(m) => format!("error: {}", m),
                        };
                        format!("== {:<7} != {:<7} {:6.2}s {}", c.eq, c.ne, c.cpu, what)
                    }
                };
                eprintln!("[{}/{}] seed {:<6} {}", i + 1, seeds.len(), seed, line.chars().take(160).collect::<String>());
                results.lock().expect("results").insert(seed, outcome);
            });
        }
    });
    let results = results.into_inner().expect("results");
    let wall = started.elapsed();

    // Keep the disagreements (reduced) and one example per error group.
    let mut kept: BTreeMap<u64, String> = BTreeMap::new();
    if let Some(dir) = &keep {
        let mut groups_seen = std::collections::BTreeSet::new();
        for (seed, o) in &results {
            let Outcome::Checked(c) = o else { continue };
            match &c.class {
                Class::Disagreement { .. } => match reduce(&exe, c, *seed, dir, args, &extra) {
                    Ok(d) => {
                        kept.insert(*seed, d.display().to_string());
                    }
                    Err(e) => eprintln!("seed {}: {}", seed, e),
                },
                Class::Error(m) if groups_seen.insert(m.clone()) => {
                    let d = dir.join("errors");
                    let _ = std::fs::create_dir_all(&d);
                    let _ = std::fs::copy(&c.file, d.join(format!("seed-{}.i", seed)));
                }
                _ => {}
            }
        }
        let _ = std::fs::write(dir.join("results.tsv"), tsv(&results));
    }
    let _ = std::fs::remove_dir_all(&work);
    print_summary(args, &seeds, &results, wall, &kept);
    let disagreements = results.values().any(|o| matches!(o, Outcome::Checked(Check { class: Class::Disagreement { .. }, .. })));
    Ok(if disagreements { 1 } else { 0 })
}

fn tsv(results: &BTreeMap<u64, Outcome>) -> String {
    let mut out = String::from("seed\toutcome\teq\tne\tcpu_s\tnote\n");
    for (seed, o) in results {
        let row = match o {
            Outcome::Dropped(why) => format!("{}\tdropped\t-\t-\t-\t{}", seed, why),
            Outcome::Checked(c) => {
                let (what, note) = match &c.class {
                    Class::Decided => ("decided", String::new()),
                    Class::Unknown(w) => ("unknown", w.clone()),
                    Class::Disagreement { .. } => ("disagreement", String::new()),
                    Class::Error(m) => ("error", m.clone()),
                };
                format!("{}\t{}\t{}\t{}\t{:.3}\t{}", seed, what, c.eq, c.ne, c.cpu, note)
            }
        };
        out.push_str(&row.replace('\n', " "));
        out.push('\n');
    }
    out
}

fn print_summary(args: &SoundnessArgs, seeds: &[u64], results: &BTreeMap<u64, Outcome>, wall: Duration, kept: &BTreeMap<u64, String>) {
    let mut dropped: BTreeMap<String, usize> = BTreeMap::new();
    let mut unknown: BTreeMap<String, usize> = BTreeMap::new();
    let mut errors: BTreeMap<String, (usize, u64)> = BTreeMap::new();
    let (mut decided, mut disagreements) = (0usize, Vec::new());
    let (mut cpu, mut cpu_decided) = (Vec::new(), Vec::new());
    for (seed, o) in results {
        match o {
            Outcome::Dropped(why) => *dropped.entry(message_group(why)).or_default() += 1,
            Outcome::Checked(c) => {
                cpu.push(c.cpu);
                match &c.class {
                    Class::Decided => {
                        decided += 1;
                        cpu_decided.push(c.cpu);
                    }
                    Class::Unknown(w) => *unknown.entry(w.clone()).or_default() += 1,
                    Class::Disagreement { eq_false } => disagreements.push((*seed, *eq_false, c.eq.clone(), c.ne.clone())),
                    Class::Error(m) => errors.entry(m.clone()).or_insert((0, *seed)).0 += 1,
                }
            }
        }
    }
    let checked = cpu.len();
    let n_unknown: usize = unknown.values().sum();
    let n_errors: usize = errors.values().map(|e| e.0).sum();
    let total_cpu: f64 = cpu.iter().sum();
    let pct = |n: usize, of: usize| if of == 0 { 0.0 } else { 100.0 * n as f64 / of as f64 };
    println!(
        "Soundness campaign: Csmith seeds {} ({} programs), cpals --timeout {} s, {} at a time, wall time {:.0} s",
        args.seeds,
        seeds.len(),
        args.timeout,
        args.jobs,
        wall.as_secs_f64()
    );
    println!(
        "Csmith options: {}{}\n",
        CSMITH_OPTIONS.join(" "),
        args.csmith_args.as_deref().map(|a| format!(" {}", a)).unwrap_or_default()
    );
    println!("| programs | dropped | checked | decided | unknown | disagreements | errors | median CPU s | median CPU s (decided) | total CPU s |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {} | {} | {} | {} ({:.1} %) | {} | {} | {} | {:.2} | {:.2} | {:.0} |\n",
        seeds.len(),
        seeds.len() - checked,
        checked,
        decided,
        pct(decided, checked),
        n_unknown,
        disagreements.len(),
        n_errors,
        median(&mut cpu.clone()),
        median(&mut cpu_decided),
        total_cpu
    );
    println!(
        "Decided: {:.1} % of the programs checked, {:.1} % of those cpals accepted (without errors).\n",
        pct(decided, checked),
        pct(decided, checked - n_errors)
    );
    let table = |title: &str, rows: Vec<(String, usize, String)>| {
        if rows.is_empty() {
            return;
        }
        println!("| {} | programs | |\n|---|---|---|", title);
        for (m, n, ex) in rows {
            println!("| {} | {} | {} |", m.replace('|', "\\|"), n, ex);
        }
        println!();
    };
    let by_count = |m: BTreeMap<String, usize>| {
        let mut v: Vec<(String, usize, String)> = m.into_iter().map(|(k, n)| (k, n, String::new())).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    };
    table("dropped (native run or generation)", by_count(dropped));
    table("unknown (reason)", by_count(unknown));
    let mut e: Vec<(String, usize, String)> = errors.into_iter().map(|(m, (n, s))| (m, n, format!("e.g. seed {}", s))).collect();
    e.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    table("error (cpals's message)", e);
    if disagreements.is_empty() {
        println!("Disagreements: none.");
    } else {
        println!("Disagreements:\n");
        for (seed, eq_false, eq, ne) in &disagreements {
            let what = if *eq_false {
                "refutes `checksum == K`, which gcc's run satisfies"
            } else {
                "proves `checksum != K`, which gcc's run violates"
            };
            println!(
                "- seed {}: cpals {} (== {}, != {}){}",
                seed,
                what,
                eq,
                ne,
                kept.get(seed).map(|d| format!(", kept in {}", d)).unwrap_or_default()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_range_includes_both_ends() {
        assert_eq!(parse_seeds("3..5").unwrap(), vec![3, 4, 5]);
        assert_eq!(parse_seeds("7").unwrap(), vec![7]);
        assert!(parse_seeds("5..3").is_err());
        assert!(parse_seeds("a..b").is_err());
    }

    #[test]
    fn the_checksum_call_becomes_two_assertions() {
        let p =
            "int main (void)\n{\n    func_1();\n    platform_main_end(crc32_context ^ 0xFFFFFFFFUL, print_hash_value);\n    return 0;\n}\n";
        let out = add_assertions(p, 42).unwrap();
        assert!(out.contains("    uint64_t checksum = crc32_context ^ 0xFFFFFFFFUL;\n"));
        assert!(out.contains("assert(checksum == 42ULL);\n"));
        assert!(out.contains("assert(checksum != 42ULL);\n"));
        assert!(!out.contains("platform_main_end"));
        assert!(add_assertions("int main(void) { return 0; }\n", 1).is_none());
    }

    #[test]
    fn only_the_integer_wrappers_are_kept() {
        let h = "#ifndef SAFE_MATH_H\n#define SAFE_MATH_H\nSTATIC int8_t f(int8_t x) { return x; }\n#ifdef __STDC__\nSTATIC float g(float x) { return x; }\n#endif\n#endif\n";
        let out = integer_part(h).unwrap();
        assert!(out.contains("int8_t f"));
        assert!(!out.contains("float g"));
        assert_eq!(out.matches("#endif").count(), 1);
        assert!(integer_part("int x;\n").is_none());
    }

    #[test]
    fn a_child_is_stopped_at_its_cpu_time_limit() {
        let mut busy = Command::new("sh");
        busy.arg("-c").arg("while :; do :; done");
        let r = run_with(busy, Duration::from_secs(120), Some((0.3, 0.3)), false).unwrap();
        assert!(r.killed && !r.stalled);
        assert!(r.cpu >= 0.3, "{}", r.cpu);
        let mut quick = Command::new("sh");
        quick.arg("-c").arg("echo checksum = 7; exit 3");
        let r = run(quick, Duration::from_secs(120)).unwrap();
        assert_eq!((r.code, r.stdout.as_str(), r.killed), (Some(3), "checksum = 7\n", false));
    }

    #[test]
    fn messages_are_grouped_without_locations_and_numbers() {
        assert_eq!(message_group("prog.i:12:9: unknown type name `__builtin_va_list`"), "unknown type name `__builtin_va_list`");
        assert_eq!(message_group("loop at line 40 not unrolled"), "loop at line N not unrolled");
    }
}
