//! Which targets are properties ([`PropertySet`], DESIGN.md "Properties"), and reading SV-COMP
//! property files (`--property FILE.prp`). The CFA builder reads the set: it belongs with the
//! automata, below the configuration (`crate::config` re-exports it).

use super::TargetKind;

/// Which targets are properties (DESIGN.md "Properties"): in the editor all three kinds; a
/// benchmark task names one with its property file (`--property FILE.prp`). The CFA builder
/// reads it: a target that is not a property is not a target at all (an `ERROR:` label is then
/// just a label, a failing `assert` ends the path, a defined `reach_error` is an ordinary
/// call, and after a call of an undefined one, whether it returns is unknown).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct PropertySet {
    /// `assert(e)` from `<assert.h>` (a call to `__assert_fail`).
    pub assert: bool,
    /// Calls of `reach_error()` / `__VERIFIER_error()`.
    pub reach_error: bool,
    /// Labels named `ERROR`.
    pub error_label: bool,
    /// Out-of-bounds array accesses count as violations of their own (the editor). They are
    /// checked in every set: where they are not properties (a benchmark's `unreach-call`), an
    /// access that may be out of bounds leaves the other properties' proofs `unknown` (its
    /// behaviour is undefined), and a confirmed one does not make the task `false`.
    pub memory: bool,
}

impl Default for PropertySet {
    fn default() -> PropertySet {
        PropertySet::ALL
    }
}

impl PropertySet {
    /// The editor's default: every kind counts.
    pub const ALL: PropertySet = PropertySet { assert: true, reach_error: true, error_label: true, memory: true };
    /// SV-COMP's `unreach-call.prp`, `G ! call(reach_error())`.
    pub const UNREACH_CALL: PropertySet = PropertySet { assert: false, reach_error: true, error_label: false, memory: false };
    /// CPAchecker's `unreach-label.prp`, `G ! label(ERROR)`, as CPAchecker checks it with its
    /// default specification (`config/specification/default.spc`): labels `ERROR` and failed
    /// `assert`s (`__assert_fail`) are errors, `reach_error()` is not. The expected verdicts of
    /// its regression tasks were produced so (an `assert` that can fail is a `false` task).
    pub const UNREACH_LABEL: PropertySet = PropertySet { assert: true, reach_error: false, error_label: true, memory: false };

    /// Whether a target of this kind is a target of the CFA (out-of-bounds checks always are).
    pub fn counts(self, kind: TargetKind) -> bool {
        match kind {
            TargetKind::Assert => self.assert,
            TargetKind::ReachError => self.reach_error,
            TargetKind::ErrorLabel => self.error_label,
            TargetKind::OutOfBounds => true,
        }
    }

    /// Whether a violation of a target of this kind makes the file's verdict `false` (else
    /// it is a side condition: see [`PropertySet::memory`]).
    pub fn decides(self, kind: TargetKind) -> bool {
        match kind {
            TargetKind::OutOfBounds => self.memory,
            k => self.counts(k),
        }
    }

    /// The name of a benchmark property (`unreach-call`, `unreach-label`), `all` for the default.
    pub fn name(self) -> &'static str {
        match self {
            PropertySet::UNREACH_CALL => "unreach-call",
            PropertySet::UNREACH_LABEL => "unreach-label",
            _ => "all",
        }
    }

    /// Reads an SV-COMP property file: `CHECK( init(main()), LTL(G ! call(reach_error())) )`
    /// (also `__VERIFIER_error`) or CPAchecker's `CHECK( init(main()), LTL(G ! label(ERROR)) )`.
    /// Gives the properties and the entry function `init(…)` names; anything else is an error
    /// naming what cpals does not check.
    pub fn from_prp(text: &str) -> Result<(PropertySet, String), String> {
        let mut found: Option<(PropertySet, String)> = None;
        for line in text.lines() {
            let line: String = line.split("//").next().unwrap_or("").chars().filter(|c| !c.is_whitespace()).collect();
            if line.is_empty() {
                continue;
            }
            let inner = line
                .strip_prefix("CHECK(init(")
                .and_then(|r| r.strip_suffix(')'))
                .ok_or_else(|| format!("not a property of the form `CHECK( init(main()), LTL(...) )`: `{}`", line))?;
            let (entry, ltl) = inner.split_once("()),LTL(").ok_or_else(|| format!("not a property cpals reads: `{}`", line))?;
            let ltl = ltl.strip_suffix(')').unwrap_or(ltl);
            let set = match ltl {
                "G!call(reach_error())" | "G!call(__VERIFIER_error())" => PropertySet::UNREACH_CALL,
                "G!label(ERROR)" => PropertySet::UNREACH_LABEL,
                other => return Err(format!("cpals does not check the property `{}` (only unreach-call and unreach-label)", other)),
            };
            if entry.is_empty() || !entry.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("not an entry function: `{}`", entry));
            }
            if let Some((prev, _)) = &found {
                if *prev != set {
                    return Err("a property file with more than one property".into());
                }
            }
            found = Some((set, entry.to_string()));
        }
        found.ok_or_else(|| "the property file names no property".into())
    }
}

#[cfg(test)]
mod tests {
    use super::PropertySet;
    use crate::cfa::TargetKind;

    #[test]
    fn property_files_select_their_targets() {
        let call = "CHECK( init(main()), LTL(G ! call(reach_error())) )\n\n";
        assert_eq!(PropertySet::from_prp(call), Ok((PropertySet::UNREACH_CALL, "main".to_string())));
        let old = "CHECK( init(main()), LTL(G ! call(__VERIFIER_error())) )";
        assert_eq!(PropertySet::from_prp(old).map(|p| p.0), Ok(PropertySet::UNREACH_CALL));
        let label = "CHECK( init(entry()), LTL(G ! label(ERROR)) )\n";
        assert_eq!(PropertySet::from_prp(label), Ok((PropertySet::UNREACH_LABEL, "entry".to_string())));
        assert!(PropertySet::UNREACH_CALL.counts(TargetKind::ReachError));
        assert!(!PropertySet::UNREACH_CALL.counts(TargetKind::Assert));
        assert!(!PropertySet::UNREACH_CALL.counts(TargetKind::ErrorLabel));
        assert!(PropertySet::UNREACH_LABEL.counts(TargetKind::ErrorLabel));
        assert!(!PropertySet::UNREACH_LABEL.counts(TargetKind::ReachError));
        assert!([TargetKind::Assert, TargetKind::ReachError, TargetKind::ErrorLabel].iter().all(|&k| PropertySet::ALL.counts(k)));
    }

    #[test]
    fn other_property_files_are_refused() {
        let memsafety = "CHECK( init(main()), LTL(G valid-free) )\nCHECK( init(main()), LTL(G valid-deref) )\n";
        assert!(PropertySet::from_prp(memsafety).unwrap_err().contains("does not check the property `Gvalid-free`"));
        assert!(PropertySet::from_prp("").unwrap_err().contains("names no property"));
        assert!(PropertySet::from_prp("hello").unwrap_err().contains("not a property"));
        let both = "CHECK( init(main()), LTL(G ! call(reach_error())) )\nCHECK( init(main()), LTL(G ! label(ERROR)) )\n";
        assert!(PropertySet::from_prp(both).unwrap_err().contains("more than one property"));
    }
}
