//! `/ui/login` and `/ui/logout`: trading an API key for a session cookie.
//!
//! Both refuse a post that a page of another origin sent (login CSRF would
//! log the victim's browser into the attacker's key; see
//! [`crate::access::from_this_origin`]). A failed login is counted as the
//! guard counts refused keys (metric and audit tally, reason
//! `login_failed`) and logged as a warning without the key, at most once a
//! second with how many were refused since.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use axum::Form;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::pages::shell_headers;
use super::{behind_tls, escape};
use crate::access::{
    KeyError, Mode, PresentedKey, Unrecognised, addressed_to, clear_cookie, cross_origin,
    from_this_origin, set_cookie,
};
use crate::audit::RefusalKey;
use crate::http::state::AppState;

const LOGIN: &str = "/ui/login";
const LOGOUT: &str = "/ui/logout";

#[derive(Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    key: String,
}

/// The form; open mode needs none.
pub async fn form(State(st): State<AppState>) -> Response {
    if st.access.mode() == Mode::Open {
        return Redirect::to("/ui").into_response();
    }
    (StatusCode::OK, shell_headers(), login_html(None)).into_response()
}

/// `403 cross_origin` (counted) when a page of another origin sent this
/// post to `route`.
fn refuse_cross_origin(
    st: &AppState,
    uri: &Uri,
    headers: &HeaderMap,
    route: &'static str,
) -> Option<Response> {
    if from_this_origin(headers, &addressed_to(headers, uri)) {
        return None;
    }
    tracing::debug!(route, origin = ?headers.get(header::ORIGIN), "refused: cross-origin console post");
    let status = StatusCode::FORBIDDEN.as_u16();
    let key = RefusalKey::new(
        Unrecognised::CrossOrigin,
        &Method::POST,
        Some(route),
        status,
    );
    st.audit.refused(key, st.clock.now_ms());
    Some(cross_origin().into_response())
}

/// Checks the key and sets the session cookie.
pub async fn submit(
    State(st): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
    Form(f): Form<LoginForm>,
) -> Response {
    if let Some(refused) = refuse_cross_origin(&st, &uri, &headers, LOGIN) {
        return refused;
    }
    if st.access.mode() == Mode::Open {
        return Redirect::to("/ui").into_response();
    }
    match st.access.login(&f.key, st.clock.now_ms()).await {
        Ok((value, caller)) => {
            tracing::info!(key_id = ?caller.key_id, tenant = %caller.tenant_name, "console login");
            let mut resp = Redirect::to("/ui").into_response();
            if let Ok(v) = HeaderValue::from_str(&set_cookie(&value, behind_tls(&headers))) {
                resp.headers_mut().insert(header::SET_COOKIE, v);
            }
            resp
        }
        Err(KeyError::Invalid) => {
            let now = st.clock.now_ms();
            let status = StatusCode::UNAUTHORIZED;
            let key = RefusalKey::new(
                Unrecognised::LoginFailed,
                &Method::POST,
                Some(LOGIN),
                status.as_u16(),
            );
            st.audit.refused(key, now);
            warn_failed_login(PresentedKey::parse(f.key.trim()).map(|k| k.id), now);
            (
                status,
                shell_headers(),
                login_html(Some("That key is unknown, revoked or expired.")),
            )
                .into_response()
        }
        Err(KeyError::Unavailable(e)) => {
            tracing::warn!(error = %e, "console login: keys could not be read");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                shell_headers(),
                login_html(Some("The API keys could not be read; try again.")),
            )
                .into_response()
        }
    }
}

/// When the last failed-login warning was logged (unix ms), and how many
/// failed logins were not logged since.
static LAST_WARNED_MS: AtomicI64 = AtomicI64::new(i64::MIN);
static UNLOGGED: AtomicU64 = AtomicU64::new(0);

/// Logs a failed login at most once a second, so a flood of them cannot
/// fill the disk through the log. Never the key: its id, if it had the
/// shape of an API key.
fn warn_failed_login(key_id: Option<i64>, now_ms: i64) {
    let last = LAST_WARNED_MS.load(Ordering::Relaxed);
    let due = now_ms.saturating_sub(last) >= 1000
        && LAST_WARNED_MS
            .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
    if !due {
        UNLOGGED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let not_logged_before = UNLOGGED.swap(0, Ordering::Relaxed);
    tracing::warn!(
        key_id = ?key_id,
        not_logged_before,
        "console login refused: the key is unknown, revoked or expired"
    );
}

/// Ends the session in this browser (the cookie is stateless: the key
/// itself stays valid until revoked).
pub async fn logout(State(st): State<AppState>, uri: Uri, headers: HeaderMap) -> Response {
    if let Some(refused) = refuse_cross_origin(&st, &uri, &headers, LOGOUT) {
        return refused;
    }
    let mut resp = Redirect::to("/ui/login").into_response();
    if let Ok(v) = HeaderValue::from_str(&clear_cookie(behind_tls(&headers))) {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    resp
}

fn login_html(problem: Option<&str>) -> String {
    let problem = problem
        .map(|p| format!("<p class=\"error\" id=\"login-error\">{}</p>", escape(p)))
        .unwrap_or_default();
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Herald · log in</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/assets/app.css">
</head>
<body class="login">
<main>
<h1>Herald console</h1>
{problem}
<form method="post" action="/ui/login" id="login-form">
<label for="key">API key</label>
<input type="password" name="key" id="key" autocomplete="off" required autofocus>
<button type="submit">Log in</button>
</form>
<p class="hint">Use an API key (<code>herald keys create</code>) or the admin key. The console
shows the key's tenant and lets it do what the key's scopes allow. The session lasts 12 hours
and ends when the key is revoked.</p>
</main>
<script src="/ui/assets/app.js"></script>
</body>
</html>
"#
    )
}
