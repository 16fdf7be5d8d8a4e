//! One delivery sent as copies to a subscriber's resolved addresses (each
//! device of an app push): used by timers and campaign sends alike. A device
//! of another push service than the send's channel speaks goes through a
//! channel of its own service ([`through`]).

use std::collections::HashMap;
use std::sync::Arc;

use herald_channels::{Delivery, SendOutcome};
use herald_core::device::PushService;
use herald_core::subscriber::device_key;
use herald_core::{Clock, TenantId};
use herald_store::Store;

use crate::channels::runtime::ChannelRuntime;
use crate::timers::recipients;

/// Whom [`send_copies`] sends to: a subscriber's resolved addresses.
pub(crate) struct Copies<'a> {
    pub tenant: TenantId,
    pub user_id: &'a str,
    pub addresses: &'a [String],
    /// App push: one copy per device token, each under its own key.
    pub devices: bool,
    /// App push: each device's service, beside `addresses` (`None`: the
    /// send's channel's own).
    pub services: &'a [Option<PushService>],
    /// Every channel of the node, to find a device's service in.
    pub channels: &'a HashMap<String, Arc<ChannelRuntime>>,
    /// Its place in line for the channel's rate.
    pub priority: herald_core::Priority,
}

/// Sends `d` to a subscriber's resolved addresses: one delivery each, a
/// device's copy under its own idempotency key and through a channel of its
/// push service, each after that channel's rate limit. The outcome is the one most worth acting on: a retry if any copy
/// should be retried (at least once for every device), else delivered if any
/// copy was, else the refusal. Tokens the provider calls gone are pruned from
/// the subscriber; the note says so for the send log. Timers and campaign
/// sends both go through here.
pub(crate) async fn send_copies(
    store: &dyn Store,
    clock: &dyn Clock,
    rt: &ChannelRuntime,
    d: &Delivery,
    to: Copies<'_>,
) -> (SendOutcome, Option<String>) {
    let Copies {
        tenant,
        user_id,
        addresses,
        devices,
        services,
        channels,
        priority,
    } = to;
    let mut outcomes = Vec::with_capacity(addresses.len());
    for (i, to) in addresses.iter().enumerate() {
        let mut copy = d.clone();
        copy.recipient = to.clone();
        if devices {
            copy.idempotency_key = device_key(&d.idempotency_key, to);
        }
        let service = services.get(i).copied().flatten();
        let o = match through(rt, service, channels) {
            Through::Own => {
                if i > 0 {
                    rt.wait_for_rate(clock, priority).await;
                }
                rt.channel().send(&copy).await
            }
            Through::Other(other) => send_through(clock, other, &copy, priority).await,
            Through::Nowhere(s) => SendOutcome::Permanent {
                error: format!("no channel of this node sends to {s} devices"),
                status: None,
            },
        };
        outcomes.push(o);
    }
    let mut notes = Vec::new();
    if devices {
        for (to, o) in addresses.iter().zip(&outcomes) {
            if !device_gone(o) {
                continue;
            }
            let tail = &to[to.len().saturating_sub(6)..];
            match recipients::prune_device(store, tenant, user_id, to, clock.now_ms()).await {
                Ok(true) => {
                    tracing::info!(
                        tenant = tenant.0,
                        user_id,
                        token_tail = tail,
                        "device token unregistered; pruned"
                    );
                    notes.push(format!(
                        "device …{tail} unregistered: removed from the subscriber"
                    ));
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(tenant = tenant.0, user_id, error = %e, "pruning an unregistered device token failed");
                    notes.push(format!(
                        "device …{tail} unregistered (not yet removed: {e})"
                    ));
                }
            }
        }
    }
    if addresses.len() > 1 {
        let ok = outcomes
            .iter()
            .filter(|o| matches!(o, SendOutcome::Delivered { .. }))
            .count();
        notes.push(format!("{ok} of {} devices delivered", addresses.len()));
    }
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    (combine(outcomes), note)
}

/// Which channel a device of `service` goes through.
enum Through<'a> {
    /// The send's own channel: a bare token, or one of its own service.
    Own,
    /// Another channel of the node, of the device's service.
    Other(&'a ChannelRuntime),
    /// No channel of the node speaks the device's service.
    Nowhere(PushService),
}

/// The channel for a device of `service`: the send's own when it speaks
/// that service (or the token names none), else the node's channel of that
/// service, the first by name when there are several.
fn through<'a>(
    rt: &ChannelRuntime,
    service: Option<PushService>,
    channels: &'a HashMap<String, Arc<ChannelRuntime>>,
) -> Through<'a> {
    let Some(service) = service else {
        return Through::Own;
    };
    if rt.channel().kind().push_service() == Some(service) {
        return Through::Own;
    }
    channels
        .values()
        .filter(|c| c.channel().kind().push_service() == Some(service))
        .min_by(|a, b| a.name().cmp(b.name()))
        .map_or(Through::Nowhere(service), |c| Through::Other(c))
}

/// One device's copy through another channel, after its pause and its rate.
/// Its answer pauses that channel on a throttle, as its own sends would; for
/// the delivery it is a retry, so the send's own channel is not paused for
/// another provider's limit.
async fn send_through(
    clock: &dyn Clock,
    other: &ChannelRuntime,
    copy: &Delivery,
    priority: herald_core::Priority,
) -> SendOutcome {
    let now = clock.now_ms();
    let paused = other.pause.until().max(
        other
            .operator
            .current(now)
            .map_or(0, |p| p.until.unwrap_or(i64::MAX)),
    );
    if paused > now {
        return SendOutcome::Retryable {
            error: format!("channel `{}` is paused", other.name()),
            status: None,
            retry_after_ms: Some(paused.saturating_sub(now).min(3_600_000) as u64),
        };
    }
    other.wait_for_rate(clock, priority).await;
    let mut o = other.channel().send(copy).await;
    other.observe(&mut o, 1, clock.now_ms());
    match o {
        SendOutcome::Throttled {
            error,
            status,
            retry_after_ms,
        } => SendOutcome::Retryable {
            error: format!("channel `{}` throttled: {error}", other.name()),
            status,
            retry_after_ms,
        },
        o => o,
    }
}

/// Whether the provider said a device token no longer exists.
fn device_gone(o: &SendOutcome) -> bool {
    matches!(o, SendOutcome::Permanent { error, .. } if error.contains("UNREGISTERED"))
}

/// One outcome for several copies of a delivery (see `send_copies`).
fn combine(outcomes: Vec<SendOutcome>) -> SendOutcome {
    let rank = |o: &SendOutcome| match o {
        SendOutcome::Retryable { .. } => 0,
        SendOutcome::Throttled { .. } => 1,
        SendOutcome::Delivered { .. } => 2,
        SendOutcome::Permanent { .. } => 3,
    };
    outcomes
        .into_iter()
        .min_by_key(rank)
        .unwrap_or(SendOutcome::Permanent {
            error: "no address to send to".into(),
            status: None,
        })
}
