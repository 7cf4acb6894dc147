//! `cpals report`: verifies a file and writes the HTML report page.

use std::path::Path;

use analysis_engine::Cancel;

use crate::cli::args::{load, AnalysisArgs};
use crate::cli::check::print_text;
use crate::messages::{exit_code, EXIT_ERROR};

pub fn run(file: &Path, args: &AnalysisArgs, output: &Path) -> i32 {
    let (cfg, model) = match args.config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cpals: {}", e);
            return EXIT_ERROR;
        }
    };
    let opts = match args.build_for(file) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("cpals: {}", e);
            return EXIT_ERROR;
        }
    };
    // The preprocessor waits on the wall clock, as the analysis does here.
    let front = cfg.timeout.map(|t| Cancel::with_deadline(std::time::Instant::now() + t)).unwrap_or_default();
    let program = match load(file, model, &opts, &front) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{}", e);
            return EXIT_ERROR;
        }
    };
    let report = analysis_engine::verify(&program, &cfg, &Cancel::new());
    let page = crate::html::page(&report, &program);
    if let Err(e) = std::fs::write(output, page) {
        eprintln!("cpals: cannot write {}: {}", output.display(), e);
        return EXIT_ERROR;
    }
    print_text(&report, Some(&program), false, program.properties);
    exit_code(report.verdict)
}
