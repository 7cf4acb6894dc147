//! Projects in the editor (issue 23, Build 4): a document is built with its entry of the
//! project's `compile_commands.json` (`-I`, `-D`) and the project's other files are linked in;
//! a changed database changes the verdicts, whether the client reports the change
//! (`workspace/didChangeWatchedFiles`) or not (the next save); a database that cannot be used
//! is a warning on the file, which is then verified without it.

use std::path::Path;

use cpals::lsp::ServerOptions;
use cpals_tests::{file_uri, temp_dir};
use lsp_test_client::LspClient;
use serde_json::{json, Value};

async fn client() -> LspClient {
    let c = LspClient::in_process(ServerOptions::default());
    c.initialize(json!({"notifyJobs": true, "settings": {"debounceMs": 0, "timeoutSeconds": 60}})).await;
    c
}

/// The program: `clamp` is defined in `src/clamp.c` only, `LIMIT` by the database's `-D`, and
/// the header is found only through its `-I`. The first assertion holds whatever `LIMIT` is;
/// the second fails when `LIMIT` is below 1000 (`clamp` cut `n` down), and holds otherwise.
const MAIN: &str = "#include <assert.h>
#include \"limit.h\"

extern int __VERIFIER_nondet_int(void);

int main(void) {
  int n = __VERIFIER_nondet_int();
  int c = clamp(n);
  assert(c <= LIMIT);
  if (n > 100 && n < 1000)
    assert(c == n);
  return 0;
}
";

const CLAMP: &str = "#include \"limit.h\"

int clamp(int x) {
  return x > LIMIT ? LIMIT : x;
}
";

const HEADER: &str = "#ifndef LIMIT
#error \"LIMIT comes from the compilation database\"
#endif
int clamp(int x);
";

/// Writes the database with `-DLIMIT=limit` for both files (one entry as `arguments`, one as
/// `command`).
fn write_db(project: &Path, limit: u32) {
    let db = json!([
        {"directory": project, "file": "src/main.c",
         "arguments": ["cc", "-Iinclude", "-D", format!("LIMIT={limit}"), "-O2", "-c", "src/main.c", "-o", "main.o"]},
        {"directory": project, "file": "src/clamp.c", "command": format!("cc -I include -DLIMIT={limit} -c src/clamp.c -o clamp.o")},
    ]);
    std::fs::write(project.join("compile_commands.json"), serde_json::to_vec_pretty(&db).unwrap()).unwrap();
}

fn line_of(text: &str, needle: &str) -> u32 {
    text.lines().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("no line with {needle}")) as u32
}

/// The code of the diagnostic on the line of `needle` (each assertion has exactly one).
fn code_at(diags: &[Value], text: &str, needle: &str) -> String {
    let line = line_of(text, needle);
    let here: Vec<&Value> = diags.iter().filter(|d| d["range"]["start"]["line"] == line && d["code"] != "unreachable").collect();
    assert_eq!(here.len(), 1, "one diagnostic on line {line} ({needle}): {diags:#?}");
    here[0]["code"].as_str().unwrap_or_default().to_string()
}

fn changed(uri: &str) -> Value {
    json!({"changes": [{"uri": uri, "type": 2}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_is_verified_with_its_compilation_database_and_follows_its_changes() {
    let project = temp_dir("projects-three-files");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::create_dir_all(project.join("include")).unwrap();
    std::fs::write(project.join("src/main.c"), MAIN).unwrap();
    std::fs::write(project.join("src/clamp.c"), CLAMP).unwrap();
    std::fs::write(project.join("include/limit.h"), HEADER).unwrap();
    write_db(&project, 8);
    let uri = file_uri(&project.join("src/main.c"));
    let db_uri = file_uri(&project.join("compile_commands.json"));

    let mut c = client().await;
    // The server asks the client to watch compilation databases.
    let reg = c.wait_for("the watcher's registration", |m| m.method() == Some("client/registerCapability")).await;
    let watchers = &reg.msg["params"]["registrations"][0]["registerOptions"]["watchers"];
    assert!(watchers.as_array().unwrap().iter().any(|w| w["globPattern"] == "**/compile_commands.json"), "{}", reg.msg);

    c.open(&uri, MAIN).await;
    let (done, diags) = c.settled(&uri, 1).await;
    assert_eq!(done["parseError"], Value::Null, "the header and LIMIT come from the database: {done}");
    assert_eq!(code_at(&diags, MAIN, "c <= LIMIT"), "proved", "`clamp` is linked in: {diags:#?}");
    assert_eq!(code_at(&diags, MAIN, "c == n"), "violated", "LIMIT=8: clamp(101) is 8: {diags:#?}");
    let violated = diags.iter().find(|d| d["code"] == "violated").unwrap();
    let steps = violated["relatedInformation"].as_array().expect("a counterexample");
    let clamp_uri = file_uri(&std::fs::canonicalize(project.join("src/clamp.c")).unwrap());
    assert!(
        steps.iter().any(|s| s["message"].as_str().unwrap_or_default().contains("x > 8") && s["location"]["uri"] == clamp_uri),
        "the counterexample goes through `clamp` in {clamp_uri}: {steps:#?}"
    );

    // The database changes and the client says so: verified again with the new flag.
    write_db(&project, 1000);
    c.notify("workspace/didChangeWatchedFiles", changed(&db_uri)).await;
    let (done, diags) = c.settled(&uri, 1).await;
    assert_eq!(done["verified"], json!(["main"]), "not served from the cache: {done}");
    assert_eq!(code_at(&diags, MAIN, "c <= LIMIT"), "proved", "{diags:#?}");
    assert_eq!(code_at(&diags, MAIN, "c == n"), "proved", "LIMIT=1000: clamp(n) is n below 1000: {diags:#?}");

    // Changed again without a notification: the next save reads it.
    write_db(&project, 50);
    c.save(&uri).await;
    let (done, diags) = c.settled(&uri, 1).await;
    assert_eq!(done["verified"], json!(["main"]), "{done}");
    assert_eq!(code_at(&diags, MAIN, "c == n"), "violated", "LIMIT=50: {diags:#?}");

    // The linked file changes on disk (it no longer clamps): the document that links it is
    // checked again, with the new `clamp`.
    std::fs::write(project.join("src/clamp.c"), CLAMP.replace("x > LIMIT ? LIMIT : x", "x")).unwrap();
    c.notify("workspace/didChangeWatchedFiles", changed(&file_uri(&project.join("src/clamp.c")))).await;
    let (done, diags) = c.settled(&uri, 1).await;
    assert_eq!(done["verified"], json!(["main"]), "{done}");
    assert_eq!(code_at(&diags, MAIN, "c <= LIMIT"), "violated", "{diags:#?}");
    assert_eq!(code_at(&diags, MAIN, "c == n"), "proved", "{diags:#?}");
    c.shutdown().await;
}

/// A malformed database, and a named one without an entry for the file: a warning on the file,
/// which is verified without the database (so a function it does not define stays external
/// and what depends on it unknown), and the server carries on. The database is found in a
/// `build/` folder, or named by the setting (the file or its folder).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_cannot_be_used_is_a_warning_not_a_crash() {
    let project = temp_dir("projects-bad-db");
    std::fs::create_dir_all(project.join("build")).unwrap();
    let text = "#include <assert.h>\nint twice(int x);\nint main(void) {\n  int a = 2;\n  assert(a + a == 4);\n  assert(twice(a) == 4);\n  return 0;\n}\n";
    std::fs::write(project.join("main.c"), text).unwrap();
    std::fs::write(project.join("twice.c"), "int twice(int x) { return 2 * x; }\n").unwrap();
    std::fs::write(project.join("build/compile_commands.json"), "[{\"directory\": \"..\", \"file\": \"main.c\",").unwrap();
    let uri = file_uri(&project.join("main.c"));

    let mut c = client().await;
    c.open(&uri, text).await;
    let (_, diags) = c.settled(&uri, 1).await;
    let warning = diags.iter().find(|d| d["code"] == "compile-commands").unwrap_or_else(|| panic!("a warning: {diags:#?}"));
    assert_eq!(warning["severity"], 2);
    let message = warning["message"].as_str().unwrap();
    assert!(message.contains("build/compile_commands.json is not a compilation database"), "{message}");
    assert!(message.contains("verified without"), "{message}");
    assert_eq!(code_at(&diags, text, "a + a == 4"), "proved", "{diags:#?}");
    assert_eq!(code_at(&diags, text, "twice(a) == 4"), "unknown", "`twice` is not linked: {diags:#?}");

    // Repaired, the database links `twice` in.
    let db = json!([
        {"directory": "..", "file": "main.c", "arguments": ["cc", "-c", "main.c"]},
        {"directory": "..", "file": "twice.c", "arguments": ["cc", "-c", "twice.c"]},
    ]);
    std::fs::write(project.join("build/compile_commands.json"), db.to_string()).unwrap();
    c.notify("workspace/didChangeWatchedFiles", changed(&file_uri(&project.join("build/compile_commands.json")))).await;
    let (_, diags) = c.settled(&uri, 1).await;
    assert!(diags.iter().all(|d| d["code"] != "compile-commands"), "{diags:#?}");
    assert_eq!(code_at(&diags, text, "twice(a) == 4"), "proved", "{diags:#?}");

    // A database named in the settings without an entry for the file.
    let other = project.join("other.json");
    std::fs::write(&other, json!([{"directory": "/", "file": "elsewhere.c", "command": "cc -c elsewhere.c"}]).to_string()).unwrap();
    c.notify("workspace/didChangeConfiguration", json!({"settings": {"cpals": {"compileCommands": other}}})).await;
    let (_, diags) = c.settled(&uri, 1).await;
    let warning = diags.iter().find(|d| d["code"] == "compile-commands").unwrap_or_else(|| panic!("a warning: {diags:#?}"));
    assert!(warning["message"].as_str().unwrap().contains("has no entry for"), "{warning}");
    assert_eq!(code_at(&diags, text, "twice(a) == 4"), "unknown", "{diags:#?}");

    // The setting may name the database's folder.
    c.notify("workspace/didChangeConfiguration", json!({"settings": {"cpals": {"compileCommands": project.join("build")}}})).await;
    let (_, diags) = c.settled(&uri, 1).await;
    assert!(diags.iter().all(|d| d["code"] != "compile-commands"), "{diags:#?}");
    assert_eq!(code_at(&diags, text, "twice(a) == 4"), "proved", "{diags:#?}");
    c.shutdown().await;
}
