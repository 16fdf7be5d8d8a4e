//! Firebase Cloud Messaging HTTP v1 mock, with the Google OAuth2 token endpoint in front.
//!
//! Why it exists: the FCM channel must be tested against the real protocol, not against a
//! stub that says yes. So this mock makes a client do everything the real service makes
//! it do: sign a service-account JWT and trade it for a short-lived bearer token
//! (`POST /token`), send one message per request (`POST /v1/projects/{p}/messages:send`),
//! and cope with the real error classes in the real error body shape: 401 for a bad or
//! expired token, 400 INVALID_ARGUMENT, 404 UNREGISTERED, 403 SENDER_ID_MISMATCH,
//! 429 QUOTA_EXCEEDED with `Retry-After`, 500 INTERNAL and 503 UNAVAILABLE.
//!
//! Tokens are stateless: `ya29.mock-{seq}-{expires_ms}-{mac}`, the MAC keyed by a
//! per-process secret, so there is no token table to grow. Expiring "every token issued
//! so far" (fault `expire_tokens`) just raises the lowest valid sequence number.
//!
//! The project quota (600k per minute by default) counts every authenticated request to
//! the project, errors included, in one-minute windows that start at the first request
//! rather than on the clock minute, as the real one does.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::header::{AUTHORIZATION, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use parking_lot::Mutex;
use ring::signature::{self, KeyPair, RsaKeyPair};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::MockState;

/// The project the mock serves unless told otherwise.
pub const DEFAULT_FCM_PROJECT: &str = "herald-mock";
/// FCM's documented per-project send quota.
pub const DEFAULT_FCM_QUOTA_PER_MINUTE: u64 = 600_000;
/// The OAuth2 scope a grant must ask for.
pub const FCM_SCOPE: &str = "https://www.googleapis.com/auth/firebase.messaging";
/// Also grants FCM sends at Google, so it is accepted too.
const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// Lifetime of an issued access token.
pub const FCM_TOKEN_TTL_SECS: u64 = 3600;
/// How many accepted messages `GET /_mock/fcm/messages` can show.
pub const FCM_RING_CAPACITY: usize = 10_000;
/// Largest request body read; FCM's own limit is far below this.
const MAX_BODY_BYTES: usize = 1024 * 1024;
/// FCM's limit on the data + notification payload.
const MAX_PAYLOAD_BYTES: usize = 4096;
/// Allowed clock skew for a JWT's `iat` in the future.
const CLOCK_SKEW_SECS: i64 = 300;
const QUOTA_WINDOW: Duration = Duration::from_secs(60);

const FCM_ERROR_TYPE: &str = "type.googleapis.com/google.firebase.fcm.v1.FcmError";
const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
const BAD_REQUEST_TYPE: &str = "type.googleapis.com/google.rpc.BadRequest";
const MISSING_CREDENTIALS: &str = "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.";
const INVALID_CREDENTIALS: &str = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.";
const BAD_TIMEFRAME: &str = "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.";

/// base64url that accepts the segment with or without padding.
const B64URL: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// What the FCM mock should do wrong. Set with `POST /_mock/fcm/faults`.
///
/// Counters (`*_next`) are used up one per send request, in the order quota, unavailable,
/// internal. Unknown fields are rejected so a typo is not silently ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FcmFaults {
    /// The next N sends answer 429 QUOTA_EXCEEDED with `Retry-After: retry_after_secs`.
    pub quota_next: u32,
    /// The next N sends answer 503 UNAVAILABLE.
    pub unavailable_next: u32,
    /// The next N sends answer 500 INTERNAL.
    pub internal_next: u32,
    /// One-shot: every access token issued so far answers 401 from now on. Reads back
    /// as `false` once applied.
    pub expire_tokens: bool,
    /// Registration tokens that answer 404 UNREGISTERED.
    pub unregistered: Vec<String>,
    /// Registration tokens that answer 403 SENDER_ID_MISMATCH.
    pub sender_id_mismatch: Vec<String>,
    /// `Retry-After` seconds sent with injected 429 answers.
    pub retry_after_secs: u64,
    /// Delay added before answering each send.
    pub latency_ms: u64,
}

impl Default for FcmFaults {
    fn default() -> Self {
        FcmFaults {
            quota_next: 0,
            unavailable_next: 0,
            internal_next: 0,
            expire_tokens: false,
            unregistered: Vec::new(),
            sender_id_mismatch: Vec::new(),
            retry_after_secs: 1,
            latency_ms: 0,
        }
    }
}

/// `GET /_mock/fcm/stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FcmStats {
    /// Send requests received, valid or not.
    pub received: u64,
    /// Messages accepted (200, not `validate_only`).
    pub delivered: u64,
    /// `validate_only` requests answered 200.
    pub validated: u64,
    /// Access tokens issued by `POST /token`.
    pub token_fetches: u64,
    /// Distinct device tokens delivered to.
    pub devices: u64,
    /// Deliveries to a device token already delivered to.
    pub repeated_devices: u64,
    /// `POST /token` requests refused.
    pub token_rejections: u64,
    /// Error answers by FCM errorCode (`UNREGISTERED`, `QUOTA_EXCEEDED`, ...), or by
    /// status for errors without one (`UNAUTHENTICATED`, `PERMISSION_DENIED`).
    pub errors: BTreeMap<String, u64>,
    /// Send answers by HTTP status, e.g. `{"200": 10, "404": 1}`.
    pub by_status: BTreeMap<String, u64>,
}

/// One accepted message; `GET /_mock/fcm/messages`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FcmMessage {
    /// The `name` answered, `projects/{p}/messages/{id}`.
    pub name: String,
    pub token: Option<String>,
    pub topic: Option<String>,
    pub condition: Option<String>,
    pub notification: Option<Value>,
    pub data: BTreeMap<String, String>,
    /// The whole `message` object as sent.
    pub message: Value,
    /// Wall clock (unix ms) of acceptance.
    pub at_ms: u64,
}

/// The public half of a service-account key, and who it belongs to.
struct ServiceAccountKey {
    client_email: String,
    private_key_id: String,
    /// DER `RSAPublicKey`, as ring's verifier wants it.
    public_der: Vec<u8>,
}

#[derive(Deserialize)]
struct ServiceAccountFile {
    #[serde(rename = "type")]
    kind: String,
    client_email: String,
    #[serde(default)]
    private_key_id: String,
    private_key: String,
}

impl ServiceAccountKey {
    fn load(path: &Path) -> std::io::Result<ServiceAccountKey> {
        let invalid = |msg: String| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: {msg}", path.display()),
            )
        };
        let text = std::fs::read(path)?;
        let file: ServiceAccountFile =
            serde_json::from_slice(&text).map_err(|e| invalid(e.to_string()))?;
        if file.kind != "service_account" {
            return Err(invalid(format!(
                "type is {:?}, expected \"service_account\"",
                file.kind
            )));
        }
        let der = pem_body(&file.private_key, "PRIVATE KEY")
            .ok_or_else(|| invalid("private_key is not a PKCS#8 PEM block".into()))?;
        let pair = RsaKeyPair::from_pkcs8(&der)
            .map_err(|e| invalid(format!("private_key rejected: {e}")))?;
        Ok(ServiceAccountKey {
            client_email: file.client_email,
            private_key_id: file.private_key_id,
            public_der: pair.public_key().as_ref().to_vec(),
        })
    }
}

/// The base64 body of the first PEM block with this label.
fn pem_body(pem: &str, label: &str) -> Option<Vec<u8>> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = pem.find(&begin)? + begin.len();
    let stop = start + pem[start..].find(&end)?;
    let b64: String = pem[start..stop]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD.decode(b64).ok()
}

/// How the FCM mock starts out.
pub(crate) struct FcmSettings {
    pub(crate) project: String,
    pub(crate) quota_per_minute: u64,
}

struct QuotaWindow {
    start: Option<Instant>,
    used: u64,
}

#[derive(Default)]
struct Records {
    stats: FcmStats,
    ring: VecDeque<FcmMessage>,
}

pub(crate) struct FcmState {
    project: String,
    quota_per_minute: u64,
    key: Option<ServiceAccountKey>,
    faults: Mutex<FcmFaults>,
    /// Per-process secret for the token MAC.
    token_secret: u64,
    next_token_seq: AtomicU64,
    /// Tokens with a lower sequence number answer 401 (raised by `expire_tokens`).
    valid_from_seq: AtomicU64,
    next_message_id: AtomicU64,
    quota: Mutex<QuotaWindow>,
    records: Mutex<Records>,
    repeats: crate::repeats::Repeats,
}

impl FcmState {
    pub(crate) fn new(
        settings: FcmSettings,
        service_account: Option<&Path>,
    ) -> std::io::Result<FcmState> {
        let key = service_account.map(ServiceAccountKey::load).transpose()?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let secret = xxh3_64_with_seed(&now.to_le_bytes(), std::process::id().into());
        Ok(FcmState {
            project: settings.project,
            quota_per_minute: settings.quota_per_minute,
            key,
            faults: Mutex::new(FcmFaults::default()),
            token_secret: secret,
            next_token_seq: AtomicU64::new(1),
            valid_from_seq: AtomicU64::new(0),
            next_message_id: AtomicU64::new(1),
            quota: Mutex::new(QuotaWindow {
                start: None,
                used: 0,
            }),
            records: Mutex::new(Records::default()),
            repeats: Default::default(),
        })
    }

    pub(crate) fn faults(&self) -> FcmFaults {
        self.faults.lock().clone()
    }

    /// Replaces the faults; `expire_tokens: true` is applied at once and not kept.
    pub(crate) fn set_faults(&self, mut f: FcmFaults) {
        if f.expire_tokens {
            let next = self.next_token_seq.load(Ordering::Relaxed);
            self.valid_from_seq.fetch_max(next, Ordering::Relaxed);
            tracing::info!(
                valid_from_seq = next,
                "fcm mock: expired every token issued so far"
            );
            f.expire_tokens = false;
        }
        *self.faults.lock() = f;
    }

    pub(crate) fn stats(&self) -> FcmStats {
        let mut s = self.records.lock().stats.clone();
        s.devices = self.repeats.devices();
        s.repeated_devices = self.repeats.repeated();
        s
    }

    /// The newest `limit` accepted messages (only those to `token`, if given), oldest first.
    pub(crate) fn messages(&self, limit: usize, token: Option<&str>) -> Vec<FcmMessage> {
        let records = self.records.lock();
        let mut out: Vec<FcmMessage> = records
            .ring
            .iter()
            .rev()
            .filter(|m| token.is_none_or(|t| m.token.as_deref() == Some(t)))
            .take(limit)
            .cloned()
            .collect();
        out.reverse();
        out
    }

    /// Forgets records, statistics and the quota window. Issued tokens stay valid.
    pub(crate) fn reset(&self) {
        *self.records.lock() = Records::default();
        self.repeats.clear();
        *self.quota.lock() = QuotaWindow {
            start: None,
            used: 0,
        };
    }

    fn token_mac(&self, seq: u64, expires_ms: u64) -> u64 {
        let mut buf = [0u8; 16];
        buf[..8].copy_from_slice(&seq.to_le_bytes());
        buf[8..].copy_from_slice(&expires_ms.to_le_bytes());
        xxh3_64_with_seed(&buf, self.token_secret)
    }

    fn issue_token(&self, now_ms: u64) -> String {
        let seq = self.next_token_seq.fetch_add(1, Ordering::Relaxed);
        let expires_ms = now_ms + FCM_TOKEN_TTL_SECS * 1000;
        let mac = self.token_mac(seq, expires_ms);
        format!("ya29.mock-{seq}-{expires_ms}-{mac:016x}")
    }

    /// Checks a bearer token: `Ok` or the ErrorInfo reason it fails with.
    fn check_token(&self, token: &str, now_ms: u64) -> Result<(), &'static str> {
        let parse = || -> Option<(u64, u64, u64)> {
            let rest = token.strip_prefix("ya29.mock-")?;
            let mut it = rest.splitn(3, '-');
            let seq = it.next()?.parse().ok()?;
            let exp = it.next()?.parse().ok()?;
            let mac = u64::from_str_radix(it.next()?, 16).ok()?;
            Some((seq, exp, mac))
        };
        let Some((seq, expires_ms, mac)) = parse() else {
            return Err("ACCESS_TOKEN_TYPE_UNSUPPORTED");
        };
        if mac != self.token_mac(seq, expires_ms) {
            return Err("ACCESS_TOKEN_TYPE_UNSUPPORTED");
        }
        if expires_ms <= now_ms || seq < self.valid_from_seq.load(Ordering::Relaxed) {
            return Err("ACCESS_TOKEN_EXPIRED");
        }
        Ok(())
    }

    /// Validates a JWT-bearer assertion, as Google's token endpoint does.
    fn check_assertion(&self, jwt: &str, now_s: i64) -> Result<(), GrantError> {
        let mut parts = jwt.split('.');
        let (Some(h64), Some(p64), Some(s64), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(GrantError::grant(
                "Invalid JWT: expected header.payload.signature",
            ));
        };
        let decode_json = |seg: &str, what: &str| -> Result<Map<String, Value>, GrantError> {
            let bytes = B64URL
                .decode(seg)
                .map_err(|_| GrantError::grant(format!("Invalid JWT: {what} is not base64url")))?;
            serde_json::from_slice::<Map<String, Value>>(&bytes)
                .map_err(|_| GrantError::grant(format!("Invalid JWT: {what} is not a JSON object")))
        };
        let header = decode_json(h64, "header")?;
        let claims = decode_json(p64, "payload")?;
        let sig = B64URL
            .decode(s64)
            .map_err(|_| GrantError::grant("Invalid JWT Signature."))?;
        if sig.is_empty() {
            return Err(GrantError::grant("Invalid JWT Signature."));
        }
        if header.get("alg").and_then(Value::as_str) != Some("RS256") {
            return Err(GrantError::grant("Invalid JWT: alg must be RS256"));
        }
        let claim_str = |name: &str| -> Result<&str, GrantError> {
            claims
                .get(name)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| GrantError::grant(format!("Invalid JWT: missing claim {name}")))
        };
        let claim_int = |name: &str| -> Result<i64, GrantError> {
            claims
                .get(name)
                .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
                .ok_or_else(|| GrantError::grant(format!("Invalid JWT: missing claim {name}")))
        };
        let iss = claim_str("iss")?;
        if let Some(key) = &self.key {
            if let Some(kid) = header.get("kid").and_then(Value::as_str)
                && !key.private_key_id.is_empty()
                && kid != key.private_key_id
            {
                return Err(GrantError::grant("Invalid JWT Signature."));
            }
            let signed = &jwt[..h64.len() + 1 + p64.len()];
            let public = signature::UnparsedPublicKey::new(
                &signature::RSA_PKCS1_2048_8192_SHA256,
                &key.public_der,
            );
            if public.verify(signed.as_bytes(), &sig).is_err() {
                return Err(GrantError::grant("Invalid JWT Signature."));
            }
            if iss != key.client_email {
                return Err(GrantError::grant("Invalid grant: account not found"));
            }
        } else if !iss.contains('@') {
            return Err(GrantError::grant("Invalid grant: account not found"));
        }
        let iat = claim_int("iat")?;
        let exp = claim_int("exp")?;
        if exp <= iat || exp - iat > 3600 || exp <= now_s || iat > now_s + CLOCK_SKEW_SECS {
            return Err(GrantError::grant(BAD_TIMEFRAME));
        }
        let aud = claim_str("aud")?;
        if !aud.ends_with("/token") {
            return Err(GrantError::grant("Invalid JWT: Failed audience check."));
        }
        let scope = claims.get("scope").and_then(Value::as_str).unwrap_or("");
        if !scope
            .split_whitespace()
            .any(|s| s == FCM_SCOPE || s == CLOUD_PLATFORM_SCOPE)
        {
            return Err(GrantError {
                error: "invalid_scope",
                description: "Invalid OAuth scope or ID token audience provided.".into(),
            });
        }
        Ok(())
    }

    /// Counts one request against the project quota; `Err(secs)` when over, with the
    /// seconds left in the window.
    fn take_quota(&self, now: Instant) -> Result<(), u64> {
        let mut q = self.quota.lock();
        let start = match q.start {
            Some(s) if now.duration_since(s) < QUOTA_WINDOW => s,
            _ => {
                q.start = Some(now);
                q.used = 0;
                now
            }
        };
        q.used += 1;
        if q.used > self.quota_per_minute {
            let left = QUOTA_WINDOW.saturating_sub(now.duration_since(start));
            return Err(left.as_secs_f64().ceil().max(1.0) as u64);
        }
        Ok(())
    }

    fn count(&self, status: StatusCode, error: Option<&str>) {
        let mut r = self.records.lock();
        *r.stats
            .by_status
            .entry(status.as_u16().to_string())
            .or_default() += 1;
        if let Some(e) = error {
            *r.stats.errors.entry(e.to_owned()).or_default() += 1;
        }
    }
}

struct GrantError {
    error: &'static str,
    description: String,
}

impl GrantError {
    fn grant(description: impl Into<String>) -> GrantError {
        GrantError {
            error: "invalid_grant",
            description: description.into(),
        }
    }
}

pub(crate) fn routes() -> Router<MockState> {
    Router::new()
        .route("/token", post(token))
        .route("/v1/projects/{project}/messages:send", post(send))
        .route("/_mock/fcm/stats", get(get_stats))
        .route("/_mock/fcm/messages", get(get_messages))
        .route("/_mock/fcm/faults", get(get_faults).post(set_faults))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn oauth_error(e: GrantError) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({ "error": e.error, "error_description": e.description })),
    )
        .into_response()
}

#[derive(Deserialize)]
struct GrantForm {
    grant_type: Option<String>,
    assertion: Option<String>,
}

/// `POST /token`: Google's OAuth2 token endpoint, JWT-bearer grant only.
async fn token(State(state): State<MockState>, body: Bytes) -> Response {
    let fcm = &state.shared.fcm;
    let refuse = |e: GrantError| {
        fcm.records.lock().stats.token_rejections += 1;
        tracing::info!(error = e.error, description = %e.description, "fcm mock: token grant refused");
        oauth_error(e)
    };
    let form: GrantForm = match serde_urlencoded::from_bytes(&body) {
        Ok(f) => f,
        Err(e) => {
            return refuse(GrantError {
                error: "invalid_request",
                description: format!("Malformed form body: {e}"),
            });
        }
    };
    match form.grant_type.as_deref() {
        Some(JWT_BEARER_GRANT) => {}
        Some(other) => {
            return refuse(GrantError {
                error: "unsupported_grant_type",
                description: format!("Invalid grant_type: {other}"),
            });
        }
        None => {
            return refuse(GrantError {
                error: "invalid_request",
                description: "Missing required parameter: grant_type".into(),
            });
        }
    }
    let Some(assertion) = form.assertion.filter(|a| !a.is_empty()) else {
        return refuse(GrantError {
            error: "invalid_request",
            description: "Missing required parameter: assertion".into(),
        });
    };
    let now = now_ms();
    if let Err(e) = fcm.check_assertion(&assertion, (now / 1000) as i64) {
        return refuse(e);
    }
    let access_token = fcm.issue_token(now);
    fcm.records.lock().stats.token_fetches += 1;
    tracing::debug!("fcm mock: access token issued");
    Json(json!({
        "access_token": access_token,
        "expires_in": FCM_TOKEN_TTL_SECS,
        "token_type": "Bearer",
    }))
    .into_response()
}

/// An FCM v1 error answer in Google's shape.
struct FcmError {
    status: StatusCode,
    message: String,
    /// `details[].errorCode` of the FcmError detail, if the error has one.
    error_code: Option<&'static str>,
    /// Other detail objects (ErrorInfo, BadRequest).
    extra: Vec<Value>,
    retry_after: Option<u64>,
}

impl FcmError {
    fn new(
        status: StatusCode,
        error_code: Option<&'static str>,
        message: impl Into<String>,
    ) -> Self {
        FcmError {
            status,
            message: message.into(),
            error_code,
            extra: Vec::new(),
            retry_after: None,
        }
    }

    fn invalid(message: impl Into<String>) -> Self {
        FcmError::new(StatusCode::BAD_REQUEST, Some("INVALID_ARGUMENT"), message)
    }

    /// 400 naming the offending field, with a BadRequest detail as Google adds.
    fn invalid_field(field: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        let mut e = FcmError::invalid(message.clone());
        e.extra.push(json!({
            "@type": BAD_REQUEST_TYPE,
            "fieldViolations": [{ "field": field, "description": message }],
        }));
        e
    }

    fn unauthenticated(reason: &'static str) -> Self {
        let message = if reason == "CREDENTIALS_MISSING" {
            MISSING_CREDENTIALS
        } else {
            INVALID_CREDENTIALS
        };
        let mut e = FcmError::new(StatusCode::UNAUTHORIZED, None, message);
        e.extra.push(json!({
            "@type": ERROR_INFO_TYPE,
            "reason": reason,
            "domain": "googleapis.com",
            "metadata": {
                "service": "fcm.googleapis.com",
                "method": "google.firebase.fcm.v1.FcmService.SendMessage",
            },
        }));
        e
    }

    fn quota(retry_after: u64) -> Self {
        let mut e = FcmError::new(
            StatusCode::TOO_MANY_REQUESTS,
            Some("QUOTA_EXCEEDED"),
            "Quota exceeded for quota metric 'Messages sent' of service 'fcm.googleapis.com'.",
        );
        e.retry_after = Some(retry_after);
        e
    }

    /// The canonical gRPC status name for the HTTP status.
    fn status_name(&self) -> &'static str {
        match self.status.as_u16() {
            400 => "INVALID_ARGUMENT",
            401 => "UNAUTHENTICATED",
            403 => "PERMISSION_DENIED",
            404 => "NOT_FOUND",
            429 => "RESOURCE_EXHAUSTED",
            503 => "UNAVAILABLE",
            _ => "INTERNAL",
        }
    }

    fn stats_key(&self) -> &'static str {
        self.error_code.unwrap_or_else(|| self.status_name())
    }

    fn into_response(self) -> Response {
        let mut details = Vec::with_capacity(1 + self.extra.len());
        if let Some(code) = self.error_code {
            details.push(json!({ "@type": FCM_ERROR_TYPE, "errorCode": code }));
        }
        details.extend(self.extra.iter().cloned());
        let body = json!({
            "error": {
                "code": self.status.as_u16(),
                "message": self.message,
                "status": self.status_name(),
                "details": details,
            }
        });
        let mut resp = (self.status, Json(body)).into_response();
        if let Some(secs) = self.retry_after {
            resp.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(secs));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            // What Google sends with a 401, so a client's auth handling sees the real thing.
            resp.headers_mut().insert(
                WWW_AUTHENTICATE,
                HeaderValue::from_static(
                    "Bearer realm=\"https://accounts.google.com/\", error=\"invalid_token\"",
                ),
            );
        }
        resp
    }
}

/// A request that passed validation.
struct Accepted {
    token: Option<String>,
    topic: Option<String>,
    condition: Option<String>,
    notification: Option<Value>,
    data: BTreeMap<String, String>,
    message: Value,
    validate_only: bool,
}

const MESSAGE_FIELDS: &[&str] = &[
    "name",
    "data",
    "notification",
    "android",
    "webpush",
    "apns",
    "fcm_options",
    "fcmOptions",
    "token",
    "topic",
    "condition",
];

/// Checks the send body the way FCM does; errors name the field.
fn validate(body: &[u8]) -> Result<Accepted, FcmError> {
    let root: Value = serde_json::from_slice(body)
        .map_err(|e| FcmError::invalid(format!("Invalid JSON payload received. {e}")))?;
    let Value::Object(mut root) = root else {
        return Err(FcmError::invalid(
            "Invalid JSON payload received. Expected an object.",
        ));
    };
    let mut validate_only = false;
    for (k, v) in root.iter() {
        match k.as_str() {
            "message" => {}
            "validate_only" | "validateOnly" => {
                validate_only = v.as_bool().ok_or_else(|| {
                    FcmError::invalid_field(k, format!("Invalid value at '{k}' (TYPE_BOOL), {v}"))
                })?;
            }
            other => {
                return Err(FcmError::invalid(format!(
                    "Invalid JSON payload received. Unknown name \"{other}\": Cannot find field."
                )));
            }
        }
    }
    let message = root.remove("message").ok_or_else(|| {
        FcmError::invalid_field(
            "message",
            "Request contains an invalid argument: message is required.",
        )
    })?;
    let Value::Object(msg) = &message else {
        return Err(FcmError::invalid_field(
            "message",
            format!(
                "Invalid value at 'message' (type.googleapis.com/google.firebase.fcm.v1.Message), {message}"
            ),
        ));
    };
    if let Some(unknown) = msg.keys().find(|k| !MESSAGE_FIELDS.contains(&k.as_str())) {
        return Err(FcmError::invalid(format!(
            "Invalid JSON payload received. Unknown name \"{unknown}\" at 'message': Cannot find field."
        )));
    }

    let target_str = |name: &str| -> Result<Option<String>, FcmError> {
        match msg.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(FcmError::invalid_field(
                &format!("message.{name}"),
                format!("Invalid value at 'message.{name}' (TYPE_STRING), {v}"),
            )),
        }
    };
    let token = target_str("token")?;
    let topic = target_str("topic")?;
    let condition = target_str("condition")?;
    let targets = [&token, &topic, &condition]
        .iter()
        .filter(|t| t.is_some())
        .count();
    if targets != 1 {
        return Err(FcmError::invalid(
            "Request contains an invalid argument: exactly one of message.token, message.topic or message.condition must be set.",
        ));
    }
    if token.as_deref() == Some("") {
        return Err(FcmError::invalid_field(
            "message.token",
            "The registration token is not a valid FCM registration token",
        ));
    }
    if let Some(t) = &topic {
        let name = t.strip_prefix("/topics/").unwrap_or(t);
        let ok = !name.is_empty()
            && name.len() <= 900
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.~%".contains(&b));
        if !ok {
            return Err(FcmError::invalid_field(
                "message.topic",
                format!("Invalid topic name: {t:?}"),
            ));
        }
    }
    if condition.as_deref().is_some_and(|c| c.trim().is_empty()) {
        return Err(FcmError::invalid_field(
            "message.condition",
            "Invalid condition expression provided.",
        ));
    }

    for name in ["android", "apns", "webpush", "fcm_options", "fcmOptions"] {
        if let Some(v) = msg.get(name)
            && !v.is_object()
            && !v.is_null()
        {
            return Err(FcmError::invalid_field(
                &format!("message.{name}"),
                format!("Invalid value at 'message.{name}', expected an object: {v}"),
            ));
        }
    }

    let notification = match msg.get("notification") {
        None | Some(Value::Null) => None,
        Some(Value::Object(n)) => {
            for (k, v) in n {
                if !["title", "body", "image"].contains(&k.as_str()) {
                    return Err(FcmError::invalid(format!(
                        "Invalid JSON payload received. Unknown name \"{k}\" at 'message.notification': Cannot find field."
                    )));
                }
                if !v.is_string() {
                    return Err(FcmError::invalid_field(
                        &format!("message.notification.{k}"),
                        format!("Invalid value at 'message.notification.{k}' (TYPE_STRING), {v}"),
                    ));
                }
            }
            Some(Value::Object(n.clone()))
        }
        Some(v) => {
            return Err(FcmError::invalid_field(
                "message.notification",
                format!(
                    "Invalid value at 'message.notification' (type.googleapis.com/google.firebase.fcm.v1.Notification), {v}"
                ),
            ));
        }
    };

    let mut data = BTreeMap::new();
    match msg.get("data") {
        None | Some(Value::Null) => {}
        Some(Value::Object(d)) => {
            for (i, (k, v)) in d.iter().enumerate() {
                let Value::String(s) = v else {
                    return Err(FcmError::invalid_field(
                        &format!("message.data[{i}].value"),
                        format!(
                            "Invalid value at 'message.data[{i}].value' (TYPE_STRING), {v}: data[\"{k}\"] must be a string"
                        ),
                    ));
                };
                let lower = k.to_ascii_lowercase();
                if ["from", "message_type", "notification"].contains(&lower.as_str())
                    || lower.starts_with("google")
                    || lower.starts_with("gcm")
                {
                    return Err(FcmError::invalid_field(
                        &format!("message.data[{i}].key"),
                        format!("Invalid data payload key: {k} (reserved)"),
                    ));
                }
                data.insert(k.clone(), s.clone());
            }
        }
        Some(v) => {
            return Err(FcmError::invalid_field(
                "message.data",
                format!("Invalid value at 'message.data' (map<string, string>), {v}"),
            ));
        }
    }
    let payload_len = msg.get("data").map_or(0, |d| d.to_string().len())
        + notification.as_ref().map_or(0, |n| n.to_string().len());
    if payload_len > MAX_PAYLOAD_BYTES {
        return Err(FcmError::invalid(format!(
            "Message is too big: payload is {payload_len} bytes, the limit is {MAX_PAYLOAD_BYTES}"
        )));
    }

    Ok(Accepted {
        token,
        topic,
        condition,
        notification,
        data,
        message,
        validate_only,
    })
}

/// `POST /v1/projects/{project}/messages:send`.
async fn send(
    State(state): State<MockState>,
    UrlPath(project): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let fcm = &state.shared.fcm;
    fcm.records.lock().stats.received += 1;
    let latency_ms = fcm.faults.lock().latency_ms;
    let result = decide(fcm, &project, &headers, &body);
    if latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(latency_ms)).await;
    }
    match result {
        Ok(name) => (StatusCode::OK, Json(json!({ "name": name }))).into_response(),
        Err(e) => {
            fcm.count(e.status, Some(e.stats_key()));
            tracing::debug!(
                status = e.status.as_u16(),
                error = e.stats_key(),
                project = %project,
                "fcm mock: send refused"
            );
            e.into_response()
        }
    }
}

/// Everything about one send that does not wait; `Ok(name)` on success.
fn decide(
    fcm: &FcmState,
    project: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<String, FcmError> {
    let now = now_ms();
    let bearer = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        });
    let Some(bearer) = bearer else {
        return Err(FcmError::unauthenticated("CREDENTIALS_MISSING"));
    };
    fcm.check_token(bearer, now)
        .map_err(FcmError::unauthenticated)?;

    if project != fcm.project {
        let mut e = FcmError::new(
            StatusCode::FORBIDDEN,
            None,
            format!(
                "Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/{project}' (or it may not exist)."
            ),
        );
        e.extra.push(json!({
            "@type": ERROR_INFO_TYPE,
            "reason": "IAM_PERMISSION_DENIED",
            "domain": "cloudresourcemanager.googleapis.com",
            "metadata": { "permission": "cloudmessaging.messages.create" },
        }));
        return Err(e);
    }

    if body.len() > MAX_BODY_BYTES {
        return Err(FcmError::invalid("Request payload size exceeds the limit."));
    }
    fcm.take_quota(Instant::now()).map_err(FcmError::quota)?;

    {
        let mut f = fcm.faults.lock();
        if f.quota_next > 0 {
            f.quota_next -= 1;
            return Err(FcmError::quota(f.retry_after_secs));
        }
        if f.unavailable_next > 0 {
            f.unavailable_next -= 1;
            return Err(FcmError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                Some("UNAVAILABLE"),
                "The service is currently unavailable.",
            ));
        }
        if f.internal_next > 0 {
            f.internal_next -= 1;
            return Err(FcmError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                Some("INTERNAL"),
                "Internal error encountered.",
            ));
        }
    }

    let accepted = validate(body)?;
    if let Some(t) = &accepted.token {
        let f = fcm.faults.lock();
        if f.unregistered.iter().any(|u| u == t) {
            return Err(FcmError::new(
                StatusCode::NOT_FOUND,
                Some("UNREGISTERED"),
                "Requested entity was not found.",
            ));
        }
        if f.sender_id_mismatch.iter().any(|u| u == t) {
            return Err(FcmError::new(
                StatusCode::FORBIDDEN,
                Some("SENDER_ID_MISMATCH"),
                "SenderId mismatch",
            ));
        }
    }

    if accepted.validate_only {
        fcm.count(StatusCode::OK, None);
        fcm.records.lock().stats.validated += 1;
        return Ok(format!("projects/{project}/messages/fake_message_id"));
    }
    let id = fcm.next_message_id.fetch_add(1, Ordering::Relaxed);
    let name = format!("projects/{project}/messages/0:{now}{id:06}%mock");
    if let Some(t) = &accepted.token {
        fcm.repeats.record(t);
    }
    let mut r = fcm.records.lock();
    r.stats.delivered += 1;
    *r.stats.by_status.entry("200".to_owned()).or_default() += 1;
    if r.ring.len() >= FCM_RING_CAPACITY {
        r.ring.pop_front();
    }
    r.ring.push_back(FcmMessage {
        name: name.clone(),
        token: accepted.token,
        topic: accepted.topic,
        condition: accepted.condition,
        notification: accepted.notification,
        data: accepted.data,
        message: accepted.message,
        at_ms: now,
    });
    Ok(name)
}

async fn get_stats(State(state): State<MockState>) -> Response {
    Json(state.shared.fcm.stats()).into_response()
}

#[derive(Deserialize)]
struct MessagesQuery {
    limit: Option<usize>,
    token: Option<String>,
}

async fn get_messages(State(state): State<MockState>, Query(q): Query<MessagesQuery>) -> Response {
    let limit = q.limit.unwrap_or(FCM_RING_CAPACITY);
    Json(state.shared.fcm.messages(limit, q.token.as_deref())).into_response()
}

async fn get_faults(State(state): State<MockState>) -> Response {
    Json(state.shared.fcm.faults()).into_response()
}

/// Takes the body as plain bytes so callers need not set a JSON content type.
async fn set_faults(State(state): State<MockState>, body: Bytes) -> Response {
    let faults: FcmFaults = match serde_json::from_slice(&body) {
        Ok(f) => f,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({ "error": { "code": "bad_request", "message": format!("fcm faults: {e}") } })),
            )
                .into_response();
        }
    };
    state.shared.fcm.set_faults(faults);
    Json(state.shared.fcm.faults()).into_response()
}
