//! What `/readyz` asks the engine: are its core loops running, does this
//! node hold its leases, and can it still fire (the stall watch over the
//! in-flight slots, pure: the sampler feeds it, on the engine's clock).

use serde::Serialize;

/// One kind of core loop (a channel's senders count as one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoopHealth {
    pub name: String,
    /// Every loop of this name is running.
    pub alive: bool,
    /// Deaths since start that were followed by a restart.
    pub restarts: u64,
}

/// The engine's own view of whether it can do its work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Health {
    /// Every supervised loop, by name.
    pub loops: Vec<LoopHealth>,
    /// A membership round (heartbeat and renewal) completed within the lease
    /// time: the shards this node fires are still its own.
    pub leases_current: bool,
    pub owned_shards: usize,
    /// A loop that cannot be restarted died: the process should exit.
    pub failed: bool,
    /// How long every in-flight slot has been taken with nothing sending
    /// and none given back, once that passed `engine.inflight_stall_ms`:
    /// this node fires nothing more.
    pub inflight_stalled_ms: Option<u64>,
}

impl Health {
    pub fn ok(&self) -> bool {
        self.problems().is_empty()
    }

    /// What is wrong, one short line each, naming the failing part.
    pub fn problems(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .loops
            .iter()
            .filter(|l| !l.alive)
            .map(|l| format!("loop {} is not running", l.name))
            .collect();
        if !self.leases_current {
            out.push("leases: no membership round completed within the lease time".into());
        }
        if self.failed {
            out.push("engine: a core loop that cannot restart died".into());
        }
        if let Some(ms) = self.inflight_stalled_ms {
            out.push(format!(
                "engine: in-flight slots full with nothing sending for {} s",
                ms / 1000
            ));
        }
        out
    }
}

/// What the stall watch reads of the in-flight set at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FlightSample {
    /// No in-flight permit is free: the fetcher can take nothing more.
    pub full: bool,
    /// Something will give permits back of its own accord: a delivery in a
    /// sender's hands or waiting for its outcome to be recorded (a slow
    /// provider, a rate or a provider's pause being waited out), a fetch
    /// pass, or jobs an operator's pause holds on purpose.
    pub busy: bool,
    /// Permits given back since start.
    pub returned: u64,
}

/// What one look of the stall watch found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StallVerdict {
    /// How long the slots have stayed full with nothing sending, once that
    /// reached the window.
    pub stalled_for_ms: Option<u64>,
    /// This look is the first to find the stall.
    pub began: bool,
}

/// Watches for in-flight slots that stay full while nothing sends and none
/// comes back: the node fires nothing more, though every loop runs. Such
/// slots are held by nothing (an accounting fault); a node merely busy has
/// deliveries in hand or gives permits back as it sends, however slowly.
#[derive(Debug, Default)]
pub(crate) struct StallWatch {
    /// The first look, since the last progress, that found the slots full
    /// and nothing busy.
    since: Option<i64>,
    /// Permits given back as of the last look.
    returned: u64,
    /// The last look reported a stall.
    stalled: bool,
}

impl StallWatch {
    /// Folds in a sample taken at clock time `now`; a stall is reported once
    /// the slots stayed full and idle, with no permit given back, for
    /// `window_ms` (0 turns the watch off).
    pub fn observe(&mut self, now: i64, s: FlightSample, window_ms: u64) -> StallVerdict {
        let progressed = s.returned != self.returned;
        self.returned = s.returned;
        let idle = s.full && !s.busy && !progressed && window_ms > 0;
        let stalled_for_ms = match self.since {
            // A clock that stepped back starts the window again.
            Some(since) if idle && now >= since => {
                let ms = u64::try_from(now - since).unwrap_or(0);
                (ms >= window_ms).then_some(ms)
            }
            _ => {
                self.since = idle.then_some(now);
                None
            }
        };
        let began = stalled_for_ms.is_some() && !self.stalled;
        self.stalled = stalled_for_ms.is_some();
        StallVerdict {
            stalled_for_ms,
            began,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL_IDLE: FlightSample = FlightSample {
        full: true,
        busy: false,
        returned: 7,
    };

    /// Looks once a second from `t` for `secs` seconds with `sample`; the
    /// last verdict.
    fn look(w: &mut StallWatch, t: &mut i64, secs: u32, sample: FlightSample) -> StallVerdict {
        let mut last = w.observe(*t, sample, 5_000);
        for _ in 0..secs {
            *t += 1_000;
            last = w.observe(*t, sample, 5_000);
        }
        last
    }

    #[test]
    fn full_slots_with_nothing_sending_are_a_stall_after_the_window() {
        let (mut w, mut t) = (StallWatch::default(), 0);
        // The first look sees permits given back since start: progress.
        assert_eq!(look(&mut w, &mut t, 0, FULL_IDLE).stalled_for_ms, None);
        assert_eq!(look(&mut w, &mut t, 4, FULL_IDLE).stalled_for_ms, None);
        t += 1_000;
        let v = w.observe(t, FULL_IDLE, 5_000);
        assert_eq!(
            v,
            StallVerdict {
                stalled_for_ms: Some(5_000),
                began: true
            }
        );
        t += 1_000;
        let v = w.observe(t, FULL_IDLE, 5_000);
        assert_eq!((v.stalled_for_ms, v.began), (Some(6_000), false));
        // A permit given back ends it.
        let back = FlightSample {
            returned: 8,
            ..FULL_IDLE
        };
        assert_eq!(w.observe(t + 1, back, 5_000).stalled_for_ms, None);
    }

    #[test]
    fn a_slow_provider_or_a_steady_rate_is_no_stall() {
        let (mut w, mut t) = (StallWatch::default(), 0);
        // Sends outstanding for a minute: busy, however long.
        let slow = FlightSample {
            busy: true,
            ..FULL_IDLE
        };
        assert_eq!(look(&mut w, &mut t, 60, slow).stalled_for_ms, None);
        // A rate-limited channel: between sends nothing is in hand, but a
        // permit comes back every few seconds.
        for n in 0..30u64 {
            let s = FlightSample {
                returned: 100 + n / 3,
                ..FULL_IDLE
            };
            t += 1_000;
            assert_eq!(w.observe(t, s, 5_000).stalled_for_ms, None, "look {n}");
        }
        // Slots not full: no stall, whatever else.
        let room = FlightSample {
            full: false,
            ..FULL_IDLE
        };
        assert_eq!(look(&mut w, &mut t, 60, room).stalled_for_ms, None);
    }

    #[test]
    fn the_watch_is_off_at_zero_and_restarts_when_the_clock_steps_back() {
        let (mut w, mut t) = (StallWatch::default(), 0);
        for _ in 0..100 {
            t += 1_000;
            assert_eq!(w.observe(t, FULL_IDLE, 0).stalled_for_ms, None);
        }
        look(&mut w, &mut t, 4, FULL_IDLE);
        t -= 60_000;
        assert_eq!(look(&mut w, &mut t, 4, FULL_IDLE).stalled_for_ms, None);
        assert_eq!(
            look(&mut w, &mut t, 1, FULL_IDLE).stalled_for_ms,
            Some(5_000)
        );
    }
}
