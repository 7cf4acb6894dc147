//! Deterministic coverage test: each interpolation strategy on its own must find checked
//! interpolants for most random infeasible linear paths.

use super::tests_support::*;
use super::*;

#[test]
fn every_strategy_interpolates_most_random_linear_paths() {
    // Deterministic companion of the property test: each strategy on its own must find
    // (checked) interpolants for most random infeasible linear paths.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = |m: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % m
    };
    let mut wins = [0usize; 3];
    let mut total = 0;
    for _ in 0..20 {
        let updates: Vec<(usize, usize, i64)> =
            (0..1 + next(6)).map(|_| (next(4) as usize, next(4) as usize, next(40) as i64 - 20)).collect();
        let src = program(&updates, (next(4) as usize, next(4) as usize));
        let p = load(&src);
        let ops = path_to_target(&p);
        let bl = blocks(&ops, 3);
        let cancel = Cancel::new();
        let path = EncodedPath::new(&p, &bl, false);
        if !path.infeasible(&cancel) {
            continue;
        }
        total += 1;
        for (i, s) in Strategy::ALL.iter().enumerate() {
            let r = match s {
                Strategy::Spacer => spacer(&path, &cancel),
                Strategy::QeCore => qe_core(&path, &cancel),
                Strategy::Farkas => farkas(&path, &cancel),
            };
            if let Ok(itps) = r {
                if path.valid(&itps, &cancel) {
                    assert_sequence(&path, &itps);
                    wins[i] += 1;
                }
            }
        }
    }
    assert!(total >= 10, "too few infeasible paths generated: {}", total);
    for (i, s) in Strategy::ALL.iter().enumerate() {
        assert!(wins[i] * 2 >= total, "{} found interpolants for {} of {} paths", s.name(), wins[i], total);
    }
}
