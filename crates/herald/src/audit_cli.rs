//! `herald audit`: the log of requests that changed state, newest last.

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
            limit: Some(10),
            cursor: None,
        };
        assert_eq!(
            args.query(),
            vec![("tenant", "shop".to_string()), ("limit", "10".to_string())]
        );
    }
}
