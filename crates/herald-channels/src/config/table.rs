//! The flat `[[channels]]` table a user writes, read into a typed
//! [`ChannelConfig`] and written back.
//!
//! In the table, common keys and provider keys sit side by side. serde's
//! `flatten` does not combine with `deny_unknown_fields`, so the split is
//! done here: `name` and `kind` first, then the common keys, then what is
//! left must be keys of that kind, checked against its list so that an error
//! can name the channel, the kind, the key and what the kind takes. Only then
//! does serde decode each part (with `serde_path_to_error`, so a value of the
//! wrong type names its key).

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::common::{COMMON_KEYS, CommonSettings};
use super::secret::SecretSource;
use super::{ChannelConfig, ChannelKind, ProviderConfig};

/// Reads one `[[channels]]` table.
pub fn from_table(mut table: Map<String, Value>) -> Result<ChannelConfig, String> {
    let name = match table.get("name") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(format!("a channel's name must be a string, not {other}")),
        None => return Err("a [[channels]] table is missing key \"name\"".into()),
    };
    let kind = kind_of(&name, table.remove("kind"))?;
    let label = format!("channel {name:?} (kind {kind})");
    let mut common = Map::new();
    for k in COMMON_KEYS {
        if let Some(v) = table.remove(k) {
            common.insert(k.to_string(), v);
        }
    }
    let common: CommonSettings = decode(common).map_err(|e| format!("{label}: {e}"))?;

    let keys = kind.provider_keys();
    let unknown: Vec<&str> = table
        .keys()
        .map(String::as_str)
        .filter(|k| !keys.accepts(k))
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "{label}: {}; {kind} takes {}, and the common keys ({})",
            unknown_keys(kind, &unknown),
            keys.describe(),
            COMMON_KEYS[1..].join(", ")
        ));
    }
    let missing =
        |what: String| format!("{label}: missing {what}; {kind} takes {}", keys.describe());
    for k in keys.required {
        if !table.contains_key(*k) {
            return Err(missing(format!("key {k:?}")));
        }
    }
    for (k, required) in keys.secrets {
        match fold_secret(&mut table, k) {
            Ok(true) => {}
            Ok(false) if *required => return Err(missing(format!("key {k:?} (or {k}_env)"))),
            Ok(false) => {}
            Err(e) => return Err(format!("{label}: {e}")),
        }
    }
    let provider = match kind {
        ChannelKind::Log => decode(table).map(ProviderConfig::Log),
        ChannelKind::Webhook => decode(table).map(ProviderConfig::Webhook),
        ChannelKind::Wechat => decode(table).map(ProviderConfig::Wechat),
        ChannelKind::Wecom => decode(table).map(ProviderConfig::Wecom),
        ChannelKind::Fcm => decode(table).map(ProviderConfig::Fcm),
        ChannelKind::Smtp => decode(table).map(ProviderConfig::Smtp),
        ChannelKind::WechatMini => decode(table).map(ProviderConfig::WechatMini),
        ChannelKind::AliyunSms => decode(table).map(ProviderConfig::AliyunSms),
        ChannelKind::TencentSms => decode(table).map(ProviderConfig::TencentSms),
        ChannelKind::WecomRobot => decode(table).map(ProviderConfig::WecomRobot),
        ChannelKind::DingtalkRobot => decode(table).map(ProviderConfig::DingtalkRobot),
        ChannelKind::FeishuBot => decode(table).map(ProviderConfig::FeishuBot),
        ChannelKind::HuaweiPush => decode(table).map(ProviderConfig::HuaweiPush),
        ChannelKind::XiaomiPush => decode(table).map(ProviderConfig::XiaomiPush),
        ChannelKind::HonorPush => decode(table).map(ProviderConfig::HonorPush),
        ChannelKind::OppoPush => decode(table).map(ProviderConfig::OppoPush),
        ChannelKind::VivoPush => decode(table).map(ProviderConfig::VivoPush),
        ChannelKind::DingtalkWork => decode(table).map(ProviderConfig::DingtalkWork),
        ChannelKind::FeishuApp => decode(table).map(ProviderConfig::FeishuApp),
    }
    .map_err(|e| format!("{label}: {e}"))?;
    Ok(ChannelConfig { common, provider })
}

/// Writes the table [`from_table`] reads back to the same config.
pub fn to_table(cfg: &ChannelConfig) -> Result<Map<String, Value>, serde_json::Error> {
    let mut table = object(serde_json::to_value(&cfg.common)?);
    let kind = cfg.kind();
    table.insert("kind".into(), Value::from(kind.as_str()));
    let provider = match &cfg.provider {
        ProviderConfig::Log(p) => serde_json::to_value(p),
        ProviderConfig::Webhook(p) => serde_json::to_value(p),
        ProviderConfig::Wechat(p) => serde_json::to_value(p),
        ProviderConfig::Wecom(p) => serde_json::to_value(p),
        ProviderConfig::Fcm(p) => serde_json::to_value(p),
        ProviderConfig::Smtp(p) => serde_json::to_value(p),
        ProviderConfig::WechatMini(p) => serde_json::to_value(p),
        ProviderConfig::AliyunSms(p) => serde_json::to_value(p),
        ProviderConfig::TencentSms(p) => serde_json::to_value(p),
        ProviderConfig::WecomRobot(p)
        | ProviderConfig::DingtalkRobot(p)
        | ProviderConfig::FeishuBot(p) => serde_json::to_value(p),
        ProviderConfig::HuaweiPush(p) => serde_json::to_value(p),
        ProviderConfig::XiaomiPush(p) => serde_json::to_value(p),
        ProviderConfig::HonorPush(p) => serde_json::to_value(p),
        ProviderConfig::OppoPush(p) => serde_json::to_value(p),
        ProviderConfig::VivoPush(p) => serde_json::to_value(p),
        ProviderConfig::DingtalkWork(p) => serde_json::to_value(p),
        ProviderConfig::FeishuApp(p) => serde_json::to_value(p),
    }?;
    let secrets = kind.provider_keys().secrets;
    for (k, v) in object(provider) {
        if !secrets.iter().any(|(s, _)| *s == k) {
            table.insert(k, v);
            continue;
        }
        match serde_json::from_value::<SecretSource>(v)? {
            SecretSource::Inline(s) => table.insert(k, Value::String(s)),
            SecretSource::Env(var) => table.insert(format!("{k}_env"), Value::String(var)),
        };
    }
    Ok(table)
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The channel's `kind`, or an error listing the kinds there are.
fn kind_of(name: &str, v: Option<Value>) -> Result<ChannelKind, String> {
    let kinds = ChannelKind::ALL.map(ChannelKind::as_str).join(", ");
    match v {
        Some(Value::String(s)) => ChannelKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("channel {name:?}: unknown kind {s:?}; one of {kinds}")),
        Some(other) => Err(format!(
            "channel {name:?}: kind must be a string, not {other}; one of {kinds}"
        )),
        None => Err(format!(
            "channel {name:?}: missing key \"kind\"; one of {kinds}"
        )),
    }
}

/// `unknown key "corpid" (a wecom key)`: names the kinds a misplaced key belongs to.
fn unknown_keys(kind: ChannelKind, keys: &[&str]) -> String {
    let named: Vec<String> = keys
        .iter()
        .map(|k| {
            let owners: Vec<&str> = ChannelKind::ALL
                .into_iter()
                .filter(|o| *o != kind && o.provider_keys().accepts(k))
                .map(ChannelKind::as_str)
                .collect();
            match owners.as_slice() {
                [] => format!("{k:?}"),
                [one] => format!("{k:?} (a {one} key)"),
                many => format!("{k:?} (a key of {})", many.join(", ")),
            }
        })
        .collect();
    let noun = if keys.len() == 1 { "key" } else { "keys" };
    format!("unknown {noun} {}", named.join(", "))
}

/// Replaces `k` / `k_env` in the table by `k: {"inline"|"env": ..}`, the
/// form [`SecretSource`] decodes. Says whether either was set.
fn fold_secret(table: &mut Map<String, Value>, k: &str) -> Result<bool, String> {
    let env_key = format!("{k}_env");
    let source = match (table.remove(k), table.remove(&env_key)) {
        (Some(_), Some(_)) => return Err(format!("set either {k} or {env_key}, not both")),
        (Some(Value::String(v)), None) => SecretSource::Inline(v),
        (None, Some(Value::String(var))) => SecretSource::Env(var),
        (Some(_), None) => return Err(format!("{k} must be a string")),
        (None, Some(_)) => {
            return Err(format!(
                "{env_key} must be a string (the name of an environment variable)"
            ));
        }
        (None, None) => return Ok(false),
    };
    let folded = serde_json::to_value(source).map_err(|e| e.to_string())?;
    table.insert(k.to_string(), folded);
    Ok(true)
}

/// Decodes one part; an error names the key at fault.
fn decode<T: DeserializeOwned>(part: Map<String, Value>) -> Result<T, String> {
    serde_path_to_error::deserialize(Value::Object(part)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path.is_empty() || path == "." {
            inner.to_string()
        } else {
            format!("{path}: {inner}")
        }
    })
}
