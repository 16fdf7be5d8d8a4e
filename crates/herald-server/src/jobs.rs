//! `/v1/jobs`: mass sends (campaigns). A job is one message to one audience
//! through one channel, cut into segments that workers claim under a lease
//! (seed 000). The API creates jobs, shows their progress (totals, segments
//! by state, the current rate and an ETA), and cancels them.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use herald_core::campaign::{JobState, SegmentState, SendState, job_recipient_key};
use herald_core::time::{format_rfc3339_ms, parse_rfc3339_ms};
use herald_store::{JobRecord, JobSpec, JobTotals, SegmentRecord, SendRecord};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::AppState;
use crate::audiences::{inline_audience, int_param, parse_id, query};
use crate::error::{ApiError, from_serde};
use crate::rules::{MAX_DEADLINE_SECS, check_message, check_priority, check_sealed, check_users};
use crate::timers::{read_body, store_err};

/// Most recipients per segment.
pub const MAX_SEGMENT_SIZE: i64 = 100_000;
/// Widest `[start, end)` of one send-log read.
pub const MAX_SENDS_WINDOW: u64 = 1_000;

// ---- Rate sampler ----

/// Samples older than this do not count towards the current rate.
const RATE_WINDOW_MS: i64 = 10_000;
/// A sample must be at least this old to measure a rate against.
const MIN_SPAN_MS: i64 = 250;
/// Samples closer together than this are not both kept.
const MIN_GAP_MS: i64 = 100;
const MAX_SAMPLES: usize = 128;
/// Jobs sampled at once; the least recently sampled one is forgotten first.
const MAX_JOBS: usize = 1024;

/// Recent `(time, processed)` samples per job (or per channel: any key),
/// taken whenever it is read, so the rate is measured over the last ~10 s
/// rather than the whole run.
pub struct RateSampler<K = i64> {
    jobs: Mutex<HashMap<K, VecDeque<(i64, u64)>>>,
}

impl<K> Default for RateSampler<K> {
    fn default() -> Self {
        Self {
            jobs: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: std::hash::Hash + Eq + Clone> RateSampler<K> {
    /// Records `processed` at `now` and returns recipients per second: over
    /// the samples of the last ~10 s, or, with none old enough, since the job
    /// started.
    pub fn observe(&self, job: K, now: i64, processed: u64, started_at: Option<i64>) -> f64 {
        let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        if !jobs.contains_key(&job) && jobs.len() >= MAX_JOBS {
            let stalest = jobs
                .iter()
                .min_by_key(|(_, q)| q.back().map_or(i64::MIN, |s| s.0))
                .map(|(id, _)| id.clone());
            if let Some(id) = stalest {
                jobs.remove(&id);
            }
        }
        let samples = jobs.entry(job).or_default();
        while samples
            .front()
            .is_some_and(|(t, _)| *t < now - RATE_WINDOW_MS || *t > now)
        {
            samples.pop_front();
        }
        let rate = rate_from(samples, now, processed, started_at);
        if samples.back().is_none_or(|(t, _)| now - t >= MIN_GAP_MS) {
            samples.push_back((now, processed));
            if samples.len() > MAX_SAMPLES {
                samples.pop_front();
            }
        }
        rate
    }

    /// Drops a job's samples (it ended).
    pub fn forget(&self, job: &K) {
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(job);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.jobs.lock().map(|j| j.len()).unwrap_or(0)
    }
}

/// The rate from the oldest sample at least [`MIN_SPAN_MS`] old, else the
/// average since `started_at`; 0 when neither can be measured.
fn rate_from(
    samples: &VecDeque<(i64, u64)>,
    now: i64,
    processed: u64,
    started_at: Option<i64>,
) -> f64 {
    if let Some((t, p)) = samples.iter().find(|(t, _)| now - t >= MIN_SPAN_MS) {
        return processed.saturating_sub(*p) as f64 * 1000.0 / (now - t) as f64;
    }
    match started_at {
        Some(s) if now > s => processed as f64 * 1000.0 / (now - s) as f64,
        _ => 0.0,
    }
}

// ---- JSON ----

/// A job's recipients by outcome; they add up to `total`.
#[derive(Serialize)]
pub struct TotalsJson {
    pub total: u64,
    /// Delivered.
    pub sent: u64,
    pub failed: u64,
    /// Failed retryably, waiting for another attempt (counted in `remaining`).
    pub retrying: u64,
    pub expired: u64,
    pub cancelled: u64,
    /// Without a final outcome yet.
    pub remaining: u64,
}

impl From<JobTotals> for TotalsJson {
    fn from(t: JobTotals) -> Self {
        Self {
            total: t.total,
            sent: t.delivered,
            failed: t.failed,
            retrying: t.retrying,
            expired: t.expired,
            cancelled: t.cancelled,
            remaining: t.remaining(),
        }
    }
}

#[derive(Serialize)]
struct JobJson {
    id: i64,
    state: JobState,
    channel: String,
    audience_id: i64,
    task_id: Option<i64>,
    priority: u8,
    segment_size: u64,
    deadline: Option<String>,
    message: Box<RawValue>,
    created_at: String,
    started_at: Option<String>,
    finished_at: Option<String>,
    totals: TotalsJson,
    /// Segments in each state (every state present, 0 when none).
    segments: serde_json::Map<String, serde_json::Value>,
    /// Recipients reaching a final outcome per second, over the last ~10 s;
    /// 0 once the job has ended.
    rate_per_sec: f64,
    /// Average since the job started (to its end, once it has ended).
    avg_rate_per_sec: f64,
    /// Seconds until `remaining` reaches 0 at the current rate; null when the
    /// rate is 0 or the job has ended.
    eta_secs: Option<u64>,
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

async fn job_json(st: &AppState, rates: &RateSampler, j: JobRecord) -> Result<JobJson, ApiError> {
    let counts = st
        .engine
        .store()
        .segment_counts(j.id)
        .await
        .map_err(store_err)?;
    let mut segments = serde_json::Map::new();
    for s in SegmentState::ALL {
        let n = counts
            .iter()
            .filter(|(state, _)| state == s)
            .map(|(_, n)| *n)
            .sum::<u64>();
        segments.insert(s.as_str().to_string(), n.into());
    }
    let now = st.clock.now_ms();
    let processed = j.totals.delivered + j.totals.failed;
    let remaining = j.totals.remaining();
    let avg = match j.started_at {
        Some(s) => {
            let end = j.finished_at.unwrap_or(now);
            if end > s {
                processed as f64 * 1000.0 / (end - s) as f64
            } else {
                0.0
            }
        }
        None => 0.0,
    };
    let (rate, eta) = if j.state.is_final() {
        rates.forget(&j.id);
        (0.0, None)
    } else {
        let rate = rates.observe(j.id, now, processed, j.started_at);
        let eta = (rate > 0.0).then(|| (remaining as f64 / rate).ceil() as u64);
        (rate, eta)
    };
    Ok(JobJson {
        id: j.id,
        state: j.state,
        channel: j.channel,
        audience_id: j.audience_id,
        task_id: j.task_id,
        priority: j.priority,
        segment_size: j.segment_size,
        deadline: j.deadline_at.map(format_rfc3339_ms),
        message: RawValue::from_string(j.message).unwrap_or_default(),
        created_at: format_rfc3339_ms(j.created_at),
        started_at: j.started_at.map(format_rfc3339_ms),
        finished_at: j.finished_at.map(format_rfc3339_ms),
        totals: j.totals.into(),
        segments,
        rate_per_sec: round1(rate),
        avg_rate_per_sec: round1(avg),
        eta_secs: eta,
    })
}

#[derive(Serialize)]
struct SegmentJson {
    id: i64,
    job_id: i64,
    start: u64,
    end: u64,
    cursor: u64,
    state: SegmentState,
    owner: Option<String>,
    lease_until: Option<String>,
    epoch: i64,
    parent_id: Option<i64>,
    attempt: u32,
    not_before: String,
    created_at: String,
}

impl From<SegmentRecord> for SegmentJson {
    fn from(s: SegmentRecord) -> Self {
        Self {
            id: s.id,
            job_id: s.job_id,
            start: s.start,
            end: s.end,
            cursor: s.cursor,
            state: s.state,
            owner: s.owner,
            lease_until: s.lease_until.map(format_rfc3339_ms),
            epoch: s.epoch,
            parent_id: s.parent_id,
            attempt: s.attempt,
            not_before: format_rfc3339_ms(s.not_before),
            created_at: format_rfc3339_ms(s.created_at),
        }
    }
}

#[derive(Serialize)]
struct SendJson {
    index: u64,
    recipient: String,
    state: SendState,
    attempts: u32,
    idempotency_key: String,
    provider_msgid: Option<String>,
    error: Option<String>,
    updated_at: String,
    /// What the provider reported later (a delivery callback).
    #[serde(skip_serializing_if = "Option::is_none")]
    final_status: Option<String>,
}

impl From<SendRecord> for SendJson {
    fn from(s: SendRecord) -> Self {
        Self {
            idempotency_key: job_recipient_key(s.job_id, s.index),
            index: s.index,
            recipient: s.recipient,
            state: s.state,
            attempts: s.attempts,
            provider_msgid: s.provider_msgid,
            error: s.error,
            updated_at: format_rfc3339_ms(s.updated_at),
            final_status: s.final_status,
        }
    }
}

// ---- Handlers ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JobBody {
    #[serde(default)]
    audience_id: Option<i64>,
    #[serde(default)]
    users: Option<Vec<String>>,
    channel: String,
    message: Box<RawValue>,
    #[serde(default)]
    segment_size: Option<i64>,
    #[serde(default)]
    deadline: Option<String>,
    #[serde(default)]
    deadline_secs: Option<i64>,
    #[serde(default)]
    priority: Option<i64>,
}

/// `POST /v1/jobs` → `201` job. Sending starts at once.
pub async fn create(
    State(st): State<AppState>,
    Extension(rates): Extension<Arc<RateSampler>>,
    body: Body,
) -> Result<Response, ApiError> {
    let bytes = read_body(body, st.api.campaign_body_max_bytes).await?;
    let de = &mut serde_json::Deserializer::from_slice(&bytes);
    let req: JobBody = serde_path_to_error::deserialize(de).map_err(from_serde)?;
    let now = st.clock.now_ms();

    match (&req.audience_id, &req.users) {
        (Some(_), Some(_)) => {
            return Err(ApiError::field(
                "audience_id",
                "invalid_field",
                "give either audience_id or users, not both",
            ));
        }
        (None, None) => {
            return Err(ApiError::field(
                "audience_id",
                "missing_field",
                "give audience_id (an uploaded audience) or users (a list of recipients)",
            ));
        }
        (None, Some(users)) => {
            if users.is_empty() {
                return Err(ApiError::field(
                    "users",
                    "invalid_field",
                    "users must not be empty",
                ));
            }
            check_users("users", users, st.api.job_max_users)?;
        }
        (Some(_), None) => {}
    }
    if !st.engine.has_channel(&req.channel) {
        return Err(ApiError::field(
            "channel",
            "unknown_channel",
            format!(
                "no channel named {:?}; configured: {:?}",
                req.channel,
                st.engine.channel_names()
            ),
        ));
    }
    check_message(&req.message)?;
    let segment_size = match req.segment_size {
        None => st.engine.campaign_config().segment_size.max(1),
        Some(s) if (1..=MAX_SEGMENT_SIZE).contains(&s) => s as u64,
        Some(_) => {
            return Err(ApiError::field(
                "segment_size",
                "invalid_field",
                format!("segment_size must be 1..={MAX_SEGMENT_SIZE}"),
            ));
        }
    };
    let deadline_at = match (&req.deadline, req.deadline_secs) {
        (Some(_), Some(_)) => {
            return Err(ApiError::field(
                "deadline",
                "invalid_field",
                "give either deadline or deadline_secs, not both",
            ));
        }
        (None, None) => None,
        (Some(d), None) => {
            let at = parse_rfc3339_ms(d).map_err(|e| {
                ApiError::field(
                    "deadline",
                    "invalid_field",
                    format!("deadline {d:?} is not an RFC 3339 time: {e}"),
                )
            })?;
            if at <= now {
                return Err(ApiError::field(
                    "deadline",
                    "invalid_field",
                    "deadline is not in the future",
                ));
            }
            if at > now + MAX_DEADLINE_SECS * 1000 {
                return Err(ApiError::field(
                    "deadline",
                    "invalid_field",
                    format!("deadline is more than {MAX_DEADLINE_SECS} s ahead"),
                ));
            }
            Some(at)
        }
        (None, Some(s)) => {
            if !(1..=MAX_DEADLINE_SECS).contains(&s) {
                return Err(ApiError::field(
                    "deadline_secs",
                    "invalid_field",
                    format!("deadline_secs must be 1..={MAX_DEADLINE_SECS}"),
                ));
            }
            Some(now + s * 1000)
        }
    };
    let priority = check_priority(req.priority)?;

    let store = st.engine.store();
    let (audience_id, inline) = match (req.audience_id, &req.users) {
        (Some(id), _) => {
            check_sealed(&st, "audience_id", id).await?;
            (id, false)
        }
        (None, Some(users)) => {
            let a = inline_audience(store, users, Some("users of a job".into()), now).await?;
            (a.id, true)
        }
        (None, None) => return Err(ApiError::unavailable("unreachable: no audience")),
    };
    let spec = JobSpec {
        audience_id,
        channel: req.channel,
        message: req.message.get().to_string(),
        segment_size,
        deadline_at,
        priority,
        task_id: None,
    };
    let job = match store.create_job(spec, st.clock.now_ms()).await {
        Ok(Some(j)) => j,
        Ok(None) => {
            if inline {
                let _ = store.drop_audience(audience_id).await;
            }
            return Err(ApiError::field(
                "audience_id",
                "unknown_audience",
                format!("audience {audience_id} is unknown or still uploading"),
            ));
        }
        Err(e) => {
            if inline {
                let _ = store.drop_audience(audience_id).await;
            }
            return Err(store_err(e));
        }
    };
    st.engine.wake_workers();
    let body = job_json(&st, &rates, job).await?;
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

/// `GET /v1/jobs/{id}`.
pub async fn get(
    State(st): State<AppState>,
    Extension(rates): Extension<Arc<RateSampler>>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw, "job")?;
    match st.engine.store().get_job(id).await.map_err(store_err)? {
        Some(j) => Ok(axum::Json(job_json(&st, &rates, j).await?).into_response()),
        None => Err(ApiError::not_found("job")),
    }
}

/// `POST /v1/jobs/{id}:cancel` → `200` job: pending and running segments end
/// `cancelled`, their recipients count as cancelled. A job already ended is
/// returned as it is.
pub async fn action(
    State(st): State<AppState>,
    Extension(rates): Extension<Arc<RateSampler>>,
    Path(segment): Path<String>,
) -> Result<Response, ApiError> {
    let Some((raw_id, verb)) = segment.split_once(':') else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_action",
            format!("POST /v1/jobs/{segment} needs an action: {segment}:cancel"),
        ));
    };
    if verb != "cancel" {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_action",
            format!("no job action {verb:?}; use :cancel"),
        ));
    }
    let id = parse_id(raw_id, "job")?;
    match st
        .engine
        .store()
        .cancel_job(id, st.clock.now_ms())
        .await
        .map_err(store_err)?
    {
        Some(j) => {
            st.engine.wake_planner();
            Ok(axum::Json(job_json(&st, &rates, j).await?).into_response())
        }
        None => Err(ApiError::not_found("job")),
    }
}

#[derive(Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    before: Option<String>,
    #[serde(default)]
    limit: Option<String>,
}

/// `GET /v1/jobs?before=&limit=` → `{jobs, next_before}`, newest first.
pub async fn list(
    State(st): State<AppState>,
    Extension(rates): Extension<Arc<RateSampler>>,
    q: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let before = int_param("before", &q.before, 1..=i64::MAX)?;
    let limit = int_param("limit", &q.limit, 1..=500)?.unwrap_or(50) as usize;
    let jobs = st
        .engine
        .store()
        .list_jobs(before, limit)
        .await
        .map_err(store_err)?;
    let next_before = (jobs.len() == limit)
        .then(|| jobs.last().map(|j| j.id))
        .flatten();
    let mut out = Vec::with_capacity(jobs.len());
    for j in jobs {
        out.push(job_json(&st, &rates, j).await?);
    }
    Ok(axum::Json(serde_json::json!({ "jobs": out, "next_before": next_before })).into_response())
}

#[derive(Deserialize)]
pub struct SegmentsQuery {
    #[serde(default)]
    after: Option<String>,
    #[serde(default)]
    limit: Option<String>,
}

/// `GET /v1/jobs/{id}/segments?after=&limit=` → `{segments, next_after}` by id.
pub async fn segments(
    State(st): State<AppState>,
    Path(raw): Path<String>,
    q: Result<Query<SegmentsQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw, "job")?;
    let q = query(q)?;
    let after = int_param("after", &q.after, 0..=i64::MAX)?;
    let limit = int_param("limit", &q.limit, 1..=1000)?.unwrap_or(100) as usize;
    let store = st.engine.store();
    if store.get_job(id).await.map_err(store_err)?.is_none() {
        return Err(ApiError::not_found("job"));
    }
    let segs = store
        .job_segments(id, after, limit)
        .await
        .map_err(store_err)?;
    let next_after = (segs.len() == limit)
        .then(|| segs.last().map(|s| s.id))
        .flatten();
    let out: Vec<SegmentJson> = segs.into_iter().map(Into::into).collect();
    Ok(
        axum::Json(serde_json::json!({ "segments": out, "next_after": next_after }))
            .into_response(),
    )
}

#[derive(Deserialize)]
pub struct SendsQuery {
    #[serde(default)]
    start: Option<String>,
    #[serde(default)]
    end: Option<String>,
}

/// `GET /v1/jobs/{id}/sends?start=&end=` → `{sends}`: the send log of
/// recipients `start <= index < end` (at most 1,000 wide; default `0` and
/// `start + 1000`), by index, each with its idempotency key.
pub async fn sends(
    State(st): State<AppState>,
    Path(raw): Path<String>,
    q: Result<Query<SendsQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw, "job")?;
    let q = query(q)?;
    let start = int_param("start", &q.start, 0..=i64::MAX)?.unwrap_or(0) as u64;
    let end = match int_param("end", &q.end, 0..=i64::MAX)? {
        Some(e) => e as u64,
        None => start.saturating_add(MAX_SENDS_WINDOW),
    };
    if end < start {
        return Err(ApiError::field(
            "end",
            "invalid_field",
            "end must not be below start",
        ));
    }
    if end - start > MAX_SENDS_WINDOW {
        return Err(ApiError::field(
            "end",
            "invalid_field",
            format!("at most {MAX_SENDS_WINDOW} recipients per read (end - start)"),
        ));
    }
    let store = st.engine.store();
    if store.get_job(id).await.map_err(store_err)?.is_none() {
        return Err(ApiError::not_found("job"));
    }
    let rows = store.job_sends(id, start, end).await.map_err(store_err)?;
    let out: Vec<SendJson> = rows.into_iter().map(Into::into).collect();
    Ok(axum::Json(serde_json::json!({ "sends": out })).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_reading_uses_the_average_since_start() {
        let r = RateSampler::default();
        // 5,000 processed in the 2 s since the job started.
        assert_eq!(r.observe(1, 12_000, 5_000, Some(10_000)), 2_500.0);
        // Not started: nothing to measure.
        assert_eq!(r.observe(2, 12_000, 0, None), 0.0);
    }

    #[test]
    fn later_readings_use_the_recent_window() {
        let r = RateSampler::default();
        r.observe(1, 100_000, 0, Some(0));
        // 1 s later, 300 more: 300/s regardless of the slow start.
        assert_eq!(r.observe(1, 101_000, 300, Some(0)), 300.0);
        // A reading 50 ms later is measured against the oldest sample still
        // in the window (not against one too close to mean anything).
        assert_eq!(r.observe(1, 101_050, 330, Some(0)), 330.0 * 1000.0 / 1050.0);
        // 20 s on, the old samples have left the window: back to the average
        // since start, then the window again.
        let avg = r.observe(1, 121_000, 10_330, Some(0));
        assert!((avg - 10_330.0 / 121.0).abs() < 1e-9, "{avg}");
        assert_eq!(r.observe(1, 122_000, 10_830, Some(0)), 500.0);
    }

    #[test]
    fn a_stalled_job_reads_zero() {
        let r = RateSampler::default();
        r.observe(1, 1_000, 700, Some(0));
        assert_eq!(r.observe(1, 2_000, 700, Some(0)), 0.0);
    }

    #[test]
    fn samples_are_bounded() {
        let r = RateSampler::default();
        for job in 0..(MAX_JOBS as i64 + 10) {
            r.observe(job, job, 0, None);
        }
        assert_eq!(r.len(), MAX_JOBS);
        let mut jobs = r.jobs.lock().unwrap();
        // The stalest were dropped.
        assert!(!jobs.contains_key(&0));
        assert!(jobs.contains_key(&(MAX_JOBS as i64 + 9)));
        jobs.clear();
        drop(jobs);
        for t in 0..10_000 {
            r.observe(7, t * 200, t as u64, None);
        }
        let jobs = r.jobs.lock().unwrap();
        assert!(jobs[&7].len() <= MAX_SAMPLES);
        assert!(jobs[&7].len() <= (RATE_WINDOW_MS / 200 + 1) as usize);
    }

    #[test]
    fn forgetting_a_job() {
        let r = RateSampler::default();
        r.observe(1, 0, 0, None);
        r.forget(&1);
        assert_eq!(r.len(), 0);
    }

    #[test]
    fn totals_add_up() {
        let t = JobTotals {
            total: 100,
            delivered: 50,
            failed: 5,
            retrying: 3,
            expired: 10,
            cancelled: 0,
        };
        let j = TotalsJson::from(t);
        assert_eq!(
            j.sent + j.failed + j.expired + j.cancelled + j.remaining,
            j.total
        );
        assert_eq!(j.remaining, 35);
    }
}
