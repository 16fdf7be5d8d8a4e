//! `herald audit`: the log of requests that changed state, newest first.

use anyhow::Context;
use clap::Args;

use crate::client::{Remote, answer, print_json};

#[derive(Args, Debug)]
pub struct AuditArgs {
    /// Only this tenant's entries (the admin key sees every tenant's by default).
    #[arg(long)]
    tenant: Option<String>,
    /// Only entries at or after this time (RFC 3339).
    #[arg(long)]
    since: Option<String>,
    /// Only the entries of this key: its id, or its name (`admin` for the
    /// admin key). (`--key` is the key the request is made with.)
    #[arg(long = "by-key")]
    by_key: Option<String>,
    /// Only this route (`/v1/jobs/{id}:cancel`), or with a final `*` a prefix (`/v1/jobs*`).
    #[arg(long)]
    route: Option<String>,
    /// Only this status (`404`) or class (`4xx`).
    #[arg(long)]
    status: Option<String>,
    /// Oldest first instead of newest first.
    #[arg(long)]
    oldest_first: bool,
    /// Entries per page (1..1000).
    #[arg(long)]
    limit: Option<u32>,
    /// Continue from a previous answer's `next_cursor`.
    #[arg(long)]
    cursor: Option<String>,
}

impl AuditArgs {
    fn query(self) -> Vec<(&'static str, String)> {
        let mut q = Vec::new();
        if let Some(t) = self.tenant {
            q.push(("tenant", t));
        }
        if let Some(s) = self.since {
            q.push(("since", s));
        }
        for (name, value) in [
            ("key", self.by_key),
            ("route", self.route),
            ("status", self.status),
        ] {
            if let Some(v) = value {
                q.push((name, v));
            }
        }
        if self.oldest_first {
            q.push(("order", "asc".to_string()));
        }
        if let Some(l) = self.limit {
            q.push(("limit", l.to_string()));
        }
        if let Some(c) = self.cursor {
            q.push(("cursor", c));
        }
        q
    }
}

pub async fn run(remote: &Remote, args: AuditArgs) -> anyhow::Result<()> {
    let http = remote.http()?;
    let base = remote.base();
    let resp = http
        .get(format!("{base}/v1/audit"))
        .query(&args.query())
        .send()
        .await
        .with_context(|| format!("cannot reach {base}"))?;
    print_json(&answer(resp).await?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_holds_only_what_was_given() {
        let args = AuditArgs {
            tenant: Some("shop".into()),
            since: None,
            by_key: None,
            route: Some("/v1/jobs*".into()),
            status: Some("4xx".into()),
            oldest_first: true,
            limit: Some(10),
            cursor: None,
        };
        assert_eq!(
            args.query(),
            vec![
                ("tenant", "shop".to_string()),
                ("route", "/v1/jobs*".to_string()),
                ("status", "4xx".to_string()),
                ("order", "asc".to_string()),
                ("limit", "10".to_string())
            ]
        );
    }
}
