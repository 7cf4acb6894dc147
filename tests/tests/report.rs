//! The HTML report (issue 7): `cpals report` of a fixture with a violation, a proof and a
//! loop writes one self-contained page that headless Chromium (Debian's `chromium`, installed
//! by `.ci/run`) opens without a console message or script error, showing both verdicts, the
//! counterexample's steps with values, the loop invariant and the automata; and (issue 24) a
//! program whose strings look like markup does not stop the page's script.

use std::path::{Path, PathBuf};
use std::process::Command;

use cpals_tests::{cpals_bin, root, temp_dir, SCRIPT_STRINGS_PROGRAM};

/// Chromium: `CPALS_CHROMIUM`, else `chromium` or `chromium-browser` on the PATH.
fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("CPALS_CHROMIUM") {
        return PathBuf::from(p);
    }
    for name in ["chromium", "chromium-browser"] {
        if Command::new(name).arg("--version").output().is_ok_and(|o| o.status.success()) {
            return PathBuf::from(name);
        }
    }
    panic!("no chromium on the PATH: install Debian's `chromium` package (what .ci/run does) or set CPALS_CHROMIUM");
}

/// Runs headless Chromium on a page with `args`; returns (stdout, stderr).
fn headless(page: &Path, profile: &Path, args: &[&str]) -> (String, String) {
    let out = Command::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions", "--enable-logging=stderr", "--v=0"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Console messages (errors, warnings, logs) the page produced, from Chromium's log.
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

#[test]
fn report_opens_in_headless_chromium_with_verdicts_and_no_errors() {
    let dir = temp_dir("report");
    let page = dir.join("report.html");
    let fixture = root().join("fixtures/lsp/loops.c");
    let out = Command::new(cpals_bin()).arg("report").arg(&fixture).arg("-o").arg(&page).output().expect("cpals runs");
    assert_eq!(out.status.code(), Some(1), "a violation: exit code 1; {}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).expect("the page was written");

    // Self-contained: nothing is loaded from elsewhere.
    for needle in ["src=\"http", "href=\"http", "<link", "@import", "src=\"//"] {
        assert!(!html.contains(needle), "the page refers to an external resource ({needle})");
    }

    // The page as Chromium leaves it after running its script.
    let (dom, stderr) = headless(&page, &dir.join("profile"), &["--virtual-time-budget=3000", "--dump-dom"]);
    assert!(console_lines(&stderr).is_empty(), "console messages:\n{}", console_lines(&stderr).join("\n"));
    assert!(dom.contains("data-ready=\"true\""), "the script did not finish: {}", &dom[..dom.len().min(2000)]);
    assert!(
        !dom.contains("data-errors=\"true\"") && dom.contains("<div id=\"errors\" hidden=\"\"></div>"),
        "the page reported a script error"
    );
    assert!(dom.contains("FALSE(unreach-call)"), "the overall verdict is shown");
    // One row per property, with its verdict.
    assert!(dom.contains(r#"data-verdict="true"><td><span class="badge true">proved</span>"#), "the proof is listed");
    assert!(dom.contains(r#"data-verdict="false"><td><span class="badge false">violated</span>"#), "the violation is listed");
    // The violated property is selected on load: its steps are listed, the last one current,
    // with the values at that step, and the violated line is highlighted.
    let list = dom.split("<ol id=\"steps\"").nth(1).and_then(|t| t.split("</ol>").next()).unwrap_or("");
    let steps = list.matches("<li").count();
    assert!(steps >= 10, "the counterexample's steps are listed ({steps})");
    assert!(list.contains("n = 3"), "the counterexample's input value is shown");
    assert!(list.contains("class=\"current-step\""), "a step is current");
    assert!(
        dom.contains(r#"class="line propline current" id="L25""#) || dom.contains(r#"class="line propline onpath current" id="L25""#),
        "line 25 is the current step"
    );
    // The invariant at the loop head and the automaton of `main`.
    assert!(dom.contains("invariant: 0 &lt;= i &amp;&amp; i &lt;= 10"), "the loop invariant is shown at the loop");
    assert!(dom.contains("<svg class=\"cfa\""), "the CFA is drawn");
    // Unreachable code is marked.
    assert!(dom.contains(r#"class="line dead" id="L21""#), "line 21 is marked unreachable");

    // The automata tab opens from the address, also without console messages.
    let (dom, stderr) = headless(&page.with_extension("html#tab-cfa"), &dir.join("profile"), &["--virtual-time-budget=3000", "--dump-dom"]);
    let _ = dom;
    assert!(console_lines(&stderr).is_empty(), "console messages (CFA tab):\n{}", console_lines(&stderr).join("\n"));

    // And it renders: a screenshot is a PNG of the window's size.
    let shot = dir.join("report.png");
    let (_, stderr) = headless(
        &page,
        &dir.join("profile"),
        &["--hide-scrollbars", "--window-size=1400,1000", &format!("--screenshot={}", shot.display())],
    );
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}): {stderr}"));
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 20_000, "a real screenshot ({} bytes)", png.len());
    assert_eq!(&png[16..24], &[0, 0, 0x05, 0x78, 0, 0, 0x03, 0xe8], "1400×1000 pixels");
}

/// Issue 24: string literals on the counterexample path that look like markup (`"<!--<script>"`
/// put the HTML parser into the script element's "double escaped" state, which swallowed the
/// page's own script) are data: the script runs and shows the steps with those strings.
#[test]
fn markup_in_the_programs_strings_does_not_stop_the_script() {
    let dir = temp_dir("report-markup");
    let file = dir.join("markup.c");
    std::fs::write(&file, SCRIPT_STRINGS_PROGRAM).unwrap();
    let page = dir.join("report.html");
    let out = Command::new(cpals_bin()).arg("report").arg(&file).arg("-o").arg(&page).output().expect("cpals runs");
    assert_eq!(out.status.code(), Some(1), "a violation: exit code 1; {}", String::from_utf8_lossy(&out.stderr));
    let (dom, stderr) = headless(&page, &dir.join("profile"), &["--virtual-time-budget=3000", "--dump-dom"]);
    assert!(console_lines(&stderr).is_empty(), "console messages:\n{}", console_lines(&stderr).join("\n"));
    assert!(dom.contains("data-ready=\"true\""), "the script did not run: {}", &dom[..dom.len().min(2000)]);
    let list = dom.split("<ol id=\"steps\"").nth(1).and_then(|t| t.split("</ol>").next()).unwrap_or("");
    assert!(list.contains("&lt;!--&lt;script&gt;") && list.contains("&lt;/script&gt;"), "the steps show the strings: {list}");
    assert!(list.contains("x = 3"), "the input is shown: {list}");
}
