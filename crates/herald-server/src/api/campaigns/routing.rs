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
        }) => Some(ChannelType::parse(&s).ok_or_else(|| {
            ApiError::field(
                "to.channel_type",
                "invalid_field",
                format!(
                    "to.channel_type {s:?} is not one of {}",
                    ChannelType::ALL.map(ChannelType::as_str).join(", ")
                ),
            )
        })?),
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
