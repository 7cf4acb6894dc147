//! Native fuzzing: the program is compiled once (gcc `-O1`, the task's data model, edge
//! coverage from `-fsanitize-coverage=trace-pc`) with a harness whose `__VERIFIER_nondet_*`
//! functions read their values from memory shared with cpals, and run again and again by a
//! fork server in the sandbox ([`crate::sandbox::ForkServer`]). Inputs are boundary-biased
//! random values, single constants, and mutations of earlier inputs that reached new coverage
//! (coverage-guided greybox fuzzing as in AFL: edge hits bucketed by count, a run whose
//! buckets are new joins the corpus). A run that reaches a violation yields the values its
//! input functions returned, which [`Fuzzer::minimise`] shortens by delta debugging with
//! replays (Zeller and Hildebrandt, "Simplifying and isolating failure-inducing input", 2002):
//! fewer inputs, then each value as near 0 or a constant of the program as still reaches it.
//!
//! Nothing here decides a verdict: the portfolio confirms the inputs found (a run of the
//! concrete interpreter on the CFA and the precise path check, or a native replay), so that
//! undefined behaviour in the optimised native run never makes a wrong `false`.

use std::fmt::Write as _;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::cfa::DataModel;
use crate::core::Cancel;
use crate::harness::{instrument_targets, Targets, EXHAUSTED_STATUS, REACHED_STATUS};
use crate::ir::IntTy;
use crate::sandbox::{self, End, ForkServer, TempDir};

/// Input values one run may read (a run that asks for more ends, exhausted).
pub const MAX_VALUES: usize = 1 << 20;
/// Values of a corpus entry kept (later ones come from the generator again).
const CORPUS_VALUES: usize = 4096;
/// Bytes of the coverage map (edges hashed into it).
const COVERAGE: usize = 1 << 16;
/// Byte offsets in the shared memory (the harness's `struct cpals_shared`).
const OFF_SEED: usize = 0;
const OFF_PREFIX_LEN: usize = 8;
const OFF_TAIL: usize = 12;
const OFF_USED: usize = 16;
/// Set by the harness when the run reaches a violation (its exit status alone could be the
/// program's own `exit(86)`).
const OFF_REACHED: usize = 20;
/// Set by the harness's constructor: the program's code ran, so the sandbox's filter was
/// installed (an exit with [`sandbox::NO_SANDBOX_STATUS`] is then the program's own).
const OFF_STARTED: usize = 24;
const OFF_PREFIX: usize = 64;
const OFF_TAPE: usize = OFF_PREFIX + 8 * MAX_VALUES;
const OFF_FN: usize = OFF_TAPE + 8 * MAX_VALUES;
const OFF_COV: usize = OFF_FN + 4 * MAX_VALUES;
const SHARED_SIZE: usize = OFF_COV + COVERAGE;

/// What a run's input functions return once the given values are used up.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Tail {
    /// Boundary-biased pseudo-random values from the seed.
    Random = 0,
    Zeros = 1,
    /// The seed, as every value.
    Constant = 2,
    /// The seed minus the input's position (an array read in a loop comes out sorted in
    /// descending order: a sort ends in one pass and a check of the order fails at once).
    Descending = 3,
    /// The seed plus the input's position.
    Ascending = 4,
}

/// An input function of the program and the type it returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputFn {
    pub name: String,
    pub ty: IntTy,
}

/// The values a run's input functions returned, in order: (index into the input functions,
/// value as the function's type gives it, sign-extended for signed types).
pub type Tape = Vec<(u32, u64)>;

/// Memory shared with every run (a `memfd`, mapped here and by the harness).
struct Shared {
    fd: OwnedFd,
    base: *mut u8,
}

impl Shared {
    fn new() -> Result<Shared, String> {
        let err = |what: &str| format!("cannot create the fuzzer's shared memory ({}): {}", what, std::io::Error::last_os_error());
        // SAFETY: a new anonymous file; the name is a valid C string.
        let raw = unsafe { libc::memfd_create(c"cpals-fuzz".as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(err("memfd_create"));
        }
        // SAFETY: `raw` is a new descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: plain system calls on our descriptor; the mapping is checked.
        unsafe {
            if libc::ftruncate(fd.as_raw_fd(), SHARED_SIZE as libc::off_t) != 0 {
                return Err(err("ftruncate"));
            }
            let p = libc::mmap(std::ptr::null_mut(), SHARED_SIZE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0);
            if p == libc::MAP_FAILED {
                return Err(err("mmap"));
            }
            Ok(Shared { fd, base: p as *mut u8 })
        }
    }

    // The runs write this memory only while cpals waits for them (one at a time), so plain
    // volatile accesses suffice.
    fn put_u64(&self, off: usize, v: u64) {
        debug_assert!(off + 8 <= SHARED_SIZE);
        // SAFETY: in bounds of the mapping, 8-aligned.
        unsafe { std::ptr::write_volatile(self.base.add(off) as *mut u64, v) }
    }
    fn put_u32(&self, off: usize, v: u32) {
        debug_assert!(off + 4 <= SHARED_SIZE);
        // SAFETY: in bounds of the mapping, 4-aligned.
        unsafe { std::ptr::write_volatile(self.base.add(off) as *mut u32, v) }
    }
    fn u64_at(&self, off: usize) -> u64 {
        // SAFETY: in bounds of the mapping, 8-aligned.
        unsafe { std::ptr::read_volatile(self.base.add(off) as *const u64) }
    }
    fn u32_at(&self, off: usize) -> u32 {
        // SAFETY: in bounds of the mapping, 4-aligned.
        unsafe { std::ptr::read_volatile(self.base.add(off) as *const u32) }
    }
    fn coverage(&self) -> &[u8] {
        // SAFETY: in bounds; no run is going while cpals reads it.
        unsafe { std::slice::from_raw_parts(self.base.add(OFF_COV), COVERAGE) }
    }
    fn clear_coverage(&self) {
        // SAFETY: in bounds; no run is going.
        unsafe { std::ptr::write_bytes(self.base.add(OFF_COV), 0, COVERAGE) }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, SHARED_SIZE);
        }
    }
}

// SAFETY: the mapping is owned by `Shared` and only touched through `&self`/`&mut self`.
unsafe impl Send for Shared {}

/// C source of the fuzzing harness: the input functions (from the shared memory, recording
/// each value they return), the coverage callback, and the violation reports of
/// [`crate::harness`] (exit status [`REACHED_STATUS`]). Its own functions are not instrumented.
pub fn harness_source(fns: &[InputFn], defined: &[String], constants: &[i128]) -> String {
    let mut s = String::new();
    s.push_str("/* Generated by cpals: the fuzzing harness (see cpals's fuzz.rs). */\n");
    s.push_str("#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n#include <sys/mman.h>\n\n");
    s.push_str("#define CPALS_NI __attribute__((no_sanitize_coverage, no_instrument_function))\n");
    let _ = writeln!(s, "#define CPALS_MAXV {}\n#define CPALS_COV {}", MAX_VALUES, COVERAGE);
    let _ = writeln!(s, "#define CPALS_SHARED_FD {}", sandbox::SERVER_SHARED_FD);
    s.push_str(
        "struct cpals_shared {\n  unsigned long long seed;\n  unsigned int prefix_len, tail, used, reached, started, pad;\n  unsigned long long reserved[4];\n  \
         unsigned long long prefix[CPALS_MAXV];\n  unsigned long long tape[CPALS_MAXV];\n  unsigned int fn[CPALS_MAXV];\n  unsigned char cov[CPALS_COV];\n};\n",
    );
    s.push_str("static struct cpals_shared *cpals_sh;\nstatic unsigned long long cpals_rng;\nstatic unsigned int cpals_prev;\n");
    let _ = writeln!(s, "static const unsigned long long cpals_dict[{}] = {{", constants.len().max(1));
    for c in constants {
        let _ = writeln!(s, "  {}ULL,", *c as u64);
    }
    if constants.is_empty() {
        s.push_str("  0ULL\n");
    }
    s.push_str("};\n");
    let _ = writeln!(s, "static const unsigned cpals_ndict = {};", constants.len());
    let _ = writeln!(
        s,
        r#"CPALS_NI static struct cpals_shared *cpals_map(void) {{
  void *p = mmap(0, sizeof(struct cpals_shared), PROT_READ | PROT_WRITE, MAP_SHARED, CPALS_SHARED_FD, 0);
  if (p == MAP_FAILED) _exit(88);
  cpals_sh = (struct cpals_shared *)p;
  cpals_rng = cpals_sh->seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
  return cpals_sh;
}}
__attribute__((constructor)) CPALS_NI static void cpals_started(void) {{
  struct cpals_shared *s = cpals_sh ? cpals_sh : cpals_map();
  s->started = 1;
}}
CPALS_NI static unsigned long long cpals_rand(void) {{
  unsigned long long x = cpals_rng;
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
  cpals_rng = x;
  return x * 0x2545F4914F6CDD1DULL;
}}
CPALS_NI void __sanitizer_cov_trace_pc(void) {{
  struct cpals_shared *s = cpals_sh ? cpals_sh : cpals_map();
  unsigned long pc = (unsigned long)__builtin_return_address(0);
  unsigned int h = (unsigned int)(((unsigned long long)pc * 0x9E3779B97F4A7C15ULL) >> 40);
  s->cov[(h ^ cpals_prev) & (CPALS_COV - 1)]++;
  cpals_prev = (h & (CPALS_COV - 1)) >> 1;
}}
/* The raw value of the next input (before conversion to the function's type). */
CPALS_NI static unsigned long long cpals_value(unsigned i, int bits, int sgn) {{
  struct cpals_shared *s = cpals_sh;
  if (i < s->prefix_len) return s->prefix[i];
  if (s->tail == 1) return 0;
  if (s->tail == 2) return s->seed;
  if (s->tail == 3) return s->seed - i;
  if (s->tail == 4) return s->seed + i;
  unsigned long long max = bits >= 64 ? (sgn ? 0x7FFFFFFFFFFFFFFFULL : ~0ULL) : (sgn ? (1ULL << (bits - 1)) - 1 : (1ULL << bits) - 1);
  unsigned long long min = sgn ? ~max : 0;
  unsigned long long r = cpals_rand();
  switch (r % 12) {{
    case 0: return 0;
    case 1: return 1;
    case 2: return ~0ULL;
    case 3: return min;
    case 4: return max;
    case 5: return max - 1;
    case 6: return min + 1;
    case 7: case 8: return (unsigned long long)((long long)(cpals_rand() % 201) - 100);
    case 9: case 10:
      if (cpals_ndict) {{ unsigned long long c = cpals_dict[cpals_rand() % cpals_ndict]; return c + (cpals_rand() % 3) - 1; }}
      return cpals_rand() % 17;
    default: return cpals_rand();
  }}
}}
CPALS_NI static unsigned cpals_take(void) {{
  struct cpals_shared *s = cpals_sh ? cpals_sh : cpals_map();
  unsigned i = s->used;
  if (i >= CPALS_MAXV) _exit({exhausted});
  return i;
}}
CPALS_NI static void cpals_record(unsigned i, unsigned k, unsigned long long v) {{
  cpals_sh->tape[i] = v;
  cpals_sh->fn[i] = k;
  cpals_sh->used = i + 1;
}}
"#,
        exhausted = EXHAUSTED_STATUS
    );
    for (k, f) in fns.iter().enumerate() {
        if defined.contains(&f.name) {
            continue;
        }
        let ct = f.ty.c_name();
        let (bits, sgn) = if f.ty.boolean { (1, 0) } else { (f.ty.bits.min(64), f.ty.signed as u8) };
        let widen = if f.ty.signed { "(unsigned long long)(long long)v" } else { "(unsigned long long)v" };
        let _ = writeln!(
            s,
            "CPALS_NI {ct} {name}() {{ unsigned i = cpals_take(); {ct} v = ({ct})cpals_value(i, {bits}, {sgn}); cpals_record(i, {k}, {widen}); return v; }}",
            name = f.name
        );
    }
    s.push_str(&command_line(fns));
    let _ = writeln!(
        s,
        "CPALS_NI static void cpals_reached(void) {{ struct cpals_shared *s = cpals_sh ? cpals_sh : cpals_map(); s->reached = 1; _exit({r}); }}\n\
         CPALS_NI void __wrap___assert_fail(const char *a, const char *f, unsigned int l, const char *fn) {{ cpals_reached(); }}\n\
         CPALS_NI void __cpals_error_label(void) {{ cpals_reached(); }}\n\
         CPALS_NI void __cpals_reach_call(const char *f) {{ (void)f; cpals_reached(); }}",
        r = REACHED_STATUS
    );
    if !defined.iter().any(|d| d == "__VERIFIER_assume") {
        s.push_str("CPALS_NI void __VERIFIER_assume(int cond) { if (!cond) _exit(0); }\n");
    }
    s.push_str(&crate::harness::kernel_allocators(defined, "CPALS_NI "));
    for f in crate::harness::ERROR_FUNCTIONS {
        if !defined.iter().any(|d| d == f) {
            let _ = writeln!(s, "CPALS_NI void {f}() {{ cpals_reached(); }}");
        }
    }
    s
}

/// The fuzzing harness's `main` when the program's `main` takes a command line (the fuzzer's
/// input functions include the command line model's, `libc/args.c`): it draws `argc` and the
/// bytes of argv's strings from the input functions in the model's order (the count, then 8
/// bytes per string), so that a run's tape replays on the CFA, and passes them to the
/// program's `main` (`__real_main`: the link's `--wrap=main`). Beyond the given values, the
/// count is in the model's range and a string is, one time in two, one of the program's
/// constants in decimal (`atoi(argv[1]) == 48` needs "48", which random bytes seldom give).
/// Empty when the program has no command line.
fn command_line(fns: &[InputFn]) -> String {
    use crate::frontend::models::{ARGS_MAX, ARG_MAX_LEN};
    let Some((count, byte)) = command_line_fns(fns) else { return String::new() };
    format!(
        r#"static char cpals_arg_text[{max}][{len} + 1];
static char *cpals_arg_list[{max} + 1];
/* A string of argv: {len} bytes from the inputs (a NUL among them ends it earlier). */
CPALS_NI static void cpals_arg_fill(int k) {{
  struct cpals_shared *s = cpals_sh ? cpals_sh : cpals_map();
  char text[32] = {{0}};
  int number = s->used >= s->prefix_len && s->tail == 0 && cpals_ndict && cpals_rand() % 2 == 0;
  if (number) {{
    /* Wrapping arithmetic, in unsigned: a constant near the ends of the range stays defined. */
    unsigned long long c = cpals_dict[cpals_rand() % cpals_ndict] + (cpals_rand() % 3) - 1;
    snprintf(text, sizeof text, "%lld", (long long)(cpals_rand() % 4 == 0 ? 0 - c : c));
  }}
  for (int j = 0; j < {len}; j++) {{
    unsigned i = cpals_take();
    char b = number ? (i < s->prefix_len ? (char)s->prefix[i] : text[j]) : (char)cpals_value(i, 8, 1);
    cpals_record(i, {byte}, (unsigned long long)(long long)b);
    cpals_arg_text[k][j] = b;
  }}
  cpals_arg_text[k][{len}] = 0;
}}
int __real_main(int, char **, char **);
CPALS_NI int __wrap_main(int argc, char **argv, char **envp) {{
  struct cpals_shared *s = cpals_sh ? cpals_sh : cpals_map();
  (void)argc;
  (void)argv;
  unsigned i = cpals_take();
  unsigned long long raw = cpals_value(i, 32, 1);
  int n = i < s->prefix_len ? (int)raw : 1 + (int)(raw % {max});
  cpals_record(i, {count}, (unsigned long long)(long long)n);
  if (n < 1 || n > {max}) _exit(0);
  for (int k = 0; k <= {max}; k++) cpals_arg_list[k] = 0;
  for (int k = 0; k < n; k++) {{
    cpals_arg_fill(k);
    cpals_arg_list[k] = cpals_arg_text[k];
  }}
  return __real_main(n, cpals_arg_list, envp);
}}
"#,
        max = ARGS_MAX,
        len = ARG_MAX_LEN,
    )
}

/// The indices of the command line model's input functions (the count, a byte) among the
/// fuzzer's, when the program has a command line.
fn command_line_fns(fns: &[InputFn]) -> Option<(usize, usize)> {
    let index = |what: &str| fns.iter().position(|f| f.name.strip_prefix(crate::frontend::models::ARGS_INPUT_PREFIX) == Some(what));
    Some((index("count")?, index("byte")?))
}

/// Integer constants of the program's text (decimal and hexadecimal literals, at most 64, in
/// order of appearance), for inputs near what the program compares against.
pub fn constants(source: &str) -> Vec<i128> {
    let b = source.as_bytes();
    let mut out: Vec<i128> = Vec::new();
    let mut i = 0;
    while i < b.len() && out.len() < 64 {
        let c = b[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
            }
            let lit = source[start..i].trim_end_matches(['u', 'U', 'l', 'L']);
            let v = if let Some(h) = lit.strip_prefix("0x").or_else(|| lit.strip_prefix("0X")) {
                i128::from_str_radix(h, 16).ok()
            } else {
                lit.parse::<i128>().ok()
            };
            if let Some(v) = v.filter(|v| *v > 1 && *v <= u64::MAX as i128) {
                if !out.contains(&v) {
                    out.push(v);
                }
            }
            continue;
        }
        i += 1;
    }
    out
}

/// A run's end as the fuzzer sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    Reached,
    /// Ended otherwise (exit, signal, out of time, out of input space).
    Other(End),
}

/// The fuzzer of one program: its executable, fork server, corpus and coverage.
pub struct Fuzzer {
    exe: sandbox::Executable,
    server: Option<ForkServer>,
    shared: Shared,
    fns: Vec<InputFn>,
    constants: Vec<i128>,
    /// The targets a run reports (those that are properties).
    targets: Targets,
    /// Inputs that reached new coverage.
    corpus: Vec<Tape>,
    /// Coverage buckets seen so far (AFL's "virgin bits", inverted).
    seen: Vec<u8>,
    rng: u64,
    /// Rounds of [`Fuzzer::search`] done (they choose the next input).
    round: u64,
    /// Runs made.
    pub execs: u64,
    /// The program read no input on its first run and ended: every run is the same.
    pub input_free: bool,
    /// CPU time a run may take after the first.
    per_run: Duration,
    /// Wall-clock time the last run took.
    pub last_run: Duration,
    /// CPU time the server may take (the limit of its process).
    server_cpu: u64,
    /// The executable measures coverage.
    coverage: bool,
}

/// What [`Fuzzer::search`] ended with.
#[derive(Clone, Debug)]
pub enum Search {
    /// A run reached a violation: the values its input functions returned.
    Found(Tape),
    /// The budget was used up (or nothing more can be learnt).
    Exhausted,
}

impl Fuzzer {
    /// Compiles the program (`source`, named `name`, includes resolved against `include_dir`)
    /// with the fuzzing harness into a fork server's executable. `Err` when it does not
    /// compile here (then the program is not fuzzed).
    #[allow(clippy::too_many_arguments)]
    pub fn compile(
        name: &str,
        source: &str,
        include_dir: &Path,
        fns: Vec<InputFn>,
        defined: &[String],
        model: DataModel,
        targets: Targets,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Fuzzer, String> {
        let constants = constants(source);
        let exe = build(name, source, include_dir, &fns, defined, model, &constants, targets, false, cancelled)?;
        Ok(Fuzzer {
            exe,
            targets,
            server: None,
            shared: Shared::new()?,
            fns,
            constants,
            corpus: Vec::new(),
            seen: vec![0; COVERAGE],
            rng: 0x2545_F491_4F6C_DD1D,
            round: 0,
            execs: 0,
            input_free: false,
            per_run: Duration::from_millis(500),
            last_run: Duration::ZERO,
            server_cpu: 3600,
            coverage: false,
        })
    }

    /// Whether the executable measures coverage.
    pub fn has_coverage(&self) -> bool {
        self.coverage
    }

    /// Whether the first run (all inputs zero) ended: later rounds run.
    pub fn past_first_run(&self) -> bool {
        self.round > 0
    }

    /// Compiles the program again with edge coverage (`-fsanitize-coverage=trace-pc`) for
    /// coverage-guided mutation. The first build has none: the instrumentation keeps gcc
    /// from optimising loops, so an input-free run that ends in a fraction of a second
    /// uninstrumented may not end at all within the budget instrumented.
    #[allow(clippy::too_many_arguments)]
    pub fn add_coverage(
        &mut self,
        name: &str,
        source: &str,
        include_dir: &Path,
        defined: &[String],
        model: DataModel,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<(), String> {
        let exe = build(name, source, include_dir, &self.fns, defined, model, &self.constants, self.targets, true, cancelled)?;
        self.server = None;
        self.exe = exe;
        self.coverage = true;
        Ok(())
    }
}

/// Compiles the program with the fuzzing harness into a fork server's executable.
#[allow(clippy::too_many_arguments)]
fn build(
    name: &str,
    source: &str,
    include_dir: &Path,
    fns: &[InputFn],
    defined: &[String],
    model: DataModel,
    constants: &[i128],
    targets: Targets,
    coverage: bool,
    cancelled: &dyn Fn() -> bool,
) -> Result<sandbox::Executable, String> {
    {
        let dir = TempDir::new().map_err(|e| format!("no temporary directory: {}", e))?;
        let ext = if name.ends_with(".i") { "i" } else { "c" };
        let prog = dir.path().join(format!("program.{}", ext));
        let harness = dir.path().join("fuzz-harness.c");
        let text = instrument_targets(source, targets);
        let text = if ext == "c" { format!("#line 1 \"{}\"\n{}", name.replace(['"', '\\', '\n'], ""), text) } else { text };
        std::fs::write(&prog, text)
            .and_then(|()| std::fs::write(&harness, harness_source(fns, defined, constants)))
            .map_err(|e| e.to_string())?;
        let include = include_dir.to_string_lossy();
        let mut flags = vec!["-w", "-O1", "-std=gnu11", "-fno-stack-protector", "-Wl,--wrap=__assert_fail", "-I", &include];
        if command_line_fns(fns).is_some() {
            flags.push("-Wl,--wrap=main");
        }
        if coverage {
            flags.push("-fsanitize-coverage=trace-pc");
        }
        if model == DataModel::Ilp32 {
            flags.push("-m32");
        }
        sandbox::compile_server(dir, &[&prog, &harness], &flags, cancelled)
    }
}

impl Fuzzer {
    pub fn input_fns(&self) -> &[InputFn] {
        &self.fns
    }

    fn next_rand(&mut self) -> u64 {
        crate::concrete::xorshift64_star(&mut self.rng)
    }

    /// One run with `prefix` as the first values, then `tail`; its outcome and tape.
    fn exec(&mut self, prefix: &[u64], tail: Tail, seed: u64, cpu: Duration, cancel: &Cancel) -> Result<(RunOutcome, usize), String> {
        let sh = &self.shared;
        let n = prefix.len().min(MAX_VALUES);
        sh.put_u64(OFF_SEED, seed);
        sh.put_u32(OFF_PREFIX_LEN, n as u32);
        sh.put_u32(OFF_TAIL, tail as u32);
        sh.put_u32(OFF_USED, 0);
        sh.put_u32(OFF_REACHED, 0);
        sh.put_u32(OFF_STARTED, 0);
        for (i, v) in prefix[..n].iter().enumerate() {
            sh.put_u64(OFF_PREFIX + 8 * i, *v);
        }
        sh.clear_coverage();
        if cancel.check().is_err() {
            return Ok((RunOutcome::Other(End::Cancelled), 0));
        }
        if self.server.is_none() {
            self.server = Some(ForkServer::start(&self.exe, self.shared.fd.as_fd(), self.server_cpu)?);
        }
        let server = self.server.as_mut().expect("started above");
        self.execs += 1;
        let wall = cpu * 2 + Duration::from_millis(200);
        let t0 = Instant::now();
        let end = server.exec(cpu, wall, &|| cancel.check().is_err());
        self.last_run = t0.elapsed();
        let end = match end {
            Ok(e) => e,
            Err(e) => {
                self.server = None;
                return Err(e);
            }
        };
        if matches!(end, End::TimedOut | End::Cancelled) {
            // The server was killed with the run.
            self.server = None;
        }
        if end == End::Exited(sandbox::NO_SANDBOX_STATUS) && self.shared.u32_at(OFF_STARTED) == 0 {
            return Err("the kernel refused the sandbox's system-call filter".into());
        }
        let used = (self.shared.u32_at(OFF_USED) as usize).min(MAX_VALUES);
        let reached = end == End::Exited(REACHED_STATUS) && self.shared.u32_at(OFF_REACHED) == 1;
        let outcome = if reached { RunOutcome::Reached } else { RunOutcome::Other(end) };
        Ok((outcome, used))
    }

    /// The tape of the last run (`used` values).
    fn tape(&self, used: usize) -> Tape {
        (0..used).map(|i| (self.shared.u32_at(OFF_FN + 4 * i), self.shared.u64_at(OFF_TAPE + 8 * i))).collect()
    }

    /// Whether the last run's coverage has a bucket not seen before (and records it).
    fn new_coverage(&mut self) -> bool {
        let cov = self.shared.coverage();
        let mut new = false;
        for (i, &c) in cov.iter().enumerate() {
            if c == 0 {
                continue;
            }
            // AFL's buckets: 1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+.
            let b: u8 = match c {
                1 => 1,
                2 => 2,
                3 => 4,
                4..=7 => 8,
                8..=15 => 16,
                16..=31 => 32,
                32..=127 => 64,
                _ => 128,
            };
            if self.seen[i] & b == 0 {
                self.seen[i] |= b;
                new = true;
            }
        }
        new
    }

    /// A value of `ty` chosen as the harness's generator does (boundaries, small values,
    /// constants of the program, anything), as a raw value.
    fn interesting(&mut self, ty: IntTy) -> u64 {
        let r = self.next_rand();
        let v: i128 = match r % 10 {
            0 => 0,
            1 => 1,
            2 => -1,
            3 => ty.min(),
            4 => ty.max(),
            5 if !self.constants.is_empty() => {
                let k = (self.next_rand() % self.constants.len() as u64) as usize;
                let c = self.constants[k];
                c + (self.next_rand() % 3) as i128 - 1
            }
            6 | 7 => (self.next_rand() % 201) as i128 - 100,
            _ => self.next_rand() as i128,
        };
        raw(ty, ty.wrap(v))
    }

    /// A mutation of a corpus entry: 1 to 4 values replaced, nudged or dropped.
    fn mutate(&mut self, base: &Tape) -> Vec<u64> {
        let mut v: Vec<u64> = base.iter().map(|t| t.1).collect();
        let n = 1 + self.next_rand() % 4;
        for _ in 0..n {
            if v.is_empty() {
                break;
            }
            let i = (self.next_rand() % v.len() as u64) as usize;
            let ty = self.fns.get(base[i].0 as usize).map(|f| f.ty).unwrap_or(IntTy::INT);
            match self.next_rand() % 6 {
                0..=2 => v[i] = self.interesting(ty),
                3 => {
                    let d = (self.next_rand() % 33) as i128 - 16;
                    v[i] = raw(ty, ty.wrap(value(ty, v[i]) + d));
                }
                4 => v[i] ^= 1 << (self.next_rand() % ty.bits.max(1) as u64),
                _ => v.truncate(i),
            }
        }
        v
    }

    /// Runs the program on new inputs until one reaches a violation, `budget` (wall-clock
    /// time, which is what the runs' CPU time adds up to) is spent, or `cancel` holds.
    pub fn search(&mut self, budget: Duration, cancel: &Cancel) -> Result<Search, String> {
        let deadline = Instant::now() + budget;
        // Whether the first run was cut at half the budget without reading an input (it then
        // runs again with all that is left).
        let mut first_cut = false;
        loop {
            let now = Instant::now();
            if self.input_free || now >= deadline || cancel.check().is_err() {
                return Ok(Search::Exhausted);
            }
            let left = deadline - now;
            let round = self.round;
            self.round += 1;
            let (prefix, tail, seed): (Vec<u64>, Tail, u64) = match round {
                0 => (Vec::new(), Tail::Zeros, 0),
                1 => (Vec::new(), Tail::Descending, 1000),
                2 => (Vec::new(), Tail::Ascending, 0),
                3..=10 => (Vec::new(), Tail::Constant, [1u64, 2, 3, u64::MAX, 4, 5, 8, 10][round as usize - 3]),
                _ if !self.corpus.is_empty() && !round.is_multiple_of(3) => {
                    let k = (self.next_rand() % self.corpus.len() as u64) as usize;
                    let base = self.corpus[k].clone();
                    (self.mutate(&base), Tail::Random, round)
                }
                _ => (Vec::new(), Tail::Random, round),
            };
            // The first run may take the whole budget (a program without inputs runs once),
            // half of it at first: one that reads inputs and does not end (all zeros: a loop
            // over the whole input) leaves the other half to other inputs.
            let cpu = match round {
                0 if first_cut => left,
                0 => left / 2,
                _ => self.per_run.min(left),
            };
            let (outcome, used) = self.exec(&prefix, tail, seed, cpu, cancel)?;
            tracing::trace!("fuzzing run {}: {} values given, {:?}, {} values read, {:?}", round, prefix.len(), tail, used, outcome);
            if outcome == RunOutcome::Reached {
                return Ok(Search::Found(self.tape(used)));
            }
            if round == 0 && used == 0 {
                let out_of_time = matches!(outcome, RunOutcome::Other(End::Signalled(libc::SIGPROF) | End::TimedOut));
                if out_of_time && !first_cut {
                    first_cut = true;
                    self.round = 0;
                    continue;
                }
                if out_of_time {
                    // Out of time before it read an input: the next phase runs it again, with
                    // its whole budget.
                    self.round = 0;
                    return Ok(Search::Exhausted);
                }
                // Without inputs the run ends the same way every time.
                self.input_free = true;
            }
            if self.new_coverage() && self.corpus.len() < 4096 {
                let tape = self.tape(used.min(CORPUS_VALUES));
                self.corpus.push(tape);
            }
        }
    }

    /// Whether the program reaches a violation with `values` then zeros; the values used.
    fn reaches(&mut self, values: &[u64], cancel: &Cancel) -> Result<Option<Tape>, String> {
        let (outcome, used) = self.exec(values, Tail::Zeros, 0, self.per_run, cancel)?;
        Ok((outcome == RunOutcome::Reached).then(|| self.tape(used)))
    }

    /// Delta debugging of a tape that reaches a violation: the shortest prefix that still
    /// reaches it with zeros after it, then each value replaced by the candidate nearest to 0
    /// that still does (0, ±1, the program's constants and their neighbours, halvings), in
    /// passes until nothing changes, `budget` is spent or `max_runs` runs were made. The
    /// result still reaches the violation natively (or is the tape given).
    pub fn minimise(&mut self, tape: Tape, budget: Duration, max_runs: u64, cancel: &Cancel) -> Tape {
        let deadline = Instant::now() + budget;
        let first = self.execs;
        let mut best = tape;
        let over = |me: &Fuzzer| Instant::now() >= deadline || me.execs - first >= max_runs || cancel.check().is_err();
        // Fewer inputs: the shortest prefix (halving the cut first, then one at a time).
        let mut cut = best.len();
        while cut > 0 && !over(self) {
            let step = (cut / 2).max(1);
            let try_len = cut - step;
            let vals: Vec<u64> = best[..try_len].iter().map(|t| t.1).collect();
            match self.reaches(&vals, cancel) {
                Ok(Some(t)) => {
                    best = t;
                    cut = try_len.min(best.len());
                }
                Ok(None) if step > 1 => {
                    // Try a smaller step from the same place.
                    let one: Vec<u64> = best[..cut - 1].iter().map(|t| t.1).collect();
                    match self.reaches(&one, cancel) {
                        Ok(Some(t)) => {
                            best = t;
                            cut = (cut - 1).min(best.len());
                        }
                        _ => break,
                    }
                }
                _ => break,
            }
        }
        // Smaller values, one position at a time.
        let mut changed = true;
        while changed && !over(self) {
            changed = false;
            let mut i = 0;
            while i < best.len() && !over(self) {
                let (k, v) = best[i];
                let ty = self.fns.get(k as usize).map(|f| f.ty).unwrap_or(IntTy::INT);
                let cur = value(ty, v);
                for cand in self.candidates(ty, cur) {
                    if over(self) {
                        break;
                    }
                    let mut vals: Vec<u64> = best.iter().map(|t| t.1).collect();
                    vals[i] = raw(ty, cand);
                    if let Ok(Some(t)) = self.reaches(&vals, cancel) {
                        // Accept only when the tape got no longer and this value smaller.
                        if t.len() <= best.len() && t.get(i).is_some_and(|x| smaller(value(ty, x.1), cur)) {
                            best = t;
                            changed = true;
                            break;
                        }
                    }
                }
                i += 1;
            }
        }
        best
    }

    /// Values to try instead of `cur`, nearest to 0 first, each simpler than `cur`.
    fn candidates(&self, ty: IntTy, cur: i128) -> Vec<i128> {
        let mut c: Vec<i128> = vec![0, 1, -1, 2, -2];
        for k in &self.constants {
            for d in [-1, 0, 1] {
                c.push(k + d);
                c.push(-(k + d));
            }
        }
        let mut h = cur / 2;
        while h != 0 {
            c.push(h);
            c.push(cur - h);
            h /= 2;
        }
        let mut c: Vec<i128> = c.into_iter().map(|x| ty.wrap(x)).filter(|x| smaller(*x, cur)).collect();
        c.sort_by_key(|x| (magnitude(*x), *x < 0));
        c.dedup();
        c.truncate(24);
        c
    }

    /// The tape as the inputs of a counterexample: `(function, type, value)`.
    pub fn inputs(&self, tape: &Tape) -> Vec<(String, IntTy, i128)> {
        tape.iter().filter_map(|(k, v)| self.fns.get(*k as usize).map(|f| (f.name.clone(), f.ty, value(f.ty, *v)))).collect()
    }
}

/// How far a value is from 0.
fn magnitude(v: i128) -> u128 {
    v.unsigned_abs()
}

/// Whether `a` is a simpler value than `b`: nearer to 0, or as near and positive.
fn smaller(a: i128, b: i128) -> bool {
    (magnitude(a), a < 0) < (magnitude(b), b < 0)
}

/// A value of `ty` as the raw 64 bits the harness exchanges.
fn raw(ty: IntTy, v: i128) -> u64 {
    ty.wrap(v) as u64
}

/// The value of `ty` that raw bits stand for.
fn value(ty: IntTy, raw: u64) -> i128 {
    if ty.boolean {
        return (raw != 0) as i128;
    }
    let bits = ty.bits.min(64) as u32;
    let masked = if bits >= 64 { raw } else { raw & ((1u64 << bits) - 1) };
    if ty.signed && bits < 64 && masked >> (bits - 1) & 1 == 1 {
        masked as i128 - (1i128 << bits)
    } else if ty.signed && bits >= 64 {
        masked as i64 as i128
    } else {
        masked as i128
    }
}

/// The input type of `__VERIFIER_nondet_X` by its name (SV-COMP's conventions), for input
/// functions the CFA does not show a use of; `None` for non-integer ones.
pub fn type_by_name(name: &str, model: DataModel) -> Option<IntTy> {
    let suffix = name.strip_prefix("__VERIFIER_nondet_")?;
    let long_bits = if model == DataModel::Ilp32 { 32 } else { 64 };
    let t = |bits: u8, signed: bool| IntTy { bits, signed, boolean: false };
    Some(match suffix {
        "bool" | "_Bool" => IntTy { bits: 8, signed: false, boolean: true },
        "char" | "schar" => t(8, true),
        "uchar" | "u8" => t(8, false),
        "short" => t(16, true),
        "ushort" | "u16" => t(16, false),
        "int" | "s32" => t(32, true),
        "uint" | "unsigned" | "u32" => t(32, false),
        "long" | "loff_t" => t(long_bits, true),
        "ulong" | "size_t" | "sector_t" => t(long_bits, false),
        "longlong" => t(64, true),
        "ulonglong" => t(64, false),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_values_round_trip_through_their_types() {
        let int = IntTy::INT;
        for v in [0i128, 1, -1, i32::MIN as i128, i32::MAX as i128] {
            assert_eq!(value(int, raw(int, v)), v);
        }
        let u = IntTy { bits: 32, signed: false, boolean: false };
        assert_eq!(value(u, raw(u, -1)), u32::MAX as i128);
        let c = IntTy { bits: 8, signed: true, boolean: false };
        assert_eq!(value(c, 0xff), -1);
    }

    fn fuzzer(source: &str, fns: &[(&str, IntTy)]) -> Fuzzer {
        fuzzer_for(source, fns, DataModel::Lp64)
    }

    fn fuzzer_for(source: &str, fns: &[(&str, IntTy)], model: DataModel) -> Fuzzer {
        let fns = fns.iter().map(|(n, t)| InputFn { name: n.to_string(), ty: *t }).collect();
        Fuzzer::compile("t.c", source, Path::new("."), fns, &["main".into()], model, Targets::ALL, &|| false)
            .expect("gcc compiles the test program")
    }

    const UINT: IntTy = IntTy { bits: 32, signed: false, boolean: false };

    /// A run may neither start processes nor open files: the program's filter is stacked on
    /// the fork server's. A run that managed either would reach `reach_error()`.
    #[test]
    fn fuzzing_runs_cannot_fork_or_open_files() {
        let dir = std::env::temp_dir().join(format!("cpals-fuzz-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("created");
        let src = format!(
            r#"#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>
extern int __VERIFIER_nondet_int(void);
extern void reach_error(void);
int main(void) {{
  int x = __VERIFIER_nondet_int();
  long pid = syscall(SYS_fork);
  if (pid == 0) _exit(0);
  int fd = open("{}", O_CREAT | O_WRONLY, 0644);
  if (pid > 0 || fd >= 0) reach_error();
  return x;
}}
"#,
            file.display()
        );
        for model in [DataModel::Lp64, DataModel::Ilp32] {
            let mut f = fuzzer_for(&src, &[("__VERIFIER_nondet_int", IntTy::INT)], model);
            let r = f.search(Duration::from_millis(300), &Cancel::new()).expect("the fork server runs");
            assert!(matches!(r, Search::Exhausted), "{model:?}: {r:?}");
            assert!(f.execs > 10, "{model:?}: {} runs", f.execs);
            assert!(!file.exists(), "{model:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A program without inputs runs once: `fib(25)` (242 785 calls) reaches the violation in
    /// the first run.
    #[test]
    fn an_input_free_program_runs_once() {
        let src = "extern void reach_error(void);\nint fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n\
                   int main(void) { if (fib(25) == 75025) reach_error(); return 0; }\n";
        let mut f = fuzzer(src, &[]);
        let r = f.search(Duration::from_secs(5), &Cancel::new()).expect("the fork server runs");
        assert!(matches!(r, Search::Found(ref t) if t.is_empty()), "{r:?}");
        assert_eq!(f.execs, 1);
        // Without the violation the fuzzer stops after that one run.
        let mut f = fuzzer(&src.replace("== 75025", "== 1"), &[]);
        assert!(matches!(f.search(Duration::from_secs(5), &Cancel::new()), Ok(Search::Exhausted)));
        assert_eq!(f.execs, 1);
        assert!(f.input_free);
    }

    /// Delta debugging leaves the values nearest to 0 (and to the program's constants) that
    /// still reach the violation: `x = 1000001` (just above the bound), `y = 1`, and the third
    /// input, read but irrelevant, 0.
    #[test]
    fn found_inputs_are_minimised() {
        let src = "extern unsigned __VERIFIER_nondet_uint(void);\nextern int __VERIFIER_nondet_int(void);\nextern void reach_error(void);\n\
                   int main(void) { unsigned x = __VERIFIER_nondet_uint(); int y = __VERIFIER_nondet_int(); int z = __VERIFIER_nondet_int();\n\
                   if (x > 1000000 && y != 0) reach_error(); return z; }\n";
        let mut f = fuzzer(src, &[("__VERIFIER_nondet_int", IntTy::INT), ("__VERIFIER_nondet_uint", UINT)]);
        let Ok(Search::Found(tape)) = f.search(Duration::from_secs(20), &Cancel::new()) else { panic!("not found") };
        let min = f.minimise(tape, Duration::from_secs(20), 10_000, &Cancel::new());
        let values: Vec<(String, i128)> = f.inputs(&min).into_iter().map(|(n, _, v)| (n, v)).collect();
        assert_eq!(
            values,
            vec![("__VERIFIER_nondet_uint".into(), 1000001), ("__VERIFIER_nondet_int".into(), 1), ("__VERIFIER_nondet_int".into(), 0)]
        );
    }

    /// A program's own exit status 71 is not the sandbox's refusal (the status the entry
    /// point exits with when the kernel refuses the filter, before the program's code runs).
    #[test]
    fn the_programs_exit_status_71_is_its_own() {
        let src = "extern int __VERIFIER_nondet_int(void);\nextern void reach_error(void);\n\
                   int main(void) { int x = __VERIFIER_nondet_int(); if (x == 4242) reach_error(); return 71; }\n";
        let mut f = fuzzer(src, &[("__VERIFIER_nondet_int", IntTy::INT)]);
        let r = f.search(Duration::from_secs(20), &Cancel::new());
        assert!(matches!(r, Ok(Search::Found(_))), "{r:?}");
    }

    /// A program whose `main` takes a command line gets one from the inputs, in the command
    /// line model's order (the count, then 8 bytes per string), so that the tape is the
    /// command line that reaches the violation: `atoi` of the program's constant in decimal.
    #[test]
    fn the_command_line_is_fuzzed_in_the_models_order() {
        let src = "#include <stdlib.h>\nextern void reach_error(void);\n\
                   int main(int argc, char **argv) { if (argc == 2 && atoi(argv[1]) == 4711) reach_error(); return 0; }\n";
        let char_ty = IntTy { bits: 8, signed: true, boolean: false };
        let mut f = fuzzer(src, &[("__cpals_arg_byte", char_ty), ("__cpals_arg_count", IntTy::INT)]);
        let Ok(Search::Found(tape)) = f.search(Duration::from_secs(20), &Cancel::new()) else { panic!("not found") };
        let min = f.minimise(tape, Duration::from_secs(20), 10_000, &Cancel::new());
        let inputs: Vec<(String, i128)> = f.inputs(&min).into_iter().map(|(n, _, v)| (n, v)).collect();
        let named: Vec<(&str, i128)> = inputs.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        let args = crate::harness::args_of(&named).expect("a command line");
        assert_eq!(args, vec![b"".to_vec(), b"4711".to_vec()], "{inputs:?}");
    }

    #[test]
    fn constants_are_the_literals_of_the_text() {
        let c = constants("int x = 1000000; if (y == 0x10 && z > 17u) return 1; a_99 = 0;");
        assert_eq!(c, vec![1000000, 16, 17]);
    }
}
