//! `herald keys ...`: create, list and revoke API keys (admin key needed).

use anyhow::{Context, bail};
use clap::Subcommand;
use serde_json::{Value, json};

use crate::client::{Remote, answer, print_line, print_value};

#[derive(Subcommand, Debug)]
pub enum KeysCmd {
    /// Create a key for the tenant given with --tenant (created if it is
    /// new). The key is printed once, on its own first line; the server
    /// keeps only a hash.
    Create {
        /// read, write, campaign, admin or metrics; repeat for several.
        #[arg(long = "scope", required = true, value_name = "SCOPE")]
        scopes: Vec<String>,
        /// A name for the key, shown in lists and in the audit log.
        #[arg(long)]
        name: Option<String>,
        /// When the key stops working (RFC 3339).
        #[arg(long)]
        expires_at: Option<String>,
    },
    /// List keys (never their secrets; only --tenant's when given), every
    /// page unless --limit or --after asks for one.
    #[command(visible_alias = "ls")]
    List {
        /// Print one page of at most this many keys (1..1000), with its
        /// `next_after`.
        #[arg(long)]
        limit: Option<u32>,
        /// Print the page after this key id (a previous page's `next_after`).
        #[arg(long)]
        after: Option<i64>,
    },
    /// Revoke a key: every node refuses it within 2 s.
    #[command(visible_alias = "revoke")]
    Delete {
        /// The key's id (not its secret).
        id: i64,
    },
}

/// The body of `POST /v1/keys`.
fn create_body(
    tenant: String,
    scopes: Vec<String>,
    name: Option<String>,
    expires_at: Option<String>,
) -> Value {
    let mut body = json!({ "tenant": tenant, "scopes": scopes });
    if let Some(n) = name {
        body["name"] = n.into();
    }
    if let Some(e) = expires_at {
        body["expires_at"] = e.into();
    }
    body
}

pub async fn run(remote: &Remote, cmd: KeysCmd) -> anyhow::Result<()> {
    // `--tenant` names the key's tenant here; the admin acts as itself.
    let http = remote.http_as_caller()?;
    let tenant = remote.tenant.clone();
    let base = remote.base();
    let reach = || format!("cannot reach {base}");
    match cmd {
        KeysCmd::Create {
            scopes,
            name,
            expires_at,
        } => {
            let Some(tenant) = tenant else {
                bail!("keys create needs --tenant NAME: the tenant the key is for");
            };
            let body = create_body(tenant, scopes, name, expires_at);
            let resp = http
                .post(format!("{base}/v1/keys"))
                .json(&body)
                .send()
                .await
                .with_context(reach)?;
            let v = answer(resp).await?;
            // The secret first and alone, so `| head -1` takes it.
            if let Some(key) = v["key"].as_str() {
                print_line(key);
            }
            print_value(&v);
            Ok(())
        }
        KeysCmd::List { limit, after } => {
            let page = |after: Option<i64>| {
                let q = ls_query(tenant.as_deref(), limit, after);
                let req = http.get(format!("{base}/v1/keys")).query(&q);
                async move { answer(req.send().await.with_context(reach)?).await }
            };
            if limit.is_some() || after.is_some() {
                print_value(&page(after).await?);
            } else {
                print_value(&json!({ "keys": every_page(page).await? }));
            }
            Ok(())
        }
        KeysCmd::Delete { id } => {
            let resp = http
                .delete(format!("{base}/v1/keys/{id}"))
                .send()
                .await
                .with_context(reach)?;
            print_value(&answer(resp).await?);
            Ok(())
        }
    }
}

/// Keys per page when `herald keys list` follows every page: the server's maximum.
const LS_PAGE: u32 = 1000;

/// The items of every page, following `next_after` from the first page on.
async fn every_page<F, Fut>(mut page: F) -> anyhow::Result<Vec<Value>>
where
    F: FnMut(Option<i64>) -> Fut,
    Fut: Future<Output = anyhow::Result<Value>>,
{
    let mut items = Vec::new();
    let mut after = None;
    loop {
        let mut body = page(after).await?;
        if let Some(Value::Array(keys)) = body.get_mut("keys").map(Value::take) {
            items.extend(keys);
        }
        match body["next_after"].as_i64() {
            // A cursor that does not move would never end.
            Some(next) if Some(next) != after => after = Some(next),
            _ => return Ok(items),
        }
    }
}

/// The query of one `GET /v1/keys` page.
fn ls_query(
    tenant: Option<&str>,
    limit: Option<u32>,
    after: Option<i64>,
) -> Vec<(&'static str, String)> {
    let mut q = Vec::new();
    if let Some(t) = tenant {
        q.push(("tenant", t.to_string()));
    }
    q.push(("limit", limit.unwrap_or(LS_PAGE).to_string()));
    if let Some(a) = after {
        q.push(("after", a.to_string()));
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_sends_only_what_was_given() {
        assert_eq!(
            create_body(
                "shop".into(),
                vec!["write".into(), "read".into()],
                None,
                None
            ),
            json!({"tenant": "shop", "scopes": ["write", "read"]})
        );
        assert_eq!(
            create_body(
                "shop".into(),
                vec!["read".into()],
                Some("ci".into()),
                Some("2030-01-01T00:00:00Z".into())
            ),
            json!({"tenant": "shop", "scopes": ["read"], "name": "ci",
                   "expires_at": "2030-01-01T00:00:00Z"})
        );
    }

    #[test]
    fn ls_asks_for_full_pages_unless_told() {
        assert_eq!(
            ls_query(None, None, None),
            vec![("limit", "1000".to_string())]
        );
        assert_eq!(
            ls_query(Some("shop"), Some(5), Some(9)),
            vec![
                ("tenant", "shop".to_string()),
                ("limit", "5".to_string()),
                ("after", "9".to_string())
            ]
        );
    }

    #[tokio::test]
    async fn ls_follows_next_after_to_the_last_page() {
        let pages = [
            json!({"keys": [{"id": 1}, {"id": 2}], "next_after": 2}),
            json!({"keys": [{"id": 3}, {"id": 4}], "next_after": 4}),
            json!({"keys": [], "next_after": null}),
        ];
        let mut asked = Vec::new();
        let items = every_page(|after| {
            asked.push(after);
            let body = pages[asked.len() - 1].clone();
            async move { Ok(body) }
        })
        .await
        .unwrap();
        assert_eq!(asked, [None, Some(2), Some(4)]);
        let ids: Vec<i64> = items.iter().filter_map(|k| k["id"].as_i64()).collect();
        assert_eq!(ids, [1, 2, 3, 4]);
    }
}
