//! Rates measured over the last seconds rather than a whole run: the current
//! rate of a job (`GET /v1/jobs/{id}`) and of a channel (`GET /v1/channels`),
//! sampled whenever they are read. Held per node, in memory.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Samples older than this do not count towards the current rate.
const RATE_WINDOW_MS: i64 = 10_000;
/// A sample must be at least this old to measure a rate against.
const MIN_SPAN_MS: i64 = 250;
/// Samples closer together than this are not both kept.
const MIN_GAP_MS: i64 = 100;
const MAX_SAMPLES: usize = 128;
/// Jobs sampled at once; the least recently sampled one is forgotten first.
const MAX_JOBS: usize = 1024;

/// Recent `(time, processed)` samples per job (or per channel: any key),
/// taken whenever it is read, so the rate is measured over the last ~10 s
/// rather than the whole run.
pub struct RateSampler<K = i64> {
    jobs: Mutex<HashMap<K, VecDeque<(i64, u64)>>>,
}

impl<K> Default for RateSampler<K> {
    fn default() -> Self {
        Self {
            jobs: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: std::hash::Hash + Eq + Clone> RateSampler<K> {
    /// Records `processed` at `now` and returns recipients per second: over
    /// the samples of the last ~10 s, or, with none old enough, since the job
    /// started.
    pub fn observe(&self, job: K, now: i64, processed: u64, started_at: Option<i64>) -> f64 {
        let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        if !jobs.contains_key(&job) && jobs.len() >= MAX_JOBS {
            let stalest = jobs
                .iter()
                .min_by_key(|(_, q)| q.back().map_or(i64::MIN, |s| s.0))
                .map(|(id, _)| id.clone());
            if let Some(id) = stalest {
                jobs.remove(&id);
            }
        }
        let samples = jobs.entry(job).or_default();
        while samples
            .front()
            .is_some_and(|(t, _)| *t < now - RATE_WINDOW_MS || *t > now)
        {
            samples.pop_front();
        }
        let rate = rate_from(samples, now, processed, started_at);
        if samples.back().is_none_or(|(t, _)| now - t >= MIN_GAP_MS) {
            samples.push_back((now, processed));
            if samples.len() > MAX_SAMPLES {
                samples.pop_front();
            }
        }
        rate
    }

    /// Drops a job's samples (it ended).
    pub fn forget(&self, job: &K) {
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(job);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.jobs.lock().map(|j| j.len()).unwrap_or(0)
    }
}

/// The rate from the oldest sample at least [`MIN_SPAN_MS`] old, else the
/// average since `started_at`; 0 when neither can be measured.
fn rate_from(
    samples: &VecDeque<(i64, u64)>,
    now: i64,
    processed: u64,
    started_at: Option<i64>,
) -> f64 {
    if let Some((t, p)) = samples.iter().find(|(t, _)| now - t >= MIN_SPAN_MS) {
        return processed.saturating_sub(*p) as f64 * 1000.0 / (now - t) as f64;
    }
    match started_at {
        Some(s) if now > s => processed as f64 * 1000.0 / (now - s) as f64,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_reading_uses_the_average_since_start() {
        let r = RateSampler::default();
        // 5,000 processed in the 2 s since the job started.
        assert_eq!(r.observe(1, 12_000, 5_000, Some(10_000)), 2_500.0);
        // Not started: nothing to measure.
        assert_eq!(r.observe(2, 12_000, 0, None), 0.0);
    }

    #[test]
    fn later_readings_use_the_recent_window() {
        let r = RateSampler::default();
        r.observe(1, 100_000, 0, Some(0));
        // 1 s later, 300 more: 300/s regardless of the slow start.
        assert_eq!(r.observe(1, 101_000, 300, Some(0)), 300.0);
        // A reading 50 ms later is measured against the oldest sample still
        // in the window (not against one too close to mean anything).
        assert_eq!(r.observe(1, 101_050, 330, Some(0)), 330.0 * 1000.0 / 1050.0);
        // 20 s on, the old samples have left the window: back to the average
        // since start, then the window again.
        let avg = r.observe(1, 121_000, 10_330, Some(0));
        assert!((avg - 10_330.0 / 121.0).abs() < 1e-9, "{avg}");
        assert_eq!(r.observe(1, 122_000, 10_830, Some(0)), 500.0);
    }

    #[test]
    fn a_stalled_job_reads_zero() {
        let r = RateSampler::default();
        r.observe(1, 1_000, 700, Some(0));
        assert_eq!(r.observe(1, 2_000, 700, Some(0)), 0.0);
    }

    #[test]
    fn samples_are_bounded() {
        let r = RateSampler::default();
        for job in 0..(MAX_JOBS as i64 + 10) {
            r.observe(job, job, 0, None);
        }
        assert_eq!(r.len(), MAX_JOBS);
        let mut jobs = r.jobs.lock().unwrap();
        // The stalest were dropped.
        assert!(!jobs.contains_key(&0));
        assert!(jobs.contains_key(&(MAX_JOBS as i64 + 9)));
        jobs.clear();
        drop(jobs);
        for t in 0..10_000 {
            r.observe(7, t * 200, t as u64, None);
        }
        let jobs = r.jobs.lock().unwrap();
        assert!(jobs[&7].len() <= MAX_SAMPLES);
        assert!(jobs[&7].len() <= (RATE_WINDOW_MS / 200 + 1) as usize);
    }

    #[test]
    fn forgetting_a_job() {
        let r = RateSampler::default();
        r.observe(1, 0, 0, None);
        r.forget(&1);
        assert_eq!(r.len(), 0);
    }
}
