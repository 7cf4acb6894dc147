//! `cpals replay`: compiles a program with a harness written by `check --harness`, runs it
//! and says whether it reaches a violation.

use std::path::Path;

use analysis_engine::harness::NativeResult;

use crate::cli::args::load;
use crate::messages::{parse_model, parse_timeout, EXIT_ERROR, EXIT_FALSE, EXIT_TRUE};

pub fn run(file: &Path, harness: &Path, data_model: &str, timeout: f64) -> i32 {
    let model = match parse_model(data_model) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("cpals: {}", e);
            return EXIT_ERROR;
        }
    };
    let timeout = match parse_timeout(timeout) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cpals: {}", e);
            return EXIT_ERROR;
        }
    };
    if !harness.is_file() {
        eprintln!("cpals: cannot read {}", harness.display());
        return EXIT_ERROR;
    }
    let program = match load(file, model, &Default::default(), &analysis_engine::Cancel::new()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{}", e);
            return EXIT_ERROR;
        }
    };
    match analysis_engine::harness::replay_files(file, harness, model, timeout, &program.externals) {
        NativeResult::Reached(at) => {
            println!("reached: {}", at);
            EXIT_FALSE
        }
        NativeResult::NotReached(why) => {
            println!("not reached: {}", why);
            EXIT_TRUE
        }
        NativeResult::Unavailable(why) => {
            eprintln!("cpals: cannot replay: {}", why);
            EXIT_ERROR
        }
    }
}
