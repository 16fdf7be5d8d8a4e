//! API keys and the audit log through [`crate::AccessStore`]: listing keys
//! page by page, and audit entries that stand for many requests.

use herald_core::TenantId;

use super::fixtures::DEFAULT_TENANT;
use super::support::S;
use crate::{ApiKeyRecord, NewApiKey, NewAuditEntry};

const T0: i64 = 1_700_000_000_000;

fn key(tenant: TenantId, n: u8) -> NewApiKey {
    NewApiKey {
        tenant,
        name: Some(format!("key {n}")),
        scopes: vec!["read".into()],
        hash: [n; 32],
        created_at: T0 + i64::from(n),
        expires_at: None,
    }
}

/// Every page of `tenant`'s keys, `limit` at a time, following the last id.
async fn pages(store: &S, tenant: Option<TenantId>, limit: usize) -> Vec<Vec<ApiKeyRecord>> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .list_api_keys(tenant, after, limit)
            .await
            .expect("list_api_keys");
        assert!(page.len() <= limit);
        let full = page.len() == limit;
        after = page.last().map(|k| k.id);
        out.push(page);
        if !full {
            return out;
        }
    }
}

/// Keys page by id, `after` the last id of the previous page, per tenant or
/// over every tenant, revoked ones included.
pub async fn api_keys_page_by_id(store: S) {
    let shop = store
        .tenant_id("shop", true)
        .await
        .expect("tenant_id")
        .expect("created");
    let mut all = Vec::new();
    for n in 0..7u8 {
        let tenant = if n % 2 == 0 { DEFAULT_TENANT } else { shop };
        all.push(store.create_api_key(key(tenant, n)).await.expect("create"));
    }
    let revoked = store
        .revoke_api_key(all[2].id, T0 + 100)
        .await
        .expect("revoke")
        .expect("known");
    all[2] = revoked;

    let every = pages(&store, None, 3).await;
    assert_eq!(
        every.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![3, 3, 1]
    );
    assert_eq!(every.concat(), all);

    let defaults: Vec<ApiKeyRecord> = all
        .iter()
        .filter(|k| k.tenant == DEFAULT_TENANT)
        .cloned()
        .collect();
    let pages_of_default = pages(&store, Some(DEFAULT_TENANT), 2).await;
    assert_eq!(
        pages_of_default.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![2, 2, 0]
    );
    assert_eq!(pages_of_default.concat(), defaults);

    let after_first = store
        .list_api_keys(Some(shop), Some(all[1].id), 100)
        .await
        .expect("list_api_keys");
    assert_eq!(after_first, vec![all[3].clone(), all[5].clone()]);
    let last = all[6].id;
    assert!(
        store
            .list_api_keys(None, Some(last), 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.list_api_keys(None, None, 0).await.unwrap().is_empty());
}

/// A tally (one entry standing for many refused requests, with its reason)
/// reads back as written, beside an entry of one request.
pub async fn audit_tallies_keep_their_count_and_reason(store: S) {
    let one = NewAuditEntry {
        at: T0,
        key_id: Some(7),
        key_name: Some("shop".into()),
        tenant: DEFAULT_TENANT,
        method: "POST".into(),
        route: "/v1/timers".into(),
        resource_id: Some("12".into()),
        status: 201,
        count: 1,
        reason: None,
    };
    let tally = NewAuditEntry {
        at: T0 + 1,
        key_id: None,
        key_name: None,
        route: "/v1/timers/{id}".into(),
        resource_id: None,
        status: 401,
        count: 546_032,
        reason: Some("no_key".into()),
        ..one.clone()
    };
    store
        .append_audit(vec![one.clone(), tally.clone()])
        .await
        .expect("append_audit");
    let got = store
        .list_audit(None, None, None, 10)
        .await
        .expect("list_audit");
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0], one.into_entry(got[0].id));
    assert_eq!(got[1], tally.into_entry(got[1].id));
}
