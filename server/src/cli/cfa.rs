//! `cpals cfa`: prints the control-flow automata of a file, as text or Graphviz.

use std::path::Path;

use crate::cli::args::load;
use crate::messages::{parse_model, EXIT_ERROR};

pub fn run(file: &Path, dot: bool, data_model: &str) -> i32 {
    let model = match parse_model(data_model) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("cpals: {}", e);
            return EXIT_ERROR;
        }
    };
    match load(file, model, &Default::default(), &analysis_engine::Cancel::new()) {
        Ok(p) => {
            if dot {
                print!("{}", analysis_engine::cfa::dot::to_dot(&p));
            } else {
                for f in &p.functions {
                    println!("{} ({} nodes, {} edges)", f.name, f.cfa.nodes.len(), f.cfa.edges.len());
                    for e in &f.cfa.edges {
                        println!(
                            "  {} -> {}  line {}: {}",
                            e.src.0,
                            e.dst.0,
                            f.first_line + e.span.line,
                            analysis_engine::cfa::pretty::edge(&p, &e.kind)
                        );
                    }
                }
            }
            0
        }
        Err(e) => {
            eprintln!("{}", e);
            EXIT_ERROR
        }
    }
}
