//! Stored reports ([`crate::Store::report`]): every send-log row a timer's
//! attempt or a campaign recipient's outcome writes is counted once, per UTC
//! day, tenant, channel, outcome, rule and job; reports group and filter
//! those counts, and retention leaves them alone.

use herald_core::campaign::SendState;

use super::fixtures::*;
use super::retention::audience;
use super::support::{S, insert_all};
use crate::{
    CompletionOutcome, JobRecord, NewTimer, ReportDim, ReportQuery, ReportRow, RetentionKind,
    SendEntry, TaskStart,
};

const DAY: i64 = 86_400_000;
/// Noon on a UTC day: day number `T0 / DAY`.
const T0: i64 = 1_700_000_000_000 / DAY * DAY + DAY / 2;
const D0: i64 = T0 / DAY;

fn by(dims: &[ReportDim]) -> ReportQuery {
    ReportQuery {
        group_by: dims.to_vec(),
        limit: 1_000,
        ..Default::default()
    }
}

async fn report(store: &S, q: ReportQuery) -> Vec<ReportRow> {
    store.report(q).await.expect("report")
}

/// `(channel, outcome, day, count)` of a report grouped by those three.
async fn by_channel_outcome_day(store: &S, q: ReportQuery) -> Vec<(String, String, i64, u64)> {
    let q = ReportQuery {
        group_by: vec![ReportDim::Channel, ReportDim::Outcome, ReportDim::Day],
        ..q
    };
    report(store, q)
        .await
        .into_iter()
        .map(|r| {
            (
                r.channel.expect("grouped by channel"),
                r.outcome.expect("grouped by outcome"),
                r.day.expect("grouped by day"),
                r.count,
            )
        })
        .collect()
}

fn on(channel: &str, t: NewTimer) -> NewTimer {
    NewTimer {
        channel: channel.into(),
        ..t
    }
}

fn row(channel: &str, outcome: &str, day: i64, n: u64) -> (String, String, i64, u64) {
    (channel.into(), outcome.into(), day, n)
}

/// Timers on two channels and two tenants, finished over two days: a retry
/// then a delivery, a failure, a dead one, and an outcome recorded twice
/// (the send log keeps both, and so do the counts).
async fn timer_outcomes(store: &S) {
    let mut other = timer(T0 + 4);
    other.tenant = OTHER_TENANT;
    let ts = insert_all(
        store,
        [
            timer(T0),
            timer(T0 + 1),
            on("email", timer(T0 + 2)),
            timer(T0 + 3),
            other,
        ],
    )
    .await;
    let c = |i: usize, attempt, outcome, at| completion(&ts[i], attempt, outcome, at);
    let retry = CompletionOutcome::Retry {
        next_due_at: T0 + 100,
    };
    store
        .complete(vec![
            c(0, 1, retry, T0 + 10),
            c(1, 1, CompletionOutcome::Done, T0 + 11),
            c(2, 1, CompletionOutcome::Failed, T0 + 12),
            c(4, 1, CompletionOutcome::Done, T0 + 13),
        ])
        .await
        .expect("complete");
    // The next day: the retried one delivered, one dead, a duplicate.
    store
        .complete(vec![
            c(0, 2, CompletionOutcome::Done, T0 + DAY),
            c(3, 1, CompletionOutcome::Dead, T0 + DAY + 1),
            c(1, 1, CompletionOutcome::Done, T0 + DAY + 2),
        ])
        .await
        .expect("complete");
}

pub async fn timer_outcomes_are_counted_per_channel_outcome_and_day(store: S) {
    timer_outcomes(&store).await;
    assert_eq!(
        by_channel_outcome_day(&store, by(&[])).await,
        [
            row("email", "failed", D0, 1),
            row("webhook", "dead", D0 + 1, 1),
            row("webhook", "delivered", D0, 2),
            row("webhook", "delivered", D0 + 1, 2),
            row("webhook", "retry", D0, 1),
        ],
        "ordered by channel, outcome, day"
    );
    // Grouped by day only, in day order; the total has no key at all.
    let days: Vec<_> = report(&store, by(&[ReportDim::Day]))
        .await
        .into_iter()
        .map(|r| (r.day, r.count))
        .collect();
    assert_eq!(days, [(Some(D0), 4), (Some(D0 + 1), 3)]);
    assert_eq!(
        report(&store, by(&[])).await,
        [ReportRow {
            count: 7,
            ..Default::default()
        }]
    );
    // By tenant; a timer's delivery has no rule and no job.
    let tenants: Vec<_> = report(
        &store,
        by(&[ReportDim::Tenant, ReportDim::Rule, ReportDim::Job]),
    )
    .await
    .into_iter()
    .map(|r| (r.tenant, r.rule, r.job, r.count))
    .collect();
    assert_eq!(
        tenants,
        [
            (Some(DEFAULT_TENANT), Some(None), Some(None), 6),
            (Some(OTHER_TENANT), Some(None), Some(None), 1),
        ]
    );
}

pub async fn reports_filter_by_days_tenant_channel_and_outcome(store: S) {
    timer_outcomes(&store).await;
    let total = |q: ReportQuery| {
        let store = store.clone();
        async move {
            report(&store, q)
                .await
                .into_iter()
                .map(|r| r.count)
                .sum::<u64>()
        }
    };
    let all = by(&[]);
    let from = |d| ReportQuery {
        from_day: Some(d),
        ..all.clone()
    };
    let to = |d| ReportQuery {
        to_day: Some(d),
        ..all.clone()
    };
    assert_eq!(total(from(D0 + 1)).await, 3, "from is inclusive");
    assert_eq!(total(to(D0)).await, 4, "to is inclusive");
    assert_eq!(total(from(D0 + 2)).await, 0);
    assert!(
        report(&store, from(D0 + 2)).await.is_empty(),
        "no row for nothing"
    );
    let q = ReportQuery {
        from_day: Some(D0),
        to_day: Some(D0),
        channel: Some("webhook".into()),
        outcome: Some("delivered".into()),
        ..all.clone()
    };
    assert_eq!(total(q).await, 2);
    let q = ReportQuery {
        tenant: Some(OTHER_TENANT),
        ..by(&[ReportDim::Channel])
    };
    let rows = report(&store, q).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].channel.as_deref(), rows[0].count),
        (Some("webhook"), 1)
    );
    let q = ReportQuery {
        channel: Some("sms".into()),
        ..all.clone()
    };
    assert_eq!(total(q).await, 0);
    // A timer has no job: a job filter finds none of its counts.
    let q = ReportQuery {
        job: Some(1),
        ..all.clone()
    };
    assert_eq!(total(q).await, 0);
    // The limit caps the groups, in order.
    let q = ReportQuery {
        limit: 2,
        ..by(&[ReportDim::Channel, ReportDim::Outcome, ReportDim::Day])
    };
    let rows = report(&store, q).await;
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].channel.as_deref(), Some("email"));
}

/// Records `entries` under a fresh claim of the job's one segment.
async fn record(store: &S, job: &JobRecord, entries: Vec<SendEntry>, now: i64) {
    let c = store
        .claim_segment("w", now, 60_000)
        .await
        .expect("claim")
        .expect("a segment");
    assert_eq!(c.claim.job_id, job.id);
    store
        .record_sends(&c.claim, 0, entries, now, 60_000)
        .await
        .expect("record_sends");
}

/// A rule's job (via a task) and a job of no rule, one segment each.
async fn campaign_jobs(store: &S) -> (i64, JobRecord, JobRecord) {
    let aud = audience(store, 10).await;
    let rule = store
        .create_rule(
            crate::RuleSpec {
                channel: "wecom".into(),
                ..rule_spec("r", Some(aud))
            },
            T0,
        )
        .await
        .expect("create_rule");
    let task = store
        .plan_task(rule.id, 1, T0, T0)
        .await
        .expect("plan_task")
        .expect("a task");
    let ruled = match store.start_task(task.id, T0, 100).await.expect("start") {
        TaskStart::Started { job } => *job,
        other => panic!("expected Started, got {other:?}"),
    };
    let plain = store
        .create_job(job_spec(audience(store, 10).await, 100), T0)
        .await
        .expect("create_job")
        .expect("a job");
    (rule.id, ruled, plain)
}

pub async fn campaign_outcomes_are_counted_per_rule_and_job(store: S) {
    let (rule, ruled, plain) = campaign_jobs(&store).await;
    // Same priority: the older job's segment is claimed first.
    let first = store
        .claim_segment("w", T0 + 1, 60_000)
        .await
        .unwrap()
        .expect("a segment");
    assert_eq!(first.claim.job_id, ruled.id);
    let mut entries = sends(0..3, SendState::Delivered);
    entries.push(send(3, SendState::Retry));
    entries.push(send(4, SendState::Failed));
    store
        .record_sends(&first.claim, 0, entries, T0 + 1, 60_000)
        .await
        .expect("record_sends");
    // The next day the retry goes through; a final outcome sent again
    // changes nothing in the send log, and is not counted again.
    store
        .record_sends(
            &first.claim,
            0,
            vec![send(3, SendState::Delivered), send(0, SendState::Failed)],
            T0 + DAY,
            60_000,
        )
        .await
        .expect("record_sends");
    record(&store, &plain, sends(0..2, SendState::Delivered), T0 + 2).await;

    let rows: Vec<_> = report(
        &store,
        by(&[ReportDim::Rule, ReportDim::Job, ReportDim::Outcome]),
    )
    .await
    .into_iter()
    .map(|r| {
        (
            r.rule,
            r.job,
            r.outcome.expect("grouped by outcome"),
            r.count,
        )
    })
    .collect();
    let (no_rule, of_rule) = (Some(None), Some(Some(rule)));
    let (of_plain, of_ruled) = (Some(Some(plain.id)), Some(Some(ruled.id)));
    assert_eq!(
        rows,
        [
            (no_rule, of_plain, "delivered".to_string(), 2),
            (of_rule, of_ruled, "delivered".to_string(), 4),
            (of_rule, of_ruled, "failed".to_string(), 1),
            (of_rule, of_ruled, "retry".to_string(), 1),
        ],
        "no rule (0) first"
    );

    // Filters by rule and by job; campaign counts carry the job's channel.
    let q = ReportQuery {
        rule: Some(rule),
        ..by(&[ReportDim::Channel])
    };
    assert_eq!(
        report(&store, q).await,
        [ReportRow {
            channel: Some("wecom".into()),
            count: 6,
            ..Default::default()
        }]
    );
    let q = ReportQuery {
        job: Some(ruled.id),
        ..by(&[ReportDim::Day])
    };
    let days: Vec<_> = report(&store, q)
        .await
        .into_iter()
        .map(|r| (r.day, r.count))
        .collect();
    assert_eq!(days, [(Some(D0), 5), (Some(D0 + 1), 1)]);
    let q = ReportQuery {
        job: Some(plain.id),
        ..by(&[ReportDim::Channel, ReportDim::Tenant])
    };
    assert_eq!(
        report(&store, q).await,
        [ReportRow {
            tenant: Some(DEFAULT_TENANT),
            channel: Some("log".into()),
            count: 2,
            ..Default::default()
        }]
    );
}

pub async fn reports_outlive_the_rows_they_count(store: S) {
    timer_outcomes(&store).await;
    let (_, ruled, plain) = campaign_jobs(&store).await;
    record(&store, &ruled, sends(0..10, SendState::Delivered), T0 + 1).await;
    record(&store, &plain, sends(0..10, SendState::Failed), T0 + 2).await;
    let q = || by(&ReportDim::ALL);
    let before = report(&store, q()).await;
    assert_eq!(before.iter().map(|r| r.count).sum::<u64>(), 7 + 20);

    // End the jobs, then purge everything retention can.
    for j in [&ruled, &plain] {
        store.cancel_job(j.id, T0 + 3).await.expect("cancel_job");
    }
    for kind in RetentionKind::ALL {
        while store.purge(kind, i64::MAX, 1_000).await.expect("purge") > 0 {}
    }
    assert!(store.get_job(plain.id).await.unwrap().is_none(), "purged");
    assert!(store.get_job(ruled.id).await.unwrap().is_none(), "purged");
    assert!(
        store.deliveries_for(1).await.unwrap().is_empty(),
        "the timers' send log is gone"
    );
    assert_eq!(report(&store, q()).await, before, "the reports stay");
}

/// Two handles (two nodes) completing batches over the same keys at once:
/// every count lands, none twice.
pub async fn concurrent_counts_from_two_handles_add_up(a: S, b: S) {
    const BATCHES: usize = 20;
    const PER_BATCH: usize = 25;
    let mut tasks = Vec::new();
    for store in [a.clone(), b] {
        tasks.push(tokio::spawn(async move {
            for i in 0..BATCHES {
                let ts = insert_all(
                    &store,
                    (0..PER_BATCH).map(|j| {
                        let t = timer(T0 + (i * PER_BATCH + j) as i64);
                        if j % 2 == 0 { on("email", t) } else { t }
                    }),
                )
                .await;
                let batch = ts
                    .iter()
                    .map(|t| completion(t, 1, CompletionOutcome::Done, T0 + 1))
                    .collect();
                store.complete(batch).await.expect("complete");
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    let rows: Vec<_> = report(&a, by(&[ReportDim::Channel]))
        .await
        .into_iter()
        .map(|r| (r.channel, r.count))
        .collect();
    let per = (BATCHES * 2) as u64;
    assert_eq!(
        rows,
        [
            (Some("email".to_string()), per * 13),
            (Some("webhook".to_string()), per * 12),
        ]
    );
}
