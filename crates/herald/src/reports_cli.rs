//! `herald reports`: the stored delivery counts (`GET /v1/reports`) as a
//! table, or as the server's JSON with `--json` or through a pipe.

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::Value;

use crate::client::{Format, Remote, answer, format, print_json, print_text};

/// `herald reports list` (or plain `herald reports`, as before).
#[derive(Subcommand, Debug)]
pub enum ReportsCmd {
    /// Delivery counts grouped as --group-by says (only --tenant's when
    /// given; the admin key sees every tenant's by default).
    List(ReportsArgs),
}

#[derive(Args, Debug, Default)]
pub struct ReportsArgs {
    /// Comma-separated: tenant, channel, outcome, day, rule, job (the
    /// server's default: day,channel,outcome).
    #[arg(long)]
    group_by: Option<String>,
    /// First UTC day counted: YYYY-MM-DD or RFC 3339.
    #[arg(long)]
    from: Option<String>,
    /// Last UTC day counted (included): YYYY-MM-DD or RFC 3339.
    #[arg(long)]
    to: Option<String>,
    /// Only this channel's counts.
    #[arg(long)]
    channel: Option<String>,
    /// Only this outcome's counts (delivered, retry, failed, ...).
    #[arg(long)]
    outcome: Option<String>,
    /// Only this rule's jobs.
    #[arg(long)]
    rule: Option<i64>,
    /// Only this job's counts.
    #[arg(long)]
    job: Option<i64>,
    /// At most this many rows (1..=10000).
    #[arg(long)]
    limit: Option<u32>,
}

impl ReportsArgs {
    fn query(&self, tenant: &Option<String>) -> Vec<(&'static str, String)> {
        let text = [
            ("group_by", &self.group_by),
            ("from", &self.from),
            ("to", &self.to),
            ("tenant", tenant),
            ("channel", &self.channel),
            ("outcome", &self.outcome),
        ];
        let mut q: Vec<(&'static str, String)> = text
            .into_iter()
            .filter_map(|(k, v)| v.clone().map(|v| (k, v)))
            .collect();
        let numbers = [
            ("rule", self.rule),
            ("job", self.job),
            ("limit", self.limit.map(i64::from)),
        ];
        q.extend(
            numbers
                .into_iter()
                .filter_map(|(k, v)| v.map(|v| (k, v.to_string()))),
        );
        q
    }
}

pub async fn run(
    remote: &Remote,
    cmd: Option<ReportsCmd>,
    args: ReportsArgs,
) -> anyhow::Result<()> {
    let args = match cmd {
        Some(ReportsCmd::List(a)) => a,
        None => args,
    };
    // `--tenant` filters here; the admin reads as itself.
    let http = remote.http_as_caller()?;
    let base = remote.base();
    let resp = http
        .get(format!("{base}/v1/reports"))
        .query(&args.query(&remote.tenant))
        .send()
        .await
        .with_context(|| format!("cannot reach {base}"))?;
    let report = answer(resp).await?;
    match format() {
        Format::Json => print_json(&report),
        Format::Table => print_text(&table(&report)),
    }
    Ok(())
}

/// The report as a table: a column per key grouped by, then `count`, and a
/// total line.
pub fn table(report: &Value) -> String {
    let mut header: Vec<String> = report["group_by"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d.as_str().map(str::to_string))
        .collect();
    let rows: Vec<Vec<String>> = report["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            header
                .iter()
                .map(|k| cell(&r[k]))
                .chain([cell(&r["count"])])
                .collect()
        })
        .collect();
    header.push("count".into());
    let mut widths: Vec<usize> = header.iter().map(String::len).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: &[String]| {
        let last = cells.len() - 1;
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            // Counts line up on the right, keys on the left.
            if i == last {
                s.push_str(&format!("{c:>w$}"));
            } else {
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        s.push('\n');
        s
    };
    let mut out = line(&header);
    for r in &rows {
        out.push_str(&line(r));
    }
    let total = cell(&report["total"]);
    out.push_str(&format!("total {total}"));
    if report["truncated"].as_bool() == Some(true) {
        out.push_str(" (more rows than --limit: truncated)");
    }
    out.push('\n');
    out
}

/// A JSON value as a table cell; `null` (no rule, no job) as `-`.
fn cell(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_report_prints_as_aligned_columns_with_a_total() {
        let report = json!({
            "group_by": ["channel", "rule"],
            "rows": [
                {"channel": "webhook", "rule": null, "count": 12},
                {"channel": "sms", "rule": 7, "count": 3},
            ],
            "total": 15,
            "truncated": false,
        });
        assert_eq!(
            table(&report),
            "channel  rule  count\n\
             webhook  -        12\n\
             sms      7         3\n\
             total 15\n"
        );
    }

    #[test]
    fn the_query_holds_only_what_was_given() {
        let args = ReportsArgs {
            group_by: Some("channel,day".into()),
            from: None,
            to: Some("2026-11-26".into()),
            channel: None,
            outcome: None,
            rule: Some(3),
            job: None,
            limit: None,
        };
        assert_eq!(
            args.query(&None),
            vec![
                ("group_by", "channel,day".to_string()),
                ("to", "2026-11-26".to_string()),
                ("rule", "3".to_string()),
            ]
        );
    }
}
