//! The operator console at `/ui`: HTML shells and a little vanilla
//! JavaScript that call the `/v1` API, embedded in the binary (no build
//! step). The shells hold no data; in protected mode they need a session
//! (see `crate::access::Session`) and carry its CSRF token.

mod assets;
mod login;
mod pages;

use axum::Router;
use axum::http::HeaderMap;
use axum::routing::{get, post};

use crate::state::AppState;

/// The console's routes. They are served beside the API, not behind its
/// guard: a shell is public HTML, and checks the session itself.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/ui", get(pages::overview))
        .route("/ui/", get(pages::overview))
        .route("/ui/login", get(login::form).post(login::submit))
        .route("/ui/logout", post(login::logout))
        .route("/ui/assets/{file}", get(assets::serve))
        .route("/ui/{page}", get(pages::page))
}

/// Whether the request reached the node over TLS (through a proxy that
/// says so): the session cookie then gets `Secure`.
fn behind_tls(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"))
}

/// `text` made safe to put into HTML text or a quoted attribute.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(
            super::escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }
}
