//! Group commit for small writes that many loops make at once: timers marked
//! `firing` before their send (`marker`), and campaign workers' outcomes
//! (`campaign::worker`). Every caller adds its write to a shared list, and
//! whichever gets the write turn writes the whole list (up to a batch) in one
//! store call and answers the others. So a commit, and on PostgreSQL a job's
//! lock, serves everyone who was waiting for it, however many loops there
//! are. No task of its own: a turn is taken only while someone waits.

use std::future::Future;

use tokio::sync::oneshot;

type Waiting<R, A> = (R, oneshot::Sender<Option<A>>);

pub(crate) struct GroupCommit<R, A> {
    /// Writes waiting for a turn, oldest first.
    waiting: parking_lot::Mutex<Vec<Waiting<R, A>>>,
    /// The write turn: one batch in the store at a time; the writes that
    /// arrive meanwhile make the next batch. (Two at a time was slower for
    /// campaigns on PostgreSQL: the second waits on the job's lock.)
    turn: tokio::sync::Mutex<()>,
}

impl<R, A> Default for GroupCommit<R, A> {
    fn default() -> Self {
        Self {
            waiting: parking_lot::Mutex::new(Vec::new()),
            turn: tokio::sync::Mutex::new(()),
        }
    }
}

impl<R, A> GroupCommit<R, A> {
    /// Writes `req` in a batch with whatever else waits, through `write`,
    /// which answers each write of a batch in order or fails them all
    /// (`None`). Returns this write's answer once its batch is done; `None`
    /// when the batch failed, or answered a different number of writes.
    pub async fn submit<W, F>(&self, req: R, max_batch: usize, write: W) -> Option<A>
    where
        W: Fn(Vec<R>) -> F,
        F: Future<Output = Option<Vec<A>>>,
    {
        let (tx, mut rx) = oneshot::channel();
        self.waiting.lock().push((req, tx));
        loop {
            let _turn = self.turn.lock().await;
            match rx.try_recv() {
                Ok(answer) => return answer,
                // A writer dropped mid-batch (its task was cancelled): the
                // outcome is unknown, so it counts as a failure.
                Err(oneshot::error::TryRecvError::Closed) => return None,
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            let batch: Vec<Waiting<R, A>> = {
                let mut w = self.waiting.lock();
                let n = w.len().min(max_batch.max(1));
                w.drain(..n).collect()
            };
            if batch.is_empty() {
                continue;
            }
            let (reqs, answers): (Vec<R>, Vec<_>) = batch.into_iter().unzip();
            let n = reqs.len();
            match write(reqs).await {
                Some(results) if results.len() == n => {
                    for (tx, a) in answers.into_iter().zip(results) {
                        let _ = tx.send(Some(a));
                    }
                }
                Some(results) => {
                    tracing::error!(
                        n,
                        answers = results.len(),
                        "a group commit answered a different number of writes"
                    );
                    for tx in answers {
                        let _ = tx.send(None);
                    }
                }
                None => {
                    for tx in answers {
                        let _ = tx.send(None);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_writes_share_batches_and_each_gets_its_answer() {
        let gc: Arc<GroupCommit<u32, u32>> = Arc::default();
        let calls = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for i in 0..200u32 {
            let (gc, calls) = (gc.clone(), calls.clone());
            tasks.push(tokio::spawn(async move {
                gc.submit(i, 64, |batch: Vec<u32>| {
                    let calls = calls.clone();
                    async move {
                        calls.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                        Some(batch.into_iter().map(|x| x * 2).collect())
                    }
                })
                .await
            }));
        }
        for (i, t) in tasks.into_iter().enumerate() {
            assert_eq!(t.await.unwrap(), Some(i as u32 * 2));
        }
        let n = calls.load(Ordering::SeqCst);
        assert!(n < 200, "{n} store calls for 200 writes: no batching");
    }

    #[tokio::test]
    async fn a_failed_or_short_batch_fails_every_write_in_it() {
        let gc: GroupCommit<u32, u32> = GroupCommit::default();
        assert_eq!(gc.submit(1, 8, |_| async { None }).await, None);
        assert_eq!(gc.submit(1, 8, |_| async { Some(vec![]) }).await, None);
        assert_eq!(gc.submit(3, 8, |b| async move { Some(b) }).await, Some(3));
    }
}
