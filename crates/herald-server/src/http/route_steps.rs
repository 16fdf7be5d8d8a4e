//! A request's fallback `route` (issue 39 §2): the steps as the caller
//! gives them, checked (`herald_core::route::check`, errors naming fields
//! such as `route[1].on[0]`) and resolved to configured channels, so what is
//! stored names the channel and address type of every step.
//!
//! A step names its channel by name (`channel`), by the subscriber address
//! type it sends to (`channel_type`), or both. A type alone goes where a
//! reminder of that type goes (`[reminders.channels]`, a channel named like
//! the type, `[reminders] default_channel`); a name alone sends to the
//! address type of the channel's kind (a webhook or log channel needs the
//! type said).

use herald_core::ChannelType;
use herald_core::route::{self, After, RouteError, Step, StepSpec};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::http::error::ApiError;
use crate::http::fields::unknown_channel;
use crate::http::text::{Text, check_text};

/// One step of a `route`.
#[derive(Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RouteStep {
    /// A configured channel; left out, the channel `channel_type` routes to
    /// (as a reminder of that type).
    #[serde(default)]
    pub channel: Option<String>,
    /// Which of the subscriber's addresses: `app`, `email`, `sms`, `wechat`
    /// or `wecom`; left out, the channel's own (required for webhook and
    /// log channels).
    #[serde(default)]
    pub channel_type: Option<String>,
    /// The outcomes of the step before that lead to this one (not on the
    /// first step; required on the others).
    #[serde(default)]
    #[schema(value_type = Vec<StepOnName>)]
    pub on: Vec<String>,
    /// With `unread`: how long after the step before was delivered to wait
    /// for its `read` receipt, `1s` to `30days` (`"30m"`).
    #[serde(default)]
    #[schema(example = "30m")]
    pub after: Option<String>,
    /// Jobs and rules: this step's own message (in its channel provider's
    /// shape) instead of the campaign's; not on the first step.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub message: Option<Box<serde_json::value::RawValue>>,
    /// Jobs and rules: this step's own template instead of the campaign's;
    /// not on the first step.
    #[serde(default)]
    pub template: Option<crate::http::template_use::TemplateUse>,
}

/// An outcome of the step before that a step is taken on.
#[derive(ToSchema)]
#[allow(non_camel_case_types, dead_code)]
pub enum StepOnName {
    /// The subscriber has no address of the step's type.
    no_address,
    /// The subscriber opted out of the type or the topic.
    opted_out,
    /// Refused by the provider, retries used up, or a template error.
    failed,
    /// Delivered, and no `read` receipt within `after`.
    unread,
}

impl RouteStep {
    /// A configured step as a request would give it.
    pub(crate) fn of_spec(s: &StepSpec) -> Self {
        RouteStep {
            channel: s.channel.clone(),
            channel_type: s.channel_type.clone(),
            on: s.on.clone(),
            after: s.after.as_ref().map(|a| match a {
                After::Secs(n) => format!("{n}s"),
                After::Text(t) => t.clone(),
            }),
            message: None,
            template: None,
        }
    }

    pub(crate) fn spec(&self) -> StepSpec {
        StepSpec {
            channel: self.channel.clone(),
            channel_type: self.channel_type.clone(),
            on: self.on.clone(),
            after: self.after.clone().map(After::Text),
        }
    }
}

/// A step of a stored route, as answers show it.
#[derive(Debug, Serialize, ToSchema)]
pub struct StepJson {
    pub channel: String,
    pub channel_type: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<StepOnName>)]
    pub on: Vec<&'static str>,
    /// The wait for a read receipt of an `unread` step, in ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_ms: Option<i64>,
}

impl StepJson {
    pub fn all(route: &[Step]) -> Vec<StepJson> {
        route
            .iter()
            .map(|s| StepJson {
                channel: s.channel.clone(),
                channel_type: s.channel_type.as_str(),
                on: s.on.iter().map(|o| o.as_str()).collect(),
                after_ms: s.after_ms,
            })
            .collect()
    }
}

/// What resolving needs to know about the node, for the caller's tenant.
pub(crate) struct Channels<'a> {
    /// Whether the tenant may name the channel.
    pub has: &'a (dyn Fn(&str) -> bool + Sync),
    /// The channels it may name, for errors.
    pub names: &'a (dyn Fn() -> Vec<String> + Sync),
    /// The address type of a channel's kind (`None` for webhooks and logs).
    pub type_of: &'a (dyn Fn(&str) -> Option<ChannelType> + Sync),
    /// The channel a type routes to, as a reminder's.
    pub for_type: &'a (dyn Fn(ChannelType) -> Option<String> + Sync),
}

/// `to.channel_type` as a request gives it, checked.
pub(crate) fn to_type(s: &str) -> Result<ChannelType, ApiError> {
    ChannelType::parse(s).ok_or_else(|| {
        ApiError::field(
            "to.channel_type",
            "invalid_field",
            format!(
                "to.channel_type {s:?} is not one of {}",
                ChannelType::ALL.map(ChannelType::as_str).join(", ")
            ),
        )
    })
}

/// Calls `f` with what resolving a route needs to know for `tenant` on this
/// node.
pub(crate) fn for_tenant<T>(
    st: &crate::http::state::AppState,
    tenant: herald_core::TenantId,
    f: impl FnOnce(&Channels<'_>) -> T,
) -> T {
    let has = |c: &str| st.serves_channel(tenant, c);
    let names = || st.channel_names_for(tenant);
    let type_of = |c: &str| {
        st.engine
            .channel_kind(c)
            .and_then(herald_channels::ChannelKind::channel_type)
    };
    let for_type = |t: ChannelType| st.channel_for_type(tenant, t);
    f(&Channels {
        has: &has,
        names: &names,
        type_of: &type_of,
        for_type: &for_type,
    })
}

/// The error a core check gives, as an answer naming its field.
pub(crate) fn api_error(e: RouteError) -> ApiError {
    let code = if e.missing {
        "missing_field"
    } else {
        "invalid_field"
    };
    ApiError::field(&e.field, code, e.message)
}

/// Refuses a step's own `message` or `template`: a timer's or reminder's
/// steps all send its own.
pub(crate) fn no_step_content(steps: &[RouteStep]) -> Result<(), ApiError> {
    for (i, s) in steps.iter().enumerate() {
        let which = match (&s.message, &s.template) {
            (Some(_), _) => "message",
            (None, Some(_)) => "template",
            (None, None) => continue,
        };
        return Err(ApiError::field(
            &format!("route[{i}].{which}"),
            "invalid_field",
            "every step of a timer's or reminder's route sends its own message or template \
             (a template renders for each step's channel type); a step's own content is \
             for jobs and rules",
        ));
    }
    Ok(())
}

/// Checks and resolves the steps under `field`. The first step takes the
/// request's own `channel` and address type (`first`) where it leaves them
/// out, and may not say otherwise.
pub(crate) fn resolve(
    field: &str,
    steps: &[RouteStep],
    first: (Option<&str>, Option<ChannelType>),
    ch: &Channels<'_>,
) -> Result<Vec<Step>, ApiError> {
    let specs: Vec<StepSpec> = steps.iter().map(RouteStep::spec).collect();
    resolve_specs(field, specs, first, ch)
}

/// [`resolve`] for steps as the core reads them (a configured default).
pub(crate) fn resolve_specs(
    field: &str,
    mut specs: Vec<StepSpec>,
    first: (Option<&str>, Option<ChannelType>),
    ch: &Channels<'_>,
) -> Result<Vec<Step>, ApiError> {
    if let Some(s0) = specs.first_mut() {
        if s0.channel.is_none() {
            s0.channel = first.0.map(str::to_string);
        }
        if s0.channel_type.is_none() {
            s0.channel_type = first.1.map(|t| t.as_str().to_string());
        }
    }
    let checked = route::check(field, &specs).map_err(api_error)?;
    let mut out = Vec::with_capacity(checked.len());
    for (i, c) in checked.iter().enumerate() {
        let at = format!("{field}[{i}]");
        if i == 0 {
            if let (Some(given), Some(own)) = (first.0, c.channel.as_deref())
                && given != own
            {
                return Err(ApiError::field(
                    &format!("{at}.channel"),
                    "invalid_field",
                    format!("the first step is the request's own channel {given:?}, not {own:?}"),
                ));
            }
            if let (Some(given), Some(own)) = (first.1, c.channel_type)
                && given != own
            {
                return Err(ApiError::field(
                    &format!("{at}.channel_type"),
                    "invalid_field",
                    format!("the first step sends to the request's own type {given}, not {own}"),
                ));
            }
        }
        let (channel, field_named) = match (&c.channel, c.channel_type) {
            (Some(name), _) => {
                check_text(&format!("{at}.channel"), name, Text::Id)?;
                (name.clone(), format!("{at}.channel"))
            }
            (None, Some(t)) => match (ch.for_type)(t) {
                Some(name) => (name, format!("{at}.channel_type")),
                None => {
                    return Err(ApiError::field(
                        &format!("{at}.channel_type"),
                        "unrouted_channel_type",
                        format!(
                            "no channel is configured for channel_type {t}: name the step's \
                             channel, or set [reminders.channels].{t}"
                        ),
                    ));
                }
            },
            // `route::check` asks for one or the other.
            (None, None) => {
                return Err(ApiError::field(
                    &format!("{at}.channel_type"),
                    "missing_field",
                    "a step names a channel, a channel_type, or both",
                ));
            }
        };
        if !(ch.has)(&channel) {
            return Err(unknown_channel(&field_named, &channel, &(ch.names)()));
        }
        let channel_type = match c.channel_type.or_else(|| (ch.type_of)(&channel)) {
            Some(t) => t,
            None => {
                return Err(ApiError::field(
                    &format!("{at}.channel_type"),
                    "missing_field",
                    format!(
                        "channel {channel:?} takes any address: say which of the subscriber's \
                         to use with {at}.channel_type"
                    ),
                ));
            }
        };
        out.push(c.resolved(channel, channel_type));
    }
    Ok(out)
}
