//! New-timer announcements between nodes: `pg_notify` on write, `LISTEN` on read.
//!
//! # Payload
//!
//! `ORIGIN|ID,DUE_AT,SHARD,PRIORITY,TENANT;ID,DUE_AT,SHARD,PRIORITY,TENANT;...`
//! in decimal, on channel [`CHANNEL`]. An entry without its tenant (written
//! before tenants existed) is the default tenant's; a reader that knows no
//! tenants ignores the fifth field. `ORIGIN` identifies the store handle that wrote the
//! timers: a handle's own subscribers skip its notifications (the trait promises
//! timers *other* processes created; a node already has its own). A batch is
//! split into as many notifications as it takes to keep each payload under
//! PostgreSQL's 8000-byte limit.
//!
//! # Delivery
//!
//! Each subscriber has its own connection (not from the pool) running `LISTEN`,
//! driven by a task that parses payloads into `Vec<DueEntry>` and passes them on
//! a bounded channel. When the channel is full the entries are dropped with a
//! warning; the engine's periodic loader scan finds them anyway. When the
//! connection drops, the task reconnects with backoff and the receiver stays the
//! same; notifications sent while it was away are lost (the loader again). The
//! task ends when the receiver is dropped or the store is.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_postgres::AsyncMessage;

use herald_core::{DEFAULT_TENANT, TenantId};

use super::error::pg_error;
use super::tls::RustlsConnect;
use crate::{DueEntry, Result, StoreError};

/// The notification channel.
pub const CHANNEL: &str = "herald_timers";
/// Payloads stay under this many bytes (PostgreSQL refuses 8000 or more).
pub const MAX_PAYLOAD: usize = 7_900;
/// Notifications buffered for a slow subscriber before new ones are dropped.
const BUFFER: usize = 1_024;
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// TCP keepalive of the listening connection, so a dead peer is noticed.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);

/// The payloads announcing `entries`, each under [`MAX_PAYLOAD`] bytes.
pub fn encode(origin: &str, entries: &[DueEntry]) -> Vec<String> {
    use std::fmt::Write;
    let mut out = Vec::new();
    let mut current = String::new();
    let mut entry = String::with_capacity(48);
    for e in entries {
        entry.clear();
        let _ = write!(
            entry,
            "{},{},{},{},{}",
            e.id, e.due_at, e.shard, e.priority, e.tenant
        );
        let header = origin.len() + 1;
        if !current.is_empty() && current.len() + 1 + entry.len() > MAX_PAYLOAD {
            out.push(std::mem::take(&mut current));
        }
        if current.is_empty() {
            current.reserve(MAX_PAYLOAD.min(header + entries.len() * 40));
            current.push_str(origin);
            current.push('|');
        } else {
            current.push(';');
        }
        current.push_str(&entry);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Splits a payload into its origin and entries.
pub fn decode(payload: &str) -> std::result::Result<(&str, Vec<DueEntry>), String> {
    let (origin, list) = payload
        .split_once('|')
        .ok_or_else(|| "no origin".to_string())?;
    let mut entries = Vec::with_capacity(list.len() / 32 + 1);
    for item in list.split(';').filter(|s| !s.is_empty()) {
        let mut fields = item.split(',');
        let mut next = |name: &str| {
            fields
                .next()
                .ok_or_else(|| format!("entry {item:?}: no {name}"))
        };
        let bad = |name: &str| format!("entry {item:?}: bad {name}");
        let id = next("id")?.parse().map_err(|_| bad("id"))?;
        let due_at = next("due_at")?.parse().map_err(|_| bad("due_at"))?;
        let shard = next("shard")?.parse().map_err(|_| bad("shard"))?;
        let priority = next("priority")?.parse().map_err(|_| bad("priority"))?;
        let tenant = match fields.next() {
            None => DEFAULT_TENANT,
            Some(t) => TenantId(t.parse().map_err(|_| bad("tenant"))?),
        };
        if fields.next().is_some() {
            return Err(format!("entry {item:?}: too many fields"));
        }
        entries.push(DueEntry {
            id,
            due_at,
            shard,
            priority,
            tenant,
        });
    }
    Ok((origin, entries))
}

/// Starts a listener; returns once `LISTEN` is in effect (or the first
/// connection failed).
pub(super) async fn subscribe(
    mut config: tokio_postgres::Config,
    tls: RustlsConnect,
    origin: String,
) -> Result<(mpsc::Receiver<Vec<DueEntry>>, JoinHandle<()>)> {
    config.keepalives(true).keepalives_idle(KEEPALIVE_IDLE);
    let (tx, rx) = mpsc::channel(BUFFER);
    let (ready_tx, ready_rx) = oneshot::channel();
    let handle = tokio::spawn(listen(config, tls, origin, tx, ready_tx));
    match ready_rx.await {
        Ok(Ok(())) => Ok((rx, handle)),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(StoreError::unavailable(
            "postgres listener ended before listening",
        )),
    }
}

enum Ended {
    ReceiverGone,
    Failed(StoreError),
}

async fn listen(
    config: tokio_postgres::Config,
    tls: RustlsConnect,
    origin: String,
    tx: mpsc::Sender<Vec<DueEntry>>,
    ready: oneshot::Sender<Result<()>>,
) {
    let mut ready = Some(ready);
    let mut backoff = FIRST_BACKOFF;
    loop {
        match listen_once(&config, &tls, &origin, &tx, &mut ready, &mut backoff).await {
            Ended::ReceiverGone => return,
            Ended::Failed(e) => {
                if let Some(r) = ready.take() {
                    let _ = r.send(Err(e));
                    return;
                }
                tracing::warn!(
                    error = %e,
                    retry_in_ms = u64::try_from(backoff.as_millis()).unwrap_or(u64::MAX),
                    "postgres LISTEN connection lost; reconnecting"
                );
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = tx.closed() => return,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

async fn listen_once(
    config: &tokio_postgres::Config,
    tls: &RustlsConnect,
    origin: &str,
    tx: &mpsc::Sender<Vec<DueEntry>>,
    ready: &mut Option<oneshot::Sender<Result<()>>>,
    backoff: &mut Duration,
) -> Ended {
    let (client, mut connection) = match config.connect(tls.clone()).await {
        Ok(pair) => pair,
        Err(e) => return Ended::Failed(pg_error("connecting to LISTEN", &e)),
    };
    // Notifications arrive on the connection; polling it also drives our queries.
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    let listen = client.batch_execute("LISTEN herald_timers");
    tokio::pin!(listen);
    let mut listening = false;
    let mut dropped: u64 = 0;
    // A gap the subscriber has not been told of yet.
    let mut gap = false;
    loop {
        if gap {
            match tx.try_send(Vec::new()) {
                Ok(()) => gap = false,
                Err(mpsc::error::TrySendError::Full(_)) => {}
                Err(mpsc::error::TrySendError::Closed(_)) => return Ended::ReceiverGone,
            }
        }
        tokio::select! {
            r = &mut listen, if !listening => match r {
                Ok(()) => {
                    listening = true;
                    *backoff = FIRST_BACKOFF;
                    match ready.take() {
                        Some(r) => { let _ = r.send(Ok(())); }
                        None => {
                            // Notifications sent while we were away are lost:
                            // tell the subscriber to re-read (an empty batch).
                            tracing::info!("postgres LISTEN re-established");
                            gap = true;
                        }
                    }
                }
                Err(e) => return Ended::Failed(pg_error("LISTEN", &e)),
            },
            msg = messages.next() => match msg {
                Some(Ok(AsyncMessage::Notification(n))) if n.channel() == CHANNEL => {
                    match decode(n.payload()) {
                        Ok((from, _)) if from == origin => {}
                        Ok((_, entries)) if entries.is_empty() => {}
                        Ok((_, entries)) => match tx.try_send(entries) {
                            Ok(()) => {}
                            Err(mpsc::error::TrySendError::Full(lost)) => {
                                dropped += lost.len() as u64;
                                gap = true;
                                tracing::warn!(
                                    entries = lost.len(),
                                    dropped_total = dropped,
                                    "timer notification dropped: subscriber is behind"
                                );
                            }
                            Err(mpsc::error::TrySendError::Closed(_)) => return Ended::ReceiverGone,
                        },
                        Err(e) => tracing::warn!(
                            error = %e,
                            sender_pid = n.process_id(),
                            "unreadable timer notification ignored"
                        ),
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Ended::Failed(pg_error("LISTEN connection", &e)),
                None => {
                    return Ended::Failed(StoreError::unavailable(
                        "postgres: LISTEN connection closed",
                    ));
                }
            },
            _ = tx.closed() => return Ended::ReceiverGone,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: i64) -> DueEntry {
        DueEntry {
            id,
            due_at: 1_700_000_000_000 + id,
            shard: (id % 65_536) as u16,
            priority: (id % 10) as u8,
            tenant: TenantId((id % 7) as u32 + 1),
        }
    }

    #[test]
    fn round_trips_and_splits_under_the_limit() {
        let entries: Vec<DueEntry> = (0..5_000)
            .map(|i| entry(i64::MAX / 2 - i * 1_000_003))
            .collect();
        let payloads = encode("abc.123", &entries);
        assert!(payloads.len() > 1);
        let mut back = Vec::new();
        for p in &payloads {
            assert!(p.len() <= MAX_PAYLOAD, "{}", p.len());
            let (origin, got) = decode(p).unwrap();
            assert_eq!(origin, "abc.123");
            back.extend(got);
        }
        assert_eq!(back, entries);
        assert!(encode("o", &[]).is_empty());
        assert_eq!(decode("o|").unwrap().1, vec![]);
    }

    #[test]
    fn negative_times_and_bad_payloads() {
        let e = DueEntry {
            id: 1,
            due_at: -5,
            shard: 0,
            priority: 0,
            tenant: TenantId(3),
        };
        let p = encode("x", &[e]);
        assert_eq!(p, vec!["x|1,-5,0,0,3".to_string()]);
        assert_eq!(decode(&p[0]).unwrap().1, vec![e]);
        // As written before tenants: the default tenant's.
        assert_eq!(
            decode("x|1,-5,0,0").unwrap().1,
            vec![DueEntry {
                tenant: DEFAULT_TENANT,
                ..e
            }]
        );
        for bad in [
            "",
            "1,2,3,4",
            "o|1,2,3",
            "o|1,2,3,x",
            "o|1,2,70000,1",
            "o|1,2,3,300",
            "o|1,2,3,4,-1",
            "o|1,2,3,4,x",
            "o|1,2,3,4,5,6",
        ] {
            assert!(decode(bad).is_err(), "{bad:?}");
        }
    }
}
