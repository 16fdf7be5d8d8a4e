//! Stores written by Herald before the store reshape (the binary built at
//! 38d87d4; see `fixtures/make-v0.sh`) open with this code, migrate forward,
//! read back exactly what was written, and take new writes afterwards.
//!
//! `fixtures/v0.sqlite` is the SQLite file; `fixtures/v0-postgres.sql` a
//! `pg_dump --inserts` of the PostgreSQL database the same script filled.
//!
//! Every old row belongs to the default tenant after the migration, and a
//! second tenant can reuse the old rows' natural keys (subject `coupon-42`,
//! user `alice`, idempotency key `k-pending`) without touching them.

use std::sync::Arc;

use herald_core::campaign::{JobState, RuleStatus, SegmentState, SendState, TaskState};
use herald_core::{DEFAULT_TENANT, Priority, TenantId, TimerKind, TimerState};
use herald_store::{
    AudienceRecord, CompletionOutcome, DeliveryRecord, JobRecord, JobSpec, JobTotals, LeaseCheck,
    MergeProbe, NewReminder, NewTimer, RuleRecord, RuleSpec, RuleVersion, SegmentRecord, SendEntry,
    SendRecord, ShardLease, Store, StoreOptions, SubjectRecord, TaskRecord, TaskStart, TimerRecord,
    WriteOp, WriteResult,
};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// Where a backend's fixture differs: the times it was written at, and the
/// shards and worker names the old binary happened to pick.
struct Written {
    /// Timers 1..=7: `(shard, due_at, created_at, updated_at)`.
    timers: [(u16, i64, i64, i64); 7],
    subject_at: i64,
    /// Audiences 1 and 2.
    audiences_at: [i64; 2],
    /// Job 1: created, started, finished.
    job_at: [i64; 3],
    /// Segments 1..=3: `(owner, lease_until, updated_at)`; migration 0035
    /// sets an ended segment's `finished_at` to its `updated_at`.
    segments: [(&'static str, i64, i64); 3],
    /// `job_sends.updated_at` of indexes 0..5.
    sends_at: [i64; 5],
    rule_at: i64,
    task_at: i64,
}

const SQLITE: Written = Written {
    timers: [
        (83, 1795463017467, 1795463017467, 1795463017472),
        (230, 1795466617494, 1795463017494, 1795463017494),
        (126, 1893456000000, 1795463017516, 1795463017516),
        (128, 1795466617537, 1795463017537, 1795463017568),
        (176, 1906509300000, 1795463017605, 1795463017605),
        (176, 1906506000000, 1795463017625, 1795463017625),
        (229, 1906508700000, 1795463017646, 1795463017646),
    ],
    subject_at: 1795463017586,
    audiences_at: [1795463017663, 1795463017705],
    job_at: [1795463017681, 1795463017682, 1795463017713],
    segments: [
        ("fixture/w2", 1795463032685, 1795463017710),
        ("fixture/w3", 1795463032693, 1795463017713),
        ("fixture/w0", 1795463032697, 1795463017703),
    ],
    sends_at: [
        1795463017685,
        1795463017685,
        1795463017693,
        1795463017693,
        1795463017697,
    ],
    rule_at: 1795463017715,
    task_at: 1795463017719,
};

const POSTGRES: Written = Written {
    timers: [
        (83, 1795463025573, 1795463025573, 1795463025586),
        (230, 1795466625615, 1795463025615, 1795463025615),
        (39, 1893456000000, 1795463025639, 1795463025639),
        (69, 1795466625671, 1795463025671, 1795463025695),
        (176, 1906509300000, 1795463025742, 1795463025742),
        (176, 1906506000000, 1795463025789, 1795463025789),
        (229, 1906508700000, 1795463025824, 1795463025824),
    ],
    subject_at: 1795463025718,
    audiences_at: [1795463025850, 1795463025928],
    job_at: [1795463025890, 1795463025892, 1795463025928],
    segments: [
        ("fixture/w3", 1795463040916, 1795463025921),
        ("fixture/w1", 1795463040903, 1795463025928),
        ("fixture/w0", 1795463040899, 1795463025925),
    ],
    sends_at: [
        1795463025916,
        1795463025916,
        1795463025903,
        1795463025903,
        1795463025899,
    ],
    rule_at: 1795463025931,
    task_at: 1795463025938,
};

/// What `make-v0.sh` asked for of a timer: priority, kind, state, recipient,
/// message, idempotency key, attempts.
type Asked = (
    Priority,
    TimerKind,
    TimerState,
    &'static str,
    String,
    Option<&'static str>,
    u32,
);

/// Timers 1..=7 as `make-v0.sh` wrote them.
fn v0_timers(w: &Written) -> Vec<TimerRecord> {
    let reminder = |channel_type: &str, lead: u32, user: &str| {
        format!(
            r#"{{"channel_type":"{channel_type}","lead_minutes":{lead},"subject_id":"coupon-42","user_id":"{user}"}}"#
        )
    };
    #[rustfmt::skip]
    let rest: [Asked; 7] = [
        (5, TimerKind::Timer, TimerState::Done, "r-done", r#"{"n":1}"#.into(), Some("k-done"), 1),
        (9, TimerKind::Timer, TimerState::Pending, "r-pending", r#"{"n":2}"#.into(), Some("k-pending"), 0),
        (5, TimerKind::Timer, TimerState::Pending, "r-later", r#"{"n":3}"#.into(), None, 0),
        (5, TimerKind::Timer, TimerState::Cancelled, "r-cancel", "{}".into(), None, 0),
        (5, TimerKind::Reminder, TimerState::Pending, "alice", reminder("app", 5, "alice"), None, 0),
        (5, TimerKind::Reminder, TimerState::Pending, "alice", reminder("email", 60, "alice"), None, 0),
        (5, TimerKind::Reminder, TimerState::Pending, "bob", reminder("wechat", 15, "bob"), None, 0),
    ];
    w.timers
        .iter()
        .zip(rest)
        .enumerate()
        .map(
            |(
                i,
                (
                    &(shard, due_at, created_at, updated_at),
                    (priority, kind, state, to, msg, key, n),
                ),
            )| {
                TimerRecord {
                    id: i as i64 + 1,
                    tenant: DEFAULT_TENANT,
                    shard,
                    due_at,
                    priority,
                    kind,
                    state,
                    channel: "log".into(),
                    recipient: to.into(),
                    message: msg,
                    idempotency_key: key.map(str::to_owned),
                    attempts: n,
                    last_error: None,
                    created_at,
                    updated_at,
                    delivered_at: (state == TimerState::Done).then_some(updated_at),
                    attempt_base: 0,
                    traceparent: None,
                    routing: None,
                }
            },
        )
        .collect()
}

/// Reads back every row `make-v0.sh` wrote.
async fn reads_back_v0(store: &dyn Store, w: &Written) {
    let timers = v0_timers(w);
    for t in &timers {
        assert_eq!(store.get_timer(t.id).await.unwrap().as_ref(), Some(t));
        // And through the search indexes, which a migration rebuilt
        // (`0042_search_filing` on SQLite): by recipient, by state.
        for f in [
            herald_store::TimerFilter {
                recipient: Some(t.recipient.clone()),
                ..Default::default()
            },
            herald_store::TimerFilter {
                state: Some(t.state),
                ..Default::default()
            },
        ] {
            let found = store
                .search_timers(DEFAULT_TENANT, &f, None, 100, herald_store::SortOrder::Asc)
                .await
                .unwrap();
            assert!(found.iter().any(|r| r == t), "{f:?}: {found:?}");
        }
    }
    let all = store
        .search_timers(
            DEFAULT_TENANT,
            &herald_store::TimerFilter::default(),
            None,
            100,
            herald_store::SortOrder::Asc,
        )
        .await
        .unwrap();
    assert_eq!(all.len(), timers.len());
    assert_eq!(
        store.count_by_tenant_state().await.unwrap(),
        vec![
            (DEFAULT_TENANT, TimerState::Pending, 5),
            (DEFAULT_TENANT, TimerState::Done, 1),
            (DEFAULT_TENANT, TimerState::Cancelled, 1)
        ]
    );
    assert_eq!(
        store.tenants().await.unwrap(),
        vec![(DEFAULT_TENANT, "default".to_string())]
    );
    assert_eq!(
        store.tenant_id("default", false).await.unwrap(),
        Some(DEFAULT_TENANT)
    );
    let done_at = w.timers[0].3;
    assert_eq!(
        store.deliveries_for(1).await.unwrap(),
        vec![DeliveryRecord {
            id: 1,
            timer_id: 1,
            tenant: DEFAULT_TENANT,
            attempt: 1,
            channel: "log".into(),
            outcome: "delivered".into(),
            idempotency_key: "k-done".into(),
            provider_msgid: None,
            status: None,
            error: None,
            started_at: done_at,
            finished_at: done_at,
            final_status: None,
            final_at: None,
            step: None,
        }]
    );
    assert_eq!(store.init_shards(8).await.unwrap(), 256);
    let leases = store.shard_leases().await.unwrap();
    assert_eq!(leases.len(), 256);
    assert!(leases.iter().enumerate().all(|(i, l)| *l
        == ShardLease {
            shard: i as u16,
            owner: None,
            lease_until: 0,
            epoch: 2,
            incarnation: 0,
        }));

    // The subject and its three reminders.
    assert_eq!(
        store
            .get_subjects(DEFAULT_TENANT, &["coupon-42".into()])
            .await
            .unwrap(),
        vec![SubjectRecord {
            tenant: DEFAULT_TENANT,
            subject_id: "coupon-42".into(),
            start_at: 1906509600000,
            title: Some("20 off".into()),
            data: Some(r#"{"shop":7}"#.into()),
            timing: Default::default(),
            templates: None,
            created_at: w.subject_at,
            updated_at: w.subject_at,
        }]
    );
    let alice = store
        .user_reminders(DEFAULT_TENANT, "alice", 10)
        .await
        .unwrap();
    let bits: Vec<(&str, u8, i64)> = alice
        .iter()
        .map(|r| (r.subject_id.as_str(), r.bit, r.timer.id))
        .collect();
    assert_eq!(bits, vec![("coupon-42", 0, 5), ("coupon-42", 23, 6)]);
    assert_eq!(alice[0].timer, timers[4]);
    let bob = store
        .user_reminders(DEFAULT_TENANT, "bob", 10)
        .await
        .unwrap();
    assert_eq!(bob.len(), 1);
    assert_eq!((bob[0].bit, &bob[0].timer), (38, &timers[6]));
    let probe = MergeProbe {
        tenant: DEFAULT_TENANT,
        user_id: "alice".into(),
        channel: "log".into(),
        from: 0,
        until: i64::MAX,
    };
    assert_eq!(
        store.pending_reminders(&[probe]).await.unwrap(),
        vec![timers[5].clone(), timers[4].clone()]
    );

    // The audiences: the uploaded one and the rule's.
    let [a1, a2] = w.audiences_at;
    assert_eq!(
        store.get_audience(1).await.unwrap(),
        Some(AudienceRecord {
            id: 1,
            tenant: DEFAULT_TENANT,
            name: Some("five".into()),
            size: Some(5),
            created_at: a1,
        })
    );
    assert_eq!(
        store.audience_slice(1, 0, 10).await.unwrap(),
        ["u1", "u2", "u3", "u4", "u5"]
    );
    assert_eq!(
        store.get_audience(2).await.unwrap(),
        Some(AudienceRecord {
            id: 2,
            tenant: DEFAULT_TENANT,
            name: Some(r#"users of rule "weekday nine""#.into()),
            size: Some(2),
            created_at: a2,
        })
    );
    assert_eq!(store.audience_slice(2, 0, 10).await.unwrap(), ["u1", "u2"]);

    // The job, done, with its three segments and five sends.
    let [created, started, finished] = w.job_at;
    let job = JobRecord {
        id: 1,
        tenant: DEFAULT_TENANT,
        audience_id: 1,
        channel: "log".into(),
        message: r#"{"t":"hello"}"#.into(),
        segment_size: 2,
        deadline_at: None,
        priority: 5,
        task_id: None,
        state: JobState::Done,
        totals: JobTotals {
            total: 5,
            delivered: 5,
            ..Default::default()
        },
        created_at: created,
        started_at: Some(started),
        finished_at: Some(finished),
        routing: None,
        traceparent: None,
        meta: Default::default(),
        follows: None,
        // Migration 0039 takes the last change of a segment that moved its
        // cursor: here the last segment's end.
        last_sent_at: w.segments.iter().map(|s| s.2).max(),
    };
    assert_eq!(store.get_job(1).await.unwrap().as_ref(), Some(&job));
    assert_eq!(
        store.list_jobs(DEFAULT_TENANT, None, 10).await.unwrap(),
        vec![job]
    );
    let segments: Vec<SegmentRecord> = [(0, 2), (2, 4), (4, 5)]
        .iter()
        .zip(w.segments)
        .enumerate()
        .map(
            |(i, (&(start, end), (owner, lease_until, ended)))| SegmentRecord {
                id: i as i64 + 1,
                job_id: 1,
                start,
                end,
                cursor: end,
                state: SegmentState::Done,
                owner: Some(owner.into()),
                lease_until: Some(lease_until),
                epoch: 1,
                parent_id: None,
                attempt: 1,
                not_before: created,
                created_at: created,
                sent_to: 0,
                doubt_from: 0,
                doubt_to: 0,
                finished_at: Some(ended),
            },
        )
        .collect();
    assert_eq!(store.job_segments(1, None, 10).await.unwrap(), segments);
    assert_eq!(
        store.segment_counts(1).await.unwrap(),
        vec![(SegmentState::Done, 3)]
    );
    let sends: Vec<SendRecord> = w
        .sends_at
        .iter()
        .enumerate()
        .map(|(i, &at)| SendRecord {
            job_id: 1,
            index: i as u64,
            recipient: format!("u{}", i + 1),
            state: SendState::Delivered,
            attempts: 1,
            provider_msgid: None,
            error: None,
            updated_at: at,
            final_status: None,
            final_at: None,
        })
        .collect();
    assert_eq!(store.job_sends(1, 0, 10).await.unwrap(), sends);

    // The cron rule, its version and its one planned task.
    let version = RuleVersion {
        rule_id: 1,
        version: 1,
        spec: RuleSpec {
            tenant: DEFAULT_TENANT,
            name: "weekday nine".into(),
            schedule: r#"{"type":"cron","cron":"0 9 * * 1-5","timezone":"Asia/Shanghai","start_at":"2030-01-01T00:00:00Z"}"#.into(),
            audience: r#"{"users":["u1","u2"]}"#.into(),
            audience_id: Some(2),
            channel: "log".into(),
            message: r#"{"t":"morning"}"#.into(),
            deadline_secs: None,
            priority: 5,
            routing: None,
            follow_up: None,
        },
        created_at: w.rule_at,
    };
    let rule = RuleRecord {
        id: 1,
        tenant: DEFAULT_TENANT,
        status: RuleStatus::Enabled,
        created_at: w.rule_at,
        updated_at: w.rule_at,
        // Who made a rule is not known from before migration 0036.
        created_by: None,
        changed_by: None,
        current: version.clone(),
    };
    assert_eq!(store.get_rule(1).await.unwrap().as_ref(), Some(&rule));
    assert_eq!(
        store.list_rules(DEFAULT_TENANT, None, 10).await.unwrap(),
        vec![rule]
    );
    assert_eq!(
        store.rule_versions(1, None, 10).await.unwrap(),
        vec![version]
    );
    let task = TaskRecord {
        id: 1,
        tenant: DEFAULT_TENANT,
        rule_id: 1,
        version: 1,
        planned_at: 1893459600000,
        state: TaskState::Pending,
        job_id: None,
        recipients: None,
        detail: None,
        created_at: w.task_at,
        started_at: None,
        finished_at: None,
        created_by: None,
        changed_by: None,
    };
    assert_eq!(store.get_task(1).await.unwrap().as_ref(), Some(&task));
    assert_eq!(store.rule_tasks(1, 10).await.unwrap(), vec![task.clone()]);
    assert_eq!(
        store.due_tasks(1893459600000, 10).await.unwrap(),
        vec![task]
    );
}

/// New timers, reminders, jobs and tasks go in after the old rows, under new ids.
async fn writes_after_v0(store: &dyn Store) {
    const NOW: i64 = 1_900_000_000_000;
    let new = |key: Option<&str>| NewTimer {
        tenant: DEFAULT_TENANT,
        shard: 7,
        due_at: NOW + 60_000,
        priority: 5,
        kind: TimerKind::Timer,
        channel: "log".into(),
        recipient: "r-new".into(),
        message: "{}".into(),
        idempotency_key: key.map(str::to_owned),
        created_at: NOW,
        traceparent: None,
        routing: None,
    };
    let r = store
        .apply(vec![
            WriteOp::InsertTimer(new(None)),
            WriteOp::InsertTimer(new(Some("k-pending"))),
            WriteOp::CancelTimer {
                tenant: DEFAULT_TENANT,
                id: 2,
                at: NOW,
            },
            WriteOp::AddReminder(NewReminder {
                user_id: "carol".into(),
                subject_id: "coupon-42".into(),
                bit: 1,
                lead_ms: 600_000,
                timer: NewTimer {
                    kind: TimerKind::Reminder,
                    recipient: "carol".into(),
                    ..new(None)
                },
                not_before: NOW,
                grant: None,
            }),
        ])
        .await
        .unwrap();
    let WriteResult::Created(t) = &r[0] else {
        panic!("{:?}", r[0])
    };
    assert_eq!(t.id, 8, "ids continue after the old timers");
    assert!(matches!(&r[1], WriteResult::Existing(t) if t.id == 2));
    assert!(matches!(&r[2], WriteResult::Cancelled(t) if t.id == 2));
    let WriteResult::Created(reminder) = &r[3] else {
        panic!("{:?}", r[3])
    };
    assert_eq!(reminder.due_at, 1906509600000 - 600_000);
    assert_eq!(
        store
            .user_reminders(DEFAULT_TENANT, "carol", 10)
            .await
            .unwrap()
            .len(),
        1
    );
    let old = store.get_timer(3).await.unwrap().unwrap();
    let done = herald_store::Completion {
        timer_id: 3,
        tenant: DEFAULT_TENANT,
        attempt: 1,
        outcome: CompletionOutcome::Done,
        channel: "log".into(),
        idempotency_key: old.delivery_key(),
        provider_msgid: None,
        status: None,
        error: None,
        started_at: NOW,
        finished_at: NOW,
        fence: None,
        step: None,
        next: None,
    };
    assert_eq!(
        store.complete(vec![done]).await.unwrap(),
        vec![herald_store::Applied::Yes]
    );
    assert_eq!(store.deliveries_for(3).await.unwrap()[0].id, 2);

    // A new audience and job beside the old ones, claimed and finished.
    let audience = store
        .create_audience(DEFAULT_TENANT, Some("new".into()), NOW)
        .await
        .unwrap();
    assert_eq!(audience, 3);
    store
        .append_audience(audience, 0, &["x1".into(), "x2".into()])
        .await
        .unwrap();
    store
        .seal_audience(audience, 2, NOW)
        .await
        .unwrap()
        .unwrap();
    let job = store
        .create_job(
            JobSpec {
                tenant: DEFAULT_TENANT,
                audience_id: audience,
                channel: "log".into(),
                message: "{}".into(),
                segment_size: 10,
                deadline_at: None,
                priority: 0,
                follow_up: None,
                follows: None,
                resends: None,
                task_id: None,
                routing: None,
                traceparent: None,
                meta: Default::default(),
            },
            NOW,
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(job.id, 2);
    let claimed = store
        .claim_segment("w", NOW, 60_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((claimed.segment.id, claimed.job.id), (4, 2));
    let sent = ["x1", "x2"]
        .iter()
        .enumerate()
        .map(|(i, r)| SendEntry {
            index: i as u64,
            recipient: (*r).into(),
            state: SendState::Delivered,
            provider_msgid: None,
            error: None,
        })
        .collect();
    assert!(matches!(
        store
            .record_sends(&claimed.claim, 2, sent, NOW, 60_000)
            .await
            .unwrap(),
        LeaseCheck::Held { .. }
    ));
    store.finish_segment(&claimed.claim, NOW).await.unwrap();
    assert_eq!(
        store.get_job(2).await.unwrap().unwrap().state,
        JobState::Done
    );

    // The old rule's task runs over its old audience.
    let TaskStart::Started { job } = store.start_task(1, NOW, 10).await.unwrap() else {
        panic!("task 1 did not start")
    };
    assert_eq!((job.id, job.audience_id, job.totals.total), (3, 2, 2));
    let planned = store
        .plan_task(1, 1, 1893546000000, NOW)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(planned.id, 2);
    assert_eq!(planned.tenant, DEFAULT_TENANT);

    second_tenant_reuses_the_old_keys(store, &new).await;
}

/// A new tenant takes the old rows' natural keys for its own: subject
/// `coupon-42`, user `alice`, idempotency key `k-pending`. The default
/// tenant's rows are untouched, and each tenant sees only its own.
async fn second_tenant_reuses_the_old_keys(
    store: &dyn Store,
    new: &dyn Fn(Option<&str>) -> NewTimer,
) {
    const NOW: i64 = 1_900_000_000_000;
    let shop = store.tenant_id("shop", true).await.unwrap().unwrap();
    assert_eq!(shop, TenantId(2));
    assert_eq!(store.tenant_id("shop", true).await.unwrap(), Some(shop));
    let mine = |t: NewTimer| NewTimer { tenant: shop, ..t };
    let r = store
        .apply(vec![
            WriteOp::InsertTimer(mine(new(Some("k-pending")))),
            WriteOp::PutSubject(herald_store::PutSubject {
                tenant: shop,
                subject_id: "coupon-42".into(),
                start_at: 1906509600000 + 3_600_000,
                title: Some("shop's own".into()),
                data: None,
                timing: Default::default(),
                templates: None,
                at: NOW,
            }),
            WriteOp::AddReminder(NewReminder {
                user_id: "alice".into(),
                subject_id: "coupon-42".into(),
                bit: 0,
                lead_ms: 300_000,
                timer: NewTimer {
                    kind: TimerKind::Reminder,
                    recipient: "alice".into(),
                    ..mine(new(None))
                },
                not_before: NOW,
                grant: None,
            }),
            // The default tenant's key is still its own.
            WriteOp::InsertTimer(new(Some("k-pending"))),
        ])
        .await
        .unwrap();
    let WriteResult::Created(keyed) = &r[0] else {
        panic!("{:?}", r[0])
    };
    assert_eq!(
        (keyed.tenant, keyed.idempotency_key.as_deref()),
        (shop, Some("k-pending"))
    );
    assert!(matches!(
        &r[1],
        WriteResult::SubjectPut { created: true, .. }
    ));
    let WriteResult::Created(reminder) = &r[2] else {
        panic!("{:?}", r[2])
    };
    assert_eq!(reminder.due_at, 1906509600000 + 3_600_000 - 300_000);
    assert!(matches!(&r[3], WriteResult::Existing(t) if t.id == 2 && t.tenant == DEFAULT_TENANT));

    let subjects = |t| async move { store.get_subjects(t, &["coupon-42".into()]).await.unwrap() };
    assert_eq!(subjects(shop).await[0].title.as_deref(), Some("shop's own"));
    assert_eq!(
        subjects(DEFAULT_TENANT).await[0].title.as_deref(),
        Some("20 off")
    );
    let alice = |t| async move { store.user_reminders(t, "alice", 10).await.unwrap() };
    let shop_alice = alice(shop).await;
    assert_eq!(shop_alice.len(), 1);
    assert_eq!(shop_alice[0].timer.id, reminder.id);
    let old_alice: Vec<i64> = alice(DEFAULT_TENANT)
        .await
        .iter()
        .map(|r| r.timer.id)
        .collect();
    assert_eq!(old_alice, vec![5, 6]);
    // The default tenant cannot cancel the shop's timer, nor delete its subject.
    let r = store
        .apply(vec![
            WriteOp::CancelTimer {
                tenant: DEFAULT_TENANT,
                id: keyed.id,
                at: NOW,
            },
            WriteOp::CancelTimer {
                tenant: shop,
                id: 1,
                at: NOW,
            },
        ])
        .await
        .unwrap();
    assert_eq!(r, vec![WriteResult::NotFound, WriteResult::NotFound]);
    let counts = store.count_by_tenant_state().await.unwrap();
    assert_eq!(
        counts.iter().filter(|c| c.0 == shop).collect::<Vec<_>>(),
        vec![&(shop, TimerState::Pending, 2)]
    );
    assert_eq!(
        store.tenants().await.unwrap(),
        vec![(DEFAULT_TENANT, "default".into()), (shop, "shop".into())]
    );
}

/// Every migration, in order: the schema version of each is its place here.
pub(crate) const MIGRATIONS: &[&str] = &[
    "0001_timers",
    "0002_cluster",
    "0003_reminders",
    "0004_campaign",
    "0005_provider",
    "0006_segment_cursor_idx",
    "0007_tenants",
    "0008_incarnation",
    "0009_timer_search",
    "0010_channel_pauses",
    "0011_job_sends_failed",
    "0012_subject_counts",
    "0013_subscribers",
    "0014_reminder_leads",
    "0015_timer_routing",
    "0016_receipts",
    "0017_campaign_routing",
    "0018_retention",
    "0019_partitions",
    "0020_timer_counts",
    "0021_reports",
    "0022_timer_counts_batched",
    "0023_report_stripes",
    "0024_tenant_due",
    "0025_pending_shard_key",
    "0026_send_in_doubt",
    "0027_timer_in_doubt",
    "0028_audit_tallies",
    "0029_job_traceparent",
    "0030_templates",
    "0031_subject_timing",
    "0032_cap_counters",
    "0033_fallback_routes",
    "0034_job_labels",
    "0035_segment_finished",
    "0036_actors",
    "0037_cap_counter_expiry",
    "0038_subject_templates",
    "0039_resend_unread",
    "0040_calendars",
    "0041_grants",
    "0042_search_filing",
    "0043_unfiled_done",
    "0044_finished_early",
];

/// The schema version a fully migrated store records.
pub(crate) const LATEST: i32 = MIGRATIONS.len() as i32;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v0_sqlite_store_opens_migrates_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("herald.db");
    std::fs::copy(format!("{FIXTURES}/v0.sqlite"), &path).unwrap();
    let url = format!("sqlite://{}", path.display());
    let store = herald_store::open(&url, &StoreOptions::default())
        .await
        .expect("open the v0 store");
    reads_back_v0(&*store, &SQLITE).await;
    writes_after_v0(&*store).await;
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, i64::from(LATEST));
    drop(conn);
    // Opening again applies nothing and still reads the old rows.
    let store = herald_store::open(&url, &StoreOptions::default())
        .await
        .unwrap();
    assert_eq!(
        store.get_timer(1).await.unwrap().as_ref(),
        Some(&v0_timers(&SQLITE)[0])
    );
}

/// The dump's text without psql's own commands (`\restrict`), which the
/// server would not understand.
fn v0_dump() -> String {
    std::fs::read_to_string(format!("{FIXTURES}/v0-postgres.sql"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('\\'))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v0_postgres_store_opens_migrates_and_reads_back() {
    let Some(pg) = herald_pgtemp::PgTemp::shared().expect("start the throwaway cluster") else {
        return;
    };
    let db = pg.fresh_database("v0").expect("create database");
    {
        // Its own session: the dump empties `search_path` for the session.
        let (client, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        let driver = tokio::spawn(conn);
        client.batch_execute(&v0_dump()).await.expect("restore");
        drop(client);
        let _ = driver.await;
    }
    let store: Arc<dyn Store> = herald_store::open(db.url(), &StoreOptions::default())
        .await
        .expect("open the v0 store");
    reads_back_v0(&*store, &POSTGRES).await;
    writes_after_v0(&*store).await;
    let (client, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let versions: Vec<(i32, String)> = client
        .query(
            "SELECT version, name FROM herald_migrations ORDER BY version",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let names: Vec<(i32, &str)> = versions.iter().map(|(v, n)| (*v, n.as_str())).collect();
    let expected: Vec<(i32, &str)> = (1..).zip(MIGRATIONS.iter().copied()).collect();
    assert_eq!(names, expected);
}
