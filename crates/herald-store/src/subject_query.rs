//! Listing a tenant's subjects with their subscriptions counted: the SQL both
//! backends run, and how counted rows become [`SubscriptionCounts`].
//!
//! Counts are bounded rather than maintained. A counter updated by every
//! subscribe would make a hot subject (a million users on one coupon) a row
//! every writer queues on; instead a read walks the subject index
//! (`reminder_timers_subject`, which carries the user and the bit) for at most
//! `cap + 1` entries and says when it stopped short.

use crate::SubscriptionCounts;

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
