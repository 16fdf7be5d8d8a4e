//! Messages rendered from templates when they are sent: a timer that named a
//! template (its stored message is the template's data), and reminders whose
//! subject names a template for their channel type (the subject's
//! `templates`), else whose channel type `[reminders.templates]` gives one.
//! The reader's locale picks the variant and their time zone the filters'
//! zone.
//!
//! A render error is final for the send (`template_error`): the message is
//! never sent half-rendered.

use herald_core::ChannelType;
use herald_core::subscriber::Profile;
use herald_core::template::{Library, PartKey, TemplateRef};
use herald_core::timer::Routing;
use herald_store::TimerRecord;
use serde_json::{Map, Value, json};

use crate::config::EngineConfig;

/// What rendering decided for one delivery's message.
pub(crate) enum Message {
    /// Send this text (rendered, or composed for a reminder or digest).
    Text(String),
    /// Send the row's stored message as it is.
    Stored,
    /// Final: the template could not be rendered.
    Failed(String),
}

/// What a reminder or digest group composed for its delivery.
pub(crate) enum Composed {
    /// A reminder delivery's JSON, with the template its subjects name for
    /// its channel type, if any (which wins over `[reminders.templates]`).
    Reminder(String, Option<TemplateRef>),
    /// A digest's text, sent as it is.
    Digest(String),
}

/// The message of a delivery: `composed` is what its group composed;
/// `part` is the channel's part; `reminder_shape` is the channel's legacy
/// `reminder_template`.
pub(crate) fn message(
    lib: &Library,
    cfg: &EngineConfig,
    row: &TimerRecord,
    composed: Option<Composed>,
    part: PartKey,
    profile: Option<&Profile>,
    reminder_shape: Option<&Value>,
) -> Message {
    match composed {
        Some(Composed::Reminder(m, own)) => {
            let how = Reminder {
                own: own.as_ref(),
                part,
                profile,
                shape: reminder_shape,
            };
            reminder(lib, cfg, row, m, how)
        }
        Some(Composed::Digest(m)) => Message::Text(m),
        None => match Routing::parse(row.routing.as_deref()).template {
            Some(r) => {
                let data = match serde_json::from_str::<Value>(&row.message) {
                    Ok(Value::Object(m)) => m,
                    _ => Map::new(),
                };
                timer(lib, row, &r, data, part, profile)
            }
            None => Message::Stored,
        },
    }
}

fn timer(
    lib: &Library,
    row: &TimerRecord,
    r: &TemplateRef,
    ctx: Map<String, Value>,
    part: PartKey,
    profile: Option<&Profile>,
) -> Message {
    match with_data(lib, row.tenant, r, ctx, part, profile) {
        Ok(m) => Message::Text(m),
        Err(e) => Message::Failed(e),
    }
}

/// Renders `r` with the sender's `data` for a reader with `profile` (its
/// locale picks the variant, its time zone the filters' zone): a timer's
/// message, or one recipient's of a job.
pub(crate) fn with_data(
    lib: &Library,
    tenant: herald_core::TenantId,
    r: &TemplateRef,
    mut ctx: Map<String, Value>,
    part: PartKey,
    profile: Option<&Profile>,
) -> Result<String, String> {
    let locale = profile.and_then(|p| p.locale.clone());
    let tz = profile.and_then(|p| p.timezone.clone());
    ctx.entry("timezone")
        .or_insert_with(|| json!(tz.as_deref().unwrap_or("UTC")));
    ctx.entry("locale").or_insert_with(|| json!(locale));
    let locale = locale.or_else(|| {
        ctx.get("locale")
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    lib.render(tenant, r, part, locale.as_deref(), &Value::Object(ctx))
        .map(|out| out.message.to_string())
        .map_err(|e| e.to_string())
}

/// How a reminder delivery is rendered: its subjects' own template, the
/// channel's part, the reader and the channel's `reminder_template`.
struct Reminder<'a> {
    own: Option<&'a TemplateRef>,
    part: PartKey,
    profile: Option<&'a Profile>,
    shape: Option<&'a Value>,
}

fn reminder(
    lib: &Library,
    cfg: &EngineConfig,
    row: &TimerRecord,
    composed: String,
    how: Reminder<'_>,
) -> Message {
    let Reminder {
        own,
        part,
        profile,
        shape: reminder_shape,
    } = how;
    let Ok(Value::Object(m)) = serde_json::from_str::<Value>(&composed) else {
        return Message::Text(composed);
    };
    let template = own.or_else(|| {
        m.get("channel_type")
            .and_then(Value::as_str)
            .and_then(ChannelType::parse)
            .and_then(|t| cfg.reminder_templates.get(t.as_str()))
    });
    let Some(r) = template else {
        return match reminder_shape {
            Some(t) => Message::Text(herald_channels::template::render(t, &composed)),
            None => Message::Text(composed),
        };
    };
    let ctx = reminder_context(m, cfg, profile);
    let locale = profile.and_then(|p| p.locale.as_deref());
    render(lib, row, r, part, locale, &ctx)
}

/// What a reminder template sees: the reminder's own fields, `subject` as an
/// object (`id`, `title`, `data`, `start_at`), `subscriber` (`user_id`,
/// `locale`, `timezone`), and `timezone`: the subscriber's, else the
/// subject's `data.timezone`, else `[reminders] timezone`, else UTC.
pub(crate) fn reminder_context(
    mut m: Map<String, Value>,
    cfg: &EngineConfig,
    profile: Option<&Profile>,
) -> Value {
    let data = m.get("data").cloned().unwrap_or(Value::Null);
    let tz = profile
        .and_then(|p| p.timezone.clone())
        .or_else(|| {
            data.get("timezone")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .or_else(|| cfg.reminder_timezone.clone())
        .unwrap_or_else(|| "UTC".to_string());
    let subject = json!({
        "id": m.get("subject_id").cloned().unwrap_or(Value::Null),
        "title": m.get("subject").cloned().unwrap_or(Value::Null),
        "data": data,
        "start_at": m.get("start_at").cloned().unwrap_or(Value::Null),
    });
    let subscriber = json!({
        "user_id": m.get("user_id").cloned().unwrap_or(Value::Null),
        "locale": profile.and_then(|p| p.locale.clone()),
        "timezone": profile.and_then(|p| p.timezone.clone()),
    });
    m.insert("subject".into(), subject);
    m.insert("subscriber".into(), subscriber);
    m.insert("timezone".into(), json!(tz));
    m.insert(
        "locale".into(),
        json!(profile.and_then(|p| p.locale.clone())),
    );
    Value::Object(m)
}

fn render(
    lib: &Library,
    row: &TimerRecord,
    r: &TemplateRef,
    part: PartKey,
    locale: Option<&str>,
    ctx: &Value,
) -> Message {
    match lib.render(row.tenant, r, part, locale, ctx) {
        Ok(out) => Message::Text(out.message.to_string()),
        Err(e) => Message::Failed(e.to_string()),
    }
}
