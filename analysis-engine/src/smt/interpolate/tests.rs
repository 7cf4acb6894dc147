//! Tests of the interpolation strategies: a recipe path and random infeasible linear paths
//! (property test), each result checked independently.

use super::tests_support::*;
use super::*;
use proptest::prelude::{prop_assert, prop_assume, proptest, ProptestConfig};

#[test]
fn every_strategy_refutes_the_spacer_recipe_path() {
    // extraction C.3: x := 0; y := 5 | x := x + 1 | assume(y > 5)
    let p = load("extern void reach_error(void);\nint main(void) {\n int x = 0; int y = 5;\n x = x + 1;\n if (y > 5) reach_error();\n return 0;\n}\n");
    let ops = path_to_target(&p);
    let cancel = Cancel::new();
    for s in Strategy::ALL {
        let bl = blocks(&ops, 3);
        let path = EncodedPath::new(&p, &bl, false);
        assert!(path.infeasible(&cancel));
        let itps = match s {
            Strategy::Spacer => spacer(&path, &cancel),
            Strategy::QeCore => qe_core(&path, &cancel),
            Strategy::Farkas => farkas(&path, &cancel),
        }
        .unwrap_or_else(|e| panic!("{}: {}", s.name(), e));
        assert_sequence(&path, &itps);
        let dags: Vec<Block> = bl.iter().map(|b| Block::of_path(b)).collect();
        let got = sequence_interpolants(&p, &dags, &[s], &cancel).expect("checked interpolants");
        let mentions_y = got.cuts.iter().flatten().any(|pr| pr.vars().any(|v| p.var_name(v) == "y"));
        assert!(mentions_y, "{}: the predicates are about y: {:?}", s.name(), got.cuts);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]
    #[test]
    fn interpolants_of_random_infeasible_paths_are_valid(
        updates in proptest::collection::vec((0usize..4, 0usize..4, -20i64..20), 1..8),
        check in (0usize..4, 0usize..4),
        cuts in 2usize..5,
    ) {
        let src = program(&updates, check);
        let p = load(&src);
        let ops = path_to_target(&p);
        let bl = blocks(&ops, cuts.min(ops.len()));
        let cancel = Cancel::new();
        let path = EncodedPath::new(&p, &bl, false);
        prop_assume!(path.infeasible(&cancel));
        let mut some = false;
        for s in Strategy::ALL {
            let r = match s {
                Strategy::Spacer => spacer(&path, &cancel),
                Strategy::QeCore => qe_core(&path, &cancel),
                Strategy::Farkas => farkas(&path, &cancel),
            };
            if let Ok(itps) = r {
                // Whatever a strategy returns passes the built-in check only if it is an
                // interpolant sequence; the independent check must agree.
                if path.valid(&itps, &cancel) {
                    assert_sequence(&path, &itps);
                    some = true;
                }
            }
        }
        prop_assert!(some, "no strategy found interpolants for\n{}", src);
    }
}
