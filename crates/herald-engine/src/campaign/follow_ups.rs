//! Follow-ups: once a job has ended and its follow-up delay has passed, the
//! recipients it delivered to that sent no `read` receipt get the follow-up
//! message, as a new job over an audience of just them. Runs on the node
//! that holds the sweeper's lease, after each sweep.
//!
//! A follow-up may instead be the next step of the job's fallback route
//! (issue 39 §2): a new job on that step's channel and address type, of the
//! recipients whose outcome the step lists in its `on` (no address, opted
//! out, failed, unread), carrying the rest of the route as its own
//! follow-up. A step waits for the whole job, never holds its segments.
//!
//! The new job is created only while the follow-up is still waiting, and
//! marks it sent in the same transaction, so it goes out once even when two
//! nodes (or a restart) try. An audience left behind by a crash mid-way is
//! never used by a job.

use herald_core::campaign::JobState;
use herald_core::route::{Next, StepOn};
use herald_core::timer::Routing;
use herald_store::{AUDIENCE_CHUNK, FollowUp, FollowUpRecord, JobRecord, JobSpec, StoreError};

use super::Shared;
use super::upload::drop_audience;

/// Follow-ups started per sweep; the rest wait for the next one.
const PER_ROUND: usize = 20;

/// Sends every due follow-up (up to [`PER_ROUND`]).
pub(super) async fn send_due(sh: &Shared) {
    let due = match sh.store.due_follow_ups(sh.clock.now_ms(), PER_ROUND).await {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(error = %e, "looking for due follow-ups failed");
            return;
        }
    };
    for f in due {
        if let Err(e) = send_one(sh, &f).await {
            tracing::warn!(job = f.job_id, error = %e, "sending a follow-up failed; will retry");
        }
    }
}

async fn send_one(sh: &Shared, f: &FollowUpRecord) -> Result<(), StoreError> {
    let store = &*sh.store;
    let now = sh.clock.now_ms();
    let job = match store.get_job(f.job_id).await? {
        Some(j) if j.state != JobState::Cancelled => j,
        _ => {
            store.skip_follow_up(f.job_id, now).await?;
            tracing::info!(job = f.job_id, "follow-up skipped: the job was cancelled");
            return Ok(());
        }
    };
    // A route step: who gets it, through which channel, and what follows.
    let step = match f.step {
        Some(i) => match next_step(&job, i, &f.message) {
            Some(s) => Some(s),
            None => {
                store.skip_follow_up(f.job_id, now).await?;
                tracing::warn!(
                    job = f.job_id,
                    step = i,
                    "route step skipped: the job's route has no such step"
                );
                return Ok(());
            }
        },
        None => None,
    };
    let name = match f.step {
        Some(i) => format!("route step {i} of job {}", job.id),
        None => format!("follow-up of job {}", job.id),
    };
    let on = step.as_ref().map(|s| s.on.as_slice());
    let Some((audience, size)) = recipients_audience(sh, &job, name, on).await? else {
        store.skip_follow_up(job.id, sh.clock.now_ms()).await?;
        tracing::info!(job = job.id, "follow-up skipped: nobody needs it");
        return Ok(());
    };
    let (channel, routing, follow_up) = match step {
        Some(s) => (s.channel, s.routing, s.follow_up),
        None => (job.channel.clone(), job.routing.clone(), None),
    };
    let spec = JobSpec {
        tenant: job.tenant,
        audience_id: audience,
        channel,
        message: f.message.clone(),
        segment_size: job.segment_size,
        deadline_at: None,
        priority: job.priority,
        task_id: None,
        follow_up,
        follows: Some(job.id),
        resends: None,
        routing,
        traceparent: job.traceparent.clone(),
        meta: job.meta.clone(),
    };
    match store.create_job(spec, sh.clock.now_ms()).await {
        Ok(Some(created)) => {
            tracing::info!(
                job = job.id,
                follow_up_job = created.id,
                recipients = size,
                "follow-up sent"
            );
            sh.work.notify_waiters();
            Ok(())
        }
        Ok(None) => {
            // Another node sent it first.
            drop_audience(store, audience, "a follow-up sent elsewhere").await;
            Ok(())
        }
        Err(e) => {
            drop_audience(store, audience, "a failed follow-up").await;
            Err(e)
        }
    }
}

/// The job a route step of `job` makes: the step's channel, the job's
/// routing at that step (its own template, if it has one), and the step
/// after it as the new job's follow-up.
struct NextStep {
    on: Vec<StepOn>,
    channel: String,
    routing: Option<String>,
    follow_up: Option<FollowUp>,
}

fn next_step(job: &JobRecord, step: u32, message: &str) -> Option<NextStep> {
    let routing = Routing::parse(job.routing.as_deref());
    let s = routing.route.get(usize::try_from(step).ok()?)?;
    let (mut at, channel) = routing.at_step(Next {
        step,
        delay_ms: 0,
        check_read: false,
    })?;
    if let Some(t) = &s.template {
        at.template = Some(t.clone());
    }
    let stored = at.stored();
    let follow_up = herald_store::route_follow_up(stored.as_deref(), message);
    Some(NextStep {
        on: s.on.clone(),
        channel,
        routing: stored,
        follow_up,
    })
}

/// A new sealed audience, called `name`, of job `job`'s recipients for a
/// follow-up: those it delivered to that sent no `read` receipt, or those a
/// route step takes (`on`). `None` (nothing left behind) when there is
/// nobody. The one place that says who is unread: the follow-ups the sweeper
/// sends and an operator's resend to the unread both build their audience
/// here.
pub(super) async fn recipients_audience(
    sh: &Shared,
    job: &JobRecord,
    name: String,
    on: Option<&[StepOn]>,
) -> Result<Option<(i64, u64)>, StoreError> {
    let store = &*sh.store;
    let audience = store
        .create_audience(job.tenant, Some(name), sh.clock.now_ms())
        .await?;
    let size = match fill(sh, job.id, audience, on).await {
        Ok(n) => n,
        Err(e) => {
            drop_audience(store, audience, "an interrupted follow-up").await;
            return Err(e);
        }
    };
    if size == 0 {
        drop_audience(store, audience, "an empty follow-up").await;
        return Ok(None);
    }
    if let Err(e) = store.seal_audience(audience, size, sh.clock.now_ms()).await {
        drop_audience(store, audience, "an unsealed follow-up").await;
        return Err(e);
    }
    Ok(Some((audience, size)))
}

/// Appends job `job_id`'s recipients for the follow-up to `audience`, a
/// chunk per read: the unread, or those a route step takes (`on`); returns
/// how many.
async fn fill(
    sh: &Shared,
    job_id: i64,
    audience: i64,
    on: Option<&[StepOn]>,
) -> Result<u64, StoreError> {
    let chunk = AUDIENCE_CHUNK as usize;
    let (mut from, mut size) = (0u64, 0u64);
    loop {
        let page = match on {
            Some(on) => sh.store.step_sends(job_id, from, chunk, on).await?,
            None => sh.store.unread_sends(job_id, from, chunk).await?,
        };
        let Some(&(last, _)) = page.last() else {
            return Ok(size);
        };
        let full = page.len() == chunk;
        let recipients: Vec<String> = page.into_iter().map(|(_, r)| r).collect();
        sh.store
            .append_audience(audience, size, &recipients)
            .await?;
        size += recipients.len() as u64;
        from = last + 1;
        if !full {
            return Ok(size);
        }
    }
}
