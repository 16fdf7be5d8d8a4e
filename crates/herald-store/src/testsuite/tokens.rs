//! Cluster-wide channel access tokens, final delivery status from provider
//! callbacks on both send logs, and recall.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use herald_core::campaign::SendState;

use super::fixtures::{
    DEFAULT_TENANT, chunk_starts, completion, created, inserts, job_spec, recipient, recipients,
    send, timer,
};
use super::support::S;
use crate::{
    AUDIENCE_CHUNK, ChannelPause, ChannelToken, CompletionOutcome, DeliveryRecord, FINAL_RECALLED,
    JobRecord, LeaseCheck, NewTimer, SendEntry, TimerRecord,
};

const T0: i64 = 1_700_000_000_000;

fn token(value: &str, expires_at: i64) -> ChannelToken {
    ChannelToken {
        token: value.into(),
        expires_at,
        fetched_at: expires_at - 7_200_000,
        updated_at: expires_at - 7_200_000,
    }
}

async fn timer_on(store: &S, channel: &str) -> TimerRecord {
    let t = NewTimer {
        channel: channel.into(),
        ..timer(T0)
    };
    created(&store.apply(inserts([t])).await.expect("apply")[0])
}

/// Records one attempt of `t` and returns its send-log row.
async fn attempt(
    store: &S,
    t: &TimerRecord,
    n: u32,
    outcome: CompletionOutcome,
    msgid: Option<&str>,
) -> DeliveryRecord {
    let mut c = completion(t, n, outcome, T0 + i64::from(n));
    c.provider_msgid = msgid.map(String::from);
    store.complete(vec![c]).await.expect("complete");
    store
        .deliveries_for(t.id)
        .await
        .expect("deliveries_for")
        .pop()
        .expect("the row just written")
}

/// A running job of `n` fixture recipients on `channel`, one segment, with
/// `entries` recorded under its claim.
async fn job_with_sends(store: &S, channel: &str, n: u64, entries: Vec<SendEntry>) -> JobRecord {
    job_with(store, channel, n, entries, None).await
}

/// [`job_with_sends`] of a job that carries `follow_up`.
async fn job_with(
    store: &S,
    channel: &str,
    n: u64,
    entries: Vec<SendEntry>,
    follow_up: Option<crate::FollowUp>,
) -> JobRecord {
    let aud = store
        .create_audience(DEFAULT_TENANT, None, T0)
        .await
        .expect("audience");
    for start in chunk_starts(n) {
        let end = (start + AUDIENCE_CHUNK).min(n);
        store
            .append_audience(aud, start, &recipients(start..end))
            .await
            .expect("append");
    }
    store.seal_audience(aud, n, T0).await.expect("seal");
    let spec = crate::JobSpec {
        channel: channel.into(),
        follow_up,
        ..job_spec(aud, n)
    };
    let job = store
        .create_job(spec, T0)
        .await
        .expect("create_job")
        .expect("job");
    let c = store
        .claim_segment("w", T0, 60_000)
        .await
        .expect("claim")
        .expect("a segment");
    assert_eq!(c.job.id, job.id);
    let cursor = entries.iter().map(|e| e.index + 1).max().unwrap_or(0);
    let held = store
        .record_sends(&c.claim, cursor, entries, T0 + 1, 60_000)
        .await
        .expect("record_sends");
    assert!(matches!(held, LeaseCheck::Held { .. }), "{held:?}");
    job
}

// ---- Channel tokens ----

pub async fn channel_tokens_are_upserted_and_read_back(store: S) {
    assert_eq!(store.get_channel_token("wechat:app").await.unwrap(), None);
    let first = token("tok-1", T0 + 7_200_000);
    store.put_channel_token("wechat:app", &first).await.unwrap();
    assert_eq!(
        store.get_channel_token("wechat:app").await.unwrap(),
        Some(first.clone())
    );
    // Keys are independent; a put replaces every field.
    assert_eq!(store.get_channel_token("wecom:app").await.unwrap(), None);
    let second = ChannelToken {
        token: "tok-2".into(),
        expires_at: T0 + 9_000_000,
        fetched_at: T0 + 1_800_000,
        updated_at: T0 + 1_800_001,
    };
    store
        .put_channel_token("wechat:app", &second)
        .await
        .unwrap();
    assert_eq!(
        store.get_channel_token("wechat:app").await.unwrap(),
        Some(second)
    );
    // Credentials never show in Debug output.
    let shown = format!("{first:?}");
    assert!(!shown.contains("tok-1"), "{shown}");
    assert!(shown.contains("redacted"), "{shown}");
}

pub async fn expiring_a_token_needs_the_token_that_failed(store: S) {
    let exp = T0 + 7_200_000;
    assert!(!store.expire_channel_token("k", "tok", T0).await.unwrap());
    store
        .put_channel_token("k", &token("fresh", exp))
        .await
        .unwrap();
    // A node that saw an older token fail must not throw the fresh one away.
    assert!(!store.expire_channel_token("k", "stale", T0).await.unwrap());
    assert_eq!(
        store.get_channel_token("k").await.unwrap().unwrap(),
        token("fresh", exp)
    );
    assert!(store.expire_channel_token("k", "fresh", T0).await.unwrap());
    let got = store.get_channel_token("k").await.unwrap().unwrap();
    assert_eq!(
        (got.token.as_str(), got.expires_at, got.updated_at),
        ("fresh", T0, T0)
    );
    // Expiring again never moves the expiry later.
    assert!(
        store
            .expire_channel_token("k", "fresh", T0 + 50)
            .await
            .unwrap()
    );
    let got = store.get_channel_token("k").await.unwrap().unwrap();
    assert_eq!((got.expires_at, got.updated_at), (T0, T0 + 50));
    // The comparison is exact.
    assert!(!store.expire_channel_token("k", "FRESH", T0).await.unwrap());
    assert!(!store.expire_channel_token("k", "fresh ", T0).await.unwrap());
}

/// The refresh protocol as channels run it over the store: read; if
/// missing or expired, take the lease `token:{key}`, read again, fetch only
/// if still needed, put, release. Many callers on two handles at once make
/// exactly one fetch and all end with the same token.
pub async fn concurrent_refreshers_on_two_handles_fetch_once(a: S, b: S) {
    let fetches = Arc::new(AtomicUsize::new(0));
    let now = T0;
    let mut tasks = Vec::new();
    for i in 0..8 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        let fetches = fetches.clone();
        tasks.push(tokio::spawn(async move {
            let holder = crate::Holder::new(format!("node-{i}"), 1);
            for _ in 0..500 {
                if let Some(t) = store.get_channel_token("wx").await.unwrap()
                    && t.expires_at > now
                {
                    return t.token;
                }
                let lease = store
                    .acquire_lease("token:wx", &holder, now, 30_000)
                    .await
                    .unwrap();
                if lease.is_some() {
                    let current = store.get_channel_token("wx").await.unwrap();
                    if current.is_none_or(|t| t.expires_at <= now) {
                        let n = fetches.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        let fresh = token(&format!("tok-{n}"), now + 7_200_000);
                        store.put_channel_token("wx", &fresh).await.unwrap();
                    }
                    store.release_lease("token:wx", &holder).await.unwrap();
                } else {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            panic!("{} never saw a token", holder.node_id);
        }));
    }
    let mut seen = HashSet::new();
    for t in tasks {
        seen.insert(t.await.unwrap());
    }
    assert_eq!(fetches.load(Ordering::SeqCst), 1);
    assert_eq!(seen, HashSet::from(["tok-0".to_string()]));
}

// ---- Final status and recall ----

pub async fn receipts_count_once_per_send_and_event(store: S) {
    use crate::{ReceiptCounts, ReceiptEvent, ReceiptOn};
    let job = job_with_sends(&store, "wecom", 2, vec![send(0, SendState::Delivered)]).await;
    let on = |idx| ReceiptOn::JobSend {
        job_id: job.id,
        idx,
    };
    let read = ReceiptEvent::Read;
    assert!(store.record_receipt(on(0), read, T0).await.unwrap());
    assert!(
        !store.record_receipt(on(0), read, T0 + 5).await.unwrap(),
        "a repeat"
    );
    assert!(store.record_receipt(on(1), read, T0).await.unwrap());
    assert!(
        store
            .record_receipt(on(0), ReceiptEvent::Delivered, T0)
            .await
            .unwrap()
    );
    assert_eq!(
        store.job_receipt_counts(job.id).await.unwrap(),
        ReceiptCounts {
            delivered: 1,
            read: 2,
            clicked: 0
        }
    );
    assert_eq!(
        store.job_receipt_counts(job.id + 1000).await.unwrap(),
        ReceiptCounts::default()
    );
    assert!(
        store
            .record_receipt(ReceiptOn::Delivery(7), read, T0)
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_receipt(ReceiptOn::Delivery(7), read, T0)
            .await
            .unwrap()
    );

    // A provider's `success` callback is a delivery receipt, once; a refusal
    // is none. `msg-0` is both jobs' first message on this channel.
    let other = job_with_sends(
        &store,
        "wecom",
        2,
        vec![send(0, SendState::Delivered), send(1, SendState::Delivered)],
    )
    .await;
    for _ in 0..2 {
        let n = store
            .record_final_status("wecom", "msg-0", "success", T0 + 9)
            .await
            .unwrap();
        assert_eq!(n, 2);
    }
    store
        .record_final_status("wecom", "msg-1", "user_block", T0 + 9)
        .await
        .unwrap();
    assert_eq!(
        store.job_receipt_counts(other.id).await.unwrap().delivered,
        1
    );
    assert_eq!(
        store.job_receipt_counts(job.id).await.unwrap().delivered,
        1,
        "already had its delivery receipt"
    );
}

pub async fn a_follow_up_goes_once_to_the_unread(store: S) {
    use crate::{FollowUp, FollowUpState, ReceiptEvent, ReceiptOn};
    let follow_up = FollowUp {
        after_ms: 1_000,
        message: r#"{"text":"did you see it?"}"#.into(),
        step: None,
    };
    let entries = vec![
        send(0, SendState::Delivered),
        send(1, SendState::Delivered),
        send(2, SendState::Retry),
        send(3, SendState::Delivered),
    ];
    let job = job_with(&store, "wecom", 4, entries, Some(follow_up.clone())).await;
    let f = store
        .get_follow_up(job.id)
        .await
        .unwrap()
        .expect("stored with the job");
    assert_eq!(
        (f.after_ms, f.state, f.follow_up_job_id),
        (1_000, FollowUpState::Waiting, None)
    );
    assert_eq!(f.message, follow_up.message);
    assert_eq!(store.get_follow_up(job.id + 1000).await.unwrap(), None);
    // The job is still running: nothing is due, however late.
    assert!(
        store
            .due_follow_ups(i64::MAX / 2, 10)
            .await
            .unwrap()
            .is_empty()
    );

    let read = |idx| ReceiptOn::JobSend {
        job_id: job.id,
        idx,
    };
    store
        .record_receipt(read(1), ReceiptEvent::Read, T0)
        .await
        .unwrap();
    store
        .record_receipt(read(3), ReceiptEvent::Clicked, T0)
        .await
        .unwrap();
    let unread = store.unread_sends(job.id, 0, 10).await.unwrap();
    let idx: Vec<u64> = unread.iter().map(|(i, _)| *i).collect();
    assert_eq!(idx, [0, 3], "delivered, and no read receipt");
    assert_eq!(
        store.unread_sends(job.id, 1, 1).await.unwrap().len(),
        1,
        "from, limit"
    );

    // The follow-up job claims the follow-up once.
    let aud = store
        .create_audience(DEFAULT_TENANT, None, T0)
        .await
        .unwrap();
    let to: Vec<String> = unread.into_iter().map(|(_, r)| r).collect();
    store.append_audience(aud, 0, &to).await.unwrap();
    store.seal_audience(aud, 2, T0).await.unwrap();
    let spec = |follows| crate::JobSpec {
        follows,
        ..job_spec(aud, 2)
    };
    let sent = store
        .create_job(spec(Some(job.id)), T0 + 5)
        .await
        .unwrap()
        .expect("created");
    assert_eq!(
        store.create_job(spec(Some(job.id)), T0 + 6).await.unwrap(),
        None,
        "once"
    );
    let f = store.get_follow_up(job.id).await.unwrap().unwrap();
    assert_eq!(
        (f.state, f.follow_up_job_id, f.done_at),
        (FollowUpState::Sent, Some(sent.id), Some(T0 + 5))
    );
    assert_eq!(sent.follows, Some(job.id));
    let following = store.jobs_following(job.id, 0, 10).await.unwrap();
    assert_eq!(following, std::slice::from_ref(&sent));
    assert!(
        !store.skip_follow_up(job.id, T0 + 7).await.unwrap(),
        "already sent"
    );
}

/// A resend to the unread (and a follow-up) records the job it follows;
/// a second resend is refused while a job that follows the same job runs.
pub async fn a_resend_follows_its_job_and_waits_for_a_running_one(store: S) {
    let entries = vec![send(0, SendState::Delivered), send(1, SendState::Delivered)];
    let job = job_with_sends(&store, "wecom", 2, entries).await;
    // (Made before the resends, whose segments it would claim otherwise.)
    let other = job_with_sends(&store, "wecom", 1, vec![send(0, SendState::Delivered)]).await;
    let got = store.get_job(job.id).await.unwrap().unwrap();
    assert_eq!((got.follows, got.last_sent_at), (None, Some(T0 + 1)));
    assert!(
        store
            .jobs_following(job.id, 0, 10)
            .await
            .unwrap()
            .is_empty()
    );

    let audience = || async {
        let aud = store
            .create_audience(DEFAULT_TENANT, None, T0)
            .await
            .unwrap();
        store
            .append_audience(aud, 0, &recipients(0..2))
            .await
            .unwrap();
        store.seal_audience(aud, 2, T0).await.unwrap();
        aud
    };
    let resend = |aud| crate::JobSpec {
        resends: Some(job.id),
        ..job_spec(aud, 2)
    };
    let first = store
        .create_job(resend(audience().await), T0 + 10)
        .await
        .unwrap()
        .expect("nothing follows the job yet");
    assert_eq!((first.follows, first.last_sent_at), (Some(job.id), None));
    assert_eq!(
        store.get_job(first.id).await.unwrap().unwrap().follows,
        Some(job.id)
    );
    // The first is running: a second waits for it.
    assert_eq!(
        store
            .create_job(resend(audience().await), T0 + 11)
            .await
            .unwrap(),
        None
    );
    store.cancel_job(first.id, T0 + 12).await.unwrap().unwrap();
    let second = store
        .create_job(resend(audience().await), T0 + 13)
        .await
        .unwrap()
        .expect("the first has ended");
    // Another job's resend is not held up by this job's.
    let spec = crate::JobSpec {
        resends: Some(other.id),
        ..job_spec(audience().await, 2)
    };
    let third = store.create_job(spec, T0 + 14).await.unwrap().unwrap();
    assert_eq!(third.follows, Some(other.id));

    let ids = |jobs: Vec<JobRecord>| jobs.iter().map(|j| j.id).collect::<Vec<_>>();
    assert_eq!(
        ids(store.jobs_following(job.id, 0, 10).await.unwrap()),
        [first.id, second.id]
    );
    assert_eq!(
        ids(store.jobs_following(job.id, first.id, 10).await.unwrap()),
        [second.id],
        "after"
    );
    assert_eq!(
        ids(store.jobs_following(job.id, 0, 1).await.unwrap()),
        [first.id],
        "limit"
    );
}

/// A route step's follow-up is stored with its step, and takes the sends
/// whose outcome its `on` lists: no address, opted out, other failures (not
/// a cap), or delivered with no `read` receipt.
pub async fn a_route_step_takes_the_sends_its_on_lists(store: S) {
    use crate::{FollowUp, ReceiptEvent, ReceiptOn};
    use herald_core::route::StepOn;
    let failed = |i, error: &str| SendEntry {
        error: Some(error.into()),
        ..send(i, SendState::Failed)
    };
    let entries = vec![
        send(0, SendState::Delivered),
        failed(1, "no_address"),
        failed(2, "opted_out"),
        failed(3, "HTTP 400"),
        failed(4, "capped"),
        send(5, SendState::Delivered),
        send(6, SendState::Retry),
    ];
    let step = FollowUp {
        after_ms: 0,
        message: "{}".into(),
        step: Some(1),
    };
    let job = job_with(&store, "wecom", 7, entries, Some(step)).await;
    // (6 is still retrying: no step's.)
    let f = store.get_follow_up(job.id).await.unwrap().unwrap();
    assert_eq!(f.step, Some(1));
    store
        .record_receipt(
            ReceiptOn::JobSend {
                job_id: job.id,
                idx: 5,
            },
            ReceiptEvent::Read,
            T0,
        )
        .await
        .unwrap();
    let taken = |on: Vec<StepOn>| {
        let store = &store;
        async move {
            let got = store.step_sends(job.id, 0, 100, &on).await.unwrap();
            got.into_iter().map(|(i, _)| i).collect::<Vec<u64>>()
        }
    };
    assert_eq!(taken(vec![StepOn::NoAddress]).await, [1]);
    assert_eq!(taken(vec![StepOn::OptedOut, StepOn::Failed]).await, [2, 3]);
    assert_eq!(taken(vec![StepOn::Unread]).await, [0]);
    assert_eq!(
        taken(StepOn::ALL.to_vec()).await,
        [0, 1, 2, 3],
        "never a capped, read or unfinished send"
    );
    let page = store.step_sends(job.id, 2, 1, &StepOn::ALL).await.unwrap();
    assert_eq!(page, [(2, recipient(2))], "from, limit");
}

pub async fn a_jobs_messages_are_listed_and_recalled_once(store: S) {
    let job = job_with_sends(
        &store,
        "wecom",
        3,
        vec![
            send(0, SendState::Delivered),
            send(1, SendState::Delivered),
            send(2, SendState::Retry),
        ],
    )
    .await;
    // Another job holding the same message id is another campaign.
    let other = job_with_sends(&store, "wecom", 2, vec![send(1, SendState::Delivered)]).await;
    let msgs = store.job_messages(job.id, 10).await.unwrap();
    let ids: Vec<(&str, u64, u64)> = msgs
        .iter()
        .map(|m| (m.msgid.as_str(), m.sends, m.recalled))
        .collect();
    assert_eq!(
        ids,
        [("msg-0", 1, 0), ("msg-1", 1, 0)],
        "delivered sends only"
    );
    assert_eq!(
        store.job_messages(job.id, 1).await.unwrap().len(),
        2,
        "limit + 1"
    );
    assert_eq!(
        store
            .mark_job_message_recalled(job.id, "msg-1", T0 + 50)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .mark_job_message_recalled(job.id, "msg-1", T0 + 60)
            .await
            .unwrap(),
        0,
        "once"
    );
    let msgs = store.job_messages(job.id, 10).await.unwrap();
    assert_eq!((msgs[1].msgid.as_str(), msgs[1].recalled), ("msg-1", 1));
    let sends = store.job_sends(job.id, 0, 3).await.unwrap();
    assert_eq!(
        (sends[1].final_status.as_deref(), sends[1].final_at),
        (Some("recalled"), Some(T0 + 50))
    );
    let theirs = store.job_sends(other.id, 0, 2).await.unwrap();
    assert_eq!(theirs.len(), 1);
    assert_eq!(
        theirs[0].final_status, None,
        "the other job's send is untouched"
    );
    let j = store.get_job(job.id).await.unwrap().unwrap();
    assert_eq!(
        (j.totals.delivered, j.totals.retrying),
        (2, 1),
        "counters untouched"
    );
}

pub async fn final_status_reaches_both_send_logs_by_channel_and_msgid(store: S) {
    let wx = timer_on(&store, "wechat").await;
    let hook = timer_on(&store, "webhook").await;
    let row = attempt(&store, &wx, 1, CompletionOutcome::Done, Some("m-1")).await;
    assert_eq!((row.final_status.as_deref(), row.final_at), (None, None));
    // The same message id on another channel is another message.
    attempt(&store, &hook, 1, CompletionOutcome::Done, Some("m-1")).await;
    let wx_job = job_with_sends(
        &store,
        "wechat",
        4,
        vec![
            send(0, SendState::Delivered),
            send(1, SendState::Delivered),
            send(2, SendState::Retry),
        ],
    )
    .await;
    // The fixture ids are msg-{index}: the same ids on another channel's job.
    let log_job = job_with_sends(&store, "log", 2, vec![send(1, SendState::Delivered)]).await;

    assert_eq!(
        store
            .record_final_status("wechat", "m-1", "success", T0 + 100)
            .await
            .unwrap(),
        1
    );
    let got = store.deliveries_for(wx.id).await.unwrap();
    assert_eq!(got[0].final_status.as_deref(), Some("success"));
    assert_eq!(got[0].final_at, Some(T0 + 100));
    let other = store.deliveries_for(hook.id).await.unwrap();
    assert_eq!(
        (other[0].final_status.as_deref(), other[0].final_at),
        (None, None)
    );

    assert_eq!(
        store
            .record_final_status("wechat", "msg-1", "user_block", T0 + 200)
            .await
            .unwrap(),
        1
    );
    let sends = store.job_sends(wx_job.id, 0, 4).await.unwrap();
    let finals: Vec<_> = sends
        .iter()
        .map(|s| (s.index, s.final_status.as_deref(), s.final_at))
        .collect();
    assert_eq!(
        finals,
        vec![
            (0, None, None),
            (1, Some("user_block"), Some(T0 + 200)),
            (2, None, None)
        ]
    );
    // The send's own state and counters are untouched.
    assert_eq!(sends[1].state, SendState::Delivered);
    let untouched = store.job_sends(log_job.id, 0, 2).await.unwrap();
    assert_eq!(
        (untouched[0].final_status.as_deref(), untouched[0].final_at),
        (None, None)
    );
    let j = store.get_job(wx_job.id).await.unwrap().unwrap();
    assert_eq!((j.totals.delivered, j.totals.retrying), (2, 1));

    // Unknown ids, and ids of the wrong channel, change nothing.
    for (channel, msgid) in [("wechat", "nope"), ("wecom", "m-1"), ("wecom", "msg-0")] {
        assert_eq!(
            store
                .record_final_status(channel, msgid, "success", T0 + 300)
                .await
                .unwrap(),
            0,
            "{channel} {msgid}"
        );
    }
    // One callback for an id both logs hold (a timer and a job on one
    // channel) sets both rows.
    let both = timer_on(&store, "log").await;
    attempt(&store, &both, 1, CompletionOutcome::Done, Some("msg-1")).await;
    assert_eq!(
        store
            .record_final_status("log", "msg-1", "system_failed", T0 + 400)
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store.deliveries_for(both.id).await.unwrap()[0]
            .final_status
            .as_deref(),
        Some("system_failed")
    );
    assert_eq!(
        store.job_sends(log_job.id, 1, 2).await.unwrap()[0]
            .final_status
            .as_deref(),
        Some("system_failed")
    );
}

pub async fn a_repeated_callback_keeps_its_first_time_and_recalled_stays_recalled(store: S) {
    let t = timer_on(&store, "wechat").await;
    let row = attempt(&store, &t, 1, CompletionOutcome::Done, Some("m-9")).await;
    let set = |status: &'static str, at: i64| {
        let store = store.clone();
        async move {
            store
                .record_final_status("wechat", "m-9", status, at)
                .await
                .unwrap()
        }
    };
    assert_eq!(set("success", T0 + 10).await, 1);
    // The provider re-sends a callback it thinks was lost.
    assert_eq!(set("success", T0 + 20).await, 1);
    let got = store.get_delivery(row.id).await.unwrap().unwrap();
    assert_eq!(
        (got.final_status.as_deref(), got.final_at),
        (Some("success"), Some(T0 + 10))
    );
    // A different report replaces it, with its own time.
    assert_eq!(set("system_failed", T0 + 30).await, 1);
    let got = store.get_delivery(row.id).await.unwrap().unwrap();
    assert_eq!(
        (got.final_status.as_deref(), got.final_at),
        (Some("system_failed"), Some(T0 + 30))
    );
    // Recalled is final.
    assert!(store.mark_delivery_recalled(row.id, T0 + 40).await.unwrap());
    assert_eq!(set("success", T0 + 50).await, 0);
    let got = store.get_delivery(row.id).await.unwrap().unwrap();
    assert_eq!(
        (got.final_status.as_deref(), got.final_at),
        (Some(FINAL_RECALLED), Some(T0 + 40))
    );
}

pub async fn get_delivery_reads_one_send_log_row(store: S) {
    assert_eq!(store.get_delivery(1).await.unwrap(), None);
    let t = timer_on(&store, "wecom").await;
    attempt(
        &store,
        &t,
        1,
        CompletionOutcome::Retry {
            next_due_at: T0 + 60_000,
        },
        None,
    )
    .await;
    attempt(&store, &t, 2, CompletionOutcome::Done, Some("w-2")).await;
    let log = store.deliveries_for(t.id).await.unwrap();
    assert_eq!(log.len(), 2);
    for row in &log {
        assert_eq!(
            store.get_delivery(row.id).await.unwrap().as_ref(),
            Some(row)
        );
    }
    let last = log.iter().map(|r| r.id).max().unwrap_or(0);
    assert_eq!(store.get_delivery(last + 1_000).await.unwrap(), None);
}

pub async fn only_a_delivered_row_with_a_msgid_can_be_recalled(store: S) {
    let t = timer_on(&store, "wecom").await;
    let retry = attempt(
        &store,
        &t,
        1,
        CompletionOutcome::Retry {
            next_due_at: T0 + 60_000,
        },
        Some("w-1"),
    )
    .await;
    let done = attempt(&store, &t, 2, CompletionOutcome::Done, Some("w-2")).await;
    let quiet = timer_on(&store, "webhook").await;
    let no_msgid = attempt(&store, &quiet, 1, CompletionOutcome::Done, None).await;

    assert!(
        !store
            .mark_delivery_recalled(retry.id, T0 + 5)
            .await
            .unwrap()
    );
    assert!(
        !store
            .mark_delivery_recalled(no_msgid.id, T0 + 5)
            .await
            .unwrap()
    );
    assert!(
        !store
            .mark_delivery_recalled(done.id + 1_000, T0 + 5)
            .await
            .unwrap()
    );
    assert!(store.mark_delivery_recalled(done.id, T0 + 5).await.unwrap());
    // Only once.
    assert!(!store.mark_delivery_recalled(done.id, T0 + 6).await.unwrap());

    let got = store.get_delivery(done.id).await.unwrap().unwrap();
    assert_eq!(
        DeliveryRecord {
            final_status: None,
            final_at: None,
            ..got.clone()
        },
        done
    );
    assert_eq!(
        (got.final_status.as_deref(), got.final_at),
        (Some(FINAL_RECALLED), Some(T0 + 5))
    );
    for row in [&retry, &no_msgid] {
        let r = store.get_delivery(row.id).await.unwrap().unwrap();
        assert_eq!(&r, row);
    }
    // Recalling a delivery leaves its timer as it was.
    let timer = store.get_timer(t.id).await.unwrap().unwrap();
    assert_eq!(timer.state, herald_core::TimerState::Done);
}

/// A pause replaces the earlier one of its channel, shows expired or not, and
/// a resume removes it.
pub async fn channel_pauses_are_upserted_listed_and_resumed(store: S) {
    assert!(store.channel_pauses().await.unwrap().is_empty());
    assert!(!store.resume_channel("sms").await.unwrap());
    let open = ChannelPause {
        since: T0,
        until: None,
        reason: Some("provider incident".into()),
    };
    store.pause_channel("sms", &open, T0).await.unwrap();
    let timed = ChannelPause {
        since: T0 + 5,
        until: Some(T0 + 60_000),
        reason: None,
    };
    store.pause_channel("push", &timed, T0 + 5).await.unwrap();
    assert_eq!(
        store.channel_pauses().await.unwrap(),
        vec![
            ("push".to_string(), timed.clone()),
            ("sms".to_string(), open)
        ]
    );
    assert!(timed.holds_at(T0 + 59_999) && !timed.holds_at(T0 + 60_000));
    let again = ChannelPause {
        since: T0 + 10,
        until: Some(T0 + 1_000),
        reason: Some("again".into()),
    };
    store.pause_channel("sms", &again, T0 + 10).await.unwrap();
    assert!(store.resume_channel("push").await.unwrap());
    assert_eq!(
        store.channel_pauses().await.unwrap(),
        vec![("sms".to_string(), again)]
    );
}

/// A pause written through one handle is what the other reads: it is the
/// cluster's, not a node's.
pub async fn a_channel_pause_is_seen_through_another_handle(a: S, b: S) {
    let p = ChannelPause {
        since: T0,
        until: None,
        reason: None,
    };
    a.pause_channel("webhook", &p, T0).await.unwrap();
    assert_eq!(
        b.channel_pauses().await.unwrap(),
        vec![("webhook".to_string(), p)]
    );
    assert!(b.resume_channel("webhook").await.unwrap());
    assert!(a.channel_pauses().await.unwrap().is_empty());
}
