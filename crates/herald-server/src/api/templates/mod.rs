//! `/v1/templates`: named, versioned message templates (see
//! `herald_core::template`). A version is written once; `PUT` adds the next.
//! Every node renders from all stored versions (`herald_engine::templates`),
//! so a write here is read back into this node's library before it answers.

pub(crate) mod docs;

/// Largest template body: every variant of every part.
pub const MAX_TEMPLATE_BYTES: usize = 256 * 1024;

use std::collections::BTreeMap;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use herald_channels::ChannelKind;
use herald_core::ChannelType;
use herald_core::subscriber::Profile;
use herald_core::template::{PartKey, TemplateBody, TemplateRef, check_name};
use herald_core::time::format_rfc3339_ms;
use herald_store::{NewTemplateVersion, TemplateRecord, TemplateWrite};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::access::Caller;
use crate::http::error::ApiError;
use crate::http::fields::check_id;
use crate::http::json_body;
use crate::http::request::{NoQuery, action as split_action, query, read_body};
use crate::http::state::AppState;

/// Largest preview body.
pub const MAX_PREVIEW_BYTES: usize = 64 * 1024;

/// `POST /v1/templates`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateTemplate {
    /// 1 to 64 letters, digits, `.`, `_`, `-`.
    name: String,
    #[serde(default)]
    description: Option<String>,
    /// Variants by locale tag (`default` is required), each mapping a part
    /// (`app`, `email`, `sms`, `wechat`, `wecom`, `webhook`) to the provider's
    /// message shape whose strings are Jinja templates.
    #[schema(value_type = Object)]
    locales: BTreeMap<String, BTreeMap<String, Value>>,
}

/// A template version as answered.
#[derive(Serialize, ToSchema)]
pub(crate) struct TemplateJson {
    name: String,
    version: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[schema(value_type = Object)]
    locales: BTreeMap<String, BTreeMap<String, Value>>,
    /// The variables a sender's data must give.
    variables: Vec<String>,
    /// Every stored version, oldest first.
    versions: Vec<u32>,
    created_at: String,
    /// The API key that wrote this version.
    #[serde(skip_serializing_if = "Option::is_none")]
    created_by: Option<String>,
}

/// `GET /v1/templates`.
#[derive(Serialize, ToSchema)]
pub(crate) struct TemplateList {
    templates: Vec<TemplateJson>,
}

/// `POST /v1/templates/{name}:preview`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TemplatePreview {
    /// A version to render instead of the latest.
    #[serde(default)]
    version: Option<u32>,
    /// The variables to render with (a reminder template reads `subject`,
    /// `subscriber`, `lead_minutes`, ...).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    data: Option<Map<String, Value>>,
    /// Render for this subscriber: their locale and time zone.
    #[serde(default)]
    user_id: Option<String>,
    /// Render for this locale (over the subscriber's).
    #[serde(default)]
    locale: Option<String>,
    /// Show times in this IANA zone (over the subscriber's).
    #[serde(default)]
    timezone: Option<String>,
    /// Render only this part (`app`, `email`, `sms`, `wechat`, `wecom`,
    /// `webhook`); unset, every part the template has.
    #[serde(default)]
    part: Option<String>,
}

/// The answer of `:preview`: each part rendered, or why it could not be.
#[derive(Serialize, ToSchema)]
pub(crate) struct TemplatePreviewJson {
    name: String,
    version: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    locale: Option<String>,
    timezone: String,
    /// Rendered messages by part, with the variant each came from.
    #[schema(value_type = Object)]
    parts: BTreeMap<String, Value>,
    /// Parts that failed, with the error a send would end with
    /// (`template_error`).
    #[schema(value_type = Object)]
    errors: BTreeMap<String, String>,
}

/// `GET /v1/templates/{name}?version=`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct VersionQuery {
    #[serde(default)]
    version: Option<u32>,
}

/// The provider kind whose message shape a part must have (an `sms` part
/// may go to `aliyun_sms` or `tencent_sms`, whose shapes differ: any object
/// here, checked against the channel's kind when it is sent).
fn kind_of_part(part: PartKey) -> Option<ChannelKind> {
    match part {
        PartKey::Type(ChannelType::App) => Some(ChannelKind::Fcm),
        PartKey::Type(ChannelType::Email) => Some(ChannelKind::Smtp),
        PartKey::Type(ChannelType::Wechat) => Some(ChannelKind::Wechat),
        PartKey::Type(ChannelType::Wecom) => Some(ChannelKind::Wecom),
        PartKey::Type(ChannelType::Sms) => None,
        // The same shape as a template message; the keyword rules of its
        // values are checked on the rendered message, when it is sent.
        PartKey::Type(ChannelType::WechatMini) => Some(ChannelKind::Wechat),
        // Herald's own robot shape, checked by `shape::robot_part`.
        PartKey::Robot => None,
        PartKey::Webhook => Some(ChannelKind::Webhook),
    }
}

/// Checks a body: names, variants, every string compiles, and each part has
/// the fields its provider requires (a template string counts as a value).
fn check_body(body: &TemplateBody) -> Result<Vec<String>, ApiError> {
    let checked = body
        .check()
        .map_err(|e| ApiError::field(&e.field, "invalid_field", e.message))?;
    for (tag, parts) in &body.locales {
        for (key, part) in parts {
            let checked = match PartKey::parse(key) {
                // The same shape for the three robot kinds.
                Some(PartKey::Robot) => herald_channels::shape::robot_part(part),
                Some(p) => match kind_of_part(p) {
                    Some(kind) => herald_channels::shape::check(kind, part),
                    None => continue,
                },
                None => continue,
            };
            checked.map_err(|e| {
                let at = format!("locales.{tag}.{key}");
                let at = if e.field.is_empty() {
                    at
                } else {
                    format!("{at}.{}", e.field)
                };
                ApiError::field(&at, "invalid_field", e.message)
            })?;
        }
    }
    Ok(checked.variables.into_iter().collect())
}

fn who(caller: &Caller) -> Option<String> {
    match (caller.key_id, &caller.key_name) {
        (Some(id), Some(name)) => Some(format!("key {id} ({name})")),
        (None, Some(name)) => Some(name.clone()),
        _ => None,
    }
}

fn answer(r: &TemplateRecord, versions: Vec<u32>) -> Result<TemplateJson, ApiError> {
    let body: TemplateBody = serde_json::from_str(&r.body)
        .map_err(|e| ApiError::internal(format!("stored template {:?}: {e}", r.name)))?;
    let variables = body
        .check()
        .map(|c| c.variables.into_iter().collect())
        .unwrap_or_default();
    Ok(TemplateJson {
        name: r.name.clone(),
        version: r.version,
        description: body.description,
        locales: body.locales,
        variables,
        versions,
        created_at: format_rfc3339_ms(r.created_at),
        created_by: r.created_by.clone(),
    })
}

/// Writes a version and reads it into this node's library before answering.
async fn write(
    st: &AppState,
    caller: &Caller,
    name: String,
    body: TemplateBody,
    how: TemplateWrite,
) -> Result<TemplateRecord, ApiError> {
    check_body(&body)?;
    let text = serde_json::to_string(&body)
        .map_err(|e| ApiError::internal(format!("template body: {e}")))?;
    let new = NewTemplateVersion {
        tenant: caller.tenant,
        name,
        body: text,
        created_at: st.clock.now_ms(),
        created_by: who(caller),
    };
    let store = st.engine.store();
    let written = match store.put_template(&new, how).await {
        Err(herald_store::StoreError::Conflict { .. }) => {
            let mut e = ApiError::new(
                StatusCode::CONFLICT,
                "template_exists",
                format!(
                    "a template named {:?} exists: add a version with PUT /v1/templates/{}",
                    new.name, new.name
                ),
            );
            e.body.field = Some("name".into());
            return Err(e);
        }
        Err(herald_store::StoreError::NotFound { .. }) => {
            return Err(ApiError::not_found("template"));
        }
        other => other?,
    };
    if let Err(e) = st.engine.templates().refresh(store.as_ref()).await {
        // Stored: the background loop reads it in within a second.
        tracing::warn!(error = %e, "reading templates after a write failed");
    }
    Ok(written)
}

/// `POST /v1/templates` → `201` with version 1.
pub async fn create(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    body: Body,
) -> Result<Response, ApiError> {
    let bytes = read_body(body, MAX_TEMPLATE_BYTES).await?;
    let req: CreateTemplate = json_body::object(&bytes)?;
    check_name(&req.name).map_err(|e| ApiError::field("name", "invalid_field", e))?;
    let body = TemplateBody {
        description: req.description,
        locales: req.locales,
    };
    let r = write(&st, &caller, req.name, body, TemplateWrite::Create).await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(answer(&r, vec![r.version])?),
    )
        .into_response())
}

/// `PUT /v1/templates/{name}` → the new version.
pub async fn put(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    if check_name(&name).is_err() {
        return Err(ApiError::not_found("template"));
    }
    let bytes = read_body(body, MAX_TEMPLATE_BYTES).await?;
    let body: TemplateBody = json_body::object(&bytes)?;
    let r = write(&st, &caller, name, body, TemplateWrite::NewVersion).await?;
    let versions = (1..=r.version).collect();
    Ok(axum::Json(answer(&r, versions)?).into_response())
}

/// The caller's stored versions, by name, oldest first.
async fn versions(
    st: &AppState,
    caller: &Caller,
) -> Result<BTreeMap<String, Vec<TemplateRecord>>, ApiError> {
    let mut by_name: BTreeMap<String, Vec<TemplateRecord>> = BTreeMap::new();
    for r in st.engine.store().all_templates().await? {
        if r.tenant == caller.tenant {
            by_name.entry(r.name.clone()).or_default().push(r);
        }
    }
    Ok(by_name)
}

/// `GET /v1/templates`: every template at its latest version.
pub async fn list(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
) -> Result<Response, ApiError> {
    let mut templates = Vec::new();
    for (_, rows) in versions(&st, &caller).await? {
        let numbers = rows.iter().map(|r| r.version).collect();
        if let Some(last) = rows.last() {
            templates.push(answer(last, numbers)?);
        }
    }
    Ok(axum::Json(TemplateList { templates }).into_response())
}

/// `GET /v1/templates/{name}`.
pub async fn get(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    q: Result<Query<VersionQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let mut all = versions(&st, &caller).await?;
    let rows = all
        .remove(&name)
        .ok_or_else(|| ApiError::not_found("template"))?;
    let numbers: Vec<u32> = rows.iter().map(|r| r.version).collect();
    let row = match q.version {
        Some(v) => rows.iter().find(|r| r.version == v),
        None => rows.last(),
    }
    .ok_or_else(|| ApiError::not_found("template version"))?;
    Ok(axum::Json(answer(row, numbers)?).into_response())
}

/// `POST /v1/templates/{name}:preview`: renders each part as a send would.
pub async fn action(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(segment): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let (name, _) = split_action(&segment, "templates", "template", &["preview"])?;
    let bytes = read_body(body, MAX_PREVIEW_BYTES).await?;
    let req: TemplatePreview = if bytes.iter().all(u8::is_ascii_whitespace) {
        json_body::object(b"{}")?
    } else {
        json_body::object(&bytes)?
    };
    let lib = st.engine.templates().library();
    let r = TemplateRef {
        name: name.to_string(),
        version: req.version,
    };
    let info = lib.info(caller.tenant, &r).map_err(|e| match req.version {
        Some(_) => ApiError::field("version", "unknown_template", e.to_string()),
        None => ApiError::not_found("template"),
    })?;
    let profile = match &req.user_id {
        Some(u) => {
            check_id("user_id", u)?;
            let found = st
                .engine
                .store()
                .get_subscribers(caller.tenant, std::slice::from_ref(u))
                .await?
                .pop()
                .ok_or_else(|| {
                    ApiError::field("user_id", "not_found", format!("no subscriber {u:?}"))
                })?;
            serde_json::from_str::<Profile>(&found.profile).ok()
        }
        None => None,
    };
    let locale = req
        .locale
        .clone()
        .or_else(|| profile.as_ref().and_then(|p| p.locale.clone()));
    let timezone = req
        .timezone
        .clone()
        .or_else(|| profile.as_ref().and_then(|p| p.timezone.clone()))
        .unwrap_or_else(|| "UTC".into());
    if jiff::tz::TimeZone::get(&timezone).is_err() {
        return Err(ApiError::field(
            "timezone",
            "invalid_field",
            format!("{timezone:?} is not an IANA time zone"),
        ));
    }
    let parts: Vec<PartKey> = match &req.part {
        Some(p) => vec![PartKey::parse(p).ok_or_else(|| {
            ApiError::field(
                "part",
                "invalid_field",
                format!(
                    "{p:?} is not a part; use one of {}",
                    PartKey::ALL.map(PartKey::as_str).join(", ")
                ),
            )
        })?],
        None => PartKey::ALL.to_vec(),
    };
    let mut ctx = req.data.unwrap_or_default();
    ctx.entry("timezone")
        .or_insert(Value::from(timezone.clone()));
    ctx.entry("locale").or_insert(Value::from(locale.clone()));
    let ctx = Value::Object(ctx);
    let mut rendered = BTreeMap::new();
    let mut errors = BTreeMap::new();
    for part in parts {
        match lib.render(caller.tenant, &r, part, locale.as_deref(), &ctx) {
            Ok(out) => {
                rendered.insert(
                    part.as_str().to_string(),
                    serde_json::json!({"locale": out.locale, "message": out.message}),
                );
            }
            Err(herald_core::template::RenderError::NoPart { .. }) if req.part.is_none() => {}
            Err(e) => {
                errors.insert(part.as_str().to_string(), e.to_string());
            }
        }
    }
    Ok(axum::Json(TemplatePreviewJson {
        name: name.to_string(),
        version: info.version,
        locale,
        timezone,
        parts: rendered,
        errors,
    })
    .into_response())
}
