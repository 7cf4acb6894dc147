//! The predicates the summary analysis tracks, per procedure or per control point (seed 002
//! A.1.8: the abstract program has one predicate set per control point, refined with the
//! interpolant at that point, or here with its atoms; see [`super::formula`]).

pub use crate::config::Scope;
use std::collections::HashMap;

use super::formula::Pred;
use crate::cfa::NodeId;
use crate::ir::FuncId;

/// Predicates one control point may have (valuations are 64-bit words; the abstract images
/// enumerate valuations, so fewer keep them cheap).
pub const MAX_PREDICATES: usize = 20;

/// What adding a predicate did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Added {
    New,
    Known,
    Full,
}

/// The precision: predicates per procedure, and per control point beyond those. The
/// predicates at a point are its procedure's, then its own, in the order they were added
/// (the bits of a valuation).
pub struct Precision {
    scope: Scope,
    function: Vec<Vec<Pred>>,
    local: HashMap<(FuncId, NodeId), Vec<Pred>>,
}

impl Precision {
    /// No predicates, for a program of `functions` procedures.
    pub fn new(functions: usize, scope: Scope) -> Precision {
        Precision { scope, function: vec![Vec::new(); functions], local: HashMap::new() }
    }

    /// The predicates tracked at `node` of `f`.
    pub fn at(&self, f: FuncId, node: NodeId) -> Vec<Pred> {
        let mut out = self.function[f.0 as usize].clone();
        if let Some(l) = self.local.get(&(f, node)) {
            out.extend(l.iter().cloned());
        }
        out
    }

    /// Adds `pred` at `node` of `f` (at every point of `f` for `None` or `Scope::Function`).
    pub fn add(&mut self, f: FuncId, node: Option<NodeId>, pred: Pred) -> Added {
        let here = match (self.scope, node) {
            (Scope::Location, Some(n)) => Some(n),
            _ => None,
        };
        let function = &self.function[f.0 as usize];
        if function.contains(&pred) {
            return Added::Known;
        }
        let list = match here {
            None => {
                // The widest point of `f` bounds what a procedure-wide predicate may add.
                let widest = self.local.iter().filter(|((g, _), _)| *g == f).map(|(_, l)| l.len()).max().unwrap_or(0);
                if function.len() + widest >= MAX_PREDICATES {
                    return Added::Full;
                }
                for ((g, _), l) in self.local.iter_mut() {
                    if *g == f {
                        l.retain(|q| *q != pred);
                    }
                }
                &mut self.function[f.0 as usize]
            }
            Some(n) => {
                let size = function.len();
                let list = self.local.entry((f, n)).or_default();
                if list.contains(&pred) {
                    return Added::Known;
                }
                if size + list.len() >= MAX_PREDICATES {
                    return Added::Full;
                }
                list
            }
        };
        list.push(pred);
        Added::New
    }

    /// Every predicate once, with the procedure it is tracked in, in a stable order.
    pub fn all(&self) -> Vec<(FuncId, Pred)> {
        let mut out: Vec<(FuncId, Pred)> = Vec::new();
        let mut local: Vec<(&(FuncId, NodeId), &Vec<Pred>)> = self.local.iter().collect();
        local.sort_by_key(|(k, _)| **k);
        for f in (0..self.function.len() as u32).map(FuncId) {
            let own = self.function[f.0 as usize].iter().cloned();
            let here = local.iter().filter(|((g, _), _)| *g == f).flat_map(|(_, l)| l.iter().cloned());
            for pred in own.chain(here) {
                if !out.iter().any(|(g, q)| *g == f && *q == pred) {
                    out.push((f, pred));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::VarId;
    use crate::smt::linpred::{LinPred, Rel};

    fn pred(k: i128) -> Pred {
        LinPred::new(vec![(VarId::global(0), 1)], -k, Rel::Le).expect("a predicate").into()
    }

    #[test]
    fn location_predicates_stay_at_their_point_and_function_ones_go_everywhere() {
        let (f, n1, n2) = (FuncId(0), NodeId(1), NodeId(2));
        let mut prec = Precision::new(2, Scope::Location);
        assert_eq!(prec.add(f, Some(n1), pred(1)), Added::New);
        assert_eq!(prec.add(f, Some(n1), pred(1)), Added::Known);
        assert_eq!(prec.at(f, n1), vec![pred(1)]);
        assert!(prec.at(f, n2).is_empty());
        // A procedure-wide predicate is tracked at every point, once.
        assert_eq!(prec.add(f, None, pred(1)), Added::New);
        assert_eq!(prec.at(f, n1), vec![pred(1)]);
        assert_eq!(prec.at(f, n2), vec![pred(1)]);
        assert_eq!(prec.add(f, Some(n2), pred(1)), Added::Known);
        assert!(prec.at(FuncId(1), n1).is_empty());
        assert_eq!(prec.all(), vec![(f, pred(1))]);
    }

    #[test]
    fn function_scope_ignores_the_point_and_both_scopes_are_bounded() {
        let mut prec = Precision::new(1, Scope::Function);
        let f = FuncId(0);
        for k in 0..MAX_PREDICATES as i128 {
            assert_eq!(prec.add(f, Some(NodeId(k as u32)), pred(k)), Added::New);
        }
        assert_eq!(prec.at(f, NodeId(999)).len(), MAX_PREDICATES);
        assert_eq!(prec.add(f, Some(NodeId(0)), pred(-1)), Added::Full);
        let mut local = Precision::new(1, Scope::Location);
        for k in 0..MAX_PREDICATES as i128 {
            assert_eq!(local.add(f, Some(NodeId(3)), pred(k)), Added::New);
        }
        assert_eq!(local.add(f, Some(NodeId(3)), pred(-1)), Added::Full);
        // A full point also bounds what the whole procedure may add.
        assert_eq!(local.add(f, None, pred(-1)), Added::Full);
        assert_eq!(local.add(f, Some(NodeId(4)), pred(-1)), Added::New);
    }
}
