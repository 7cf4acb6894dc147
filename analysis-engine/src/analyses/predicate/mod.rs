//! Predicate analysis with lazy abstraction and interpolation (seed 001 §5.4 and §6; the
//! BLAST/CPAchecker lineage): Boolean (or Cartesian) predicate abstraction over BDDs at
//! abstraction locations, blocks of operations in between (adjustable block encoding),
//! predicates discovered from interpolants of infeasible error paths.

pub mod precision;
pub mod predabs;
pub mod refiner;
pub mod state;
