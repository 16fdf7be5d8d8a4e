//! The route of a reload, `POST /v1/admin:reload`, over the [`Reloader`]
//! the binary gave the server state (see `crate::reload`).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use crate::http::error::ApiError;
use crate::http::request::NoQuery;
use crate::http::state::AppState;
use crate::reload::{ReloadError, ReloadReport};

/// `POST /v1/admin:reload` → `200 {"applied": [..], "needs_restart": [..]}`,
/// or `422 invalid_config` (the old configuration keeps running), or `409`
/// when there is no file to re-read.
pub async fn reload(
    State(st): State<AppState>,
    _: NoQuery,
) -> Result<Json<ReloadReport>, ApiError> {
    let Some(reloader) = st.reload.as_ref() else {
        return Err(no_file());
    };
    match reloader.reload().await {
        Ok(report) => Ok(Json(report)),
        Err(ReloadError::NoFile) => Err(no_file()),
        Err(e @ ReloadError::Invalid(_)) => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_config",
            format!("the configuration was not reloaded: {e}"),
        )),
        Err(ReloadError::Failed(e)) => Err(ApiError::unavailable(format!(
            "the configuration reload failed part way: {e}"
        ))),
    }
}

fn no_file() -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "conflict",
        ReloadError::NoFile.to_string(),
    )
}
