//! `herald audit`: the log of requests that changed state, newest last.

use anyhow::Context;
use clap::{Args, Subcommand};

use crate::client::{Remote, answer, print_value};

/// `herald audit list` (or plain `herald audit`, as before).
#[derive(Subcommand, Debug)]
pub enum AuditCmd {
    /// List audit entries, oldest first (only --tenant's when given; the
    /// admin key sees every tenant's by default).
    List(AuditArgs),
}

#[derive(Args, Debug, Default)]
pub struct AuditArgs {
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
    fn query(self, tenant: Option<String>) -> Vec<(&'static str, String)> {
        let mut q = Vec::new();
        if let Some(t) = tenant {
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
            since: None,
            limit: Some(10),
            cursor: None,
        };
        assert_eq!(
            args.query(Some("shop".into())),
            vec![("tenant", "shop".to_string()), ("limit", "10".to_string())]
        );
    }
}
