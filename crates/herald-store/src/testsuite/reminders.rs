//! Subjects and reminder subscriptions: the bits of the subscription word, the
//! reminder timers they own, moving and deleting subjects, merge probes.

use std::collections::{HashMap, HashSet};

use herald_core::reminder::{ChannelType, Slot};
use herald_core::{TimerKind, TimerState};

use super::fixtures::*;
use super::support::*;
use crate::{
    CompletionOutcome, DueEntry, MergeProbe, NewReminder, NewTimer, PutSubject, SubjectRecord,
    TimerRecord, WriteOp, WriteResult,
};

/// Start of the subjects in these cases: far from the epoch, so no reminder
/// is too late unless a case says so.
const START: i64 = 100_000_000;
const MIN: i64 = 60_000;

async fn apply_one(store: &S, op: WriteOp) -> WriteResult {
    let mut r = store.apply(vec![op]).await.expect("apply");
    assert_eq!(r.len(), 1);
    r.remove(0)
}

async fn put(store: &S, p: PutSubject) -> (SubjectRecord, bool, Vec<DueEntry>) {
    match apply_one(store, WriteOp::PutSubject(p)).await {
        WriteResult::SubjectPut {
            subject,
            created,
            moved,
        } => (subject, created, moved),
        other => panic!("expected SubjectPut, got {other:?}"),
    }
}

async fn add(store: &S, r: NewReminder) -> WriteResult {
    apply_one(store, WriteOp::AddReminder(r)).await
}

async fn add_created(store: &S, r: NewReminder) -> TimerRecord {
    created(&add(store, r).await)
}

async fn cancel_bits(store: &S, user: &str, subject: &str, mask: u64, at: i64) -> WriteResult {
    apply_one(
        store,
        WriteOp::CancelReminders {
            tenant: DEFAULT_TENANT,
            user_id: user.into(),
            subject_id: subject.into(),
            mask,
            at,
        },
    )
    .await
}

async fn subjects(store: &S, ids: &[&str]) -> Vec<SubjectRecord> {
    let ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    let mut got = store
        .get_subjects(DEFAULT_TENANT, &ids)
        .await
        .expect("get_subjects");
    got.sort_by(|a, b| a.subject_id.cmp(&b.subject_id));
    got
}

/// (subject, bit, timer id) of a user's reminders, in the store's order.
async fn subscriptions(store: &S, user: &str) -> Vec<(String, u8, i64)> {
    store
        .user_reminders(DEFAULT_TENANT, user, 1_000)
        .await
        .expect("user_reminders")
        .into_iter()
        .map(|r| (r.subject_id, r.bit, r.timer.id))
        .collect()
}

fn bit(ct: ChannelType, lead: i64) -> u8 {
    Slot::new(ct, lead).expect("slot").bit()
}

fn due_entry(t: &TimerRecord, due_at: i64) -> DueEntry {
    DueEntry {
        tenant: t.tenant,
        id: t.id,
        due_at,
        shard: t.shard,
        priority: t.priority,
    }
}

pub async fn put_subject_creates_then_updates(store: S) {
    let first = subject("coupon-1", START);
    let (rec, created, moved) = put(&store, first.clone()).await;
    let expected = SubjectRecord {
        tenant: DEFAULT_TENANT,
        subject_id: "coupon-1".into(),
        start_at: START,
        title: first.title.clone(),
        data: first.data.clone(),
        timing: Default::default(),
        templates: None,
        created_at: 1_000,
        updated_at: 1_000,
    };
    assert!(created);
    assert!(moved.is_empty());
    assert_eq!(rec, expected);
    assert_eq!(
        subjects(&store, &["coupon-1"]).await,
        vec![expected.clone()]
    );
    // Same start, new title, data cleared: an update that moves nothing.
    let (rec, created, moved) = put(
        &store,
        PutSubject {
            title: Some("renamed ✓ 'q'".into()),
            data: None,
            at: 5_000,
            ..first.clone()
        },
    )
    .await;
    let updated = SubjectRecord {
        tenant: DEFAULT_TENANT,
        title: Some("renamed ✓ 'q'".into()),
        data: None,
        updated_at: 5_000,
        ..expected.clone()
    };
    assert!(!created);
    assert!(moved.is_empty());
    assert_eq!(rec, updated);
    assert_eq!(subjects(&store, &["coupon-1"]).await, vec![updated.clone()]);
    // A new start with no reminders moves nothing either.
    let (rec, created, moved) = put(
        &store,
        PutSubject {
            start_at: START + 7,
            at: 6_000,
            ..first.clone()
        },
    )
    .await;
    assert!(!created && moved.is_empty());
    assert_eq!(
        (rec.start_at, rec.created_at, rec.updated_at),
        (START + 7, 1_000, 6_000)
    );
    assert_eq!(rec.title, first.title);
}

pub async fn get_subjects_returns_those_that_exist(store: S) {
    assert!(
        store
            .get_subjects(DEFAULT_TENANT, &[])
            .await
            .unwrap()
            .is_empty()
    );
    assert!(subjects(&store, &["nope"]).await.is_empty());
    put(&store, subject("a", START)).await;
    put(&store, subject("b", START + 1)).await;
    put(&store, subject("c", START + 2)).await;
    let got = subjects(&store, &["c", "missing", "a", "c"]).await;
    let ids: Vec<&str> = got.iter().map(|s| s.subject_id.as_str()).collect();
    assert_eq!(ids, ["a", "c"]);
    assert_eq!(got[1].start_at, START + 2);
}

pub async fn add_reminder_creates_a_timer_before_the_start(store: S) {
    put(&store, subject("s", START)).await;
    let r = reminder("alice", "s", 15);
    let rec = add_created(&store, r.clone()).await;
    let expected = NewTimer {
        tenant: DEFAULT_TENANT,
        due_at: START - 15 * MIN,
        ..r.timer.clone()
    }
    .into_record(rec.id);
    assert_eq!(rec, expected);
    assert_eq!(rec.kind, TimerKind::Reminder);
    assert_eq!(get(&store, rec.id).await, expected);
    assert_eq!(ids(&all_due(&store, i64::MAX).await), vec![rec.id]);
    assert_eq!(
        subscriptions(&store, "alice").await,
        vec![("s".to_string(), bit(ChannelType::App, 15), rec.id)]
    );
    let listed = store
        .user_reminders(DEFAULT_TENANT, "alice", 10)
        .await
        .unwrap();
    assert_eq!(listed[0].timer, expected);
}

pub async fn adding_a_set_bit_is_reminder_exists(store: S) {
    put(&store, subject("s", START)).await;
    let a = add_created(&store, reminder("u", "s", 10)).await;
    let mask10 = slot_mask(ChannelType::App, 10);
    assert_eq!(
        add(&store, reminder("u", "s", 10)).await,
        WriteResult::ReminderExists { bits: mask10 }
    );
    let b = add_created(&store, reminder_on("u", "s", ChannelType::Email, 60)).await;
    let both = mask10 | slot_mask(ChannelType::Email, 60);
    // Another lead on the same type is another bit; the same bit again is not.
    assert_eq!(
        add(&store, reminder_on("u", "s", ChannelType::Email, 60)).await,
        WriteResult::ReminderExists { bits: both }
    );
    // Other users and other subjects are independent.
    put(&store, subject("t", START)).await;
    let c = add_created(&store, reminder("u", "t", 10)).await;
    let d = add_created(&store, reminder("v", "s", 10)).await;
    // Nothing was written for the refused ones.
    assert_eq!(
        counts(&store).await,
        HashMap::from([(TimerState::Pending, 4)])
    );
    let mut all = ids(&all_due(&store, i64::MAX).await);
    all.sort_unstable();
    assert_eq!(all, vec![a.id, b.id, c.id, d.id]);
}

pub async fn add_reminder_without_subject_is_subject_not_found(store: S) {
    assert_eq!(
        add(&store, reminder("u", "ghost", 5)).await,
        WriteResult::SubjectNotFound
    );
    assert!(counts(&store).await.is_empty());
    assert!(subscriptions(&store, "u").await.is_empty());
    assert_eq!(
        cancel_bits(&store, "u", "ghost", u64::MAX, 1).await,
        WriteResult::NotFound
    );
}

pub async fn add_reminder_too_late(store: S) {
    put(&store, subject("s", START)).await;
    let fire_at = START - 30 * MIN;
    // Firing exactly at not_before is refused; so is firing before it.
    for not_before in [fire_at, fire_at + 1, START + 1] {
        let mut r = reminder("u", "s", 30);
        r.not_before = not_before;
        assert_eq!(
            add(&store, r).await,
            WriteResult::TooLate {
                fire_at,
                start_at: START
            }
        );
    }
    assert!(counts(&store).await.is_empty());
    assert!(subscriptions(&store, "u").await.is_empty());
    assert_eq!(
        cancel_bits(&store, "u", "s", u64::MAX, 1).await,
        WriteResult::NotFound
    );
    // One millisecond later is fine.
    let mut r = reminder("u", "s", 30);
    r.not_before = fire_at - 1;
    let rec = add_created(&store, r).await;
    assert_eq!(rec.due_at, fire_at);
    // The bit test comes first: a set bit is ReminderExists even when late.
    let mut r = reminder("u", "s", 30);
    r.not_before = START;
    assert_eq!(
        add(&store, r).await,
        WriteResult::ReminderExists {
            bits: slot_mask(ChannelType::App, 30)
        }
    );
}

pub async fn keyed_reminder_timers_honour_their_key(store: S) {
    put(&store, subject("s", START)).await;
    let plain = insert_one(&store, keyed(500, "taken")).await;
    let mut r = reminder("u", "s", 5);
    r.timer.idempotency_key = Some("taken".into());
    // The key belongs to another timer: that timer, and nothing written.
    assert_eq!(add(&store, r).await, WriteResult::Existing(plain.clone()));
    assert!(subscriptions(&store, "u").await.is_empty());
    assert_eq!(
        cancel_bits(&store, "u", "s", u64::MAX, 1).await,
        WriteResult::NotFound
    );
    let mut r = reminder("u", "s", 5);
    r.timer.idempotency_key = Some("fresh".into());
    let rec = add_created(&store, r).await;
    assert_eq!(rec.idempotency_key.as_deref(), Some("fresh"));
    assert_eq!(subscriptions(&store, "u").await.len(), 1);
}

pub async fn moving_a_subject_moves_only_its_pending_timers(store: S) {
    put(&store, subject("s", START)).await;
    put(&store, subject("other", START)).await;
    let a = add_created(&store, reminder("a", "s", 5)).await;
    let b = add_created(&store, reminder("b", "s", 10)).await;
    let c = add_created(&store, reminder("c", "s", 20)).await;
    let d = add_created(&store, reminder("d", "s", 25)).await;
    let elsewhere = add_created(&store, reminder("a", "other", 5)).await;
    let plain = insert_one(&store, timer(START)).await;
    // a was delivered, b is waiting for a retry, c is pending, d was cancelled.
    store
        .complete(vec![
            completion(&a, 1, CompletionOutcome::Done, 10),
            completion(
                &b,
                1,
                CompletionOutcome::Retry {
                    next_due_at: b.due_at + 1_234,
                },
                11,
            ),
        ])
        .await
        .unwrap();
    cancel_bits(&store, "d", "s", u64::MAX, 12).await;
    let delta = 2 * 60 * MIN;
    let (rec, created, moved) = put(
        &store,
        PutSubject {
            start_at: START + delta,
            at: 7_000,
            ..subject("s", START)
        },
    )
    .await;
    assert!(!created);
    assert_eq!(rec.start_at, START + delta);
    let mut expected = vec![
        due_entry(&b, b.due_at + 1_234 + delta),
        due_entry(&c, c.due_at + delta),
    ];
    expected.sort_by_key(DueEntry::cursor);
    assert_eq!(moved, expected);
    let moved_c = get(&store, c.id).await;
    assert_eq!(
        (moved_c.due_at, moved_c.updated_at),
        (c.due_at + delta, 7_000)
    );
    let moved_b = get(&store, b.id).await;
    assert_eq!(
        (moved_b.due_at, moved_b.attempts),
        (b.due_at + 1_234 + delta, 1)
    );
    // Delivered and cancelled timers keep their times; other subjects and
    // plain timers are not touched.
    let done = get(&store, a.id).await;
    assert_eq!((done.state, done.due_at), (TimerState::Done, a.due_at));
    assert_eq!(get(&store, d.id).await.due_at, d.due_at);
    assert_eq!(get(&store, elsewhere.id).await, elsewhere);
    assert_eq!(get(&store, plain.id).await, plain);
    // Moving into the past is allowed: the timers are simply due at once.
    let back = -(START + delta);
    let (_, _, moved) = put(
        &store,
        PutSubject {
            start_at: 0,
            at: 8_000,
            ..subject("s", START)
        },
    )
    .await;
    let mut expected = vec![
        due_entry(&b, b.due_at + 1_234 + delta + back),
        due_entry(&c, c.due_at + delta + back),
    ];
    expected.sort_by_key(DueEntry::cursor);
    assert_eq!(moved, expected);
    assert!(moved.iter().all(|e| e.due_at < 0));
    // `scheduled()` reports the moved timers, for the engine and the feed.
    let r = apply_one(
        &store,
        WriteOp::PutSubject(PutSubject {
            start_at: 10,
            at: 9_000,
            ..subject("s", START)
        }),
    )
    .await;
    let scheduled: Vec<i64> = r.scheduled().iter().map(|e| e.id).collect();
    let mut want = vec![b.id, c.id];
    let mut got = scheduled.clone();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
}

pub async fn delete_subject_cancels_and_unsubscribes(store: S) {
    put(&store, subject("s", START)).await;
    put(&store, subject("keep", START)).await;
    let a1 = add_created(&store, reminder("a", "s", 5)).await;
    let a2 = add_created(&store, reminder_on("a", "s", ChannelType::Sms, 5)).await;
    let b = add_created(&store, reminder("b", "s", 5)).await;
    let kept = add_created(&store, reminder("a", "keep", 5)).await;
    store
        .complete(vec![completion(&b, 1, CompletionOutcome::Done, 10)])
        .await
        .unwrap();
    let before = subjects(&store, &["s"]).await.remove(0);
    let r = apply_one(
        &store,
        WriteOp::DeleteSubject {
            tenant: DEFAULT_TENANT,
            subject_id: "s".into(),
            at: 9_000,
        },
    )
    .await;
    let mut pending = vec![a1.id, a2.id];
    pending.sort_unstable();
    match r {
        WriteResult::SubjectDeleted { subject, cancelled } => {
            assert_eq!(subject, before);
            let mut cancelled = cancelled;
            cancelled.sort_unstable();
            assert_eq!(cancelled, pending);
        }
        other => panic!("expected SubjectDeleted, got {other:?}"),
    }
    for id in [a1.id, a2.id] {
        let t = get(&store, id).await;
        assert_eq!((t.state, t.updated_at), (TimerState::Cancelled, 9_000));
    }
    assert_eq!(get(&store, b.id).await.state, TimerState::Done);
    assert_eq!(get(&store, kept.id).await, kept);
    assert!(subjects(&store, &["s"]).await.is_empty());
    assert_eq!(
        subscriptions(&store, "a").await,
        vec![("keep".to_string(), kept_bit(), kept.id)]
    );
    assert!(subscriptions(&store, "b").await.is_empty());
    assert_eq!(
        cancel_bits(&store, "a", "s", u64::MAX, 1).await,
        WriteResult::NotFound
    );
    assert_eq!(
        add(&store, reminder("a", "s", 5)).await,
        WriteResult::SubjectNotFound
    );
    assert_eq!(
        apply_one(
            &store,
            WriteOp::DeleteSubject {
                tenant: DEFAULT_TENANT,
                subject_id: "s".into(),
                at: 9_500,
            },
        )
        .await,
        WriteResult::NotFound
    );
    // Put again, the subject starts with no subscriptions.
    let (_, created, moved) = put(&store, subject("s", START)).await;
    assert!(created && moved.is_empty());
    add_created(&store, reminder("a", "s", 5)).await;
    add_created(&store, reminder("b", "s", 5)).await;
}

fn kept_bit() -> u8 {
    bit(ChannelType::App, 5)
}

pub async fn cancel_one_bit_leaves_the_other(store: S) {
    put(&store, subject("s", START)).await;
    let ten = add_created(&store, reminder("u", "s", 10)).await;
    let mail = add_created(&store, reminder_on("u", "s", ChannelType::Email, 10)).await;
    let (m10, mmail) = (
        slot_mask(ChannelType::App, 10),
        slot_mask(ChannelType::Email, 10),
    );
    assert_eq!(
        cancel_bits(&store, "u", "s", m10, 3_000).await,
        WriteResult::RemindersCancelled {
            cleared: m10,
            remaining: mmail,
            cancelled: vec![ten.id],
        }
    );
    let t = get(&store, ten.id).await;
    assert_eq!((t.state, t.updated_at), (TimerState::Cancelled, 3_000));
    assert_eq!(get(&store, mail.id).await, mail);
    assert_eq!(
        subscriptions(&store, "u").await,
        vec![("s".to_string(), bit(ChannelType::Email, 10), mail.id)]
    );
    // Clearing it again clears nothing; the other bit stays.
    assert_eq!(
        cancel_bits(&store, "u", "s", m10, 3_100).await,
        WriteResult::RemindersCancelled {
            cleared: 0,
            remaining: mmail,
            cancelled: vec![],
        }
    );
    // The cleared bit can be set again, with a new timer.
    let again = add_created(&store, reminder("u", "s", 10)).await;
    assert_ne!(again.id, ten.id);
    assert_eq!(
        add(&store, reminder("u", "s", 10)).await,
        WriteResult::ReminderExists { bits: m10 | mmail }
    );
}

pub async fn cancel_all_bits_removes_the_subscription(store: S) {
    put(&store, subject("s", START)).await;
    let a = add_created(&store, reminder("u", "s", 5)).await;
    let b = add_created(&store, reminder("u", "s", 60)).await;
    let c = add_created(&store, reminder_on("u", "s", ChannelType::Wecom, 35)).await;
    store
        .complete(vec![completion(&a, 1, CompletionOutcome::Done, 10)])
        .await
        .unwrap();
    let all = slot_mask(ChannelType::App, 5)
        | slot_mask(ChannelType::App, 60)
        | slot_mask(ChannelType::Wecom, 35);
    let r = cancel_bits(&store, "u", "s", herald_core::reminder::ALL_BITS, 4_000).await;
    let mut pending = vec![b.id, c.id];
    pending.sort_unstable();
    match r {
        WriteResult::RemindersCancelled {
            cleared,
            remaining,
            mut cancelled,
        } => {
            assert_eq!((cleared, remaining), (all, 0));
            cancelled.sort_unstable();
            // Only timers still pending are cancelled; the delivered one stays done.
            assert_eq!(cancelled, pending);
        }
        other => panic!("expected RemindersCancelled, got {other:?}"),
    }
    assert_eq!(get(&store, a.id).await.state, TimerState::Done);
    assert!(subscriptions(&store, "u").await.is_empty());
    assert_eq!(
        cancel_bits(&store, "u", "s", u64::MAX, 4_100).await,
        WriteResult::NotFound
    );
    assert!(all_due(&store, i64::MAX).await.is_empty());
    // Every bit is free again.
    add_created(&store, reminder("u", "s", 5)).await;
}

pub async fn cancel_reminders_on_missing_is_not_found(store: S) {
    assert_eq!(
        cancel_bits(&store, "u", "s", u64::MAX, 1).await,
        WriteResult::NotFound
    );
    put(&store, subject("s", START)).await;
    add_created(&store, reminder("v", "s", 5)).await;
    // The subject exists and has subscribers, but not this one.
    assert_eq!(
        cancel_bits(&store, "u", "s", u64::MAX, 1).await,
        WriteResult::NotFound
    );
    assert_eq!(subscriptions(&store, "v").await.len(), 1);
}

pub async fn user_reminders_orders_by_subject_then_bit_and_limits(store: S) {
    for s in ["b", "a", "c"] {
        put(&store, subject(s, START)).await;
    }
    let wanted = [
        ("b", ChannelType::Wecom, 60),
        ("a", ChannelType::Email, 5),
        ("b", ChannelType::App, 5),
        ("a", ChannelType::App, 55),
        ("c", ChannelType::Sms, 20),
    ];
    let mut expected = Vec::new();
    for (s, ct, lead) in wanted {
        let t = add_created(&store, reminder_on("u", s, ct, lead)).await;
        expected.push((s.to_string(), bit(ct, lead), t.id));
        // Someone else's, on the same subjects, interleaved.
        add_created(&store, reminder_on("v", s, ct, lead)).await;
    }
    expected.sort();
    assert_eq!(subscriptions(&store, "u").await, expected);
    let two = store.user_reminders(DEFAULT_TENANT, "u", 2).await.unwrap();
    let two: Vec<(String, u8, i64)> = two
        .into_iter()
        .map(|r| (r.subject_id, r.bit, r.timer.id))
        .collect();
    assert_eq!(two, expected[..2]);
    assert!(
        store
            .user_reminders(DEFAULT_TENANT, "u", 0)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .user_reminders(DEFAULT_TENANT, "nobody", 10)
            .await
            .unwrap()
            .is_empty()
    );
    // Every state is listed, with the timer as it is.
    let first = store
        .user_reminders(DEFAULT_TENANT, "u", 1)
        .await
        .unwrap()
        .remove(0);
    store
        .complete(vec![completion(
            &first.timer,
            1,
            CompletionOutcome::Done,
            50,
        )])
        .await
        .unwrap();
    let again = store
        .user_reminders(DEFAULT_TENANT, "u", 1)
        .await
        .unwrap()
        .remove(0);
    assert_eq!(again.timer.state, TimerState::Done);
    assert_eq!(again.timer.id, first.timer.id);
}

pub async fn pending_reminders_follow_user_channel_and_range(store: S) {
    put(&store, subject("s1", START)).await;
    put(&store, subject("s2", START + 30 * MIN)).await;
    // u on app: due START-60m, START-5m, START+25m (s2, 5m), START-10m (done)
    let early = add_created(&store, reminder("u", "s1", 60)).await;
    let near = add_created(&store, reminder("u", "s1", 5)).await;
    let later = add_created(&store, reminder("u", "s2", 5)).await;
    let done = add_created(&store, reminder("u", "s1", 10)).await;
    add_created(&store, reminder("u", "s1", 15)).await;
    store
        .complete(vec![completion(&done, 1, CompletionOutcome::Done, 10)])
        .await
        .unwrap();
    cancel_bits(&store, "u", "s1", slot_mask(ChannelType::App, 15), 11).await;
    // u by email, and v on app: not u's app reminders.
    let mail = add_created(&store, reminder_on("u", "s1", ChannelType::Email, 5)).await;
    let other = add_created(&store, reminder("v", "s1", 5)).await;
    // A plain timer for u on app at the same time is not a reminder.
    let mut plain = timer(near.due_at);
    plain.recipient = "u".into();
    plain.channel = "app".into();
    insert_one(&store, plain).await;

    let probe = |user: &str, channel: &str, from: i64, until: i64| MergeProbe {
        tenant: DEFAULT_TENANT,
        user_id: user.into(),
        channel: channel.into(),
        from,
        until,
    };
    let found = |v: Vec<TimerRecord>| -> Vec<i64> {
        let mut ids: Vec<i64> = v.iter().map(|t| t.id).collect();
        ids.sort_unstable();
        ids
    };
    let sorted = |mut v: Vec<i64>| {
        v.sort_unstable();
        v
    };
    assert!(store.pending_reminders(&[]).await.unwrap().is_empty());
    // Everything of u's on app: the pending ones only.
    let all = store
        .pending_reminders(&[probe("u", "app", i64::MIN, i64::MAX)])
        .await
        .unwrap();
    assert_eq!(
        found(all.clone()),
        sorted(vec![early.id, near.id, later.id])
    );
    // Full records, as stored.
    assert!(all.contains(&get(&store, near.id).await));
    // Both ends of the range are inclusive.
    let r = store
        .pending_reminders(&[probe("u", "app", early.due_at, near.due_at)])
        .await
        .unwrap();
    assert_eq!(found(r), sorted(vec![early.id, near.id]));
    let r = store
        .pending_reminders(&[probe("u", "app", early.due_at + 1, near.due_at - 1)])
        .await
        .unwrap();
    assert!(r.is_empty());
    // By channel.
    let r = store
        .pending_reminders(&[probe("u", "email", i64::MIN, i64::MAX)])
        .await
        .unwrap();
    assert_eq!(found(r), vec![mail.id]);
    // Overlapping probes (and a repeated one) give each timer once; several
    // users at once.
    let r = store
        .pending_reminders(&[
            probe("u", "app", early.due_at, near.due_at),
            probe("u", "app", near.due_at, later.due_at),
            probe("u", "app", near.due_at, later.due_at),
            probe("v", "app", i64::MIN, i64::MAX),
            probe("nobody", "app", i64::MIN, i64::MAX),
        ])
        .await
        .unwrap();
    assert_eq!(
        found(r),
        sorted(vec![early.id, near.id, later.id, other.id])
    );
}

pub async fn one_batch_sees_its_own_subjects_and_reminders(store: S) {
    let m = |lead| slot_mask(ChannelType::App, lead);
    let r = store
        .apply(vec![
            WriteOp::AddReminder(reminder("u", "s", 5)),
            WriteOp::PutSubject(subject("s", START)),
            WriteOp::AddReminder(reminder("u", "s", 5)),
            WriteOp::AddReminder(reminder("u", "s", 5)),
            WriteOp::AddReminder(reminder("u", "s", 10)),
            WriteOp::AddReminder(reminder("v", "s", 5)),
            WriteOp::AddReminder(reminder("u", "s", 10)),
            WriteOp::PutSubject(PutSubject {
                start_at: START + MIN,
                ..subject("s", START)
            }),
            WriteOp::CancelReminders {
                tenant: DEFAULT_TENANT,
                user_id: "u".into(),
                subject_id: "s".into(),
                mask: m(5),
                at: 3_000,
            },
            WriteOp::AddReminder(reminder("u", "s", 5)),
            WriteOp::AddReminder(reminder("u", "s", 5)),
            WriteOp::InsertTimer(timer(42)),
            WriteOp::DeleteSubject {
                tenant: DEFAULT_TENANT,
                subject_id: "s".into(),
                at: 4_000,
            },
            WriteOp::AddReminder(reminder("u", "s", 5)),
        ])
        .await
        .unwrap();
    assert_eq!(r.len(), 14);
    assert_eq!(r[0], WriteResult::SubjectNotFound);
    assert!(matches!(
        r[1],
        WriteResult::SubjectPut { created: true, .. }
    ));
    let u5 = created(&r[2]);
    assert_eq!(u5.due_at, START - 5 * MIN);
    assert_eq!(r[3], WriteResult::ReminderExists { bits: m(5) });
    let u10 = created(&r[4]);
    let v5 = created(&r[5]);
    assert_eq!(r[6], WriteResult::ReminderExists { bits: m(5) | m(10) });
    match &r[7] {
        WriteResult::SubjectPut { created, moved, .. } => {
            assert!(!created);
            let mut got: Vec<(i64, i64)> = moved.iter().map(|e| (e.id, e.due_at)).collect();
            got.sort_unstable();
            let mut want = vec![
                (u5.id, u5.due_at + MIN),
                (u10.id, u10.due_at + MIN),
                (v5.id, v5.due_at + MIN),
            ];
            want.sort_unstable();
            assert_eq!(got, want);
        }
        other => panic!("expected SubjectPut, got {other:?}"),
    }
    assert_eq!(
        r[8],
        WriteResult::RemindersCancelled {
            cleared: m(5),
            remaining: m(10),
            cancelled: vec![u5.id],
        }
    );
    // Set again after the cancel, at the moved start.
    let u5b = created(&r[9]);
    assert_eq!(u5b.due_at, START + MIN - 5 * MIN);
    assert_eq!(r[10], WriteResult::ReminderExists { bits: m(5) | m(10) });
    created(&r[11]);
    match &r[12] {
        WriteResult::SubjectDeleted { cancelled, .. } => {
            let mut got = cancelled.clone();
            got.sort_unstable();
            let mut want = vec![u10.id, v5.id, u5b.id];
            want.sort_unstable();
            assert_eq!(got, want);
        }
        other => panic!("expected SubjectDeleted, got {other:?}"),
    }
    assert_eq!(r[13], WriteResult::SubjectNotFound);
    assert!(subscriptions(&store, "u").await.is_empty());
    assert_eq!(
        counts(&store).await,
        HashMap::from([(TimerState::Cancelled, 4), (TimerState::Pending, 1)])
    );
}

pub async fn many_reminders_in_one_batch(store: S) {
    put(&store, subject("hot", START)).await;
    put(&store, subject("cold", START + 60 * MIN)).await;
    // One bulk subscribe: 300 users x 2 leads on the hot subject, with the
    // odd repeat and a few for the cold one and a missing one mixed in.
    let mut ops = Vec::new();
    for u in 0..300 {
        let user = format!("user-{u:03}");
        ops.push(WriteOp::AddReminder(reminder(&user, "hot", 5)));
        ops.push(WriteOp::AddReminder(reminder(&user, "hot", 30)));
        if u % 50 == 0 {
            ops.push(WriteOp::AddReminder(reminder(&user, "hot", 5)));
            ops.push(WriteOp::AddReminder(reminder(&user, "cold", 60)));
            ops.push(WriteOp::AddReminder(reminder(&user, "missing", 60)));
        }
    }
    let results = store.apply(ops.clone()).await.unwrap();
    assert_eq!(results.len(), ops.len());
    let mut created_n = 0;
    let mut ids = HashSet::new();
    for (op, r) in ops.iter().zip(&results) {
        let WriteOp::AddReminder(rem) = op else {
            unreachable!()
        };
        match (rem.subject_id.as_str(), r) {
            ("missing", WriteResult::SubjectNotFound) => {}
            ("hot" | "cold", WriteResult::Created(t)) => {
                let start = if rem.subject_id == "hot" {
                    START
                } else {
                    START + 60 * MIN
                };
                assert_eq!(t.due_at, start - rem.lead_ms);
                assert_eq!(t.recipient, rem.user_id);
                assert!(ids.insert(t.id));
                created_n += 1;
            }
            ("hot", WriteResult::ReminderExists { bits }) => {
                assert_eq!(
                    *bits,
                    slot_mask(ChannelType::App, 5) | slot_mask(ChannelType::App, 30)
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(created_n, 600 + 6);
    assert_eq!(all_due(&store, i64::MAX).await.len(), 606);
    assert_eq!(subscriptions(&store, "user-050").await.len(), 3);
    // The same batch again: every bit is set already.
    let again = store.apply(ops.clone()).await.unwrap();
    assert!(again.iter().all(|r| matches!(
        r,
        WriteResult::ReminderExists { .. } | WriteResult::SubjectNotFound
    )));
    assert_eq!(all_due(&store, i64::MAX).await.len(), 606);
}

pub async fn reminder_bits_use_the_whole_word_and_a_bad_bit_changes_nothing(store: S) {
    put(&store, subject("s", START)).await;
    // Bit 63 is the sign bit of the stored integer: it must round-trip.
    let mut top = reminder("u", "s", 5);
    top.bit = 63;
    let t = add_created(&store, top.clone()).await;
    let low = add_created(&store, reminder("u", "s", 5)).await;
    let both = (1u64 << 63) | slot_mask(ChannelType::App, 5);
    assert_eq!(
        add(&store, top).await,
        WriteResult::ReminderExists { bits: both }
    );
    assert_eq!(
        subscriptions(&store, "u").await,
        vec![
            ("s".to_string(), bit(ChannelType::App, 5), low.id),
            ("s".to_string(), 63, t.id)
        ]
    );
    assert_eq!(
        cancel_bits(&store, "u", "s", 1 << 63, 5_000).await,
        WriteResult::RemindersCancelled {
            cleared: 1 << 63,
            remaining: slot_mask(ChannelType::App, 5),
            cancelled: vec![t.id],
        }
    );
    // A bit outside the word is a caller bug: the batch fails, whole.
    let mut bad = reminder("v", "s", 5);
    bad.bit = 64;
    let err = store
        .apply(vec![
            WriteOp::PutSubject(subject("new", START)),
            WriteOp::AddReminder(reminder("v", "s", 10)),
            WriteOp::AddReminder(bad),
        ])
        .await;
    assert!(err.is_err(), "{err:?}");
    assert!(subjects(&store, &["new"]).await.is_empty());
    assert!(subscriptions(&store, "v").await.is_empty());
}

/// Two handles add the same bits at the same moment: each bit gets exactly
/// one timer, and exactly one of the two adds is `Created`.
pub async fn concurrent_reminder_adds_from_two_handles(a: S, b: S) {
    put(&a, subject("s", START)).await;
    const USERS: usize = 40;
    let mask = slot_mask(ChannelType::App, 5);
    let batch = |reverse: bool| {
        let mut ops: Vec<WriteOp> = (0..USERS)
            .map(|u| WriteOp::AddReminder(reminder(&format!("u{u:02}"), "s", 5)))
            .collect();
        if reverse {
            ops.reverse();
        }
        ops
    };
    for round in 0..3 {
        let (a2, b2) = (a.clone(), b.clone());
        let (oa, ob) = (batch(false), batch(round % 2 == 1));
        let ta = tokio::spawn(async move { a2.apply(oa).await });
        let tb = tokio::spawn(async move { b2.apply(ob).await });
        let ra = ta.await.unwrap().unwrap();
        let rb = tb.await.unwrap().unwrap();
        let mut created_by_user: HashMap<String, usize> = HashMap::new();
        for (ops_rev, results) in [(false, ra), (round % 2 == 1, rb)] {
            let mut users: Vec<usize> = (0..USERS).collect();
            if ops_rev {
                users.reverse();
            }
            for (u, r) in users.into_iter().zip(results) {
                let user = format!("u{u:02}");
                match r {
                    WriteResult::Created(t) => {
                        assert_eq!(t.recipient, user);
                        *created_by_user.entry(user).or_default() += 1;
                    }
                    WriteResult::ReminderExists { bits } => assert_eq!(bits, mask),
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
        if round == 0 {
            assert_eq!(created_by_user.len(), USERS, "{created_by_user:?}");
            assert!(
                created_by_user.values().all(|&n| n == 1),
                "{created_by_user:?}"
            );
        } else {
            assert!(created_by_user.is_empty(), "{created_by_user:?}");
        }
    }
    assert_eq!(
        counts(&a).await,
        HashMap::from([(TimerState::Pending, USERS as u64)])
    );
    for u in 0..USERS {
        assert_eq!(subscriptions(&b, &format!("u{u:02}")).await.len(), 1);
    }
    // Single adds racing for a fresh bit, many times over.
    for n in 0..10 {
        let user = format!("solo{n}");
        let (a2, b2) = (a.clone(), b.clone());
        let (ra, rb) = (reminder(&user, "s", 45), reminder(&user, "s", 45));
        let ta = tokio::spawn(async move { a2.apply(vec![WriteOp::AddReminder(ra)]).await });
        let tb = tokio::spawn(async move { b2.apply(vec![WriteOp::AddReminder(rb)]).await });
        let ra = ta.await.unwrap().unwrap().remove(0);
        let rb = tb.await.unwrap().unwrap().remove(0);
        let wins = [&ra, &rb]
            .iter()
            .filter(|r| matches!(r, WriteResult::Created(_)))
            .count();
        assert_eq!(wins, 1, "{ra:?} {rb:?}");
        assert_eq!(subscriptions(&a, &user).await.len(), 1);
    }
}

/// `list_subjects` pages through one tenant's subjects in id order with their
/// subscriptions counted; `subject_summary` counts per bit. Counts stop at the
/// cap and say so; cancelled bits no longer count.
pub async fn subjects_list_in_id_order_with_bounded_counts(store: S) {
    for id in ["b", "a", "c"] {
        put(&store, subject(id, START)).await;
    }
    let mut elsewhere = subject("a0", START);
    elsewhere.tenant = herald_core::TenantId(7);
    put(&store, elsewhere).await;
    // "a": u1 on two leads, u2 on one and on email; "b": u1 only; "c": none.
    for r in [
        reminder("u1", "a", 5),
        reminder("u1", "a", 15),
        reminder("u2", "a", 5),
        reminder_on("u2", "a", ChannelType::Email, 5),
        reminder("u1", "b", 5),
    ] {
        add_created(&store, r).await;
    }
    let list = |after: Option<&'static str>, limit: usize, cap: u64| {
        let store = &store;
        async move {
            store
                .list_subjects(DEFAULT_TENANT, after, limit, cap)
                .await
                .expect("list_subjects")
                .into_iter()
                .map(|s| {
                    (
                        s.subject.subject_id,
                        s.counts.subscribers,
                        s.counts.reminders,
                        s.counts.capped,
                    )
                })
                .collect::<Vec<_>>()
        }
    };
    let all = vec![
        ("a".to_string(), 2, 4, false),
        ("b".to_string(), 1, 1, false),
        ("c".to_string(), 0, 0, false),
    ];
    assert_eq!(list(None, 10, 100).await, all);
    assert_eq!(list(None, 2, 100).await, all[..2].to_vec());
    assert_eq!(list(Some("a"), 10, 100).await, all[1..].to_vec());
    assert_eq!(list(Some("c"), 10, 100).await, Vec::new());
    // A cap of 3: "a" has 4 reminders, so it reads 3 and says it stopped.
    assert_eq!(list(None, 1, 3).await, vec![("a".to_string(), 2, 3, true)]);
    assert_eq!(list(None, 1, 4).await, vec![("a".to_string(), 2, 4, false)]);

    let summary = store
        .subject_summary(DEFAULT_TENANT, "a", 100)
        .await
        .expect("subject_summary")
        .expect("a exists");
    let app5 = Slot::new(ChannelType::App, 5).expect("slot").bit();
    let app15 = Slot::new(ChannelType::App, 15).expect("slot").bit();
    let email5 = Slot::new(ChannelType::Email, 5).expect("slot").bit();
    let mut want = vec![(app5, 2), (app15, 1), (email5, 1)];
    want.sort_unstable();
    assert_eq!(summary.counts.by_bit, want);
    assert_eq!(
        (summary.counts.subscribers, summary.counts.reminders),
        (2, 4)
    );
    assert_eq!(summary.subject.title.as_deref(), Some("Coupon a opens"));
    let capped = store
        .subject_summary(DEFAULT_TENANT, "a", 2)
        .await
        .expect("subject_summary")
        .expect("a exists");
    assert!(capped.counts.capped);
    assert_eq!(capped.counts.by_bit.iter().map(|b| b.1).sum::<u64>(), 2);
    assert_eq!(
        store
            .subject_summary(DEFAULT_TENANT, "a0", 100)
            .await
            .expect("read"),
        None,
        "another tenant's subject is not there"
    );
    assert_eq!(
        store
            .subject_summary(DEFAULT_TENANT, "zz", 100)
            .await
            .expect("read"),
        None
    );

    // Cancelling u2's bits leaves u1's two on "a".
    cancel_bits(&store, "u2", "a", u64::MAX, 2_000).await;
    assert_eq!(
        list(None, 1, 100).await,
        vec![("a".to_string(), 1, 2, false)]
    );
}

/// A reminder that fired leaves its bit set (the subscription's history), but
/// spent: once the subject moves later, the user may subscribe to that lead
/// again and gets a new timer, linked in the old one's place. While the new
/// timer is pending, the same reminder again is `ReminderExists`.
pub async fn a_fired_reminder_can_be_subscribed_again_after_a_move(store: S) {
    put(&store, subject("s", START)).await;
    let first = add_created(&store, reminder("u", "s", 5)).await;
    store
        .complete(vec![completion(&first, 1, CompletionOutcome::Done, 10)])
        .await
        .expect("complete");
    // Now is after the first firing: the same lead again would fire in the past.
    let again = || NewReminder {
        not_before: first.due_at,
        grant: None,
        ..reminder("u", "s", 5)
    };
    assert_eq!(
        add(&store, again()).await,
        WriteResult::TooLate {
            fire_at: first.due_at,
            start_at: START
        }
    );
    // The subject moves an hour later; the delivered timer stays where it was.
    let (_, _, moved) = put(
        &store,
        PutSubject {
            start_at: START + 60 * MIN,
            ..subject("s", START)
        },
    )
    .await;
    assert!(moved.is_empty(), "{moved:?}");
    let second = add_created(&store, again()).await;
    assert_ne!(second.id, first.id);
    assert_eq!(second.due_at, START + 60 * MIN - 5 * MIN);
    assert_eq!(
        subscriptions(&store, "u").await,
        vec![("s".to_string(), first_bit(&first), second.id)]
    );
    assert!(matches!(
        add(&store, again()).await,
        WriteResult::ReminderExists { .. }
    ));
    // The first timer keeps its history.
    let old = store
        .get_timer(first.id)
        .await
        .expect("read")
        .expect("kept");
    assert_eq!(old.state, TimerState::Done);
}

/// The bit of a reminder's timer, as its subscription lists it.
fn first_bit(t: &TimerRecord) -> u8 {
    assert_eq!(t.kind, TimerKind::Reminder);
    Slot::new(ChannelType::App, 5).expect("slot").bit()
}

/// A subject keeps its own timing (early window, late sends) through creates
/// and updates, and reads it back everywhere subjects are read.
pub async fn subjects_keep_their_timing(store: S) {
    let timing = crate::SubjectTiming {
        early_window_ms: Some(300_000),
        send_late: true,
    };
    let (s, created, _) = put(
        &store,
        PutSubject {
            timing,
            ..subject("timed", START)
        },
    )
    .await;
    assert!(created);
    assert_eq!(s.timing, timing);
    assert_eq!(subjects(&store, &["timed"]).await[0].timing, timing);
    // An update without them goes back to the configuration's.
    let (s, created, _) = put(&store, subject("timed", START + 1)).await;
    assert!(!created);
    assert_eq!(s.timing, crate::SubjectTiming::default());
    let summary = store
        .subject_summary(DEFAULT_TENANT, "timed", 10)
        .await
        .expect("summary")
        .expect("the subject");
    assert_eq!(summary.subject.timing, crate::SubjectTiming::default());
}

/// A subject keeps its own reminder templates (JSON text, stored as given)
/// through creates and updates, and reads them back everywhere subjects are
/// read; an update without them clears them.
pub async fn subjects_keep_their_templates(store: S) {
    let templates = r#"{"wechat":{"name":"wx-remind","version":2},"sms":{"name":"short ✓"}}"#;
    let (s, created, _) = put(
        &store,
        PutSubject {
            templates: Some(templates.into()),
            ..subject("templated", START)
        },
    )
    .await;
    assert!(created);
    assert_eq!(s.templates.as_deref(), Some(templates));
    let read = subjects(&store, &["templated", "plain"]).await;
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].templates.as_deref(), Some(templates));
    put(&store, subject("plain", START)).await;
    let summary = store
        .subject_summary(DEFAULT_TENANT, "templated", 10)
        .await
        .expect("summary")
        .expect("the subject");
    assert_eq!(summary.subject.templates.as_deref(), Some(templates));
    let listed = store
        .list_subjects(DEFAULT_TENANT, None, 10, 10)
        .await
        .expect("list_subjects");
    let by_id = |id: &str| {
        listed
            .iter()
            .find(|s| s.subject.subject_id == id)
            .map(|s| s.subject.templates.clone())
    };
    assert_eq!(by_id("templated"), Some(Some(templates.to_string())));
    assert_eq!(by_id("plain"), Some(None));
    // An update with other templates replaces them; one without clears them.
    let other = r#"{"email":{"name":"mail"}}"#;
    let (s, created, _) = put(
        &store,
        PutSubject {
            templates: Some(other.into()),
            at: 5_000,
            ..subject("templated", START + 1)
        },
    )
    .await;
    assert!(!created);
    assert_eq!(s.templates.as_deref(), Some(other));
    assert_eq!(
        subjects(&store, &["templated"]).await[0]
            .templates
            .as_deref(),
        Some(other)
    );
    let (s, _, _) = put(&store, subject("templated", START + 2)).await;
    assert_eq!(s.templates, None);
    assert_eq!(subjects(&store, &["templated"]).await[0].templates, None);
    // Deleting returns them with the subject.
    put(
        &store,
        PutSubject {
            templates: Some(other.into()),
            ..subject("templated", START)
        },
    )
    .await;
    let deleted = store
        .apply(vec![WriteOp::DeleteSubject {
            tenant: DEFAULT_TENANT,
            subject_id: "templated".into(),
            at: 9_000,
        }])
        .await
        .expect("delete");
    match deleted.first() {
        Some(WriteResult::SubjectDeleted { subject, .. }) => {
            assert_eq!(subject.templates.as_deref(), Some(other));
        }
        other => panic!("expected SubjectDeleted, got {other:?}"),
    }
}

/// Pending reminders are counted per subject, bit, channel and due time, for
/// the subjects starting in a range and their reminders due in another, or
/// for one subject; a batch's timers page out in id order, pending only.
pub async fn reminder_batches_count_pending_reminders_and_page_them(store: S) {
    let start = START + 60 * MIN;
    put(
        &store,
        PutSubject {
            timing: crate::SubjectTiming {
                early_window_ms: Some(5 * MIN),
                send_late: false,
            },
            ..subject("hot", start)
        },
    )
    .await;
    put(&store, subject("later", start + 120 * MIN)).await;
    let mut five = Vec::new();
    for i in 0..5 {
        five.push(add_created(&store, reminder(&format!("u{i}"), "hot", 5)).await);
    }
    for i in 0..2 {
        add_created(&store, reminder(&format!("u{i}"), "hot", 10)).await;
        add_created(
            &store,
            reminder_on(&format!("u{i}"), "hot", ChannelType::Email, 5),
        )
        .await;
    }
    add_created(&store, reminder("u0", "later", 5)).await;
    // One of the five fired already: no longer counted.
    store
        .complete(vec![completion(
            &five[4],
            1,
            CompletionOutcome::Done,
            2_000,
        )])
        .await
        .expect("complete");
    let due = start - 5 * MIN;
    let batches = store
        .reminder_batches(&crate::BatchScope::Due {
            starts_from: start - MIN,
            starts_until: start + MIN,
            due_from: due,
            due_until: due + 1,
        })
        .await
        .expect("batches");
    let got: Vec<(String, u8, String, i64, u64, Option<i64>)> = batches
        .iter()
        .map(|b| {
            (
                b.subject_id.clone(),
                b.bit,
                b.channel.clone(),
                b.due_at,
                b.count,
                b.early_window_ms,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "hot".into(),
                bit(ChannelType::App, 5),
                "app".into(),
                due,
                4,
                Some(5 * MIN)
            ),
            (
                "hot".into(),
                bit(ChannelType::Email, 5),
                "email".into(),
                due,
                2,
                Some(5 * MIN)
            ),
        ]
    );
    assert!(
        batches
            .iter()
            .all(|b| b.start_at == start && b.tenant == DEFAULT_TENANT)
    );
    // One subject: every due time.
    let all = store
        .reminder_batches(&crate::BatchScope::Subject {
            tenant: DEFAULT_TENANT,
            subject_id: "hot".into(),
        })
        .await
        .expect("batches of a subject");
    assert_eq!(all.len(), 3);
    assert_eq!(all.iter().map(|b| b.count).sum::<u64>(), 8);
    // Paging a batch: pending only, in id order.
    let app5 = bit(ChannelType::App, 5);
    let first = store
        .batch_due(DEFAULT_TENANT, "hot", app5, due, None, 3)
        .await
        .expect("batch_due");
    let ids: Vec<i64> = first.iter().map(|e| e.id).collect();
    assert_eq!(ids, [five[0].id, five[1].id, five[2].id]);
    assert!(first.iter().all(|e| e.due_at == due));
    let rest = store
        .batch_due(DEFAULT_TENANT, "hot", app5, due, Some(five[2].id), 3)
        .await
        .expect("batch_due");
    let ids: Vec<i64> = rest.iter().map(|e| e.id).collect();
    assert_eq!(ids, [five[3].id], "the fired one is not pending");
    let none = store
        .batch_due(DEFAULT_TENANT, "hot", app5, due + 1, None, 10)
        .await
        .expect("batch_due");
    assert!(none.is_empty());
}

/// A subject's outcomes: counted per state from its own reminders only, the
/// failures' errors ranked, the newest failures listed, the cap honoured;
/// the cheap failure count sees the same failures through the state index.
pub async fn subject_outcomes_count_states_and_rank_errors(store: S) {
    put(&store, subject("coupon", START)).await;
    put(&store, subject("other", START)).await;
    let mut timers = Vec::new();
    for (i, lead) in [5, 10, 15, 20].into_iter().enumerate() {
        for u in ["u1", "u2", "u3"] {
            let user = format!("{u}-{i}");
            timers.push(add_created(&store, reminder(&user, "coupon", lead)).await);
            // Another subject's reminders fail too: they must not be counted.
            let other = add_created(&store, reminder(&user, "other", lead)).await;
            let mut c = completion(&other, 1, CompletionOutcome::Failed, 20);
            c.error = Some("other subject".into());
            store.complete(vec![c]).await.unwrap();
        }
    }
    // 12 reminders: 5 sent, 4 failed ("no grant" ×3, "bad" ×1), 1 dead, 2 pending.
    let mut done = Vec::new();
    for (i, t) in timers.iter().enumerate() {
        let (outcome, error) = match i {
            0..=4 => (CompletionOutcome::Done, None),
            5..=7 => (CompletionOutcome::Failed, Some("no grant")),
            8 => (CompletionOutcome::Failed, Some("bad")),
            9 => (CompletionOutcome::Dead, Some("timeout")),
            _ => continue,
        };
        let mut c = completion(t, 1, outcome, 30 + i as i64);
        c.error = error.map(str::to_owned);
        done.push(c);
    }
    store.complete(done).await.unwrap();

    let o = store
        .subject_outcomes(DEFAULT_TENANT, "coupon", 1000, 2, 3)
        .await
        .unwrap();
    assert_eq!(o.counted, 12);
    assert!(!o.capped);
    assert_eq!(
        o.by_state,
        vec![
            (TimerState::Pending, 2),
            (TimerState::Done, 5),
            (TimerState::Failed, 4),
            (TimerState::Dead, 1),
        ]
    );
    assert_eq!(
        o.top_errors,
        vec![("no grant".to_owned(), 3), ("bad".to_owned(), 1)]
    );
    // The newest failures first: the dead one finished last.
    let newest: Vec<i64> = o.failed.iter().map(|f| f.timer_id).collect();
    assert_eq!(newest, vec![timers[9].id, timers[8].id, timers[7].id]);
    assert_eq!(o.failed[0].state, TimerState::Dead);
    assert_eq!(o.failed[0].error.as_deref(), Some("timeout"));
    assert!(o.failed[0].user_id.starts_with("u"));

    let cut = store
        .subject_outcomes(DEFAULT_TENANT, "coupon", 7, 5, 0)
        .await
        .unwrap();
    assert!(cut.capped);
    assert_eq!(cut.counted, 7);
    assert_eq!(cut.by_state.iter().map(|s| s.1).sum::<u64>(), 7);
    assert!(cut.failed.is_empty());

    let none = store
        .subject_outcomes(DEFAULT_TENANT, "missing", 1000, 5, 5)
        .await
        .unwrap();
    assert_eq!(none.counted, 0);
    assert!(none.by_state.is_empty());

    // The cheap count: failed and dead, in the subject's due range, capped.
    let (from, until) = (START - 60 * MIN, START);
    let failures = |cap| store.subject_failures(DEFAULT_TENANT, "coupon", from, until, cap);
    assert_eq!(failures(100).await.unwrap(), 5);
    assert_eq!(failures(2).await.unwrap(), 2);
    assert_eq!(
        store
            .subject_failures(DEFAULT_TENANT, "coupon", START + 1, START + MIN, 100)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .subject_failures(DEFAULT_TENANT, "other", from, until, 100)
            .await
            .unwrap(),
        12
    );
}
