//! Turning request JSON into a [`NewTimer`], or a 400 naming the field.
//! Shared by the single and the bulk endpoint so both accept the same input.

use std::borrow::Cow;
use std::sync::Arc;

use herald_channels::ChannelKind;

use herald_core::campaign::{INTERNAL_KEY_PREFIX, is_internal_key};
use herald_core::digest::Digest;
use herald_core::route::{Step, StepSpec};
use herald_core::subscriber::check_topic;
use herald_core::template::{Library, TemplateRef};
use herald_core::timer::Routing;
use herald_core::{ChannelType, TenantId, TimerKind, shard_for, time::parse_rfc3339_ms};
use herald_store::{MAX_USER_ID_BYTES, NewTimer};
use serde::Deserialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::http::error::ApiError;
use crate::http::fields::{check_priority, check_stored_object, unknown_channel};
use crate::http::json_body;
use crate::http::route_steps::{self, RouteStep};
use crate::http::tenancy::shard_of;
use crate::http::text::{Text, check_text};

/// Furthest ahead a timer may be scheduled.
pub const MAX_AHEAD_MS: i64 = 10 * 366 * 24 * 3600 * 1000;
pub const MAX_RECIPIENT_BYTES: usize = 1024;
pub const MAX_KEY_BYTES: usize = 255;

/// `POST /v1/timers` (and one line of `POST /v1/timers:bulk`).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateTimer<'a> {
    /// RFC 3339, at most 10 years ahead; give this or `delay_ms`.
    // `Cow`: borrowed unless the caller escaped a character (`\u002b`).
    #[serde(default, borrow, deserialize_with = "json_body::opt_cow_str")]
    #[schema(value_type = Option<String>, format = DateTime)]
    fire_at: Option<Cow<'a, str>>,
    /// At most 10 years.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 315_576_000_000_i64)]
    delay_ms: Option<i64>,
    /// A configured channel; required unless `route` is given (its first
    /// step's channel).
    #[serde(default)]
    channel: Option<String>,
    /// The address as the provider takes it; give this or `to`.
    #[serde(default)]
    recipient: Option<String>,
    /// A subscriber: the address is read from the directory when the timer fires.
    #[serde(default)]
    to: Option<To>,
    /// What the message is about (subscribers may opt out of a topic).
    #[serde(default)]
    topic: Option<String>,
    /// Sent even in quiet hours (never past an opt-out).
    #[serde(default)]
    critical: Option<bool>,
    /// Counted against the tenant's `[[rate_limits]]` under this key (a
    /// shop id, say): over a limit, the send waits for its window.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 128)]
    rate_key: Option<String>,
    /// Held back and sent in one message with the other timers of the same
    /// recipient, channel and key; the answer's `due_at` is the digest's close.
    #[serde(default)]
    digest: Option<Digest>,
    /// The message in the channel provider's shape; give this or `template`.
    #[serde(default, borrow)]
    #[schema(value_type = Option<Object>)]
    message: Option<&'a RawValue>,
    /// Render the message from a stored template when the timer fires, in
    /// the recipient's locale; give this or `message`.
    #[serde(default)]
    template: Option<TemplateUse>,
    /// 1..=255 visible ASCII characters.
    #[serde(default)]
    #[schema(pattern = "^[!-~]{1,255}$")]
    idempotency_key: Option<String>,
    #[serde(default)]
    #[schema(minimum = 0, maximum = 9)]
    priority: Option<i64>,
    /// With an existing idempotency key: `return` the timer (default) or
    /// `replace` a pending one's time, message and priority.
    #[serde(default)]
    #[schema(value_type = Option<OnConflict>)]
    on_conflict: Option<String>,
    /// A fallback route for a timer `to` a subscriber: its first step is the
    /// timer's own channel and address type; a later step is sent when the
    /// step before ends in an outcome the later one lists in `on`.
    #[serde(default)]
    route: Option<Vec<RouteStep>>,
}

/// `to` of `POST /v1/timers`: a subscriber, whose address is read from the
/// directory when the timer fires.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = TimerTo)]
pub(crate) struct To {
    user_id: String,
    /// Which of the subscriber's addresses: `app`, `email`, `sms`, `wechat`
    /// or `wecom`; defaults to the channel's own (required for webhook and
    /// log channels).
    #[serde(default)]
    channel_type: Option<String>,
}

pub(crate) use crate::http::template_use::TemplateUse;

/// What `POST /v1/timers` does when the idempotency key is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum OnConflict {
    /// Answer the stored timer as it is.
    #[default]
    Return,
    /// A pending timer takes the new time, message and priority.
    Replace,
}

/// The address type of a channel by name.
pub type TypeOfChannel<'a> = Box<dyn Fn(&str) -> Option<ChannelType> + Send + Sync + 'a>;

/// What validation needs to know about the running service.
pub struct Context<'a> {
    /// The caller's tenant: the timer is its, and so is the key's scope.
    pub tenant: TenantId,
    pub now_ms: i64,
    pub shards: u16,
    pub has_channel: &'a (dyn Fn(&str) -> bool + Sync),
    pub channel_names: &'a (dyn Fn() -> Vec<String> + Sync),
    /// The address type a channel's provider takes (`None` for webhooks).
    pub channel_type: TypeOfChannel<'a>,
    /// The provider kind of a channel, for checking a message's shape.
    pub channel_kind: KindOfChannel<'a>,
    /// The templates this node knows now.
    pub templates: Arc<Library>,
    /// The channel a subscriber address type routes to (as a reminder's),
    /// for a route's steps.
    pub channel_for_type: TypeRoute<'a>,
    /// The tenant's default fallback route (`[routing]`), if any.
    pub default_route: Option<&'a [StepSpec]>,
}

/// The channel an address type routes to.
pub type TypeRoute<'a> = Box<dyn Fn(ChannelType) -> Option<String> + Send + Sync + 'a>;

/// The provider kind of a channel by name.
pub type KindOfChannel<'a> = Box<dyn Fn(&str) -> Option<ChannelKind> + Send + Sync + 'a>;

pub fn new_timer(body: &[u8], cx: &Context<'_>) -> Result<NewTimer, ApiError> {
    new_timer_and_conflict(body, cx).map(|(t, _)| t)
}

/// A new timer and what to do if its key is taken (`"on_conflict"`).
pub fn new_timer_and_conflict(
    body: &[u8],
    cx: &Context<'_>,
) -> Result<(NewTimer, OnConflict), ApiError> {
    let req: CreateTimer<'_> = json_body::object(body)?;
    let on_conflict = match req.on_conflict.as_deref() {
        None | Some("return") => OnConflict::Return,
        Some("replace") => OnConflict::Replace,
        Some(other) => {
            return Err(ApiError::field(
                "on_conflict",
                "invalid_field",
                format!("on_conflict must be \"return\" or \"replace\", not {other:?}"),
            ));
        }
    };
    let due_at = due_time(req.fire_at.as_deref(), req.delay_ms, cx.now_ms)?.ok_or_else(|| {
        ApiError::field(
            "fire_at",
            "missing_field",
            "give fire_at (RFC 3339) or delay_ms",
        )
    })?;

    let mut to = req.to;
    // The request's own route; else, for a timer to a subscriber that
    // names no channel, the tenant's default (`[routing]`).
    let specs = match (req.route.as_deref(), cx.default_route) {
        (Some(steps), _) => {
            route_steps::no_step_content(steps)?;
            Some(steps.iter().map(RouteStep::spec).collect())
        }
        (None, Some(d)) if req.channel.is_none() && to.is_some() && req.digest.is_none() => {
            Some(d.to_vec())
        }
        (None, _) => None,
    };
    let route = match specs {
        Some(specs) => Some(timer_route(
            specs,
            req.channel.as_deref(),
            &mut to,
            req.recipient.is_some(),
            req.digest.is_some(),
            cx,
        )?),
        None => None,
    };
    let channel = match (&route, req.channel) {
        (Some(r), _) => r.first().map(|s| s.channel.clone()).unwrap_or_default(),
        (None, Some(c)) => c,
        (None, None) => {
            return Err(ApiError::field(
                "channel",
                "missing_field",
                "give channel (or a route)",
            ));
        }
    };
    if channel.is_empty() {
        return Err(ApiError::field(
            "channel",
            "missing_field",
            "channel must not be empty",
        ));
    }
    check_text("channel", &channel, Text::Id)?;
    if !(cx.has_channel)(&channel) {
        return Err(unknown_channel("channel", &channel, &(cx.channel_names)()));
    }
    if let Some(d) = &req.digest {
        d.validate()
            .map_err(|e| ApiError::field(e.field, "invalid_field", e.message))?;
        if on_conflict == OnConflict::Replace {
            return Err(ApiError::field(
                "digest",
                "invalid_field",
                "a digest timer cannot be created with on_conflict \"replace\"",
            ));
        }
    }
    let digested = req.digest.is_some();
    let (recipient, routing) = addressing(
        Addressing {
            recipient: req.recipient,
            to,
            topic: req.topic,
            critical: req.critical,
            rate_key: req.rate_key,
            digest: req.digest,
        },
        &channel,
        cx,
    )?;
    if let Some(steps) = &route {
        // Every later step sends the same message through its own channel.
        for (i, s) in steps.iter().enumerate().skip(1) {
            content(req.message, req.template.clone(), &s.channel, cx).map_err(|e| {
                ApiError::field(
                    &format!("route[{i}].channel"),
                    "invalid_field",
                    format!(
                        "step {i} sends through channel {:?}, which cannot take this timer's \
                         content: {}",
                        s.channel, e.body.message
                    ),
                )
            })?;
        }
    }
    let (message, template) = content(req.message, req.template, &channel, cx)?;
    let routing = with_template(routing, template);
    let routing = with_route(routing, route);
    if let Some(k) = &req.idempotency_key {
        // It travels as an HTTP header, so: visible ASCII only.
        let ok = !k.is_empty()
            && k.len() <= MAX_KEY_BYTES
            && k.bytes().all(|b| (0x21..=0x7e).contains(&b));
        if !ok {
            return Err(ApiError::field(
                "idempotency_key",
                "invalid_field",
                format!("idempotency_key must be 1..={MAX_KEY_BYTES} visible ASCII characters"),
            ));
        }
        if is_internal_key(k) {
            return Err(ApiError::field(
                "idempotency_key",
                "invalid_field",
                format!(
                    "idempotency_key may not start with {INTERNAL_KEY_PREFIX:?} (any case): \
                     Herald's own keys do"
                ),
            ));
        }
    }
    let priority = check_priority(req.priority)?;
    // A digest's members share their recipient's shard, and so an owner and
    // a fence, to go out as one delivery (as a user's reminders do).
    let shard = match &req.idempotency_key {
        _ if digested => shard_of(cx.tenant, &recipient, cx.shards),
        Some(k) => shard_of(cx.tenant, k, cx.shards),
        None => shard_for(&rand::random::<u64>().to_le_bytes(), cx.shards),
    };
    let timer = NewTimer {
        tenant: cx.tenant,
        shard,
        due_at,
        priority,
        kind: TimerKind::Timer,
        channel,
        recipient,
        message,
        idempotency_key: req.idempotency_key,
        created_at: cx.now_ms,
        traceparent: None,
        routing,
    };
    Ok((timer, on_conflict))
}

/// The stored message of a timer and the template it names, if any: a
/// `message` checked against the channel provider's shape, or a `template`
/// that exists, has the channel's part and gets every variable it reads.
fn content(
    message: Option<&RawValue>,
    template: Option<TemplateUse>,
    channel: &str,
    cx: &Context<'_>,
) -> Result<(String, Option<TemplateRef>), ApiError> {
    // A timer's body is already bounded by `api.max_timer_bytes`.
    checked_content(
        message,
        template,
        (cx.channel_kind)(channel),
        cx.tenant,
        &cx.templates,
        check_stored_object,
    )
}

/// A job's or rule's `message` or `template`, as [`content`] checks a
/// timer's: the stored message (the template's data for a template) and
/// the template it names.
pub(crate) fn campaign_content(
    message: Option<&RawValue>,
    template: Option<TemplateUse>,
    kind: Option<ChannelKind>,
    tenant: TenantId,
    templates: &Library,
) -> Result<(String, Option<TemplateRef>), ApiError> {
    checked_content(
        message,
        template,
        kind,
        tenant,
        templates,
        crate::http::fields::check_message_at,
    )
}

/// `message` or `template`, each object checked with `object` (at its
/// field's name) and a message against `kind`'s provider.
fn checked_content(
    message: Option<&RawValue>,
    template: Option<TemplateUse>,
    kind: Option<ChannelKind>,
    tenant: TenantId,
    templates: &Library,
    object: fn(&str, &RawValue) -> Result<(), ApiError>,
) -> Result<(String, Option<TemplateRef>), ApiError> {
    match (message, template) {
        (Some(_), Some(_)) => Err(ApiError::field(
            "template",
            "invalid_field",
            "give either message or template, not both",
        )),
        (None, None) => Err(ApiError::field(
            "message",
            "missing_field",
            "give message (the provider's shape) or template (a stored template's name)",
        )),
        (Some(m), None) => {
            object("message", m)?;
            if let Some(kind) = kind {
                check_shape(kind, "message", m)?;
            }
            Ok((m.get().to_string(), None))
        }
        (None, Some(t)) => {
            let r = check_template_use(&t, kind, tenant, templates)?;
            let data = match &t.data {
                Some(d) => {
                    object("template.data", d)?;
                    d.get().to_string()
                }
                None => "{}".to_string(),
            };
            Ok((data, Some(r)))
        }
    }
}

/// Checks `message` (at `field`) against what `kind`'s provider takes.
pub(crate) fn check_shape(kind: ChannelKind, field: &str, m: &RawValue) -> Result<(), ApiError> {
    let v: serde_json::Value = serde_json::from_str(m.get())
        .map_err(|e| ApiError::field(field, "invalid_field", format!("{field}: {e}")))?;
    herald_channels::shape::check(kind, &v).map_err(|e| {
        let at = if e.field.is_empty() {
            field.to_string()
        } else {
            format!("{field}.{}", e.field)
        };
        ApiError::field(&at, "invalid_field", e.message)
    })
}

/// Checks a `template` use against the stored templates: it exists (the
/// pinned version, if any), its default variant has the part `kind` sends,
/// and `data` gives every variable it reads. A misfit is `422` naming the
/// field (issue 39); a malformed name or `data` is `400`.
pub(crate) fn check_template_use(
    t: &TemplateUse,
    kind: Option<ChannelKind>,
    tenant: TenantId,
    templates: &Library,
) -> Result<TemplateRef, ApiError> {
    herald_core::template::check_name(&t.name)
        .map_err(|e| ApiError::field("template.name", "invalid_field", e))?;
    let r = TemplateRef {
        name: t.name.clone(),
        version: t.version,
    };
    let info = templates.info(tenant, &r).map_err(|e| {
        let field = if t.version.is_some() {
            "template.version"
        } else {
            "template.name"
        };
        ApiError::unprocessable(field, "unknown_template", e.to_string())
    })?;
    if let Some(kind) = kind {
        let part = kind.template_part();
        if !info.default_parts.contains(&part) {
            return Err(ApiError::unprocessable(
                "template.name",
                "invalid_field",
                format!(
                    "template {:?} version {} has no {} part in its default variant, which \
                     this channel sends",
                    t.name,
                    info.version,
                    part.as_str()
                ),
            ));
        }
    }
    let given: serde_json::Map<String, serde_json::Value> = match &t.data {
        Some(d) => match serde_json::from_str(d.get()) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => {
                return Err(ApiError::field(
                    "template.data",
                    "invalid_field",
                    "template.data must be a JSON object",
                ));
            }
        },
        None => serde_json::Map::new(),
    };
    if let Some(missing) = info.variables.iter().find(|v| !given.contains_key(*v)) {
        return Err(ApiError::unprocessable(
            &format!("template.data.{missing}"),
            "missing_field",
            format!(
                "template {:?} version {} reads {missing:?}: give it in template.data",
                t.name, info.version
            ),
        ));
    }
    Ok(r)
}

/// `routing` (stored text) with the template reference added.
pub(crate) fn with_template(
    routing: Option<String>,
    template: Option<TemplateRef>,
) -> Option<String> {
    let Some(template) = template else {
        return routing;
    };
    let mut r = Routing::parse(routing.as_deref());
    r.template = Some(template);
    r.stored()
}

/// `routing` (stored text) with a fallback route added.
fn with_route(routing: Option<String>, route: Option<Vec<Step>>) -> Option<String> {
    let Some(route) = route else {
        return routing;
    };
    let mut r = Routing::parse(routing.as_deref());
    r.route = route;
    r.stored()
}

/// A timer's `route`, checked and resolved: only for a timer `to` a
/// subscriber (whose `to.channel_type` becomes the first step's type when
/// it gives none), never with a digest.
fn timer_route(
    steps: Vec<StepSpec>,
    channel: Option<&str>,
    to: &mut Option<To>,
    raw_recipient: bool,
    digest: bool,
    cx: &Context<'_>,
) -> Result<Vec<Step>, ApiError> {
    if raw_recipient {
        return Err(ApiError::field(
            "route",
            "invalid_field",
            "a route goes through a subscriber's addresses: give to, not recipient",
        ));
    }
    let Some(to) = to else {
        return Err(ApiError::field(
            "to",
            "missing_field",
            "a route goes through a subscriber's addresses: give to.user_id",
        ));
    };
    if digest {
        return Err(ApiError::field(
            "route",
            "invalid_field",
            "a digest timer cannot have a route",
        ));
    }
    let first_type = match &to.channel_type {
        Some(s) => Some(route_steps::to_type(s)?),
        None => None,
    };
    let type_of = |c: &str| (cx.channel_type)(c);
    let for_type = |t: ChannelType| (cx.channel_for_type)(t);
    let channels = route_steps::Channels {
        has: cx.has_channel,
        names: cx.channel_names,
        type_of: &type_of,
        for_type: &for_type,
    };
    let route = route_steps::resolve_specs("route", steps, (channel, first_type), &channels)?;
    if let Some(first) = route.first() {
        to.channel_type = Some(first.channel_type.as_str().to_string());
    }
    Ok(route)
}

/// What a create request says about where and how a timer goes.
struct Addressing {
    recipient: Option<String>,
    to: Option<To>,
    topic: Option<String>,
    critical: Option<bool>,
    rate_key: Option<String>,
    /// Already checked.
    digest: Option<Digest>,
}

/// The stored recipient and routing of a timer: a raw `recipient`, or a
/// subscriber `to` (whose address type defaults to the channel's), with an
/// optional `topic`, `critical` flag and `digest`.
fn addressing(
    a: Addressing,
    channel: &str,
    cx: &Context<'_>,
) -> Result<(String, Option<String>), ApiError> {
    let Addressing {
        recipient,
        to,
        topic,
        critical,
        rate_key,
        digest,
    } = a;
    let mut routing = Routing {
        topic,
        critical: critical.unwrap_or(false),
        digest,
        rate_key,
        ..Routing::default()
    };
    if let Some(t) = &routing.topic {
        check_topic(t).map_err(|why| ApiError::field("topic", "invalid_field", why))?;
    }
    if let Some(k) = &routing.rate_key {
        herald_core::pacing::check_rate_key(k).map_err(|why| {
            ApiError::field("rate_key", "invalid_field", format!("rate_key {why}"))
        })?;
    }
    let recipient = match (recipient, to) {
        (Some(_), Some(_)) => {
            return Err(ApiError::field(
                "to",
                "invalid_field",
                "give either recipient or to, not both",
            ));
        }
        (None, None) => {
            return Err(ApiError::field(
                "recipient",
                "missing_field",
                "give recipient (an address) or to (a subscriber)",
            ));
        }
        (Some(r), None) => {
            if r.is_empty() || r.len() > MAX_RECIPIENT_BYTES {
                return Err(ApiError::field(
                    "recipient",
                    "invalid_field",
                    format!("recipient must be 1..={MAX_RECIPIENT_BYTES} bytes"),
                ));
            }
            check_text("recipient", &r, Text::Id)?;
            r
        }
        (None, Some(to)) => {
            if to.user_id.is_empty() || to.user_id.len() > MAX_USER_ID_BYTES {
                return Err(ApiError::field(
                    "to.user_id",
                    "invalid_field",
                    format!("to.user_id must be 1..={MAX_USER_ID_BYTES} bytes"),
                ));
            }
            check_text("to.user_id", &to.user_id, Text::Id)?;
            let ty = match &to.channel_type {
                Some(s) => route_steps::to_type(s)?,
                None => (cx.channel_type)(channel).ok_or_else(|| {
                    ApiError::field(
                        "to.channel_type",
                        "missing_field",
                        format!(
                            "channel {channel:?} takes any address: say which of the \
                             subscriber's to use with to.channel_type"
                        ),
                    )
                })?,
            };
            routing.to = Some(ty);
            to.user_id
        }
    };
    // Strings and flags always serialize.
    let routing = (!routing.is_plain())
        .then(|| serde_json::to_string(&routing).ok())
        .flatten();
    Ok((recipient, routing))
}

/// The due time `fire_at` or `delay_ms` names (`None` when neither is
/// given): a time already past is now; more than 10 years ahead is refused.
pub fn due_time(
    fire_at: Option<&str>,
    delay_ms: Option<i64>,
    now_ms: i64,
) -> Result<Option<i64>, ApiError> {
    Ok(Some(match (fire_at, delay_ms) {
        (Some(_), Some(_)) => {
            return Err(ApiError::field(
                "fire_at",
                "invalid_field",
                "give either fire_at or delay_ms, not both",
            ));
        }
        (None, None) => return Ok(None),
        (Some(s), None) => {
            let at = parse_rfc3339_ms(s).map_err(|e| {
                ApiError::field(
                    "fire_at",
                    "invalid_field",
                    format!("fire_at {s:?} is not an RFC 3339 time: {e}"),
                )
            })?;
            if at > now_ms.saturating_add(MAX_AHEAD_MS) {
                return Err(ApiError::field(
                    "fire_at",
                    "invalid_field",
                    "fire_at is more than 10 years ahead",
                ));
            }
            // A time already past fires at once.
            at.max(now_ms)
        }
        (None, Some(d)) => {
            if d < 0 {
                return Err(ApiError::field(
                    "delay_ms",
                    "invalid_field",
                    "delay_ms must not be negative",
                ));
            }
            if d > MAX_AHEAD_MS {
                return Err(ApiError::field(
                    "delay_ms",
                    "invalid_field",
                    "delay_ms is more than 10 years",
                ));
            }
            now_ms.saturating_add(d)
        }
    }))
}
