//! Message templates: versions written once, numbered per tenant and name.

use herald_core::TenantId;

use super::fixtures::DEFAULT_TENANT;
use super::support::S;
use crate::{NewTemplateVersion, StoreError, TemplateCensus, TemplateWrite};

fn version(tenant: TenantId, name: &str, body: &str) -> NewTemplateVersion {
    NewTemplateVersion {
        tenant,
        name: name.into(),
        body: body.into(),
        created_at: 1_700_000_000_000,
        created_by: Some("key 1 (ops)".into()),
    }
}

pub async fn versions_count_up_per_tenant_and_name(store: S) {
    assert_eq!(
        store.template_census().await.expect("census"),
        TemplateCensus::default()
    );
    let first = store
        .put_template(
            &version(DEFAULT_TENANT, "coupon", "{\"a\":1}"),
            TemplateWrite::Create,
        )
        .await
        .expect("create");
    assert_eq!((first.version, first.name.as_str()), (1, "coupon"));
    assert_eq!(first.created_by.as_deref(), Some("key 1 (ops)"));
    let again = store
        .put_template(
            &version(DEFAULT_TENANT, "coupon", "{}"),
            TemplateWrite::Create,
        )
        .await;
    assert!(
        matches!(again, Err(StoreError::Conflict { .. })),
        "{again:?}"
    );
    let second = store
        .put_template(
            &version(DEFAULT_TENANT, "coupon", "{\"a\":2}"),
            TemplateWrite::NewVersion,
        )
        .await
        .expect("new version");
    assert_eq!(second.version, 2);
    assert!(second.id > first.id);
    let unknown = store
        .put_template(
            &version(DEFAULT_TENANT, "nope", "{}"),
            TemplateWrite::NewVersion,
        )
        .await;
    assert!(
        matches!(unknown, Err(StoreError::NotFound { .. })),
        "{unknown:?}"
    );
    // Another tenant's template of the same name starts at 1.
    let other = store
        .put_template(&version(TenantId(2), "coupon", "{}"), TemplateWrite::Create)
        .await
        .expect("other tenant");
    assert_eq!(other.version, 1);
    let census = store.template_census().await.expect("census");
    assert_eq!(census.versions, 3);
    assert_eq!(census.max_id, other.id);
    let all = store.all_templates().await.expect("all");
    let seen: Vec<(u32, u32, &str)> = all
        .iter()
        .map(|t| (t.tenant.0, t.version, t.body.as_str()))
        .collect();
    assert_eq!(
        seen,
        vec![(1, 1, "{\"a\":1}"), (1, 2, "{\"a\":2}"), (2, 1, "{}")]
    );
}
