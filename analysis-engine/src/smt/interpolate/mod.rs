//! Sequence interpolants for an infeasible path without an interpolation API (Z3 4.8.12 has
//! none; extraction seeds-000-004 part C.3, seeds-002-003 part C.1):
//!
//! - **Spacer** (`spacer.rs`) on a chain of Horn clauses `P_1 ← A_1`, `P_k ← P_{k-1} ∧ A_k`,
//!   `false ← P_{n-1} ∧ A_n`, with inlining and slicing off so that the solved predicates
//!   are generalised interpolants;
//! - **QE + core weakening** (`qe.rs`): `I_k = ∃(local symbols). I_{k-1} ∧ A_k` by
//!   quantifier elimination, then literals dropped while the rest of the path stays refuted
//!   (the SMT lift of seed 000's Alg. 3);
//! - **Farkas** (`farkas.rs`): for paths of linear constraints, a linear-programming
//!   certificate whose prefix sums are the interpolants.
//!
//! The path is encoded over mathematical integers (see `encode.rs`; `path.rs`). Every
//! interpolant sequence is checked (`A_1 ⇒ I_1`, `I_{k-1} ∧ A_k ⇒ I_k`, `I_{n-1} ∧ A_n`
//! unsatisfiable, each `I_k` over the symbols shared by prefix and suffix) before its atoms
//! are used; a strategy whose result fails the check is skipped for the next one.

mod farkas;
mod path;
mod qe;
mod spacer;

use std::collections::HashMap;

use z3::ast::{Bool, Dynamic};

use crate::cfa::block::Block;
use crate::cfa::Program;
use crate::core::Cancel;
use crate::smt::encode::Theory;
use crate::smt::linear::atoms;
use crate::smt::linpred::LinPred;

pub(crate) use path::{and, symbols_of, EncodedPath};
pub(crate) use spacer::SpacerContext;

use farkas::farkas;
use qe::qe_core;
use spacer::spacer;

/// Per-query limit for interpolation.
const QUERY_MS: u64 = 10_000;
/// Spacer's limit when another encoding is left to try.
const SPACER_FIRST_MS: u64 = 2_000;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Strategy {
    Spacer,
    #[cfg_attr(feature = "clap", value(name = "qe"))]
    QeCore,
    Farkas,
}

impl Strategy {
    pub const ALL: [Strategy; 3] = [Strategy::Spacer, Strategy::QeCore, Strategy::Farkas];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::Spacer => "spacer",
            Strategy::QeCore => "qe",
            Strategy::Farkas => "farkas",
        }
    }
}

/// Interpolants of a path cut into blocks: one list of predicates per cut.
#[derive(Clone, Debug)]
pub struct Interpolants {
    pub strategy: Strategy,
    pub cuts: Vec<Vec<LinPred>>,
}

/// The SSA symbols of a path's encoding by name, with their variable and version.
pub(crate) type SsaNames = HashMap<String, (crate::ir::VarId, u32)>;

/// Computes sequence interpolants for blocks `A_1..A_n`, trying the strategies in order.
pub fn sequence_interpolants(p: &Program, blocks: &[Block], order: &[Strategy], cancel: &Cancel) -> Result<Interpolants, String> {
    let (strategy, itps, names) = sequence_interpolant_formulas(p, blocks, order, cancel)?;
    let cuts: Vec<Vec<LinPred>> = itps
        .iter()
        .map(|i| {
            let mut out = Vec::new();
            atoms(&Dynamic::from_ast(i), &names, &|_| None, &mut out);
            out.sort();
            out.dedup();
            out
        })
        .collect();
    Ok(Interpolants { strategy, cuts })
}

/// Sequence interpolants as formulas over the SSA symbols of the blocks' encoding (named
/// `v<id>_<version>`, as the encoder names them), with the map from names to variables.
pub(crate) fn sequence_interpolant_formulas(
    p: &Program,
    blocks: &[Block],
    order: &[Strategy],
    cancel: &Cancel,
) -> Result<(Strategy, Vec<Bool>, SsaNames), String> {
    // C's arithmetic first (the interpolants then carry the bounds that rule out overflow,
    // which the exact abstraction needs); ideal integers, where interpolation is easier, next.
    let encodings = [
        Theory::Int { ranges: true, exact: true, parity: false },
        Theory::Int { ranges: false, exact: false, parity: false },
        Theory::Int { ranges: true, exact: false, parity: false },
    ];
    sequence_interpolant_formulas_in(p, blocks, order, &encodings, cancel)
}

/// `sequence_interpolant_formulas` trying the encodings in the given order.
pub(crate) fn sequence_interpolant_formulas_in(
    p: &Program,
    blocks: &[Block],
    order: &[Strategy],
    encodings: &[Theory],
    cancel: &Cancel,
) -> Result<(Strategy, Vec<Bool>, SsaNames), String> {
    if blocks.len() < 2 {
        return Err("the path has no cut to interpolate at".into());
    }
    let mut why = Vec::new();
    let mut any_infeasible = false;
    for (i, &theory) in encodings.iter().enumerate() {
        // An encoding with another one after it gets a shorter Spacer query: Spacer either
        // answers a path of a few blocks in milliseconds or not within seconds (seen: 10 s
        // for nothing on a six-block path with the C ranges, 30 ms without them).
        let spacer_cancel =
            if i + 1 < encodings.len() { cancel.child(Some(std::time::Duration::from_millis(SPACER_FIRST_MS))) } else { cancel.clone() };
        let path = EncodedPath::with_theory(p, blocks, theory);
        if !path.infeasible(cancel) {
            continue;
        }
        any_infeasible = true;
        for &s in order {
            cancel.check().map_err(|i| i.describe())?;
            let t0 = std::time::Instant::now();
            let result = match s {
                Strategy::Spacer => spacer(&path, &spacer_cancel),
                Strategy::QeCore => qe_core(&path, cancel),
                Strategy::Farkas => farkas(&path, cancel),
            };
            tracing::debug!(
                "interpolation by {} over {} blocks ({:?}): {} in {:?}",
                s.name(),
                blocks.len(),
                theory,
                if result.is_ok() { "ok" } else { "failed" },
                t0.elapsed()
            );
            match result {
                Ok(itps) if path.valid(&itps, cancel) => return Ok((s, itps, path.enc.names.clone())),
                Ok(_) => why.push(format!("{}: interpolants failed the check", s.name())),
                Err(e) => why.push(format!("{}: {}", s.name(), e)),
            }
        }
    }
    if !any_infeasible {
        return Err("the path is infeasible only through machine arithmetic the integer encodings do not express".into());
    }
    Err(why.join("; "))
}

#[cfg(test)]
pub(crate) mod tests_support;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod coverage;
