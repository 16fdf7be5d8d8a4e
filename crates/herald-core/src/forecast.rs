//! Whether a channel keeps up with what falls due on it (issue 41's
//! forecast): the counts per bucket of time against the channel's rate.
//!
//! A fluid model: in each bucket the channel sends up to its rate times the
//! bucket's length, from what waits (carried over) and what falls due in
//! it. What still waits at a bucket's end goes out after the end, taking
//! `waiting / rate`: that is how late the last of it is, at least. It knows
//! nothing of retries, pauses or other nodes' shares; it answers "can this
//! rate send this much in time" and no more.

/// How one channel keeps up, as [`keep_up`] finds it.
#[derive(Debug, Clone, PartialEq)]
pub struct KeepUp {
    /// Sends still waiting at the end of each bucket.
    pub waiting: Vec<u64>,
    /// The first bucket at whose end what waits takes longer than the
    /// tolerance to send: where the channel falls behind.
    pub behind_from: Option<usize>,
    /// The most any bucket's waiting sends take after its end, in ms: how
    /// late the last of them goes out, at least.
    pub worst_late_ms: i64,
    /// The bucket with that lateness.
    pub worst_bucket: Option<usize>,
}

/// Runs the model over `due` (counts per bucket of `bucket_ms`) at
/// `rate_per_sec`; `tolerance_ms` is how long after a bucket's end its
/// sends may still go before the channel counts as behind. `None` without
/// a rate (not finite, or not positive): an unlimited channel has no model.
pub fn keep_up(
    due: &[u64],
    bucket_ms: i64,
    rate_per_sec: f64,
    tolerance_ms: i64,
) -> Option<KeepUp> {
    if !rate_per_sec.is_finite() || rate_per_sec <= 0.0 || bucket_ms <= 0 {
        return None;
    }
    let capacity = rate_per_sec * bucket_ms as f64 / 1000.0;
    let mut left = 0.0_f64;
    let mut out = KeepUp {
        waiting: Vec::with_capacity(due.len()),
        behind_from: None,
        worst_late_ms: 0,
        worst_bucket: None,
    };
    for (i, &n) in due.iter().enumerate() {
        left = (left + n as f64 - capacity).max(0.0);
        out.waiting.push(left.ceil() as u64);
        let late = (left * 1000.0 / rate_per_sec).ceil();
        let late = if late >= i64::MAX as f64 {
            i64::MAX
        } else {
            late as i64
        };
        if late > tolerance_ms && out.behind_from.is_none() {
            out.behind_from = Some(i);
        }
        if late > out.worst_late_ms {
            out.worst_late_ms = late;
            out.worst_bucket = Some(i);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_rate_that_keeps_up_leaves_nothing_waiting() {
        let k = keep_up(&[100, 200, 0, 300], 60_000, 10.0, 0).unwrap();
        assert_eq!(k.waiting, vec![0, 0, 0, 0]);
        assert_eq!(k.behind_from, None);
        assert_eq!(k.worst_late_ms, 0);
    }

    #[test]
    fn a_burst_past_the_rate_waits_and_drains() {
        // 1,000 due in the first minute at 5/s: 300 go in it, 700 wait
        // (140 s), 400 the next minute (80 s), 100 (20 s), then none.
        let k = keep_up(&[1_000, 0, 0, 0], 60_000, 5.0, 30_000).unwrap();
        assert_eq!(k.waiting, vec![700, 400, 100, 0]);
        assert_eq!(k.behind_from, Some(0));
        assert_eq!(k.worst_late_ms, 140_000);
        assert_eq!(k.worst_bucket, Some(0));
        // A tolerance of 100 s: behind only where it waits longer.
        let k = keep_up(&[1_000, 0, 0, 0], 60_000, 5.0, 100_000).unwrap();
        assert_eq!(k.behind_from, Some(0));
        let k = keep_up(&[1_000, 0, 0, 0], 60_000, 5.0, 200_000).unwrap();
        assert_eq!(k.behind_from, None);
    }

    #[test]
    fn no_rate_no_model() {
        assert_eq!(keep_up(&[5], 60_000, 0.0, 0), None);
        assert_eq!(keep_up(&[5], 60_000, f64::NAN, 0), None);
        assert_eq!(keep_up(&[5], 0, 1.0, 0), None);
    }

    proptest! {
        /// What waits never exceeds what fell due so far, and nothing waits
        /// when the rate covers every bucket.
        #[test]
        fn waiting_is_bounded(due in proptest::collection::vec(0u64..1_000_000, 0..100),
                              rate in 0.1f64..100_000.0) {
            let k = keep_up(&due, 60_000, rate, 0).unwrap();
            let mut so_far = 0u64;
            for (i, w) in k.waiting.iter().enumerate() {
                so_far += due[i];
                prop_assert!(*w <= so_far);
            }
            if due.iter().all(|&n| (n as f64) <= rate * 60.0) {
                prop_assert!(k.waiting.iter().all(|&w| w == 0));
            }
        }
    }
}
