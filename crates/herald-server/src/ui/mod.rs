//! The operator console at `/ui`: HTML shells and a little vanilla
//! JavaScript that call the `/v1` API, embedded in the binary (no build
//! step). The shells hold no data; in protected mode they need a session
//! (see `crate::access::Session`) and carry its CSRF token.

mod assets;
mod login;
mod pages;

use axum::Router;
use axum::http::{HeaderMap, header};
use axum::response::Response;
use axum::routing::{get, post};

use crate::http::state::AppState;

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
        .layer(axum::middleware::map_response(errors_as_json))
}

/// An error under `/ui` in the API's error shape, as everywhere else: the
/// framework's plain-text rejections (a method the route does not serve, a
/// path it cannot read) and a missing asset. A page meant for a person
/// (HTML: an unknown page, the login form) stays as it is.
async fn errors_as_json(resp: Response) -> Response {
    let html = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/html"));
    if html {
        return resp;
    }
    crate::http::fallback::json_errors(resp).await
}

/// Whether the request reached the node over TLS (through a proxy that
/// says so): the session cookie then gets `Secure`.
fn behind_tls(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"))
}

/// Whether `c` reorders text (a bidirectional control) or takes no room (a
/// zero-width or other invisible character): shown escaped, so that a name
/// cannot pose as another. The same set as `visible` in `assets/app.js`.
fn hidden(c: char) -> bool {
    matches!(c,
        '\u{AD}' | '\u{61C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}'
        | '\u{E0000}'..='\u{E007F}')
}

/// `text` made safe to put into HTML text or a quoted attribute, with
/// [`hidden`] characters shown as `\u{XXXX}`.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if hidden(c) => out.push_str(&format!("\\u{{{:X}}}", u32::from(c))),
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

    #[test]
    fn escape_shows_what_hides_or_reorders_text() {
        assert_eq!(
            super::escape("evil\u{202E}gnp.exe\u{200B}!"),
            "evil\\u{202E}gnp.exe\\u{200B}!"
        );
        assert_eq!(super::escape("tag\u{E0041}"), "tag\\u{E0041}");
        // Letters of any script, and emoji, are left alone.
        assert_eq!(super::escape("名前 é 😀"), "名前 é 😀");
    }
}
