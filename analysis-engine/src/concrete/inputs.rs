//! Input strategies of the concrete interpreter: where a run's input values and its
//! nondeterministic control-flow choices come from (zeros, one constant, or seeded
//! pseudo-random values biased towards boundaries).

use crate::ir::IntTy;

/// Where input values come from.
pub trait InputStrategy {
    fn value(&mut self, ty: IntTy) -> i128;
    /// Picks one of `n` nondeterministic control-flow choices.
    fn choose(&mut self, n: usize) -> usize;
}

/// All inputs zero (false).
pub struct Zeros;

impl InputStrategy for Zeros {
    fn value(&mut self, _ty: IntTy) -> i128 {
        0
    }
    fn choose(&mut self, _n: usize) -> usize {
        0
    }
}

/// Every input the same small value (and every choice its remainder): small recursion
/// depths and loop counts that random values rarely hit.
pub struct Constant(pub i128);

impl InputStrategy for Constant {
    fn value(&mut self, ty: IntTy) -> i128 {
        ty.wrap(self.0)
    }
    fn choose(&mut self, n: usize) -> usize {
        (self.0.unsigned_abs() % n.max(1) as u128) as usize
    }
}

/// Deterministic pseudo-random inputs biased towards boundary values (xorshift64*).
pub struct Boundary {
    state: u64,
}

impl Boundary {
    pub fn new(seed: u64) -> Boundary {
        Boundary { state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1 }
    }

    fn next(&mut self) -> u64 {
        xorshift64_star(&mut self.state)
    }
}

/// One step of the xorshift64* generator (Vigna): advances `state` (never 0) and returns the
/// next pseudo-random value. The interpreter's and the fuzzer's input choices share it.
pub(crate) fn xorshift64_star(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

impl InputStrategy for Boundary {
    fn value(&mut self, ty: IntTy) -> i128 {
        if ty.boolean {
            return (self.next() & 1) as i128;
        }
        let r = self.next();
        let v: i128 = match r % 10 {
            0 => 0,
            1 => 1,
            2 => -1,
            3 => ty.min(),
            4 => ty.max(),
            5 => ty.max() - 1,
            6 => ty.min() + 1,
            7 | 8 => (self.next() % 201) as i128 - 100,
            _ => self.next() as i128,
        };
        ty.wrap(v)
    }

    fn choose(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Deterministic pseudo-random small inputs (`-4..=16`) and choices: loop counts a run
/// finishes, and branches on inputs taken both ways within one run (what invariants learned
/// from runs need: `a + b == 3*i` of a loop that adds 1 and 2 or 2 and 1 at random).
pub struct Small {
    state: u64,
}

impl Small {
    pub fn new(seed: u64) -> Small {
        Small { state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1 }
    }
}

impl InputStrategy for Small {
    fn value(&mut self, ty: IntTy) -> i128 {
        let r = xorshift64_star(&mut self.state);
        if ty.boolean {
            return (r & 1) as i128;
        }
        ty.wrap((r % 21) as i128 - 4)
    }

    fn choose(&mut self, n: usize) -> usize {
        (xorshift64_star(&mut self.state) % n.max(1) as u64) as usize
    }
}

/// Replays given input values in order (the inputs the fuzzer found), then zeros, as the
/// fuzzing harness does after its values (`crate::fuzz`); choices are the first.
pub struct Replay {
    values: Vec<i128>,
    next: usize,
}

impl Replay {
    pub fn new(values: Vec<i128>) -> Replay {
        Replay { values, next: 0 }
    }
}

impl InputStrategy for Replay {
    fn value(&mut self, ty: IntTy) -> i128 {
        let v = self.values.get(self.next).copied().unwrap_or(0);
        self.next += 1;
        ty.wrap(v)
    }

    fn choose(&mut self, _n: usize) -> usize {
        0
    }
}
