//! One delivery sent as copies to a subscriber's resolved addresses (each
//! device of an app push): used by timers and campaign sends alike.

use herald_channels::{Delivery, SendOutcome};
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
    /// Its place in line for the channel's rate.
    pub priority: herald_core::Priority,
}

/// Sends `d` to a subscriber's resolved addresses: one delivery each, a
/// device's copy under its own idempotency key, each after the channel's rate
/// limit. The outcome is the one most worth acting on: a retry if any copy
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
        priority,
    } = to;
    let mut outcomes = Vec::with_capacity(addresses.len());
    for (i, to) in addresses.iter().enumerate() {
        if i > 0 {
            rt.wait_for_rate(clock, priority).await;
        }
        let mut copy = d.clone();
        copy.recipient = to.clone();
        if devices {
            copy.idempotency_key = device_key(&d.idempotency_key, to);
        }
        outcomes.push(rt.channel().send(&copy).await);
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
