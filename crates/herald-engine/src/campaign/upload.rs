//! An audience upload under way: recipients come in batches of any size, are
//! stored in chunks of [`AUDIENCE_CHUNK`], and the audience is sealed at the
//! end. One chunk is written in the background while the caller reads the
//! next, so parsing and the store overlap.
//!
//! A recipient listed again is dropped as it arrives, so a job sends to each
//! once: the upload remembers a 128-bit xxh3 fingerprint of every recipient
//! (16 bytes each while the upload runs; a chance collision, which would
//! drop a distinct recipient, is about 10^-23 at the 50M-recipient limit).
//!
//! Nothing of an upload that does not finish remains: [`AudienceUpload::abandon`]
//! removes the audience, and so does dropping an unfinished upload (the
//! client went away mid-body).

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use herald_core::Clock;
use herald_store::{AUDIENCE_CHUNK, AudienceRecord, Store, StoreError};
use tokio::task::JoinHandle;

use super::CampaignError;

pub struct AudienceUpload {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    id: i64,
    /// Most recipients the audience may hold.
    max: u64,
    /// Recipients taken so far, written or not.
    taken: u64,
    /// Index of the first recipient of `pending`.
    next_start: u64,
    /// Recipients not yet handed to a write.
    pending: Vec<String>,
    inflight: Option<JoinHandle<Result<(), StoreError>>>,
    /// Sealed or removed: nothing is left to clean up on drop.
    settled: bool,
    /// Fingerprints of the recipients taken so far.
    seen: HashSet<u128, BuildHasherDefault<Fingerprint>>,
    /// Recipients dropped as listed before.
    duplicates: u64,
}

/// A hasher for values that are already uniform hashes: folds, no mixing.
#[derive(Default)]
struct Fingerprint(u64);

impl Hasher for Fingerprint {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u128(&mut self, v: u128) {
        self.0 = (v as u64) ^ ((v >> 64) as u64);
    }
}

impl AudienceUpload {
    /// Starts an upload into audience `id` (created, not sealed).
    pub(super) fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, id: i64, max: u64) -> Self {
        Self {
            store,
            clock,
            id,
            max,
            taken: 0,
            next_start: 0,
            pending: Vec::with_capacity(AUDIENCE_CHUNK as usize * 2),
            inflight: None,
            settled: false,
            seen: HashSet::default(),
            duplicates: 0,
        }
    }

    /// The audience being written.
    pub fn id(&self) -> i64 {
        self.id
    }

    /// Recipients dropped so far because they were listed before.
    pub fn duplicates_removed(&self) -> u64 {
        self.duplicates
    }

    /// Takes the next recipients (already checked), writing every full chunk.
    /// Over the limit is an error; the caller then abandons the upload.
    pub async fn push(&mut self, mut recipients: Vec<String>) -> Result<(), CampaignError> {
        let before = recipients.len();
        let seen = &mut self.seen;
        recipients.retain(|r| seen.insert(xxhash_rust::xxh3::xxh3_128(r.as_bytes())));
        self.duplicates += (before - recipients.len()) as u64;
        self.taken += recipients.len() as u64;
        if self.taken > self.max {
            return Err(CampaignError::TooManyRecipients { max: self.max });
        }
        if self.pending.is_empty() {
            self.pending = recipients;
        } else {
            self.pending.extend(recipients);
        }
        let chunk = AUDIENCE_CHUNK as usize;
        while self.pending.len() >= chunk {
            let rest = self.pending.split_off(chunk);
            let full = std::mem::replace(&mut self.pending, rest);
            self.write(full).await?;
        }
        Ok(())
    }

    /// Writes what is left, waits for every write and seals the audience. On
    /// failure the audience is removed.
    pub async fn finish(mut self) -> Result<AudienceRecord, CampaignError> {
        let written = async {
            if !self.pending.is_empty() {
                let last = std::mem::take(&mut self.pending);
                self.write(last).await?;
            }
            self.wait().await
        }
        .await;
        if let Err(e) = written {
            self.abandon().await;
            return Err(e);
        }
        self.settled = true;
        match self
            .store
            .seal_audience(self.id, self.taken, self.clock.now_ms())
            .await
        {
            Ok(Some(a)) => Ok(a),
            Ok(None) => Err(CampaignError::Interrupted {
                why: "the audience vanished during its upload",
            }),
            Err(e) => {
                drop_audience(&*self.store, self.id, "a refused seal").await;
                Err(e.into())
            }
        }
    }

    /// Removes the audience, after any write in flight.
    pub async fn abandon(mut self) {
        self.settled = true;
        if let Some(h) = self.inflight.take() {
            let _ = h.await;
        }
        drop_audience(&*self.store, self.id, "a refused upload").await;
    }

    /// Waits for the write in flight, then starts writing `chunk`.
    async fn write(&mut self, chunk: Vec<String>) -> Result<(), CampaignError> {
        self.wait().await?;
        let store = self.store.clone();
        let (id, start) = (self.id, self.next_start);
        self.next_start += chunk.len() as u64;
        self.inflight = Some(tokio::spawn(async move {
            store.append_audience(id, start, &chunk).await
        }));
        Ok(())
    }

    async fn wait(&mut self) -> Result<(), CampaignError> {
        match self.inflight.take() {
            None => Ok(()),
            Some(h) => match h.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(e.into()),
                Err(_) => Err(CampaignError::Interrupted {
                    why: "writing the audience failed",
                }),
            },
        }
    }
}

impl Drop for AudienceUpload {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let (store, id, inflight) = (self.store.clone(), self.id, self.inflight.take());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                if let Some(h) = inflight {
                    let _ = h.await;
                }
                drop_audience(&*store, id, "an interrupted upload").await;
            });
        }
    }
}

/// Removes an audience left behind by a use case that failed (`left_by` says
/// which). A failure is logged, not returned: the caller is already answering
/// with the error that led here.
pub(super) async fn drop_audience(store: &dyn Store, id: i64, left_by: &'static str) {
    if let Err(e) = store.drop_audience(id).await {
        tracing::warn!(audience = id, left_by, error = %e, "dropping an audience failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use herald_core::SystemClock;
    use herald_store::StoreOptions;

    async fn upload(max: u64) -> (Arc<dyn Store>, AudienceUpload) {
        let store = herald_store::open("sqlite::memory:", &StoreOptions::default())
            .await
            .unwrap();
        let id = store
            .create_audience(herald_core::DEFAULT_TENANT, None, 0)
            .await
            .unwrap();
        let up = AudienceUpload::new(store.clone(), Arc::new(SystemClock), id, max);
        (store, up)
    }

    fn names(range: std::ops::Range<u64>) -> Vec<String> {
        range.map(|i| format!("r{i}")).collect()
    }

    #[tokio::test]
    async fn batches_of_any_size_become_whole_chunks() {
        let n = AUDIENCE_CHUNK * 2 + 7;
        let (store, mut up) = upload(n).await;
        let id = up.id();
        // Uneven batches, an empty one among them.
        let mut start = 0;
        for size in [1, AUDIENCE_CHUNK - 3, 0, AUDIENCE_CHUNK + 5, 4] {
            up.push(names(start..start + size)).await.unwrap();
            start += size;
        }
        assert_eq!(start, n);
        let a = up.finish().await.unwrap();
        assert_eq!((a.id, a.size), (id, Some(n)));
        let all = store.audience_slice(id, 0, n).await.unwrap();
        assert_eq!(all, names(0..n));
    }

    #[tokio::test]
    async fn a_recipient_listed_again_is_kept_once() {
        let (store, mut up) = upload(10).await;
        let id = up.id();
        up.push(vec!["a".into(), "b".into(), "a".into()])
            .await
            .unwrap();
        up.push(vec!["b".into(), "c".into()]).await.unwrap();
        assert_eq!(up.duplicates_removed(), 2);
        let a = up.finish().await.unwrap();
        assert_eq!(a.size, Some(3));
        let all = store.audience_slice(id, 0, 3).await.unwrap();
        assert_eq!(all, ["a", "b", "c"]);
    }

    #[tokio::test]
    async fn over_the_limit_is_refused_and_abandoning_leaves_nothing() {
        let (store, mut up) = upload(3).await;
        let id = up.id();
        up.push(names(0..2)).await.unwrap();
        assert!(matches!(
            up.push(names(2..4)).await,
            Err(CampaignError::TooManyRecipients { max: 3 })
        ));
        up.abandon().await;
        assert_eq!(store.get_audience(id).await.unwrap(), None);
    }

    #[tokio::test]
    async fn an_upload_dropped_midway_is_removed() {
        let (store, mut up) = upload(u64::MAX).await;
        let id = up.id();
        up.push(names(0..AUDIENCE_CHUNK + 1)).await.unwrap();
        drop(up);
        for _ in 0..200 {
            if store.get_audience(id).await.unwrap().is_none() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the audience of a dropped upload is still there");
    }
}
