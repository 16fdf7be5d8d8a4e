//! `HERALD_*` environment variables that nothing reads: a misspelt
//! `HERALD_LISTN` is otherwise ignored without a word, since only the
//! variables that name a configuration key are read as configuration.
//!
//! A name is known when it sets a top-level key of [`Config`] (the keys come
//! from the type itself), when a command-line option reads it (from the
//! `clap` definition of the commands), when the configuration names it as a
//! secret's variable (any `*_env` value, such as `[auth] admin_key_env`), or
//! when it is in [`TOOLING`]: variables the tests, benchmarks and scripts
//! read, which the server never does.

use std::collections::BTreeSet;

use clap::CommandFactory;
use figment::value::Value;

use crate::config::{Config, FILE_ONLY_KEYS};

/// Variables read by the test suites, benchmarks and scripts of this
/// repository, not by `herald` itself: set in a developer's shell, they are
/// not mistakes. Names ending in `_` are prefixes.
pub const TOOLING: &[&str] = &[
    // cargo test: insist on a dependency rather than skip without it.
    "HERALD_REQUIRE_",
    // Benchmarks and long tests: a server to aim at, sizes, seeds.
    "HERALD_BENCH_SERVER",
    "HERALD_GRANTS_BURST",
    "HERALD_DOUBT_WINDOWS",
    "HERALD_FUZZ_",
    "HERALD_TEST_",
    "HERALD_CONFIG_TEST_CHILD",
    "HERALD_PG_BIN",
    // Client generation and checks (clients/, scripts/ci).
    "HERALD_BIN",
    "HERALD_BINARY",
    "HERALD_CLIENTS_",
    "HERALD_CHECK_CN_IN_VENV",
    "HERALD_SCHEMATHESIS_",
    "HERALD_WEBHOOK_FIXTURES",
    "HERALD_FIXTURE_SECRET",
    // Image and compose files.
    "HERALD_IMAGE",
    "HERALD_UID",
    "HERALD_GID",
    "HERALD_OLD",
    "HERALD_EXP_JOURNAL",
    // Set at build time by build.rs.
    "HERALD_COMMIT",
];

/// One variable nothing reads, with the known name it is closest to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    pub name: String,
    pub suggestion: Option<String>,
    /// Why it is not read, when it names a key the environment cannot set.
    pub note: Option<&'static str>,
}

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the environment variable {} is not read", self.name)?;
        if let Some(note) = self.note {
            write!(f, " ({note})")?;
        }
        if let Some(s) = &self.suggestion {
            write!(f, "; did you mean {s}?")?;
        }
        Ok(())
    }
}

/// The `HERALD_*` variables in `vars` that nothing reads. `settings` is the
/// configuration as read (its `*_env` values name more variables).
pub fn unknown(vars: impl IntoIterator<Item = String>, settings: Option<&Value>) -> Vec<Unknown> {
    let keys = Config::top_level_keys();
    let mut exact: BTreeSet<String> = cli_env_names();
    if let Some(v) = settings {
        env_values(v, &mut exact);
    }
    let mut out = Vec::new();
    for name in vars {
        let Some(rest) = name.strip_prefix("HERALD_") else {
            continue;
        };
        if exact.contains(&name) || TOOLING.iter().any(|t| known_tooling(t, &name)) {
            continue;
        }
        let top = rest.split("__").next().unwrap_or("").to_ascii_lowercase();
        if FILE_ONLY_KEYS.contains(&top.as_str()) {
            out.push(Unknown {
                name,
                suggestion: None,
                note: Some("a list of tables is set in the configuration file only"),
            });
            continue;
        }
        if keys.contains(&top.as_str()) {
            // Configuration: figment reads it, and refuses a wrong key below it.
            continue;
        }
        out.push(Unknown {
            suggestion: suggestion(rest, &keys, &exact),
            name,
            note: None,
        });
    }
    out
}

/// The settings as `fig` reads them (defaults, file and variables merged),
/// for their `*_env` values.
pub fn settings_of(fig: &figment::Figment) -> Option<Value> {
    use figment::Provider;
    let data = fig.data().ok()?;
    let dict = data.into_values().next()?;
    Some(Value::Dict(figment::value::Tag::Default, dict))
}

/// Logs a warning for each `HERALD_*` variable nothing reads (at start).
pub fn warn_unknown(file: Option<&std::path::Path>) {
    let settings = Config::figment(file).ok().and_then(|f| settings_of(&f));
    for u in from_process(settings.as_ref()) {
        tracing::warn!(variable = %u.name, suggestion = ?u.suggestion, "{u}");
    }
}

/// The variables named in the environment now.
pub fn from_process(settings: Option<&Value>) -> Vec<Unknown> {
    let vars = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok());
    unknown(vars, settings)
}

fn known_tooling(entry: &str, name: &str) -> bool {
    if entry.ends_with('_') {
        name.starts_with(entry)
    } else {
        name == entry
    }
}

/// What `HERALD_{rest}` was probably meant to be: a key's variable with its
/// first part corrected (`HERALD_ENGIN__WINDOW_MS`), a key's variable
/// nested with one underscore where two are needed
/// (`HERALD_ENGINE_WINDOW_MS`), or a known variable spelt nearly so.
fn suggestion(rest: &str, keys: &[&str], exact: &BTreeSet<String>) -> Option<String> {
    let lower = rest.to_ascii_lowercase();
    let (top, below) = match lower.split_once("__") {
        Some((t, b)) => (t.to_string(), Some(b.to_string())),
        None => (lower.clone(), None),
    };
    let settable = || keys.iter().copied().filter(|k| !FILE_ONLY_KEYS.contains(k));
    if below.is_none() {
        // The longest key the name starts with, then `_`, is a table.
        if let Some(k) = settable()
            .filter(|k| top.starts_with(&format!("{k}_")))
            .max_by_key(|k| k.len())
        {
            let tail = &top[k.len() + 1..];
            return Some(crate::config_errors::env_name(&format!("{k}.{tail}")));
        }
    }
    let by_key = crate::suggest::closest(&top, settable()).map(|k| {
        let mut key = k.to_string();
        if let Some(b) = &below {
            key.push('.');
            key.push_str(&b.replace("__", "."));
        }
        crate::config_errors::env_name(&key)
    });
    let name = format!("HERALD_{rest}");
    let by_name = crate::suggest::closest(&name, exact.iter().map(String::as_str));
    match (by_key, by_name) {
        (Some(k), Some(n)) => {
            if crate::suggest::distance(&name, n) < crate::suggest::distance(&name, &k) {
                Some(n.to_string())
            } else {
                Some(k)
            }
        }
        (k, n) => k.or(n.map(str::to_string)),
    }
}

/// Every variable an option of any `herald` command reads.
fn cli_env_names() -> BTreeSet<String> {
    fn walk(cmd: &clap::Command, out: &mut BTreeSet<String>) {
        for arg in cmd.get_arguments() {
            if let Some(env) = arg.get_env().and_then(|e| e.to_str()) {
                out.insert(env.to_string());
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, out);
        }
    }
    let mut out = BTreeSet::new();
    walk(&crate::Cli::command(), &mut out);
    out
}

/// The values of every `*_env` key at any depth: variables the
/// configuration reads secrets from.
fn env_values(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Dict(_, d) => {
            for (k, v) in d {
                match v {
                    Value::String(_, s) if k.ends_with("_env") => {
                        out.insert(s.clone());
                    }
                    other => env_values(other, out),
                }
            }
        }
        Value::Array(_, items) => items.iter().for_each(|i| env_values(i, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(names: &[&str]) -> Vec<Unknown> {
        let settings = Value::serialize(Config::default()).ok();
        unknown(names.iter().map(|s| s.to_string()), settings.as_ref())
    }

    #[test]
    fn known_names_pass_and_misspelt_ones_get_a_suggestion() {
        let known = [
            "HERALD_LISTEN",
            "HERALD_ENGINE__WINDOW_MS",
            "HERALD_CONFIG",
            "HERALD_KEY",
            "HERALD_ADMIN_KEY",
            "HERALD_SESSION_SECRET",
            "HERALD_MOCK_SECRET",
            "HERALD_REQUIRE_PG",
            "HERALD_BENCH_SERVER",
            "HERALD_TEST_ANYTHING",
            "PATH",
        ];
        assert_eq!(check(&known), vec![]);
        let found = check(&[
            "HERALD_LISTN",
            "HERALD_ENGIN__WINDOW_MS",
            "HERALD_ENGINE_WINDOW_MS",
            "HERALD_ADMIN_KY",
            "HERALD_CHANNELS",
            "HERALD_ZZZZZZZZZZ",
        ]);
        let got: Vec<(&str, Option<&str>)> = found
            .iter()
            .map(|u| (u.name.as_str(), u.suggestion.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("HERALD_LISTN", Some("HERALD_LISTEN")),
                ("HERALD_ENGIN__WINDOW_MS", Some("HERALD_ENGINE__WINDOW_MS")),
                ("HERALD_ENGINE_WINDOW_MS", Some("HERALD_ENGINE__WINDOW_MS")),
                ("HERALD_ADMIN_KY", Some("HERALD_ADMIN_KEY")),
                ("HERALD_CHANNELS", None),
                ("HERALD_ZZZZZZZZZZ", None),
            ]
        );
        assert_eq!(
            found[0].to_string(),
            "the environment variable HERALD_LISTN is not read; did you mean HERALD_LISTEN?"
        );
        assert!(found[4].to_string().contains("configuration file only"));
    }
}
