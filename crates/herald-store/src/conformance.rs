//! The store conformance suite: one set of tests every backend must pass.
//!
//! The test bodies are plain `async fn`s in [`suite`], each taking a fresh, empty
//! store and panicking on a failed check. [`store_conformance_tests!`] turns them
//! into one `#[tokio::test]` per case for a backend. A backend's test file only
//! needs a factory that returns a new empty store plus a guard that keeps whatever
//! backs it (a temporary directory, a scratch database) alive for the test:
//!
//! ```ignore
//! async fn fresh_store() -> (std::sync::Arc<dyn herald_store::Store>, tempfile::TempDir) {
//!     let dir = tempfile::tempdir().unwrap();
//!     let path = dir.path().join("herald.db");
//!     let store = herald_store::sqlite::SqliteStore::open(&path, &Default::default())
//!         .await
//!         .unwrap();
//!     (std::sync::Arc::new(store), dir)
//! }
//!
//! herald_store::store_conformance_tests!(fresh_store, second_handle);
//! ```
//!
//! The crate that invokes the macro must depend on `tokio` (with the `macros` and
//! `rt-multi-thread` features). Adding a backend is one such invocation.

/// Expands to one `#[tokio::test]` per conformance case. `$make` is a function
/// (or closure) with no arguments returning a future of
/// `(Arc<dyn Store>, Guard)`; it is called once per test, must give an empty
/// store, and the guard is dropped when the test ends. `$second` takes
/// `(&Arc<dyn Store>, &Guard)` and returns a future of another handle on the
/// same database, for the cases where two nodes race.
#[macro_export]
macro_rules! store_conformance_tests {
    ($make:expr, $second:expr) => {
        $crate::store_conformance_tests!(@cases $make;
            heartbeat_lists_live_nodes,
            leave_releases_the_nodes_shards,
            shards_change_hands_only_when_free_or_expired,
            renewing_keeps_the_epoch_and_a_lost_shard_is_not_renewed,
            released_shards_are_free_with_a_new_epoch,
            a_stale_epoch_is_fenced_off,
            named_leases_have_one_holder_at_a_time,
        );
        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn concurrent_claims_from_two_handles() {
            let (a, guard) = ($make)().await;
            let b = ($second)(&a, &guard).await;
            $crate::conformance::suite::concurrent_claims_from_two_handles(a, b).await;
            drop(guard);
        }
        $crate::store_conformance_tests!(@cases $make;
            insert_then_get_round_trips,
            get_unknown_timer_is_none,
            ids_are_unique_and_increasing,
            idempotency_key_across_batches,
            idempotency_key_within_one_batch,
            distinct_keys_make_distinct_timers,
            timers_without_key_are_always_new,
            existing_is_the_stored_timer_as_it_is_now,
            cancel_pending_timer,
            cancel_twice_is_not_cancellable,
            cancel_unknown_is_not_found,
            cancel_finished_timer_is_not_cancellable,
            cancelled_timers_are_not_due_nor_fetched,
            batch_results_come_in_op_order,
            empty_batches_are_fine,
            load_due_orders_by_due_at_then_id,
            load_due_until_is_exclusive,
            load_due_respects_limit,
            load_due_keyset_pages_see_every_timer_once,
            load_due_cursor_past_the_end_is_empty,
            load_due_sees_a_retry_at_its_new_time,
            load_due_only_returns_owned_shards,
            fetch_pending_returns_only_pending,
            fetch_pending_ignores_unknown_ids_and_empty_input,
            fetch_pending_handles_many_ids,
            complete_done,
            complete_retry_then_done,
            deferrals_do_not_use_attempts,
            complete_failed_keeps_error,
            complete_dead_keeps_error,
            duplicate_completion_is_logged_but_not_applied,
            out_of_order_attempt_is_not_applied,
            completion_does_not_resurrect_a_cancelled_timer,
            completion_for_unknown_timer_is_logged,
            completions_in_one_batch_apply_in_order,
            deliveries_for_lists_every_attempt_in_order,
            count_by_state_counts_each_state,
            init_shards_first_value_sticks,
            concurrent_applies_all_land,
            a_batch_becomes_visible_at_once,
            put_subject_creates_then_updates,
            get_subjects_returns_those_that_exist,
            add_reminder_creates_a_timer_before_the_start,
            adding_a_set_bit_is_reminder_exists,
            add_reminder_without_subject_is_subject_not_found,
            add_reminder_too_late,
            keyed_reminder_timers_honour_their_key,
            moving_a_subject_moves_only_its_pending_timers,
            delete_subject_cancels_and_unsubscribes,
            cancel_one_bit_leaves_the_other,
            cancel_all_bits_removes_the_subscription,
            cancel_reminders_on_missing_is_not_found,
            user_reminders_orders_by_subject_then_bit_and_limits,
            pending_reminders_follow_user_channel_and_range,
            one_batch_sees_its_own_subjects_and_reminders,
            many_reminders_in_one_batch,
            reminder_bits_use_the_whole_word_and_a_bad_bit_changes_nothing,
        );
        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn concurrent_reminder_adds_from_two_handles() {
            let (a, guard) = ($make)().await;
            let b = ($second)(&a, &guard).await;
            $crate::conformance::suite::concurrent_reminder_adds_from_two_handles(a, b).await;
            drop(guard);
        }
        $crate::store_conformance_tests!(@campaign $make;
            audiences_are_uploaded_in_chunks_sealed_and_sliced,
            unsealed_audiences_make_no_job_and_unused_ones_can_be_dropped,
            a_job_over_an_empty_audience_is_done_at_once,
            rules_are_versioned,
            plan_task_is_unique_and_only_for_the_current_enabled_version,
            rule_tasks_are_newest_first,
            disabling_cancels_pending_tasks_not_running_ones,
            plan_candidates_say_what_the_planner_needs,
            finish_rule_only_without_active_tasks,
            due_tasks_are_oldest_first,
            start_task_checks_the_rule_then_starts_a_job,
            job_segments_tile_the_audience,
            claims_take_the_highest_priority_then_the_lowest_id,
            claims_skip_jobs_past_their_deadline,
            record_sends_counts_every_change_exactly,
            a_write_after_the_lease_was_reissued_is_lost_but_logged,
            finishing_segments_ends_them_done_or_partial_and_ends_the_job,
            abandoned_segments_are_reissued_from_the_first_retry_or_the_cursor,
            the_sweep_ends_a_job_left_with_nothing_to_do,
            the_sweep_handles_at_most_limit_segments_per_kind,
            partial_segments_are_retried_with_backoff_until_max_attempts,
            jobs_past_their_deadline_expire,
            cancelling_a_job_cancels_what_is_left,
        );
        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn concurrent_segment_claims_from_two_handles() {
            let (a, guard) = ($make)().await;
            let b = ($second)(&a, &guard).await;
            $crate::conformance_campaign::suite::concurrent_segment_claims_from_two_handles(a, b)
                .await;
            drop(guard);
        }
        $crate::store_conformance_tests!(@provider $make;
            channel_tokens_are_upserted_and_read_back,
            expiring_a_token_needs_the_token_that_failed,
            final_status_reaches_both_send_logs_by_channel_and_msgid,
            a_repeated_callback_keeps_its_first_time_and_recalled_stays_recalled,
            get_delivery_reads_one_send_log_row,
            only_a_delivered_row_with_a_msgid_can_be_recalled,
        );
        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn concurrent_refreshers_on_two_handles_fetch_once() {
            let (a, guard) = ($make)().await;
            let b = ($second)(&a, &guard).await;
            $crate::conformance_provider::suite::concurrent_refreshers_on_two_handles_fetch_once(
                a, b,
            )
            .await;
            drop(guard);
        }
    };
    (@provider $make:expr; $($case:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let (store, guard) = ($make)().await;
                $crate::conformance_provider::suite::$case(store).await;
                drop(guard);
            }
        )*
    };
    (@campaign $make:expr; $($case:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let (store, guard) = ($make)().await;
                $crate::conformance_campaign::suite::$case(store).await;
                drop(guard);
            }
        )*
    };
    (@cases $make:expr; $($case:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let (store, guard) = ($make)().await;
                $crate::conformance::suite::$case(store).await;
                drop(guard);
            }
        )*
    };
}

/// Builders shared by the suite (and usable by other crates' tests).
pub mod fixtures {
    use herald_core::TimerKind;
    use herald_core::reminder::{ChannelType, Slot};
    use herald_core::timer::DEFAULT_PRIORITY;

    use crate::{
        Completion, CompletionOutcome, NewReminder, NewTimer, PutSubject, TimerRecord, WriteOp,
        WriteResult,
    };

    /// Every shard a fixture can use.
    pub fn all_shards() -> herald_core::ShardSet {
        herald_core::ShardSet::all(u16::MAX)
    }

    /// A plain timer due at `due_at`, without an idempotency key.
    pub fn timer(due_at: i64) -> NewTimer {
        NewTimer {
            shard: (due_at.rem_euclid(16)) as u16,
            due_at,
            priority: DEFAULT_PRIORITY,
            kind: TimerKind::Timer,
            channel: "webhook".into(),
            recipient: "https://example.test/hook".into(),
            message: r#"{"text":"hello"}"#.into(),
            idempotency_key: None,
            created_at: 1_000,
        }
    }

    /// A timer with an idempotency key.
    pub fn keyed(due_at: i64, key: &str) -> NewTimer {
        NewTimer {
            idempotency_key: Some(key.into()),
            ..timer(due_at)
        }
    }

    pub fn inserts(timers: impl IntoIterator<Item = NewTimer>) -> Vec<WriteOp> {
        timers.into_iter().map(WriteOp::InsertTimer).collect()
    }

    /// The record of a `Created` result; panics on anything else.
    pub fn created(result: &WriteResult) -> TimerRecord {
        match result {
            WriteResult::Created(r) => r.clone(),
            other => panic!("expected Created, got {other:?}"),
        }
    }

    /// A subject starting at `start_at`, put at time 1,000.
    pub fn subject(subject_id: &str, start_at: i64) -> PutSubject {
        PutSubject {
            subject_id: subject_id.into(),
            start_at,
            title: Some(format!("Coupon {subject_id} opens")),
            data: Some(r#"{"coupon":"50% off","n":[1,2]}"#.into()),
            at: 1_000,
        }
    }

    /// `user` asks to be reminded of `subject` on an app push `lead_minutes`
    /// before it starts: the bit is `Slot::bit`, the timer a reminder on
    /// channel `app` addressed to the user (its `due_at` is left for the store
    /// to set). `not_before` is 0, so only a start before the epoch is too late.
    pub fn reminder(user: &str, subject: &str, lead_minutes: i64) -> NewReminder {
        reminder_on(user, subject, ChannelType::App, lead_minutes)
    }

    /// [`reminder`] on another channel type (the channel name is the type's).
    pub fn reminder_on(
        user: &str,
        subject: &str,
        channel_type: ChannelType,
        lead_minutes: i64,
    ) -> NewReminder {
        let slot = Slot::new(channel_type, lead_minutes).expect("a valid reminder slot");
        NewReminder {
            user_id: user.into(),
            subject_id: subject.into(),
            bit: slot.bit(),
            lead_ms: slot.lead_ms(),
            timer: NewTimer {
                shard: (user.bytes().map(u16::from).sum::<u16>()) % 16,
                due_at: 0,
                priority: DEFAULT_PRIORITY,
                kind: TimerKind::Reminder,
                channel: channel_type.as_str().into(),
                recipient: user.into(),
                message: format!(r#"{{"subject":"{subject}","lead":{lead_minutes}}}"#),
                idempotency_key: None,
                created_at: 2_000,
            },
            not_before: 0,
        }
    }

    /// The mask of one (type, lead) slot.
    pub fn slot_mask(channel_type: ChannelType, lead_minutes: i64) -> u64 {
        Slot::new(channel_type, lead_minutes)
            .expect("a valid reminder slot")
            .mask()
    }

    /// A finished attempt of `timer`, ending at `at`.
    pub fn completion(
        timer: &TimerRecord,
        attempt: u32,
        outcome: CompletionOutcome,
        at: i64,
    ) -> Completion {
        let error = match outcome {
            CompletionOutcome::Done => None,
            _ => Some(format!("attempt {attempt} failed")),
        };
        Completion {
            timer_id: timer.id,
            attempt,
            outcome,
            channel: timer.channel.clone(),
            idempotency_key: timer.delivery_key(),
            provider_msgid: Some(format!("msg-{}-{attempt}", timer.id)),
            status: Some(if error.is_none() { 200 } else { 503 }),
            error,
            started_at: at - 7,
            finished_at: at,
            fence: None,
        }
    }
}

/// The test bodies. Each takes a fresh, empty store.
pub mod suite {
    use std::collections::{HashMap, HashSet};
    use std::sync::Arc;

    use herald_core::reminder::{ChannelType, Slot};
    use herald_core::{TimerKind, TimerState};

    use super::fixtures::*;
    use crate::{
        Applied, CompletionOutcome, DueCursor, DueEntry, Fence, MergeProbe, NewReminder, NewTimer,
        PutSubject, Store, SubjectRecord, TimerRecord, WriteOp, WriteResult,
    };

    type S = Arc<dyn Store>;

    async fn insert_all(store: &S, timers: impl IntoIterator<Item = NewTimer>) -> Vec<TimerRecord> {
        let results = store.apply(inserts(timers)).await.expect("apply");
        results.iter().map(created).collect()
    }

    async fn insert_one(store: &S, t: NewTimer) -> TimerRecord {
        insert_all(store, [t]).await.remove(0)
    }

    async fn get(store: &S, id: i64) -> TimerRecord {
        store
            .get_timer(id)
            .await
            .expect("get_timer")
            .unwrap_or_else(|| panic!("timer {id} missing"))
    }

    async fn cancel(store: &S, id: i64, at: i64) -> WriteResult {
        let mut r = store
            .apply(vec![WriteOp::CancelTimer { id, at }])
            .await
            .expect("apply cancel");
        assert_eq!(r.len(), 1);
        r.remove(0)
    }

    async fn all_due(store: &S, until: i64) -> Vec<DueEntry> {
        store
            .load_due(&all_shards(), None, until, 1_000_000)
            .await
            .expect("load_due")
    }

    fn ids(entries: &[DueEntry]) -> Vec<i64> {
        entries.iter().map(|e| e.id).collect()
    }

    async fn counts(store: &S) -> HashMap<TimerState, u64> {
        let counts = store.count_by_state().await.expect("count_by_state");
        let map: HashMap<_, _> = counts.iter().copied().collect();
        assert_eq!(map.len(), counts.len(), "a state listed twice: {counts:?}");
        assert!(
            counts.iter().all(|&(_, n)| n > 0),
            "zero counts: {counts:?}"
        );
        map
    }

    pub async fn insert_then_get_round_trips(store: S) {
        let full = NewTimer {
            shard: u16::MAX,
            due_at: 1_700_000_000_123,
            priority: 9,
            kind: TimerKind::Timer,
            channel: "wecom".into(),
            recipient: "用户-42 'quoted' \"double\"".into(),
            message: r#"{"text":"héllo ✓","n":[1,2,3],"nested":{"a":null}}"#.into(),
            idempotency_key: Some("order-7781-reminder".into()),
            created_at: 1_699_999_999_001,
        };
        let bare = NewTimer {
            shard: 0,
            due_at: 0,
            priority: 0,
            kind: TimerKind::Timer,
            channel: "log".into(),
            recipient: String::new(),
            message: "{}".into(),
            idempotency_key: None,
            created_at: 0,
        };
        for t in [full, bare] {
            let rec = insert_one(&store, t.clone()).await;
            let expected = t.into_record(rec.id);
            assert_eq!(rec, expected, "Created record");
            assert_eq!(get(&store, rec.id).await, expected, "stored record");
        }
    }

    pub async fn get_unknown_timer_is_none(store: S) {
        assert_eq!(store.get_timer(1).await.unwrap(), None);
        let rec = insert_one(&store, timer(10)).await;
        assert_eq!(store.get_timer(rec.id + 1000).await.unwrap(), None);
        assert_eq!(store.get_timer(-1).await.unwrap(), None);
    }

    pub async fn ids_are_unique_and_increasing(store: S) {
        let mut all = Vec::new();
        for batch in 0..3 {
            // Due times deliberately out of order: ids follow insertion, not due_at.
            let recs = insert_all(&store, (0..50).map(|i| timer(10_000 - batch * 100 - i))).await;
            all.extend(recs.iter().map(|r| r.id));
        }
        assert_eq!(all.len(), 150);
        assert!(
            all.windows(2).all(|w| w[0] < w[1]),
            "ids not increasing: {all:?}"
        );
        for id in all {
            assert_eq!(get(&store, id).await.id, id);
        }
    }

    pub async fn idempotency_key_across_batches(store: S) {
        let first = insert_one(&store, keyed(100, "k")).await;
        // A different due time: the request is a retry of the first, which wins.
        let again = store.apply(inserts([keyed(999, "k")])).await.unwrap();
        assert_eq!(again, vec![WriteResult::Existing(first.clone())]);
        assert_eq!(get(&store, first.id).await.due_at, 100);
        assert_eq!(ids(&all_due(&store, i64::MAX).await), vec![first.id]);
    }

    pub async fn idempotency_key_within_one_batch(store: S) {
        let r = store
            .apply(inserts([keyed(100, "k"), timer(50), keyed(200, "k")]))
            .await
            .unwrap();
        assert_eq!(r.len(), 3);
        let first = created(&r[0]);
        created(&r[1]);
        assert_eq!(r[2], WriteResult::Existing(first.clone()));
        let due = all_due(&store, i64::MAX).await;
        assert_eq!(due.len(), 2);
        assert!(due.iter().any(|e| e.id == first.id && e.due_at == 100));
    }

    pub async fn distinct_keys_make_distinct_timers(store: S) {
        let a = insert_one(&store, keyed(100, "a")).await;
        let b = insert_one(&store, keyed(100, "b")).await;
        let r = store
            .apply(inserts([keyed(100, "c"), keyed(100, "A")]))
            .await
            .unwrap();
        let c = created(&r[0]);
        let upper_a = created(&r[1]); // keys are case-sensitive
        let set: HashSet<i64> = [a.id, b.id, c.id, upper_a.id].into();
        assert_eq!(set.len(), 4);
        assert_eq!(all_due(&store, i64::MAX).await.len(), 4);
    }

    pub async fn timers_without_key_are_always_new(store: S) {
        let same = timer(100);
        let r = store
            .apply(inserts([same.clone(), same.clone()]))
            .await
            .unwrap();
        let a = created(&r[0]);
        let b = created(&r[1]);
        let c = insert_one(&store, same).await;
        assert!(a.id != b.id && b.id != c.id && a.id != c.id);
        assert_eq!(all_due(&store, i64::MAX).await.len(), 3);
    }

    pub async fn existing_is_the_stored_timer_as_it_is_now(store: S) {
        let first = insert_one(&store, keyed(100, "k")).await;
        let cancelled = match cancel(&store, first.id, 150).await {
            WriteResult::Cancelled(r) => r,
            other => panic!("expected Cancelled, got {other:?}"),
        };
        // The key still belongs to the cancelled timer: nothing new is created.
        let r = store.apply(inserts([keyed(300, "k")])).await.unwrap();
        assert_eq!(r, vec![WriteResult::Existing(cancelled.clone())]);
        assert_eq!(cancelled.state, TimerState::Cancelled);
        assert!(all_due(&store, i64::MAX).await.is_empty());
    }

    pub async fn cancel_pending_timer(store: S) {
        let rec = insert_one(&store, keyed(500, "k")).await;
        let expected = TimerRecord {
            state: TimerState::Cancelled,
            updated_at: 2_000,
            ..rec.clone()
        };
        assert_eq!(
            cancel(&store, rec.id, 2_000).await,
            WriteResult::Cancelled(expected.clone())
        );
        assert_eq!(get(&store, rec.id).await, expected);
    }

    pub async fn cancel_twice_is_not_cancellable(store: S) {
        let rec = insert_one(&store, timer(500)).await;
        let first = match cancel(&store, rec.id, 2_000).await {
            WriteResult::Cancelled(r) => r,
            other => panic!("expected Cancelled, got {other:?}"),
        };
        // The second cancel changes nothing, not even updated_at.
        assert_eq!(
            cancel(&store, rec.id, 3_000).await,
            WriteResult::NotCancellable(first.clone())
        );
        assert_eq!(get(&store, rec.id).await, first);
    }

    pub async fn cancel_unknown_is_not_found(store: S) {
        assert_eq!(cancel(&store, 42, 1).await, WriteResult::NotFound);
        let rec = insert_one(&store, timer(500)).await;
        assert_eq!(cancel(&store, rec.id + 1, 1).await, WriteResult::NotFound);
        assert_eq!(get(&store, rec.id).await.state, TimerState::Pending);
    }

    pub async fn cancel_finished_timer_is_not_cancellable(store: S) {
        let rec = insert_one(&store, timer(500)).await;
        let applied = store
            .complete(vec![completion(&rec, 1, CompletionOutcome::Done, 600)])
            .await
            .unwrap();
        assert_eq!(applied, vec![Applied::Yes]);
        let done = get(&store, rec.id).await;
        assert_eq!(done.state, TimerState::Done);
        assert_eq!(
            cancel(&store, rec.id, 700).await,
            WriteResult::NotCancellable(done.clone())
        );
        assert_eq!(get(&store, rec.id).await, done);
    }

    pub async fn cancelled_timers_are_not_due_nor_fetched(store: S) {
        let recs = insert_all(&store, [timer(100), timer(100), timer(200)]).await;
        cancel(&store, recs[1].id, 50).await;
        let due = all_due(&store, i64::MAX).await;
        assert_eq!(ids(&due), vec![recs[0].id, recs[2].id]);
        let all: Vec<i64> = recs.iter().map(|r| r.id).collect();
        let mut fetched: Vec<i64> = store
            .fetch_pending(&all)
            .await
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect();
        fetched.sort_unstable();
        assert_eq!(fetched, vec![recs[0].id, recs[2].id]);
    }

    pub async fn batch_results_come_in_op_order(store: S) {
        let pending = insert_one(&store, keyed(100, "old")).await;
        let r = store
            .apply(vec![
                WriteOp::InsertTimer(timer(300)),
                WriteOp::CancelTimer {
                    id: 999_999,
                    at: 10,
                },
                WriteOp::InsertTimer(keyed(400, "old")),
                WriteOp::CancelTimer {
                    id: pending.id,
                    at: 20,
                },
                WriteOp::CancelTimer {
                    id: pending.id,
                    at: 30,
                },
                WriteOp::InsertTimer(keyed(500, "new")),
            ])
            .await
            .unwrap();
        assert_eq!(r.len(), 6);
        let a = created(&r[0]);
        assert_eq!(a.due_at, 300);
        assert_eq!(r[1], WriteResult::NotFound);
        assert_eq!(r[2], WriteResult::Existing(pending.clone()));
        let cancelled = TimerRecord {
            state: TimerState::Cancelled,
            updated_at: 20,
            ..pending.clone()
        };
        assert_eq!(r[3], WriteResult::Cancelled(cancelled.clone()));
        assert_eq!(r[4], WriteResult::NotCancellable(cancelled));
        let b = created(&r[5]);
        assert!(a.id < b.id);
        assert_eq!(ids(&all_due(&store, i64::MAX).await), vec![a.id, b.id]);
    }

    pub async fn empty_batches_are_fine(store: S) {
        assert!(store.apply(Vec::new()).await.unwrap().is_empty());
        assert!(store.complete(Vec::new()).await.unwrap().is_empty());
        assert!(store.fetch_pending(&[]).await.unwrap().is_empty());
        assert!(counts(&store).await.is_empty());
    }

    pub async fn load_due_orders_by_due_at_then_id(store: S) {
        let recs = insert_all(
            &store,
            [500, 300, 300, 900, -100, 300, 0].into_iter().map(timer),
        )
        .await;
        let mut expected: Vec<(i64, i64)> = recs.iter().map(|r| (r.due_at, r.id)).collect();
        expected.sort_unstable();
        let due = all_due(&store, i64::MAX).await;
        let got: Vec<(i64, i64)> = due.iter().map(|e| (e.due_at, e.id)).collect();
        assert_eq!(got, expected);
        for e in &due {
            let r = recs.iter().find(|r| r.id == e.id).unwrap();
            assert_eq!((e.shard, e.priority), (r.shard, r.priority));
        }
    }

    pub async fn load_due_until_is_exclusive(store: S) {
        let recs = insert_all(&store, [99, 100, 100, 101].into_iter().map(timer)).await;
        assert_eq!(ids(&all_due(&store, 100).await), vec![recs[0].id]);
        assert_eq!(
            ids(&all_due(&store, 101).await),
            vec![recs[0].id, recs[1].id, recs[2].id]
        );
        assert!(all_due(&store, 99).await.is_empty());
        // With a cursor too: the rest of the cursor's millisecond is cut by `until`.
        let after = Some(recs[1].cursor());
        assert!(
            store
                .load_due(&all_shards(), after, 100, 10)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            ids(&store.load_due(&all_shards(), after, 101, 10).await.unwrap()),
            vec![recs[2].id]
        );
    }

    pub async fn load_due_respects_limit(store: S) {
        let recs = insert_all(&store, (0..20).map(|i| timer(i % 4))).await;
        let mut expected: Vec<(i64, i64)> = recs.iter().map(|r| (r.due_at, r.id)).collect();
        expected.sort_unstable();
        for limit in [1, 5, 20, 21] {
            let due = store
                .load_due(&all_shards(), None, i64::MAX, limit)
                .await
                .unwrap();
            assert_eq!(due.len(), limit.min(20));
            let got: Vec<(i64, i64)> = due.iter().map(|e| (e.due_at, e.id)).collect();
            assert_eq!(got, expected[..limit.min(20)]);
        }
        assert!(
            store
                .load_due(&all_shards(), None, i64::MAX, 0)
                .await
                .unwrap()
                .is_empty()
        );
        let first = DueCursor {
            due_at: expected[0].0,
            id: expected[0].1,
        };
        assert!(
            store
                .load_due(&all_shards(), Some(first), i64::MAX, 0)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            store
                .load_due(&all_shards(), Some(first), i64::MAX, 3)
                .await
                .unwrap()
                .len(),
            3
        );
    }

    pub async fn load_due_keyset_pages_see_every_timer_once(store: S) {
        // Many timers share a due time, so pages start and end inside a millisecond.
        let recs = insert_all(&store, (0..240).map(|i| timer(1_000 + (i % 4) * 10))).await;
        // Some leave the pending set: cancelled, delivered, or retried past `until`.
        let mut gone = HashSet::new();
        let mut ops = Vec::new();
        for r in recs.iter().step_by(9) {
            ops.push(WriteOp::CancelTimer { id: r.id, at: 1 });
            gone.insert(r.id);
        }
        store.apply(ops).await.unwrap();
        let mut batch = Vec::new();
        let cancelled = gone.clone();
        for r in recs
            .iter()
            .skip(4)
            .step_by(11)
            .filter(|r| !cancelled.contains(&r.id))
        {
            let outcome = if r.id % 2 == 0 {
                CompletionOutcome::Done
            } else {
                CompletionOutcome::Retry { next_due_at: 9_999 }
            };
            batch.push(completion(r, 1, outcome, 2));
            gone.insert(r.id);
        }
        assert!(
            store
                .complete(batch)
                .await
                .unwrap()
                .iter()
                .all(|&b| b == Applied::Yes)
        );

        let mut expected: Vec<(i64, i64)> = recs
            .iter()
            .filter(|r| !gone.contains(&r.id))
            .map(|r| (r.due_at, r.id))
            .collect();
        expected.sort_unstable();
        for page in [1, 7, 60, 500] {
            let mut seen = Vec::new();
            let mut after = None;
            loop {
                let due = store
                    .load_due(&all_shards(), after, 5_000, page)
                    .await
                    .unwrap();
                assert!(due.len() <= page);
                let Some(last) = due.last() else { break };
                after = Some(last.cursor());
                seen.extend(due.iter().map(|e| (e.due_at, e.id)));
                // A cursor that does not move would loop forever.
                assert!(
                    seen.len() <= expected.len(),
                    "page size {page}: pages repeat"
                );
            }
            assert_eq!(seen, expected, "page size {page}");
        }
    }

    pub async fn load_due_cursor_past_the_end_is_empty(store: S) {
        let recs = insert_all(&store, [10, 20, 20].into_iter().map(timer)).await;
        let last = recs[2].cursor();
        assert!(
            store
                .load_due(&all_shards(), Some(last), i64::MAX, 10)
                .await
                .unwrap()
                .is_empty()
        );
        let beyond = DueCursor {
            due_at: 20,
            id: i64::MAX,
        };
        assert!(
            store
                .load_due(&all_shards(), Some(beyond), i64::MAX, 10)
                .await
                .unwrap()
                .is_empty()
        );
        let before_all = DueCursor {
            due_at: i64::MIN,
            id: i64::MIN,
        };
        assert_eq!(
            store
                .load_due(&all_shards(), Some(before_all), i64::MAX, 10)
                .await
                .unwrap()
                .len(),
            3
        );
        // A cursor between ids at the same due time.
        let between = DueCursor {
            due_at: 20,
            id: recs[1].id,
        };
        assert_eq!(
            ids(&store
                .load_due(&all_shards(), Some(between), i64::MAX, 10)
                .await
                .unwrap()),
            vec![recs[2].id]
        );
    }

    pub async fn load_due_sees_a_retry_at_its_new_time(store: S) {
        let recs = insert_all(&store, [100, 200].into_iter().map(timer)).await;
        let retry = CompletionOutcome::Retry { next_due_at: 300 };
        let applied = store
            .complete(vec![completion(&recs[0], 1, retry, 150)])
            .await
            .unwrap();
        assert_eq!(applied, vec![Applied::Yes]);
        let due = all_due(&store, i64::MAX).await;
        let got: Vec<(i64, i64)> = due.iter().map(|e| (e.due_at, e.id)).collect();
        assert_eq!(got, vec![(200, recs[1].id), (300, recs[0].id)]);
        assert_eq!(ids(&all_due(&store, 300).await), vec![recs[1].id]);
    }

    /// A node that owns some shards pages through exactly their timers.
    pub async fn load_due_only_returns_owned_shards(store: S) {
        // Shards follow due_at % 16 in the fixtures; many timers share a due time.
        let recs = insert_all(&store, (0..320).map(|i| timer(2_000 + (i % 40)))).await;
        let mut owned = herald_core::ShardSet::none(16);
        for s in [1, 5, 9, 15] {
            owned.insert(s);
        }
        let mut expected: Vec<i64> = recs
            .iter()
            .filter(|r| owned.contains(r.shard))
            .map(|r| r.id)
            .collect();
        expected.sort_by_key(|id| recs.iter().find(|r| r.id == *id).map(|r| (r.due_at, r.id)));
        let mut got = Vec::new();
        let mut after = None;
        loop {
            let page = store.load_due(&owned, after, i64::MAX, 7).await.unwrap();
            assert!(
                page.iter().all(|e| owned.contains(e.shard)),
                "a page held another shard"
            );
            got.extend(page.iter().map(|e| e.id));
            match page.last() {
                Some(last) if page.len() == 7 => after = Some(last.cursor()),
                _ => break,
            }
            assert!(got.len() <= expected.len(), "paging does not end");
        }
        assert_eq!(got, expected);
        let empty = herald_core::ShardSet::none(16);
        assert!(
            store
                .load_due(&empty, None, i64::MAX, 100)
                .await
                .unwrap()
                .is_empty()
        );
    }

    pub async fn fetch_pending_returns_only_pending(store: S) {
        let recs = insert_all(&store, (0..6).map(|i| keyed(100 + i, &format!("k{i}")))).await;
        cancel(&store, recs[0].id, 5).await;
        let batch = vec![
            completion(&recs[1], 1, CompletionOutcome::Done, 200),
            completion(&recs[2], 1, CompletionOutcome::Failed, 200),
            completion(&recs[3], 1, CompletionOutcome::Dead, 200),
            completion(
                &recs[4],
                1,
                CompletionOutcome::Retry { next_due_at: 900 },
                200,
            ),
        ];
        store.complete(batch).await.unwrap();
        let all: Vec<i64> = recs.iter().map(|r| r.id).collect();
        let mut fetched = store.fetch_pending(&all).await.unwrap();
        fetched.sort_by_key(|r| r.id);
        let expected = vec![get(&store, recs[4].id).await, recs[5].clone()];
        assert_eq!(fetched, expected);
        assert_eq!(fetched[0].due_at, 900);
        assert_eq!(fetched[0].attempts, 1);
    }

    pub async fn fetch_pending_ignores_unknown_ids_and_empty_input(store: S) {
        assert!(store.fetch_pending(&[]).await.unwrap().is_empty());
        assert!(store.fetch_pending(&[1, 2, 3]).await.unwrap().is_empty());
        let rec = insert_one(&store, timer(10)).await;
        let got = store
            .fetch_pending(&[rec.id + 100, rec.id, -5, rec.id])
            .await
            .unwrap();
        assert_eq!(got, vec![rec]);
    }

    pub async fn fetch_pending_handles_many_ids(store: S) {
        let mut recs = Vec::new();
        for chunk in 0..3 {
            recs.extend(insert_all(&store, (0..400).map(|i| timer(chunk * 1000 + i))).await);
        }
        let cancelled: Vec<WriteOp> = recs
            .iter()
            .step_by(100)
            .map(|r| WriteOp::CancelTimer { id: r.id, at: 1 })
            .collect();
        let n_cancelled = cancelled.len();
        store.apply(cancelled).await.unwrap();
        // Unsorted, with repeats and unknown ids mixed in.
        let mut ask: Vec<i64> = recs.iter().rev().map(|r| r.id).collect();
        ask.extend(recs.iter().take(50).map(|r| r.id));
        ask.extend((1..=30).map(|i| -i));
        let got = store.fetch_pending(&ask).await.unwrap();
        assert_eq!(got.len(), recs.len() - n_cancelled);
        let unique: HashSet<i64> = got.iter().map(|r| r.id).collect();
        assert_eq!(unique.len(), got.len(), "a timer returned twice");
        assert!(got.iter().all(|r| r.state == TimerState::Pending));
        for r in &got {
            let orig = recs.iter().find(|o| o.id == r.id).unwrap();
            assert_eq!(r, orig);
        }
    }

    pub async fn complete_done(store: S) {
        let rec = insert_one(&store, keyed(100, "k")).await;
        let c = completion(&rec, 1, CompletionOutcome::Done, 180);
        assert_eq!(store.complete(vec![c]).await.unwrap(), vec![Applied::Yes]);
        let expected = TimerRecord {
            state: TimerState::Done,
            attempts: 1,
            last_error: None,
            updated_at: 180,
            delivered_at: Some(180),
            ..rec.clone()
        };
        assert_eq!(get(&store, rec.id).await, expected);
        assert!(all_due(&store, i64::MAX).await.is_empty());
    }

    /// Throttling and quiet hours push a timer back without counting the
    /// attempt: the send log has the row, the timer keeps its attempt count,
    /// and the next attempt carries the same number.
    pub async fn deferrals_do_not_use_attempts(store: S) {
        use crate::DeferReason;
        let rec = insert_one(&store, timer(100)).await;
        let throttled = completion(
            &rec,
            1,
            CompletionOutcome::Deferred {
                next_due_at: 5_000,
                reason: DeferReason::Throttled,
            },
            150,
        );
        assert_eq!(
            store.complete(vec![throttled]).await.unwrap(),
            vec![Applied::Yes]
        );
        let t = get(&store, rec.id).await;
        assert_eq!(
            (t.state, t.attempts, t.due_at),
            (TimerState::Pending, 0, 5_000)
        );
        let quiet = completion(
            &rec,
            1,
            CompletionOutcome::Deferred {
                next_due_at: 9_000,
                reason: DeferReason::QuietHours,
            },
            5_100,
        );
        assert_eq!(
            store.complete(vec![quiet]).await.unwrap(),
            vec![Applied::Yes]
        );
        assert_eq!(
            all_due(&store, i64::MAX).await,
            vec![DueEntry {
                id: rec.id,
                due_at: 9_000,
                shard: rec.shard,
                priority: rec.priority
            }]
        );
        // The attempt after the deferrals is still attempt 1.
        let done = completion(&rec, 1, CompletionOutcome::Done, 9_100);
        assert_eq!(
            store.complete(vec![done]).await.unwrap(),
            vec![Applied::Yes]
        );
        let t = get(&store, rec.id).await;
        assert_eq!((t.state, t.attempts), (TimerState::Done, 1));
        let log: Vec<String> = store
            .deliveries_for(rec.id)
            .await
            .unwrap()
            .into_iter()
            .map(|d| d.outcome)
            .collect();
        assert_eq!(log, ["throttled", "deferred", "delivered"]);
    }

    pub async fn complete_retry_then_done(store: S) {
        let rec = insert_one(&store, timer(100)).await;
        let r1 = completion(
            &rec,
            1,
            CompletionOutcome::Retry { next_due_at: 1_100 },
            150,
        );
        assert_eq!(store.complete(vec![r1]).await.unwrap(), vec![Applied::Yes]);
        let after_retry = get(&store, rec.id).await;
        assert_eq!(
            after_retry,
            TimerRecord {
                due_at: 1_100,
                attempts: 1,
                last_error: Some("attempt 1 failed".into()),
                updated_at: 150,
                ..rec.clone()
            }
        );
        assert_eq!(
            all_due(&store, i64::MAX).await,
            vec![DueEntry {
                id: rec.id,
                due_at: 1_100,
                shard: rec.shard,
                priority: rec.priority
            }]
        );
        let r2 = completion(
            &rec,
            2,
            CompletionOutcome::Retry { next_due_at: 2_100 },
            1_150,
        );
        let done = completion(&rec, 3, CompletionOutcome::Done, 2_150);
        assert_eq!(store.complete(vec![r2]).await.unwrap(), vec![Applied::Yes]);
        assert_eq!(
            store.complete(vec![done]).await.unwrap(),
            vec![Applied::Yes]
        );
        let fin = get(&store, rec.id).await;
        assert_eq!(fin.state, TimerState::Done);
        assert_eq!(fin.attempts, 3);
        assert_eq!(fin.due_at, 2_100);
        assert_eq!(fin.last_error, None);
        assert_eq!(fin.delivered_at, Some(2_150));
        assert_eq!(fin.updated_at, 2_150);
    }

    async fn final_outcome_keeps_error(store: S, outcome: CompletionOutcome, state: TimerState) {
        let rec = insert_one(&store, timer(100)).await;
        let retry = completion(&rec, 1, CompletionOutcome::Retry { next_due_at: 200 }, 150);
        let mut last = completion(&rec, 2, outcome, 250);
        last.error = Some("HTTP 410 gone".into());
        assert_eq!(
            store.complete(vec![retry]).await.unwrap(),
            vec![Applied::Yes]
        );
        assert_eq!(
            store.complete(vec![last]).await.unwrap(),
            vec![Applied::Yes]
        );
        let expected = TimerRecord {
            state,
            due_at: 200,
            attempts: 2,
            last_error: Some("HTTP 410 gone".into()),
            updated_at: 250,
            delivered_at: None,
            ..rec.clone()
        };
        assert_eq!(get(&store, rec.id).await, expected);
        assert!(all_due(&store, i64::MAX).await.is_empty());
        assert!(store.fetch_pending(&[rec.id]).await.unwrap().is_empty());
    }

    pub async fn complete_failed_keeps_error(store: S) {
        final_outcome_keeps_error(store, CompletionOutcome::Failed, TimerState::Failed).await;
    }

    pub async fn complete_dead_keeps_error(store: S) {
        final_outcome_keeps_error(store, CompletionOutcome::Dead, TimerState::Dead).await;
    }

    pub async fn duplicate_completion_is_logged_but_not_applied(store: S) {
        let rec = insert_one(&store, timer(100)).await;
        let retry = completion(&rec, 1, CompletionOutcome::Retry { next_due_at: 500 }, 150);
        assert_eq!(
            store.complete(vec![retry]).await.unwrap(),
            vec![Applied::Yes]
        );
        let after_first = get(&store, rec.id).await;
        // The same attempt reported again (e.g. by a node that lost its lease).
        let dup = completion(&rec, 1, CompletionOutcome::Done, 160);
        assert_eq!(
            store.complete(vec![dup]).await.unwrap(),
            vec![Applied::NotPending]
        );
        assert_eq!(get(&store, rec.id).await, after_first);
        let log = store.deliveries_for(rec.id).await.unwrap();
        assert_eq!(log.len(), 2);
        assert_eq!((log[0].attempt, log[0].outcome.as_str()), (1, "retry"));
        assert_eq!((log[1].attempt, log[1].outcome.as_str()), (1, "delivered"));
    }

    pub async fn out_of_order_attempt_is_not_applied(store: S) {
        let rec = insert_one(&store, timer(100)).await;
        let skip_ahead = completion(&rec, 2, CompletionOutcome::Done, 150);
        let zero = completion(&rec, 0, CompletionOutcome::Done, 150);
        assert_eq!(
            store.complete(vec![skip_ahead, zero]).await.unwrap(),
            vec![Applied::NotPending, Applied::NotPending]
        );
        assert_eq!(get(&store, rec.id).await, rec);
        assert_eq!(store.deliveries_for(rec.id).await.unwrap().len(), 2);
    }

    pub async fn completion_does_not_resurrect_a_cancelled_timer(store: S) {
        let rec = insert_one(&store, timer(100)).await;
        let cancelled = match cancel(&store, rec.id, 120).await {
            WriteResult::Cancelled(r) => r,
            other => panic!("expected Cancelled, got {other:?}"),
        };
        for outcome in [
            CompletionOutcome::Retry { next_due_at: 900 },
            CompletionOutcome::Done,
            CompletionOutcome::Dead,
        ] {
            let c = completion(&rec, 1, outcome, 150);
            assert_eq!(
                store.complete(vec![c]).await.unwrap(),
                vec![Applied::NotPending]
            );
        }
        assert_eq!(get(&store, rec.id).await, cancelled);
        assert!(all_due(&store, i64::MAX).await.is_empty());
        assert_eq!(store.deliveries_for(rec.id).await.unwrap().len(), 3);
    }

    pub async fn completion_for_unknown_timer_is_logged(store: S) {
        let ghost = TimerRecord {
            id: 777_777,
            ..fake_record()
        };
        let c = completion(&ghost, 1, CompletionOutcome::Done, 10);
        assert_eq!(
            store.complete(vec![c]).await.unwrap(),
            vec![Applied::NotPending]
        );
        assert_eq!(store.get_timer(ghost.id).await.unwrap(), None);
        let log = store.deliveries_for(ghost.id).await.unwrap();
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].timer_id, ghost.id);
    }

    fn fake_record() -> TimerRecord {
        let t = timer(5);
        TimerRecord {
            id: 0,
            shard: t.shard,
            due_at: t.due_at,
            priority: t.priority,
            kind: t.kind,
            state: TimerState::Pending,
            channel: t.channel,
            recipient: t.recipient,
            message: t.message,
            idempotency_key: None,
            attempts: 0,
            last_error: None,
            created_at: t.created_at,
            updated_at: t.created_at,
            delivered_at: None,
        }
    }

    pub async fn completions_in_one_batch_apply_in_order(store: S) {
        let recs = insert_all(&store, [100, 100].into_iter().map(timer)).await;
        let (a, b) = (&recs[0], &recs[1]);
        let batch = vec![
            completion(a, 1, CompletionOutcome::Retry { next_due_at: 400 }, 150),
            completion(b, 1, CompletionOutcome::Done, 155),
            completion(a, 2, CompletionOutcome::Done, 160),
            completion(b, 1, CompletionOutcome::Failed, 165), // stale
        ];
        assert_eq!(
            store.complete(batch).await.unwrap(),
            vec![
                Applied::Yes,
                Applied::Yes,
                Applied::Yes,
                Applied::NotPending
            ]
        );
        let a_now = get(&store, a.id).await;
        assert_eq!(
            (a_now.state, a_now.attempts, a_now.due_at),
            (TimerState::Done, 2, 400)
        );
        let b_now = get(&store, b.id).await;
        assert_eq!((b_now.state, b_now.attempts), (TimerState::Done, 1));
        assert_eq!(b_now.delivered_at, Some(155));
    }

    pub async fn deliveries_for_lists_every_attempt_in_order(store: S) {
        let recs = insert_all(&store, [keyed(100, "dk"), timer(100)]).await;
        let rec = &recs[0];
        let other = &recs[1];
        let mut sent = vec![
            completion(rec, 1, CompletionOutcome::Retry { next_due_at: 200 }, 150),
            completion(rec, 2, CompletionOutcome::Retry { next_due_at: 300 }, 250),
            completion(rec, 3, CompletionOutcome::Done, 350),
        ];
        sent[0].provider_msgid = None;
        sent[0].status = None;
        sent[1].error = Some("timeout".into());
        for c in &sent {
            // One completion per batch, interleaved with another timer's.
            let noise = completion(other, 1, CompletionOutcome::Failed, c.finished_at);
            store.complete(vec![c.clone(), noise]).await.unwrap();
        }
        let log = store.deliveries_for(rec.id).await.unwrap();
        assert_eq!(log.len(), 3);
        for (row, c) in log.iter().zip(&sent) {
            assert_eq!(row.timer_id, rec.id);
            assert_eq!(row.attempt, c.attempt);
            assert_eq!(row.channel, c.channel);
            assert_eq!(row.outcome, c.outcome.as_str());
            assert_eq!(row.idempotency_key, "dk");
            assert_eq!(row.provider_msgid, c.provider_msgid);
            assert_eq!(row.status, c.status);
            assert_eq!(row.error, c.error);
            assert_eq!(row.started_at, c.started_at);
            assert_eq!(row.finished_at, c.finished_at);
            assert_eq!((row.final_status.as_deref(), row.final_at), (None, None));
        }
        assert!(log.windows(2).all(|w| w[0].id < w[1].id));
        let other_log = store.deliveries_for(other.id).await.unwrap();
        assert_eq!(other_log.len(), 3);
        assert_eq!(other_log[0].idempotency_key, other.delivery_key());
        assert!(store.deliveries_for(999_999).await.unwrap().is_empty());
    }

    pub async fn count_by_state_counts_each_state(store: S) {
        assert!(counts(&store).await.is_empty());
        let recs = insert_all(&store, (0..10).map(timer)).await;
        assert_eq!(
            counts(&store).await,
            HashMap::from([(TimerState::Pending, 10)])
        );
        cancel(&store, recs[0].id, 1).await;
        cancel(&store, recs[1].id, 1).await;
        store
            .complete(vec![
                completion(&recs[2], 1, CompletionOutcome::Done, 5),
                completion(&recs[3], 1, CompletionOutcome::Done, 5),
                completion(&recs[4], 1, CompletionOutcome::Done, 5),
                completion(&recs[5], 1, CompletionOutcome::Failed, 5),
                completion(&recs[6], 1, CompletionOutcome::Dead, 5),
                completion(&recs[7], 1, CompletionOutcome::Retry { next_due_at: 50 }, 5),
            ])
            .await
            .unwrap();
        assert_eq!(
            counts(&store).await,
            HashMap::from([
                (TimerState::Pending, 3),
                (TimerState::Cancelled, 2),
                (TimerState::Done, 3),
                (TimerState::Failed, 1),
                (TimerState::Dead, 1),
            ])
        );
    }

    pub async fn init_shards_first_value_sticks(store: S) {
        assert_eq!(store.init_shards(64).await.unwrap(), 64);
        assert_eq!(store.init_shards(128).await.unwrap(), 64);
        assert_eq!(store.init_shards(1).await.unwrap(), 64);
        assert_eq!(store.init_shards(64).await.unwrap(), 64);
    }

    pub async fn concurrent_applies_all_land(store: S) {
        const TASKS: i64 = 4;
        const BATCHES: i64 = 10;
        const PER_BATCH: i64 = 100;
        let mut handles = Vec::new();
        for task in 0..TASKS {
            let store = Arc::clone(&store);
            handles.push(tokio::spawn(async move {
                let mut ids = Vec::new();
                for batch in 0..BATCHES {
                    let timers = (0..PER_BATCH).map(|i| {
                        let n = (task * BATCHES + batch) * PER_BATCH + i;
                        // Every task also races the others for the same shared keys.
                        if i == 0 {
                            keyed(n, &format!("shared-{batch}"))
                        } else {
                            keyed(n, &format!("t{task}-b{batch}-{i}"))
                        }
                    });
                    let results = store
                        .apply(inserts(timers))
                        .await
                        .expect("concurrent apply");
                    assert_eq!(results.len(), PER_BATCH as usize);
                    for r in results {
                        match r {
                            WriteResult::Created(t) | WriteResult::Existing(t) => ids.push(t.id),
                            other => panic!("unexpected {other:?}"),
                        }
                    }
                }
                ids
            }));
        }
        let mut all = HashSet::new();
        for h in handles {
            all.extend(h.await.expect("task"));
        }
        // Unique keys: TASKS * BATCHES * (PER_BATCH - 1) private + BATCHES shared.
        let expected = (TASKS * BATCHES * (PER_BATCH - 1) + BATCHES) as usize;
        assert_eq!(all.len(), expected);
        assert_eq!(
            counts(&store).await,
            HashMap::from([(TimerState::Pending, expected as u64)])
        );
        assert_eq!(all_due(&store, i64::MAX).await.len(), expected);
    }

    pub async fn a_batch_becomes_visible_at_once(store: S) {
        const BATCH: u64 = 250;
        const BATCHES: u64 = 20;
        let writer = {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                for b in 0..BATCHES {
                    let timers = (0..BATCH).map(|i| timer((b * BATCH + i) as i64));
                    let r = store.apply(inserts(timers)).await.expect("apply");
                    assert_eq!(r.len() as u64, BATCH);
                }
            })
        };
        // A reader never sees part of a batch.
        let mut observed = HashSet::new();
        loop {
            let finished = writer.is_finished();
            let n = counts(&store)
                .await
                .get(&TimerState::Pending)
                .copied()
                .unwrap_or(0);
            assert_eq!(n % BATCH, 0, "saw {n} pending: part of a batch");
            let due = store
                .load_due(&all_shards(), None, i64::MAX, usize::MAX)
                .await
                .unwrap();
            assert_eq!(due.len() as u64 % BATCH, 0, "load_due saw part of a batch");
            observed.insert(n);
            if finished {
                break;
            }
            tokio::task::yield_now().await;
        }
        writer.await.expect("writer");
        assert!(observed.contains(&(BATCH * BATCHES)));
    }

    // ---- Subjects and reminder subscriptions ----

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
        let mut got = store.get_subjects(&ids).await.expect("get_subjects");
        got.sort_by(|a, b| a.subject_id.cmp(&b.subject_id));
        got
    }

    /// (subject, bit, timer id) of a user's reminders, in the store's order.
    async fn subscriptions(store: &S, user: &str) -> Vec<(String, u8, i64)> {
        store
            .user_reminders(user, 1_000)
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
            subject_id: "coupon-1".into(),
            start_at: START,
            title: first.title.clone(),
            data: first.data.clone(),
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
        assert!(store.get_subjects(&[]).await.unwrap().is_empty());
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
        let listed = store.user_reminders("alice", 10).await.unwrap();
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
            assert_eq!(add(&store, r).await, WriteResult::TooLate { fire_at });
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
        let two = store.user_reminders("u", 2).await.unwrap();
        let two: Vec<(String, u8, i64)> = two
            .into_iter()
            .map(|r| (r.subject_id, r.bit, r.timer.id))
            .collect();
        assert_eq!(two, expected[..2]);
        assert!(store.user_reminders("u", 0).await.unwrap().is_empty());
        assert!(store.user_reminders("nobody", 10).await.unwrap().is_empty());
        // Every state is listed, with the timer as it is.
        let first = store.user_reminders("u", 1).await.unwrap().remove(0);
        store
            .complete(vec![completion(
                &first.timer,
                1,
                CompletionOutcome::Done,
                50,
            )])
            .await
            .unwrap();
        let again = store.user_reminders("u", 1).await.unwrap().remove(0);
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
                    user_id: "u".into(),
                    subject_id: "s".into(),
                    mask: m(5),
                    at: 3_000,
                },
                WriteOp::AddReminder(reminder("u", "s", 5)),
                WriteOp::AddReminder(reminder("u", "s", 5)),
                WriteOp::InsertTimer(timer(42)),
                WriteOp::DeleteSubject {
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

    // ---- Cluster membership, shard leases, fencing, named leases ----

    fn owners(leases: &[crate::ShardLease]) -> Vec<(u16, Option<String>, i64)> {
        leases
            .iter()
            .map(|l| (l.shard, l.owner.clone(), l.epoch))
            .collect()
    }

    pub async fn heartbeat_lists_live_nodes(store: S) {
        let live = store.heartbeat("a", 1_000, 100).await.unwrap();
        assert_eq!(live.len(), 1);
        assert_eq!(live[0].node_id, "a");
        assert_eq!(live[0].expires_at, 1_100);
        assert_eq!(live[0].started_at, 1_000);
        store.heartbeat("b", 1_050, 100).await.unwrap();
        let live = store.heartbeat("a", 1_120, 100).await.unwrap();
        let ids: Vec<&str> = live.iter().map(|n| n.node_id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        // A beat moves the expiry, not the start.
        assert_eq!((live[0].expires_at, live[0].started_at), (1_220, 1_000));
        // b stopped beating at 1_050 and expired at 1_150.
        let live = store.heartbeat("a", 1_160, 100).await.unwrap();
        let ids: Vec<&str> = live.iter().map(|n| n.node_id.as_str()).collect();
        assert_eq!(ids, ["a"]);
    }

    pub async fn leave_releases_the_nodes_shards(store: S) {
        store.heartbeat("a", 0, 1_000).await.unwrap();
        store.heartbeat("b", 0, 1_000).await.unwrap();
        let held = store.acquire_shards("a", &[1, 2], 0, 1_000).await.unwrap();
        assert_eq!(held.len(), 2);
        store.leave("a").await.unwrap();
        let live = store.heartbeat("b", 10, 1_000).await.unwrap();
        assert_eq!(live.len(), 1);
        let leases = store.shard_leases().await.unwrap();
        assert_eq!(owners(&leases), vec![(1, None, 2), (2, None, 2)]);
        // Free now, long before the old lease would have expired.
        let took = store.acquire_shards("b", &[1, 2], 20, 1_000).await.unwrap();
        assert_eq!(
            owners(&took),
            vec![(1, Some("b".into()), 3), (2, Some("b".into()), 3)]
        );
    }

    pub async fn shards_change_hands_only_when_free_or_expired(store: S) {
        let a = store.acquire_shards("a", &[0, 1, 2], 0, 100).await.unwrap();
        assert_eq!(
            owners(&a),
            vec![
                (0, Some("a".into()), 1),
                (1, Some("a".into()), 1),
                (2, Some("a".into()), 1)
            ]
        );
        assert!(a.iter().all(|l| l.lease_until == 100));
        // b gets only the free one while a's leases run.
        let b = store
            .acquire_shards("b", &[1, 2, 3], 50, 100)
            .await
            .unwrap();
        assert_eq!(owners(&b), vec![(3, Some("b".into()), 1)]);
        // After a's leases expire, b takes shard 1 and its epoch grows.
        let b = store.acquire_shards("b", &[1], 100, 100).await.unwrap();
        assert_eq!(owners(&b), vec![(1, Some("b".into()), 2)]);
        let all = store.shard_leases().await.unwrap();
        assert_eq!(
            owners(&all),
            vec![
                (0, Some("a".into()), 1),
                (1, Some("b".into()), 2),
                (2, Some("a".into()), 1),
                (3, Some("b".into()), 1)
            ]
        );
    }

    pub async fn renewing_keeps_the_epoch_and_a_lost_shard_is_not_renewed(store: S) {
        store.acquire_shards("a", &[5, 6], 0, 100).await.unwrap();
        // Acquiring one's own shard again is a renewal: same epoch, later expiry.
        let again = store.acquire_shards("a", &[5], 50, 100).await.unwrap();
        assert_eq!((again[0].epoch, again[0].lease_until), (1, 150));
        // Shard 6 expires at 100 and b takes it.
        store.acquire_shards("b", &[6], 120, 100).await.unwrap();
        let held = [Fence { shard: 5, epoch: 1 }, Fence { shard: 6, epoch: 1 }];
        let renewed = store.renew_shards("a", &held, 130, 100).await.unwrap();
        assert_eq!(owners(&renewed), vec![(5, Some("a".into()), 1)]);
        assert_eq!(renewed[0].lease_until, 230);
        let six = store
            .shard_leases()
            .await
            .unwrap()
            .into_iter()
            .find(|l| l.shard == 6)
            .unwrap();
        assert_eq!(
            (six.owner.as_deref(), six.epoch, six.lease_until),
            (Some("b"), 2, 220)
        );
    }

    pub async fn released_shards_are_free_with_a_new_epoch(store: S) {
        store.acquire_shards("a", &[7, 8], 0, 10_000).await.unwrap();
        // Releasing another node's shard does nothing.
        store.release_shards("b", &[7]).await.unwrap();
        store.release_shards("a", &[7]).await.unwrap();
        let leases = store.shard_leases().await.unwrap();
        assert_eq!(
            owners(&leases),
            vec![(7, None, 2), (8, Some("a".into()), 1)]
        );
        let b = store.acquire_shards("b", &[7, 8], 10, 100).await.unwrap();
        assert_eq!(owners(&b), vec![(7, Some("b".into()), 3)]);
    }

    pub async fn a_stale_epoch_is_fenced_off(store: S) {
        let t = insert_one(&store, timer(1_000)).await;
        let shard = t.shard;
        let a = store.acquire_shards("a", &[shard], 0, 100).await.unwrap();
        let old = Fence {
            shard,
            epoch: a[0].epoch,
        };
        // b takes the shard after a's lease expires: a's epoch is stale.
        let b = store.acquire_shards("b", &[shard], 200, 100).await.unwrap();
        let new = Fence {
            shard,
            epoch: b[0].epoch,
        };
        assert_eq!(new.epoch, old.epoch + 1);
        let mut late = completion(&t, 1, CompletionOutcome::Done, 250);
        late.fence = Some(old);
        assert_eq!(
            store.complete(vec![late]).await.unwrap(),
            vec![Applied::Fenced]
        );
        let still = store.get_timer(t.id).await.unwrap().unwrap();
        assert_eq!((still.state, still.attempts), (TimerState::Pending, 0));
        // The attempt itself is in the send log: it happened.
        assert_eq!(store.deliveries_for(t.id).await.unwrap().len(), 1);
        let mut current = completion(&t, 1, CompletionOutcome::Done, 260);
        current.fence = Some(new);
        assert_eq!(
            store.complete(vec![current]).await.unwrap(),
            vec![Applied::Yes]
        );
        let done = store.get_timer(t.id).await.unwrap().unwrap();
        assert_eq!(done.state, TimerState::Done);
        // A fence for a shard nobody ever leased is stale too.
        let u = insert_one(&store, timer(2_000)).await;
        let mut c = completion(&u, 1, CompletionOutcome::Done, 270);
        c.fence = Some(Fence {
            shard: 999,
            epoch: 1,
        });
        assert_eq!(
            store.complete(vec![c]).await.unwrap(),
            vec![Applied::Fenced]
        );
    }

    pub async fn named_leases_have_one_holder_at_a_time(store: S) {
        let a = store
            .acquire_lease("planner", "a", 0, 100)
            .await
            .unwrap()
            .unwrap();
        assert_eq!((a.holder.as_str(), a.epoch, a.lease_until), ("a", 1, 100));
        assert!(
            store
                .acquire_lease("planner", "b", 50, 100)
                .await
                .unwrap()
                .is_none()
        );
        // a renews: same epoch.
        let a = store
            .acquire_lease("planner", "a", 60, 100)
            .await
            .unwrap()
            .unwrap();
        assert_eq!((a.epoch, a.lease_until), (1, 160));
        // Expired: b takes it with a new epoch, and a cannot renew.
        let b = store
            .acquire_lease("planner", "b", 170, 100)
            .await
            .unwrap()
            .unwrap();
        assert_eq!((b.holder.as_str(), b.epoch), ("b", 2));
        assert!(
            store
                .acquire_lease("planner", "a", 180, 100)
                .await
                .unwrap()
                .is_none()
        );
        // a releasing b's lease does nothing; b releasing frees it at once.
        store.release_lease("planner", "a").await.unwrap();
        assert!(
            store
                .acquire_lease("planner", "a", 190, 100)
                .await
                .unwrap()
                .is_none()
        );
        store.release_lease("planner", "b").await.unwrap();
        let a = store
            .acquire_lease("planner", "a", 200, 100)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(a.epoch, 3);
        // Other names are independent.
        assert!(
            store
                .acquire_lease("sweeper", "b", 200, 100)
                .await
                .unwrap()
                .is_some()
        );
    }

    /// Two handles on one database race for the same shards and the same named
    /// lease: every shard ends with exactly one owner, and one holder wins.
    pub async fn concurrent_claims_from_two_handles(a: S, b: S) {
        let shards: Vec<u16> = (0..64).collect();
        let (sa, sb) = (shards.clone(), shards.clone());
        let (a2, b2) = (a.clone(), b.clone());
        let ta = tokio::spawn(async move { a2.acquire_shards("node-a", &sa, 1_000, 10_000).await });
        let tb = tokio::spawn(async move { b2.acquire_shards("node-b", &sb, 1_000, 10_000).await });
        let got_a = ta.await.unwrap().unwrap();
        let got_b = tb.await.unwrap().unwrap();
        assert_eq!(got_a.len() + got_b.len(), 64, "each shard is claimed once");
        let mut seen: Vec<u16> = got_a.iter().chain(got_b.iter()).map(|l| l.shard).collect();
        seen.sort_unstable();
        assert_eq!(seen, shards);
        let leases = a.shard_leases().await.unwrap();
        assert_eq!(leases.len(), 64);
        for l in &leases {
            let by_a = got_a.iter().any(|g| g.shard == l.shard);
            assert_eq!(
                l.owner.as_deref(),
                Some(if by_a { "node-a" } else { "node-b" })
            );
            assert_eq!(l.epoch, 1);
        }
        let (a3, b3) = (a.clone(), b.clone());
        let la =
            tokio::spawn(async move { a3.acquire_lease("sweeper", "node-a", 1_000, 10_000).await });
        let lb =
            tokio::spawn(async move { b3.acquire_lease("sweeper", "node-b", 1_000, 10_000).await });
        let (la, lb) = (la.await.unwrap().unwrap(), lb.await.unwrap().unwrap());
        assert!(
            la.is_some() ^ lb.is_some(),
            "exactly one holder: {la:?} {lb:?}"
        );
    }
}
