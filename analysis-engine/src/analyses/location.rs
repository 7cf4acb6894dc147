//! The location CPA 𝕃 (seed 001 §5.1): the program counter of the interprocedural CFA. Its
//! transfer enumerates the operations leaving a location; calls enter the callee's entry
//! (returns are matched by the call-stack CPA).

use crate::cfa::{EdgeKind, Loc, Program};
use crate::core::Op;

pub struct LocationCpa<'p> {
    pub program: &'p Program,
}

impl<'p> LocationCpa<'p> {
    pub fn initial(&self) -> Loc {
        let start = self.program.start;
        Loc { func: start, node: self.program.cfa(start).entry }
    }

    /// Intraprocedural and call operations leaving `loc`, with their target locations.
    pub fn successors(&self, loc: Loc, out: &mut Vec<(Op, Loc)>) {
        let cfa = self.program.cfa(loc.func);
        for (eid, e) in cfa.out_edges(loc.node) {
            match &e.kind {
                EdgeKind::CallSummary(c) => {
                    let callee = self.program.cfa(c.callee);
                    out.push((Op::Call(loc.func, eid), Loc { func: c.callee, node: callee.entry }));
                }
                _ => out.push((Op::Edge(loc.func, eid), Loc { func: loc.func, node: e.dst })),
            }
        }
    }

    pub fn is_exit(&self, loc: Loc) -> bool {
        self.program.cfa(loc.func).exit == loc.node
    }

    /// Reverse-post-order number of a location (for the waitlist).
    pub fn rpo(&self, loc: Loc) -> u32 {
        self.program.cfa(loc.func).node(loc.node).rpo
    }
}
