//! The notification listener: on a store other nodes write too, it wheels the
//! timers they create for shards this node owns, as the store announces them.

use std::sync::Arc;

use herald_store::DueEntry;
use tokio::sync::mpsc;

use crate::timers::loader::Rescan;
use crate::timers::pipeline::Pipeline;
use crate::timers::queue::DueTimer;

/// Runs until the store's feed closes. An empty batch means the feed had a
/// gap (a reconnect): the loader re-reads its window.
pub(crate) async fn run(
    pipe: Arc<Pipeline>,
    mut rx: mpsc::Receiver<Vec<DueEntry>>,
    rescan: Arc<Rescan>,
) {
    while let Some(batch) = rx.recv().await {
        if batch.is_empty() {
            tracing::info!("timer notifications had a gap; re-reading the window");
            rescan.request();
            continue;
        }
        pipe.schedule.offer(
            batch
                .into_iter()
                .filter(|e| pipe.ownership.owns(e.shard))
                .map(DueTimer::from),
        );
    }
}
