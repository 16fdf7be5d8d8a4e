//! `POST /oauth2/v3/token`: the client-credentials grant of Huawei's OAuth
//! server (`oauth-login.cloud.huawei.com`), the only way to a send token.
//!
//! Errors are HTTP 400 with Huawei's numeric `error` and `sub_error`. The
//! numbers for a wrong client or secret (1101/20601) come from the task's
//! reference and are [unverified]; one third-party page shows 1101/12304
//! "invalid client_secret" for the authorization-code grant. The numbers for
//! a missing or unsupported `grant_type` (1102/20003) are made up [unverified].

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;
use serde_json::json;

use super::{HUAWEI_TOKEN_TTL_SECS, bump};
use crate::MockState;

const GRANT: &str = "client_credentials";
/// `error` for a client that failed to authenticate [unverified].
const BAD_CLIENT: u32 = 1101;
const BAD_SECRET_SUB: u32 = 20601;
/// `error`/`sub_error` for a bad request [unverified, made up].
const BAD_REQUEST: u32 = 1102;
const BAD_GRANT_SUB: u32 = 20003;

pub(super) fn routes() -> Router<MockState> {
    Router::new().route("/oauth2/v3/token", post(token))
}

#[derive(Deserialize)]
struct Form {
    grant_type: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
}

fn refuse(state: &MockState, error: u32, sub_error: u32, description: String) -> Response {
    bump(&state.shared.huawei.tally.tokens_refused, 1);
    tracing::info!(error, sub_error, %description, "huawei mock: token request refused");
    (
        StatusCode::BAD_REQUEST,
        Json(json!({
            "error": error,
            "sub_error": sub_error,
            "error_description": description,
        })),
    )
        .into_response()
}

/// Takes the form as bytes so a missing content type is not refused first.
async fn token(State(state): State<MockState>, body: Bytes) -> Response {
    let hw = &state.shared.huawei;
    let form: Form = match serde_urlencoded::from_bytes(&body) {
        Ok(f) => f,
        Err(e) => {
            return refuse(
                &state,
                BAD_REQUEST,
                BAD_GRANT_SUB,
                format!("The request body is not a form: {e}"),
            );
        }
    };
    match form.grant_type.as_deref() {
        Some(GRANT) => {}
        Some(other) => {
            return refuse(
                &state,
                BAD_REQUEST,
                BAD_GRANT_SUB,
                format!("The grant_type {other:?} is not supported; use client_credentials."),
            );
        }
        None => {
            return refuse(
                &state,
                BAD_REQUEST,
                BAD_GRANT_SUB,
                "The grant_type is missing; use client_credentials.".to_owned(),
            );
        }
    }
    let live = hw.live();
    let client_ok = form.client_id.as_deref() == Some(live.cfg.app_id.as_str());
    let secret_ok = form
        .client_secret
        .as_deref()
        .is_some_and(|s| crate::sms::same(s, &live.cfg.client_secret));
    if !client_ok || !secret_ok {
        return refuse(
            &state,
            BAD_CLIENT,
            BAD_SECRET_SUB,
            "The input secret is invalid.".to_owned(),
        );
    }
    let access_token = hw.issue_token(&live.cfg.app_id, hw.clock.now_ms());
    bump(&hw.tally.tokens_issued, 1);
    tracing::debug!("huawei mock: access token issued");
    Json(json!({
        "access_token": access_token,
        "expires_in": HUAWEI_TOKEN_TTL_SECS,
        "token_type": "Bearer",
    }))
    .into_response()
}
