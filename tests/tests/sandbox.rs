//! The sandbox of native runs (issue 24): the escape routes of a crafted C file (an asm label
//! renaming `printf` to `system`, a constructor, a raw `syscall`) create nothing when cpals runs
//! the program through `check`, `replay` or an editor; a native run ends with its job (an edit,
//! the cancel command, a shutdown, cpals killed) and leaves no temporary files.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cpals_tests::{cpals_bin, file_uri, temp_dir};
use lsp_test_client::LspClient;
use serde_json::{json, Value};

/// The three escape routes, each creating a file in `dir`, hidden from the analysis (which
/// preprocesses with `__CPALS__` defined) so that only a native run executes them. The
/// analysis sees a long loop and then `reach_error()`: a violation its concrete run finds
/// and only a native run can confirm. With `spin`, the native run then loops for ever.
fn escaping_program(dir: &Path, spin: bool) -> String {
    let d = dir.display();
    format!(
        r#"extern void reach_error(void);
#ifndef __CPALS__
#include <stdio.h>
int printf(const char *, ...) __asm__("system");
__attribute__((constructor)) static void by_constructor(void) {{
  FILE *f = fopen("{d}/constructor", "w");
  if (f) fclose(f);
}}
static void by_syscall(void) {{
  static const char path[] = "{d}/syscall";
  long r;
#if defined(__x86_64__)
  __asm__ volatile("syscall" : "=a"(r) : "a"(2L), "D"(path), "S"(0101L), "d"(0644L) : "rcx", "r11", "memory");
#else
  __asm__ volatile("int $0x80" : "=a"(r) : "a"(5L), "b"(path), "c"(0101L), "d"(0644L) : "memory");
#endif
}}
#endif
int main(void) {{
  int s = 0;
  for (int i = 0; i < 100000; i++) s += i % 3;
#ifndef __CPALS__
  printf("touch {d}/asm-label");
  by_syscall();
  volatile int spin = {spin};
  while (spin) {{}}
#endif
  if (s > 0) reach_error();
  return 0;
}}
"#,
        spin = spin as i32
    )
}

const ESCAPES: [&str; 3] = ["asm-label", "constructor", "syscall"];

fn escaped(dir: &Path) -> Vec<&'static str> {
    ESCAPES.iter().copied().filter(|f| dir.join(f).exists()).collect()
}

/// What cpals left in its temporary folder.
fn leftovers(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()
}

/// Compiled and run without cpals, the program does escape (the routes are real).
fn control(program: &Path, dir: &Path, m32: bool) {
    let exe = dir.join("control");
    let stub = dir.join("reach_error.c");
    std::fs::write(&stub, "void reach_error(void) {}\n").unwrap();
    let mut cc = Command::new("cc");
    cc.args(["-w", "-std=gnu11"]).arg(program).arg(&stub).arg("-o").arg(&exe);
    if m32 {
        cc.arg("-m32");
    }
    assert!(cc.status().unwrap().success(), "cc compiles the program");
    let _ = Command::new(&exe).stdout(Stdio::null()).status().unwrap();
    assert_eq!(escaped(dir), ESCAPES.to_vec(), "outside the sandbox every route creates its file");
    for f in ESCAPES {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
}

fn cpals(tmp: &Path) -> Command {
    let mut c = Command::new(cpals_bin());
    c.env("TMPDIR", tmp);
    c
}

#[test]
fn escape_routes_create_nothing_through_check_and_replay() {
    for (model, m32) in [("LP64", false), ("ILP32", true)] {
        let dir = temp_dir(&format!("sandbox-escape-{model}"));
        let tmp = dir.join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let program = dir.join("escape.c");
        std::fs::write(&program, escaping_program(&dir, false)).unwrap();
        control(&program, &dir, m32);

        let harness = dir.join("harness.c");
        let out = cpals(&tmp)
            .arg("check")
            .arg(&program)
            .args(["--data-model", model, "--timeout", "60", "--harness"])
            .arg(&harness)
            .output()
            .unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        // The program did run (its counterexample is confirmed natively) and the user is told.
        assert!(stdout.contains("confirmed by running the program natively in the sandbox"), "{model}: {stdout}{stderr}");
        assert!(stderr.contains("run natively 1 time, in the sandbox"), "{model}: {stderr}");
        assert_eq!(escaped(&dir), Vec::<&str>::new(), "{model}: check");

        let out = cpals(&tmp).arg("replay").arg(&program).arg(&harness).args(["--data-model", model]).output().unwrap();
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("reached: "), "{model}: {out:?}");
        assert_eq!(escaped(&dir), Vec::<&str>::new(), "{model}: replay");

        // A harness is C the user may edit: its own escapes stay in the sandbox too.
        let text = std::fs::read_to_string(&harness).unwrap();
        let evil = format!(
            "{text}\n#include <stdio.h>\n__attribute__((constructor)) static void harness_escape(void) {{\n  FILE *f = fopen(\"{}/constructor\", \"w\");\n  if (f) fclose(f);\n}}\n",
            dir.display()
        );
        std::fs::write(&harness, evil).unwrap();
        let out = cpals(&tmp).arg("replay").arg(&program).arg(&harness).args(["--data-model", model]).output().unwrap();
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("reached: "), "{model}: {out:?}");
        assert_eq!(escaped(&dir), Vec::<&str>::new(), "{model}: replay with an edited harness");

        // `--native off`: not run at all, so not confirmed.
        let out =
            cpals(&tmp).arg("check").arg(&program).args(["--data-model", model, "--timeout", "5", "--native", "off"]).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("Verification result: UNKNOWN"), "{model}: {stdout}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains("natively"), "{out:?}");
        assert_eq!(leftovers(&tmp), Vec::<String>::new(), "{model}: temporary files left behind");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The native runs `pid` started: its children running a program from an open descriptor.
fn native_children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else { continue };
        // `pid (comm) state ppid …`: the command may contain spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else { continue };
        let ppid: Option<u32> = rest.split(' ').nth(1).and_then(|p| p.parse().ok());
        let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
        if ppid == Some(pid) && cmdline.starts_with(b"/proc/self/fd/") && !rest.starts_with('Z') {
            out.push(child);
        }
    }
    out
}

/// Whether process `pid` runs (a zombie does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.rfind(')').is_some_and(|i| !s[i + 2..].starts_with('Z')))
}

fn wait_for_native_run(parent: u32) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(&c) = native_children(parent).first() {
            return c;
        }
        assert!(Instant::now() < deadline, "no native run started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How long `pid` takes to stop running after `event` happened at `since` (at most 5 s).
fn gone_within(pid: u32, since: Instant) -> Duration {
    while running(pid) && since.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(!running(pid), "the native run {pid} still runs after 5 s");
    since.elapsed()
}

fn spinning_setup(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = temp_dir(name);
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let program = dir.join("spin.c");
    std::fs::write(&program, escaping_program(&dir, true)).unwrap();
    (dir, tmp, program)
}

#[test]
fn a_native_run_dies_with_cpals() {
    let (dir, tmp, program) = spinning_setup("sandbox-sigkill");
    let mut check: Child = cpals(&tmp).arg("check").arg(&program).args(["--timeout", "120"]).stdout(Stdio::null()).spawn().unwrap();
    let native = wait_for_native_run(check.id());
    check.kill().unwrap();
    let killed = Instant::now();
    let took = gone_within(native, killed);
    let _ = check.wait();
    assert!(took < Duration::from_millis(100), "the native run outlived a killed cpals by {took:?}");
    assert_eq!(leftovers(&tmp), Vec::<String>::new(), "temporary files left behind");
    assert_eq!(escaped(&dir), Vec::<&str>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_run_ends_with_its_job_in_the_editor() {
    let (dir, tmp, program) = spinning_setup("sandbox-editor");
    let env = format!("TMPDIR={}", tmp.display());
    let bin = cpals_bin();
    let (c, mut server) = LspClient::spawn(Path::new("/usr/bin/env"), &[&env, bin.to_str().unwrap(), "lsp"]).expect("cpals lsp starts");
    let pid = server.id().unwrap();
    c.initialize(json!({"settings": {"debounceMs": 0, "trigger": "onChange", "timeoutSeconds": 120}})).await;
    let uri = file_uri(&program);
    c.open(&uri, &std::fs::read_to_string(&program).unwrap()).await;

    // An edit cancels the job: its native run ends at once.
    let native = tokio::task::spawn_blocking(move || wait_for_native_run(pid)).await.unwrap();
    c.replace_line(&uri, 2, 0, "extern void reach_error(void); /* edited */\n").await;
    let took = gone_within(native, Instant::now());
    assert!(took < Duration::from_millis(100), "the native run outlived an edit by {took:?}");

    // The edited file is verified again; the cancel command ends that run.
    let native = tokio::task::spawn_blocking(move || wait_for_native_run(pid)).await.unwrap();
    let cancel = Instant::now();
    c.call("workspace/executeCommand", json!({"command": "cpals.cancel", "arguments": [uri]})).await;
    let took = gone_within(native, cancel);
    assert!(took < Duration::from_millis(100), "the native run outlived a cancel by {took:?}");

    // Verified again on request; a shutdown ends that run.
    c.call("workspace/executeCommand", json!({"command": "cpals.verifyFile", "arguments": [uri]})).await;
    let native = tokio::task::spawn_blocking(move || wait_for_native_run(pid)).await.unwrap();
    let shutdown = Instant::now();
    c.shutdown().await;
    let took = gone_within(native, shutdown);
    assert!(took < Duration::from_millis(100), "the native run outlived a shutdown by {took:?}");
    let status = tokio::time::timeout(Duration::from_secs(60), server.wait()).await.expect("the server exits").unwrap();
    assert!(status.success(), "{status}");
    assert_eq!(leftovers(&tmp), Vec::<String>::new(), "temporary files left behind");
    assert_eq!(escaped(&dir), Vec::<&str>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_an_escaping_file_in_the_editor_creates_nothing() {
    let dir = temp_dir("sandbox-open");
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let program = dir.join("escape.c");
    std::fs::write(&program, escaping_program(&dir, false)).unwrap();
    let env = format!("TMPDIR={}", tmp.display());
    let bin = cpals_bin();
    let (mut c, mut server) = LspClient::spawn(Path::new("/usr/bin/env"), &[&env, bin.to_str().unwrap(), "lsp"]).expect("cpals lsp starts");
    c.initialize(json!({"notifyJobs": true, "settings": {"debounceMs": 0, "timeoutSeconds": 120}})).await;
    let uri = file_uri(&program);
    c.open(&uri, &std::fs::read_to_string(&program).unwrap()).await;
    let (_, diags) = c.settled(&uri, 1).await;
    let violated = diags.iter().find(|d| d["code"] == "violated").unwrap_or_else(|| panic!("{diags:#?}"));
    assert!(
        violated["message"].as_str().unwrap().contains("confirmed by running the program natively in the sandbox"),
        "the editor says the program ran: {violated}"
    );
    assert_eq!(escaped(&dir), Vec::<&str>::new());
    c.shutdown().await;
    let _ = tokio::time::timeout(Duration::from_secs(60), server.wait()).await;
    assert_eq!(leftovers(&tmp), Vec::<String>::new(), "temporary files left behind");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The escape program's `main`, with a loop through a call (134 million iterations) before
/// the violation: only a native run reaches it.
fn fuzzing_program(dir: &Path) -> String {
    escaping_program(dir, false).replace("int main(void) {", "unsigned f(unsigned z) { return z + 2; }\nint main(void) {").replace(
        "  if (s > 0) reach_error();",
        "  unsigned x = 0;\n  while (x < 0x0fffffff) x = f(x);\n  if (x % 2 == 0 && s > 0) reach_error();",
    )
}

/// Issue 25 in the editor: opening the same program finds the violation by the fuzzing phase,
/// in the sandbox (nothing escapes, nothing is left behind); with `nativeExecution: "off"`
/// nothing runs and the violation stays unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editor_fuzzes_in_the_sandbox_and_not_with_native_off() {
    let dir = temp_dir("sandbox-editor-fuzz");
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let program = dir.join("fuzz.c");
    let text = fuzzing_program(&dir);
    std::fs::write(&program, &text).unwrap();
    let uri = file_uri(&program);
    let env = format!("TMPDIR={}", tmp.display());
    let bin = cpals_bin();
    for native in ["sandboxed", "off"] {
        let (mut c, mut server) =
            LspClient::spawn(Path::new("/usr/bin/env"), &[&env, bin.to_str().unwrap(), "lsp"]).expect("cpals lsp starts");
        let settings = json!({"debounceMs": 0, "timeoutSeconds": 20, "nativeExecution": native});
        c.initialize(json!({"notifyJobs": true, "settings": settings})).await;
        c.open(&uri, &text).await;
        let (_, diags) = c.settled(&uri, 1).await;
        let violated: Vec<_> = diags.iter().filter(|d| d["code"] == "violated").collect();
        if native == "off" {
            assert_eq!(violated, Vec::<&Value>::new(), "nothing ran, nothing is confirmed");
        } else {
            let [v] = violated[..] else { panic!("one violation: {diags:#?}") };
            let message = v["message"].as_str().unwrap();
            assert!(message.contains("confirmed by running the program natively in the sandbox"), "{v}");
        }
        c.shutdown().await;
        let _ = tokio::time::timeout(Duration::from_secs(60), server.wait()).await;
        assert_eq!(escaped(&dir), Vec::<&str>::new(), "{native}");
        assert_eq!(leftovers(&tmp), Vec::<String>::new(), "{native}: temporary files left behind");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 25: the fuzzing phase runs the program in the fork server, under the same sandbox.
/// The program's loop (134 million iterations through a call) is too long for the concrete
/// interpreter and the analyses; a native fuzzing run reaches the violation, with the escape
/// routes hidden from the analysis executed in every run and creating nothing. With
/// `--native off` nothing runs and the violation stays unknown.
#[test]
fn fuzzing_runs_in_the_sandbox_and_not_with_native_off() {
    let dir = temp_dir("sandbox-fuzz");
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let program = dir.join("fuzz.c");
    std::fs::write(&program, fuzzing_program(&dir)).unwrap();
    for (model, m32) in [("LP64", false), ("ILP32", true)] {
        control(&program, &dir, m32);
        let out = cpals(&tmp).arg("check").arg(&program).args(["--data-model", model, "--timeout", "60"]).output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("Verification result: FALSE"), "{model}: {stdout}{stderr}");
        assert!(stdout.contains("confirmed by running the program natively in the sandbox"), "{model}: {stdout}");
        assert!(stderr.contains("run natively") && stderr.contains("in the sandbox"), "{model}: {stderr}");
        assert_eq!(escaped(&dir), Vec::<&str>::new(), "{model}: fuzzing");
        assert_eq!(leftovers(&tmp), Vec::<String>::new(), "{model}: temporary files left behind");
    }
    let out = cpals(&tmp).arg("check").arg(&program).args(["--timeout", "5", "--native", "off"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Verification result: UNKNOWN"), "{stdout}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("natively"), "{out:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
