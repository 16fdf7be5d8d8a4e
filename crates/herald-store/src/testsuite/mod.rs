//! The conformance suite: one set of cases every backend must pass.
//!
//! Built only with the `testsuite` feature, so the product never carries it;
//! [`fixtures`] is also built for this crate's own unit tests. A case is a plain
//! `pub async fn` in its area's module that takes a fresh, empty store (two
//! handles on one database for the races) and panics on a failed check:
//!
//! - [`timers`]: inserts, idempotency keys, cancelling, the due index,
//!   completions and the send log;
//! - [`in_doubt`]: timers marked firing before their send, and resolving
//!   what a dead node left marked;
//! - [`timer_ops`]: search, dead letters, patch, replace by key, retry;
//! - [`reminders`]: subjects and reminder subscriptions;
//! - [`digests`]: placing digest timers, the digest member probe;
//! - [`cluster`]: membership, shard leases, fencing, named leases;
//! - [`tokens`]: channel tokens, final status from provider callbacks, recall;
//! - [`access`]: API keys;
//! - [`campaigns`]: audiences, rules, tasks, jobs, segments and the sweeper;
//! - [`retention`]: purging what is old, kind by kind, and deleting jobs;
//! - [`timer_counts`]: the timer counters against a real count.
//! - [`reports`]: delivery outcomes counted per day, channel, rule and job.
//! - [`templates`]: message template versions.
//! - [`calendars`]: working-day calendars.
//! - [`caps`]: frequency-cap counters.
//! - [`labels`]: jobs' names and categories; who made and changed rules,
//!   jobs and tasks.
//!
//! [`store_conformance_tests!`](crate::store_conformance_tests) is the one entry
//! point: it expands to one `#[tokio::test]` per case, grouped in a module per
//! area, for a backend. A backend's test file needs a factory that returns a new
//! empty store plus a guard that keeps whatever backs it (a temporary directory,
//! a scratch database) alive for the test, and a way to open a second handle:
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
//! `rt-multi-thread` features) and on this crate with the `testsuite` feature,
//! as a dev-dependency. Adding a backend is one such invocation.

pub mod fixtures;

#[cfg(feature = "testsuite")]
pub mod access;
#[cfg(feature = "testsuite")]
pub mod calendars;
#[cfg(feature = "testsuite")]
pub mod campaigns;
#[cfg(feature = "testsuite")]
pub mod caps;
#[cfg(feature = "testsuite")]
pub mod cluster;
#[cfg(feature = "testsuite")]
pub mod digests;
#[cfg(feature = "testsuite")]
pub mod directory;
#[cfg(feature = "testsuite")]
pub mod grants;
#[cfg(feature = "testsuite")]
pub mod in_doubt;
#[cfg(feature = "testsuite")]
pub mod labels;
#[cfg(feature = "testsuite")]
pub mod reminders;
#[cfg(feature = "testsuite")]
pub mod reports;
#[cfg(feature = "testsuite")]
pub mod retention;
#[cfg(feature = "testsuite")]
pub(crate) mod support;
#[cfg(feature = "testsuite")]
pub mod templates;
#[cfg(feature = "testsuite")]
pub mod timer_counts;
#[cfg(feature = "testsuite")]
pub mod timer_ops;
#[cfg(feature = "testsuite")]
pub mod timers;
#[cfg(feature = "testsuite")]
pub mod tokens;

/// Expands to one `#[tokio::test]` per conformance case, in a module per area
/// (`timers::complete_done`, `campaigns::rules_are_versioned`, ...), so
/// `cargo test cluster::` runs one area. `$make` is a function (or closure) with
/// no arguments returning a future of `(Arc<dyn Store>, Guard)`; it is called
/// once per test, must give an empty store, and the guard is dropped when the
/// test ends. `$second` takes `(&Arc<dyn Store>, &Guard)` and returns a future
/// of another handle on the same database, for the cases where two nodes race.
/// Both are named from the invoking module (each area module does `use super::*`).
#[cfg(feature = "testsuite")]
#[macro_export]
macro_rules! store_conformance_tests {
    ($make:expr, $second:expr) => {
        $crate::store_conformance_tests!(@area timers, $make, $second;
            cases: [
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
                a_route_step_moves_the_timer_on_in_one_write,
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
            ]
            races: []
        );
        $crate::store_conformance_tests!(@area grants, $make, $second;
            cases: [
                recordings_add_up_and_a_repeated_key_changes_nothing,
                a_mark_spends_one_grant_and_its_retries_none,
                without_a_grant_the_timer_is_not_marked,
                long_term_grants_need_no_count,
                answers_end_holds_as_they_say,
                a_timer_put_back_unsent_gives_its_grant_back,
            ]
            races: [two_nodes_never_spend_the_last_grant_twice]
        );
        $crate::store_conformance_tests!(@area in_doubt, $make, $second;
            cases: [
                a_marked_timer_leaves_the_due_index_and_completes,
                a_mark_under_a_stale_lease_is_fenced_off,
                resolving_ends_skipped_channels_in_doubt_and_resends_the_rest,
                an_in_doubt_timer_can_be_retried,
                a_timer_let_go_unsent_is_unmarked_back_to_pending,
            ]
            races: []
        );
        $crate::store_conformance_tests!(@area timer_ops, $make, $second;
            cases: [
                search_filters_pages_and_orders,
                patch_changes_only_a_pending_timer,
                replace_by_key_latest_wins_while_pending,
                retry_starts_a_new_series_and_keeps_the_log,
                retry_by_filter_and_dead_letters,
            ]
            races: []
        );
        $crate::store_conformance_tests!(@area reminders, $make, $second;
            cases: [
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
                subject_outcomes_count_states_and_rank_errors,
                pending_reminders_follow_user_channel_and_range,
                one_batch_sees_its_own_subjects_and_reminders,
                many_reminders_in_one_batch,
                reminder_bits_use_the_whole_word_and_a_bad_bit_changes_nothing,
                subjects_list_in_id_order_with_bounded_counts,
                a_fired_reminder_can_be_subscribed_again_after_a_move,
                subjects_keep_their_timing,
                subjects_keep_their_templates,
                reminder_batches_count_pending_reminders_and_page_them,
            ]
            races: [concurrent_reminder_adds_from_two_handles]
        );
        $crate::store_conformance_tests!(@area cluster, $make, $second;
            cases: [
                heartbeat_lists_live_nodes,
                leave_releases_the_nodes_shards,
                shards_change_hands_only_when_free_or_expired,
                renewing_keeps_the_epoch_and_a_lost_shard_is_not_renewed,
                released_shards_are_free_with_a_new_epoch,
                a_stale_epoch_is_fenced_off,
                named_leases_have_one_holder_at_a_time,
                a_new_incarnation_fences_off_the_old_one,
            ]
            races: [concurrent_claims_from_two_handles]
        );
        $crate::store_conformance_tests!(@area digests, $make, $second;
            cases: [
                a_digest_holds_its_timers_until_its_close,
                a_sliding_digest_moves_its_members_up_to_max_delay,
                a_keyed_digest_timer_is_created_once,
                a_daily_digest_closes_in_the_subscribers_zone,
                pending_digests_follow_recipient_channel_and_range,
            ]
            races: [concurrent_digest_creates_lose_nothing]
        );
        $crate::store_conformance_tests!(@area directory, $make, $second;
            cases: [
                subscribers_are_created_replaced_listed_and_deleted,
                conditional_writes_hold_only_over_their_version,
                meta_settings_are_read_and_replaced,
            ]
            races: [racing_conditional_writes_have_one_winner]
        );
        $crate::store_conformance_tests!(@area tokens, $make, $second;
            cases: [
                channel_tokens_are_upserted_and_read_back,
                expiring_a_token_needs_the_token_that_failed,
                final_status_reaches_both_send_logs_by_channel_and_msgid,
                a_repeated_callback_keeps_its_first_time_and_recalled_stays_recalled,
                get_delivery_reads_one_send_log_row,
                only_a_delivered_row_with_a_msgid_can_be_recalled,
                a_jobs_messages_are_listed_and_recalled_once,
                receipts_count_once_per_send_and_event,
                a_follow_up_goes_once_to_the_unread,
                a_resend_follows_its_job_and_waits_for_a_running_one,
                a_route_step_takes_the_sends_its_on_lists,
                channel_pauses_are_upserted_listed_and_resumed,
            ]
            races: [
                concurrent_refreshers_on_two_handles_fetch_once,
                a_channel_pause_is_seen_through_another_handle,
            ]
        );
        $crate::store_conformance_tests!(@area caps, $make, $second;
            cases: [caps_take_up_to_max_per_window, caps_a_refused_send_takes_no_slot, caps_spent_counters_are_purged]
            races: [caps_hold_across_two_handles]
        );
        $crate::store_conformance_tests!(@area labels, $make, $second;
            cases: [
                jobs_keep_their_name_and_category_and_list_by_them,
                a_rule_job_takes_the_rule_name,
                rules_and_tasks_keep_who_made_and_changed_them,
                jobs_keep_who_made_and_changed_them,
            ]
            races: []
        );
        $crate::store_conformance_tests!(@area templates, $make, $second;
            cases: [versions_count_up_per_tenant_and_name]
            races: []
        );
        $crate::store_conformance_tests!(@area calendars, $make, $second;
            cases: [calendars_are_replaced_whole_per_tenant_and_name]
            races: []
        );
        $crate::store_conformance_tests!(@area access, $make, $second;
            cases: [
                api_keys_page_by_id,
                audit_tallies_keep_their_count_and_reason,
                audit_pages_in_either_order_and_filtered
            ]
            races: []
        );
        $crate::store_conformance_tests!(@area campaigns, $make, $second;
            cases: [
                find_send_locates_a_recipient_by_its_whole_line,
                audiences_are_uploaded_in_chunks_sealed_and_sliced,
                audiences_are_listed_per_tenant_by_id,
                failed_sends_are_grouped_and_sent_again,
                unsealed_audiences_make_no_job_and_unused_ones_can_be_dropped,
                a_job_over_an_empty_audience_is_done_at_once,
                a_jobs_trace_context_is_kept_and_claimed_with_it,
                rules_are_versioned,
                rule_versions_page_oldest_first,
                plan_task_is_unique_and_only_for_the_current_enabled_version,
                rule_tasks_are_newest_first,
                disabling_cancels_pending_tasks_not_running_ones,
                plan_candidates_say_what_the_planner_needs,
                finish_rule_only_without_active_tasks,
                due_tasks_are_oldest_first,
                start_task_checks_the_rule_then_starts_a_job,
                a_rule_versions_follow_up_goes_with_its_jobs,
                job_segments_tile_the_audience,
                segments_record_when_they_ended,
                one_task_is_cancelled_and_its_rule_plans_on,
                claims_take_the_highest_priority_then_the_lowest_id,
                claims_skip_jobs_past_their_deadline,
                record_sends_counts_every_change_exactly,
                a_write_after_the_lease_was_reissued_is_lost_but_logged,
                finishing_segments_ends_them_done_or_partial_and_ends_the_job,
                abandoned_segments_are_reissued_from_the_first_retry_or_the_cursor,
                a_lapsed_claim_leaves_what_it_marked_in_doubt,
                a_claim_can_mark_ahead_of_its_cursor,
                record_many_writes_each_as_if_alone,
                the_sweep_ends_a_job_left_with_nothing_to_do,
                the_sweep_handles_at_most_limit_segments_per_kind,
                partial_segments_are_retried_with_backoff_until_max_attempts,
                jobs_past_their_deadline_expire,
                cancelling_a_job_cancels_what_is_left,
            ]
            races: [concurrent_segment_claims_from_two_handles]
        );
        $crate::store_conformance_tests!(@area retention, $make, $second;
            cases: [
                finished_timers_go_with_their_send_log_pending_ones_stay,
                ended_jobs_go_send_log_first_running_jobs_and_audiences_in_use_stay,
                delete_job_takes_finished_jobs_only,
                past_subjects_go_with_their_reminders_unless_one_is_pending,
                ended_tasks_go_except_each_versions_last,
                old_audit_entries_go,
                partition_maintenance_keeps_what_is_live,
            ]
            races: []
        );
        $crate::store_conformance_tests!(@area timer_counts, $make, $second;
            cases: [
                counters_follow_every_write_and_purge,
                due_counts_group_what_falls_due_and_stop_at_the_limit,
            ]
            races: [counters_stay_exact_under_concurrent_writers]
        );
        $crate::store_conformance_tests!(@area reports, $make, $second;
            cases: [
                timer_outcomes_are_counted_per_channel_outcome_and_day,
                reports_filter_by_days_tenant_channel_and_outcome,
                campaign_outcomes_are_counted_per_rule_and_job,
                reports_outlive_the_rows_they_count,
            ]
            races: [concurrent_counts_from_two_handles_add_up]
        );
    };
    (@area $area:ident, $make:expr, $second:expr;
        cases: [$($case:ident),* $(,)?]
        races: [$($race:ident),* $(,)?]
    ) => {
        mod $area {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let (store, guard) = ($make)().await;
                    $crate::testsuite::$area::$case(store).await;
                    drop(guard);
                }
            )*
            $(
                #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $race() {
                    let (a, guard) = ($make)().await;
                    let b = ($second)(&a, &guard).await;
                    $crate::testsuite::$area::$race(a, b).await;
                    drop(guard);
                }
            )*
        }
    };
}
