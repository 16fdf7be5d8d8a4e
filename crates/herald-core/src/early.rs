//! Reminders that arrive in time (issue 39 §4): early starts and expiry.
//!
//! A reminder is worth nothing once its subject has started, so two rules
//! keep a burst of reminders useful:
//!
//! * **Early start.** A channel has a cluster-wide rate (`rate_per_sec`);
//!   Herald knows how many reminders fall due at each instant on it. When
//!   the reminders due at one instant cannot all be sent by that instant at
//!   the channel's rate, the whole batch starts early, by what it needs but
//!   never by more than its early window, so that (at the channel's rate, in
//!   due-time order) the last one still lands no later than its due time.
//!   [`plan_channel`] makes that plan for one channel: batches are laid out
//!   backwards from the latest, so an earlier batch finishes before a later
//!   one starts and reminders still go out in the order of their due times.
//! * **Expiry.** A reminder still unsent when its subject starts ends with
//!   outcome `expired` (never sent), unless its subject or its subscription
//!   says `send_late` ([`expiry`], [`is_expired`]).
//!
//! Plain functions over numbers: the engine counts, reads the rate and the
//! clock, and acts on the answers.

/// Longest early window a subject or a configuration may ask for: an hour.
/// A reminder sent more than an hour before its lead time is no longer the
/// reminder the user asked for.
pub const MAX_EARLY_WINDOW_MS: i64 = 3_600_000;

/// A batch that takes less than this at the channel's rate is not started
/// early: it lands within this of its due time, which is the ordinary
/// lateness of a timer, and reminders stay exactly on time in the common case.
pub const MIN_EARLY_MS: i64 = 1_000;

/// Margin added to a batch's sending time when it starts early: a fixed part
/// for the path from the wheel to the channel (load, fetch, queue), and a
/// fiftieth of the sending time for a rate limiter that runs a little below
/// its nominal rate.
pub const EARLY_SLACK_MS: i64 = 1_000;

/// Reminders due at one instant on one channel, as [`plan_channel`] takes
/// them. Several batches may share an instant (several subjects starting at
/// once): they share the channel's rate too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub due_at: i64,
    /// Pending reminders in the batch.
    pub count: u64,
    /// How far before `due_at` this batch may start (0 = never early).
    pub early_window_ms: i64,
}

/// When one [`Batch`] starts, in the order given to [`plan_channel`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Planned {
    /// When its first reminder may go: `due_at` when it needs no early start.
    pub start_at: i64,
    /// When the last reminder of its instant should have gone at the
    /// channel's rate, starting at `start_at` (an estimate).
    pub done_by: i64,
    /// Whether `done_by` is at or before the due time: `false` when the
    /// early window is too short for the batch (the rest lands late, or
    /// expires when its subject starts).
    pub fits: bool,
}

/// How long `count` sends take at `rate_per_sec`, in ms (rounded up).
pub fn send_time_ms(count: u64, rate_per_sec: f64) -> i64 {
    if count == 0 || !rate_per_sec.is_finite() || rate_per_sec <= 0.0 {
        return 0;
    }
    let ms = (count as f64 * 1000.0 / rate_per_sec).ceil();
    if ms >= i64::MAX as f64 {
        i64::MAX
    } else {
        ms as i64
    }
}

/// The margin [`EARLY_SLACK_MS`] describes, for a sending time of `need_ms`.
pub fn slack_ms(need_ms: i64) -> i64 {
    EARLY_SLACK_MS.saturating_add(need_ms / 50)
}

/// Plans the batches of one channel sending at `rate_per_sec` (cluster-wide):
/// one [`Planned`] per batch, in the order given.
///
/// Instants are planned from the latest back: an instant's batches must be
/// sent by its due time and before the next instant's batches start (they
/// share the rate), so its sending ends at `min(due, next start)` and starts
/// the sending time (plus [`slack_ms`]) before that, but no earlier than each
/// batch's own early window allows. An instant that needs less than
/// [`MIN_EARLY_MS`] and is not pushed by a later one starts at its due time.
/// Without a rate (`None`, or not positive) nothing starts early.
pub fn plan_channel(rate_per_sec: Option<f64>, batches: &[Batch]) -> Vec<Planned> {
    let on_time = |b: &Batch| Planned {
        start_at: b.due_at,
        done_by: b.due_at,
        fits: true,
    };
    let Some(rate) = rate_per_sec.filter(|r| r.is_finite() && *r > 0.0) else {
        return batches.iter().map(on_time).collect();
    };
    // Instants, latest first, with their batches' indexes.
    let mut instants: Vec<(i64, Vec<usize>)> = Vec::new();
    let mut order: Vec<usize> = (0..batches.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(batches[i].due_at));
    for i in order {
        match instants.last_mut() {
            Some((due, members)) if *due == batches[i].due_at => members.push(i),
            _ => instants.push((batches[i].due_at, vec![i])),
        }
    }
    let mut out: Vec<Planned> = batches.iter().map(on_time).collect();
    // Where the next (later) instant's sending starts.
    let mut free_until = i64::MAX;
    for (due, members) in instants {
        let count: u64 = members.iter().map(|&i| batches[i].count).sum();
        let need = send_time_ms(count, rate);
        let end = due.min(free_until);
        if need < MIN_EARLY_MS && end == due {
            free_until = due;
            continue;
        }
        let wanted = end.saturating_sub(need.saturating_add(slack_ms(need)));
        let mut earliest = end;
        for &i in &members {
            let window = batches[i].early_window_ms.clamp(0, MAX_EARLY_WINDOW_MS);
            let start_at = wanted.max(due.saturating_sub(window)).min(due);
            let done_by = start_at.saturating_add(need);
            out[i] = Planned {
                start_at,
                done_by,
                fits: done_by <= due,
            };
            earliest = earliest.min(start_at);
        }
        free_until = earliest;
    }
    out
}

/// When a delivery of some reminders expires: the latest start among their
/// subjects, so that merging a reminder into another's delivery never makes
/// it expire sooner. `None` (never) when any of them may be sent late (its
/// subject or its subscription says `send_late`), is due at or after its
/// subject's start (a lead of 0, "at the start", is sent at the start by
/// definition), or its subject is unknown (deleted meanwhile: nothing says
/// it started).
///
/// Each item is a reminder's subject start (`None` if unknown), its due time
/// and whether it may be sent late.
pub fn expiry(reminders: impl IntoIterator<Item = (Option<i64>, i64, bool)>) -> Option<i64> {
    let mut latest: Option<i64> = None;
    for (start_at, due_at, send_late) in reminders {
        let start_at = start_at?;
        if send_late || due_at >= start_at {
            return None;
        }
        latest = Some(latest.map_or(start_at, |l: i64| l.max(start_at)));
    }
    latest
}

/// Whether a delivery expiring at `expires_at` ([`expiry`]) must not be
/// sent at `now`: its subject has started.
pub fn is_expired(now: i64, expires_at: Option<i64>) -> bool {
    expires_at.is_some_and(|at| now >= at)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const MIN: i64 = 60_000;

    fn batch(due_at: i64, count: u64, window: i64) -> Batch {
        Batch {
            due_at,
            count,
            early_window_ms: window,
        }
    }

    #[test]
    fn the_issue_case_starts_early_enough_and_no_more() {
        // 1M at 5,000/s takes 200 s; a 5-minute window holds it.
        let due = 1_000_000_000;
        let p = plan_channel(Some(5_000.0), &[batch(due, 1_000_000, 5 * MIN)]);
        let need = 200_000;
        assert_eq!(p[0].start_at, due - need - slack_ms(need));
        assert!(p[0].fits);
        assert!(p[0].start_at >= due - 5 * MIN);
        // Without a window it starts at its due time and does not fit.
        let p = plan_channel(Some(5_000.0), &[batch(due, 1_000_000, 0)]);
        assert_eq!(p[0].start_at, due);
        assert!(!p[0].fits);
        // A window too short starts as early as it allows.
        let p = plan_channel(Some(5_000.0), &[batch(due, 1_000_000, MIN)]);
        assert_eq!(p[0].start_at, due - MIN);
        assert_eq!(p[0].done_by, due - MIN + need);
        assert!(!p[0].fits);
    }

    #[test]
    fn small_batches_and_unlimited_channels_stay_on_time() {
        let p = plan_channel(Some(100.0), &[batch(500, 99, 5 * MIN)]);
        assert_eq!(p[0].start_at, 500, "under a second at the rate");
        let p = plan_channel(None, &[batch(500, 1_000_000, 5 * MIN)]);
        assert_eq!(p[0].start_at, 500);
        let p = plan_channel(Some(0.0), &[batch(500, 1_000_000, 5 * MIN)]);
        assert_eq!(p[0].start_at, 500);
        assert!(plan_channel(Some(1.0), &[]).is_empty());
    }

    #[test]
    fn batches_at_one_instant_share_the_rate() {
        let due = 10 * MIN;
        let p = plan_channel(
            Some(100.0),
            &[batch(due, 1_000, 5 * MIN), batch(due, 1_000, 5 * MIN)],
        );
        // 2,000 at 100/s: 20 s for both.
        let need = 20_000;
        for x in &p {
            assert_eq!(x.start_at, due - need - slack_ms(need));
        }
        // Each keeps to its own window.
        let p = plan_channel(
            Some(100.0),
            &[batch(due, 1_000, 5_000), batch(due, 1_000, MIN)],
        );
        assert_eq!(p[0].start_at, due - 5_000);
        assert_eq!(p[1].start_at, due - need - slack_ms(need));
    }

    #[test]
    fn an_earlier_instant_finishes_before_a_later_one_starts() {
        let (d1, d2) = (10 * MIN, 10 * MIN + 10_000);
        // The later one needs 30 s: it starts before the earlier is due,
        // which then ends where it starts.
        let p = plan_channel(
            Some(100.0),
            &[batch(d1, 1_000, 5 * MIN), batch(d2, 3_000, 5 * MIN)],
        );
        let later_start = d2 - 30_000 - slack_ms(30_000);
        assert_eq!(p[1].start_at, later_start);
        assert_eq!(p[0].start_at, later_start - 10_000 - slack_ms(10_000));
        assert!(p[0].done_by <= p[1].start_at);
        assert!(p.iter().all(|x| x.fits));
    }

    #[test]
    fn expiry_is_the_latest_start_unless_one_may_be_late() {
        assert_eq!(expiry([(Some(5), 1, false), (Some(9), 2, false)]), Some(9));
        assert_eq!(expiry([(Some(5), 1, false), (Some(9), 2, true)]), None);
        assert_eq!(expiry([(Some(5), 1, false), (None, 2, false)]), None);
        // "At the start" (lead 0) never expires.
        assert_eq!(expiry([(Some(5), 5, false)]), None);
        assert_eq!(expiry(std::iter::empty()), None);
        assert!(!is_expired(8, Some(9)));
        assert!(is_expired(9, Some(9)));
        assert!(is_expired(10, Some(9)));
        assert!(!is_expired(i64::MAX, None));
    }

    proptest! {
        /// Whatever the batches: a start is never after its due time nor
        /// before its window; what fits is done by its due time; sending
        /// intervals of different instants do not overlap and keep due order.
        #[test]
        fn plans_keep_windows_and_due_order(
            raw in proptest::collection::vec((0i64..600_000, 0u64..50_000, 0i64..600_000), 0..12),
            rate in 1.0f64..10_000.0,
        ) {
            let batches: Vec<Batch> = raw.iter().map(|&(d, c, w)| batch(d, c, w)).collect();
            let plan = plan_channel(Some(rate), &batches);
            prop_assert_eq!(plan.len(), batches.len());
            for (b, p) in batches.iter().zip(&plan) {
                prop_assert!(p.start_at <= b.due_at);
                prop_assert!(p.start_at >= b.due_at - b.early_window_ms.clamp(0, MAX_EARLY_WINDOW_MS));
                if p.fits {
                    prop_assert!(p.done_by <= b.due_at);
                }
            }
            // Where every batch has room, an earlier instant's sending ends
            // before a later instant's starts.
            let roomy = batches.iter().all(|b| b.early_window_ms >= MAX_EARLY_WINDOW_MS);
            if roomy {
                for (i, a) in batches.iter().enumerate() {
                    for (j, b) in batches.iter().enumerate() {
                        if a.due_at < b.due_at && plan[i].start_at < plan[i].done_by {
                            prop_assert!(plan[i].done_by <= plan[j].start_at,
                                "{:?} {:?} / {:?} {:?}", a, plan[i], b, plan[j]);
                        }
                    }
                }
            }
        }
    }
}
