//! The document's named schemas: the registration of the real request and
//! answer types (each derives `ToSchema` where it is defined, with the
//! constraints its handler checks; the engine's `ChannelStatus` and the
//! core's `Digest` and subscriber profile through their `openapi`
//! features), and the few shapes no Rust type has: a subscriber bulk line,
//! merge patch and answer. Those are described here, never constructed.

use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{AllOf, Object, Schema};

use herald_core::digest::Digest;
use herald_core::subscriber::{Addresses, Preferences, Profile, QuietHours};

use super::add;
use super::subscriber::SubscriberJson;
use crate::api::admin::audit::{AuditList, EntryJson};
use crate::api::admin::forecast::{BehindJson, ChannelJson as ForecastChannelJson, ForecastJson};
use crate::api::admin::keys::{CreateKey, KeyCreated, KeyJson, KeyList};
use crate::api::admin::ops::{
    ClusterJson, LeaseJson, NodeFiguresJson, NodeLeasesJson, NodeShardsJson, StatsJson, StatusJson,
};
use crate::api::admin::overview::{
    ChannelLiveJson, LatenessJson, LiveJson, LivePointJson, NodeLiveJson, OverviewJson,
};
use crate::api::admin::reports::{ReportJson, ReportRowJson};
use crate::api::campaigns::audiences::parser::NdLine;
use crate::api::campaigns::audiences::{AudienceJson, AudienceList};
use crate::api::campaigns::job_recall::JobRecalled;
use crate::api::campaigns::jobs::{
    FailureGroup, FollowUpBody, FollowUpJson, JobBody, JobFailures, JobJson, JobList, JobRetried,
    ResendBody, SegmentJson, SegmentList, SendJson, SendList, TotalsJson,
};
use crate::api::campaigns::receivers::AudienceTarget;
use crate::api::campaigns::rules::{
    RuleBody, RuleFollowUpJson, RuleJson, RuleList, TaskJobJson, TaskJson, TaskList, VersionJson,
    VersionList,
};
use crate::api::campaigns::schedules::{PreviewBody, PreviewJson};
use crate::api::channels::receipts::{ReceiptBody, ReceiptJson};
use crate::api::channels::{
    ChannelJson, ChannelList, PauseBody, PausedJson, RecalledJson, TokenJson,
};
use crate::api::reminders::subjects::{
    CountsJson, EarlyStartJson, ReminderGroupJson, SubjectDetailJson, SubjectListJson,
    SubjectSummaryJson,
};
use crate::api::reminders::{
    ReminderBody, ReminderJson, RemindersCancelledJson, SlotJson, SubjectBody, SubjectJson,
    UserReminderJson, UserRemindersJson, UserSubjectJson,
};
use crate::api::timers::changes::{PatchBody, RetriedJson, RetryBody, RetryState};
use crate::api::timers::search::{DeadLettersJson, GroupJson, SearchPage};
use crate::api::timers::{DeliveryJson, DeliveryList, DigestJson, TimerJson};
use crate::api::users::{UserSendJson, UserViewJson};
use crate::http::bulk::LineResult;
use crate::http::error::{Envelope, ErrorBody};
use crate::http::validate::{CreateTimer, OnConflict, To};
use crate::reload::ReloadReport;

// ---- Subscribers. The profile and its parts (`SubscriberBody`,
// `SubscriberAddresses`, `SubscriberPreferences`, `SubscriberQuietHours`)
// are herald-core's `Profile`, `Addresses`, `Preferences` and `QuietHours`
// through its `openapi` feature. Still stated here, as no Rust type has
// their shape: a bulk line (the handler takes `user_id` off the object and
// reads the rest as a `Profile`), the merge patch (read as a JSON object,
// merged, then read as a `Profile`) and the answer (the stored profile,
// flattened into `api::subscribers::SubscriberJson` as JSON).

/// One line of `POST /v1/subscribers:bulk`: the user and their profile.
#[derive(ToSchema)]
#[allow(dead_code)]
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
    addresses: Option<Addresses>,
    #[schema(nullable = false)]
    preferences: Option<Preferences>,
    #[schema(nullable = false)]
    quiet_hours: Option<QuietHours>,
}

/// `PATCH /v1/subscribers/{user_id}`: a JSON merge patch (RFC 7396) of the
/// profile: `null` removes a field, an object merges into the stored one.
#[derive(ToSchema)]
#[allow(dead_code)]
#[serde(deny_unknown_fields)]
pub struct SubscriberPatch {
    timezone: Option<String>,
    locale: Option<String>,
    #[schema(value_type = Option<Object>)]
    addresses: Option<serde_json::Value>,
    #[schema(value_type = Option<Object>)]
    preferences: Option<serde_json::Value>,
    quiet_hours: Option<QuietHours>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct SubscriberList {
    subscribers: Vec<SubscriberJson>,
    next_cursor: Option<String>,
}

/// Every named schema of the document, with the schemas they refer to.
pub fn collect(all: &mut Vec<(String, RefOr<Schema>)>) {
    // Errors and bulk lines.
    add::<Envelope<'static>>(all);
    add::<ErrorBody>(all);
    add::<LineResult<'static>>(all);
    // Timers.
    add::<CreateTimer<'static>>(all);
    add::<OnConflict>(all);
    add::<To>(all);
    add::<Digest>(all);
    add::<DigestJson>(all);
    add::<TimerJson>(all);
    add::<crate::http::route_steps::RouteStep>(all);
    add::<crate::http::route_steps::StepOnName>(all);
    add::<crate::http::route_steps::StepJson>(all);
    add::<SearchPage>(all);
    add::<PatchBody<'static>>(all);
    add::<RetryBody>(all);
    add::<RetryState>(all);
    add::<RetriedJson>(all);
    add::<DeadLettersJson>(all);
    add::<GroupJson>(all);
    add::<DeliveryList>(all);
    add::<DeliveryJson>(all);
    // Reminders and subjects.
    add::<SubjectBody>(all);
    add::<SubjectJson>(all);
    add::<ReminderBody>(all);
    add::<ReminderJson>(all);
    add::<SlotJson>(all);
    add::<RemindersCancelledJson>(all);
    add::<UserRemindersJson>(all);
    add::<UserSubjectJson>(all);
    add::<UserReminderJson>(all);
    add::<SubjectListJson>(all);
    add::<SubjectSummaryJson>(all);
    add::<SubjectDetailJson>(all);
    add::<CountsJson>(all);
    add::<ReminderGroupJson>(all);
    add::<EarlyStartJson>(all);
    add::<crate::api::reminders::subjects::OutcomesJson>(all);
    add::<crate::api::reminders::subjects::ErrorCountJson>(all);
    add::<crate::api::reminders::subjects::FailedReminderJson>(all);
    add::<UserViewJson>(all);
    add::<UserSendJson>(all);
    // Subscribers.
    add::<Profile>(all);
    add::<SubscriberPatch>(all);
    add::<SubscriberLine>(all);
    add::<Addresses>(all);
    add::<Preferences>(all);
    add::<QuietHours>(all);
    add::<SubscriberJson>(all);
    add::<SubscriberList>(all);
    // Templates.
    add::<crate::api::templates::CreateTemplate>(all);
    add::<herald_core::template::TemplateBody>(all);
    add::<crate::api::templates::TemplateJson>(all);
    add::<crate::api::templates::TemplateList>(all);
    add::<crate::api::templates::TemplatePreview>(all);
    add::<crate::api::templates::TemplatePreviewJson>(all);
    add::<crate::http::validate::TemplateUse>(all);
    add::<herald_core::template::TemplateRef>(all);
    // Campaigns: audiences, rules, schedules, jobs.
    add::<crate::api::campaigns::actors::ActorJson>(all);
    add::<AudienceJson>(all);
    add::<AudienceList>(all);
    add::<NdLine>(all);
    add::<AudienceTarget>(all);
    add::<RuleBody>(all);
    add::<RuleJson>(all);
    add::<RuleList>(all);
    add::<VersionJson>(all);
    add::<VersionList>(all);
    add::<TaskJson>(all);
    add::<TaskJobJson>(all);
    add::<TaskList>(all);
    add::<PreviewBody>(all);
    add::<herald_core::calendar::CalendarSpec>(all);
    add::<herald_core::calendar::YearSpec>(all);
    add::<crate::api::calendars::CalendarJson>(all);
    add::<crate::api::calendars::CalendarList>(all);
    add::<PreviewJson>(all);
    add::<JobBody>(all);
    add::<JobJson>(all);
    add::<TotalsJson>(all);
    add::<JobList>(all);
    add::<SegmentJson>(all);
    add::<SegmentList>(all);
    add::<SendJson>(all);
    add::<SendList>(all);
    add::<JobRetried>(all);
    add::<JobRecalled>(all);
    add::<FollowUpBody>(all);
    add::<FollowUpJson>(all);
    add::<RuleFollowUpJson>(all);
    add::<ResendBody>(all);
    // Subscribe grants.
    add::<crate::api::subscribers::grants::GrantsBody>(all);
    add::<crate::api::subscribers::grants::GrantsRecordedJson>(all);
    add::<crate::api::subscribers::grants::GrantList>(all);
    add::<JobFailures>(all);
    add::<FailureGroup>(all);
    // Channels.
    add::<ChannelJson>(all);
    add::<ChannelList>(all);
    add::<PausedJson>(all);
    add::<TokenJson>(all);
    add::<PauseBody>(all);
    add::<RecalledJson>(all);
    add::<ReceiptBody>(all);
    add::<ReceiptJson>(all);
    // Access and operations.
    add::<CreateKey>(all);
    add::<KeyCreated>(all);
    add::<KeyJson>(all);
    add::<KeyList>(all);
    add::<EntryJson>(all);
    add::<AuditList>(all);
    add::<ReportJson>(all);
    add::<ReportRowJson>(all);
    add::<StatsJson>(all);
    add::<NodeFiguresJson>(all);
    add::<NodeShardsJson>(all);
    add::<ClusterJson>(all);
    add::<LeaseJson>(all);
    add::<NodeLeasesJson>(all);
    add::<StatusJson>(all);
    add::<ReloadReport>(all);
    add::<OverviewJson>(all);
    add::<LiveJson>(all);
    add::<LatenessJson>(all);
    add::<LivePointJson>(all);
    add::<ChannelLiveJson>(all);
    add::<NodeLiveJson>(all);
    add::<ForecastJson>(all);
    add::<ForecastChannelJson>(all);
    add::<BehindJson>(all);
    for (_, schema) in all.iter_mut() {
        if let RefOr::T(Schema::AllOf(parts)) = schema
            && let Some(one) = one_object(parts)
        {
            *schema = RefOr::T(Schema::Object(one));
        }
    }
}

/// A type that flattens another one inline (`#[serde(flatten)]` with
/// `#[schema(inline)]`, as `Channel` flattens the engine's `ChannelStatus`)
/// derives an `allOf` of plain objects; the document states it as the one
/// object the answer is: the properties and required names of each part in
/// order, the outer type's description. An `allOf` with a `$ref` (a named
/// part) is left as it is.
fn one_object(parts: &AllOf) -> Option<Object> {
    let mut one = Object::new();
    for part in &parts.items {
        let RefOr::T(Schema::Object(o)) = part else {
            return None;
        };
        one.properties
            .extend(o.properties.iter().map(|(k, v)| (k.clone(), v.clone())));
        one.required.extend(o.required.iter().cloned());
        if one.additional_properties.is_none() {
            one.additional_properties
                .clone_from(&o.additional_properties);
        }
    }
    one.schema_type = utoipa::openapi::schema::SchemaType::new(utoipa::openapi::Type::Object);
    one.description.clone_from(&parts.description);
    Some(one)
}
