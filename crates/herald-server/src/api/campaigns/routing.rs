//! `to`, `topic` and `critical` of a job or rule: whether its audience holds
//! user ids that the subscriber directory turns into addresses when the job
//! sends, what the message is about (for topic opt-outs), and whether it may
//! go out in quiet hours. Stored with the job or rule version as the same
//! `Routing` JSON a timer carries.

use herald_core::ChannelType;
use herald_core::subscriber::check_topic;
use herald_core::timer::Routing;
use serde::{Deserialize, Serialize};

use crate::http::error::ApiError;
use crate::http::route_steps::{self, RouteStep};
use crate::http::state::AppState;
use herald_core::TenantId;
use herald_core::route::StepSpec;

/// `"to"` of a job or rule: every audience entry is a user id; send to that
/// subscriber's address of `channel_type` (default: the channel's own type).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CampaignTo {
    #[serde(default)]
    channel_type: Option<String>,
}

/// The routing fields of a job or rule body, as given.
pub(crate) struct RoutingFields {
    pub to: Option<CampaignTo>,
    pub topic: Option<String>,
    pub critical: Option<bool>,
}

/// Checks the routing fields of a job or rule sending through `channel`, whose
/// provider takes addresses of `channel_type` (`None`: any, as a webhook
/// does). The JSON to store, `None` when the fields change nothing.
pub(crate) fn check(
    f: RoutingFields,
    channel: &str,
    channel_type: Option<ChannelType>,
) -> Result<Option<String>, ApiError> {
    if let Some(t) = &f.topic {
        check_topic(t).map_err(|why| ApiError::field("topic", "invalid_field", why))?;
    }
    let to = match f.to {
        None => None,
        Some(CampaignTo {
            channel_type: Some(s),
        }) => Some(route_steps::to_type(&s)?),
        Some(CampaignTo { channel_type: None }) => Some(channel_type.ok_or_else(|| {
            ApiError::field(
                "to.channel_type",
                "missing_field",
                format!(
                    "channel {channel:?} takes any address: say which of the \
                     subscribers' addresses to use with to.channel_type"
                ),
            )
        })?),
    };
    let routing = Routing {
        to,
        topic: f.topic,
        critical: f.critical.unwrap_or(false),
        digest: None,
        template: None,
        ..Routing::default()
    };
    Ok(routing.stored())
}

/// A job's or rule's channel and route: as given; or, when it names no
/// channel, its route's (or, with no route and `to`, the tenant's default
/// route's, `[routing]`) first step's channel.
pub(crate) fn channel_and_route(
    st: &AppState,
    tenant: TenantId,
    channel: Option<String>,
    route: Option<Vec<RouteStep>>,
    to: Option<&mut CampaignTo>,
) -> Result<(String, Option<Vec<RouteStep>>), ApiError> {
    // `to` without a type sends to the route's first step's.
    let mut to = to;
    if let Some(c) = channel {
        if let (Some(t), Some(first)) = (to.as_deref_mut(), route.as_ref().and_then(|r| r.first()))
            && t.channel_type.is_none()
        {
            t.channel_type = first.channel_type.clone();
        }
        return Ok((c, route));
    }
    let route = match (route, to.is_some(), st.default_routes.of(tenant)) {
        (Some(r), _, _) => r,
        (None, true, Some(d)) => d.iter().map(RouteStep::of_spec).collect(),
        _ => {
            return Err(ApiError::field(
                "channel",
                "missing_field",
                "give channel (or a route, or, with to, set [routing.default])",
            ));
        }
    };
    let first_type = match to.as_deref().and_then(|t| t.channel_type.as_deref()) {
        Some(s) => Some(route_steps::to_type(s)?),
        None => None,
    };
    let resolved = route_steps::for_tenant(st, tenant, |channels| {
        let first: Vec<StepSpec> = route.iter().take(1).map(RouteStep::spec).collect();
        route_steps::resolve_specs("route", first, (None, first_type), channels)
    })?;
    let Some(first) = resolved.first() else {
        return Err(ApiError::field(
            "route",
            "invalid_field",
            "a route has steps",
        ));
    };
    if let Some(t) = to
        && t.channel_type.is_none()
    {
        t.channel_type = Some(first.channel_type.as_str().to_string());
    }
    Ok((first.channel.clone(), Some(route)))
}

/// A job's or rule's `route` added to its stored `routing` (checked by
/// [`check`], with its template): the audience must be user ids (`to`); the
/// first step is the campaign's own `channel` and type; each later step's
/// content (its own `message` or `template`, else the campaign's `message`
/// and template) must be sendable through its channel. Each later step runs
/// as a follow-up job ([`herald_store::route_follow_up`]).
pub(crate) fn with_route(
    st: &AppState,
    tenant: TenantId,
    routing: Option<String>,
    steps: Option<Vec<RouteStep>>,
    channel: &str,
    message: &str,
) -> Result<Option<String>, ApiError> {
    let Some(steps) = steps else {
        return Ok(routing);
    };
    let mut r = Routing::parse(routing.as_deref());
    let Some(first_type) = r.to else {
        return Err(ApiError::field(
            "to",
            "missing_field",
            "a route goes through subscribers' addresses: give to (the audience is user ids)",
        ));
    };
    if let Some(s0) = steps.first() {
        let own = if s0.message.is_some() {
            Some("message")
        } else if s0.template.is_some() {
            Some("template")
        } else {
            None
        };
        if let Some(which) = own {
            return Err(ApiError::field(
                &format!("route[0].{which}"),
                "invalid_field",
                "the first step sends the campaign's own message or template",
            ));
        }
    }
    let mut resolved = route_steps::for_tenant(st, tenant, |channels| {
        route_steps::resolve("route", &steps, (Some(channel), Some(first_type)), channels)
    })?;
    let lib = st.engine.templates().library();
    for (i, (step, given)) in resolved.iter_mut().zip(steps).enumerate().skip(1) {
        let kind = st.engine.channel_kind(&step.channel);
        if given.message.is_some() || given.template.is_some() {
            let (m, t) = crate::http::validate::campaign_content(
                given.message.as_deref(),
                given.template,
                kind,
                tenant,
                &lib,
            )
            .map_err(|mut e| {
                let field = e.body.field.take().unwrap_or_default();
                e.body.field = Some(format!("route[{i}].{field}"));
                e
            })?;
            step.message = Some(m);
            step.template = t;
        } else if let Some(kind) = kind {
            fits(kind, message, r.template.as_ref(), tenant, &lib).map_err(|why| {
                ApiError::field(
                    &format!("route[{i}].channel"),
                    "invalid_field",
                    format!(
                        "step {i} sends through channel {:?}, which cannot take the \
                         campaign's content: {why}; give the step its own message or template",
                        step.channel
                    ),
                )
            })?;
        }
    }
    r.route = resolved;
    Ok(r.stored())
}

/// Whether a campaign's stored `message` (its template's data when it has
/// `template`) can go through a channel of `kind`.
fn fits(
    kind: herald_channels::ChannelKind,
    message: &str,
    template: Option<&herald_core::template::TemplateRef>,
    tenant: TenantId,
    lib: &herald_core::template::Library,
) -> Result<(), String> {
    match template {
        Some(t) => {
            let info = lib.info(tenant, t).map_err(|e| e.to_string())?;
            let part = kind.template_part();
            if info.default_parts.contains(&part) {
                Ok(())
            } else {
                Err(format!(
                    "template {:?} has no {} part",
                    t.name,
                    part.as_str()
                ))
            }
        }
        None => {
            let raw = serde_json::value::RawValue::from_string(message.to_string())
                .map_err(|e| e.to_string())?;
            crate::http::validate::check_shape(kind, "message", &raw).map_err(|e| e.body.message)
        }
    }
}

/// The routing of a job or rule in an answer.
#[derive(Debug, Default, Serialize, utoipa::ToSchema)]
pub(crate) struct RoutingJson {
    /// Present when the audience holds user ids resolved through the
    /// subscriber directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<ToTypeJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub critical: bool,
    /// The template each recipient's message is rendered from; `message`
    /// is then its data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<herald_core::template::TemplateRef>,
    /// Its fallback route; `channel` and `to` are those of the step it is
    /// (a route step's follow-up job is at a later one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<Vec<route_steps::StepJson>>,
    /// The step of its route this job sends (0 for the first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
}

/// `to` in an answer: which of the subscriber's addresses is used.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct ToTypeJson {
    pub channel_type: &'static str,
}

impl RoutingJson {
    /// From the stored routing text.
    pub fn of(stored: Option<&str>) -> Self {
        let r = Routing::parse(stored);
        Self {
            to: r.to.map(|t| ToTypeJson {
                channel_type: t.as_str(),
            }),
            topic: r.topic,
            critical: r.critical,
            template: r.template,
            step: (!r.route.is_empty()).then_some(r.step),
            route: (!r.route.is_empty()).then(|| route_steps::StepJson::all(&r.route)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(ty: Option<&str>, topic: Option<&str>) -> RoutingFields {
        RoutingFields {
            to: Some(CampaignTo {
                channel_type: ty.map(str::to_string),
            }),
            topic: topic.map(str::to_string),
            critical: None,
        }
    }

    #[test]
    fn to_defaults_to_the_channels_type_and_names_its_field_when_refused() {
        let stored = check(fields(None, Some("coupons")), "fcm", Some(ChannelType::App))
            .unwrap()
            .unwrap();
        let r = Routing::parse(Some(&stored));
        assert_eq!(
            (r.to, r.topic.as_deref()),
            (Some(ChannelType::App), Some("coupons"))
        );
        let e = check(fields(None, None), "hook", None).unwrap_err();
        assert!(format!("{e:?}").contains("to.channel_type"), "{e:?}");
        let e = check(fields(Some("pager"), None), "hook", None).unwrap_err();
        assert!(format!("{e:?}").contains("to.channel_type"), "{e:?}");
        let plain = RoutingFields {
            to: None,
            topic: None,
            critical: Some(false),
        };
        assert_eq!(check(plain, "hook", None).unwrap(), None);
    }
}
