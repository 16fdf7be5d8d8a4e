//! The wheel driver: advances the wheel to the clock, hands due timers to the
//! ready queue, and sleeps until the next deadline or an earlier insert.

use std::sync::Arc;
use std::time::Duration;

use crate::pipeline::Pipeline;
use crate::schedule::Slot;

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
