//! What the engine's unit tests share: a pipeline on an in-memory SQLite
//! store and a manual clock, owning every shard, and a channel that records
//! what it is sent. It imports no loop, so each loop's tests can use it.

use std::collections::VecDeque;
use std::sync::Arc;

use async_trait::async_trait;
use herald_channels::{Channel, ChannelKind, Delivery, SendOutcome};
use herald_core::{ManualClock, RetryPolicy, TimerId, TimerKind, TimerState};
use herald_store::{NewTimer, StoreOptions, TimerRecord, WriteOp, WriteResult};
use parking_lot::Mutex;

use crate::channels::spec::ChannelSpec;
use crate::config::EngineConfig;
use crate::timers::pipeline::Pipeline;
use crate::timers::queue::DueTimer;

/// The name of the test channel.
pub const CHANNEL: &str = "rec";
/// The node the rig runs as.
pub const NODE: &str = "node-1";

/// The rig's node in its one incarnation.
pub fn holder() -> herald_store::Holder {
    herald_store::Holder::new(NODE, 1)
}
/// Shards of the test store.
pub const SHARDS: u16 = 4;
/// Where the manual clock starts.
pub const T0: i64 = 1_700_000_000_000;

/// A channel that records every delivery and answers from a script, then
/// `Delivered`.
#[derive(Default)]
pub struct Recorder {
    pub sent: Mutex<Vec<Delivery>>,
    pub script: Mutex<VecDeque<SendOutcome>>,
}

#[async_trait]
impl Channel for Recorder {
    fn name(&self) -> &str {
        CHANNEL
    }
    fn kind(&self) -> ChannelKind {
        ChannelKind::Log
    }
    async fn send(&self, d: &Delivery) -> SendOutcome {
        self.sent.lock().push(d.clone());
        let scripted = self.script.lock().pop_front();
        scripted.unwrap_or_else(|| SendOutcome::Delivered {
            provider_msgid: Some(format!("m{}", d.timer_id)),
            status: Some(200),
        })
    }
}

/// A pipeline on a fresh in-memory store that owns every shard.
pub struct Rig {
    pub pipe: Arc<Pipeline>,
    pub clock: ManualClock,
    pub channel: Arc<Recorder>,
}

impl Rig {
    pub async fn new(cfg: EngineConfig) -> Self {
        Self::with_in_doubt(cfg, herald_channels::InDoubt::Resend).await
    }

    /// A rig whose channel treats in-doubt sends as `in_doubt` says.
    pub async fn with_in_doubt(cfg: EngineConfig, in_doubt: herald_channels::InDoubt) -> Self {
        let store = herald_store::open("sqlite::memory:", &StoreOptions::default())
            .await
            .expect("an in-memory store");
        store.init_shards(SHARDS).await.expect("shards");
        let clock = ManualClock::new(T0);
        let channel = Arc::new(Recorder::default());
        let mut spec = ChannelSpec::new(channel.clone(), 1, None, RetryPolicy::default());
        spec.in_doubt = in_doubt;
        let lease_ms = cfg.lease_ms;
        let pipe = Arc::new(Pipeline::new(
            store,
            Arc::new(clock.clone()),
            vec![spec],
            cfg,
            SHARDS,
        ));
        let all: Vec<u16> = (0..SHARDS).collect();
        let leases = pipe
            .store
            .acquire_shards(&holder(), &all, T0, lease_ms)
            .await
            .expect("leases");
        pipe.ownership.hold(&leases);
        Self {
            pipe,
            clock,
            channel,
        }
    }

    /// Commits timers on `channel` due at the given clock times, on shards
    /// 0, 1, 2, ... in turn; returns their ids.
    pub async fn insert_on(&self, channel: &str, due: &[i64]) -> Vec<TimerId> {
        self.insert_for(herald_core::DEFAULT_TENANT, channel, due)
            .await
    }

    /// [`Rig::insert_on`] for timers of `tenant`.
    pub async fn insert_for(
        &self,
        tenant: herald_core::TenantId,
        channel: &str,
        due: &[i64],
    ) -> Vec<TimerId> {
        let ops = due
            .iter()
            .enumerate()
            .map(|(i, &due_at)| {
                WriteOp::InsertTimer(NewTimer {
                    tenant,
                    shard: (i % usize::from(SHARDS)) as u16,
                    due_at,
                    priority: 5,
                    kind: TimerKind::Timer,
                    channel: channel.into(),
                    recipient: format!("r{i}"),
                    message: "{}".into(),
                    idempotency_key: None,
                    created_at: T0,
                    traceparent: None,
                    routing: None,
                })
            })
            .collect();
        let results = self.pipe.store.apply(ops).await.expect("insert");
        results
            .into_iter()
            .map(|r| match r {
                WriteResult::Created(t) => t.id,
                other => panic!("not created: {other:?}"),
            })
            .collect()
    }

    /// Commits a reminder of `user` on the test channel for `channel_type`,
    /// due now.
    pub async fn insert_reminder(&self, user: &str, channel_type: &str) -> TimerId {
        let message = serde_json::json!({"user_id": user, "subject_id": "s1",
            "channel_type": channel_type, "lead_minutes": 5});
        let op = WriteOp::InsertTimer(NewTimer {
            tenant: herald_core::DEFAULT_TENANT,
            shard: 0,
            due_at: T0,
            priority: 5,
            kind: TimerKind::Reminder,
            channel: CHANNEL.into(),
            recipient: user.into(),
            message: message.to_string(),
            idempotency_key: None,
            created_at: T0,
            traceparent: None,
            routing: None,
        });
        match self.pipe.store.apply(vec![op]).await.expect("insert").pop() {
            Some(WriteResult::Created(t)) => t.id,
            other => panic!("not created: {other:?}"),
        }
    }

    /// Places a timer to `user` on the test channel, requested due `due`, in
    /// a digest (its spec as JSON) the way the API does; returns its id and
    /// its due time (the digest's close).
    pub async fn insert_digest(
        &self,
        user: &str,
        due: i64,
        digest: &str,
        n: u32,
    ) -> (TimerId, i64) {
        let routing = format!(r#"{{"to":"email","digest":{digest}}}"#);
        let op = WriteOp::InsertDigest(NewTimer {
            tenant: herald_core::DEFAULT_TENANT,
            shard: 1,
            due_at: due,
            priority: 5,
            kind: TimerKind::Timer,
            channel: CHANNEL.into(),
            recipient: user.into(),
            message: format!(r#"{{"n":{n}}}"#),
            idempotency_key: None,
            created_at: T0,
            traceparent: None,
            routing: Some(routing),
        });
        match self.pipe.store.apply(vec![op]).await.expect("insert").pop() {
            Some(WriteResult::DigestCreated { timer, .. }) => (timer.id, timer.due_at),
            other => panic!("not created: {other:?}"),
        }
    }

    /// Writes `user`'s directory entry (profile JSON).
    pub async fn put_subscriber(&self, user: &str, profile: &str) {
        let op = WriteOp::PutSubscriber(herald_store::PutSubscriber {
            tenant: herald_core::DEFAULT_TENANT,
            user_id: user.into(),
            profile: profile.into(),
            if_version: None,
            at: T0,
        });
        self.pipe
            .store
            .apply(vec![op])
            .await
            .expect("put subscriber");
    }

    /// [`Rig::insert_on`] the test channel.
    pub async fn insert(&self, due: &[i64]) -> Vec<TimerId> {
        self.insert_on(CHANNEL, due).await
    }

    pub async fn timer(&self, id: TimerId) -> TimerRecord {
        self.pipe
            .store
            .get_timer(id)
            .await
            .expect("read")
            .expect("the timer")
    }

    pub async fn state(&self, id: TimerId) -> TimerState {
        self.timer(id).await.state
    }

    /// A timer's wheel entry as its row stands now.
    pub async fn due(&self, id: TimerId) -> DueTimer {
        let t = self.timer(id).await;
        DueTimer::from(t.due_entry())
    }
}
