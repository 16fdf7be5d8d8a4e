//! Fault injection: what the mock should do wrong, and a cheap deterministic dice.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

/// Misbehaviour to inject into provider answers.
///
/// Every field defaults to "behave": a default `Faults` answers everything with success.
/// Unknown fields are rejected so a typo in a control request is not silently ignored;
/// missing fields take their defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Faults {
    /// Probability (0..=1) of answering `error_status` instead of success.
    pub error_rate: f64,
    /// Status used for injected errors; `0` means 500.
    pub error_status: u16,
    /// Delay added before answering each request.
    pub latency_ms: u64,
    /// Per Idempotency-Key, the first N requests are answered with `error_status`.
    pub fail_first: u32,
    /// If set, injected error answers carry `Retry-After: <secs>`.
    pub retry_after_secs: Option<u64>,
    /// If set, every valid request is answered with this status.
    pub permanent_status: Option<u16>,
}

impl Faults {
    /// The status injected errors are answered with.
    pub fn effective_error_status(&self) -> u16 {
        if self.error_status == 0 {
            500
        } else {
            self.error_status
        }
    }

    /// Checks that the values make sense; the message names the bad field.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.error_rate) {
            return Err(format!(
                "error_rate must be within 0..=1, got {}",
                self.error_rate
            ));
        }
        if self.error_status != 0 && !(200..=599).contains(&self.error_status) {
            return Err(format!(
                "error_status must be a status code 200..=599, got {}",
                self.error_status
            ));
        }
        if let Some(s) = self.permanent_status
            && !(200..=599).contains(&s)
        {
            return Err(format!(
                "permanent_status must be a status code 200..=599, got {s}"
            ));
        }
        Ok(())
    }

    /// A copy with out-of-range values pulled back into range.
    pub fn normalized(mut self) -> Faults {
        self.error_rate = if self.error_rate.is_nan() {
            0.0
        } else {
            self.error_rate.clamp(0.0, 1.0)
        };
        if self.error_status != 0 && !(200..=599).contains(&self.error_status) {
            self.error_status = 500;
        }
        if let Some(s) = self.permanent_status
            && !(200..=599).contains(&s)
        {
            self.permanent_status = Some(500);
        }
        self
    }
}

/// The live fault settings plus the random source used for `error_rate`.
///
/// Reads are a short read-lock and a copy; the dice is a lock-free counter run through
/// splitmix64, so a given seed yields the same sequence of draws.
pub(crate) struct FaultState {
    current: RwLock<Faults>,
    seed: u64,
    draws: AtomicU64,
}

impl FaultState {
    pub(crate) fn new(faults: Faults, seed: u64) -> Self {
        FaultState {
            current: RwLock::new(faults.normalized()),
            seed,
            draws: AtomicU64::new(0),
        }
    }

    pub(crate) fn get(&self) -> Faults {
        *self.current.read()
    }

    pub(crate) fn set(&self, faults: Faults) {
        *self.current.write() = faults.normalized();
    }

    /// Restarts the random sequence from the seed.
    pub(crate) fn rewind(&self) {
        self.draws.store(0, Ordering::Relaxed);
    }

    /// True with probability `p`.
    pub(crate) fn chance(&self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        let n = self.draws.fetch_add(1, Ordering::Relaxed);
        let bits = splitmix64(self.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        // 53 random bits -> uniform in [0, 1).
        let unit = (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        unit < p
    }
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chance_matches_rate_roughly_and_is_seeded() {
        let a = FaultState::new(Faults::default(), 7);
        let hits = (0..100_000).filter(|_| a.chance(0.25)).count();
        assert!((23_000..27_000).contains(&hits), "hits = {hits}");

        let b = FaultState::new(Faults::default(), 7);
        let c = FaultState::new(Faults::default(), 7);
        let sb: Vec<bool> = (0..64).map(|_| b.chance(0.5)).collect();
        let sc: Vec<bool> = (0..64).map(|_| c.chance(0.5)).collect();
        assert_eq!(sb, sc);
    }

    #[test]
    fn validation_and_normalization() {
        let f = Faults {
            error_rate: 1.5,
            ..Faults::default()
        };
        assert!(f.validate().is_err());
        assert_eq!(f.normalized().error_rate, 1.0);
        assert_eq!(Faults::default().effective_error_status(), 500);
        let p = Faults {
            permanent_status: Some(42),
            ..Faults::default()
        };
        assert!(p.validate().is_err());
        let parsed: Faults = serde_json::from_str(r#"{"fail_first":2}"#).unwrap();
        assert_eq!(parsed.fail_first, 2);
        assert!(serde_json::from_str::<Faults>(r#"{"fail_frist":2}"#).is_err());
    }
}
