//! `herald audit`: the log of requests that changed state, newest first.

use anyhow::Context;
use clap::{Args, Subcommand};

use crate::client::{Remote, answer, print_value};

/// `herald audit list` (or plain `herald audit`, as before).
#[derive(Subcommand, Debug)]
pub enum AuditCmd {
    /// List audit entries, newest first (only --tenant's when given; the
    /// admin key sees every tenant's by default).
    List(AuditArgs),
}

#[derive(Args, Debug, Default)]
pub struct AuditArgs {
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
    fn query(self, tenant: Option<String>) -> Vec<(&'static str, String)> {
        let mut q = Vec::new();
        if let Some(t) = tenant {
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

pub async fn run(remote: &Remote, cmd: Option<AuditCmd>, args: AuditArgs) -> anyhow::Result<()> {
    let args = match cmd {
        Some(AuditCmd::List(a)) => a,
        None => args,
    };
    // `--tenant` filters here; the admin reads as itself.
    let http = remote.http_as_caller()?;
    let base = remote.base();
    let resp = http
        .get(format!("{base}/v1/audit"))
        .query(&args.query(remote.tenant.clone()))
        .send()
        .await
        .with_context(|| format!("cannot reach {base}"))?;
    print_value(&answer(resp).await?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_holds_only_what_was_given() {
        let args = AuditArgs {
            route: Some("/v1/jobs*".into()),
            status: Some("4xx".into()),
            oldest_first: true,
            limit: Some(10),
            ..AuditArgs::default()
        };
        assert_eq!(
            args.query(Some("shop".into())),
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
