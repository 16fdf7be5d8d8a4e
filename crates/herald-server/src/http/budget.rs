//! The node-wide budget of request-body bytes in flight
//! (`api.max_inflight_body_bytes`): what bodies being read, parsed and
//! committed hold in memory, and each caller's share of it
//! (`api.max_caller_body_bytes`). A request holds a [`Lease`]; one that
//! cannot get what it needs is answered `503 overloaded` with
//! `Retry-After`, so a burst of large uploads is refused instead of
//! exhausting the host, and one caller cannot spend the whole budget.
//!
//! A plain body's lease starts empty and grows as its bytes arrive (see
//! `crate::http::body_admission`). A streamed (bulk) request does not reserve its
//! whole body: its lease covers what it holds at once (a chunk being parsed
//! and committed, and its answers), growing and shrinking as it goes, never
//! below the floor it was admitted with. So a request, once admitted, can
//! always make progress within its floor, and the total held stays under
//! the budget.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::access::Caller;
use crate::http::error::ApiError;

const INFLIGHT_GAUGE: &str = "herald_api_inflight_body_bytes";
const REFUSED_COUNTER: &str = "herald_api_body_refusals_total";

/// Whose bodies are counted together against a caller's share: a stored
/// key, the admin key, or (without a key: open mode, a signed provider
/// callback) the peer's address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Holder {
    Key(i64),
    Admin,
    Peer(Option<IpAddr>),
}

impl Holder {
    /// The holder of a request from `peer` made by `caller`, if the guard
    /// recognised one.
    pub fn of(caller: Option<&Caller>, peer: Option<IpAddr>) -> Holder {
        match caller {
            Some(Caller {
                key_id: Some(id), ..
            }) => Holder::Key(*id),
            Some(c) if c.key_name.as_deref() == Some(crate::access::ADMIN_KEY_NAME) => {
                Holder::Admin
            }
            _ => Holder::Peer(peer),
        }
    }
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Holder::Key(id) => write!(f, "key {id}"),
            Holder::Admin => f.write_str("admin key"),
            Holder::Peer(Some(ip)) => write!(f, "peer {ip}"),
            Holder::Peer(None) => f.write_str("unknown peer"),
        }
    }
}

/// Why bytes were not granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Short {
    /// The node's budget is spent.
    Node,
    /// The caller holds its share already.
    Share,
}

/// What is held, in total and by holder (holders holding nothing are not
/// kept).
#[derive(Debug, Default)]
struct Held {
    total: u64,
    by_holder: HashMap<Holder, u64>,
}

/// The node's counts: one per node, shared by every request.
#[derive(Debug)]
struct Ledger {
    limit: u64,
    share: u64,
    held: Mutex<Held>,
}

impl Ledger {
    fn held(&self) -> MutexGuard<'_, Held> {
        // The counts stay consistent whatever panicked while holding them:
        // every update is one addition or subtraction.
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes `n` more bytes for `holder`, whose lease asking holds `own`
    /// already. A holder's only lease is refused by the node's budget
    /// alone, so a share smaller than one request's floor slows a caller
    /// down but never locks it out.
    fn take(&self, holder: &Holder, n: u64, own: u64) -> Result<(), Short> {
        if n == 0 {
            return Ok(());
        }
        let mut held = self.held();
        let mine = held.by_holder.get(holder).copied().unwrap_or(0);
        let total = held.total.checked_add(n).filter(|t| *t <= self.limit);
        let Some(total) = total else {
            return Err(Short::Node);
        };
        let others = mine.saturating_sub(own);
        if others > 0 && mine.saturating_add(n) > self.share {
            return Err(Short::Share);
        }
        held.total = total;
        *held.by_holder.entry(holder.clone()).or_default() += n;
        metrics::gauge!(INFLIGHT_GAUGE).set(total as f64);
        Ok(())
    }

    fn give(&self, holder: &Holder, n: u64) {
        if n == 0 {
            return;
        }
        let mut held = self.held();
        held.total = held.total.saturating_sub(n);
        if let Some(mine) = held.by_holder.get_mut(holder) {
            *mine = mine.saturating_sub(n);
            if *mine == 0 {
                held.by_holder.remove(holder);
            }
        }
        metrics::gauge!(INFLIGHT_GAUGE).set(held.total as f64);
    }
}

/// The budget as one request sees it: the node's counts, and the holder
/// its leases are charged to. The router holds one for the node
/// (`Holder::Peer(None)`); the body layer gives each request with a body
/// its own, bound to its caller, as the `Extension<Arc<BodyBudget>>` the
/// streaming handlers take.
#[derive(Debug)]
pub struct BodyBudget {
    ledger: Arc<Ledger>,
    holder: Holder,
}

impl BodyBudget {
    /// The node's budget: `limit` bytes in all, `share` at most for one
    /// holder's leases together.
    pub fn new(limit: u64, share: u64) -> Arc<Self> {
        metrics::describe_gauge!(
            INFLIGHT_GAUGE,
            "Request-body bytes held by requests being read, parsed or committed."
        );
        metrics::describe_counter!(
            REFUSED_COUNTER,
            "Requests refused (503 overloaded) for want of body budget, by reason: \
             node (the node's budget is spent) or share (the caller holds its share)."
        );
        Arc::new(Self {
            ledger: Arc::new(Ledger {
                limit,
                share,
                held: Mutex::default(),
            }),
            holder: Holder::Peer(None),
        })
    }

    /// The same budget, charging `holder`.
    pub fn bound_to(&self, holder: Holder) -> Arc<Self> {
        Arc::new(Self {
            ledger: self.ledger.clone(),
            holder,
        })
    }

    /// A lease of `floor` bytes, if the budget and the holder's share
    /// have them.
    pub fn lease(&self, floor: u64) -> Result<Lease, Overloaded> {
        let mut lease = Lease {
            ledger: self.ledger.clone(),
            holder: self.holder.clone(),
            floor: 0,
            granted: 0,
        };
        lease.cover(floor)?;
        lease.floor = floor;
        Ok(lease)
    }

    /// The most that may be held.
    pub fn limit(&self) -> u64 {
        self.ledger.limit
    }

    /// Bytes held now, by every holder.
    #[cfg(test)]
    pub fn in_use(&self) -> u64 {
        self.ledger.held().total
    }
}

/// One request's share of the budget; given back when dropped.
#[derive(Debug)]
pub struct Lease {
    ledger: Arc<Ledger>,
    holder: Holder,
    floor: u64,
    granted: u64,
}

impl Lease {
    /// Makes sure `used` bytes are covered, taking more from the budget if
    /// they are over what the lease holds.
    pub fn cover(&mut self, used: u64) -> Result<(), Overloaded> {
        if used <= self.granted {
            return Ok(());
        }
        let more = used - self.granted;
        if let Err(short) = self.ledger.take(&self.holder, more, self.granted) {
            let reason = match short {
                Short::Node => "node",
                Short::Share => "share",
            };
            metrics::counter!(REFUSED_COUNTER, "reason" => reason).increment(1);
            match short {
                Short::Node => tracing::warn!(
                    wanted = more,
                    held = self.granted,
                    limit = self.ledger.limit,
                    holder = %self.holder,
                    "request refused: the body budget is spent"
                ),
                Short::Share => tracing::debug!(
                    wanted = more,
                    held = self.granted,
                    share = self.ledger.share,
                    holder = %self.holder,
                    "request refused: the caller holds its share of the body budget"
                ),
            }
            return Err(Overloaded);
        }
        self.granted = used;
        Ok(())
    }

    /// Gives back what is over `used` (never going below the floor).
    pub fn trim(&mut self, used: u64) {
        let keep = used.max(self.floor);
        if self.granted > keep {
            self.ledger.give(&self.holder, self.granted - keep);
            self.granted = keep;
        }
    }

    /// The bytes this lease is admitted with and keeps at least.
    pub fn floor(&self) -> u64 {
        self.floor
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.ledger.give(&self.holder, self.granted);
    }
}

/// The budget is spent: `503 overloaded`, try again in a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overloaded;

impl Overloaded {
    pub fn error(self) -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            "too many request bodies are being read right now; retry shortly",
        )
    }
}

impl IntoResponse for Overloaded {
    fn into_response(self) -> Response {
        let mut resp = self.error().into_response();
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_stay_within_the_limit_and_give_back_on_drop() {
        let budget = BodyBudget::new(100, 100);
        let mut a = budget.lease(40).unwrap();
        let b = budget.lease(50).unwrap();
        assert_eq!(budget.lease(11).err(), Some(Overloaded));
        assert_eq!(budget.in_use(), 90);
        // Growing past what is left fails; within it succeeds.
        assert_eq!(a.cover(51), Err(Overloaded));
        a.cover(50).unwrap();
        assert_eq!(budget.in_use(), 100);
        // Trimming never goes below the floor.
        a.trim(0);
        assert_eq!(budget.in_use(), 90);
        drop(b);
        assert_eq!(budget.in_use(), 40);
        drop(a);
        assert_eq!(budget.in_use(), 0);
    }

    #[test]
    fn one_holder_keeps_to_its_share_and_others_still_get_theirs() {
        let node = BodyBudget::new(100, 30);
        let greedy = node.bound_to(Holder::Key(1));
        let other = node.bound_to(Holder::Key(2));
        let first = greedy.lease(20).unwrap();
        let second = greedy.lease(10).unwrap();
        // A third would take key 1 past its share of 30.
        assert_eq!(greedy.lease(1).err(), Some(Overloaded));
        // Another key is not held back by it.
        let theirs = other.lease(30).unwrap();
        assert_eq!(node.in_use(), 60);
        // Once key 1 gives back, it may take again.
        drop(second);
        greedy.lease(10).unwrap();
        drop((first, theirs));
        assert_eq!(node.in_use(), 0);
    }

    #[test]
    fn a_holders_only_lease_is_bounded_by_the_node_alone() {
        let node = BodyBudget::new(100, 10);
        let peer = node.bound_to(Holder::Peer(None));
        // Alone, it may grow past the share, up to the node's budget.
        let mut only = peer.lease(0).unwrap();
        only.cover(60).unwrap();
        assert_eq!(only.cover(101), Err(Overloaded));
        // A second lease of the same holder is then refused, and the first
        // may not grow while the second holds anything.
        let mut second = peer.lease(0).unwrap();
        assert_eq!(second.cover(1), Err(Overloaded));
        drop(only);
        second.cover(50).unwrap();
        assert_eq!(node.in_use(), 50);
    }

    #[test]
    fn holders_are_keys_the_admin_or_the_peer() {
        let ip: IpAddr = "10.0.0.7".parse().unwrap();
        let key = Caller::api_key(
            herald_core::DEFAULT_TENANT,
            "default",
            7,
            None,
            crate::access::Scopes::all(),
        );
        assert_eq!(Holder::of(Some(&key), Some(ip)), Holder::Key(7));
        assert_eq!(
            Holder::of(Some(&Caller::admin_key()), Some(ip)),
            Holder::Admin
        );
        // Open mode and unauthenticated callbacks: by address.
        assert_eq!(
            Holder::of(Some(&Caller::open()), Some(ip)),
            Holder::Peer(Some(ip))
        );
        assert_eq!(Holder::of(None, None), Holder::Peer(None));
    }
}
