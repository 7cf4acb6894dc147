//! BenchExec support (issue 7): `cpals` runs under BenchExec with the tool-info module
//! `tools/benchexec/cpals_benchexec/cpals.py` on the benchmark definition
//! `tools/benchexec/cpals-sv.xml` (its `smoke` task set), BenchExec's verdicts are those of the
//! benchmark runner (`xtask bench`) on the same tasks, and every witness the runs leave as
//! result files passes schema validation. Needs `benchexec` in the Python `.ci/run` sets up.

use std::path::{Path, PathBuf};
use std::process::Command;

use cpals_tests::{cpals_bin, cpals_dir, python_with, root, validate_witnesses};

/// The tasks of the `smoke` set in the benchmark definition (task-definition files relative
/// to the task folder).
fn smoke_tasks() -> Vec<String> {
    let xml = std::fs::read_to_string(root().join("tools/benchexec/cpals-sv.xml")).unwrap();
    let block = xml.split("<tasks name=\"smoke\">").nth(1).and_then(|t| t.split("</tasks>").next()).expect("a smoke task set");
    block
        .lines()
        .filter_map(|l| l.trim().strip_prefix("<include>tasks/").and_then(|l| l.strip_suffix("</include>")))
        .map(String::from)
        .collect()
}

fn files_named(dir: &Path, name: &str, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files_named(&p, name, out);
        } else if p.file_name().is_some_and(|n| n == name) {
            out.push(p);
        }
    }
}

/// The `xtask` binary (the benchmark runner) of this build profile, built beside `cpals`.
fn xtask_bin() -> PathBuf {
    let cpals = cpals_bin();
    let dir = cpals.parent().expect("target profile directory");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "-p", "xtask"]).current_dir(root());
    if dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    assert!(cmd.status().expect("cargo runs").success(), "building xtask failed");
    dir.join(format!("xtask{}", std::env::consts::EXE_SUFFIX))
}

#[test]
fn benchexec_runs_cpals_and_agrees_with_the_benchmark_runner() {
    let sv = root().parent().unwrap().join("shared/bench/sv");
    assert!(sv.join("INDEX.tsv").is_file(), "the benchmark tasks are at {}", sv.display());
    // Not under /tmp: BenchExec's container hides /tmp from the tool it runs.
    let dir = std::env::current_exe().unwrap().parent().unwrap().join(format!("cpals-benchexec-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let py = python_with(&["benchexec", "yaml"]);

    // The task folder BenchExec reads (links to ../shared/bench/sv with the property files
    // the task definitions name), beside a copy of the benchmark definition.
    let out = Command::new(&py).arg(root().join("tools/benchexec/prepare-tasks.py")).arg(&sv).arg(dir.join("tasks")).output().unwrap();
    assert!(out.status.success(), "prepare-tasks.py: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::copy(root().join("tools/benchexec/cpals-sv.xml"), dir.join("cpals-sv.xml")).unwrap();

    let bin = cpals_bin();
    let results = dir.join("results");
    let out = Command::new(&py)
        .args(["-c", "import sys; from benchexec.benchexec import main; sys.argv[0] = 'benchexec'; sys.exit(main())"])
        .arg(dir.join("cpals-sv.xml"))
        .args(["--tasks", "smoke", "--rundefinition", "value", "--no-compress-results", "--tool-directory"])
        .arg(cpals_dir())
        // The container's file system: BenchExec's default overlays '/', which some kernels
        // refuse ("Failed to create overlay mount for '/': Invalid argument"); instead '/' is
        // read-only, and only this folder, where the runs write their witnesses, is overlaid.
        .args(["--read-only-dir", "/", "--hidden-dir", "/home", "--overlay-dir"])
        .arg(&dir)
        .arg("--outputpath")
        .arg(format!("{}/", results.display()))
        .env("PYTHONPATH", root().join("tools/benchexec"))
        .current_dir(&dir)
        // Its output goes to a file and only BenchExec itself is waited for: a helper process
        // of its container that outlives it would keep pipes open, and the test would hang.
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(dir.join("benchexec.log")).unwrap())
        .stderr(std::fs::File::create(dir.join("benchexec.err")).unwrap())
        .status()
        .expect("benchexec runs");
    let log = format!(
        "{}{}",
        std::fs::read_to_string(dir.join("benchexec.log")).unwrap_or_default(),
        std::fs::read_to_string(dir.join("benchexec.err")).unwrap_or_default()
    );
    assert!(out.success(), "benchexec failed:\n{log}");

    // BenchExec's verdict per task, from its result file.
    let xml = std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".results.value.smoke.xml"))
        .unwrap_or_else(|| panic!("no result file:\n{log}"));
    let out = Command::new(&py)
        .args([
            "-c",
            "import sys, xml.etree.ElementTree as E\nfor r in E.parse(sys.argv[1]).getroot().iter('run'):\n  s = [c.get('value') for c in r.iter('column') if c.get('title') == 'status']\n  print(r.get('name').split('tasks/', 1)[1] + '\\t' + (s[0] if s else '?'))",
        ])
        .arg(&xml)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let benchexec: std::collections::BTreeMap<String, String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(task, status)| {
            let v = match status {
                "true" => "true",
                "false(unreach-call)" => "false",
                s if s.starts_with("unknown") || s.starts_with("TIMEOUT") => "unknown",
                s => panic!("{task}: BenchExec status {s}:\n{log}"),
            };
            (task.to_string(), v.to_string())
        })
        .collect();
    let tasks = smoke_tasks();
    assert_eq!(
        benchexec.keys().cloned().collect::<Vec<_>>(),
        {
            let mut t = tasks.clone();
            t.sort();
            t
        },
        "one run per smoke task"
    );

    // The benchmark runner's verdicts on the same tasks.
    let tsv = dir.join("bench.tsv");
    let out = Command::new(xtask_bin())
        .arg("bench")
        .arg(&sv)
        .args(["--analysis", "value", "--timeout", "30", "--jobs", "2", "--tasks", &tasks.join(",")])
        .arg("--tsv")
        .arg(&tsv)
        .arg("--cpals")
        .arg(&bin)
        .output()
        .expect("xtask bench runs");
    let text = std::fs::read_to_string(&tsv).unwrap_or_else(|e| panic!("no TSV ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    let index = std::fs::read_to_string(sv.join("INDEX.tsv")).unwrap();
    let yml_of =
        |c_file: &str| index.lines().find(|l| l.split('\t').nth(1) == Some(c_file)).and_then(|l| l.split('\t').nth(2)).unwrap().to_string();
    let runner: std::collections::BTreeMap<String, String> = text
        .lines()
        .skip(1)
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            (yml_of(c[2]), c[4].to_string())
        })
        .collect();
    assert_eq!(benchexec, runner, "BenchExec's table and the runner's verdicts");
    assert!(
        runner.values().any(|v| v == "true") && runner.values().any(|v| v == "false"),
        "the smoke set has proofs and violations: {runner:?}"
    );

    // Every run with a verdict left its witness, and all of them pass the schema.
    let mut witnesses = Vec::new();
    files_named(&results, "witness.yml", &mut witnesses);
    let decided = benchexec.values().filter(|v| *v != "unknown").count();
    assert_eq!(witnesses.len(), decided, "one witness per true or false verdict: {witnesses:?}");
    validate_witnesses(&witnesses).unwrap_or_else(|e| panic!("schema validation failed: {e}"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The tool-info module's command line for a task: the task's property file as `--property`
/// (unreach-call and CPAchecker's unreach-label), its data model (ILP32 when the task names
/// none, as CPAchecker assumes), and an unsupported property refused.
#[test]
fn tool_info_passes_the_property_file_and_the_data_model() {
    let py = python_with(&["benchexec"]);
    let props = root().parent().unwrap().join("shared/bench/cpachecker-regression/properties");
    let script = r#"
import sys
from benchexec.tools.template import BaseTool2, UnsupportedFeatureException
from cpals_benchexec.cpals import Tool
props = sys.argv[1]
limits = BaseTool2.ResourceLimits(cputime=60)
def line(prp, options):
    task = BaseTool2.Task.with_files(["t.c"], property_file=props + "/" + prp, options=options)
    return " ".join(Tool().cmdline("cpals", [], task, limits))
print(line("unreach-call.prp", {"language": "C", "data_model": "LP64"}))
print(line("unreach-label.prp", None))
try:
    Tool().cmdline("cpals", [], BaseTool2.Task.with_files(["t.c"], property_file=sys.argv[2], options=None), limits)
    print("accepted")
except UnsupportedFeatureException:
    print("unsupported")
"#;
    let bad = std::env::temp_dir().join(format!("cpals-benchexec-{}.prp", std::process::id()));
    std::fs::write(&bad, "CHECK( init(main()), LTL(G valid-free) )\n").unwrap();
    let out = Command::new(py)
        .args(["-c", script])
        .arg(&props)
        .arg(&bad)
        .env("PYTHONPATH", root().join("tools/benchexec"))
        .output()
        .expect("python runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let p = props.display();
    assert_eq!(lines[0], format!("cpals check --property {p}/unreach-call.prp --data-model LP64 --timeout 58 t.c"));
    assert_eq!(lines[1], format!("cpals check --property {p}/unreach-label.prp --data-model ILP32 --timeout 58 t.c"));
    assert_eq!(lines[2], "unsupported");
    let _ = std::fs::remove_file(&bad);
}
