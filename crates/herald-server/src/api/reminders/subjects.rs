//! `GET /v1/subjects` and the counts `GET /v1/subjects/{id}` shows: a tenant's
//! subjects with how many users and reminders each has.
//!
//! Counts are read, not maintained (a counter every subscribe updated would be
//! one hot row per popular subject), and bounded: a listed subject is counted
//! up to [`LIST_COUNT_CAP`] reminders, a single subject up to
//! [`DETAIL_COUNT_CAP`]. Past the cap the figures are lower bounds and
//! `counts_capped` is `true`.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Path, Query, State};
use axum::response::{IntoResponse, Response};
use herald_core::reminder::{Leads, Slot};
use herald_store::{SubjectSummary, SubscriptionCounts};
use serde::Serialize;

use crate::access::Caller;
use crate::api::reminders::SubjectJson;
use crate::http::error::ApiError;
use crate::http::fields::check_id;
use crate::http::request::{NoQuery, query};
use crate::http::state::AppState;

/// Most reminders counted per subject of a listing (a page of 50 reads at
/// most 50,050 index entries).
pub const LIST_COUNT_CAP: u64 = 1_000;
/// Most reminders counted for one subject.
pub const DETAIL_COUNT_CAP: u64 = 100_000;
/// Most reminders whose outcome one subject's page reads (each a timer
/// lookup, so fewer than are counted).
pub const OUTCOME_CAP: u64 = 10_000;
/// Most failed reminders counted per subject of a listing.
pub const LIST_FAILED_CAP: u64 = 1_000;
/// Most distinct errors a subject's outcomes name.
const TOP_ERRORS: usize = 5;
/// Most failed reminders a subject's page lists.
const FAILED_LISTED: usize = 20;
/// Subjects per page when the query names no limit.
const DEFAULT_LIMIT: i64 = 50;
/// Most subjects one page holds.
const MAX_LIMIT: i64 = 500;

/// How many users and reminders a subject has, as far as they were counted.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct CountsJson {
    /// Distinct users with at least one reminder on the subject.
    subscribers: u64,
    /// Reminders (a user's channel type and lead), sent or still to come.
    reminders: u64,
    /// Counting stopped at the cap: both figures are lower bounds.
    counts_capped: bool,
}

impl From<&SubscriptionCounts> for CountsJson {
    fn from(c: &SubscriptionCounts) -> Self {
        Self {
            subscribers: c.subscribers,
            reminders: c.reminders,
            counts_capped: c.capped,
        }
    }
}

/// One line of a listing.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct SubjectSummaryJson {
    subject_id: String,
    start_at: String,
    title: Option<String>,
    #[serde(flatten)]
    counts: CountsJson,
    /// Its failed and dead reminders, counted up to `failed_cap` through
    /// the failures index (those due within the longest configured lead of
    /// its start): a subject whose reminders fail stands out in a list.
    failed: u64,
}

/// How a subject's reminders turned out, read from at most `cap` of them.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct OutcomesJson {
    /// Reminders read.
    counted: u64,
    /// Most reminders read.
    cap: u64,
    /// The subject has more than `cap`: the figures cover the first read.
    capped: bool,
    /// Reminders per timer state (`pending`, `done`, `failed`, `dead`,
    /// `cancelled`, `in_doubt`), only the states present.
    #[schema(value_type = BTreeMap<String, u64>)]
    by_state: serde_json::Map<String, serde_json::Value>,
    /// What the failed, dead and in-doubt ones failed with, most common first.
    top_errors: Vec<ErrorCountJson>,
    /// The newest of them (at most 20).
    failed: Vec<FailedReminderJson>,
}

/// One error and how many reminders it ended.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct ErrorCountJson {
    error: String,
    count: u64,
}

/// A reminder that did not reach its user.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct FailedReminderJson {
    user_id: String,
    channel_type: Option<&'static str>,
    lead_minutes: Option<u16>,
    timer_id: i64,
    state: &'static str,
    error: Option<String>,
    updated_at: String,
}

impl OutcomesJson {
    fn new(o: herald_store::SubjectOutcomes, leads: &Leads) -> Self {
        let mut by_state = serde_json::Map::new();
        for (state, n) in &o.by_state {
            by_state.insert(state.as_str().to_owned(), (*n).into());
        }
        Self {
            counted: o.counted,
            cap: OUTCOME_CAP,
            capped: o.capped,
            by_state,
            top_errors: o
                .top_errors
                .into_iter()
                .map(|(error, count)| ErrorCountJson { error, count })
                .collect(),
            failed: o
                .failed
                .into_iter()
                .map(|f| {
                    let slot = Slot::from_bit_with(f.bit, leads).ok();
                    FailedReminderJson {
                        user_id: f.user_id,
                        channel_type: slot.map(|s| s.channel_type().as_str()),
                        lead_minutes: slot.map(|s| s.lead_minutes()),
                        timer_id: f.timer_id,
                        state: f.state.as_str(),
                        error: f.error,
                        updated_at: herald_core::time::format_rfc3339_ms(f.updated_at),
                    }
                })
                .collect(),
        }
    }
}

/// The reminders of one channel type and lead.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct ReminderGroupJson {
    channel_type: &'static str,
    lead_minutes: u16,
    /// The slot's bit in a subscription word.
    bit: u8,
    count: u64,
}

/// When one batch of the subject's pending reminders (one channel type and
/// lead, on one channel, due at one instant) goes out (issue 39 §4).
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct EarlyStartJson {
    /// The channel they are sent on.
    channel: String,
    channel_type: Option<&'static str>,
    lead_minutes: Option<u16>,
    bit: u8,
    /// Reminders still pending in the batch.
    count: u64,
    /// When they fall due (the subject's start less the lead).
    due_at: String,
    /// When the first may go: before `due_at` when the batch cannot be
    /// sent by then at the channel's `rate_per_sec`.
    start_at: String,
    /// When the last should have gone at the channel's rate.
    done_by: String,
    /// Whether that is by `due_at`; `false` when the early window is too
    /// short (the rest lands late, or expires at the subject's start).
    fits: bool,
    /// The early window the plan allowed (ms).
    early_window_ms: i64,
}

impl EarlyStartJson {
    fn new(p: herald_engine::EarlyPlan, leads: &Leads) -> Self {
        let slot = Slot::from_bit_with(p.bit, leads).ok();
        Self {
            channel: p.channel,
            channel_type: slot.map(|s| s.channel_type().as_str()),
            lead_minutes: slot.map(|s| s.lead_minutes()),
            bit: p.bit,
            count: p.count,
            due_at: herald_core::time::format_rfc3339_ms(p.due_at),
            start_at: herald_core::time::format_rfc3339_ms(p.start_at),
            done_by: herald_core::time::format_rfc3339_ms(p.done_by),
            fits: p.fits,
            early_window_ms: p.early_window_ms,
        }
    }
}

/// `GET /v1/subjects/{id}`: the subject, its counts, its reminders by
/// channel type and lead, and when its pending reminders go out.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct SubjectDetailJson {
    #[serde(flatten)]
    subject: SubjectJson,
    #[serde(flatten)]
    counts: CountsJson,
    reminders_by: Vec<ReminderGroupJson>,
    /// The plan of its pending reminders, per channel type, lead, channel
    /// and due time: how many, and when they start. While they are about
    /// to fall due this is the plan the engine follows; before, a preview
    /// counted from the subject's pending reminders (see
    /// `early_start_counted_at`).
    early_start: Vec<EarlyStartJson>,
    /// When `early_start`'s reminders were counted: at this request for a
    /// subject of up to 20,000 reminders; a bigger one's last count is kept
    /// (at least 15 s, or twenty times what the count took) and redone in
    /// the background when it goes stale.
    early_start_counted_at: String,
    /// How its reminders turned out (pending, sent, failed with the errors).
    outcomes: OutcomesJson,
}

impl SubjectDetailJson {
    fn new(s: SubjectSummary, outcomes: OutcomesJson, leads: &Leads) -> Self {
        let counts = CountsJson::from(&s.counts);
        let reminders_by = s
            .counts
            .by_bit
            .iter()
            .filter_map(|&(bit, count)| {
                // A bit this build cannot name is skipped rather than failing
                // the page (bits are validated when they are set).
                let slot = Slot::from_bit_with(bit, leads).ok()?;
                Some(ReminderGroupJson {
                    channel_type: slot.channel_type().as_str(),
                    lead_minutes: slot.lead_minutes(),
                    bit,
                    count,
                })
            })
            .collect();
        Self {
            subject: SubjectJson::new(s.subject),
            counts,
            reminders_by,
            early_start: Vec::new(),
            early_start_counted_at: String::new(),
            outcomes,
        }
    }
}

/// The longest lead configured, so a subject's reminders are all due within
/// it before the start (leads only grow: a reload must extend them).
fn longest_lead_ms(leads: &Leads) -> i64 {
    let minutes = leads.minutes().iter().copied().max().unwrap_or(0);
    i64::from(minutes) * 60_000
}

/// `GET /v1/subjects`: each subject's counts stop at `count_cap` reminders.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = SubjectList)]
pub(crate) struct SubjectListJson {
    subjects: Vec<SubjectSummaryJson>,
    next_cursor: Option<String>,
    count_cap: u64,
    /// Most failed reminders counted per subject.
    failed_cap: u64,
}

/// `GET /v1/subjects?cursor=&limit=` → `{subjects, next_cursor, count_cap}`:
/// the caller's subjects in id order (50 a page by default, at most 500),
/// each counted up to [`LIST_COUNT_CAP`]. `next_cursor` is `null` on the last
/// page.
pub async fn list(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<crate::http::pagination::CursorQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let (after, limit) = q.id_page(DEFAULT_LIMIT, MAX_LIMIT)?;
    let page = st
        .engine
        .store()
        .list_subjects(caller.tenant, after, limit, LIST_COUNT_CAP)
        .await?;
    let next_cursor = crate::http::pagination::next_cursor(
        page.len(),
        limit,
        page.last().map(|s| s.subject.subject_id.clone()),
    );
    let longest = longest_lead_ms(&st.reminders.leads());
    let mut subjects = Vec::with_capacity(page.len());
    for s in page {
        let start = s.subject.start_at;
        let failed = st
            .engine
            .store()
            .subject_failures(
                caller.tenant,
                &s.subject.subject_id,
                start.saturating_sub(longest),
                start,
                LIST_FAILED_CAP,
            )
            .await?;
        subjects.push(SubjectSummaryJson {
            counts: CountsJson::from(&s.counts),
            subject_id: s.subject.subject_id,
            start_at: herald_core::time::format_rfc3339_ms(start),
            title: s.subject.title,
            failed,
        });
    }
    Ok(axum::Json(SubjectListJson {
        subjects,
        next_cursor,
        count_cap: LIST_COUNT_CAP,
        failed_cap: LIST_FAILED_CAP,
    })
    .into_response())
}

/// `GET /v1/subjects/{subject_id}`: the subject with its counts (up to
/// [`DETAIL_COUNT_CAP`]) and its reminders by channel type and lead.
pub async fn get(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(subject_id): Path<String>,
) -> Result<Response, ApiError> {
    check_id("subject_id", &subject_id)?;
    let found = st
        .engine
        .store()
        .subject_summary(caller.tenant, &subject_id, DETAIL_COUNT_CAP)
        .await?;
    match found {
        Some(s) => {
            let leads = st.reminders.leads();
            let plan = st
                .engine
                .reminder_plan(caller.tenant, &subject_id, s.counts.reminders)
                .await?;
            let outcomes = st
                .engine
                .store()
                .subject_outcomes(
                    caller.tenant,
                    &subject_id,
                    OUTCOME_CAP,
                    TOP_ERRORS,
                    FAILED_LISTED,
                )
                .await?;
            let outcomes = OutcomesJson::new(outcomes, &leads);
            let mut body = SubjectDetailJson::new(s, outcomes, &leads);
            body.early_start_counted_at = herald_core::time::format_rfc3339_ms(plan.counted_at);
            body.early_start = plan
                .batches
                .into_iter()
                .map(|p| EarlyStartJson::new(p, &leads))
                .collect();
            Ok(axum::Json(body).into_response())
        }
        None => Err(ApiError::not_found("subject")),
    }
}
