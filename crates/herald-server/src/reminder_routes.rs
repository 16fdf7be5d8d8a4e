//! Whether a reminder route can produce a message its channel can send.
//!
//! A reminder is composed in Herald's own shape (`user_id`, `subject`,
//! `start_at`, ...), which only webhook and log channels take as it is.
//! Any other channel needs the type's template (`[reminders.templates]`) or
//! the channel's `reminder_template`, and what those produce must be a
//! message the provider takes. Checked at start (a route that cannot work
//! stops the node), at subscribe (`422` naming `channel_type`) and on
//! `/readyz` (a template not stored yet is a warning there).

use herald_channels::ChannelKind;
use herald_core::ChannelType;
use herald_core::TenantId;
use herald_core::template::{Library, PartKey, RenderError, TemplateRef};
use serde_json::{Value, json};

use crate::config::RemindersConfig;

/// Names a reminder template may read without any data of its own.
pub const REMINDER_VARIABLES: [&str; 12] = [
    "user_id",
    "subject_id",
    "channel_type",
    "lead_minutes",
    "subject",
    "data",
    "start_at",
    "count",
    "reminders",
    "subscriber",
    "timezone",
    "locale",
];

/// What is wrong with a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteProblem {
    /// It can never work as configured: the node should not start.
    Broken(String),
    /// Its template is not stored (yet), or does not fit: reminders of the
    /// type are refused until it is.
    Template(String),
}

impl RouteProblem {
    pub fn message(&self) -> &str {
        match self {
            RouteProblem::Broken(m) | RouteProblem::Template(m) => m,
        }
    }
}

/// A reminder message as composed at fire time, for checking what a
/// channel's `reminder_template` makes of it.
fn sample_reminder(t: ChannelType) -> String {
    let one = json!({"user_id": "u1", "subject_id": "s1", "channel_type": t.as_str(),
                     "lead_minutes": 5, "subject": "Sample", "data": {},
                     "start_at": "2026-01-01T00:00:00.000Z", "timer_id": 1});
    let mut top = one.clone();
    if let Value::Object(m) = &mut top {
        m.remove("timer_id");
        m.insert("count".into(), json!(1));
        m.insert("reminders".into(), json!([one]));
    }
    top.to_string()
}

/// Checks the route of reminders of type `t` through `channel` (of `kind`,
/// with its `reminder_template` if any). `library` is `None` at start,
/// before templates are read: a configured template is then taken on trust.
pub fn check(
    t: ChannelType,
    channel: &str,
    kind: ChannelKind,
    shape: Option<&Value>,
    cfg: &RemindersConfig,
    library: Option<(&Library, TenantId)>,
) -> Result<(), RouteProblem> {
    let template = cfg
        .templates
        .get(t.as_str())
        .and_then(|spec| crate::config::parse_template_spec(spec).ok());
    if let Some(r) = &template {
        return match library {
            Some((lib, tenant)) => check_template(t, channel, kind, r, lib, tenant),
            None => Ok(()),
        };
    }
    if matches!(kind, ChannelKind::Webhook | ChannelKind::Log) {
        return Ok(());
    }
    let Some(shape) = shape else {
        return Err(RouteProblem::Broken(format!(
            "reminders of channel_type {t} go to channel {channel:?} ({}), which cannot send \
             Herald's reminder shape: give the type a template ([reminders.templates] {t} = \
             \"NAME\") or the channel a reminder_template",
            kind_name(kind)
        )));
    };
    let made = herald_channels::template::render(shape, &sample_reminder(t));
    herald_channels::shape::check_text(kind, &made)
        .map(|_| ())
        .map_err(|e| {
            RouteProblem::Broken(format!(
                "channel {channel:?}'s reminder_template does not make a message it can send: {e}"
            ))
        })
}

fn check_template(
    t: ChannelType,
    channel: &str,
    kind: ChannelKind,
    r: &TemplateRef,
    lib: &Library,
    tenant: TenantId,
) -> Result<(), RouteProblem> {
    let part = kind.template_part();
    fits_reminders(r, part, lib, tenant).map_err(|m| {
        RouteProblem::Template(match m {
            Misfit::Unknown(why) | Misfit::UnknownVersion(why) => format!(
                "reminders of channel_type {t} use template {:?} ([reminders.templates]): {why}",
                r.name
            ),
            Misfit::NoPart => format!(
                "template {:?} (for reminders of channel_type {t}) has no {} part in its \
                 default variant, which channel {channel:?} sends",
                r.name,
                part.as_str()
            ),
            Misfit::Variable(v) => format!(
                "template {:?} (for reminders of channel_type {t}) reads {v:?}, which a \
                 reminder does not have; it has {}",
                r.name,
                REMINDER_VARIABLES.join(", ")
            ),
        })
    })
}

/// Why a template cannot render reminders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Misfit {
    /// No template of its name is stored: why.
    Unknown(String),
    /// Its pinned version is not stored: why.
    UnknownVersion(String),
    /// Its default variant has no part for the channel.
    NoPart,
    /// It reads this variable, which a reminder does not have.
    Variable(String),
}

/// Whether `r` can render reminders sent as `part`: it is stored (the
/// pinned version, if any), its default variant has the part, and it reads
/// only [`REMINDER_VARIABLES`]. The check `[reminders.templates]` and a
/// subject's `templates` both get.
pub fn fits_reminders(
    r: &TemplateRef,
    part: PartKey,
    lib: &Library,
    tenant: TenantId,
) -> Result<(), Misfit> {
    let info = lib.info(tenant, r).map_err(|e| match e {
        RenderError::UnknownTemplate { .. } => {
            Misfit::Unknown(format!("no template named {:?} is stored", r.name))
        }
        RenderError::UnknownVersion { .. } => Misfit::UnknownVersion(e.to_string()),
        other => Misfit::Unknown(other.to_string()),
    })?;
    if !info.default_parts.contains(&part) {
        return Err(Misfit::NoPart);
    }
    match info
        .variables
        .iter()
        .find(|v| !REMINDER_VARIABLES.contains(&v.as_str()))
    {
        Some(v) => Err(Misfit::Variable(v.clone())),
        None => Ok(()),
    }
}

fn kind_name(kind: ChannelKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The channel each type's reminders go through when they name none:
/// `[reminders.channels]`, else the channel named like the type, else the
/// default channel.
pub fn routes(
    cfg: &RemindersConfig,
    has_channel: impl Fn(&str) -> bool,
) -> Vec<(ChannelType, String)> {
    ChannelType::ALL
        .into_iter()
        .filter_map(|t| {
            let c = match cfg.channels.get(t.as_str()) {
                Some(c) => c.clone(),
                None if has_channel(t.as_str()) => t.as_str().to_string(),
                None => cfg.default_channel.clone()?,
            };
            Some((t, c))
        })
        .collect()
}

/// What `/readyz` and the console show: each default route of the types
/// whose reminders could not be sent now, for `tenant`.
pub fn warnings(
    cfg: &RemindersConfig,
    has_channel: impl Fn(&str) -> bool,
    channel: impl Fn(&str) -> Option<(ChannelKind, Option<Value>)>,
    lib: &Library,
    tenant: TenantId,
) -> Vec<String> {
    routes(cfg, has_channel)
        .into_iter()
        .filter_map(|(t, name)| {
            let (kind, shape) = channel(&name)?;
            check(t, &name, kind, shape.as_ref(), cfg, Some((lib, tenant)))
                .err()
                .map(|p| format!("reminders: {}", p.message()))
        })
        .collect()
}
