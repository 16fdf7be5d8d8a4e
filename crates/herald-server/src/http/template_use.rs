//! `template` as a request gives it (timers, jobs, rules and their route
//! steps): which stored template, and the data it renders with.

use serde::Deserialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

/// `template` of a timer: which template (its latest version when the timer
/// fires, unless one is pinned) and the data it renders with.
#[derive(Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TemplateUse {
    pub name: String,
    #[serde(default)]
    #[schema(minimum = 1)]
    pub version: Option<u32>,
    /// The variables the template reads (a JSON object).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub data: Option<Box<RawValue>>,
}
