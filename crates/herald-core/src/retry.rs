//! Retry policy: exponential backoff with jitter, as a pure function.

use serde::{Deserialize, Serialize};

/// How often and how far apart a failed delivery is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Total attempts, the first one included. After the last, the timer is `dead`.
    pub max_attempts: u32,
    /// Delay before the second attempt; doubles with each further attempt.
    pub base_ms: u64,
    /// Upper bound of any single delay.
    pub max_ms: u64,
    /// Percent of each delay that is random (0: none, 100: "full jitter").
    #[serde(default = "default_jitter_pct")]
    pub jitter_pct: u8,
}

fn default_jitter_pct() -> u8 {
    50
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 8,
            base_ms: 1_000,
            max_ms: 300_000,
            jitter_pct: default_jitter_pct(),
        }
    }
}

impl RetryPolicy {
    /// Delay before the next attempt after `attempts_made` attempts failed,
    /// or `None` when the attempts are used up.
    ///
    /// `jitter_pct` of the exponential delay is random and the rest fixed; the
    /// default 50 is "equal jitter", so retries of a burst spread out but never
    /// come back sooner than half the backoff. `entropy` is any random number;
    /// the caller owns the RNG so that this stays deterministic under test.
    pub fn next_delay_ms(&self, attempts_made: u32, entropy: u64) -> Option<u64> {
        if attempts_made >= self.max_attempts {
            return None;
        }
        let exp = attempts_made.saturating_sub(1).min(40);
        let full = self
            .base_ms
            .saturating_mul(1u64 << exp)
            .min(self.max_ms)
            .max(1);
        let random = full / 100 * u64::from(self.jitter_pct.min(100))
            + full % 100 * u64::from(self.jitter_pct.min(100)) / 100;
        let fixed = full - random;
        Some(fixed + entropy % (random + 1))
    }

    /// Like [`Self::next_delay_ms`] but never sooner than a delay the provider asked for
    /// (a `Retry-After`), still bounded by `max_ms`.
    pub fn next_delay_with_hint(
        &self,
        attempts_made: u32,
        entropy: u64,
        hint_ms: Option<u64>,
    ) -> Option<u64> {
        let d = self.next_delay_ms(attempts_made, entropy)?;
        Some(match hint_ms {
            Some(h) => d.max(h.min(self.max_ms)),
            None => d,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn gives_up_after_max_attempts() {
        let p = RetryPolicy {
            max_attempts: 3,
            base_ms: 100,
            max_ms: 10_000,
            ..RetryPolicy::default()
        };
        assert!(p.next_delay_ms(1, 0).is_some());
        assert!(p.next_delay_ms(2, 0).is_some());
        assert_eq!(p.next_delay_ms(3, 0), None);
        assert_eq!(p.next_delay_ms(9, 0), None);
    }

    #[test]
    fn honours_retry_after_hint() {
        let p = RetryPolicy {
            max_attempts: 5,
            base_ms: 100,
            max_ms: 10_000,
            ..RetryPolicy::default()
        };
        assert_eq!(p.next_delay_with_hint(1, 0, Some(5_000)), Some(5_000));
        assert_eq!(p.next_delay_with_hint(1, 0, Some(50_000)), Some(10_000));
    }

    #[test]
    fn jitter_is_the_configured_share_of_the_delay() {
        let fixed = RetryPolicy {
            jitter_pct: 0,
            ..RetryPolicy::default()
        };
        assert_eq!(fixed.next_delay_ms(2, 12_345), Some(2_000));
        let full = RetryPolicy {
            jitter_pct: 100,
            ..RetryPolicy::default()
        };
        assert_eq!(full.next_delay_ms(2, 0), Some(0));
        assert_eq!(full.next_delay_ms(2, 2_000), Some(2_000));
        let quarter = RetryPolicy {
            jitter_pct: 25,
            ..RetryPolicy::default()
        };
        assert_eq!(quarter.next_delay_ms(2, 0), Some(1_500));
        assert_eq!(quarter.next_delay_ms(2, 500), Some(2_000));
    }

    proptest! {
        #[test]
        fn delay_grows_and_stays_bounded(attempt in 1u32..60, e in any::<u64>(), base in 1u64..5_000, max in 1u64..1_000_000) {
            let p = RetryPolicy { max_attempts: 100, base_ms: base, max_ms: max, ..RetryPolicy::default() };
            let d = p.next_delay_ms(attempt, e).unwrap();
            let full = base.saturating_mul(1u64 << (attempt - 1).min(40)).min(max).max(1);
            prop_assert!(d <= full);
            prop_assert!(d >= full / 2);
        }
    }
}
