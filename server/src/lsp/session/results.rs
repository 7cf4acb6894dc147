//! What the server knows about a file's verification: one result per verification unit (a root
//! function and everything it calls), in LSP coordinates of the document version it was
//! computed on and moved along with later edits, plus the last syntax error. A unit result
//! whose version is not the document's is stale. [`merge`] combines the units into what the
//! editor is shown: a property in a function several units reach is proved only if every unit
//! proves it; an invariant or dead code only if every unit that reaches the function agrees.
//!
//! While a unit is verified, the verdicts its quick phases decide arrive first
//! ([`FileState::install_partial`]): each replaces the property's old result, current from then
//! on, and a property without an old result shows as pending ("verifying…") until the unit's
//! result arrives.

use std::collections::BTreeMap;

use analysis_engine::report::Verdict;
use tower_lsp::lsp_types::{Range, Url};

use super::document::{shift_range, Edit};

#[derive(Clone, Debug, PartialEq)]
pub struct StepView {
    pub uri: Url,
    pub range: Range,
    pub function: String,
    pub text: String,
    pub values: Vec<(String, String)>,
    /// For inputs: where the value comes from and the value chosen.
    pub input: Option<(String, String)>,
    /// For branches: the direction taken.
    pub branch: Option<bool>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PropertyView {
    /// The function the check is written in.
    pub function: String,
    pub range: Range,
    pub verdict: Verdict,
    /// One-line message (`cli::message`).
    pub message: String,
    /// For a proof: the message without the analysis when it is the unit's (`cli::holds`).
    pub proved_message: String,
    pub reason: Option<String>,
    pub trace: Vec<StepView>,
    /// When the verdict was known, in milliseconds after the unit's verification started (the
    /// unit's time for verdicts only its end decided).
    pub time_ms: u64,
    /// The document version this verdict was computed on, when it is not the unit's (a verdict
    /// decided early, installed into an older unit result).
    pub decided_at: Option<i32>,
    /// Not decided yet: the unit is still being verified (shown as "verifying…").
    pub pending: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct InvariantView {
    pub function: String,
    /// The loop's keyword.
    pub range: Range,
    /// As shown (without what the types imply, bounds joined).
    pub expr: String,
    /// As the analyses reported it (the hover shows it when it differs).
    pub full: String,
    pub source: String,
    pub inductive: bool,
}

/// The result of one verification unit.
#[derive(Clone, Debug, PartialEq)]
pub struct UnitView {
    pub root: String,
    /// The document version the result was computed on (or taken from the cache for).
    pub version: i32,
    /// The functions the unit reaches.
    pub functions: Vec<String>,
    pub properties: Vec<PropertyView>,
    pub invariants: Vec<InvariantView>,
    /// Dead code, with the function it is in.
    pub unreachable: Vec<(String, Range)>,
    pub analysis: String,
    pub time_ms: u64,
    /// Reused from an earlier run with the same automata and configuration.
    pub cached: bool,
    /// Only the verdicts decided so far: the unit is still being verified.
    pub partial: bool,
}

/// A function of the last program that parsed (for code lenses).
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionInfo {
    pub name: String,
    /// The function's first line.
    pub range: Range,
    /// The units that reach it (their roots).
    pub units: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ParseError {
    pub version: i32,
    pub range: Range,
    pub message: String,
}

/// The project a file was last built in (its compilation database), to know which files'
/// changes concern it and to show why its database could not be used.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProjectUse {
    /// The database named by the settings or found for the file, if any.
    pub db: Option<std::path::PathBuf>,
    /// The project's other files (linked in), as the database names them.
    pub linked: Vec<std::path::PathBuf>,
    /// Why the database was not used (unreadable, malformed, no entry for the file).
    pub problem: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct FileState {
    pub functions: Vec<FunctionInfo>,
    /// Units of the last program that parsed, by root; `None`: no result yet.
    pub units: BTreeMap<String, Option<UnitView>>,
    /// The syntax error of the current text, if it does not parse.
    pub parse_error: Option<ParseError>,
    /// A job is running for this file.
    pub running: bool,
    /// The last job failed internally (the message, reported once).
    pub failure: Option<String>,
    /// The project the last job built the file in.
    pub project: ProjectUse,
}

impl FileState {
    /// Moves every range along with an edit of the document `uri`.
    pub fn shift(&mut self, uri: &Url, e: &Edit) {
        for f in &mut self.functions {
            f.range = shift_range(f.range, e);
        }
        if let Some(p) = &mut self.parse_error {
            p.range = shift_range(p.range, e);
        }
        for u in self.units.values_mut().flatten() {
            for p in &mut u.properties {
                p.range = shift_range(p.range, e);
                for s in p.trace.iter_mut().filter(|s| &s.uri == uri) {
                    s.range = shift_range(s.range, e);
                }
            }
            for i in &mut u.invariants {
                i.range = shift_range(i.range, e);
            }
            for (_, r) in &mut u.unreachable {
                *r = shift_range(*r, e);
            }
        }
    }

    /// Installs the verdicts a running unit decided so far (`partial`: decided properties,
    /// computed on the current version, plus pending ones). Into an older result of the unit,
    /// each decided verdict replaces the property's old one (the others stay, stale); without
    /// one, the partial result stands for the unit until its result arrives.
    pub fn install_partial(&mut self, partial: UnitView) {
        let version = partial.version;
        match self.units.get_mut(&partial.root) {
            Some(Some(old)) if old.version != version || old.partial => {
                for mut p in partial.properties.into_iter().filter(|p| !p.pending) {
                    p.decided_at = Some(version);
                    match old.properties.iter_mut().find(|q| q.range == p.range) {
                        Some(q) => *q = p,
                        None => old.properties.push(p),
                    }
                }
                old.partial = true;
            }
            // A current, complete result is not replaced by a partial one.
            Some(Some(_)) => {}
            _ => {
                self.units.insert(partial.root.clone(), Some(partial));
            }
        }
    }

    /// After a job ends without a unit's result (cancelled, abandoned, failed): its pending
    /// properties are no longer being verified, so they are dropped (never "verifying…" with
    /// nothing running); the verdicts it decided stay.
    pub fn drop_pending(&mut self) {
        for u in self.units.values_mut().flatten().filter(|u| u.partial) {
            u.properties.retain(|p| !p.pending);
        }
    }

    /// True when the current text does not parse.
    pub fn broken(&self, version: i32) -> bool {
        self.parse_error.as_ref().is_some_and(|p| p.version == version)
    }
}

/// A property as shown: the combined verdict of every unit that checks it.
#[derive(Clone, Debug)]
pub struct MergedProperty<'a> {
    /// The unit result the verdict comes from (for a violation, the one with the trace).
    pub view: &'a PropertyView,
    pub verdict: Verdict,
    pub stale: bool,
    /// Still being verified, no verdict yet.
    pub pending: bool,
    pub analysis: &'a str,
    pub time_ms: u64,
    pub cached: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Merged<'a> {
    pub properties: Vec<MergedProperty<'a>>,
    pub invariants: Vec<(&'a InvariantView, bool)>,
    pub unreachable: Vec<(Range, bool, &'a str)>,
}

fn key(r: &Range) -> (u32, u32, u32, u32) {
    (r.start.line, r.start.character, r.end.line, r.end.character)
}

/// Combines the unit results of a file at document version `version`.
pub fn merge(state: &FileState, version: i32) -> Merged<'_> {
    let units: Vec<&UnitView> = state.units.values().flatten().collect();
    let mut props: BTreeMap<(u32, u32, u32, u32), MergedProperty<'_>> = BTreeMap::new();
    for u in &units {
        for p in &u.properties {
            let stale = p.decided_at.unwrap_or(u.version) != version;
            let m = MergedProperty {
                view: p,
                verdict: p.verdict,
                stale,
                pending: p.pending,
                analysis: &u.analysis,
                time_ms: p.time_ms,
                cached: u.cached,
            };
            match props.get_mut(&key(&p.range)) {
                None => {
                    props.insert(key(&p.range), m);
                }
                Some(old) => {
                    // A pending property ranks as unknown: never proved while a unit still works on it.
                    let rank = |v: Verdict| match v {
                        Verdict::False => 2,
                        Verdict::Unknown => 1,
                        Verdict::True => 0,
                    };
                    // A fresh violation is current on its own; anything else is as stale as the
                    // stalest unit that contributes to it.
                    let both_stale = old.stale || stale;
                    let pending = old.pending || m.pending;
                    if rank(m.verdict) > rank(old.verdict) || (rank(m.verdict) == rank(old.verdict) && old.stale && !stale) {
                        *old = m;
                    }
                    old.pending = pending && old.verdict != Verdict::False;
                    old.time_ms = old.time_ms.max(p.time_ms);
                    if old.verdict != Verdict::False || old.stale {
                        old.stale = both_stale;
                    }
                }
            }
        }
    }
    // Invariants and dead code: shown when every unit that reaches the function agrees.
    fn reaching<'u, 'v>(units: &'u [&'v UnitView], f: &'u str) -> impl Iterator<Item = &'u &'v UnitView> + 'u {
        units.iter().filter(move |u| u.functions.iter().any(|g| g == f))
    }
    let mut invariants = Vec::new();
    let mut seen_inv = std::collections::BTreeSet::new();
    for u in &units {
        for inv in &u.invariants {
            if !seen_inv.insert((key(&inv.range), inv.expr.clone())) {
                continue;
            }
            let agree = reaching(&units, &inv.function).all(|v| v.invariants.iter().any(|j| j.range == inv.range && j.expr == inv.expr));
            if agree {
                let stale = reaching(&units, &inv.function).any(|v| v.version != version);
                invariants.push((inv, stale));
            }
        }
    }
    let mut unreachable = Vec::new();
    let mut seen_dead = std::collections::BTreeSet::new();
    for u in &units {
        for (f, r) in &u.unreachable {
            if !seen_dead.insert(key(r)) {
                continue;
            }
            if reaching(&units, f).all(|v| v.unreachable.iter().any(|(_, s)| s == r)) {
                let stale = reaching(&units, f).any(|v| v.version != version);
                unreachable.push((*r, stale, u.analysis.as_str()));
            }
        }
    }
    invariants.sort_by_key(|(i, _)| key(&i.range));
    unreachable.sort_by_key(|(r, _, _)| key(r));
    Merged { properties: props.into_values().collect(), invariants, unreachable }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_lsp::lsp_types::Position;

    fn r(line: u32) -> Range {
        Range::new(Position::new(line, 2), Position::new(line, 9))
    }

    fn unit(root: &str, version: i32, functions: &[&str], verdict: Verdict, inv: &str, dead: bool) -> UnitView {
        UnitView {
            root: root.into(),
            version,
            functions: functions.iter().map(|s| s.to_string()).collect(),
            properties: vec![PropertyView {
                function: "f".into(),
                range: r(3),
                verdict,
                message: "m".into(),
                proved_message: "m".into(),
                reason: None,
                trace: vec![],
                time_ms: 1,
                decided_at: None,
                pending: false,
            }],
            invariants: vec![InvariantView {
                function: "f".into(),
                range: r(2),
                expr: inv.into(),
                full: inv.into(),
                source: "value".into(),
                inductive: true,
            }],
            unreachable: if dead { vec![("f".into(), r(4))] } else { vec![] },
            analysis: "value".into(),
            time_ms: 1,
            cached: false,
            partial: false,
        }
    }

    fn state(units: Vec<UnitView>) -> FileState {
        FileState { units: units.into_iter().map(|u| (u.root.clone(), Some(u))).collect(), ..Default::default() }
    }

    #[test]
    fn a_shared_function_is_proved_only_if_every_caller_proves_it() {
        let s = state(vec![
            unit("g", 2, &["g", "f"], Verdict::True, "x == 1", true),
            unit("h", 2, &["h", "f"], Verdict::Unknown, "x == 2", false),
        ]);
        let m = merge(&s, 2);
        assert_eq!(m.properties.len(), 1);
        assert_eq!(m.properties[0].verdict, Verdict::Unknown);
        assert!(m.invariants.is_empty(), "the callers disagree on the invariant");
        assert!(m.unreachable.is_empty(), "dead for one caller only");
        let s =
            state(vec![unit("g", 2, &["g", "f"], Verdict::True, "x == 1", true), unit("h", 2, &["h", "f"], Verdict::True, "x == 1", true)]);
        let m = merge(&s, 2);
        assert_eq!(m.properties[0].verdict, Verdict::True);
        assert_eq!(m.invariants.len(), 1);
        assert_eq!(m.unreachable.len(), 1);
    }

    #[test]
    fn results_of_older_versions_are_stale() {
        let s =
            state(vec![unit("g", 2, &["g", "f"], Verdict::True, "x == 1", true), unit("h", 3, &["h", "f"], Verdict::True, "x == 1", true)]);
        let m = merge(&s, 3);
        assert!(m.properties[0].stale);
        assert!(m.invariants[0].1);
        let s = state(vec![
            unit("g", 2, &["g", "f"], Verdict::True, "x == 1", true),
            unit("h", 3, &["h", "f"], Verdict::False, "x == 1", true),
        ]);
        let m = merge(&s, 3);
        assert_eq!(m.properties[0].verdict, Verdict::False);
        assert!(!m.properties[0].stale, "a current violation stands on its own");
    }

    #[test]
    fn early_verdicts_replace_old_ones_and_pending_ones_are_never_proved() {
        // An older result (version 2) of a unit with two properties.
        let mut old = unit("g", 2, &["g", "f"], Verdict::Unknown, "x == 1", false);
        let mut second = old.properties[0].clone();
        second.range = r(5);
        old.properties.push(second.clone());
        let mut s = state(vec![old]);
        // At version 3 the first property is decided early, the second is still pending.
        let mut partial = unit("g", 3, &["g", "f"], Verdict::True, "x == 1", false);
        partial.partial = true;
        let mut pending = second.clone();
        pending.pending = true;
        partial.properties.push(pending);
        s.install_partial(partial.clone());
        let m = merge(&s, 3);
        assert_eq!((m.properties[0].verdict, m.properties[0].stale), (Verdict::True, false), "decided now");
        assert_eq!(
            (m.properties[1].verdict, m.properties[1].stale, m.properties[1].pending),
            (Verdict::Unknown, true, false),
            "the old verdict, stale"
        );
        // Without an older result the pending property shows as pending, and another unit's
        // proof does not make it proved.
        let mut s = state(vec![unit("h", 3, &["h", "f"], Verdict::True, "x == 1", false)]);
        s.units.get_mut("h").unwrap().as_mut().unwrap().properties[0].range = r(5);
        s.install_partial(partial);
        let m = merge(&s, 3);
        assert_eq!(m.properties[0].verdict, Verdict::True);
        assert!(m.properties[1].pending && m.properties[1].verdict == Verdict::Unknown);
        // The job ends without the unit's result: nothing stays "verifying…".
        s.drop_pending();
        assert!(merge(&s, 3).properties.iter().all(|p| !p.pending));
    }
}
