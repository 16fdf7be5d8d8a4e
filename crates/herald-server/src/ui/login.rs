//! `/ui/login` and `/ui/logout`: trading an API key for a session cookie.

use axum::Form;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::pages::shell_headers;
use super::{behind_tls, escape};
use crate::access::{KeyError, Mode, clear_cookie, set_cookie};
use crate::state::AppState;

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

/// Checks the key and sets the session cookie.
pub async fn submit(
    State(st): State<AppState>,
    headers: HeaderMap,
    Form(f): Form<LoginForm>,
) -> Response {
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
            tracing::debug!("console login refused");
            (
                StatusCode::UNAUTHORIZED,
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

/// Ends the session in this browser (the cookie is stateless: the key
/// itself stays valid until revoked).
pub async fn logout(headers: HeaderMap) -> Response {
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
