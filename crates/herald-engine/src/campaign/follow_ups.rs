//! Follow-ups: once a job has ended and its follow-up delay has passed, the
//! recipients it delivered to that sent no `read` receipt get the follow-up
//! message, as a new job over an audience of just them. Runs on the node
//! that holds the sweeper's lease, after each sweep.
//!
//! The new job is created only while the follow-up is still waiting, and
//! marks it sent in the same transaction, so it goes out once even when two
//! nodes (or a restart) try. An audience left behind by a crash mid-way is
//! never used by a job.

use herald_core::campaign::JobState;
use herald_store::{AUDIENCE_CHUNK, FollowUpRecord, JobSpec, StoreError};

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
    let name = format!("follow-up of job {}", job.id);
    let audience = store.create_audience(job.tenant, Some(name), now).await?;
    let filled = fill(sh, job.id, audience).await;
    let size = match filled {
        Ok(n) => n,
        Err(e) => {
            drop_audience(store, audience, "an interrupted follow-up").await;
            return Err(e);
        }
    };
    if size == 0 {
        drop_audience(store, audience, "an empty follow-up").await;
        store.skip_follow_up(job.id, sh.clock.now_ms()).await?;
        tracing::info!(job = job.id, "follow-up skipped: every recipient read it");
        return Ok(());
    }
    store
        .seal_audience(audience, size, sh.clock.now_ms())
        .await?;
    let spec = JobSpec {
        tenant: job.tenant,
        audience_id: audience,
        channel: job.channel.clone(),
        message: f.message.clone(),
        segment_size: job.segment_size,
        deadline_at: None,
        priority: job.priority,
        task_id: None,
        follow_up: None,
        follows: Some(job.id),
        routing: job.routing.clone(),
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

/// Appends job `job_id`'s unread recipients to `audience`, a chunk per read;
/// returns how many.
async fn fill(sh: &Shared, job_id: i64, audience: i64) -> Result<u64, StoreError> {
    let chunk = AUDIENCE_CHUNK as usize;
    let (mut from, mut size) = (0u64, 0u64);
    loop {
        let page = sh.store.unread_sends(job_id, from, chunk).await?;
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
