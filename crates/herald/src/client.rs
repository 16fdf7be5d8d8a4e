//! What every client command shares: the server's address, the key to
//! send, the tenant to act for, and how an answer is printed.

use std::io::IsTerminal as _;
use std::sync::OnceLock;

use anyhow::Context;

/// The header with which the admin key acts for one tenant (the server's
/// `access::TENANT_HEADER`).
const TENANT_HEADER: &str = "x-herald-tenant";

/// Where a client command sends its requests, with which key, for which
/// tenant. Global: they may come anywhere on the line
/// (`herald --server URL timers get 7` and `herald timers get 7 --server URL`).
#[derive(clap::Args, Clone)]
pub struct Remote {
    /// Base URL of the Herald server the client commands talk to.
    #[arg(
        long,
        global = true,
        env = "HERALD_SERVER",
        default_value = "http://127.0.0.1:8780",
        help_heading = "Client options"
    )]
    pub server: String,
    /// API key (or the admin key), sent as `Authorization: Bearer KEY`.
    #[arg(
        long,
        global = true,
        env = "HERALD_KEY",
        hide_env_values = true,
        help_heading = "Client options"
    )]
    pub key: Option<String>,
    /// Act for this tenant (the admin key only; sent as `X-Herald-Tenant`).
    /// On `keys`, `audit` and `reports` it names the tenant to create a key
    /// for or to filter by.
    #[arg(
        long,
        global = true,
        env = "HERALD_TENANT",
        help_heading = "Client options"
    )]
    pub tenant: Option<String>,
}

/// How a client command prints its answer. Global below the command it is
/// on (`herald timers list --json`, `herald timers --json list`).
#[derive(clap::Args, Clone, Copy, Debug, Default)]
pub struct OutputArgs {
    /// Print the server's JSON (the default when stdout is not a terminal).
    #[arg(long, global = true, conflicts_with = "table")]
    pub json: bool,
    /// Print a table even when stdout is not a terminal.
    #[arg(long, global = true)]
    pub table: bool,
}

/// What an answer is printed as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Table,
}

impl OutputArgs {
    /// `--json` or `--table` when given; otherwise a table for a person at a
    /// terminal and JSON for a pipe or a file, so scripts keep reading JSON.
    pub fn format(self) -> Format {
        match (self.json, self.table) {
            (true, _) => Format::Json,
            (_, true) => Format::Table,
            _ if std::io::stdout().is_terminal() => Format::Table,
            _ => Format::Json,
        }
    }
}

/// The format chosen for this run; set once by `main` before a client command.
static FORMAT: OnceLock<Format> = OnceLock::new();

/// Chooses how answers are printed for the rest of the run.
pub fn set_output(output: OutputArgs) {
    let _ = FORMAT.set(output.format());
}

/// How answers are printed: JSON unless a table was chosen.
pub fn format() -> Format {
    FORMAT.get().copied().unwrap_or(Format::Json)
}

impl Remote {
    pub fn base(&self) -> &str {
        self.server.trim_end_matches('/')
    }

    /// An HTTP client that sends the key, if there is one, and acts for
    /// `--tenant`, if given, with every request.
    pub fn http(&self) -> anyhow::Result<reqwest::Client> {
        self.client(self.tenant.as_deref())
    }

    /// An HTTP client that sends the key only: for the admin's commands
    /// (`keys`, `audit`, `reports`), where `--tenant` is a parameter.
    pub fn http_as_caller(&self) -> anyhow::Result<reqwest::Client> {
        self.client(None)
    }

    fn client(&self, act_for: Option<&str>) -> anyhow::Result<reqwest::Client> {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(key) = &self.key {
            let mut value =
                reqwest::header::HeaderValue::from_str(&format!("Bearer {}", key.trim()))
                    .context("--key holds characters an HTTP header cannot carry")?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        if let Some(tenant) = act_for {
            let value = reqwest::header::HeaderValue::from_str(tenant.trim())
                .context("--tenant holds characters an HTTP header cannot carry")?;
            headers.insert(TENANT_HEADER, value);
        }
        reqwest::Client::builder()
            .default_headers(headers)
            .build()
            .context("building the HTTP client")
    }
}

/// Never prints the key.
impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("server", &self.server)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .field("tenant", &self.tenant)
            .finish()
    }
}

/// Prints a 2xx answer (see [`print_value`]); anything else is the error,
/// printed once by `main` on stderr, with nothing on stdout.
pub async fn show(resp: reqwest::Response) -> anyhow::Result<()> {
    let status = resp.status();
    let text = resp.text().await?;
    let value = serde_json::from_str::<serde_json::Value>(&text).ok();
    if !status.is_success() {
        anyhow::bail!("{}", refusal(status, value.as_ref(), &text));
    }
    match &value {
        Some(v) => print_value(v),
        None => print_line(&text),
    }
    Ok(())
}

/// A 2xx answer's JSON; anything else is the error (see [`refusal`]).
pub async fn answer(resp: reqwest::Response) -> anyhow::Result<serde_json::Value> {
    let status = resp.status();
    let text = resp.text().await?;
    let value = serde_json::from_str::<serde_json::Value>(&text).ok();
    if !status.is_success() {
        anyhow::bail!("{}", refusal(status, value.as_ref(), &text));
    }
    value.context("the server's answer is not JSON")
}

/// Longest part of a non-JSON error body quoted in the error line.
const QUOTED_BODY: usize = 200;

/// One line for a refused request: "404 not_found: timer 7 not found",
/// with the field the server named when its message does not say it.
pub fn refusal(
    status: reqwest::StatusCode,
    body: Option<&serde_json::Value>,
    text: &str,
) -> String {
    let error = body.map(|v| &v["error"]);
    let code = error
        .and_then(|e| e["code"].as_str())
        .filter(|s| !s.is_empty());
    let message = error
        .and_then(|e| e["message"].as_str())
        .filter(|s| !s.is_empty());
    let field = error
        .and_then(|e| e["field"].as_str())
        .filter(|f| !f.is_empty() && !message.is_some_and(|m| m.contains(*f)));
    let mut line = status.as_u16().to_string();
    match (code, message) {
        (Some(c), Some(m)) => line.push_str(&format!(" {c}: {m}")),
        (Some(c), None) => line.push_str(&format!(" {c}")),
        (None, Some(m)) => line.push_str(&format!(": {m}")),
        (None, None) => {
            let reason = status.canonical_reason().unwrap_or("");
            let said: String = text.trim().chars().take(QUOTED_BODY).collect();
            let said = said.replace(['\n', '\r'], " ");
            line.push_str(&format!(" {reason}"));
            if !said.is_empty() {
                line.push_str(&format!(": {said}"));
            }
        }
    }
    if let Some(f) = field {
        line.push_str(&format!(" (field {f})"));
    }
    line
}

/// An answer as the run's format says: pretty JSON, or a table.
pub fn print_value(v: &serde_json::Value) {
    match format() {
        Format::Json => print_json(v),
        Format::Table => print_text(&crate::tables::render(v)),
    }
}

/// Pretty JSON on stdout.
pub fn print_json(v: &serde_json::Value) {
    let text = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    print_line(&text);
}

/// `println!` that does not panic when stdout is a closed pipe (`| head`).
pub fn print_line(text: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}

/// Text that already ends its lines, on stdout.
pub fn print_text(text: &str) {
    use std::io::Write as _;
    let _ = write!(std::io::stdout().lock(), "{text}");
}

/// The query of one page of a `?cursor=&limit=` listing.
pub fn page_query(cursor: Option<String>, limit: Option<u32>) -> Vec<(&'static str, String)> {
    let mut q = Vec::new();
    if let Some(c) = cursor {
        q.push(("cursor", c));
    }
    if let Some(l) = limit {
        q.push(("limit", l.to_string()));
    }
    q
}

/// A flag's value parsed as JSON, the error naming the flag.
pub fn json_flag(flag: &str, raw: &str) -> anyhow::Result<serde_json::Value> {
    serde_json::from_str(raw).with_context(|| format!("--{flag} is not valid JSON"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_refusal_is_one_line_with_status_code_and_message() {
        let forbidden = json!({"error": {"code": "forbidden",
            "message": "this key needs the \"campaign\" scope", "field": null}});
        assert_eq!(
            refusal(reqwest::StatusCode::FORBIDDEN, Some(&forbidden), ""),
            "403 forbidden: this key needs the \"campaign\" scope"
        );
        let unauthorized = json!({"error": {"code": "unauthorized"}});
        assert_eq!(
            refusal(reqwest::StatusCode::UNAUTHORIZED, Some(&unauthorized), ""),
            "401 unauthorized"
        );
        let bad = json!({"error": {"code": "invalid_field", "message": "must be 0..=9",
            "field": "priority"}});
        assert_eq!(
            refusal(reqwest::StatusCode::BAD_REQUEST, Some(&bad), ""),
            "400 invalid_field: must be 0..=9 (field priority)"
        );
        assert_eq!(
            refusal(reqwest::StatusCode::BAD_GATEWAY, None, "upstream\ndown"),
            "502 Bad Gateway: upstream down"
        );
    }

    #[test]
    fn json_and_table_flags_win_over_the_terminal_check() {
        let json = OutputArgs {
            json: true,
            table: false,
        };
        let table = OutputArgs {
            json: false,
            table: true,
        };
        assert_eq!(json.format(), Format::Json);
        assert_eq!(table.format(), Format::Table);
    }
}
