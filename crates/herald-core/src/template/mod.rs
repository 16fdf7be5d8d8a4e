//! Message templates: named, versioned content with a variant per locale and
//! a part per channel type, rendered when a message is sent.
//!
//! A part is a JSON value in the provider's own message shape (a WeChat part
//! has `template_id` and `data`, an e-mail part `subject` and `text`); every
//! string in it is a Jinja template (minijinja, sandboxed: no file access, a
//! bounded amount of work per render). [`TemplateBody::check`] compiles every
//! string once when a version is written, so a syntax error is a `422` naming
//! its field, and [`Library`] keeps the compiled versions every node renders
//! from.

mod filters;
mod library;
pub mod locale;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use library::{Library, RenderError, Rendered, VersionInfo};
pub use locale::DEFAULT_LOCALE;

use crate::reminder::ChannelType;

/// Longest template name.
pub const MAX_NAME_BYTES: usize = 64;
/// Most locale variants one template may have.
pub const MAX_LOCALES: usize = 64;
/// Longest description.
pub const MAX_DESCRIPTION_BYTES: usize = 1024;
/// Longest rendered string: a runaway loop ends as a render error, not a
/// megabyte message.
pub const MAX_RENDERED_BYTES: usize = 64 * 1024;
/// Work one string's render may do (minijinja fuel: roughly instructions).
pub const RENDER_FUEL: u64 = 100_000;

/// Which part of a variant a channel sends: its channel type's, `robot` for
/// group robots (WeCom, DingTalk, Feishu), or `webhook` for channels that
/// take any message (webhooks and the log).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PartKey {
    Type(ChannelType),
    Robot,
    Webhook,
}

impl PartKey {
    pub const ALL: [PartKey; 8] = [
        PartKey::Type(ChannelType::App),
        PartKey::Type(ChannelType::Email),
        PartKey::Type(ChannelType::Sms),
        PartKey::Type(ChannelType::Wechat),
        PartKey::Type(ChannelType::Wecom),
        PartKey::Type(ChannelType::WechatMini),
        PartKey::Robot,
        PartKey::Webhook,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PartKey::Type(t) => t.as_str(),
            PartKey::Robot => "robot",
            PartKey::Webhook => "webhook",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The part a channel of address type `ty` sends (`None`: any address).
    pub fn for_type(ty: Option<ChannelType>) -> Self {
        ty.map_or(PartKey::Webhook, PartKey::Type)
    }
}

/// A template version as the API takes it (`POST /v1/templates`,
/// `PUT /v1/templates/{name}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = TemplateBody))]
#[serde(deny_unknown_fields)]
pub struct TemplateBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Variants by locale tag (`default` is required): each maps a part
    /// (`app`, `email`, `sms`, `wechat`, `wecom`, `wechat_mini`, `robot`,
    /// `webhook`) to the provider's message shape, whose strings are Jinja
    /// templates.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub locales: BTreeMap<String, BTreeMap<String, Value>>,
}

/// A template reference as timers, reminders, jobs and rules give it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TemplateRef {
    pub name: String,
    /// Pinned version; unset, the latest version when the message is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
}

/// Why a template (or its use) is refused: the field, dotted, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct TemplateError {
    pub field: String,
    pub message: String,
}

impl TemplateError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        TemplateError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// What [`TemplateBody::check`] learned: the variables the template reads
/// that the sender must give (top-level names), and the parts the `default`
/// variant has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    pub variables: BTreeSet<String>,
    pub default_parts: BTreeSet<PartKey>,
}

/// Checks a template name: 1 to 64 of letters, digits, `.`, `_`, `-`.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "a template name is 1..={MAX_NAME_BYTES} letters, digits, '.', '_' or '-'"
        ))
    }
}

impl TemplateBody {
    /// Checks every variant and compiles every string of every part.
    pub fn check(&self) -> Result<Checked, TemplateError> {
        if let Some(d) = &self.description
            && d.len() > MAX_DESCRIPTION_BYTES
        {
            return Err(TemplateError::new(
                "description",
                format!("description is at most {MAX_DESCRIPTION_BYTES} bytes"),
            ));
        }
        if self.locales.is_empty() || !self.locales.contains_key(DEFAULT_LOCALE) {
            return Err(TemplateError::new(
                "locales.default",
                "a template needs a \"default\" variant (read when no locale matches)",
            ));
        }
        if self.locales.len() > MAX_LOCALES {
            return Err(TemplateError::new(
                "locales",
                format!("at most {MAX_LOCALES} locale variants"),
            ));
        }
        let mut seen = BTreeSet::new();
        let mut checked = Checked::default();
        for (tag, parts) in &self.locales {
            let at = format!("locales.{tag}");
            if !locale::valid(tag) {
                return Err(TemplateError::new(
                    at,
                    format!("{tag:?} is not a locale tag (e.g. \"zh-Hant-TW\", \"en\")"),
                ));
            }
            if !seen.insert(locale::normalize(tag)) {
                return Err(TemplateError::new(
                    at,
                    format!("{tag:?} repeats another variant's tag (tags ignore case)"),
                ));
            }
            if parts.is_empty() {
                return Err(TemplateError::new(at, "a variant needs at least one part"));
            }
            for (key, part) in parts {
                let at = format!("{at}.{key}");
                let Some(part_key) = PartKey::parse(key) else {
                    return Err(TemplateError::new(
                        at,
                        format!(
                            "{key:?} is not a part; use one of {}",
                            PartKey::ALL.map(PartKey::as_str).join(", ")
                        ),
                    ));
                };
                if !part.is_object() {
                    return Err(TemplateError::new(
                        at,
                        "a part is a JSON object in the provider's message shape",
                    ));
                }
                if tag == DEFAULT_LOCALE {
                    checked.default_parts.insert(part_key);
                }
                library::compile_check(part, &at, &mut checked.variables)?;
            }
        }
        Ok(checked)
    }
}

#[cfg(test)]
mod tests;
