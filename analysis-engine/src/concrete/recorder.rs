//! The record of a concrete run: its first steps, its last ones in a ring buffer, and all
//! its operations while the run is short (for the SMT confirmation).

use std::collections::VecDeque;

use super::{ConcreteStep, Run, RunLimits};
use crate::core::Op;
use crate::ir::VarId;

/// Keeps the first steps of a run, the last ones in a ring whose slots (and their value
/// buffers) are reused, and all operations while the run is short.
pub(super) struct Recorder<'l> {
    ring: Vec<ConcreteStep>,
    next: usize,
    limits: &'l RunLimits,
}

impl<'l> Recorder<'l> {
    pub(super) fn new(limits: &'l RunLimits) -> Recorder<'l> {
        Recorder { ring: Vec::with_capacity(limits.trace_steps), next: 0, limits }
    }

    /// Records an operation.
    pub(super) fn record(
        &mut self,
        out: &mut Run,
        op: Op,
        depth: usize,
        recursive: bool,
        values: &[(VarId, Option<i64>, i128)],
        input: Option<i128>,
    ) {
        if let Some(ops) = &mut out.ops {
            if ops.len() < self.limits.keep_ops {
                ops.push((op, recursive));
            } else {
                out.ops = None;
            }
        }
        let n = self.limits.trace_steps;
        if out.head.len() < n {
            out.head.push(ConcreteStep { op, depth, recursive, values: values.to_vec(), input, accelerated: None });
        } else if self.ring.len() < n {
            self.ring.push(ConcreteStep { op, depth, recursive, values: values.to_vec(), input, accelerated: None });
        } else {
            let slot = &mut self.ring[self.next];
            self.next = (self.next + 1) % n;
            slot.op = op;
            slot.depth = depth;
            slot.recursive = recursive;
            slot.values.clear();
            slot.values.extend_from_slice(values);
            slot.input = input;
            slot.accelerated = None;
        }
    }

    /// Records a step that is not an operation (an accelerated loop).
    pub(super) fn push(&mut self, out: &mut Run, step: ConcreteStep) {
        let n = self.limits.trace_steps;
        if out.head.len() < n {
            out.head.push(step);
        } else if self.ring.len() < n {
            self.ring.push(step);
        } else {
            self.ring[self.next] = step;
            self.next = (self.next + 1) % n;
        }
    }

    /// The last steps, oldest first.
    pub(super) fn finish(mut self) -> VecDeque<ConcreteStep> {
        if self.ring.len() == self.limits.trace_steps {
            self.ring.rotate_left(self.next);
        }
        self.ring.into()
    }
}
