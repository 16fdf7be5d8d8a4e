//! Reminders at fire time: each message is completed from its subject as it
//! is now (a subject may have been renamed or moved since the subscription).
//! A user's reminders due close together go out as one delivery listing
//! every subject; which ones is decided in [`crate::timers::bundles`], what that
//! delivery says here (`docs/architecture.md`, "Reminders").

use std::collections::{HashMap, HashSet};

use herald_core::TenantId;
use herald_core::template::TemplateRef;
use herald_store::{Store, StoreError, SubjectRecord, TimerRecord};
use serde_json::{Map, Value, json};

/// Subjects by tenant and subject id: user and subject ids are per tenant.
pub(crate) type Subjects<'a> = HashMap<(TenantId, &'a str), &'a SubjectRecord>;

/// The subject ids `rows` (reminders) name, by tenant.
pub(crate) fn subject_ids<'a>(
    rows: impl Iterator<Item = &'a TimerRecord>,
) -> HashMap<TenantId, HashSet<String>> {
    let mut wanted: HashMap<TenantId, HashSet<String>> = HashMap::new();
    for t in rows {
        if let Some(s) = stored_field(&t.message, "subject_id") {
            wanted.entry(t.tenant).or_default().insert(s);
        }
    }
    wanted
}

/// The subjects of [`subject_ids`]: one read per tenant in the batch
/// (usually one).
pub(crate) async fn read_subjects(
    store: &dyn Store,
    wanted: HashMap<TenantId, HashSet<String>>,
) -> Result<Vec<SubjectRecord>, StoreError> {
    let mut found = Vec::new();
    for (tenant, ids) in wanted {
        let ids: Vec<String> = ids.into_iter().collect();
        found.extend(store.get_subjects(tenant, &ids).await?);
    }
    Ok(found)
}

/// A string field of a stored reminder message.
pub(crate) fn stored_field(message: &str, field: &str) -> Option<String> {
    let v: Value = serde_json::from_str(message).ok()?;
    v.get(field)?.as_str().map(str::to_string)
}

/// When a delivery of `primary` and `members` expires unsent: the latest
/// start among their subjects, unless a subject or a subscription says
/// `send_late` or a subject is gone ([`herald_core::early::expiry`]).
pub(crate) fn expires_at(
    primary: &TimerRecord,
    members: &[TimerRecord],
    subjects: &Subjects<'_>,
) -> Option<i64> {
    herald_core::early::expiry(std::iter::once(primary).chain(members).map(|t| {
        let subject = stored_field(&t.message, "subject_id")
            .and_then(|id| subjects.get(&(t.tenant, id.as_str())).copied());
        let own_late = serde_json::from_str::<Value>(&t.message)
            .ok()
            .and_then(|m| m.get("send_late").and_then(Value::as_bool))
            .unwrap_or(false);
        match subject {
            Some(s) => (Some(s.start_at), t.due_at, own_late || s.timing.send_late),
            None => (None, t.due_at, own_late),
        }
    }))
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
    // A reminder with a fallback route: the type of the step it is at.
    if t.route_step().is_some()
        && let Some(to) = herald_core::timer::Routing::parse(t.routing.as_deref()).to
    {
        m.insert("channel_type".into(), json!(to.as_str()));
    }
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
/// `reminders` listing every reminder of the delivery, earliest first. With
/// it, the template the delivery's subjects name for its channel type
/// ([`subject_template`]).
pub(crate) fn compose(
    primary: &TimerRecord,
    members: &[TimerRecord],
    subjects: &Subjects<'_>,
) -> (String, Option<TemplateRef>) {
    let items: Vec<Map<String, Value>> = std::iter::once(primary)
        .chain(members)
        .map(|t| item(t, subjects))
        .collect();
    let mut top = items.first().cloned().unwrap_or_default();
    let template = top
        .get("channel_type")
        .and_then(Value::as_str)
        .and_then(|ty| subject_template(primary.tenant, &items, ty, subjects));
    let list: Vec<Value> = items.into_iter().map(Value::Object).collect();
    top.remove("timer_id");
    top.insert("count".into(), json!(list.len()));
    top.insert("reminders".into(), Value::Array(list));
    (Value::Object(top).to_string(), template)
}

/// The template a delivery's subjects name for channel type `ty` (their
/// `templates`), when every reminder of the delivery is of a subject that
/// names the same one: a delivery of one subject takes that subject's, a
/// merged delivery of subjects that disagree (or of one that names none)
/// takes the type's (`[reminders.templates]`). Only subjects with templates
/// cost a parse.
fn subject_template(
    tenant: TenantId,
    items: &[Map<String, Value>],
    ty: &str,
    subjects: &Subjects<'_>,
) -> Option<TemplateRef> {
    let mut found: Option<TemplateRef> = None;
    let mut seen: Option<&str> = None;
    for m in items {
        let id = m.get("subject_id").and_then(Value::as_str)?;
        if seen == Some(id) {
            continue;
        }
        let s = subjects.get(&(tenant, id))?;
        let r = of_type(s.templates.as_deref()?, ty)?;
        match &found {
            Some(f) if *f != r => return None,
            _ => found = Some(r),
        }
        seen = Some(id);
    }
    found
}

/// The template a subject's stored `templates` names for channel type `ty`.
pub(crate) fn of_type(templates: &str, ty: &str) -> Option<TemplateRef> {
    let mut all: HashMap<String, TemplateRef> = serde_json::from_str(templates).ok()?;
    all.remove(ty)
}

fn rfc3339(ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(t) => format!("{t:.3}"),
        Err(_) => ms.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use herald_core::{TimerKind, TimerState};

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
    fn each_tenant_reads_its_own_subject() {
        let s = |tenant, title: &str| SubjectRecord {
            tenant,
            subject_id: "a".into(),
            start_at: 0,
            title: Some(title.into()),
            data: None,
            timing: Default::default(),
            templates: None,
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
        let theirs = TimerRecord {
            tenant: TenantId(2),
            ..rem(2, "u1", "hooks", 10, "a")
        };
        for (t, want) in [(rem(1, "u1", "hooks", 0, "a"), "Mine"), (theirs, "Theirs")] {
            let v: Value = serde_json::from_str(&compose(&t, &[], &subjects).0).unwrap();
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
            timing: Default::default(),
            templates: None,
            created_at: 0,
            updated_at: 0,
        };
        let (a, b) = (s("a", "Coupon A", 300_000), s("b", "Coupon B", 330_000));
        let t = herald_core::DEFAULT_TENANT;
        let subjects: Subjects<'_> = [((t, "a"), &a), ((t, "b"), &b)].into();
        let (msg, template) = compose(
            &rem(1, "u1", "hooks", 0, "a"),
            &[
                rem(2, "u1", "hooks", 30_000, "b"),
                rem(3, "u1", "hooks", 40_000, "gone"),
            ],
            &subjects,
        );
        assert_eq!(template, None);
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

    #[test]
    fn a_delivery_takes_the_template_its_subjects_name_for_its_type() {
        let s = |id: &str, templates: Option<&str>| SubjectRecord {
            tenant: herald_core::DEFAULT_TENANT,
            subject_id: id.into(),
            start_at: 300_000,
            title: Some(id.into()),
            data: None,
            timing: Default::default(),
            templates: templates.map(str::to_string),
            created_at: 0,
            updated_at: 0,
        };
        let named = |name: &str| TemplateRef {
            name: name.into(),
            version: None,
        };
        let (a, a2, b, email_only, plain) = (
            s(
                "a",
                Some(r#"{"app":{"name":"push-a"},"sms":{"name":"sms-a"}}"#),
            ),
            s("a2", Some(r#"{"app":{"name":"push-a"}}"#)),
            s("b", Some(r#"{"app":{"name":"push-b","version":3}}"#)),
            s("e", Some(r#"{"email":{"name":"mail"}}"#)),
            s("p", None),
        );
        let t = herald_core::DEFAULT_TENANT;
        let subjects: Subjects<'_> = [
            ((t, "a"), &a),
            ((t, "a2"), &a2),
            ((t, "b"), &b),
            ((t, "e"), &email_only),
            ((t, "p"), &plain),
        ]
        .into();
        let of = |primary: &str, members: &[&str]| {
            let members: Vec<TimerRecord> = members
                .iter()
                .enumerate()
                .map(|(i, m)| rem(10 + i as i64, "u1", "push", 1_000, m))
                .collect();
            compose(&rem(1, "u1", "push", 0, primary), &members, &subjects).1
        };
        // One subject: its own template for the reminder's type (app).
        assert_eq!(of("a", &[]), Some(named("push-a")));
        assert_eq!(
            of("b", &[]),
            Some(TemplateRef {
                name: "push-b".into(),
                version: Some(3),
            })
        );
        // Several reminders of one subject, or subjects naming the same one.
        assert_eq!(of("a", &["a"]), Some(named("push-a")));
        assert_eq!(of("a", &["a2"]), Some(named("push-a")));
        // Subjects that disagree, one without, one gone, or none for the type.
        assert_eq!(of("a", &["b"]), None);
        assert_eq!(of("a", &["p"]), None);
        assert_eq!(of("a", &["gone"]), None);
        assert_eq!(of("e", &[]), None);
        assert_eq!(of("p", &[]), None);
    }
}
