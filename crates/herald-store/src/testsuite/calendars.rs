//! Working-day calendars: one per tenant and name, replaced whole.

use super::fixtures::{DEFAULT_TENANT, OTHER_TENANT};
use super::support::S;
use crate::CalendarRecord;

fn cal(tenant: herald_core::TenantId, name: &str, body: &str, at: i64) -> CalendarRecord {
    CalendarRecord {
        tenant,
        name: name.into(),
        body: body.into(),
        created_at: at,
        updated_at: at,
        updated_by: Some("key 1 (ops)".into()),
    }
}

pub async fn calendars_are_replaced_whole_per_tenant_and_name(store: S) {
    assert_eq!(
        store
            .get_calendar(DEFAULT_TENANT, "acme")
            .await
            .expect("get"),
        None
    );
    assert!(
        store
            .list_calendars(DEFAULT_TENANT)
            .await
            .expect("list")
            .is_empty()
    );

    let first = store
        .put_calendar(&cal(DEFAULT_TENANT, "acme", "{\"v\":1}", 1_000))
        .await
        .expect("put");
    assert_eq!(first, cal(DEFAULT_TENANT, "acme", "{\"v\":1}", 1_000));

    // Replacing keeps when the name was first stored.
    let mut second = cal(DEFAULT_TENANT, "acme", "{\"v\":2}", 2_000);
    second.updated_by = None;
    let written = store.put_calendar(&second).await.expect("replace");
    assert_eq!(
        (
            written.body.as_str(),
            written.created_at,
            written.updated_at
        ),
        ("{\"v\":2}", 1_000, 2_000)
    );
    assert_eq!(written.updated_by, None);
    assert_eq!(
        store
            .get_calendar(DEFAULT_TENANT, "acme")
            .await
            .expect("get"),
        Some(written.clone())
    );

    // Another tenant's calendar of the same name is its own; names sort by
    // byte, whatever the database's collation.
    store
        .put_calendar(&cal(OTHER_TENANT, "acme", "{\"v\":9}", 3_000))
        .await
        .expect("other tenant");
    store
        .put_calendar(&cal(DEFAULT_TENANT, "Zeta", "{}", 3_000))
        .await
        .expect("second name");
    store
        .put_calendar(&cal(DEFAULT_TENANT, "cn", "{}", 3_000))
        .await
        .expect("a built-in's name");
    let names: Vec<String> = store
        .list_calendars(DEFAULT_TENANT)
        .await
        .expect("list")
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, ["Zeta", "acme", "cn"]);
    let other = store
        .list_calendars(OTHER_TENANT)
        .await
        .expect("list other");
    assert_eq!(other.len(), 1);
    assert_eq!(other[0].body, "{\"v\":9}");
    assert_eq!(
        store
            .get_calendar(DEFAULT_TENANT, "acme")
            .await
            .expect("get")
            .map(|c| c.body),
        Some("{\"v\":2}".into())
    );
}
