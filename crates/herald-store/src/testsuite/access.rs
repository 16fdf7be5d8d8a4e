//! API keys and the audit log through [`crate::AccessStore`]: listing keys
//! page by page, and audit entries that stand for many requests.

use herald_core::TenantId;

use super::fixtures::DEFAULT_TENANT;
use super::support::S;
use crate::{
    ApiKeyRecord, AuditEntry, AuditFilter, AuditKey, AuditRoute, NewApiKey, NewAuditEntry,
};

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
        .list_audit(
            AuditFilter {
                oldest_first: true,
                ..AuditFilter::default()
            },
            None,
            10,
        )
        .await
        .expect("list_audit");
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0], one.into_entry(got[0].id));
    assert_eq!(got[1], tally.into_entry(got[1].id));
}

/// Every page of the audit entries `filter` keeps, `limit` at a time, each
/// continuing after the last entry of the one before.
async fn audit_pages(store: &S, filter: &AuditFilter, limit: usize) -> Vec<AuditEntry> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .list_audit(filter.clone(), after, limit)
            .await
            .expect("list_audit");
        assert!(page.len() <= limit);
        let full = page.len() == limit;
        after = page.last().map(|e| e.id);
        out.extend(page);
        if !full {
            return out;
        }
    }
}

/// What `filter` should keep of `all`, in its order, worked out here
/// rather than by the store.
fn kept(all: &[AuditEntry], f: &AuditFilter) -> Vec<AuditEntry> {
    let mut out: Vec<AuditEntry> = all
        .iter()
        .filter(|e| f.tenant.is_none_or(|t| e.tenant == t))
        .filter(|e| f.since.is_none_or(|s| e.at >= s))
        .filter(|e| match &f.key {
            None => true,
            Some(AuditKey::Id(id)) => e.key_id == Some(*id),
            Some(AuditKey::Name(n)) => e.key_name.as_deref() == Some(n.as_str()),
        })
        .filter(|e| match &f.route {
            None => true,
            Some(AuditRoute::Exact(r)) => &e.route == r,
            Some(AuditRoute::Prefix(p)) => e.route.starts_with(p.as_str()),
        })
        .filter(|e| {
            f.status
                .is_none_or(|(lo, hi)| (lo..=hi).contains(&e.status))
        })
        .cloned()
        .collect();
    out.sort_by_key(|e| (e.at, e.id));
    if !f.oldest_first {
        out.reverse();
    }
    out
}

/// The audit log reads newest first unless asked for oldest first, page
/// after page in `(at, id)` order whatever order the entries were appended
/// in, and keeps only what the tenant, `since`, key, route and status
/// filters ask for, each alone and together, in both orders.
pub async fn audit_pages_in_either_order_and_filtered(store: S) {
    let shop = store
        .tenant_id("shop", true)
        .await
        .expect("tenant_id")
        .expect("created");
    let routes = [
        "/v1/timers",
        "/v1/jobs/{id}:cancel",
        "/v1/jobs/{id}:pause",
        "/v1/jobs",
        "/v1/keys",
        "/v1/timers:retry",
    ];
    let statuses = [201, 200, 404, 409, 500, 401, 403];
    let new: Vec<NewAuditEntry> = (0..23i64)
        .map(|i| NewAuditEntry {
            // Out of id order, with ties on `at`.
            at: T0 + (i * 7) % 11,
            key_id: (i % 4 != 3).then_some(i % 4),
            key_name: Some(if i % 4 == 3 {
                "admin".to_string()
            } else {
                format!("key {}", i % 4)
            }),
            tenant: if i % 3 == 0 { shop } else { DEFAULT_TENANT },
            method: "POST".into(),
            route: routes[(i % 6) as usize].into(),
            resource_id: Some(i.to_string()),
            status: statuses[(i % 7) as usize],
            count: 1,
            reason: None,
        })
        .collect();
    store.append_audit(new.clone()).await.expect("append_audit");
    let all = audit_pages(
        &store,
        &AuditFilter {
            oldest_first: true,
            ..AuditFilter::default()
        },
        100,
    )
    .await;
    assert_eq!(all.len(), new.len());
    // Ids follow the order appended; the listing follows `(at, id)`.
    let mut by_id = all.clone();
    by_id.sort_by_key(|e| e.id);
    for (got, want) in by_id.iter().zip(&new) {
        assert_eq!(got, &want.clone().into_entry(got.id));
    }
    assert!(
        all.windows(2)
            .all(|w| (w[0].at, w[0].id) < (w[1].at, w[1].id))
    );
    assert_ne!(
        all.iter().map(|e| e.id).collect::<Vec<_>>(),
        by_id.iter().map(|e| e.id).collect::<Vec<_>>(),
        "the fixture appends out of time order"
    );

    // The default: every entry, newest first.
    let newest = audit_pages(&store, &AuditFilter::default(), 4).await;
    assert_eq!(newest, kept(&all, &AuditFilter::default()));
    assert_eq!(newest.first(), all.last());

    let filters = [
        AuditFilter {
            tenant: Some(shop),
            ..AuditFilter::default()
        },
        AuditFilter {
            since: Some(T0 + 6),
            ..AuditFilter::default()
        },
        AuditFilter {
            key: Some(AuditKey::Id(1)),
            ..AuditFilter::default()
        },
        AuditFilter {
            key: Some(AuditKey::Name("admin".into())),
            ..AuditFilter::default()
        },
        AuditFilter {
            route: Some(AuditRoute::Exact("/v1/jobs/{id}:cancel".into())),
            ..AuditFilter::default()
        },
        AuditFilter {
            route: Some(AuditRoute::Prefix("/v1/jobs".into())),
            ..AuditFilter::default()
        },
        AuditFilter {
            route: Some(AuditRoute::Prefix("/v1/timers".into())),
            ..AuditFilter::default()
        },
        AuditFilter {
            status: Some((400, 499)),
            ..AuditFilter::default()
        },
        AuditFilter {
            status: Some((404, 404)),
            ..AuditFilter::default()
        },
        AuditFilter {
            tenant: Some(DEFAULT_TENANT),
            since: Some(T0 + 2),
            key: Some(AuditKey::Id(2)),
            route: Some(AuditRoute::Prefix("/v1/".into())),
            status: Some((200, 299)),
            oldest_first: false,
        },
        AuditFilter {
            key: Some(AuditKey::Name("nobody".into())),
            ..AuditFilter::default()
        },
    ];
    for f in filters {
        for oldest_first in [false, true] {
            let f = AuditFilter {
                oldest_first,
                ..f.clone()
            };
            let want = kept(&all, &f);
            if f.key != Some(AuditKey::Name("nobody".into())) {
                assert!(
                    !want.is_empty() && want.len() < all.len(),
                    "the fixture tells this filter apart: {f:?}"
                );
            }
            for limit in [2, 100] {
                assert_eq!(audit_pages(&store, &f, limit).await, want, "{f:?}");
            }
        }
    }

    // A cursor naming no entry is refused.
    let missing = all.iter().map(|e| e.id).max().unwrap_or(0) + 1_000;
    let e = store
        .list_audit(AuditFilter::default(), Some(missing), 10)
        .await
        .expect_err("an unknown cursor");
    assert!(
        matches!(e, crate::StoreError::NotFound { .. }),
        "unknown cursor: {e:?}"
    );
}
