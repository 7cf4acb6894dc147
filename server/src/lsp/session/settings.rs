//! The server's settings (section `cpals` of `workspace/configuration`, also accepted as
//! `initializationOptions.settings`): analysis, trigger, debounce, timeout per file, worker
//! count, data model, native execution, the compilation database, whether allocations may
//! fail. Every setting applies to the next job without a restart.

use std::path::PathBuf;
use std::time::Duration;

use analysis_engine::cfa::DataModel;
use analysis_engine::config::NativeExecution;
use analysis_engine::Analysis;
use serde_json::Value;

/// When files are verified (opening a file always verifies it, except with `Manual`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// On save (the default); edits only re-parse and reuse cached results.
    OnSave,
    /// After each edit, once the debounce has passed (and on save).
    OnChange,
    /// Only through the `cpals.verifyFile` / `cpals.verifyFunction` commands.
    Manual,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub analysis: Analysis,
    pub trigger: Trigger,
    /// Quiet time after an edit before the file is re-parsed (and, with `OnChange`, verified).
    pub debounce: Duration,
    /// Time limit of one job (all units of a file).
    pub timeout: Duration,
    /// Jobs (files) verified at the same time.
    pub workers: usize,
    pub data_model: DataModel,
    /// Show proved properties as Information (`true`) or Hint (`false`, the default).
    pub proved_as_information: bool,
    /// Whether long counterexamples may be confirmed by running the program in the sandbox.
    pub native: NativeExecution,
    /// The compilation database (`compile_commands.json`, or a folder holding one) every file
    /// is built with; `None` (the default): each file's own, found as clangd finds it. A
    /// relative path is resolved against the workspace's root folder.
    pub compile_commands: Option<PathBuf>,
    /// Whether allocations are assumed never to return null (`--assume-allocations-succeed`).
    pub allocations_succeed: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        Settings {
            analysis: Analysis::Combined,
            trigger: Trigger::OnSave,
            debounce: Duration::from_millis(300),
            timeout: Duration::from_secs(30),
            workers: cores.clamp(1, 4),
            data_model: DataModel::Lp64,
            proved_as_information: false,
            native: NativeExecution::Sandboxed,
            compile_commands: None,
            allocations_succeed: false,
        }
    }
}

impl Settings {
    /// Settings from a JSON object (keys missing or `null` keep `self`'s value). Invalid values
    /// are reported and keep the previous value.
    pub fn updated(&self, v: &Value) -> (Settings, Vec<String>) {
        let mut s = self.clone();
        let mut errors = Vec::new();
        let Some(obj) = v.as_object() else {
            // Lua clients encode an empty table as `[]`.
            if !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()) {
                errors.push(format!("cpals settings must be an object, got {v}"));
            }
            return (s, errors);
        };
        for (key, val) in obj {
            if val.is_null() {
                continue;
            }
            let bad = |errors: &mut Vec<String>, what: &str| errors.push(format!("setting `cpals.{key}`: {what}, got {val}"));
            match key.as_str() {
                "analysis" => match val.as_str().and_then(Analysis::parse) {
                    Some(a) => s.analysis = a,
                    None => bad(&mut errors, "unknown analysis"),
                },
                "trigger" => match val.as_str() {
                    Some("onSave") => s.trigger = Trigger::OnSave,
                    Some("onChange") => s.trigger = Trigger::OnChange,
                    Some("manual") => s.trigger = Trigger::Manual,
                    _ => bad(&mut errors, "expected \"onSave\", \"onChange\" or \"manual\""),
                },
                "debounceMs" => match val.as_u64().filter(|&ms| ms <= 60_000) {
                    Some(ms) => s.debounce = Duration::from_millis(ms),
                    None => bad(&mut errors, "expected milliseconds between 0 and 60000"),
                },
                "timeoutSeconds" => match val.as_f64().filter(|t| *t > 0.0 && *t <= 86_400.0) {
                    Some(t) => s.timeout = Duration::from_secs_f64(t),
                    None => bad(&mut errors, "expected a positive number of seconds"),
                },
                "workers" => match val.as_u64().filter(|&n| (1..=64).contains(&n)) {
                    Some(n) => s.workers = n as usize,
                    None => bad(&mut errors, "expected a worker count between 1 and 64"),
                },
                "dataModel" => match val.as_str().map(crate::messages::parse_model) {
                    Some(Ok(m)) => s.data_model = m,
                    _ => bad(&mut errors, "expected \"LP64\" or \"ILP32\""),
                },
                "provedSeverity" => match val.as_str() {
                    Some("hint") => s.proved_as_information = false,
                    Some("information") => s.proved_as_information = true,
                    _ => bad(&mut errors, "expected \"hint\" or \"information\""),
                },
                "nativeExecution" => match val.as_str() {
                    Some("sandboxed") => s.native = NativeExecution::Sandboxed,
                    Some("off") => s.native = NativeExecution::Off,
                    _ => bad(&mut errors, "expected \"sandboxed\" or \"off\""),
                },
                "compileCommands" => match val.as_str() {
                    Some("") => s.compile_commands = None,
                    Some(p) => s.compile_commands = Some(PathBuf::from(p)),
                    None => bad(&mut errors, "expected the path of a compile_commands.json (or \"\" to find it)"),
                },
                "assumeAllocationsSucceed" => match val.as_bool() {
                    Some(b) => s.allocations_succeed = b,
                    None => bad(&mut errors, "expected true or false"),
                },
                _ => errors.push(format!("unknown setting `cpals.{key}`")),
            }
        }
        (s, errors)
    }

    /// What a verification result depends on (part of the cache key).
    pub fn fingerprint(&self) -> String {
        format!(
            "{}|{}|{}ms|native:{:?}|allocations:{}",
            self.analysis.name(),
            self.data_model.name(),
            self.timeout.as_millis(),
            self.native,
            if self.allocations_succeed { "succeed" } else { "may-fail" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_update_and_reject_bad_values() {
        let base = Settings::default();
        let (s, errs) =
            base.updated(&json!({"trigger": "onChange", "debounceMs": 0, "workers": 3, "timeoutSeconds": 2.5, "dataModel": "ILP32", "nativeExecution": "off"}));
        assert!(errs.is_empty(), "{errs:?}");
        let (a, errs) = base.updated(&json!({"assumeAllocationsSucceed": true}));
        assert!(errs.is_empty() && a.allocations_succeed, "{errs:?}");
        assert_ne!(a.fingerprint(), base.fingerprint(), "proofs that assume allocations succeed are not reused without it");
        let (_, errs) = base.updated(&json!({"assumeAllocationsSucceed": "yes"}));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(s.native, NativeExecution::Off);
        assert_ne!(s.fingerprint(), base.fingerprint(), "results computed without native runs are not reused with them");
        assert_eq!(s.trigger, Trigger::OnChange);
        assert_eq!(s.debounce, Duration::ZERO);
        assert_eq!(s.workers, 3);
        assert_eq!(s.timeout, Duration::from_millis(2500));
        assert_eq!(s.data_model, DataModel::Ilp32);
        let (t, errs) = s.updated(&json!({"trigger": "sometimes", "workers": 0, "colour": 1, "analysis": null, "nativeExecution": "yes"}));
        assert_eq!(errs.len(), 4, "{errs:?}");
        assert_eq!(t, s, "invalid values keep the previous ones");
        // An empty Lua table arrives as `[]`: no settings, no error; other arrays are errors.
        assert_eq!(s.updated(&json!([])), (s.clone(), vec![]));
        assert_eq!(s.updated(&json!([1])).1.len(), 1);
        let (t, errs) = s.updated(&json!({"compileCommands": "/p/build/compile_commands.json"}));
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(t.compile_commands.as_deref(), Some(std::path::Path::new("/p/build/compile_commands.json")));
        assert_eq!(t.updated(&json!({"compileCommands": ""})).0.compile_commands, None, "\"\": found as clangd finds it");
        assert_eq!(t.updated(&json!({"compileCommands": 3})).1.len(), 1);
    }
}
