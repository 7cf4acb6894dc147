//! The options of an analysis that `check` and `report` share, and reading the program a
//! subcommand works on.

use std::path::Path;

use analysis_engine::cfa::build::BuildOptions;
use analysis_engine::cfa::{DataModel, Program};
use analysis_engine::config::{Abstraction, BlockEncoding, Form, Kind, NativeExecution, Order, PropertySet, Scope, Strategy};
use analysis_engine::frontend::SourceInput;
use analysis_engine::{Analysis, Cancel, VerifyConfig};

use crate::messages::{parse_model, parse_timeout};

#[derive(clap::Args, Clone)]
pub struct AnalysisArgs {
    /// The analysis to run: combined (explicit values, then values with predicates; for
    /// programs with recursion the summary analysis first), value, predicate, summaries
    /// (procedure summaries, seed 002) or tra (transition relation approximation, seed 003);
    /// see the README.
    #[arg(long, default_value = "combined")]
    pub analysis: String,
    /// CPU-time limit in seconds, as SV-COMP counts it (the analysis stops and open
    /// properties become unknown with the reason `timeout`); more than 0 and at most 1000000.
    #[arg(long)]
    pub timeout: Option<f64>,
    /// LP64 (x86-64 Linux) or ILP32 (SV-COMP's 32-bit tasks).
    #[arg(long, default_value = "LP64")]
    pub data_model: String,
    /// Waitlist order: dfs, bfs or rpo (default: dfs for `value`, rpo for the others).
    #[arg(long, value_enum)]
    pub order: Option<Order>,
    /// Predicate abstraction: boolean (BDDs over all predicate valuations, the default) or
    /// cartesian (the conjunction of the predicates implied, cheaper and weaker).
    #[arg(long, value_enum, default_value_t = Abstraction::Boolean)]
    pub abstraction: Abstraction,
    /// Where predicate abstraction happens: loops (loop heads and function boundaries,
    /// adjustable-block encoding, the default) or edges (after every operation).
    #[arg(long, value_enum, default_value_t = BlockEncoding::LoopsAndFunctions)]
    pub blocks: BlockEncoding,
    /// Verifies only this function as the entry, with arbitrary arguments (its callees
    /// included; any function of the file, called or not), as the language server does for one
    /// unit; by default `main` and every function nothing calls, each an entry of its own.
    #[arg(long)]
    pub function: Option<String>,
    /// An SV-COMP property file (`unreach-call.prp`: only calls of `reach_error`; CPAchecker's
    /// `unreach-label.prp`: labels `ERROR` and failed asserts, as CPAchecker's default
    /// specification): only those targets are properties, and the
    /// entry is the function its `init(…)` names. By default every assert, `reach_error()`
    /// call and `ERROR:` label is a property. `unreach-call` and `unreach-label` also name
    /// the two properties without a file.
    #[arg(long, value_name = "FILE.prp")]
    pub property: Option<std::path::PathBuf>,
    /// Assumes every array subscript is within its array: no out-of-bounds checks, and proofs
    /// hold only for executions without such an access (by default each subscript is checked).
    #[arg(long)]
    pub assume_in_bounds: bool,
    /// Assumes every allocation succeeds (SV-COMP's rule, CBMC's default): `malloc` and the
    /// others never return null, and proofs hold only for such runs, as a note says (by
    /// default an allocation may fail).
    #[arg(long)]
    pub assume_allocations_succeed: bool,
    /// The memory model: on (objects whose address is taken, arrays behind pointers and the
    /// heap are modelled byte-addressed, each access checked; the default) or off (a read
    /// through a pointer is any value and a write havocs addressable memory, as before it).
    #[arg(long, value_enum, default_value_t = MemoryModel::On)]
    pub memory: MemoryModel,
    /// A compilation database (`compile_commands.json`) whose entry for the file gives its
    /// include paths, defines and language standard; by default the one clangd would find
    /// (the file's folder and its parents, each also with a `build/` subfolder).
    #[arg(long, value_name = "FILE")]
    pub compile_commands: Option<std::path::PathBuf>,
    /// Whether a counterexample too long for the SMT path check may be confirmed by running
    /// the program natively: sandboxed (compiled with `cc` and run under a seccomp filter that
    /// allows no files, processes or network, with CPU and memory limits; the default) or off
    /// (such counterexamples stay unknown).
    #[arg(long, value_enum, default_value_t = NativeExecution::Sandboxed)]
    pub native: NativeExecution,
    /// Interpolation strategies in the order they are tried: spacer, qe, farkas.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "spacer,qe,farkas")]
    pub interpolation: Vec<Strategy>,
    /// Phases of `combined` to leave out (comma-separated: fuzz, concrete, summaries, value,
    /// guesses, cells, templates, chc, kinduction, symbolic), to measure what each contributes.
    #[arg(long, value_delimiter = ',', value_name = "PHASE")]
    pub without: Vec<String>,
    /// The fraction of the time left that a phase of `combined` gets when it starts
    /// (`cells=0.3`; repeatable, after `--without`), to compare time splits in one benchmark.
    #[arg(long, value_name = "PHASE=FRACTION")]
    pub share: Vec<String>,
    /// What the summary analysis refines per round: dag (all error paths of the round
    /// together, from their counterexample DAG, the default) or path (one error path).
    #[arg(long, default_value = "dag")]
    pub refine: String,
    /// The interpolants a counterexample DAG of the summary analysis is refined with:
    /// spacer (Spacer's solution of its Horn clauses), or the seed 002 families by
    /// quantifier elimination: conciliated, weakest, strongest.
    #[arg(long, default_value = "spacer")]
    pub dag_interpolants: String,
    /// Where the summary analysis tracks the predicates it learns: function (everywhere in
    /// the procedure they were found in) or location (at their control point only).
    #[arg(long, value_enum, default_value_t = Scope::Function)]
    pub summary_precision: Scope,
    /// What a DAG node's interpolant of a family (--dag-interpolants) adds to the summary
    /// analysis's precision: its atoms, one predicate each, or the formula itself as one
    /// predicate (the paper's setting).
    #[arg(long, value_enum, default_value_t = Form::Atoms)]
    pub summary_predicates: Form,
}

impl AnalysisArgs {
    /// The engine's configuration and the data model these options select, or what is wrong
    /// with them.
    pub fn config(&self) -> Result<(VerifyConfig, DataModel), String> {
        let analysis = Analysis::parse(&self.analysis).ok_or_else(|| format!("unknown analysis `{}`", self.analysis))?;
        let mut cfg = VerifyConfig::new(analysis);
        if let Some(t) = self.timeout {
            cfg.timeout = Some(parse_timeout(t)?);
        }
        if let Some(o) = self.order {
            cfg.cegar.order = o;
        }
        cfg.predicate.abstraction = self.abstraction;
        cfg.predicate.blocks = self.blocks;
        cfg.predicate.interpolation = self.interpolation.clone();
        cfg.summaries.dag_refinement = match self.refine.as_str() {
            "dag" => true,
            "path" => false,
            other => return Err(format!("unknown refinement `{}` (use dag or path)", other)),
        };
        cfg.summaries.dag_interpolants = match self.dag_interpolants.as_str() {
            "spacer" => None,
            other => Some(
                Kind::parse(other)
                    .ok_or_else(|| format!("unknown DAG interpolants `{}` (use spacer, conciliated, weakest or strongest)", other))?,
            ),
        };
        cfg.concrete.native = self.native;
        for phase in &self.without {
            if !cfg.without(phase) {
                return Err(format!("unknown phase `{}` (use {})", phase, VerifyConfig::PHASES.join(", ")));
            }
        }
        for item in &self.share {
            let (phase, fraction) = item.split_once('=').ok_or_else(|| format!("`--share {}`: expected PHASE=FRACTION", item))?;
            let fraction: f64 = fraction
                .parse()
                .ok()
                .filter(|f: &f64| (0.0..=1.0).contains(f))
                .ok_or_else(|| format!("`--share {}`: the fraction must be a number from 0 to 1", item))?;
            if !cfg.set_share(phase, fraction) {
                return Err(format!("unknown phase `{}` (use {})", phase, VerifyConfig::PHASES.join(", ")));
            }
        }
        cfg.summaries.scope = self.summary_precision;
        cfg.summaries.form = self.summary_predicates;
        if cfg.summaries.form == Form::Formulas && cfg.summaries.dag_interpolants.is_none() {
            return Err(
                "`--summary-predicates formulas` needs `--dag-interpolants conciliated|weakest|strongest` (Spacer's solutions add atoms)"
                    .into(),
            );
        }
        cfg.entry = self.function.clone();
        if cfg.entry.is_none() && self.property.is_some() {
            cfg.entry = self.build()?.entry;
        }
        if cfg.predicate.interpolation.is_empty() {
            return Err("at least one interpolation strategy is needed".into());
        }
        Ok((cfg, parse_model(&self.data_model)?))
    }
}

/// `--memory`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MemoryModel {
    On,
    Off,
}

impl AnalysisArgs {
    /// What the automata are built for: the properties of `--property` and its entry, or
    /// `--function`.
    pub fn build(&self) -> Result<BuildOptions, String> {
        let mut opts = BuildOptions {
            assume_in_bounds: self.assume_in_bounds,
            assume_allocations_succeed: self.assume_allocations_succeed,
            no_memory_model: self.memory == MemoryModel::Off,
            ..BuildOptions::default()
        };
        if let Some(path) = &self.property {
            let (set, entry) = match path.to_str() {
                // The two properties by name, as fixtures give them.
                Some("unreach-call") if !path.exists() => (PropertySet::UNREACH_CALL, "main".to_string()),
                Some("unreach-label") if !path.exists() => (PropertySet::UNREACH_LABEL, "main".to_string()),
                _ => {
                    let bytes = analysis_engine::frontend::read_regular_file(path)
                        .map_err(|e| format!("cannot read the property file {}: {}", path.display(), e))?;
                    let text = String::from_utf8(bytes).map_err(|_| format!("the property file {} is not UTF-8 text", path.display()))?;
                    PropertySet::from_prp(&text).map_err(|e| format!("{}: {}", path.display(), e))?
                }
            };
            opts.properties = set;
            opts.entry = Some(entry);
        }
        if let Some(f) = &self.function {
            opts.entry = Some(f.clone());
        }
        Ok(opts)
    }
}

impl AnalysisArgs {
    /// [`Self::build`] for `file`: with the preprocessor flags of its entry in the compilation
    /// database (`--compile-commands`, or the one found as clangd finds it), said on stderr.
    pub fn build_for(&self, file: &Path) -> Result<BuildOptions, String> {
        let mut opts = self.build()?;
        if let Some(project) = crate::compile_db::Project::for_file(file, self.compile_commands.as_deref())? {
            eprintln!("cpals: {}: preprocessor flags from {}: {}", file.display(), project.db.display(), project.flags.join(" "));
            project.apply(&mut opts);
        }
        Ok(opts)
    }
}

/// The program in `file` built for `opts` (the preprocessor stops at `cancel`'s deadline), or
/// the front end's error message.
pub fn load(file: &Path, model: DataModel, opts: &BuildOptions, cancel: &Cancel) -> Result<Program, String> {
    let input = SourceInput::read(file).map_err(|e| e.to_string())?;
    analysis_engine::load_within(&input, model, opts, cancel).map_err(|e| e.to_string())
}
