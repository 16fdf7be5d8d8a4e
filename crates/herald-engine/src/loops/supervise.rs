//! Core loops under supervision.
//!
//! Every long-running loop runs in a task of its own, watched by a supervisor
//! task. A loop that returns or panics while the engine is not stopping is
//! dead: it shows as such in [`crate::observe::health::Health`] (so `/readyz` turns 503) and is
//! counted in `herald_loop_restarts_total`. A restartable loop is started
//! again after a backoff; one that owns state it cannot rebuild (the group
//! commit writer's queue) stays dead and marks the engine failed, so the
//! process exits rather than answering "ok" without it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use parking_lot::Mutex;
use tokio::task::{AbortHandle, JoinHandle};

use crate::loops::stop::Stop;

/// First wait before a restart; doubles per death up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// A loop that ran this long before dying starts over at the first backoff.
const HEALTHY_RUN: Duration = Duration::from_secs(60);

/// One supervised loop's state, as health reports it.
pub(crate) struct LoopState {
    pub name: String,
    alive: AtomicBool,
    restarts: AtomicU64,
    /// Test hook: while set, the loop is held dead (see [`Loops::inject_fault`]).
    fault: AtomicBool,
    current: Mutex<Option<AbortHandle>>,
}

impl LoopState {
    pub fn alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }
}

/// Whether a dead loop is started again.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Restart {
    Yes,
    /// Its death fails the engine.
    Never,
}

/// Every supervised loop of one engine.
pub(crate) struct Loops {
    stop: Arc<Stop>,
    all: Mutex<Vec<Arc<LoopState>>>,
    failed: AtomicBool,
    failed_notify: tokio::sync::Notify,
}

impl Loops {
    pub fn new(stop: Arc<Stop>) -> Self {
        Self {
            stop,
            all: Mutex::new(Vec::new()),
            failed: AtomicBool::new(false),
            failed_notify: tokio::sync::Notify::new(),
        }
    }

    /// Snapshot of every loop (several may share a name: a channel's senders).
    pub fn states(&self) -> Vec<Arc<LoopState>> {
        self.all.lock().clone()
    }

    /// Whether a loop that must not restart died.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Resolves once the engine failed (see [`Restart::Never`]).
    pub async fn wait_failed(&self) {
        loop {
            let notified = self.failed_notify.notified();
            if self.failed() {
                return;
            }
            notified.await;
        }
    }

    /// Test hook: kills the loops named `name` and holds them dead while `on`;
    /// clearing it lets their supervisor restart them after the backoff.
    /// Returns how many loops matched.
    pub fn inject_fault(&self, name: &str, on: bool) -> usize {
        let mut n = 0;
        for l in self.all.lock().iter().filter(|l| l.name == name) {
            l.fault.store(on, Ordering::Release);
            if on && let Some(h) = l.current.lock().as_ref() {
                h.abort();
            }
            n += 1;
        }
        n
    }

    /// Runs `make()` as loop `name` under supervision.
    pub fn spawn<F>(
        self: &Arc<Self>,
        name: impl Into<String>,
        restart: Restart,
        make: F,
    ) -> JoinHandle<()>
    where
        F: Fn() -> BoxFuture<'static, ()> + Send + Sync + 'static,
    {
        let state = Arc::new(LoopState {
            name: name.into(),
            alive: AtomicBool::new(true),
            restarts: AtomicU64::new(0),
            fault: AtomicBool::new(false),
            current: Mutex::new(None),
        });
        self.all.lock().push(state.clone());
        let loops = self.clone();
        tokio::spawn(async move { loops.supervise(state, restart, make).await })
    }

    async fn supervise<F>(&self, state: Arc<LoopState>, restart: Restart, make: F)
    where
        F: Fn() -> BoxFuture<'static, ()>,
    {
        let mut backoff = MIN_BACKOFF;
        loop {
            if !state.fault.load(Ordering::Acquire) {
                state.alive.store(true, Ordering::Release);
                let task = tokio::spawn(make());
                // Aborting the supervisor (engine shutdown) aborts the loop too.
                let _guard = AbortOnDrop(task.abort_handle());
                *state.current.lock() = Some(task.abort_handle());
                let started = tokio::time::Instant::now();
                let ended = task.await;
                if self.stop.is_stopped() {
                    return;
                }
                match ended {
                    Ok(()) => tracing::error!(task = %state.name, "core loop returned early"),
                    Err(e) if e.is_panic() => {
                        tracing::error!(task = %state.name, "core loop panicked")
                    }
                    Err(_) => tracing::error!(task = %state.name, "core loop was cancelled"),
                }
                if started.elapsed() >= HEALTHY_RUN {
                    backoff = MIN_BACKOFF;
                }
            }
            state.alive.store(false, Ordering::Release);
            if restart == Restart::Never {
                tracing::error!(task = %state.name, "a core loop that cannot restart died; the engine has failed");
                self.failed.store(true, Ordering::Release);
                self.failed_notify.notify_waiters();
                return;
            }
            state.restarts.fetch_add(1, Ordering::Relaxed);
            metrics::counter!(crate::observe::metrics::LOOP_RESTARTS, "loop" => state.name.clone())
                .increment(1);
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = self.stop.wait() => return,
            }
            if !state.fault.load(Ordering::Acquire) {
                tracing::warn!(task = %state.name, backoff_ms = backoff.as_millis() as u64, "restarting core loop");
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}

struct AbortOnDrop(AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    /// Polls `cond` for up to ten seconds.
    async fn eventually(what: &str, cond: impl Fn() -> bool) {
        for _ in 0..1_000 {
            if cond() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("never: {what}");
    }

    #[tokio::test]
    async fn a_dead_loop_shows_dead_and_restarts_with_backoff() {
        let stop = Arc::new(Stop::default());
        let loops = Arc::new(Loops::new(stop.clone()));
        let runs = Arc::new(AtomicU64::new(0));
        let (r, s) = (runs.clone(), stop.clone());
        let h = loops.spawn("looper", Restart::Yes, move || {
            let (r, s) = (r.clone(), s.clone());
            async move {
                // The first run panics; later ones run until stopped.
                if r.fetch_add(1, Ordering::SeqCst) == 0 {
                    panic!("boom");
                }
                s.wait().await;
            }
            .boxed()
        });
        let st = loops.states();
        eventually("a restart", || runs.load(Ordering::SeqCst) == 2).await;
        assert_eq!(st[0].restarts(), 1);
        eventually("alive again", || st[0].alive()).await;

        // The hook kills it and holds it dead until cleared.
        assert_eq!(loops.inject_fault("looper", true), 1);
        eventually("dead", || !st[0].alive()).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!st[0].alive());
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        loops.inject_fault("looper", false);
        eventually("restarted after the fault", || st[0].alive()).await;
        assert_eq!(runs.load(Ordering::SeqCst), 3);

        stop.stop();
        h.await.unwrap();
        assert!(!loops.failed());
    }

    #[tokio::test]
    async fn a_loop_that_cannot_restart_fails_the_engine() {
        let stop = Arc::new(Stop::default());
        let loops = Arc::new(Loops::new(stop));
        let h = loops.spawn("writer", Restart::Never, || async {}.boxed());
        h.await.unwrap();
        assert!(loops.failed());
        loops.wait_failed().await;
        assert!(!loops.states()[0].alive());
    }
}
