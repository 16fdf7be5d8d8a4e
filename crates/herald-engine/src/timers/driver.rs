//! The wheel driver: advances the wheel to the clock, hands due timers to the
//! ready queue, and sleeps until the next deadline or an earlier insert.

use std::sync::Arc;
use std::time::Duration;

use crate::timers::pipeline::Pipeline;
use crate::timers::schedule::Slot;

pub(crate) struct Driver {
    pipe: Arc<Pipeline>,
    /// Reused between ticks so a tick allocates nothing.
    buf: Vec<(u64, Slot)>,
}

impl Driver {
    pub fn new(pipe: Arc<Pipeline>) -> Self {
        Self {
            pipe,
            buf: Vec::new(),
        }
    }

    pub async fn run(mut self) {
        while !self.pipe.stop.is_stopped() {
            let next = self.run_once();
            let p = &*self.pipe;
            let sleep_ms = u64::try_from(next.saturating_sub(p.clock.now_ms())).unwrap_or(0);
            if sleep_ms == 0 {
                tokio::task::yield_now().await;
                continue;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(sleep_ms)) => {}
                _ = p.schedule.woken() => {}
                _ = p.stop.wait() => {}
            }
        }
    }

    /// Fires what is due at the clock's time into the ready queue; returns
    /// when (clock time) to look again.
    pub fn run_once(&mut self) -> i64 {
        let p = &*self.pipe;
        p.schedule.tick(p.clock.now_ms(), &p.ready, &mut self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EngineConfig;
    use crate::testkit::{Rig, T0};
    use crate::timers::loader::{Loader, Rescan};

    #[tokio::test]
    async fn hands_on_what_is_due_at_the_clocks_time() {
        let rig = Rig::new(EngineConfig::default()).await;
        let ids = rig.insert(&[T0 + 1_000, T0 + 1_000, T0 + 5_000]).await;
        Loader::new(rig.pipe.clone(), false, Arc::new(Rescan::default()))
            .run_once()
            .await;
        let mut d = Driver::new(rig.pipe.clone());
        let next = d.run_once();
        assert_eq!(rig.pipe.ready.len(), 0);
        assert!(next > T0 && next <= T0 + 1_000, "next look at {next}");
        rig.clock.set(T0 + 1_000);
        let next = d.run_once();
        let ready: Vec<i64> = rig.pipe.ready.pop_many(10).iter().map(|t| t.id).collect();
        assert_eq!(ready.len(), 2);
        assert!(ready.iter().all(|id| ids[..2].contains(id)));
        assert!(next > T0 + 1_000 && next <= T0 + 5_000);
        rig.clock.set(T0 + 9_000);
        d.run_once();
        assert_eq!(rig.pipe.ready.pop_many(10)[0].id, ids[2]);
        assert_eq!(rig.pipe.schedule.len(), 0);
    }
}
