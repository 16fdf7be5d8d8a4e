//! What every client command shares: the server's address, the key to
//! send, and how an answer is printed.

use anyhow::{Context, bail};

/// Where a client command sends its requests, and with which key. Both may
/// come anywhere on the line (`herald timers get 7 --server URL` too).
#[derive(clap::Args, Clone)]
pub struct Remote {
    #[arg(
        long,
        global = true,
        env = "HERALD_SERVER",
        default_value = "http://127.0.0.1:8780"
    )]
    pub server: String,
    /// API key (or the admin key), sent as `Authorization: Bearer KEY`.
    #[arg(long, global = true, env = "HERALD_KEY", hide_env_values = true)]
    pub key: Option<String>,
}

impl Remote {
    pub fn base(&self) -> &str {
        self.server.trim_end_matches('/')
    }

    /// An HTTP client that sends the key, if there is one, with every request.
    pub fn http(&self) -> anyhow::Result<reqwest::Client> {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(key) = &self.key {
            let mut value =
                reqwest::header::HeaderValue::from_str(&format!("Bearer {}", key.trim()))
                    .context("--key holds characters an HTTP header cannot carry")?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
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
            .finish()
    }
}

/// Prints a server's answer (pretty JSON when it is JSON); a non-2xx is an error.
pub async fn show(resp: reqwest::Response) -> anyhow::Result<()> {
    let status = resp.status();
    let text = resp.text().await?;
    let value = serde_json::from_str::<serde_json::Value>(&text).ok();
    match &value {
        Some(v) => print_json(v),
        None => print_line(&text),
    }
    if !status.is_success() {
        bail!("{}", refusal(status, value.as_ref()));
    }
    Ok(())
}

/// A 2xx answer's JSON. Anything else is printed as the server sent it
/// (a 401 or 403 names what is missing) and becomes the error.
pub async fn answer(resp: reqwest::Response) -> anyhow::Result<serde_json::Value> {
    let status = resp.status();
    let text = resp.text().await?;
    let value = serde_json::from_str::<serde_json::Value>(&text).ok();
    if !status.is_success() {
        match &value {
            Some(v) => print_json(v),
            None => print_line(&text),
        }
        bail!("{}", refusal(status, value.as_ref()));
    }
    value.context("the server's answer is not JSON")
}

/// "server answered 403 Forbidden: ... needs the \"campaign\" scope".
fn refusal(status: reqwest::StatusCode, body: Option<&serde_json::Value>) -> String {
    let error = body.map(|v| &v["error"]);
    let said = error
        .and_then(|e| e["message"].as_str().or_else(|| e["code"].as_str()))
        .filter(|s| !s.is_empty());
    match said {
        Some(m) => format!("server answered {status}: {m}"),
        None => format!("server answered {status}"),
    }
}

/// Pretty JSON on stdout.
pub fn print_json(v: &serde_json::Value) {
    let text = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    print_line(&text);
}

/// `println!` that does not panic when stdout is a closed pipe (`| head`).
fn print_line(text: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stdout().lock(), "{text}");
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_refusal_says_what_the_server_said() {
        let forbidden = json!({"error": {"code": "forbidden",
            "message": "this key needs the \"campaign\" scope", "field": null}});
        assert_eq!(
            refusal(reqwest::StatusCode::FORBIDDEN, Some(&forbidden)),
            "server answered 403 Forbidden: this key needs the \"campaign\" scope"
        );
        let unauthorized = json!({"error": {"code": "unauthorized"}});
        assert_eq!(
            refusal(reqwest::StatusCode::UNAUTHORIZED, Some(&unauthorized)),
            "server answered 401 Unauthorized: unauthorized"
        );
        assert_eq!(
            refusal(reqwest::StatusCode::BAD_GATEWAY, None),
            "server answered 502 Bad Gateway"
        );
    }
}
