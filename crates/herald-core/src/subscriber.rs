//! A subscriber's profile: where to reach one user on each channel type, in
//! which time zone they live, what they opted out of, and when they sleep.
//!
//! The directory stores the profile as JSON; every write is checked here
//! first, so what the engine reads back when a reminder fires is always a
//! profile it can use. Checks name the field they refuse, dotted
//! (`addresses.email`, `quiet_hours.start`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::device::{Device, PushService};
use crate::quiet::QuietWindow;
use crate::reminder::ChannelType;

/// Most device tokens one user keeps for app push.
pub const MAX_DEVICE_TOKENS: usize = 10;
/// Longest device token (FCM registration tokens run to about 160 bytes;
/// room for providers that issue longer ones).
pub const MAX_TOKEN_BYTES: usize = 4096;
/// Longest e-mail address (RFC 5321's path limit less the brackets).
pub const MAX_EMAIL_BYTES: usize = 254;
/// Longest WeChat openid or WeCom user id.
pub const MAX_ACCOUNT_BYTES: usize = 128;
/// Most WeChat official accounts one user is known on.
pub const MAX_WECHAT_ACCOUNTS: usize = 16;
/// Most named topics in one user's preferences.
pub const MAX_TOPICS: usize = 256;
/// Longest topic name, locale or time-zone name.
pub const MAX_NAME_BYTES: usize = 64;
/// Largest `addresses.webhook`, serialized.
pub const MAX_WEBHOOK_BYTES: usize = 4096;

// What one user told us about themselves.
/// A subscriber's profile (`PUT /v1/subscribers/{user_id}`, and a line of
/// `POST /v1/subscribers:bulk` with its `user_id`). Every field is
/// optional; unknown fields are refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = SubscriberBody))]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// IANA time zone; the user's quiet hours follow it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
    #[serde(default)]
    pub addresses: Addresses,
    #[serde(default)]
    pub preferences: Preferences,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet_hours: Option<QuietHours>,
}

/// Where a user is reached, per channel type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = SubscriberAddresses))]
#[serde(deny_unknown_fields)]
pub struct Addresses {
    /// RFC 5321 (`+` allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// E.164: `+` and up to 15 digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sms: Option<String>,
    // Openids differ between official accounts.
    /// The user's openid per WeChat channel name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub wechat: BTreeMap<String, String>,
    /// WeCom user id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wecom: Option<String>,
    // A mini-program has openids of its own, like an official account.
    /// The user's openid per WeChat mini-program channel name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub wechat_mini: BTreeMap<String, String>,
    // Each token gets its own delivery, through a channel of its service.
    /// Up to 10 devices: a token, or `{"service", "token"}` for a token of
    /// a named push service (`fcm`, `huawei`, `honor`, `xiaomi`, `oppo`,
    /// `vivo`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub app: Vec<Device>,
    // Anything a webhook receiver wants to know about the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub webhook: Option<serde_json::Value>,
}

/// Opt-outs (`false`); a missing entry is opted in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = SubscriberPreferences))]
#[serde(deny_unknown_fields)]
pub struct Preferences {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = BTreeMap<String, bool>))]
    pub channel_types: BTreeMap<ChannelType, bool>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub topics: BTreeMap<String, bool>,
}

// A daily do-not-disturb window in the user's own time zone.
/// `HH:MM` to `HH:MM`, in the subscriber's time zone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = SubscriberQuietHours))]
#[serde(deny_unknown_fields)]
pub struct QuietHours {
    // `HH:MM`, local.
    pub start: String,
    // `HH:MM`, local.
    pub end: String,
}

/// A refused profile: the dotted field and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ProfileError {
    pub field: String,
    pub message: String,
}

fn refuse(field: impl Into<String>, message: impl Into<String>) -> ProfileError {
    ProfileError {
        field: field.into(),
        message: message.into(),
    }
}

impl Profile {
    /// Checks every field; the first refusal names its field.
    pub fn validate(&self) -> Result<(), ProfileError> {
        if let Some(tz) = &self.timezone {
            check_timezone("timezone", tz)?;
        }
        if let Some(locale) = &self.locale {
            check_locale(locale)?;
        }
        self.addresses.validate()?;
        self.preferences.validate()?;
        if let Some(q) = &self.quiet_hours {
            // Parsed in UTC here; at send time in the user's zone.
            QuietWindow::parse(&q.start, &q.end, self.timezone.as_deref().unwrap_or("UTC"))
                .map_err(|e| {
                    let (part, why) = e.split_once(": ").unwrap_or(("", e.as_str()));
                    let field = if part.is_empty() || part == "timezone" {
                        "quiet_hours".to_string()
                    } else {
                        format!("quiet_hours.{part}")
                    };
                    refuse(field, why)
                })?;
        }
        Ok(())
    }

    /// The quiet window in the user's zone (UTC when none is known).
    pub fn quiet_window(&self) -> Option<QuietWindow> {
        let q = self.quiet_hours.as_ref()?;
        QuietWindow::parse(&q.start, &q.end, self.timezone.as_deref().unwrap_or("UTC")).ok()
    }

    /// Whether the user takes messages of `channel_type` about `topic`.
    pub fn accepts(&self, channel_type: ChannelType, topic: Option<&str>) -> bool {
        let p = &self.preferences;
        p.channel_types.get(&channel_type).copied().unwrap_or(true)
            && topic.is_none_or(|t| p.topics.get(t).copied().unwrap_or(true))
    }
}

/// What a send to a subscriber comes to, decided when it fires (so an
/// address or a preference changed after scheduling is honoured).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution<'a> {
    /// Send, one delivery to each of these addresses (several only for app
    /// push: one per device token).
    Send(Vec<&'a str>),
    /// The user has no address for the channel's type: final, not retried.
    NoAddress,
    /// The user opted out of the channel type or of the message's topic:
    /// final, and `critical` does not override it.
    OptedOut,
    /// Inside the user's quiet hours, in the user's own time zone: not before
    /// `until` (unix ms). A `critical` message is never held.
    Quiet { until: i64 },
}

impl Profile {
    /// Where and whether a message of `topic` on channel `channel` (of type
    /// `channel_type`) goes at `now_ms`. Opt-outs first (the user's choice
    /// outranks everything), then the address, then quiet hours.
    pub fn resolve(
        &self,
        channel_type: ChannelType,
        channel: &str,
        topic: Option<&str>,
        critical: bool,
        now_ms: i64,
    ) -> Resolution<'_> {
        if !self.accepts(channel_type, topic) {
            return Resolution::OptedOut;
        }
        let a = &self.addresses;
        let to: Vec<&str> = match channel_type {
            ChannelType::Email => a.email.as_deref().into_iter().collect(),
            ChannelType::Sms => a.sms.as_deref().into_iter().collect(),
            ChannelType::Wechat => a.wechat_openid(channel).into_iter().collect(),
            ChannelType::Wecom => a.wecom.as_deref().into_iter().collect(),
            ChannelType::WechatMini => a
                .wechat_mini
                .get(channel)
                .map(String::as_str)
                .into_iter()
                .collect(),
            ChannelType::App => a.app.iter().map(Device::token).collect(),
        };
        if to.is_empty() {
            return Resolution::NoAddress;
        }
        if !critical && let Some(until) = self.quiet_window().and_then(|w| w.ends_after(now_ms)) {
            return Resolution::Quiet { until };
        }
        Resolution::Send(to)
    }
}

impl Profile {
    /// Removes device token `token` (the provider said it is gone); whether
    /// it was there.
    pub fn drop_device(&mut self, token: &str) -> bool {
        let before = self.addresses.app.len();
        self.addresses.app.retain(|d| d.token() != token);
        self.addresses.app.len() != before
    }
}

/// The idempotency key of one device's copy of a delivery: the delivery's
/// key and a hash of the token, so each device's copy keeps its own key
/// however the token list is reordered or pruned.
pub fn device_key(delivery_key: &str, token: &str) -> String {
    format!(
        "{delivery_key}:d{:016x}",
        xxhash_rust::xxh3::xxh3_64(token.as_bytes())
    )
}

/// An openid per WeChat channel name (official accounts or mini-programs),
/// at `field`.
fn openids(field: &str, by_channel: &BTreeMap<String, String>) -> Result<(), ProfileError> {
    if by_channel.len() > MAX_WECHAT_ACCOUNTS {
        return Err(refuse(
            field,
            format!("at most {MAX_WECHAT_ACCOUNTS} accounts"),
        ));
    }
    for (channel, openid) in by_channel {
        check_name(channel).map_err(|why| refuse(field, why))?;
        check_account(openid).map_err(|why| refuse(format!("{field}.{channel}"), why))?;
    }
    Ok(())
}

impl Addresses {
    fn validate(&self) -> Result<(), ProfileError> {
        if let Some(e) = &self.email {
            check_email(e).map_err(|why| refuse("addresses.email", why))?;
        }
        if let Some(p) = &self.sms {
            check_e164(p).map_err(|why| refuse("addresses.sms", why))?;
        }
        openids("addresses.wechat", &self.wechat)?;
        openids("addresses.wechat_mini", &self.wechat_mini)?;
        if let Some(id) = &self.wecom {
            check_account(id).map_err(|why| refuse("addresses.wecom", why))?;
        }
        if self.app.len() > MAX_DEVICE_TOKENS {
            return Err(refuse(
                "addresses.app",
                format!("at most {MAX_DEVICE_TOKENS} device tokens"),
            ));
        }
        for (i, device) in self.app.iter().enumerate() {
            let token = device.token();
            let ok = !token.is_empty()
                && token.len() <= MAX_TOKEN_BYTES
                && token.bytes().all(|b| b.is_ascii_graphic());
            if !ok {
                return Err(refuse(
                    format!("addresses.app[{i}]"),
                    format!("a device token is 1 to {MAX_TOKEN_BYTES} printable ASCII characters"),
                ));
            }
            if self.app[..i].iter().any(|d| d.token() == token) {
                return Err(refuse(format!("addresses.app[{i}]"), "listed twice"));
            }
        }
        if let Some(w) = &self.webhook {
            if !w.is_object() {
                return Err(refuse("addresses.webhook", "must be a JSON object"));
            }
            if w.to_string().len() > MAX_WEBHOOK_BYTES {
                return Err(refuse(
                    "addresses.webhook",
                    format!("at most {MAX_WEBHOOK_BYTES} bytes"),
                ));
            }
        }
        Ok(())
    }

    /// The service that issued device token `token`; `None` for a bare
    /// token or one the user does not have.
    pub fn service_of(&self, token: &str) -> Option<PushService> {
        self.app
            .iter()
            .find(|d| d.token() == token)
            .and_then(Device::service)
    }

    /// The user's WeChat openid on channel `name`.
    pub fn wechat_openid(&self, name: &str) -> Option<&str> {
        self.wechat.get(name).map(String::as_str)
    }
}

impl Preferences {
    fn validate(&self) -> Result<(), ProfileError> {
        if self.topics.len() > MAX_TOPICS {
            return Err(refuse(
                "preferences.topics",
                format!("at most {MAX_TOPICS} topics"),
            ));
        }
        for topic in self.topics.keys() {
            check_name(topic).map_err(|why| refuse("preferences.topics", why))?;
        }
        Ok(())
    }
}

fn check_timezone(field: &str, tz: &str) -> Result<(), ProfileError> {
    if tz.len() > MAX_NAME_BYTES || jiff::tz::TimeZoneDatabase::bundled().get(tz).is_err() {
        return Err(refuse(
            field,
            format!("{tz:?} is not a known IANA time zone"),
        ));
    }
    Ok(())
}

/// A BCP 47-shaped tag: letters, digits and `-`/`_`, starting with a letter.
fn check_locale(locale: &str) -> Result<(), ProfileError> {
    let ok = !locale.is_empty()
        && locale.len() <= MAX_NAME_BYTES
        && locale.starts_with(|c: char| c.is_ascii_alphabetic())
        && locale
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(refuse(
            "locale",
            "a language tag such as zh-CN: letters, digits and '-'",
        ))
    }
}

/// A topic: 1 to 64 of `A-Z a-z 0-9 _ - . :` (as in preferences).
pub fn check_topic(topic: &str) -> Result<(), String> {
    check_name(topic)
}

/// A channel or topic name: 1 to 64 of `A-Z a-z 0-9 _ - . :`.
fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?}: a name is 1 to {MAX_NAME_BYTES} of A-Z a-z 0-9 _ - . :"
        ))
    }
}

/// An openid or WeCom user id: 1 to 128 printable ASCII characters.
fn check_account(id: &str) -> Result<(), String> {
    let ok =
        !id.is_empty() && id.len() <= MAX_ACCOUNT_BYTES && id.bytes().all(|b| b.is_ascii_graphic());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "an account id is 1 to {MAX_ACCOUNT_BYTES} printable ASCII characters"
        ))
    }
}

/// An E.164 number: `+`, a non-zero digit, and 1 to 14 more digits.
pub fn check_e164(phone: &str) -> Result<(), String> {
    let digits = phone.strip_prefix('+').unwrap_or("");
    let ok = (2..=15).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{phone:?} is not an E.164 number ('+', country code, up to 15 digits)"
        ))
    }
}

/// The characters RFC 5321 (by way of RFC 5322's `atext`) allows unquoted
/// in a local part, besides letters and digits.
const ATEXT: &[u8] = b"!#$%&'*+/=?^_`{|}~-";

/// An address by RFC 5321's rules for a dot-atom local part and a domain
/// name: `local@domain`, `+` and the other `atext` allowed, no empty or
/// doubled dots, domain labels of letters, digits and inner hyphens, and at
/// least two labels. Quoted local parts and address literals are refused:
/// no mail provider hands them out.
pub fn check_email(addr: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("{addr:?} is not an e-mail address: {why}"));
    if addr.len() > MAX_EMAIL_BYTES {
        return bad("longer than 254 characters");
    }
    let Some((local, domain)) = addr.rsplit_once('@') else {
        return bad("no '@'");
    };
    if local.is_empty() || local.len() > 64 {
        return bad("the part before '@' must be 1 to 64 characters");
    }
    let atom_ok = |a: &str| {
        !a.is_empty()
            && a.bytes()
                .all(|b| b.is_ascii_alphanumeric() || ATEXT.contains(&b))
    };
    if !local.split('.').all(atom_ok) {
        return bad("the part before '@' has a character or a dot out of place");
    }
    let labels: Vec<&str> = domain.split('.').collect();
    if domain.len() > 253 || labels.len() < 2 {
        return bad("the domain needs at least two labels");
    }
    let label_ok = |l: &&str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    if !labels.iter().all(label_ok) {
        return bad("the domain has a label out of shape");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(json: &str) -> Result<Profile, String> {
        let p: Profile = serde_json::from_str(json).map_err(|e| e.to_string())?;
        p.validate().map_err(|e| e.to_string())?;
        Ok(p)
    }

    #[test]
    fn emails_follow_rfc_5321_plus_included() {
        for ok in [
            "a@b.co",
            "first.last+coupons@example.com",
            "o'neil@mail.example.cn",
            "x_y-z=1@sub-domain.example.org",
        ] {
            assert_eq!(check_email(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "plain",
            "@example.com",
            "a@",
            "a@localhost",
            "a..b@example.com",
            ".a@example.com",
            "a.@example.com",
            "a b@example.com",
            "a@-example.com",
            "a@example-.com",
            "a@exa_mple.com",
            "\"quoted\"@example.com",
            "a@[127.0.0.1]",
        ] {
            assert!(check_email(bad).is_err(), "{bad}");
        }
        let long_local = format!("{}@example.com", "a".repeat(65));
        assert!(check_email(&long_local).is_err());
    }

    #[test]
    fn phones_are_e164() {
        for ok in ["+8613800138000", "+14155552671", "+44"] {
            assert_eq!(check_e164(ok), Ok(()), "{ok}");
        }
        for bad in [
            "13800138000",
            "+0123",
            "+1",
            "+1234567890123456",
            "+86 138",
            "++86",
        ] {
            assert!(check_e164(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_full_profile_round_trips() {
        let json = r#"{"timezone":"Asia/Shanghai","locale":"zh-CN",
            "addresses":{"email":"li+c@example.cn","sms":"+8613800138000",
                "wechat":{"wx":"oAbC-123"},"wecom":"LiLei","app":["tok-1","tok-2"],
                "webhook":{"crm":42}},
            "preferences":{"channel_types":{"sms":false},"topics":{"marketing":false}},
            "quiet_hours":{"start":"22:00","end":"08:00"}}"#;
        let p = profile(json).unwrap();
        let back: Profile = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
        assert_eq!(p.addresses.wechat_openid("wx"), Some("oAbC-123"));
        assert!(p.accepts(ChannelType::App, None));
        assert!(!p.accepts(ChannelType::Sms, None));
        assert!(!p.accepts(ChannelType::App, Some("marketing")));
        assert!(p.accepts(ChannelType::App, Some("orders")));
        assert!(p.quiet_window().is_some());
        assert_eq!(profile("{}").unwrap(), Profile::default());
    }

    #[test]
    fn resolution_follows_opt_outs_then_addresses_then_quiet_hours() {
        let p = profile(
            r#"{"timezone":"Asia/Shanghai",
                "addresses":{"email":"li@example.cn","wechat":{"wx":"oA"},"app":["t1","t2"]},
                "preferences":{"channel_types":{"sms":false},"topics":{"ads":false}},
                "quiet_hours":{"start":"22:00","end":"08:00"}}"#,
        )
        .unwrap();
        // 2030-01-01T04:00Z is noon in Shanghai; 15:00Z is 23:00 there.
        let noon = 1_893_470_400_000;
        let night = noon + 11 * 3_600_000;
        let morning_8_local = noon + 20 * 3_600_000;
        use ChannelType::*;
        assert_eq!(
            p.resolve(App, "push", None, false, noon),
            Resolution::Send(vec!["t1", "t2"])
        );
        assert_eq!(
            p.resolve(Email, "mail", Some("orders"), false, noon),
            Resolution::Send(vec!["li@example.cn"])
        );
        assert_eq!(
            p.resolve(Wechat, "wx", None, false, noon),
            Resolution::Send(vec!["oA"])
        );
        // An openid of another official account is no address for this one.
        assert_eq!(
            p.resolve(Wechat, "wx2", None, false, noon),
            Resolution::NoAddress
        );
        assert_eq!(
            p.resolve(Wecom, "wecom", None, false, noon),
            Resolution::NoAddress
        );
        // Opted out of SMS (and an opt-out outranks a missing address), and
        // of a topic, even when critical.
        assert_eq!(
            p.resolve(Sms, "sms", None, false, noon),
            Resolution::OptedOut
        );
        assert_eq!(
            p.resolve(Email, "mail", Some("ads"), true, noon),
            Resolution::OptedOut
        );
        // At 23:00 local the user sleeps until 08:00 local; critical goes anyway.
        assert_eq!(
            p.resolve(Email, "mail", None, false, night),
            Resolution::Quiet {
                until: morning_8_local
            }
        );
        assert_eq!(
            p.resolve(Email, "mail", None, true, night),
            Resolution::Send(vec!["li@example.cn"])
        );
        // No quiet hours, no zone: never held.
        let plain = profile(r#"{"addresses":{"email":"a@example.com"}}"#).unwrap();
        assert_eq!(
            plain.resolve(Email, "mail", None, false, night),
            Resolution::Send(vec!["a@example.com"])
        );
    }

    #[test]
    fn refusals_name_the_field() {
        for (json, field) in [
            (r#"{"timezone":"Mars/Base"}"#, "timezone"),
            (r#"{"locale":"zh CN"}"#, "locale"),
            (r#"{"addresses":{"email":"nope"}}"#, "addresses.email"),
            (r#"{"addresses":{"sms":"138"}}"#, "addresses.sms"),
            (
                r#"{"addresses":{"wechat":{"wx":""}}}"#,
                "addresses.wechat.wx",
            ),
            (
                r#"{"addresses":{"wechat":{"w x":"o"}}}"#,
                "addresses.wechat",
            ),
            (r#"{"addresses":{"wecom":""}}"#, "addresses.wecom"),
            (r#"{"addresses":{"app":["a","a"]}}"#, "addresses.app[1]"),
            (r#"{"addresses":{"app":["a b"]}}"#, "addresses.app[0]"),
            (
                r#"{"addresses":{"app":["a",{"service":"huawei","token":"a"}]}}"#,
                "addresses.app[1]",
            ),
            (
                r#"{"addresses":{"app":[{"service":"vivo","token":""}]}}"#,
                "addresses.app[0]",
            ),
            (r#"{"addresses":{"webhook":[1]}}"#, "addresses.webhook"),
            (
                r#"{"preferences":{"topics":{"":true}}}"#,
                "preferences.topics",
            ),
            (
                r#"{"quiet_hours":{"start":"25:00","end":"08:00"}}"#,
                "quiet_hours.start",
            ),
            (
                r#"{"quiet_hours":{"start":"22:00","end":"22:00"}}"#,
                "quiet_hours",
            ),
        ] {
            let p: Profile = serde_json::from_str(json).unwrap();
            let e = p.validate().unwrap_err();
            assert_eq!(e.field, field, "{json}: {e}");
        }
        let many = format!(
            r#"{{"addresses":{{"app":[{}]}}}}"#,
            (0..11)
                .map(|i| format!("\"t{i}\""))
                .collect::<Vec<_>>()
                .join(",")
        );
        let p: Profile = serde_json::from_str(&many).unwrap();
        assert_eq!(p.validate().unwrap_err().field, "addresses.app");
        // An FCM-length token is fine.
        let long = format!(r#"{{"addresses":{{"app":["{}"]}}}}"#, "x".repeat(300));
        assert!(profile(&long).is_ok());
        // Unknown fields are refused by the parser.
        assert!(serde_json::from_str::<Profile>(r#"{"adresses":{}}"#).is_err());
    }

    #[test]
    fn a_device_may_name_its_service() {
        use crate::device::{Device, PushService};
        let p = profile(r#"{"addresses":{"app":["bare",{"service":"xiaomi","token":"mi-1"}]}}"#)
            .unwrap();
        p.validate().unwrap();
        assert_eq!(p.addresses.service_of("mi-1"), Some(PushService::Xiaomi));
        assert_eq!(p.addresses.service_of("bare"), None);
        assert_eq!(p.addresses.service_of("absent"), None);
        assert_eq!(p.addresses.app[1], Device::of(PushService::Xiaomi, "mi-1"));
        assert_eq!(
            p.resolve(ChannelType::App, "push", None, false, 0),
            Resolution::Send(vec!["bare", "mi-1"])
        );
        let mut q = p.clone();
        assert!(q.drop_device("mi-1"));
        assert_eq!(q.addresses.app, ["bare"]);
    }

    #[test]
    fn each_device_keeps_its_own_key_and_a_gone_token_is_dropped() {
        let a = device_key("t-1", "tok-a");
        assert_eq!(a, device_key("t-1", "tok-a"), "stable");
        assert_ne!(a, device_key("t-1", "tok-b"));
        assert!(a.starts_with("t-1:d"));
        let mut p = profile(r#"{"addresses":{"app":["tok-a","tok-b"]}}"#).unwrap();
        assert!(p.drop_device("tok-a"));
        assert!(!p.drop_device("tok-a"));
        assert_eq!(p.addresses.app, ["tok-b"]);
    }
}
