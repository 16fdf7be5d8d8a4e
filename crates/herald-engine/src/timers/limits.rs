//! The limits a fetched send must find room in before it is queued: the
//! frequency caps per user (`[[caps]]`), the provider's pacing per address
//! (the channel's `pacing`), and the rate limits per caller-given key
//! (`[[rate_limits]]`). All are counted by the store in one call per fetch
//! pass (`herald_store::CapStore::take_caps`), so they hold cluster-wide.

use std::collections::HashMap;

use herald_core::TimerKind;
use herald_core::caps::{self, CapCheck, CapSend};
use herald_core::pacing::{self, Pace};
use herald_core::timer::Routing;
use herald_store::{CapTake, CapVerdict, StoreError, TimerRecord};

use super::pipeline::Pipeline;
use super::recipients::{self, Addressee, Profiles, Route};

/// Why a send may not go now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The cap, pacing or rate limit that refused it, as the send log names it.
    pub limit: String,
    /// When that limit frees a slot (unix ms).
    pub free_at: i64,
    /// Wait for the slot (no attempt used) rather than end `capped`.
    pub defer: bool,
}

/// Checks and takes the limits of `rows` (each with the user the directory
/// decides for, if any) at `now`, in one store call: one entry per row, the
/// refusal or `None`. A send is counted once per series of attempts (a retry
/// after a failed attempt took its slot the first time), and only when it
/// will go to an address (not one settled unsent, nor one held in quiet
/// hours).
pub(crate) async fn take<'a>(
    pipe: &Pipeline,
    rows: impl Iterator<Item = (&'a TimerRecord, Option<&'a Addressee>)>,
    profiles: &Profiles,
    now: i64,
) -> Result<Vec<Option<Refusal>>, StoreError> {
    let cfg = pipe.cfg.get();
    let mut paces: HashMap<&str, Option<(herald_channels::ChannelKind, Vec<Pace>)>> =
        HashMap::new();
    let mut takes = Vec::new();
    let mut at = Vec::new();
    let mut n = 0;
    for (i, (row, who)) in rows.enumerate() {
        n = i + 1;
        if row.attempts > row.attempt_base {
            continue;
        }
        let pace = paces
            .entry(row.channel.as_str())
            .or_insert_with(|| {
                let rt = pipe.channels.get(&row.channel)?;
                let s = rt.settings();
                (!s.pacing.is_empty()).then(|| (s.channel.kind(), s.pacing.clone()))
            })
            .as_ref();
        let rate_key = if cfg.rate_limits.is_empty() || row.routing.is_none() {
            None
        } else {
            Routing::parse(row.routing.as_deref()).rate_key
        };
        let user_caps = who.is_some() && !cfg.caps.is_empty();
        if pace.is_none() && rate_key.is_none() && !user_caps {
            continue;
        }
        let route = recipients::route_row(row, who, profiles, now);
        let addresses: Vec<&str> = match &route {
            Route::To { addresses, .. } => addresses.iter().map(String::as_str).collect(),
            Route::AsStored => vec![row.recipient.as_str()],
            Route::Unsendable(_) | Route::Quiet { .. } => continue,
        };
        let mut checks: Vec<CapCheck> = Vec::new();
        if let (Some(a), true) = (who, user_caps) {
            let send = CapSend {
                tenant: a.tenant,
                user_id: &a.user_id,
                channel_type: a.channel_type,
                topic: a.topic.as_deref(),
                critical: a.critical,
            };
            let reminder = row.kind == TimerKind::Reminder;
            checks.extend(caps::checks_for(&cfg.caps, &send).into_iter().map(|mut c| {
                // Only a reminder may wait for its cap's window.
                c.defer &= reminder;
                c
            }));
        }
        if let Some((kind, paces)) = pace {
            for address in &addresses {
                for member in kind.paced_addresses(address) {
                    checks.extend(pacing::pace_checks(&row.channel, member, paces));
                }
            }
        }
        if let Some(key) = &rate_key {
            checks.extend(pacing::rate_checks(&cfg.rate_limits, row.tenant, key));
        }
        if !checks.is_empty() {
            takes.push(CapTake {
                tenant: row.tenant,
                checks,
            });
            at.push(i);
        }
    }
    let mut refused = vec![None; n];
    if takes.is_empty() {
        return Ok(refused);
    }
    let verdicts = pipe.store.take_caps(takes, now).await?;
    for (i, v) in at.into_iter().zip(verdicts) {
        if let CapVerdict::Full {
            cap,
            free_at,
            defer,
        } = v
        {
            refused[i] = Some(Refusal {
                limit: cap,
                free_at,
                defer,
            });
        }
    }
    Ok(refused)
}

/// How a refusal's limit reads in the send log: a cap by its quoted name
/// (`cap "marketing"`); pacing and rate limits come with their own words
/// (a cap name has no spaces, their labels do).
pub(crate) fn describe(limit: &str) -> String {
    if limit.contains(' ') {
        limit.to_string()
    } else {
        format!("cap {limit:?}")
    }
}
