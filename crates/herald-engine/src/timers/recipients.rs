//! Recipients at fire time: a reminder (and a timer addressed `to` a user)
//! goes to the address the subscriber directory holds for the channel's type
//! when it fires, not when it was scheduled, so a changed address, a new
//! device or an opt-out is honoured. One directory read per tenant per fetch
//! batch; the decision itself is `herald_core::subscriber::Profile::resolve`.
//!
//! A user with no directory entry keeps the behaviour from before the
//! directory existed where that made sense: a reminder goes to the user id
//! itself. A timer addressed `to` a user has no such fallback.

use std::collections::{HashMap, HashSet};

use herald_core::device::PushService;
use herald_core::subscriber::{Profile, Resolution};
use herald_core::timer::Routing;
use herald_core::{ChannelType, TenantId, TimerKind};
use herald_store::{Store, StoreError, TimerRecord, Unsendable};

/// Who a timer is for, when the directory decides where it goes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Addressee {
    pub tenant: TenantId,
    pub user_id: String,
    pub channel_type: ChannelType,
    pub topic: Option<String>,
    /// Bypasses quiet hours (never an opt-out).
    pub critical: bool,
    /// Without a directory entry, send to the user id itself (reminders).
    pub fallback_to_id: bool,
}

impl Addressee {
    /// The addressee of a timer row, when the directory decides for it:
    /// reminders name their channel type in the stored message; timers
    /// addressed `to` a user carry it in their routing.
    pub fn of(row: &TimerRecord) -> Option<Self> {
        if row.kind == TimerKind::Reminder {
            let stored: serde_json::Value = serde_json::from_str(&row.message).ok()?;
            let subscribed = ChannelType::parse(stored.get("channel_type")?.as_str()?)?;
            // A reminder with a fallback route goes to its step's type.
            let channel_type = match row.route_step() {
                Some(_) => Routing::parse(row.routing.as_deref())
                    .to
                    .unwrap_or(subscribed),
                None => subscribed,
            };
            return Some(Self {
                tenant: row.tenant,
                user_id: row.recipient.clone(),
                channel_type,
                topic: None,
                critical: false,
                fallback_to_id: true,
            });
        }
        let routing = Routing::parse(row.routing.as_deref());
        Some(Self {
            tenant: row.tenant,
            user_id: row.recipient.clone(),
            channel_type: routing.to?,
            topic: routing.topic,
            critical: routing.critical,
            fallback_to_id: false,
        })
    }
}

/// Where a timer goes: through the directory for an addressee, else to its
/// stored recipient (past the channel's quiet hours when it is critical).
pub(crate) fn route_row(
    row: &TimerRecord,
    who: Option<&Addressee>,
    profiles: &Profiles,
    now_ms: i64,
) -> Route {
    match who {
        Some(a) => route(a, &row.channel, profiles, now_ms),
        None if row.routing.is_some() && Routing::parse(row.routing.as_deref()).critical => {
            Route::To {
                user_id: String::new(),
                addresses: vec![row.recipient.clone()],
                devices: false,
                services: Vec::new(),
                skip_channel_quiet: true,
            }
        }
        None => Route::AsStored,
    }
}

/// Where one delivery goes, as decided when it fired.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) enum Route {
    /// To the timer's stored recipient (no directory involved).
    #[default]
    AsStored,
    /// To these addresses, one delivery each (several only for app push,
    /// one per device token).
    To {
        /// Whose directory entry (empty for a critical raw recipient).
        user_id: String,
        addresses: Vec<String>,
        /// App push: each address is a device token with its own key, and a
        /// token the provider calls gone is pruned from the subscriber.
        devices: bool,
        /// App push: each device's push service, beside `addresses` (`None`
        /// for a bare token); empty otherwise.
        services: Vec<Option<PushService>>,
        /// The channel's own quiet hours do not apply: the subscriber's were
        /// checked instead, or the message is critical.
        skip_channel_quiet: bool,
    },
    /// Final without a send.
    Unsendable(Unsendable),
    /// Inside the subscriber's quiet hours until `until` (unix ms).
    Quiet { until: i64 },
}

/// Directory entries by tenant and user id.
pub(crate) type Profiles = HashMap<TenantId, HashMap<String, Profile>>;

/// Reads the directory entries of everyone in `who`: one store read per tenant.
pub(crate) async fn profiles<'a>(
    store: &dyn Store,
    who: impl IntoIterator<Item = &'a Addressee>,
) -> Result<Profiles, StoreError> {
    let mut wanted: HashMap<TenantId, HashSet<&str>> = HashMap::new();
    for a in who {
        wanted.entry(a.tenant).or_default().insert(&a.user_id);
    }
    let mut out = Profiles::new();
    for (tenant, ids) in wanted {
        let ids: Vec<String> = ids.into_iter().map(str::to_string).collect();
        let mine = out.entry(tenant).or_default();
        for rec in store.get_subscribers(tenant, &ids).await? {
            // Every write is checked, so this only fails on a hand-edited row.
            match serde_json::from_str::<Profile>(&rec.profile) {
                Ok(p) => {
                    mine.insert(rec.user_id, p);
                }
                Err(e) => tracing::warn!(
                    tenant = tenant.0, user_id = %rec.user_id, error = %e,
                    "unreadable directory entry; treated as absent"
                ),
            }
        }
    }
    Ok(out)
}

/// Where a delivery to `a` on channel `channel` goes at `now_ms`.
pub(crate) fn route(a: &Addressee, channel: &str, profiles: &Profiles, now_ms: i64) -> Route {
    let Some(p) = profiles.get(&a.tenant).and_then(|m| m.get(&a.user_id)) else {
        return if a.fallback_to_id {
            Route::AsStored
        } else {
            Route::Unsendable(Unsendable::NoAddress)
        };
    };
    match p.resolve(
        a.channel_type,
        channel,
        a.topic.as_deref(),
        a.critical,
        now_ms,
    ) {
        Resolution::Send(to) => {
            let devices = a.channel_type == ChannelType::App;
            let services = if devices {
                to.iter().map(|t| p.addresses.service_of(t)).collect()
            } else {
                Vec::new()
            };
            Route::To {
                user_id: a.user_id.clone(),
                addresses: to.into_iter().map(str::to_string).collect(),
                devices,
                services,
                skip_channel_quiet: a.critical || p.quiet_hours.is_some(),
            }
        }
        Resolution::NoAddress => Route::Unsendable(Unsendable::NoAddress),
        Resolution::OptedOut => Route::Unsendable(Unsendable::OptedOut),
        Resolution::Quiet { until } => Route::Quiet { until },
    }
}

/// Removes a device token the provider said is gone from `user_id`'s entry,
/// by a conditional write so a concurrent change is never overwritten (it
/// reads again and retries a few times). Whether the token was removed.
pub(crate) async fn prune_device(
    store: &dyn Store,
    tenant: TenantId,
    user_id: &str,
    token: &str,
    now_ms: i64,
) -> Result<bool, StoreError> {
    use herald_store::{PutSubscriber, WriteOp, WriteResult};
    for _ in 0..5 {
        let found = store
            .get_subscribers(tenant, &[user_id.to_string()])
            .await?;
        let Some(rec) = found.into_iter().next() else {
            return Ok(false);
        };
        let Ok(mut p) = serde_json::from_str::<Profile>(&rec.profile) else {
            return Ok(false);
        };
        if !p.drop_device(token) {
            return Ok(false);
        }
        let Ok(profile) = serde_json::to_string(&p) else {
            return Ok(false);
        };
        let put = PutSubscriber {
            tenant,
            user_id: user_id.to_string(),
            profile,
            if_version: Some(rec.version),
            at: now_ms,
        };
        match store.apply(vec![WriteOp::PutSubscriber(put)]).await?.pop() {
            Some(WriteResult::SubscriberPut { .. }) => {
                // The directory changed without a request: the audit log says
                // who did it (Herald itself) and to whom.
                let entry = herald_store::NewAuditEntry {
                    at: now_ms,
                    key_id: None,
                    key_name: Some("herald: device token UNREGISTERED".into()),
                    tenant,
                    method: "PATCH".into(),
                    route: "/v1/subscribers/{user_id}".into(),
                    resource_id: Some(user_id.to_string()),
                    status: 200,
                    count: 1,
                    reason: None,
                };
                if let Err(e) = store.append_audit(vec![entry]).await {
                    tracing::warn!(tenant = tenant.0, user_id, error = %e, "auditing a pruned device token failed");
                }
                return Ok(true);
            }
            Some(WriteResult::VersionConflict { .. }) => continue,
            _ => return Ok(false),
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(user: &str, t: ChannelType) -> Addressee {
        Addressee {
            tenant: TenantId(1),
            user_id: user.into(),
            channel_type: t,
            topic: None,
            critical: false,
            fallback_to_id: true,
        }
    }

    fn dir(entries: &[(&str, &str)]) -> Profiles {
        let mut m = HashMap::new();
        for (u, json) in entries {
            m.insert(u.to_string(), serde_json::from_str(json).unwrap());
        }
        HashMap::from([(TenantId(1), m)])
    }

    #[test]
    fn routes_by_the_entry_as_it_is_now() {
        let d = dir(&[
            (
                "u1",
                r#"{"addresses":{"email":"a+x@example.com","app":["t1","t2"]}}"#,
            ),
            (
                "u2",
                r#"{"addresses":{"email":"b@example.com"},"preferences":{"channel_types":{"email":false}}}"#,
            ),
            (
                "u3",
                r#"{"timezone":"Asia/Shanghai","addresses":{"email":"c@example.com"},"quiet_hours":{"start":"00:00","end":"23:59"}}"#,
            ),
        ]);
        let now = 1_700_000_000_000;
        assert_eq!(
            route(&who("u1", ChannelType::Email), "mail", &d, now),
            Route::To {
                user_id: "u1".into(),
                addresses: vec!["a+x@example.com".into()],
                devices: false,
                services: Vec::new(),
                skip_channel_quiet: false,
            }
        );
        let Route::To {
            addresses, devices, ..
        } = route(&who("u1", ChannelType::App), "push", &d, now)
        else {
            panic!("app route");
        };
        assert_eq!((addresses, devices), (vec!["t1".into(), "t2".into()], true));
        assert_eq!(
            route(&who("u1", ChannelType::Sms), "sms", &d, now),
            Route::Unsendable(Unsendable::NoAddress)
        );
        assert_eq!(
            route(&who("u2", ChannelType::Email), "mail", &d, now),
            Route::Unsendable(Unsendable::OptedOut)
        );
        assert!(matches!(
            route(&who("u3", ChannelType::Email), "mail", &d, now),
            Route::Quiet { until } if until > now
        ));
        let critical = Addressee {
            critical: true,
            ..who("u3", ChannelType::Email)
        };
        assert!(matches!(
            route(&critical, "mail", &d, now),
            Route::To {
                skip_channel_quiet: true,
                ..
            }
        ));
        // No entry: a reminder goes to the id itself; a `to` timer cannot.
        assert_eq!(
            route(&who("nobody", ChannelType::Email), "mail", &d, now),
            Route::AsStored
        );
        let strict = Addressee {
            fallback_to_id: false,
            ..who("nobody", ChannelType::Email)
        };
        assert_eq!(
            route(&strict, "mail", &d, now),
            Route::Unsendable(Unsendable::NoAddress)
        );
    }
}
