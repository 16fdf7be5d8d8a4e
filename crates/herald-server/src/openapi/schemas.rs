//! Schemas of answers the handlers build with `json!`: described here, never
//! constructed. Everything the handlers serialize from a struct derives its
//! schema where it is defined.

#![allow(dead_code)]

use std::collections::BTreeMap;

use utoipa::ToSchema;

use crate::api::admin::audit::EntryJson;
use crate::api::admin::keys::KeyJson;
use crate::api::campaigns::audiences::AudienceJson;
use crate::api::campaigns::jobs::{
    FailureGroup, JobFailures, JobJson, JobRetried, SegmentJson, SendJson,
};
use crate::api::campaigns::rules::{RuleJson, TaskJson, VersionJson};
use crate::api::channels::{PausedJson, TokenJson};
use crate::api::reminders::subjects::SubjectSummaryJson;
use crate::api::timers::{DeliveryJson, TimerJson};
use crate::http::error::ErrorBody;

/// One answer line of a bulk endpoint (NDJSON), in input order.
#[derive(ToSchema)]
pub struct BulkLineResult {
    /// 1-based line number of the request.
    line: u64,
    /// The status the single endpoint would have answered.
    status: u16,
    error: Option<ErrorBody>,
}

/// A channel: configuration, provider state, outcomes and current rate.
#[derive(ToSchema)]
pub struct Channel {
    name: String,
    kind: String,
    concurrency: u64,
    rate_per_sec: Option<f64>,
    /// Unix ms; `null` when the channel uses no token or has none yet.
    token_valid_until: Option<i64>,
    /// Unix ms, while the provider has the channel paused.
    paused_until: Option<i64>,
    quiet_hours: Option<String>,
    /// Counts by outcome.
    outcomes: BTreeMap<String, u64>,
    /// Provider answers per second over the last ~10 s on this node.
    current_rate: f64,
    /// Paused by an operator (`:pause`); `null` when not.
    paused: Option<PausedJson>,
    /// For channels with tokens.
    token: Option<TokenJson>,
    rate_per_s: Option<f64>,
}

#[derive(ToSchema)]
pub struct ChannelList {
    channels: Vec<Channel>,
}

// ---- Routes of issue 15 (see DESIGN-15); switch to the handlers' types once merged.

/// A subscriber's profile (`PUT /v1/subscribers/{user_id}`, and a line of
/// `POST /v1/subscribers:bulk` with its `user_id`). Every field is
/// optional, none is `null`; unknown fields are refused.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubscriberBody {
    /// IANA time zone; the user's quiet hours follow it.
    #[schema(nullable = false)]
    timezone: Option<String>,
    #[schema(nullable = false)]
    locale: Option<String>,
    #[schema(nullable = false)]
    addresses: Option<SubscriberAddresses>,
    #[schema(nullable = false)]
    preferences: Option<SubscriberPreferences>,
    #[schema(nullable = false)]
    quiet_hours: Option<SubscriberQuietHours>,
}

/// One line of `POST /v1/subscribers:bulk`: the user and their profile.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubscriberLine {
    /// 1..=128 of `A-Z a-z 0-9 _ - . : @`.
    #[schema(pattern = "^[A-Za-z0-9_.:@-]{1,128}$")]
    user_id: String,
    #[schema(nullable = false)]
    timezone: Option<String>,
    #[schema(nullable = false)]
    locale: Option<String>,
    #[schema(nullable = false)]
    addresses: Option<SubscriberAddresses>,
    #[schema(nullable = false)]
    preferences: Option<SubscriberPreferences>,
    #[schema(nullable = false)]
    quiet_hours: Option<SubscriberQuietHours>,
}

/// `PATCH /v1/subscribers/{user_id}`: a JSON merge patch (RFC 7396) of the
/// profile: `null` removes a field, an object merges into the stored one.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubscriberPatch {
    timezone: Option<String>,
    locale: Option<String>,
    #[schema(value_type = Option<Object>)]
    addresses: Option<serde_json::Value>,
    #[schema(value_type = Option<Object>)]
    preferences: Option<serde_json::Value>,
    quiet_hours: Option<SubscriberQuietHours>,
}

/// Where a user is reached, per channel type.
#[derive(ToSchema)]
pub struct SubscriberAddresses {
    /// RFC 5321 (`+` allowed).
    email: Option<String>,
    /// E.164.
    sms: Option<String>,
    /// The user's openid per WeChat channel name.
    wechat: Option<BTreeMap<String, String>>,
    /// WeCom user id.
    wecom: Option<String>,
    /// Up to 10 device tokens.
    app: Option<Vec<String>>,
    #[schema(value_type = Option<Object>)]
    webhook: Option<serde_json::Value>,
}

/// Opt-outs (`false`); a missing entry is opted in.
#[derive(ToSchema)]
pub struct SubscriberPreferences {
    channel_types: Option<BTreeMap<String, bool>>,
    topics: Option<BTreeMap<String, bool>>,
}

/// `HH:MM` to `HH:MM`, in the subscriber's time zone.
#[derive(ToSchema)]
pub struct SubscriberQuietHours {
    start: String,
    end: String,
}

/// A directory entry: the profile with its version and times.
#[derive(ToSchema)]
pub struct SubscriberJson {
    user_id: String,
    timezone: Option<String>,
    locale: Option<String>,
    addresses: Option<SubscriberAddresses>,
    preferences: Option<SubscriberPreferences>,
    quiet_hours: Option<SubscriberQuietHours>,
    version: i64,
    created_at: String,
    updated_at: String,
}

#[derive(ToSchema)]
pub struct SubscriberList {
    subscribers: Vec<SubscriberJson>,
    next_cursor: Option<String>,
}

/// Every named schema of the document.
pub fn collect(
    all: &mut Vec<(
        String,
        utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
    )>,
) {
    use super::add;
    use crate::api::admin::keys::CreateKey;
    use crate::api::campaigns::jobs::{JobBody, TotalsJson};
    use crate::api::campaigns::rules::{AudienceTarget, RuleBody, TaskJobJson};
    use crate::api::reminders::{ReminderBody, ReminderJson, SubjectBody, SubjectJson};

    add::<crate::http::error::Envelope<'static>>(all);
    add::<ErrorBody>(all);
    add::<crate::http::validate::CreateTimer<'static>>(all);
    add::<crate::http::validate::OnConflict>(all);
    add::<crate::http::validate::To>(all);
    add::<crate::http::validate::TimerDigest>(all);
    add::<crate::api::timers::DigestJson>(all);
    add::<BulkLineResult>(all);
    add::<TimerJson>(all);
    add::<crate::api::timers::DeliveryList>(all);
    add::<DeliveryJson>(all);
    add::<SubjectBody>(all);
    add::<SubjectJson>(all);
    add::<ReminderBody>(all);
    add::<ReminderJson>(all);
    add::<crate::api::reminders::SlotJson>(all);
    add::<crate::api::reminders::RemindersCancelledJson>(all);
    add::<crate::api::reminders::UserRemindersJson>(all);
    add::<crate::api::reminders::UserSubjectJson>(all);
    add::<crate::api::reminders::UserReminderJson>(all);
    add::<AudienceJson>(all);
    add::<AudienceTarget>(all);
    add::<RuleBody>(all);
    add::<RuleJson>(all);
    add::<crate::api::campaigns::rules::RuleList>(all);
    add::<VersionJson>(all);
    add::<crate::api::campaigns::rules::VersionList>(all);
    add::<TaskJson>(all);
    add::<TaskJobJson>(all);
    add::<crate::api::campaigns::rules::TaskList>(all);
    add::<JobBody>(all);
    add::<JobJson>(all);
    add::<TotalsJson>(all);
    add::<crate::api::campaigns::jobs::JobList>(all);
    add::<SegmentJson>(all);
    add::<crate::api::campaigns::jobs::SegmentList>(all);
    add::<SendJson>(all);
    add::<crate::api::campaigns::jobs::SendList>(all);
    add::<Channel>(all);
    add::<ChannelList>(all);
    add::<crate::api::channels::PausedJson>(all);
    add::<crate::api::channels::TokenJson>(all);
    add::<crate::api::channels::RecalledJson>(all);
    add::<CreateKey>(all);
    add::<crate::api::admin::keys::KeyCreated>(all);
    add::<KeyJson>(all);
    add::<crate::api::admin::keys::KeyList>(all);
    add::<EntryJson>(all);
    add::<crate::api::admin::audit::AuditList>(all);
    add::<crate::api::admin::reports::ReportJson>(all);
    add::<crate::api::admin::reports::ReportRowJson>(all);
    add::<crate::api::admin::ops::StatsJson>(all);
    add::<crate::api::admin::ops::NodeFiguresJson>(all);
    add::<crate::api::admin::ops::NodeShardsJson>(all);
    add::<crate::api::admin::ops::ClusterJson>(all);
    add::<crate::reload::ReloadReport>(all);
    add::<crate::api::admin::ops::LeaseJson>(all);
    add::<crate::api::admin::ops::StatusJson>(all);
    // Issue 15.
    add::<crate::api::timers::search::SearchPage>(all);
    add::<crate::api::timers::changes::PatchBody<'static>>(all);
    add::<crate::api::timers::changes::RetryBody>(all);
    add::<crate::api::timers::changes::RetryState>(all);
    add::<crate::api::timers::changes::RetriedJson>(all);
    add::<crate::api::timers::search::DeadLettersJson>(all);
    add::<crate::api::timers::search::GroupJson>(all);
    add::<crate::api::channels::PauseBody>(all);
    add::<JobRetried>(all);
    add::<crate::api::campaigns::job_recall::JobRecalled>(all);
    add::<crate::api::channels::receipts::ReceiptBody>(all);
    add::<crate::api::channels::receipts::ReceiptJson>(all);
    add::<crate::api::campaigns::jobs::FollowUpBody>(all);
    add::<crate::api::campaigns::jobs::FollowUpJson>(all);
    add::<JobFailures>(all);
    add::<FailureGroup>(all);
    add::<crate::api::campaigns::schedules::PreviewBody>(all);
    add::<crate::api::campaigns::schedules::PreviewJson>(all);
    add::<crate::api::reminders::subjects::SubjectListJson>(all);
    add::<SubjectSummaryJson>(all);
    add::<crate::api::reminders::subjects::SubjectDetailJson>(all);
    add::<crate::api::reminders::subjects::CountsJson>(all);
    add::<crate::api::reminders::subjects::ReminderGroupJson>(all);
    add::<crate::api::campaigns::audiences::AudienceList>(all);
    add::<crate::api::campaigns::audiences::parser::NdLine>(all);
    add::<SubscriberBody>(all);
    add::<SubscriberPatch>(all);
    add::<SubscriberLine>(all);
    add::<SubscriberAddresses>(all);
    add::<SubscriberPreferences>(all);
    add::<SubscriberQuietHours>(all);
    add::<SubscriberJson>(all);
    add::<SubscriberList>(all);
    add::<crate::api::admin::overview::OverviewJson>(all);
    add::<crate::api::admin::overview::LiveJson>(all);
    add::<crate::api::admin::overview::LatenessJson>(all);
    add::<crate::api::admin::overview::LivePointJson>(all);
    add::<crate::api::admin::overview::ChannelLiveJson>(all);
    add::<crate::api::admin::overview::NodeLiveJson>(all);
}
