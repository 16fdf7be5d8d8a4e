//! `GET /v1/users/{user_id}`: one user as an operator looks them up ("did
//! this user get their reminder, and why not"): their subscriber profile,
//! their reminders, the newest timers addressed to them, and where they
//! stand in the tenant's newest campaigns.
//!
//! Each part reads one index: the subscriber's key, the user's reminders,
//! the timers' recipient index. Campaign sends have no recipient index (one
//! would tax every campaign insert), so the newest [`JOBS_SEARCHED`] jobs'
//! audiences are searched instead, and the answer says how many were.

pub(crate) mod docs;

use axum::extract::{Extension, Path, State};
use axum::response::{IntoResponse, Response};
use herald_core::time::format_rfc3339_ms;
use herald_store::{SortOrder, TimerFilter};
use serde::Serialize;

use crate::access::Caller;
use crate::api::campaigns::jobs::SendJson;
use crate::api::reminders::{UserSubjectJson, user_subjects};
use crate::api::subscribers::SubscriberJson;
use crate::api::timers::TimerJson;
use crate::http::error::ApiError;
use crate::http::fields::check_id;
use crate::http::request::NoQuery;
use crate::http::state::AppState;

/// Newest jobs whose audiences are searched for the user.
pub const JOBS_SEARCHED: usize = 20;
/// Newest timers addressed to the user that are listed.
const TIMERS_LISTED: usize = 50;

/// The user in one job.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct UserSendJson {
    job_id: i64,
    job_name: Option<String>,
    channel: String,
    /// The job's state.
    job_state: &'static str,
    job_created_at: String,
    /// The user's index in the job's audience.
    index: u64,
    /// Its send-log row; null while the job has not reached the user.
    send: Option<SendJson>,
}

/// `GET /v1/users/{user_id}`'s answer.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = UserView)]
pub(crate) struct UserViewJson {
    user_id: String,
    /// Their subscriber profile (addresses, preferences, quiet hours,
    /// opt-outs); null when the directory has none.
    #[schema(value_type = Option<crate::openapi::subscriber::SubscriberJson>)]
    subscriber: Option<SubscriberJson>,
    /// Their reminders by subject, with each timer's state.
    reminders: Vec<UserSubjectJson>,
    /// The newest timers addressed to them (latest due first), reminders
    /// included, each with its state and last error (`no_address`,
    /// `opted_out`, `quiet_hours`, `capped` … say why it was not sent).
    timers: Vec<TimerJson>,
    /// The campaigns among the newest `jobs_searched` that include them,
    /// newest first; a send's `error` says why it was not sent.
    campaign_sends: Vec<UserSendJson>,
    jobs_searched: usize,
}

/// `GET /v1/users/{user_id}`: everything above, for the caller's tenant.
pub async fn get(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(user_id): Path<String>,
) -> Result<Response, ApiError> {
    check_id("user_id", &user_id)?;
    let tenant = caller.tenant;
    let store = st.engine.store();
    let subscriber = store
        .get_subscribers(tenant, std::slice::from_ref(&user_id))
        .await?
        .pop()
        .map(SubscriberJson::new);
    let reminders = user_subjects(&st, tenant, &user_id).await?;
    let filter = TimerFilter {
        recipient: Some(user_id.clone()),
        ..TimerFilter::default()
    };
    let timers = store
        .search_timers(tenant, &filter, None, TIMERS_LISTED, SortOrder::Desc)
        .await?
        .into_iter()
        .map(|t| {
            let firing = st.engine.is_firing(t.id);
            TimerJson::from_record(t, firing, false)
        })
        .collect();
    let campaign_sends = st
        .campaigns
        .recipient_in_recent_jobs(tenant, &user_id, JOBS_SEARCHED)
        .await?
        .into_iter()
        .map(|(job, found)| UserSendJson {
            job_id: job.id,
            job_name: job.meta.name,
            channel: job.channel,
            job_state: job.state.as_str(),
            job_created_at: format_rfc3339_ms(job.created_at),
            index: found.index,
            send: found.send.map(SendJson::from),
        })
        .collect();
    Ok(axum::Json(UserViewJson {
        user_id,
        subscriber,
        reminders,
        timers,
        campaign_sends,
        jobs_searched: JOBS_SEARCHED,
    })
    .into_response())
}
