//! Reminders at fire time: each message is completed from its subject as it
//! is now (a subject may have been renamed or moved since the subscription),
//! and a user's reminders on one channel that fall due within the merge
//! window go out as one delivery listing every subject (why, and what the
//! message looks like: `docs/architecture.md`, "Reminders").
//!
//! Merging never delays anything: the group goes out when its earliest member
//! is due, and takes along the members due up to `window` later. A reminder
//! shard is chosen by user, so a user's reminders share a shard, and thus an
//! owner and a fence.

use std::collections::{HashMap, HashSet};

use herald_core::{TenantId, TimerId, TimerKind};
use herald_store::{MergeProbe, Store, StoreError, SubjectRecord, TimerRecord};
use serde_json::{Map, Value, json};

/// Subjects by tenant and subject id: user and subject ids are per tenant.
type Subjects<'a> = HashMap<(TenantId, &'a str), &'a SubjectRecord>;

/// Reminders that go out as one delivery.
#[derive(Debug)]
pub(crate) struct Group {
    /// The earliest: its due time, key and attempt are the delivery's.
    pub primary: TimerRecord,
    /// The others, earliest first. They are in the flight set without a permit.
    pub members: Vec<TimerRecord>,
    /// The composed message (JSON text).
    pub message: String,
}

/// Builds the deliveries for a batch of fetched reminder rows.
///
/// `claim` is asked for each extra member found in the store (not in `rows`):
/// it returns `false` when that timer is already being delivered. On an error
/// nothing is claimed and the caller puts the rows back.
pub(crate) async fn plan(
    store: &dyn Store,
    rows: Vec<TimerRecord>,
    window_ms: i64,
    mut claim: impl FnMut(&TimerRecord) -> bool,
    unclaim: impl FnOnce(Vec<TimerId>),
) -> Result<Vec<Group>, StoreError> {
    let mut groups = group_rows(rows, window_ms);
    let mut claimed = Vec::new();
    if window_ms > 0 && !groups.is_empty() {
        let probes: Vec<MergeProbe> = groups
            .iter()
            .map(|g| MergeProbe {
                tenant: g.primary.tenant,
                user_id: g.primary.recipient.clone(),
                channel: g.primary.channel.clone(),
                from: g.primary.due_at,
                until: g.primary.due_at.saturating_add(window_ms),
            })
            .collect();
        let found = store.pending_reminders(&probes).await?;
        let known: HashSet<TimerId> = groups
            .iter()
            .flat_map(|g| std::iter::once(g.primary.id).chain(g.members.iter().map(|m| m.id)))
            .collect();
        let mut by_owner: HashMap<(TenantId, &str, &str), usize> = HashMap::new();
        for (i, g) in groups.iter().enumerate() {
            by_owner.insert(
                (
                    g.primary.tenant,
                    g.primary.recipient.as_str(),
                    g.primary.channel.as_str(),
                ),
                i,
            );
        }
        let mut extra: Vec<(usize, TimerRecord)> = Vec::new();
        for t in found {
            if known.contains(&t.id) || t.kind != TimerKind::Reminder {
                continue;
            }
            let owner = (t.tenant, t.recipient.as_str(), t.channel.as_str());
            let Some(&i) = by_owner.get(&owner) else {
                continue;
            };
            let p = &groups[i].primary;
            let fits = t.shard == p.shard
                && stored_field(&t.message, "channel_type")
                    == stored_field(&p.message, "channel_type")
                && t.due_at >= p.due_at
                && t.due_at <= p.due_at.saturating_add(window_ms);
            if fits && claim(&t) {
                claimed.push(t.id);
                extra.push((i, t));
            }
        }
        for (i, t) in extra {
            groups[i].members.push(t);
        }
        for g in &mut groups {
            g.members.sort_by_key(|m| (m.due_at, m.id));
        }
    }
    // Subject ids by tenant: one read per tenant in the batch (usually one).
    let mut wanted: HashMap<TenantId, HashSet<String>> = HashMap::new();
    for g in &groups {
        for t in std::iter::once(&g.primary).chain(&g.members) {
            if let Some(s) = stored_field(&t.message, "subject_id") {
                wanted.entry(t.tenant).or_default().insert(s);
            }
        }
    }
    let mut found = Vec::new();
    for (tenant, ids) in wanted {
        let ids: Vec<String> = ids.into_iter().collect();
        match store.get_subjects(tenant, &ids).await {
            Ok(s) => found.extend(s),
            Err(e) => {
                unclaim(claimed);
                return Err(e);
            }
        }
    }
    let subjects: Subjects<'_> = found
        .iter()
        .map(|s| ((s.tenant, s.subject_id.as_str()), s))
        .collect();
    for g in &mut groups {
        g.message = compose(&g.primary, &g.members, &subjects);
    }
    Ok(groups)
}

/// Groups rows of one batch: per (user, channel), the earliest row leads and
/// takes the rows due within the window after it; a later row starts a new group.
fn group_rows(rows: Vec<TimerRecord>, window_ms: i64) -> Vec<Group> {
    // The channel type is part of the owner: with the subscriber directory,
    // an e-mail and an SMS reminder on one channel go to different addresses.
    let mut rows: Vec<(Option<String>, TimerRecord)> = rows
        .into_iter()
        .map(|t| (stored_field(&t.message, "channel_type"), t))
        .collect();
    rows.sort_by(|(ta, a), (tb, b)| {
        (
            a.tenant,
            a.recipient.as_str(),
            a.channel.as_str(),
            ta,
            a.shard,
            a.due_at,
            a.id,
        )
            .cmp(&(
                b.tenant,
                b.recipient.as_str(),
                b.channel.as_str(),
                tb,
                b.shard,
                b.due_at,
                b.id,
            ))
    });
    let mut groups: Vec<Group> = Vec::with_capacity(rows.len());
    let mut last_type = None;
    for (ty, t) in rows {
        if window_ms > 0
            && let Some(g) = groups.last_mut()
            && last_type == ty
            && g.primary.tenant == t.tenant
            && g.primary.recipient == t.recipient
            && g.primary.channel == t.channel
            && g.primary.shard == t.shard
            && t.due_at <= g.primary.due_at.saturating_add(window_ms)
        {
            g.members.push(t);
            continue;
        }
        last_type = ty;
        groups.push(Group {
            primary: t,
            members: Vec::new(),
            message: String::new(),
        });
    }
    groups
}

/// A string field of a stored reminder message.
fn stored_field(message: &str, field: &str) -> Option<String> {
    let v: Value = serde_json::from_str(message).ok()?;
    v.get(field)?.as_str().map(str::to_string)
}

/// One reminder as the recipient sees it: what was stored at subscription
/// (user, subject id, channel type, lead) plus the subject as it is now.
fn item(t: &TimerRecord, subjects: &Subjects<'_>) -> Map<String, Value> {
    let mut m = match serde_json::from_str::<Value>(&t.message) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let subject = m
        .get("subject_id")
        .and_then(Value::as_str)
        .and_then(|id| subjects.get(&(t.tenant, id)).copied());
    m.insert("timer_id".into(), json!(t.id));
    match subject {
        Some(s) => {
            m.insert("subject".into(), json!(s.title));
            m.insert(
                "data".into(),
                s.data
                    .as_deref()
                    .and_then(|d| serde_json::from_str(d).ok())
                    .unwrap_or(Value::Null),
            );
            m.insert("start_at".into(), json!(rfc3339(s.start_at)));
        }
        // Deleted while the reminder was in flight: say so rather than guess.
        None => {
            m.insert("subject".into(), Value::Null);
            m.insert("data".into(), Value::Null);
            m.insert("start_at".into(), Value::Null);
        }
    }
    m
}

/// The delivered message: the earliest reminder's fields at the top level (so
/// a consumer that ignores merging still reads one reminder), and
/// `reminders` listing every reminder of the delivery, earliest first.
fn compose(primary: &TimerRecord, members: &[TimerRecord], subjects: &Subjects<'_>) -> String {
    let mut top = item(primary, subjects);
    let list: Vec<Value> = std::iter::once(primary)
        .chain(members)
        .map(|t| Value::Object(item(t, subjects)))
        .collect();
    top.remove("timer_id");
    top.insert("count".into(), json!(list.len()));
    top.insert("reminders".into(), Value::Array(list));
    Value::Object(top).to_string()
}

fn rfc3339(ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(t) => format!("{t:.3}"),
        Err(_) => ms.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use herald_core::TimerState;

    use super::*;

    fn rem(id: i64, user: &str, channel: &str, due: i64, subject: &str) -> TimerRecord {
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
            message: json!({"user_id": user, "subject_id": subject, "channel_type": "app",
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

    #[test]
    fn a_batch_groups_by_user_channel_and_window() {
        let rows = vec![
            rem(3, "u1", "hooks", 30_000, "c"),
            rem(1, "u1", "hooks", 0, "a"),
            rem(2, "u1", "hooks", 60_000, "b"),
            rem(4, "u1", "hooks", 60_001, "d"),
            rem(5, "u1", "mail", 10, "a"),
            rem(6, "u2", "hooks", 5, "a"),
        ];
        let groups = group_rows(rows.clone(), 60_000);
        let shape: Vec<(i64, Vec<i64>)> = groups
            .iter()
            .map(|g| (g.primary.id, g.members.iter().map(|m| m.id).collect()))
            .collect();
        assert_eq!(
            shape,
            vec![(1, vec![3, 2]), (4, vec![]), (5, vec![]), (6, vec![])]
        );
        // Merging off: one group each.
        assert_eq!(group_rows(rows, 0).len(), 6);
    }

    #[test]
    fn the_same_user_id_in_two_tenants_is_two_users() {
        let theirs = TimerRecord {
            tenant: TenantId(2),
            ..rem(2, "u1", "hooks", 10, "a")
        };
        let groups = group_rows(vec![rem(1, "u1", "hooks", 0, "a"), theirs], 60_000);
        assert_eq!(groups.len(), 2);
        assert!(groups.iter().all(|g| g.members.is_empty()));
        // And each reads its own tenant's subject.
        let s = |tenant, title: &str| SubjectRecord {
            tenant,
            subject_id: "a".into(),
            start_at: 0,
            title: Some(title.into()),
            data: None,
            created_at: 0,
            updated_at: 0,
        };
        let (mine, other) = (
            s(herald_core::DEFAULT_TENANT, "Mine"),
            s(TenantId(2), "Theirs"),
        );
        let subjects: Subjects<'_> = [
            ((herald_core::DEFAULT_TENANT, "a"), &mine),
            ((TenantId(2), "a"), &other),
        ]
        .into();
        for g in &groups {
            let v: Value = serde_json::from_str(&compose(&g.primary, &[], &subjects)).unwrap();
            let want = if g.primary.tenant == TenantId(2) {
                "Theirs"
            } else {
                "Mine"
            };
            assert_eq!(v["subject"], want);
        }
    }

    #[test]
    fn the_message_lists_every_subject_earliest_first() {
        let s = |id: &str, title: &str, start: i64| SubjectRecord {
            tenant: herald_core::DEFAULT_TENANT,
            subject_id: id.into(),
            start_at: start,
            title: Some(title.into()),
            data: Some(r#"{"shop":7}"#.into()),
            created_at: 0,
            updated_at: 0,
        };
        let (a, b) = (s("a", "Coupon A", 300_000), s("b", "Coupon B", 330_000));
        let t = herald_core::DEFAULT_TENANT;
        let subjects: Subjects<'_> = [((t, "a"), &a), ((t, "b"), &b)].into();
        let msg = compose(
            &rem(1, "u1", "hooks", 0, "a"),
            &[
                rem(2, "u1", "hooks", 30_000, "b"),
                rem(3, "u1", "hooks", 40_000, "gone"),
            ],
            &subjects,
        );
        let v: Value = serde_json::from_str(&msg).unwrap();
        assert_eq!(v["user_id"], "u1");
        assert_eq!(v["subject_id"], "a");
        assert_eq!(v["subject"], "Coupon A");
        assert_eq!(v["start_at"], "1970-01-01T00:05:00.000Z");
        assert_eq!(v["data"]["shop"], 7);
        assert_eq!(v["count"], 3);
        let list = v["reminders"].as_array().unwrap();
        let ids: Vec<&str> = list
            .iter()
            .map(|r| r["subject_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["a", "b", "gone"]);
        assert_eq!(list[1]["subject"], "Coupon B");
        assert_eq!(list[1]["timer_id"], 2);
        assert_eq!(list[2]["subject"], Value::Null);
    }
}
