//! `herald keys ...`: create, list and revoke API keys (admin key needed).

use anyhow::Context;
use clap::Subcommand;
use serde_json::{Value, json};

use crate::client::{Remote, answer, print_json};

#[derive(Subcommand, Debug)]
pub enum KeysCmd {
    /// Create a key for a tenant (the tenant is created if it is new). The
    /// key is printed once, on its own first line; the server keeps only a hash.
    Create {
        #[arg(long)]
        tenant: String,
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
    /// List keys (never their secrets).
    Ls {
        /// Only this tenant's keys.
        #[arg(long)]
        tenant: Option<String>,
    },
    /// Revoke a key: every node refuses it within 2 s.
    Revoke { id: i64 },
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
    let http = remote.http()?;
    let base = remote.base();
    let reach = || format!("cannot reach {base}");
    match cmd {
        KeysCmd::Create {
            tenant,
            scopes,
            name,
            expires_at,
        } => {
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
                println!("{key}");
            }
            print_json(&v);
            Ok(())
        }
        KeysCmd::Ls { tenant } => {
            let q: Vec<(&str, String)> = tenant.map(|t| ("tenant", t)).into_iter().collect();
            let resp = http
                .get(format!("{base}/v1/keys"))
                .query(&q)
                .send()
                .await
                .with_context(reach)?;
            print_json(&answer(resp).await?);
            Ok(())
        }
        KeysCmd::Revoke { id } => {
            let resp = http
                .delete(format!("{base}/v1/keys/{id}"))
                .send()
                .await
                .with_context(reach)?;
            print_json(&answer(resp).await?);
            Ok(())
        }
    }
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
}
