//! A subject's own reminder templates (issue 39 §1): `templates` on
//! `PUT /v1/subjects/{id}`, a channel type's template for this subject's
//! reminders, which wins over `[reminders.templates]` when they are sent.
//!
//! Checked when written, as `[reminders.templates]` is at subscribe
//! ([`crate::reminder_routes::fits_reminders`]): the template (or its pinned
//! version) is stored, its default variant has the part the type's reminders
//! are sent as, and it reads only what a reminder has. The part is that of
//! the channel the type's reminders go through by default (a WeChat channel
//! the `wechat` part, a webhook or log channel the `webhook` part), else the
//! type's own.

use std::collections::BTreeMap;

use herald_core::TenantId;
use herald_core::reminder::ChannelType;
use herald_core::template::{PartKey, TemplateRef};
use serde_json::Value;

use crate::config::type_names;
use crate::http::error::ApiError;
use crate::http::state::AppState;
use crate::reminder_routes::{Misfit, REMINDER_VARIABLES, fits_reminders};

/// `templates` as a PUT gives it, checked: the JSON text to store (keys in
/// type order, each `{name, version?}`), `None` when absent, `null` or `{}`.
pub(super) fn checked(
    given: Option<&Value>,
    st: &AppState,
    tenant: TenantId,
) -> Result<Option<String>, ApiError> {
    let entries = match given {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(ApiError::field(
                "templates",
                "invalid_field",
                "templates must be an object from channel type to {\"name\", \"version\"?}",
            ));
        }
    };
    let lib = st.engine.templates().library();
    let mut out: BTreeMap<&'static str, TemplateRef> = BTreeMap::new();
    for (key, v) in entries {
        let field = format!("templates.{key}");
        let t = ChannelType::parse(key).ok_or_else(|| {
            ApiError::field(
                &field,
                "invalid_field",
                format!(
                    "{key:?} is not a channel type: templates are keyed by one of {}",
                    type_names()
                ),
            )
        })?;
        let r: TemplateRef = serde_json::from_value(v.clone()).map_err(|e| {
            ApiError::field(
                &field,
                "invalid_field",
                format!("{field} must be {{\"name\", \"version\"?}}: {e}"),
            )
        })?;
        herald_core::template::check_name(&r.name)
            .map_err(|e| ApiError::field(&format!("{field}.name"), "invalid_field", e))?;
        let (part, channel) = part_of(st, tenant, t);
        fits_reminders(&r, part, &lib, tenant)
            .map_err(|m| misfit(&field, t, &r, part, channel, m))?;
        out.insert(t.as_str(), r);
    }
    if out.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(&out)
        .map(Some)
        .map_err(|e| ApiError::internal(format!("templates could not be stored: {e}")))
}

/// The part reminders of type `t` are sent as: that of the channel they go
/// through by default (named too), else the type's own.
fn part_of(st: &AppState, tenant: TenantId, t: ChannelType) -> (PartKey, Option<String>) {
    let channel = st.channel_for_type(tenant, t);
    let kind = channel.as_deref().and_then(|c| st.engine.channel_kind(c));
    match kind {
        Some(k) => (k.template_part(), channel),
        None => (PartKey::Type(t), None),
    }
}

/// A template that cannot render the type's reminders: `422` naming
/// `templates.TYPE` (`templates.TYPE.version` for a pinned version that is
/// not stored).
fn misfit(
    field: &str,
    t: ChannelType,
    r: &TemplateRef,
    part: PartKey,
    channel: Option<String>,
    m: Misfit,
) -> ApiError {
    let (at, code, message) = match m {
        Misfit::Unknown(why) => (
            field.to_string(),
            "unknown_template",
            format!("{field}: {why}"),
        ),
        Misfit::UnknownVersion(why) => (
            format!("{field}.version"),
            "unknown_template",
            format!("{field}: {why}"),
        ),
        Misfit::NoPart => (
            field.to_string(),
            "invalid_field",
            format!(
                "template {:?} has no {} part in its default variant, which reminders of \
                 channel_type {t} are sent as{}",
                r.name,
                part.as_str(),
                channel
                    .map(|c| format!(" (channel {c:?})"))
                    .unwrap_or_default()
            ),
        ),
        Misfit::Variable(v) => (
            field.to_string(),
            "invalid_field",
            format!(
                "template {:?} reads {v:?}, which a reminder does not have; it has {}",
                r.name,
                REMINDER_VARIABLES.join(", ")
            ),
        ),
    };
    ApiError::unprocessable(&at, code, message)
}
