//! Cluster membership and shard ownership.
//!
//! Every `heartbeat_ms` a node beats in the store, renews the leases it holds,
//! and moves toward its fair share, `ceil(shards / live nodes)`: it claims free
//! or expired shards while below it and gives shards back while above it. A
//! node never takes a shard whose lease is still running, so a dead node's
//! shards move once its leases expire, and never while a live owner holds them.
//!
//! Giving a shard back takes two rounds: first the node stops firing it, so
//! deliveries under way finish under the still-valid lease; one round later
//! it releases the lease. Nothing in flight is fenced off and sent twice.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use herald_channels::InDoubt;
use herald_core::ShardSet;
use herald_store::{Fence, Holder, StoreError};

use crate::timers::pipeline::Pipeline;
use crate::timers::queue::DueTimer;

pub(crate) struct Membership {
    pipe: Arc<Pipeline>,
    /// This process: its node id and incarnation.
    pub node: Holder,
    shards: u16,
    /// Shards no longer fired, to be released next round.
    draining: parking_lot::Mutex<BTreeSet<u16>>,
    /// When the last round completed (beat and renewed), by the engine's clock;
    /// 0 before the first.
    last_round_ms: AtomicI64,
}

impl Membership {
    pub fn new(pipe: Arc<Pipeline>, node: Holder, shards: u16) -> Self {
        Self {
            pipe,
            node,
            shards,
            draining: parking_lot::Mutex::new(BTreeSet::new()),
            last_round_ms: AtomicI64::new(0),
        }
    }

    pub async fn run(self: Arc<Self>) {
        let stop = &self.pipe.stop;
        while !stop.is_stopped() {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(self.pipe.cfg.get().heartbeat_ms)) => {}
                _ = stop.wait() => return,
            }
            if let Err(e) = self.run_once().await {
                tracing::warn!(error = %e, node = %self.node.node_id, incarnation = self.node.incarnation, "membership round failed; leases run on until they expire");
            }
        }
    }

    /// One heartbeat round: beat, renew, release what was drained, then
    /// rebalance.
    pub async fn run_once(&self) -> Result<(), StoreError> {
        let p = &*self.pipe;
        let now = p.clock.now_ms();
        let lease_ms = p.cfg.get().lease_ms;
        let live = p.store.heartbeat(&self.node, now, lease_ms).await?;
        let live_n = live.len().max(1);
        p.sampled.set_nodes(live);
        // A channel's rate is the cluster's: each live node sends its share.
        for rt in p.channels.values() {
            rt.share_rate(live_n);
        }
        let target = usize::from(self.shards).div_ceil(live_n);

        // Renew; what is not renewed changed hands while we were away.
        let held = p.ownership.held();
        let renewed = p
            .store
            .renew_shards(&self.node, &held, now, lease_ms)
            .await?;
        if renewed.len() < held.len() {
            let kept: BTreeSet<u16> = renewed.iter().map(|l| l.shard).collect();
            let lost: Vec<u16> = held
                .iter()
                .map(|f| f.shard)
                .filter(|s| !kept.contains(s))
                .collect();
            tracing::warn!(node = %self.node.node_id, incarnation = self.node.incarnation, lost = lost.len(), "shards lost to other nodes");
            self.lose(lost);
        }
        p.ownership.hold(&renewed);
        self.note_lapse(now);

        // Release what the previous round stopped firing.
        let drained: Vec<u16> = std::mem::take(&mut *self.draining.lock())
            .into_iter()
            .collect();
        if !drained.is_empty() {
            p.store.release_shards(&self.node, &drained).await?;
            tracing::info!(node = %self.node.node_id, incarnation = self.node.incarnation, released = drained.len(), "released shards");
        }

        let mine = p.ownership.owned().len();
        if mine > target {
            // Stop firing the excess now; release it next round.
            let owned: Vec<u16> = p.ownership.owned().iter().collect();
            let excess: Vec<u16> = owned[target..].to_vec();
            tracing::info!(node = %self.node.node_id, incarnation = self.node.incarnation, mine, target, giving_back = excess.len(), live = live_n, "over fair share");
            self.lose(excess.iter().copied());
            self.draining.lock().extend(excess);
        } else if mine < target {
            let want = target - mine;
            let leases = p.store.shard_leases().await?;
            let mut taken = ShardSet::none(self.shards);
            for l in &leases {
                // Our own running leases (this incarnation's) are ours to take back.
                // Another incarnation of our node id is another holder: its
                // leases are taken only once they expire.
                let other = l.owner.is_some() && !self.node.is(l.owner.as_deref(), l.incarnation);
                let busy = other && l.lease_until > now;
                if busy || self.draining.lock().contains(&l.shard) {
                    taken.insert(l.shard);
                }
            }
            // Start at a node-specific offset so nodes joining together do not
            // all reach for the same shards.
            let start = herald_core::shard_for(self.node.node_id.as_bytes(), self.shards);
            let candidates: Vec<u16> = (0..self.shards)
                .map(|i| ((u32::from(start) + u32::from(i)) % u32::from(self.shards)) as u16)
                .filter(|s| !taken.contains(*s) && !p.ownership.owns(*s))
                .take(want)
                .collect();
            if !candidates.is_empty() {
                let got = p
                    .store
                    .acquire_shards(&self.node, &candidates, now, lease_ms)
                    .await?;
                if !got.is_empty() {
                    tracing::info!(node = %self.node.node_id, incarnation = self.node.incarnation, gained = got.len(), mine = mine + got.len(), target, live = live_n, "acquired shards");
                    self.gain(&got).await?;
                }
            }
        }
        self.last_round_ms.store(now, Ordering::Release);
        metrics::gauge!(crate::observe::metrics::OWNED_SHARDS)
            .set(p.ownership.owned().len() as f64);
        metrics::gauge!(crate::observe::metrics::CLUSTER_NODES).set(live_n as f64);
        Ok(())
    }

    /// Warns when the leases were renewed only after their guard time had
    /// begun (the last round began at `last_round_ms`, this one renewed from
    /// `started`): sends of that moment were fenced, and the loader reads
    /// them again (see [`Pipeline::fenced`]).
    fn note_lapse(&self, started: i64) {
        let p = &*self.pipe;
        let last = self.last_round_ms.load(Ordering::Acquire);
        let cfg = p.cfg.get();
        let renewed_at = p.clock.now_ms();
        let late = renewed_at.saturating_sub(last);
        if last > 0 && late > cfg.lease_ms.saturating_sub(cfg.lease_guard_ms) {
            tracing::warn!(
                node = %self.node.node_id,
                since_last_round_ms = late,
                round_ms = renewed_at.saturating_sub(started),
                lease_ms = cfg.lease_ms,
                "leases renewed late: sends were held meanwhile and are loaded again"
            );
        }
    }

    /// Starts firing newly leased shards: own them first (so new timers for them
    /// are wheeled from now on), then load what is already pending in them.
    ///
    /// Before that, it resolves the timers a stopped node left marked firing
    /// in them (channels that skip in-doubt sends, see [`crate::timers::marker`]):
    /// such a timer is no longer in the pending index, so no load would ever
    /// find it. If resolving fails the shards are not held: their leases are
    /// not renewed, and a later round takes them again and resolves then.
    async fn gain(&self, leases: &[herald_store::ShardLease]) -> Result<(), StoreError> {
        let p = &*self.pipe;
        self.resolve_in_doubt(leases).await?;
        p.ownership.hold(leases);
        let mut gained = ShardSet::none(self.shards);
        for l in leases {
            gained.insert(l.shard);
        }
        let until = p.schedule.horizon();
        let mut cursor = None;
        loop {
            let page = p
                .store
                .load_due(&gained, cursor, until, p.cfg.get().load_batch)
                .await?;
            if let Some(last) = page.last() {
                cursor = Some(last.cursor());
            }
            let full = page.len() >= p.cfg.get().load_batch;
            p.schedule.load(page.into_iter().map(DueTimer::from));
            if !full {
                return Ok(());
            }
            if p.schedule.full() {
                // The loader reads the rest as the wheel drains.
                p.schedule.mark_overflow();
                return Ok(());
            }
        }
    }

    /// Ends `in_doubt` the firing timers of these shards whose channel skips
    /// in-doubt sends, and puts the others back to pending (a channel that
    /// resends, or one no longer configured), under the leases just taken.
    async fn resolve_in_doubt(
        &self,
        leases: &[herald_store::ShardLease],
    ) -> Result<(), StoreError> {
        let p = &*self.pipe;
        let fences: Vec<Fence> = leases
            .iter()
            .map(|l| Fence {
                shard: l.shard,
                epoch: l.epoch,
            })
            .collect();
        let skip: Vec<String> = p
            .channels
            .values()
            .filter(|rt| rt.in_doubt() == InDoubt::Skip)
            .map(|rt| rt.name().to_string())
            .collect();
        let r = p
            .store
            .resolve_in_doubt(&fences, &skip, p.clock.now_ms())
            .await?;
        if r.in_doubt > 0 || r.resent > 0 {
            tracing::warn!(
                node = %self.node.node_id,
                incarnation = self.node.incarnation,
                shards = fences.len(),
                in_doubt = r.in_doubt,
                resent = r.resent,
                "resolved timers a stopped node left mid-send"
            );
            metrics::counter!(crate::observe::metrics::TIMERS_IN_DOUBT, "outcome" => "in_doubt")
                .increment(r.in_doubt);
            metrics::counter!(crate::observe::metrics::TIMERS_IN_DOUBT, "outcome" => "resent")
                .increment(r.resent);
        }
        Ok(())
    }

    /// Stops firing `shards` and drops their timers from the wheel.
    fn lose(&self, shards: impl IntoIterator<Item = u16>) {
        let p = &*self.pipe;
        p.ownership.drop_shards(shards);
        p.schedule.retain_shards(|s| p.ownership.owns(s));
    }

    /// Whether this node's leases are current: a membership round completed
    /// within the lease time, so what it holds was renewed and is still its.
    pub fn leases_current(&self, now: i64) -> bool {
        let last = self.last_round_ms.load(Ordering::Acquire);
        last > 0 && now.saturating_sub(last) <= self.pipe.cfg.get().lease_ms
    }

    /// Graceful exit: leave the cluster so others take the shards at once.
    pub async fn leave(&self) {
        let p = &*self.pipe;
        let all: Vec<u16> = p.ownership.owned().iter().collect();
        p.ownership.drop_shards(all);
        if let Err(e) = p.store.leave(&self.node).await {
            tracing::warn!(error = %e, node = %self.node.node_id, incarnation = self.node.incarnation, "leaving the cluster failed; leases expire on their own");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EngineConfig;
    use crate::testkit::{Rig, SHARDS, T0};
    use crate::timers::pipeline::Pipeline;

    /// A second node on the rig's store, on the same clock.
    fn second_node(rig: &Rig) -> Membership {
        let p = &rig.pipe;
        let pipe = Arc::new(Pipeline::new(
            p.store.clone(),
            p.clock.clone(),
            Vec::new(),
            EngineConfig::clone(&p.cfg.get()),
            SHARDS,
        ));
        Membership::new(pipe, Holder::new("node-2", 1), SHARDS)
    }

    /// A node taking over a dead node's shards resolves the timers it left
    /// marked firing before loading them: `in_doubt` when the taking node's
    /// channel skips in-doubt sends, pending again when it does not know it.
    #[tokio::test]
    async fn a_node_taking_over_resolves_what_the_dead_one_left_firing() {
        use herald_channels::InDoubt;
        use herald_core::TimerState;

        for (knows_channel, expected) in [(true, TimerState::InDoubt), (false, TimerState::Pending)]
        {
            let rig = Rig::with_in_doubt(EngineConfig::default(), InDoubt::Skip).await;
            let one = Membership::new(rig.pipe.clone(), crate::testkit::holder(), SHARDS);
            one.run_once().await.unwrap();
            let id = rig.insert(&[T0]).await[0];
            let p = rig.pipe.clone();
            p.ready.push(rig.due(id).await);
            let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
            let fetcher = crate::timers::fetcher::Fetcher::new(p.clone(), tx.clone());
            fetcher.run_once().await;
            fetcher.settled().await;
            let worker = crate::channels::worker::ChannelWorker::new(
                p.clone(),
                p.channels[crate::testkit::CHANNEL].clone(),
                tx,
                0,
            );
            worker.run_once().await;
            assert_eq!(rig.state(id).await, TimerState::Firing);

            // Node one dies; its leases run out.
            rig.clock.advance(p.cfg.get().lease_ms + 1);
            let mut channels = Vec::new();
            if knows_channel {
                let mut spec = crate::channels::spec::ChannelSpec::new(
                    rig.channel.clone(),
                    1,
                    None,
                    Default::default(),
                );
                spec.in_doubt = InDoubt::Skip;
                channels.push(spec);
            }
            let pipe = Arc::new(Pipeline::new(
                p.store.clone(),
                p.clock.clone(),
                channels,
                EngineConfig::clone(&p.cfg.get()),
                SHARDS,
            ));
            pipe.schedule.raise_horizon(T0 + 60_000_000);
            let two = Membership::new(pipe, Holder::new("node-2", 1), SHARDS);
            two.run_once().await.unwrap();
            assert_eq!(two.pipe.ownership.owned().len(), usize::from(SHARDS));
            assert_eq!(
                rig.state(id).await,
                expected,
                "knows the channel: {knows_channel}"
            );
            // A timer sent again is loaded with the shards.
            let wheeled = usize::from(expected == TimerState::Pending);
            assert_eq!(two.pipe.schedule.len(), wheeled);
        }
    }

    #[tokio::test]
    async fn nodes_move_to_their_fair_share_and_hand_over_on_leaving() {
        let rig = Rig::new(EngineConfig::default()).await;
        let one = Membership::new(rig.pipe.clone(), crate::testkit::holder(), SHARDS);
        one.run_once().await.unwrap();
        assert_eq!(rig.pipe.ownership.owned().len(), usize::from(SHARDS));
        let ids = rig.insert(&[T0 + 1_000; 4]).await;
        rig.pipe.schedule.raise_horizon(T0 + 60_000);
        rig.pipe.schedule.load([
            rig.due(ids[0]).await,
            rig.due(ids[1]).await,
            rig.due(ids[2]).await,
            rig.due(ids[3]).await,
        ]);

        let two = second_node(&rig);
        two.pipe.schedule.raise_horizon(T0 + 60_000);
        two.run_once().await.unwrap();
        assert_eq!(two.pipe.ownership.owned().len(), 0, "every shard is leased");
        // Node one stops firing its excess at once and releases it a round later.
        rig.clock.advance(1_000);
        one.run_once().await.unwrap();
        assert_eq!(rig.pipe.ownership.owned().len(), 2);
        assert_eq!(rig.pipe.schedule.len(), 2, "their timers left the wheel");
        one.run_once().await.unwrap();
        two.run_once().await.unwrap();
        assert_eq!(two.pipe.ownership.owned().len(), 2);
        assert_eq!(two.pipe.schedule.len(), 2, "and went into the new owner's");
        let (a, b) = (rig.pipe.ownership.owned(), two.pipe.ownership.owned());
        assert!(a.iter().all(|s| !b.contains(s)));

        one.leave().await;
        assert_eq!(rig.pipe.ownership.owned().len(), 0);
        two.run_once().await.unwrap();
        assert_eq!(two.pipe.ownership.owned().len(), usize::from(SHARDS));
    }
}
