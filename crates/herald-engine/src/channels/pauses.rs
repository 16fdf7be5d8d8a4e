//! Operators' channel pauses: stored cluster-wide, read here about every
//! [`POLL_MS`], so every node holds a paused channel within about a second.
//! The senders (`channels/worker.rs`, `campaign/worker.rs`) look at what this
//! loop last read.

use std::sync::Arc;
use std::time::Duration;

use herald_store::{ChannelPause, Store};

use crate::timers::pipeline::Pipeline;

/// How often every node reads the stored pauses.
pub(crate) const POLL_MS: u64 = 500;

/// Reads the stored pauses until the engine stops.
pub(crate) async fn run(pipe: Arc<Pipeline>) {
    while !pipe.stop.is_stopped() {
        if let Err(e) = refresh(&pipe).await {
            // The last pauses read stay in force until the store answers again.
            tracing::warn!(error = %e, "reading channel pauses failed");
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(POLL_MS)) => {}
            _ = pipe.stop.wait() => {}
        }
    }
}

/// Reads the stored pauses once and hands each configured channel its own
/// (a pause of a channel this node does not have is ignored).
pub(crate) async fn refresh(pipe: &Pipeline) -> herald_store::Result<()> {
    let stored = read(pipe.store.as_ref()).await?;
    for (name, rt) in pipe.channels.iter() {
        let pause = stored
            .iter()
            .find(|(channel, _)| channel == name)
            .map(|(_, p)| p.clone());
        rt.operator.set(pause);
    }
    Ok(())
}

async fn read(store: &dyn Store) -> herald_store::Result<Vec<(String, ChannelPause)>> {
    store.channel_pauses().await
}
