//! Listing a tenant's subjects with their subscriptions counted: the SQL both
//! backends run, and how counted rows become [`SubscriptionCounts`].
//!
//! Counts are bounded rather than maintained. A counter updated by every
//! subscribe would make a hot subject (a million users on one coupon) a row
//! every writer queues on; instead a read walks the subject index
//! (`reminder_timers_subject`, which carries the user and the bit) for at most
//! `cap + 1` entries and says when it stopped short.

use crate::model::{Columns, Decode, Reader};
use crate::{Result, SubscriptionCounts};

/// The statements both backends run ([`crate::shared_sql::Statement`]).
pub(crate) mod sql {
    use crate::shared_sql::{Statement, statement};
    /// $1 tenant, $2 the last subject id of the previous page (`''` for the
    /// first), $3 limit. Subject ids are never empty and sort bytewise on both
    /// backends (`COLLATE "C"` on PostgreSQL), so the cursor is the id.
    pub(crate) const LIST: Statement = statement!(concat!(
        "SELECT ",
        crate::model::subject_cols!(),
        " FROM subjects WHERE tenant_id = $1 AND subject_id > $2 \
         ORDER BY subject_id LIMIT $3"
    ));
    /// $1 tenant, $2 subject.
    pub(crate) const ONE: Statement = statement!(concat!(
        "SELECT ",
        crate::model::subject_cols!(),
        " FROM subjects WHERE tenant_id = $1 AND subject_id = $2"
    ));
    /// $1 tenant, $2 subject, $3 how many entries to read at most.
    pub(crate) const COUNT: Statement = statement!(
        "SELECT count(*), count(DISTINCT user_id) FROM \
         (SELECT user_id FROM reminder_timers WHERE tenant_id = $1 AND subject_id = $2 \
         LIMIT $3) AS counted"
    );
    /// $1 tenant, $2 subject, $3 how many entries to read at most.
    pub(crate) const COUNT_BY_BIT: Statement = statement!(
        "SELECT bit, count(*) FROM \
         (SELECT bit FROM reminder_timers WHERE tenant_id = $1 AND subject_id = $2 \
         LIMIT $3) AS counted GROUP BY bit ORDER BY bit"
    );
    /// $1 tenant, $2 subject, $3 how many reminders to read at most: the
    /// read reminders' timers counted per state and error.
    pub(crate) const OUTCOMES: Statement = statement!(
        "SELECT t.state, t.last_error, count(*) FROM \
         (SELECT timer_id FROM reminder_timers WHERE tenant_id = $1 AND subject_id = $2 \
         LIMIT $3) AS r JOIN timers AS t ON t.id = r.timer_id \
         GROUP BY t.state, t.last_error"
    );
    /// $1 tenant, $2 subject, $3 how many reminders to read at most, $4 how
    /// many to return: the newest failed, dead or in-doubt among those read.
    pub(crate) const FAILED: Statement = statement!(
        "SELECT r.user_id, r.bit, t.id, t.state, t.last_error, t.updated_at FROM \
         (SELECT user_id, bit, timer_id FROM reminder_timers \
         WHERE tenant_id = $1 AND subject_id = $2 LIMIT $3) AS r \
         JOIN timers AS t ON t.id = r.timer_id \
         WHERE t.state IN (3, 5, 6) ORDER BY t.updated_at DESC, t.id DESC LIMIT $4"
    );
    /// $1 tenant, $2 subject, $3..$4 its reminders' due range (the start less
    /// the longest lead, the start), $5 most to count: its failed and dead
    /// reminders, found through the tenant's state index (failures are few)
    /// and each checked against the subscription's primary key (a reminder
    /// timer's recipient is its user).
    pub(crate) const FAILED_COUNT: Statement = statement!(
        "SELECT count(*) FROM (SELECT 1 FROM timers AS t \
         WHERE t.tenant_id = $1 AND t.state IN (3, 5) AND t.due_at >= $3 AND t.due_at <= $4 \
         AND EXISTS (SELECT 1 FROM reminder_timers AS r WHERE r.tenant_id = $1 \
         AND r.user_id = t.recipient AND r.subject_id = $2 AND r.timer_id = t.id) \
         LIMIT $5) AS f"
    );
}

/// How a subject's reminders turned out, from at most `cap` of them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubjectOutcomes {
    /// Reminders read (at most the cap).
    pub counted: u64,
    /// The subject has more reminders than the cap: the figures cover the
    /// first `counted` in the subject index.
    pub capped: bool,
    /// Counted reminders per timer state, in state order (only states present).
    pub by_state: Vec<(herald_core::TimerState, u64)>,
    /// The errors of failed, dead and in-doubt reminders, most common first.
    pub top_errors: Vec<(String, u64)>,
    /// The newest failed, dead or in-doubt reminders among those counted.
    pub failed: Vec<FailedReminder>,
}

/// One reminder that did not reach its user.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedReminder {
    pub user_id: String,
    pub bit: u8,
    pub timer_id: herald_core::TimerId,
    pub state: herald_core::TimerState,
    pub error: Option<String>,
    pub updated_at: i64,
}

/// A row of [`sql::OUTCOMES`]: a state, an error, how many.
pub(crate) struct OutcomeRow(pub herald_core::TimerState, pub Option<String>, pub u64);

impl Decode for OutcomeRow {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(OutcomeRow(
            r.state("timers.state")?,
            r.opt_string("timers.last_error")?,
            r.narrow("count(*)")?,
        ))
    }
}

impl Decode for FailedReminder {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(FailedReminder {
            user_id: r.string("reminder_timers.user_id")?,
            bit: r.narrow("reminder_timers.bit")?,
            timer_id: r.int("timers.id")?,
            state: r.state("timers.state")?,
            error: r.opt_string("timers.last_error")?,
            updated_at: r.int("timers.updated_at")?,
        })
    }
}

/// Whether a timer in `state` did not reach its user.
pub(crate) fn is_failure(state: herald_core::TimerState) -> bool {
    use herald_core::TimerState as S;
    matches!(state, S::Failed | S::Dead | S::InDoubt)
}

/// Folds [`sql::OUTCOMES`]'s rows (state, error, count), read with
/// [`count_limit`], into outcomes: per state, and the `errors` most common
/// errors of the failures. With more rows than `cap` read, one reminder is
/// taken off the last state so the figures cover exactly `cap`.
pub(crate) fn outcomes(
    cap: u64,
    rows: impl IntoIterator<Item = (herald_core::TimerState, Option<String>, u64)>,
    errors: usize,
) -> SubjectOutcomes {
    use std::collections::BTreeMap;
    let mut states: BTreeMap<i64, (herald_core::TimerState, u64)> = BTreeMap::new();
    let mut by_error: BTreeMap<String, u64> = BTreeMap::new();
    let mut read = 0u64;
    for (state, error, n) in rows {
        read = read.saturating_add(n);
        states.entry(state.code()).or_insert((state, 0)).1 += n;
        if is_failure(state) {
            let key = error.unwrap_or_else(|| "(no error recorded)".to_owned());
            *by_error.entry(key).or_default() += n;
        }
    }
    let capped = read > cap;
    if capped && let Some(mut last) = states.last_entry() {
        last.get_mut().1 = last.get().1.saturating_sub(read - cap);
        if last.get().1 == 0 {
            last.remove();
        }
    }
    let mut top: Vec<(String, u64)> = by_error.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    top.truncate(errors);
    SubjectOutcomes {
        counted: read.min(cap),
        capped,
        by_state: states.into_values().collect(),
        top_errors: top,
        failed: Vec::new(),
    }
}

/// The row limit of [`sql::COUNT`]: one past the cap tells "exactly cap" from
/// "more than cap".
pub(crate) fn count_limit(cap: u64) -> i64 {
    i64::try_from(cap.saturating_add(1)).unwrap_or(i64::MAX)
}

/// The row limit of [`sql::COUNT_BY_BIT`]: the cap itself, so the per-bit
/// counts add up to [`SubscriptionCounts::reminders`].
pub(crate) fn by_bit_limit(cap: u64) -> i64 {
    i64::try_from(cap).unwrap_or(i64::MAX)
}

/// Counts from [`sql::COUNT`]'s row (`read` entries, `users` distinct users
/// among them), read with [`count_limit`].
pub(crate) fn counts(cap: u64, read: u64, users: u64) -> SubscriptionCounts {
    SubscriptionCounts {
        subscribers: users.min(cap),
        reminders: read.min(cap),
        capped: read > cap,
        by_bit: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_group_states_and_rank_failure_errors() {
        use herald_core::TimerState as S;
        let rows = vec![
            (S::Done, None, 5),
            (S::Dead, Some("timeout".to_owned()), 2),
            (S::Failed, Some("43101 no grant".to_owned()), 3),
            (S::Failed, None, 1),
            (S::Pending, Some("retry later".to_owned()), 1),
        ];
        let o = outcomes(100, rows.clone(), 2);
        assert_eq!(o.counted, 12);
        assert!(!o.capped);
        assert_eq!(
            o.by_state,
            vec![(S::Pending, 1), (S::Done, 5), (S::Failed, 4), (S::Dead, 2)]
        );
        // A pending timer's retry error is not a failure.
        assert_eq!(
            o.top_errors,
            vec![("43101 no grant".to_owned(), 3), ("timeout".to_owned(), 2)]
        );
        let cut = outcomes(11, rows, 5);
        assert!(cut.capped);
        assert_eq!(cut.counted, 11);
        assert_eq!(cut.by_state.iter().map(|s| s.1).sum::<u64>(), 11);
    }

    #[test]
    fn counts_say_when_the_cap_cut_them_short() {
        assert_eq!(
            counts(10, 3, 2),
            SubscriptionCounts {
                subscribers: 2,
                reminders: 3,
                capped: false,
                by_bit: Vec::new(),
            }
        );
        let exact = counts(10, 10, 10);
        assert!(!exact.capped);
        let over = counts(10, 11, 11);
        assert!(over.capped);
        assert_eq!((over.reminders, over.subscribers), (10, 10));
        assert_eq!(count_limit(u64::MAX), i64::MAX);
    }
}
