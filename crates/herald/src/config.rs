//! Configuration: built-in defaults, then a TOML file (`--config` or
//! `HERALD_CONFIG`), then `HERALD_*` environment variables
//! (`HERALD_LISTEN`, `HERALD_STORE`, `HERALD_ENGINE__WINDOW_MS`, ...).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::bail;
use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use herald_channels::ChannelConfig;
use herald_engine::campaign::CampaignConfig;
use herald_engine::retention::RetentionConfig;
use herald_engine::{EngineConfig, TenantLimits};
use herald_server::{ApiConfig, AuthConfig, RemindersConfig};
use herald_store::StoreOptions;
use serde::{Deserialize, Serialize};

use crate::telemetry::TelemetryConfig;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Address the HTTP API listens on.
    pub listen: String,
    /// `sqlite://PATH`.
    pub store: String,
    /// This node's name in the cluster; the host name when unset.
    pub node_id: Option<String>,
    /// Virtual shards, fixed when the store is first created.
    pub shards: u16,
    pub channels: Vec<ChannelConfig>,
    pub engine: EngineConfig,
    pub api: ApiConfig,
    /// Who may call: the admin key's variable, and open mode's hosts.
    pub auth: AuthConfig,
    pub store_options: StoreOptions,
    pub reminders: RemindersConfig,
    /// Rule planning and mass sends.
    pub jobs: CampaignConfig,
    /// How long finished work is kept before the retention sweeper deletes it.
    pub retention: RetentionConfig,
    /// Limits by tenant name (`[tenants.shop]`); a tenant not listed has
    /// none and weighs 1.
    pub tenants: BTreeMap<String, TenantSettings>,
    /// Frequency caps per recipient (`[[caps]]`), checked when a send to a
    /// user fires; see `herald_core::caps`.
    pub caps: Vec<herald_core::caps::CapConfig>,
    /// Rate limits per caller-given key (`[[rate_limits]]`), checked when a
    /// timer carrying a `rate_key` fires; see `herald_core::pacing`.
    pub rate_limits: Vec<herald_core::pacing::RateLimitConfig>,
    /// OpenTelemetry trace export (off unless an endpoint is set).
    pub telemetry: TelemetryConfig,
    /// Default fallback routes (`[routing.default]`, `[routing.tenants.NAME]`).
    pub routing: herald_server::default_routes::RoutingConfig,
    /// What the audit log records beyond every change of control.
    pub audit: AuditConfig,
}

/// `[audit]`: every control-plane change is always recorded; creating
/// data one record at a time only when asked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    /// Also record each single `POST /v1/timers`, `POST /v1/reminders` and
    /// `PUT /v1/subscribers/{user_id}` (an entry each; off by default).
    pub data_plane: bool,
}

/// One tenant's limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TenantSettings {
    /// Most timers pending at once (reminders count, through their
    /// timers); a create beyond it is refused with `429`. Unset: no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_pending: Option<u64>,
    /// Most deliveries per second, on each node. Unset: no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_per_sec: Option<f64>,
    /// Share of dispatch turns against other tenants with due timers.
    pub weight: u32,
}

impl Default for TenantSettings {
    fn default() -> Self {
        Self {
            max_pending: None,
            rate_per_sec: None,
            weight: 1,
        }
    }
}

impl TenantSettings {
    /// What the engine's dispatch takes of these settings.
    pub fn limits(&self) -> TenantLimits {
        TenantLimits {
            weight: self.weight,
            rate_per_sec: self.rate_per_sec,
        }
    }

    fn validate(&self, name: &str) -> Result<(), String> {
        if let Some(problem) = herald_core::tenant::tenant_name_problem(name) {
            return Err(format!("[tenants.{name}]: {problem}"));
        }
        if self.weight == 0 {
            return Err(format!("tenants.{name}.weight must be at least 1"));
        }
        if let Some(r) = self.rate_per_sec
            && !(r.is_finite() && r > 0.0)
        {
            return Err(format!(
                "tenants.{name}.rate_per_sec must be a positive number"
            ));
        }
        Ok(())
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8780".into(),
            store: "sqlite://./herald-data/herald.db".into(),
            node_id: None,
            shards: herald_core::shard::DEFAULT_SHARDS,
            channels: Vec::new(),
            engine: EngineConfig::default(),
            api: ApiConfig::default(),
            auth: AuthConfig::default(),
            store_options: StoreOptions::default(),
            reminders: RemindersConfig::default(),
            jobs: CampaignConfig::default(),
            retention: RetentionConfig::default(),
            tenants: BTreeMap::new(),
            caps: Vec::new(),
            rate_limits: Vec::new(),
            telemetry: TelemetryConfig::default(),
            routing: Default::default(),
            audit: AuditConfig::default(),
        }
    }
}

/// Top-level keys that hold lists (`[[channels]]`): set in the file only,
/// since an environment variable cannot spell a list of tables.
pub const FILE_ONLY_KEYS: &[&str] = &["channels", "caps", "rate_limits"];

/// Most passes [`Config::check`] makes, each after setting aside the key
/// the last one refused; a bound, not a number a real file reaches.
const MAX_PASSES: usize = 64;

impl Config {
    /// The top-level keys, as the type itself declares them: read from the
    /// refusal of a key no configuration has, so the list cannot go stale.
    pub fn top_level_keys() -> Vec<&'static str> {
        let probe = BTreeMap::from([("\u{1}", 0)]);
        match Figment::from(Serialized::defaults(probe)).extract::<Config>() {
            Err(e) => e
                .into_iter()
                .find_map(|e| match e.kind {
                    figment::error::Kind::UnknownField(_, known) => Some(known.to_vec()),
                    _ => None,
                })
                .unwrap_or_default(),
            Ok(_) => Vec::new(),
        }
    }

    /// Defaults, then the file, then the `HERALD_*` variables that name a
    /// top-level key (others, such as `HERALD_CONFIG`, are not configuration).
    pub fn figment(file: Option<&Path>) -> anyhow::Result<Figment> {
        let mut fig = Figment::from(Serialized::defaults(Config::default()));
        if let Some(path) = file {
            if !path.exists() {
                bail!("config file {} does not exist", path.display());
            }
            fig = fig.merge(Toml::file_exact(path));
        }
        let keys: Vec<&str> = Self::top_level_keys()
            .into_iter()
            .filter(|k| !FILE_ONLY_KEYS.contains(k))
            .collect();
        // figment hands the filter the variable's own (upper-case) spelling.
        let env = Env::prefixed("HERALD_").split("__").filter(move |k| {
            let top = k
                .as_str()
                .split('.')
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            keys.contains(&top.as_str())
        });
        Ok(fig.merge(env))
    }

    pub fn load(file: Option<&Path>) -> anyhow::Result<Config> {
        Self::check(file).map_err(|problems| match problems.as_slice() {
            [one] => anyhow::anyhow!("invalid configuration: {one}"),
            many => anyhow::anyhow!(
                "invalid configuration, {} problems:\n  {}",
                many.len(),
                many.join("\n  ")
            ),
        })
    }

    /// Reads the configuration and lists every problem found, not only the
    /// first: each refused key is set aside and the rest read again, and
    /// every check of the values is made. Values are checked only when the
    /// keys were all read, or set aside as unknown (setting aside a value
    /// of the wrong type would check its default in its place).
    pub fn check(file: Option<&Path>) -> Result<Config, Vec<String>> {
        let fig = Self::figment(file).map_err(|e| vec![format!("{e:#}")])?;
        let mut problems = Vec::new();
        let mut only_unknown_keys = true;
        let mut current = fig.clone();
        let mut cfg = None;
        for _ in 0..MAX_PASSES {
            match current.extract::<Config>() {
                Ok(c) => {
                    cfg = Some(c);
                    break;
                }
                Err(e) => {
                    let mut set_aside = Vec::new();
                    for one in e {
                        let key = crate::config_errors::key_of(&one);
                        problems.push(crate::config_errors::describe(&one, &key, &fig));
                        if !matches!(one.kind, figment::error::Kind::UnknownField(..)) {
                            only_unknown_keys = false;
                        }
                        set_aside.push(key);
                    }
                    match crate::config_errors::without(&current, &set_aside) {
                        Some(next) => current = next,
                        None => break,
                    }
                }
            }
        }
        let Some(mut cfg) = cfg else {
            return Err(problems);
        };
        if cfg.channels.is_empty() {
            cfg.channels.push(ChannelConfig::log("log"));
            // Out of the box, reminders of every type go to the log too.
            if cfg.reminders.default_channel.is_none() {
                cfg.reminders.default_channel = Some("log".into());
            }
        }
        if only_unknown_keys {
            problems.extend(cfg.problems());
        }
        if problems.is_empty() {
            Ok(cfg)
        } else {
            Err(problems)
        }
    }

    /// Refuses a reminder route that cannot produce a message its channel
    /// sends (a WeChat channel with neither a template for the type nor a
    /// `reminder_template`): every such reminder would fail when it fires.
    /// Reminders that name their own channel are checked when subscribed.
    fn check_reminder_routes(&self) -> anyhow::Result<()> {
        let channel = |n: &str| self.channels.iter().find(|c| c.name() == n);
        for (t, name) in
            herald_server::reminder_routes::routes(&self.reminders, |n| channel(n).is_some())
        {
            let Some(c) = channel(&name) else { continue };
            herald_server::reminder_routes::check(
                t,
                &name,
                c.kind(),
                c.common.reminder_template.as_ref(),
                &self.reminders,
                None,
            )
            .map_err(|p| anyhow::anyhow!("[reminders]: {}", p.message()))?;
        }
        Ok(())
    }

    /// Every problem with the values, each in its own words.
    fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut check = |r: anyhow::Result<()>| {
            if let Err(e) = r {
                out.push(format!("{e:#}"));
            }
        };
        if self.shards == 0 {
            check(Err(anyhow::anyhow!("shards must be at least 1")));
        }
        let mut names = std::collections::HashSet::new();
        for c in &self.channels {
            if !names.insert(c.name()) {
                check(Err(anyhow::anyhow!(
                    "two channels are named {:?}",
                    c.name()
                )));
            }
        }
        let reminders = self
            .reminders
            .validate(|c| names.contains(c))
            .map_err(anyhow::Error::msg);
        let reminders_ok = reminders.is_ok();
        check(reminders);
        // Routes are read against the reminder settings just checked.
        if reminders_ok {
            check(self.check_reminder_routes());
        }
        check(self.auth.validate().map_err(anyhow::Error::msg));
        check(self.api.validate().map_err(anyhow::Error::msg));
        check(self.telemetry.validate().map_err(anyhow::Error::msg));
        for (name, t) in &self.tenants {
            check(t.validate(name).map_err(anyhow::Error::msg));
        }
        check(self.validate_caps());
        check(self.validate_routing());
        let j = &self.jobs;
        if j.lease_ms < 1_000 || j.lease_guard_ms < 0 || j.lease_guard_ms * 2 >= j.lease_ms {
            check(Err(anyhow::Error::msg(
                "jobs.lease_ms must be at least 1000 and more than twice jobs.lease_guard_ms",
            )));
        }
        if j.segment_size == 0 || j.segment_size > 100_000 {
            check(Err(anyhow::Error::msg(
                "jobs.segment_size must be 1..=100000",
            )));
        }
        if j.max_attempts == 0 || j.record_every == 0 || j.worker_concurrency == 0 {
            check(Err(anyhow::Error::msg(
                "jobs.max_attempts, jobs.record_every and jobs.worker_concurrency must be at least 1",
            )));
        }
        if j.doubt_window == 0 || j.doubt_window > 100_000 {
            check(Err(anyhow::Error::msg(
                "jobs.doubt_window must be 1..=100000",
            )));
        }
        if self.retention.interval_ms < 1_000 {
            check(Err(anyhow::Error::msg(
                "retention.interval_ms must be at least 1000",
            )));
        }
        if !(1..=10_000).contains(&self.retention.batch) {
            check(Err(anyhow::Error::msg(
                "retention.batch must be between 1 and 10000",
            )));
        }
        if self.engine.window_ms < 1_000 {
            check(Err(anyhow::Error::msg(
                "engine.window_ms must be at least 1000",
            )));
        }
        out
    }

    /// Checks each `[[caps]]` and `[[rate_limits]]` entry (errors name
    /// `caps[N].key`), that no two of a list share a name (the name keys
    /// their counters), and their tenant names.
    fn validate_caps(&self) -> anyhow::Result<()> {
        let mut names = std::collections::HashSet::new();
        for (i, c) in self.caps.iter().enumerate() {
            c.rule(i, None)?;
            if !names.insert(c.name.as_str()) {
                bail!("caps[{i}].name: another cap is named {:?}", c.name);
            }
            for t in c.tenants.iter().flatten() {
                if let Some(problem) = herald_core::tenant::tenant_name_problem(t) {
                    bail!("caps[{i}].tenants: {t:?}: {problem}");
                }
            }
        }
        let mut names = std::collections::HashSet::new();
        for (i, r) in self.rate_limits.iter().enumerate() {
            r.rule(i, None)?;
            if !names.insert(r.name.as_str()) {
                bail!(
                    "rate_limits[{i}].name: another rate limit is named {:?}",
                    r.name
                );
            }
            for t in r.tenants.iter().flatten() {
                if let Some(problem) = herald_core::tenant::tenant_name_problem(t) {
                    bail!("rate_limits[{i}].tenants: {t:?}: {problem}");
                }
            }
        }
        Ok(())
    }

    /// Checks the default fallback routes against the channels (errors
    /// name the key, as `routing.default.route[1].on[0]`) and their tenant
    /// names.
    fn validate_routing(&self) -> anyhow::Result<()> {
        for t in self.routing.tenants.keys() {
            if let Some(problem) = herald_core::tenant::tenant_name_problem(t) {
                bail!("[routing.tenants.{t}]: {problem}");
            }
        }
        let names: Vec<String> = self.channels.iter().map(|c| c.name().to_string()).collect();
        let type_of = |n: &str| {
            self.channels
                .iter()
                .find(|c| c.name() == n)
                .map(|c| c.kind().channel_type())
        };
        self.routing
            .check(&self.reminders, &names, type_of)
            .map_err(anyhow::Error::msg)
    }

    /// This node's id: the configured one, else the host name. A stable default
    /// matters: a node restarted under the same id renews its own shard leases
    /// at once, where a new id would wait for them to expire. Several nodes on
    /// one host must each set `node_id`.
    pub fn node_id(&self) -> String {
        self.node_id.clone().unwrap_or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "herald".to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_embedded_setup() {
        let c = Config::load(None).unwrap();
        assert_eq!(c.listen, "127.0.0.1:8780");
        assert!(c.store.starts_with("sqlite://"));
        assert_eq!(c.channels.len(), 1);
        assert_eq!(c.channels[0].name(), "log");
        assert_eq!(c.reminders.default_channel.as_deref(), Some("log"));
        assert_eq!(c.reminders.merge_window_ms, 60_000);
    }

    #[test]
    fn file_then_env() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.toml");
        std::fs::write(
            &path,
            r#"
listen = "127.0.0.1:9999"
[engine]
window_ms = 5000
[[channels]]
name = "hooks"
kind = "webhook"
url = "http://127.0.0.1:9000/hook"
"#,
        )
        .unwrap();
        let c = Config::load(Some(&path)).unwrap();
        assert_eq!(c.listen, "127.0.0.1:9999");
        assert_eq!(c.engine.window_ms, 5000);
        assert_eq!(c.channels[0].name(), "hooks");
        std::fs::write(&path, "listne = 1\n").unwrap();
        let err = format!("{:#}", Config::load(Some(&path)).unwrap_err());
        assert!(err.contains("listne"), "{err}");
    }

    #[test]
    fn retention_reads_durations_and_names_a_bad_field() {
        let c = load_str("[retention]\ntimers = \"7d\"\naudit_log = 0\n").unwrap();
        assert_eq!(c.retention.timers, herald_engine::retention::Keep::days(7));
        assert!(c.retention.audit_log.forever());
        assert_eq!(c.retention.jobs, herald_engine::retention::Keep::days(30));
        assert_eq!(c.retention.batch, herald_engine::retention::DEFAULT_BATCH);
        for bad in [
            "timers = \"-1d\"",
            "send_log = \"soon\"",
            "tasks = -5",
            "batch = 0",
            "batch = 10001",
        ] {
            let err = format!(
                "{:#}",
                load_str(&format!("[retention]\n{bad}\n")).unwrap_err()
            );
            let field = bad.split(' ').next().unwrap();
            assert!(err.contains(field), "{bad}: {err}");
        }
    }

    #[test]
    fn caps_read_and_a_bad_one_names_its_key() {
        let c = load_str(
            "[[caps]]\nname = \"marketing\"\ntopic = \"marketing\"\nmax = 3\nwindow = \"24h\"\n\
             [[caps]]\nname = \"per-type\"\nper_channel_type = true\nmax = 1\nwindow = \"10m\"\n\
             tenants = [\"shop\"]\non_cap = \"defer\"\n",
        )
        .unwrap();
        assert_eq!(c.caps.len(), 2);
        assert_eq!(c.caps[1].on_cap, herald_core::caps::OnCap::Defer);
        for (bad, key) in [
            ("max = 0\nwindow = \"1h\"", "caps[0].max"),
            ("max = 1\nwindow = \"often\"", "caps[0].window"),
            (
                "max = 1\nwindow = \"1h\"\nchannel_type = \"fax\"",
                "caps[0].channel_type",
            ),
            (
                "max = 1\nwindow = \"1h\"\ntenants = [\"a b\"]",
                "caps[0].tenants",
            ),
            ("max = 1\nwindow = \"1h\"\non_cap = \"later\"", "on_cap"),
        ] {
            let err = format!(
                "{:#}",
                load_str(&format!("[[caps]]\nname = \"c\"\n{bad}\n")).unwrap_err()
            );
            assert!(err.contains(key), "{bad}: {err}");
        }
        let twice = "[[caps]]\nname = \"c\"\nmax = 1\nwindow = \"1h\"\n";
        let err = format!("{:#}", load_str(&format!("{twice}{twice}")).unwrap_err());
        assert!(err.contains("caps[1].name"), "{err}");
    }

    fn load_str(toml: &str) -> anyhow::Result<Config> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("h.toml");
        std::fs::write(&path, toml)?;
        Config::load(Some(&path))
    }

    /// Every kind with the keys it took before channel sections were typed.
    const EVERY_KIND: &str = r#"
[[channels]]
name = "hooks"
kind = "webhook"
url = "http://127.0.0.1:9000/hook"
secret_env = "HOOKS_SECRET"
ca_file = "/etc/herald/internal-ca.pem"
concurrency = 64
rate_per_sec = 500
timeout_ms = 3000
max_attempts = 4
backoff_base_ms = 100
backoff_max_ms = 400
backoff_jitter = 0.25

[[channels]]
name = "wx"
kind = "wechat"
api_base = "http://127.0.0.1:9001"
appid = "wx1234567890"
secret = "wx-app-secret"
token_mode = "classic"
reminder_template = { template_id = "TPL", data = { first = { value = "{subject}" } } }
[channels.quiet_hours]
start = "22:00"
end = "08:00"
timezone = "Asia/Shanghai"
policy = "drop"

[[channels]]
name = "wc"
kind = "wecom"
corpid = "ww1234567890"
corpsecret_env = "WECOM_SECRET"
agentid = 1000002

[[channels]]
name = "push"
kind = "fcm"
service_account = "/etc/herald/fcm.json"
project_id = "p1"
token_url = "http://127.0.0.1:9001/token"

[[channels]]
name = "mail"
kind = "smtp"
host = "smtp.example.com"
port = 587
tls = "starttls"
username = "herald"
password_env = "SMTP_PASSWORD"
from = "Herald <noreply@example.com>"

[[channels]]
name = "log"
kind = "log"
"#;

    #[test]
    fn existing_channel_tables_load_unchanged() {
        use herald_channels::{ProviderConfig, QuietPolicy, SecretSource, SmtpTls, TokenMode};
        let c = load_str(EVERY_KIND).unwrap();
        let kinds: Vec<&str> = c.channels.iter().map(|c| c.kind().as_str()).collect();
        assert_eq!(kinds, ["webhook", "wechat", "wecom", "fcm", "smtp", "log"]);
        let hooks = &c.channels[0];
        assert_eq!(hooks.common.concurrency, 64);
        assert_eq!(hooks.common.rate_per_sec, Some(500.0));
        assert_eq!(hooks.common.backoff_jitter, 0.25);
        let ProviderConfig::Webhook(h) = &hooks.provider else {
            panic!("{hooks:?}")
        };
        assert_eq!(h.secret, Some(SecretSource::Env("HOOKS_SECRET".into())));
        assert_eq!(h.ca_file.as_deref(), Some("/etc/herald/internal-ca.pem"));
        let wx = &c.channels[1];
        assert_eq!(
            wx.common.quiet_hours.as_ref().map(|q| q.policy),
            Some(QuietPolicy::Drop)
        );
        assert_eq!(
            wx.common.reminder_template.as_ref().unwrap()["data"]["first"]["value"],
            "{subject}"
        );
        let ProviderConfig::Wechat(w) = &wx.provider else {
            panic!("{wx:?}")
        };
        assert_eq!(w.token_mode, TokenMode::Classic);
        assert!(!format!("{wx:?}").contains("wx-app-secret"));
        let ProviderConfig::Wecom(w) = &c.channels[2].provider else {
            panic!()
        };
        assert_eq!(w.agentid, 1000002);
        let ProviderConfig::Smtp(m) = &c.channels[4].provider else {
            panic!()
        };
        assert_eq!((m.port, m.tls), (Some(587), SmtpTls::Starttls));
    }

    #[test]
    fn channel_keys_are_checked_per_kind() {
        let err = |toml: &str| format!("{:#}", load_str(toml).unwrap_err());
        let e = err(
            "[[channels]]\nname = \"hooks\"\nkind = \"webhook\"\nurl = \"http://x\"\ncorpid = \"ww1\"\n",
        );
        assert!(
            e.contains(
                "channel \"hooks\" (kind webhook): unknown key \"corpid\" (a wecom key); \
                 webhook takes url (required), secret or secret_env, ca_file, and the common keys"
            ),
            "{e}"
        );
        let e = err(
            "[[channels]]\nname = \"wc\"\nkind = \"wecom\"\ncorpid = \"ww\"\ncorpsecret = \"s\"\n",
        );
        assert!(
            e.contains("channel \"wc\" (kind wecom): missing key \"agentid\"; wecom takes corpid (required), agentid (required)"),
            "{e}"
        );
        let e = err("[[channels]]\nname = \"l\"\nkind = \"log\"\nconcurrency = \"many\"\n");
        assert!(e.contains("(kind log): concurrency: invalid type"), "{e}");
    }

    #[test]
    fn tenant_limits_and_channel_tenants() {
        let c = load_toml(
            r#"
[tenants.shop]
max_pending = 1000
rate_per_sec = 50
weight = 3
[tenants.crm]
[[channels]]
name = "mail"
kind = "log"
tenants = ["shop", "crm"]
"#,
        )
        .unwrap();
        let shop = &c.tenants["shop"];
        assert_eq!(shop.max_pending, Some(1000));
        assert_eq!(
            shop.limits(),
            TenantLimits {
                weight: 3,
                rate_per_sec: Some(50.0)
            }
        );
        assert_eq!(c.tenants["crm"], TenantSettings::default());
        assert_eq!(c.tenants["crm"].limits(), TenantLimits::default());
        assert_eq!(
            c.channels[0].common.tenants.as_deref(),
            Some(&["shop".to_string(), "crm".to_string()][..])
        );
        let err = |toml: &str| format!("{:#}", load_toml(toml).unwrap_err());
        let e = err("[tenants.\"a b\"]\n");
        assert!(
            e.contains("[tenants.a b]") && e.contains("tenant name"),
            "{e}"
        );
        let e = err("[tenants.shop]\nweight = 0\n");
        assert!(e.contains("tenants.shop.weight"), "{e}");
        let e = err("[tenants.shop]\nrate_per_sec = -1\n");
        assert!(e.contains("tenants.shop.rate_per_sec"), "{e}");
        let e = err("[tenants.shop]\nmax_pendng = 1\n");
        assert!(e.contains("max_pendng"), "{e}");
    }

    fn load_toml(text: &str) -> anyhow::Result<Config> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.toml");
        std::fs::write(&path, text).unwrap();
        Config::load(Some(&path))
    }

    #[test]
    fn store_options_per_backend() {
        use herald_store::Synchronous;
        let c = load_toml("").unwrap();
        assert_eq!(c.store_options, StoreOptions::default());
        let c = load_toml(
            r#"
[store_options.sqlite]
synchronous = "normal"
read_connections = 2
[store_options.postgres]
notify_window_ms = 5000
"#,
        )
        .unwrap();
        assert_eq!(c.store_options.sqlite.synchronous, Synchronous::Normal);
        assert_eq!(c.store_options.sqlite.read_connections, 2);
        assert_eq!(c.store_options.postgres.notify_window_ms, 5000);
        // A bad value is refused when the file is read, naming the key.
        let err = format!(
            "{:#}",
            load_toml("[store_options.sqlite]\nsynchronous = \"off\"\n").unwrap_err()
        );
        assert!(err.contains("synchronous") && err.contains("off"), "{err}");
        let err = format!(
            "{:#}",
            load_toml("[store_options.sqlite]\nnotify_window_ms = 1\n").unwrap_err()
        );
        assert!(err.contains("notify_window_ms"), "{err}");
    }

    /// Configs written before the split keep loading: the flat keys are read
    /// into their backend's part.
    #[test]
    fn store_options_flat_keys_of_earlier_releases() {
        use herald_store::Synchronous;
        let c = load_toml(
            r#"
[store_options]
sqlite_synchronous = "NORMAL"
read_connections = 3
pg_notify_window_ms = 7000
"#,
        )
        .unwrap();
        assert_eq!(c.store_options.sqlite.synchronous, Synchronous::Normal);
        assert_eq!(c.store_options.sqlite.read_connections, 3);
        assert_eq!(c.store_options.postgres.notify_window_ms, 7000);
        // Both forms of one key must agree.
        let both = "[store_options]\nread_connections = 3\n[store_options.sqlite]\n";
        assert!(load_toml(&format!("{both}read_connections = 3\n")).is_ok());
        let err = format!(
            "{:#}",
            load_toml(&format!("{both}read_connections = 5\n")).unwrap_err()
        );
        assert!(
            err.contains("read_connections") && err.contains("sqlite.read_connections"),
            "{err}"
        );
        let err = format!(
            "{:#}",
            load_toml("[store_options]\nsqlite_synchronous = \"off\"\n").unwrap_err()
        );
        assert!(err.contains("sqlite_synchronous"), "{err}");
    }

    /// `HERALD_STORE_OPTIONS__...` sets either form. Checked in a child process
    /// (this test binary again) so the variables never reach other tests.
    #[test]
    fn store_options_from_the_environment() {
        const CHILD: &str = "HERALD_CONFIG_TEST_CHILD";
        if std::env::var_os(CHILD).is_some() {
            let c = Config::load(None).unwrap();
            let o = &c.store_options;
            assert_eq!(o.sqlite.synchronous, herald_store::Synchronous::Normal);
            assert_eq!(o.sqlite.read_connections, 7);
            assert_eq!(o.postgres.notify_window_ms, 9000);
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "config::tests::store_options_from_the_environment",
                "--quiet",
            ])
            .env(CHILD, "1")
            .env("HERALD_STORE_OPTIONS__SQLITE_SYNCHRONOUS", "normal")
            .env("HERALD_STORE_OPTIONS__SQLITE__READ_CONNECTIONS", "7")
            .env("HERALD_STORE_OPTIONS__POSTGRES__NOTIFY_WINDOW_MS", "9000")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "the child run failed:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}
