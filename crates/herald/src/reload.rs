//! Live reload of the configuration, on `SIGHUP` or `POST /v1/admin:reload`:
//! re-reads the file the node started with, validates all of it as a start
//! would, and applies the keys that can change while the node runs (channel
//! limits, quiet hours, credentials and endpoints; engine batch sizes and
//! windows; `[jobs]` worker settings; `[retention]`). Any other changed key
//! is reported as needing a restart and not applied. A file that does not
//! validate changes nothing.

use std::collections::BTreeSet;
use std::path::PathBuf;

use herald_channels::{BuildContext, ChannelConfig};
use herald_engine::{ChannelRetune, ENGINE_LIVE_KEYS, Engine, JOBS_LIVE_KEYS};
use herald_server::{ReloadError, ReloadReport};
use serde_json::{Map, Value};

use crate::config::Config;

/// Reloads one node's configuration; one reload at a time.
pub struct Reloader {
    file: Option<PathBuf>,
    engine: Engine,
    build: BuildContext,
    /// What the process started with: keys that need a restart are compared
    /// with it, since they keep these values until then.
    started: Config,
    /// What runs now: live keys are compared with it.
    running: tokio::sync::Mutex<Config>,
}

impl Reloader {
    pub fn new(
        file: Option<PathBuf>,
        engine: Engine,
        build: BuildContext,
        started: Config,
    ) -> Self {
        Self {
            file,
            engine,
            build,
            running: tokio::sync::Mutex::new(started.clone()),
            started,
        }
    }

    /// Re-reads the file and applies what changed live; logs and counts the
    /// outcome.
    pub async fn reload_now(&self) -> Result<ReloadReport, ReloadError> {
        let result = self.apply().await;
        match &result {
            Ok(r) if r.needs_restart.is_empty() => {
                tracing::info!(applied = ?r.applied, "configuration reloaded");
            }
            Ok(r) => tracing::warn!(
                applied = ?r.applied,
                needs_restart = ?r.needs_restart,
                "configuration reloaded; the keys in needs_restart keep their old values until a restart"
            ),
            Err(e) => tracing::error!(
                error = %e,
                "configuration reload refused; the old configuration keeps running"
            ),
        }
        herald_server::reload::count(&result);
        result
    }

    async fn apply(&self) -> Result<ReloadReport, ReloadError> {
        let Some(file) = &self.file else {
            return Err(ReloadError::NoFile);
        };
        let mut running = self.running.lock().await;
        let new = Config::load(Some(file)).map_err(|e| ReloadError::Invalid(format!("{e:#}")))?;
        let plan = Plan::of(&self.started, &running, &new);
        // Every changed channel is built before anything is applied: one that
        // cannot be (a secret's variable unset) refuses the whole reload.
        let mut channels = Vec::new();
        for name in &plan.channels {
            let (Some(old), Some(c)) = (channel(&running, name), channel(&new, name)) else {
                continue;
            };
            let spec = crate::runtime_spec::channel_spec(c, &self.build)
                .map_err(|e| ReloadError::Invalid(format!("{e:#}")))?;
            channels.push(ChannelRetune {
                spec,
                credentials_changed: old.provider != c.provider,
            });
        }
        self.engine
            .retune(&crate::runtime_spec::engine_config(&new), channels)
            .await
            .map_err(|e| ReloadError::Failed(e.to_string()))?;
        *running = new;
        Ok(ReloadReport {
            applied: plan.applied,
            needs_restart: plan.needs_restart,
        })
    }
}

#[async_trait::async_trait]
impl herald_server::Reload for Reloader {
    async fn reload(&self) -> Result<ReloadReport, ReloadError> {
        self.reload_now().await
    }
}

fn channel<'a>(cfg: &'a Config, name: &str) -> Option<&'a ChannelConfig> {
    cfg.channels.iter().find(|c| c.name() == name)
}

/// What a new configuration changes.
#[derive(Debug, Default, PartialEq)]
struct Plan {
    /// Live keys whose value differs from what runs.
    applied: Vec<String>,
    /// Other keys whose value differs from what the process started with.
    needs_restart: Vec<String>,
    /// Channels with a live change: rebuilt and handed to the engine.
    channels: BTreeSet<String>,
}

impl Plan {
    fn of(started: &Config, running: &Config, new: &Config) -> Plan {
        // Channels this node runs and still of the same kind: their keys are live.
        let running_channels: BTreeSet<&str> = started
            .channels
            .iter()
            .filter(|c| channel(new, c.name()).is_some_and(|n| n.kind() == c.kind()))
            .map(|c| c.name())
            .collect();
        let live = |key: &str| is_live(key, &running_channels);
        let mut plan = Plan::default();
        for key in changed_keys(running, new) {
            if live(&key) {
                if let Some(name) = key
                    .strip_prefix("channels.")
                    .and_then(|k| k.split('.').next())
                {
                    plan.channels.insert(name.to_string());
                }
                plan.applied.push(key);
            }
        }
        plan.needs_restart = changed_keys(started, new)
            .into_iter()
            .filter(|k| !live(k))
            .collect();
        plan
    }
}

/// Whether a reload applies `key` (dotted, channels by name). A channel's
/// keys are live while it runs on this node, except its kind and tenants;
/// adding or removing a channel needs a restart.
fn is_live(key: &str, channels: &BTreeSet<&str>) -> bool {
    let (top, rest) = key.split_once('.').unwrap_or((key, ""));
    let first = rest.split('.').next().unwrap_or("");
    match top {
        "engine" => ENGINE_LIVE_KEYS.contains(&first),
        "jobs" => JOBS_LIVE_KEYS.contains(&first),
        "retention" => true,
        "reminders" => matches!(first, "merge_window_ms" | "early_window_ms"),
        "channels" => match rest.split_once('.') {
            Some((name, k)) => {
                let k = k.split('.').next().unwrap_or(k);
                channels.contains(name) && !matches!(k, "kind" | "tenants" | "name")
            }
            None => false,
        },
        _ => false,
    }
}

/// Every key whose value differs, dotted (`channels.NAME.rate_per_sec`); a
/// table or channel present on one side only is one key.
fn changed_keys(old: &Config, new: &Config) -> Vec<String> {
    let mut out = Vec::new();
    diff("", &view(old), &view(new), &mut out);
    out
}

/// The configuration as a tree of values, channels keyed by name.
fn view(cfg: &Config) -> Value {
    let mut v = serde_json::to_value(cfg).unwrap_or(Value::Null);
    if let Some(obj) = v.as_object_mut() {
        let by_name: Map<String, Value> = cfg
            .channels
            .iter()
            .map(|c| {
                let table = serde_json::to_value(c).unwrap_or(Value::Null);
                (c.name().to_string(), table)
            })
            .collect();
        obj.insert("channels".into(), Value::Object(by_name));
    }
    v
}

fn diff(prefix: &str, old: &Value, new: &Value, out: &mut Vec<String>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => diff(&key, x, y, out),
                    _ => out.push(key),
                }
            }
        }
        (a, b) if a != b => out.push(prefix.to_string()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(toml: &str) -> Config {
        try_load(toml).unwrap()
    }

    fn try_load(toml: &str) -> anyhow::Result<Config> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("h.toml");
        std::fs::write(&path, toml)?;
        Config::load(Some(&path))
    }

    const BASE: &str = r#"
listen = "127.0.0.1:9000"
shards = 16
[engine]
fetch_batch = 500
max_inflight = 1000
[jobs]
segment_size = 100
workers = 2
[retention]
timers = "7d"
[[channels]]
name = "hooks"
kind = "webhook"
url = "http://127.0.0.1:9001/hook"
rate_per_sec = 20
concurrency = 4
[[channels]]
name = "log"
kind = "log"
"#;

    fn plan(old: &str, new: &str) -> Plan {
        let (old, new) = (load(old), load(new));
        Plan::of(&old, &old, &new)
    }

    #[test]
    fn the_same_file_changes_nothing() {
        assert_eq!(plan(BASE, BASE), Plan::default());
    }

    #[test]
    fn live_keys_apply_and_the_others_wait_for_a_restart() {
        let new = BASE
            .replace("127.0.0.1:9000", "127.0.0.1:9100")
            .replace("shards = 16", "shards = 32")
            .replace("fetch_batch = 500", "fetch_batch = 800")
            .replace("max_inflight = 1000", "max_inflight = 2000")
            .replace("segment_size = 100", "segment_size = 300")
            .replace("workers = 2", "workers = 3")
            .replace("timers = \"7d\"", "timers = \"1d\"")
            .replace("rate_per_sec = 20", "rate_per_sec = 100")
            .replace("http://127.0.0.1:9001/hook", "http://127.0.0.1:9002/hook")
            + "[channels.quiet_hours]\nstart = \"22:00\"\nend = \"07:00\"\ntimezone = \"UTC\"\n";
        let p = plan(BASE, &new);
        for key in [
            "channels.hooks.rate_per_sec",
            "channels.hooks.url",
            "engine.fetch_batch",
            "jobs.segment_size",
            "retention.timers",
            "channels.log.quiet_hours",
        ] {
            assert!(p.applied.iter().any(|k| k == key), "{key}: {p:?}");
        }
        assert_eq!(p.applied.len(), 6, "{p:?}");
        assert_eq!(
            p.needs_restart,
            ["engine.max_inflight", "jobs.workers", "listen", "shards"]
        );
        assert!(p.channels.contains("hooks"), "{p:?}");
    }

    #[test]
    fn a_channel_added_or_retyped_needs_a_restart() {
        let added = format!("{BASE}[[channels]]\nname = \"more\"\nkind = \"log\"\n");
        let p = plan(BASE, &added);
        assert_eq!(p.needs_restart, ["channels.more"]);
        assert!(p.applied.is_empty() && p.channels.is_empty(), "{p:?}");
        let retyped = BASE.replace(
            "name = \"log\"\nkind = \"log\"",
            "name = \"log\"\nkind = \"webhook\"\nurl = \"http://127.0.0.1:1/\"",
        );
        let p = plan(BASE, &retyped);
        assert_eq!(p.needs_restart, ["channels.log.kind", "channels.log.url"]);
        assert!(p.applied.is_empty() && p.channels.is_empty(), "{p:?}");
    }

    /// A key applied once is not reported again; one that needs a restart
    /// is, until the process restarts.
    #[test]
    fn later_reloads_compare_live_keys_with_what_runs() {
        let started = load(BASE);
        let first = load(
            &BASE
                .replace("rate_per_sec = 20", "rate_per_sec = 100")
                .replace("shards = 16", "shards = 8"),
        );
        let p = Plan::of(&started, &first, &first);
        assert!(p.applied.is_empty(), "{p:?}");
        assert_eq!(p.needs_restart, ["shards"]);
    }

    #[test]
    fn trace_export_settings_need_a_restart() {
        let p = plan(BASE, &format!("{BASE}[telemetry]\nsample_ratio = 0.5\n"));
        assert_eq!(p.needs_restart, ["telemetry.sample_ratio"]);
        assert!(p.applied.is_empty(), "{p:?}");
    }

    #[test]
    fn a_broken_file_is_refused_naming_the_key() {
        for (bad, key) in [
            ("fetch_batch = 500", "fetch_batch = \"many\""),
            ("rate_per_sec = 20", "rate_per_sec = \"fast\""),
            ("timers = \"7d\"", "timers = \"soon\""),
        ] {
            let err = format!("{:#}", try_load(&BASE.replace(bad, key)).unwrap_err());
            let name = key.split(' ').next().unwrap();
            assert!(err.contains(name), "{key}: {err}");
        }
    }
}
