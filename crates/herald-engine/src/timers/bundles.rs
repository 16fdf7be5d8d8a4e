//! Timers that go out together as one delivery: a user's reminders on one
//! channel due within the merge window, and the timers of one digest (same
//! recipient, channel, address type, topic, criticality and digest key). Each member still ends
//! with its own outcome (why, and what the messages look like:
//! `docs/architecture.md`, "Reminders" and "Digests").
//!
//! Grouping never delays anything: a group goes out when its earliest member
//! is due and takes along the members due up to its window later (the merge
//! window for reminders; for digests, whose members were already placed at
//! one close when they were created, [`DIGEST_SLACK_MS`] for closes that
//! concurrent creates opened a few milliseconds apart). Members share a shard
//! (reminders and digest timers are sharded by recipient), and thus an owner
//! and a fence.

use std::collections::{HashMap, HashSet};

use herald_core::template::TemplateRef;
use herald_core::timer::Routing;
use herald_core::{ChannelType, TenantId, TimerId, TimerKind};
use herald_store::{MergeProbe, Store, StoreError, TimerRecord};
use serde_json::{Value, json};

use crate::timers::reminders::{self, Subjects};

/// How much later than a firing digest's close its other members may be due
/// and still go with it: two creates that each opened the digest at once
/// give closes this close together.
pub(crate) const DIGEST_SLACK_MS: i64 = 1_000;

/// What puts timers in one group, besides tenant, recipient, channel and shard.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Bundle {
    /// A reminder, of this channel type (each type has its own address).
    /// One with a fallback route goes alone (`alone` is its own id): its
    /// steps, and what each step's outcome does, are its own.
    Reminder {
        channel_type: Option<String>,
        alone: Option<TimerId>,
    },
    /// A digest timer: its key, and what the directory decides on (the
    /// address type, the topic's opt-out, quiet hours) so one decision holds
    /// for every member.
    Digest {
        key: String,
        to: Option<ChannelType>,
        topic: Option<String>,
        critical: bool,
    },
}

impl Bundle {
    /// The bundle of a row, `None` for a timer that goes out alone.
    pub fn of(row: &TimerRecord) -> Option<Self> {
        match row.kind {
            TimerKind::Reminder => Some(Bundle::Reminder {
                channel_type: reminders::stored_field(&row.message, "channel_type"),
                alone: row.route_step().map(|_| row.id),
            }),
            TimerKind::Timer if row.routing.is_some() => {
                let r = Routing::parse(row.routing.as_deref());
                r.digest.map(|d| Bundle::Digest {
                    key: d.key,
                    to: r.to,
                    topic: r.topic,
                    critical: r.critical,
                })
            }
            _ => None,
        }
    }

    /// How far after the earliest member others may be due.
    fn window(&self, merge_window_ms: i64) -> i64 {
        match self {
            Bundle::Reminder { .. } => merge_window_ms,
            Bundle::Digest { .. } => DIGEST_SLACK_MS,
        }
    }
}

/// Timers that go out as one delivery.
#[derive(Debug)]
pub(crate) struct Group {
    /// The earliest: its due time, key and attempt are the delivery's.
    pub primary: TimerRecord,
    /// The others, earliest first. They are in the flight set: those fetched
    /// in the same pass with a permit, those found in the store without.
    pub members: Vec<TimerRecord>,
    pub bundle: Bundle,
    /// The composed message (JSON text).
    pub message: String,
    /// For reminders: the template its subjects name for its channel type,
    /// which wins over `[reminders.templates]` ([`reminders::compose`]).
    pub template: Option<TemplateRef>,
    /// For reminders: when the delivery expires unsent
    /// ([`herald_core::early::expiry`] over its reminders' subjects).
    pub expires_at: Option<i64>,
}

/// Builds the deliveries for a batch of fetched reminder and digest rows.
///
/// `claim` is asked for each extra member found in the store (not in `rows`):
/// it returns `false` when that timer is already being delivered. On an error
/// nothing is claimed and the caller puts the rows back.
pub(crate) async fn plan(
    store: &dyn Store,
    rows: Vec<(Bundle, TimerRecord)>,
    merge_window_ms: i64,
    mut claim: impl FnMut(&TimerRecord) -> bool,
    unclaim: impl FnOnce(Vec<TimerId>),
) -> Result<Vec<Group>, StoreError> {
    let mut groups = group_rows(rows, merge_window_ms);
    let probe = |g: &Group| MergeProbe {
        tenant: g.primary.tenant,
        user_id: g.primary.recipient.clone(),
        channel: g.primary.channel.clone(),
        from: g.primary.due_at,
        until: g
            .primary
            .due_at
            .saturating_add(g.bundle.window(merge_window_ms)),
    };
    let reminder_probes: Vec<MergeProbe> = groups
        .iter()
        .filter(|g| matches!(g.bundle, Bundle::Reminder { alone: None, .. }) && merge_window_ms > 0)
        .map(probe)
        .collect();
    let digest_probes: Vec<MergeProbe> = groups
        .iter()
        .filter(|g| matches!(g.bundle, Bundle::Digest { .. }))
        .map(probe)
        .collect();
    let mut found = Vec::new();
    if !reminder_probes.is_empty() {
        found.extend(store.pending_reminders(&reminder_probes).await?);
    }
    if !digest_probes.is_empty() {
        found.extend(store.pending_digests(&digest_probes).await?);
    }
    let claimed = add_found(&mut groups, found, merge_window_ms, &mut claim);
    let wanted = reminders::subject_ids(
        groups
            .iter()
            .filter(|g| matches!(g.bundle, Bundle::Reminder { .. }))
            .flat_map(|g| std::iter::once(&g.primary).chain(&g.members)),
    );
    let subjects = match reminders::read_subjects(store, wanted).await {
        Ok(s) => s,
        Err(e) => {
            unclaim(claimed);
            return Err(e);
        }
    };
    let subjects: Subjects<'_> = subjects
        .iter()
        .map(|s| ((s.tenant, s.subject_id.as_str()), s))
        .collect();
    for g in &mut groups {
        (g.message, g.template) = match &g.bundle {
            Bundle::Reminder { .. } => reminders::compose(&g.primary, &g.members, &subjects),
            Bundle::Digest { key, .. } => (compose_digest(key, &g.primary, &g.members), None),
        };
        if matches!(g.bundle, Bundle::Reminder { .. }) {
            g.expires_at = reminders::expires_at(&g.primary, &g.members, &subjects);
        }
    }
    Ok(groups)
}

/// Adds the store's pending timers that belong to a group of this batch
/// (claimed first); returns the ids claimed.
fn add_found(
    groups: &mut [Group],
    found: Vec<TimerRecord>,
    merge_window_ms: i64,
    claim: &mut impl FnMut(&TimerRecord) -> bool,
) -> Vec<TimerId> {
    let known: HashSet<TimerId> = groups
        .iter()
        .flat_map(|g| std::iter::once(g.primary.id).chain(g.members.iter().map(|m| m.id)))
        .collect();
    let mut by_owner: HashMap<(TenantId, &str, &str, &Bundle), usize> = HashMap::new();
    for (i, g) in groups.iter().enumerate() {
        // The earliest group of an owner in this batch takes the extras.
        by_owner
            .entry((
                g.primary.tenant,
                g.primary.recipient.as_str(),
                g.primary.channel.as_str(),
                &g.bundle,
            ))
            .or_insert(i);
    }
    let mut extra: Vec<(usize, TimerRecord)> = Vec::new();
    let mut seen = HashSet::new();
    for t in found {
        if known.contains(&t.id) || !seen.insert(t.id) {
            continue;
        }
        let Some(bundle) = Bundle::of(&t) else {
            continue;
        };
        let owner = (t.tenant, t.recipient.as_str(), t.channel.as_str(), &bundle);
        let Some(&i) = by_owner.get(&owner) else {
            continue;
        };
        let g = &groups[i];
        let p = &g.primary;
        let fits = t.shard == p.shard
            && t.due_at >= p.due_at
            && t.due_at <= p.due_at.saturating_add(g.bundle.window(merge_window_ms));
        if fits && claim(&t) {
            extra.push((i, t));
        }
    }
    let claimed = extra.iter().map(|(_, t)| t.id).collect();
    for (i, t) in extra {
        groups[i].members.push(t);
    }
    for g in groups.iter_mut() {
        g.members.sort_by_key(|m| (m.due_at, m.id));
    }
    claimed
}

/// Groups rows of one batch: per owner (tenant, recipient, channel, bundle,
/// shard), the earliest row leads and takes the rows due within its window
/// after it; a later row starts a new group. A merge window of 0 sends each
/// reminder alone; digests always group.
pub(crate) fn group_rows(mut rows: Vec<(Bundle, TimerRecord)>, merge_window_ms: i64) -> Vec<Group> {
    rows.sort_by(|(ba, a), (bb, b)| {
        (
            a.tenant,
            a.recipient.as_str(),
            a.channel.as_str(),
            ba,
            a.shard,
            a.due_at,
            a.id,
        )
            .cmp(&(
                b.tenant,
                b.recipient.as_str(),
                b.channel.as_str(),
                bb,
                b.shard,
                b.due_at,
                b.id,
            ))
    });
    let mut groups: Vec<Group> = Vec::with_capacity(rows.len());
    for (bundle, t) in rows {
        let window = bundle.window(merge_window_ms);
        if window > 0
            && let Some(g) = groups.last_mut()
            && g.bundle == bundle
            && g.primary.tenant == t.tenant
            && g.primary.recipient == t.recipient
            && g.primary.channel == t.channel
            && g.primary.shard == t.shard
            && t.due_at <= g.primary.due_at.saturating_add(window)
        {
            g.members.push(t);
            continue;
        }
        groups.push(Group {
            primary: t,
            members: Vec::new(),
            bundle,
            message: String::new(),
            template: None,
            expires_at: None,
        });
    }
    groups
}

/// A digest's message: its key, how many messages, and every timer's message
/// as it was created, earliest first, with the timer ids in the same order
/// (a receiver can tell each apart, as `reminders[].timer_id` does).
fn compose_digest(key: &str, primary: &TimerRecord, members: &[TimerRecord]) -> String {
    let all: Vec<&TimerRecord> = std::iter::once(primary).chain(members).collect();
    let messages: Vec<Value> = all
        .iter()
        .map(|t| serde_json::from_str(&t.message).unwrap_or(Value::Null))
        .collect();
    json!({
        "digest": key,
        "count": all.len(),
        "messages": messages,
        "timer_ids": all.iter().map(|t| t.id).collect::<Vec<_>>(),
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use herald_core::TimerState;
    use herald_core::digest::Digest;

    use super::*;

    fn rem(id: i64, user: &str, channel: &str, due: i64) -> TimerRecord {
        TimerRecord {
            id,
            tenant: herald_core::DEFAULT_TENANT,
            shard: 1,
            due_at: due,
            priority: 5,
            kind: TimerKind::Reminder,
            state: TimerState::Pending,
            channel: channel.into(),
            recipient: user.into(),
            message: json!({"user_id": user, "subject_id": "s", "channel_type": "app",
                            "lead_minutes": 5})
            .to_string(),
            idempotency_key: None,
            attempts: 0,
            last_error: None,
            created_at: 0,
            updated_at: 0,
            delivered_at: None,
            attempt_base: 0,
            traceparent: None,
            routing: None,
        }
    }

    fn dig(id: i64, user: &str, due: i64, key: &str) -> TimerRecord {
        let routing = Routing {
            digest: Some(Digest {
                key: key.into(),
                window_ms: Some(60_000),
                max_delay_ms: None,
                at_local: None,
                since: Some(0),
            }),
            ..Routing::default()
        };
        TimerRecord {
            kind: TimerKind::Timer,
            message: json!({"n": id}).to_string(),
            routing: serde_json::to_string(&routing).ok(),
            ..rem(id, user, "hooks", due)
        }
    }

    fn bundled(rows: Vec<TimerRecord>) -> Vec<(Bundle, TimerRecord)> {
        rows.into_iter()
            .filter_map(|r| Bundle::of(&r).map(|b| (b, r)))
            .collect()
    }

    fn shape(groups: &[Group]) -> Vec<(i64, Vec<i64>)> {
        groups
            .iter()
            .map(|g| (g.primary.id, g.members.iter().map(|m| m.id).collect()))
            .collect()
    }

    #[test]
    fn a_batch_groups_by_user_channel_and_window() {
        let rows = vec![
            rem(3, "u1", "hooks", 30_000),
            rem(1, "u1", "hooks", 0),
            rem(2, "u1", "hooks", 60_000),
            rem(4, "u1", "hooks", 60_001),
            rem(5, "u1", "mail", 10),
            rem(6, "u2", "hooks", 5),
        ];
        let groups = group_rows(bundled(rows.clone()), 60_000);
        assert_eq!(
            shape(&groups),
            vec![(1, vec![3, 2]), (4, vec![]), (5, vec![]), (6, vec![])]
        );
        // Merging off: one group each.
        assert_eq!(group_rows(bundled(rows), 0).len(), 6);
    }

    #[test]
    fn the_same_user_id_in_two_tenants_is_two_users() {
        let theirs = TimerRecord {
            tenant: TenantId(2),
            ..rem(2, "u1", "hooks", 10)
        };
        let groups = group_rows(bundled(vec![rem(1, "u1", "hooks", 0), theirs]), 60_000);
        assert_eq!(groups.len(), 2);
        assert!(groups.iter().all(|g| g.members.is_empty()));
    }

    #[test]
    fn digests_group_by_key_within_the_slack_even_with_merging_off() {
        let rows = vec![
            dig(1, "u1", 5_000, "daily"),
            dig(2, "u1", 5_000, "daily"),
            dig(3, "u1", 5_000 + DIGEST_SLACK_MS, "daily"),
            dig(4, "u1", 5_000 + DIGEST_SLACK_MS + 1, "daily"),
            dig(5, "u1", 5_000, "weekly"),
            rem(6, "u1", "hooks", 5_000),
            dig(7, "u2", 5_000, "daily"),
        ];
        let groups = group_rows(bundled(rows), 0);
        let mut got = shape(&groups);
        got.sort();
        assert_eq!(
            got,
            vec![
                (1, vec![2, 3]),
                (4, vec![]),
                (5, vec![]),
                (6, vec![]),
                (7, vec![])
            ]
        );
        let mut topical = Routing::parse(dig(9, "u1", 0, "k").routing.as_deref());
        topical.topic = Some("news".into());
        let news = TimerRecord {
            routing: topical.stored(),
            ..dig(9, "u1", 0, "k")
        };
        assert_ne!(Bundle::of(&news), Bundle::of(&dig(10, "u1", 0, "k")));
        assert_eq!(
            Bundle::of(&TimerRecord {
                routing: None,
                ..dig(8, "u1", 0, "k")
            }),
            None,
            "a plain timer goes alone"
        );
    }

    #[test]
    fn extra_digest_members_join_their_group_once_claimed() {
        let mut groups = group_rows(bundled(vec![dig(1, "u1", 5_000, "k")]), 60_000);
        let found = vec![
            dig(1, "u1", 5_000, "k"),
            dig(2, "u1", 5_500, "k"),
            dig(3, "u1", 5_200, "k"),
            dig(4, "u1", 5_300, "other"),
            dig(5, "u1", 9_000, "k"),
            dig(6, "u1", 5_100, "k"),
        ];
        let mut claim = |t: &TimerRecord| t.id != 6;
        let claimed = add_found(&mut groups, found, 60_000, &mut claim);
        assert_eq!(claimed, vec![2, 3]);
        assert_eq!(shape(&groups), vec![(1, vec![3, 2])]);
    }

    #[test]
    fn a_digest_lists_every_message_earliest_first() {
        let msg = compose_digest(
            "daily",
            &dig(1, "u1", 0, "daily"),
            &[dig(2, "u1", 0, "daily"), dig(3, "u1", 10, "daily")],
        );
        let v: Value = serde_json::from_str(&msg).unwrap();
        assert_eq!(v["digest"], "daily");
        assert_eq!(v["count"], 3);
        assert_eq!(v["messages"], json!([{"n": 1}, {"n": 2}, {"n": 3}]));
        assert_eq!(v["timer_ids"], json!([1, 2, 3]));
    }
}
