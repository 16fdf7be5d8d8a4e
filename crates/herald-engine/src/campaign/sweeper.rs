//! The sweeper: on one node at a time (the store's named lease), re-issues
//! segments whose claim lapsed or that ended partial, gives up on recipients
//! that used their attempts, and ends jobs at their deadline or when done;
//! then starts the follow-ups that are due (`follow_ups`).

use std::sync::Arc;

use herald_store::{SweepOptions, SweepReport};

use super::{SWEEPER_LEASE, Shared};

/// Segments handled per kind of work per sweep transaction.
const SWEEP_LIMIT: usize = 500;
/// Sweeps run back to back at most this many times when each one hit the limit.
const MAX_ROUNDS: usize = 20;

pub(super) async fn run(sh: Arc<Shared>) {
    let mut held = false;
    while !sh.stop.is_stopped() {
        // Read every round: a reload may have changed them.
        let cfg = sh.cfg.get();
        let interval = cfg.sweep_interval_ms.max(10);
        // Long enough to survive a few missed rounds, short enough that another
        // node takes over soon after this one dies.
        let ttl = (interval as i64 * 5).max(3_000);
        let opts = SweepOptions {
            max_attempts: cfg.max_attempts.max(1),
            retry_backoff_ms: cfg.retry_backoff_ms.max(0),
            limit: SWEEP_LIMIT,
        };
        let now = sh.clock.now_ms();
        match sh
            .store
            .acquire_lease(SWEEPER_LEASE, &sh.holder, now, ttl)
            .await
        {
            Ok(Some(_)) => {
                if !held {
                    tracing::info!(node = %sh.holder.node_id, incarnation = sh.holder.incarnation, "this node now sweeps job segments");
                    held = true;
                }
                sweep_rounds(&sh, opts).await;
                super::follow_ups::send_due(&sh).await;
            }
            Ok(None) => held = false,
            Err(e) => tracing::warn!(error = %e, "taking the sweeper lease failed"),
        }
        sh.nap(&sh.sweep, interval).await;
    }
    if held {
        let _ = sh.store.release_lease(SWEEPER_LEASE, &sh.holder).await;
    }
}

/// Sweeps until a round finds less than a full batch of work.
async fn sweep_rounds(sh: &Shared, opts: SweepOptions) {
    for _ in 0..MAX_ROUNDS {
        let report = match sh.store.sweep(sh.clock.now_ms(), opts).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "sweep failed");
                return;
            }
        };
        if report != SweepReport::default() {
            tracing::info!(
                abandoned = report.abandoned,
                reissued = report.reissued,
                expired_jobs = report.expired_jobs,
                finished_jobs = report.finished_jobs,
                failed_recipients = report.failed_recipients,
                "swept"
            );
        }
        if report.reissued > 0 {
            sh.work.notify_waiters();
        }
        let limit = opts.limit as u64;
        let full = report.abandoned >= limit
            || report.reissued >= limit
            || report.expired_jobs >= limit
            || report.finished_jobs >= limit;
        if !full {
            return;
        }
    }
}
