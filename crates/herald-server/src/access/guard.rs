//! The one layer in front of every route: in open mode it turns away what a
//! browser on another site could send; then it works out who the caller is
//! and sets the [`Caller`] extension, or answers `401`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderName, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use herald_core::Clock;
use herald_core::tenant::tenant_name_problem;

use super::caller::Caller;
use super::host::{addressed_to, from_this_origin, host_name, is_loopback_name};
use super::keys::KeyError;
use super::mode::Mode;
use super::refusal::{self, Refusal, Unrecognised};
use super::secret::{PresentedKey, key_hash, same_hash};
use super::session::{CSRF_HEADER, SESSION_COOKIE, cookie_value};
use super::{Access, TENANT_HEADER};
use crate::http::error::ApiError;

/// What the guard layer is given.
#[derive(Clone)]
pub struct Guard {
    access: Arc<Access>,
    clock: Arc<dyn Clock>,
    /// Paths served without a key.
    public: Arc<[&'static str]>,
    /// Callback paths of the channels that check their provider's
    /// signature: served without a key, the handler verifies them.
    signed_callbacks: Arc<[String]>,
}

impl Guard {
    pub fn new(access: Arc<Access>, clock: Arc<dyn Clock>, public: Vec<&'static str>) -> Self {
        Self {
            access,
            clock,
            public: public.into(),
            signed_callbacks: Arc::new([]),
        }
    }

    /// Serves the callbacks of these channels without a key: their
    /// signature is their authentication.
    pub fn with_signed_callbacks(mut self, channels: impl IntoIterator<Item = String>) -> Self {
        self.signed_callbacks = channels
            .into_iter()
            .map(|name| format!("/v1/channels/{name}/callback"))
            .collect();
        self
    }

    /// The caller of a request to a route that needs one; `None` for a
    /// public path.
    async fn admit(&self, parts: &Parts) -> Result<Option<Caller>, Refusal> {
        if self.access.mode == Mode::Open {
            self.check_browser_reach(parts)?;
        }
        let path = parts.uri.path();
        if self.public.contains(&path) || self.signed_callbacks.iter().any(|p| p == path) {
            return Ok(None);
        }
        let cookie = (self.access.mode == Mode::Protected
            && !parts.headers.contains_key(header::AUTHORIZATION))
        .then(|| session_cookie(parts))
        .flatten();
        let caller = match cookie {
            Some(value) => self.by_session(parts, &value).await?,
            None => self.authenticate(parts).await?,
        };
        match self.act_as(caller.clone(), parts).await {
            Ok(acting) => Ok(Some(acting)),
            Err(e) => Err(Refusal::Known(e, Box::new(caller))),
        }
    }

    /// The caller of the console's session cookie (an `Authorization`
    /// header wins over it). A state change must carry the session's CSRF
    /// token, which a page of another site cannot read.
    async fn by_session(&self, parts: &Parts, value: &str) -> Result<Caller, Refusal> {
        let session = match self.access.session(value, self.clock.now_ms()).await {
            Ok(s) => s,
            Err(KeyError::Invalid) => {
                return Err(Refusal::Unauthorized {
                    message: "the console session is invalid or expired; log in again",
                    reason: Unrecognised::InvalidSession,
                });
            }
            Err(KeyError::Unavailable(e)) => {
                tracing::warn!(error = %e, "API keys could not be read for a session");
                return Err(
                    ApiError::unavailable("the API keys could not be read; try again").into(),
                );
            }
        };
        if !matches!(parts.method, Method::GET | Method::HEAD) {
            let presented = parts
                .headers
                .get(HeaderName::from_static(CSRF_HEADER))
                .and_then(|v| v.to_str().ok());
            if !session.csrf_matches(presented) {
                tracing::debug!(key_id = ?session.caller.key_id, "refused: missing or wrong CSRF token");
                let refused = ApiError::new(
                    axum::http::StatusCode::FORBIDDEN,
                    "csrf",
                    "a state change under the console's session must carry its X-CSRF-Token",
                );
                return Err(Refusal::Known(refused, Box::new(session.caller)));
            }
        }
        Ok(session.caller)
    }

    /// Open mode: the `Host` must be a loopback name (or an allowed one),
    /// which DNS rebinding cannot fake, and a state change must not come
    /// from a page of another origin.
    fn check_browser_reach(&self, parts: &Parts) -> Result<(), Refusal> {
        let host = addressed_to(&parts.headers, &parts.uri);
        let allowed = host_name(&host).is_some_and(|name| {
            is_loopback_name(&name) || self.access.allowed_hosts.contains(&name)
        });
        if !allowed {
            tracing::debug!(host, "refused: not a loopback host in open mode");
            return Err(Refusal::Unrecognised(
                refusal::misdirected(&host),
                Unrecognised::MisdirectedHost,
            ));
        }
        if !matches!(parts.method, Method::GET | Method::HEAD)
            && !from_this_origin(&parts.headers, &host)
        {
            let origin = parts.headers.get(header::ORIGIN);
            tracing::debug!(?origin, host, "refused: cross-origin state change");
            return Err(Refusal::Unrecognised(
                refusal::cross_origin(),
                Unrecognised::CrossOrigin,
            ));
        }
        Ok(())
    }

    async fn authenticate(&self, parts: &Parts) -> Result<Caller, Refusal> {
        const INVALID: Refusal = Refusal::Unauthorized {
            message: "the API key is unknown, revoked or expired",
            reason: Unrecognised::InvalidKey,
        };
        // Open mode has no keys to check: a key sent anyway (a client set up
        // for a protected node) is not looked at, and the request is served
        // as every other one is, as tenant default with every scope.
        if self.access.mode == Mode::Open {
            if parts.headers.contains_key(header::AUTHORIZATION) {
                key_ignored_once();
            }
            return Ok(Caller::open());
        }
        let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
            return Err(Refusal::Unauthorized {
                message: "this route needs an API key: send Authorization: Bearer <key>",
                reason: Unrecognised::NoKey,
            });
        };
        let Some(token) = value.to_str().ok().and_then(bearer) else {
            return Err(Refusal::Unauthorized {
                message: "the Authorization header must read \"Bearer <key>\"",
                reason: Unrecognised::MalformedAuthorization,
            });
        };
        if let Some(admin) = &self.access.admin_hash
            && same_hash(&key_hash(token), admin)
        {
            return Ok(Caller::admin_key());
        }
        let Some(key) = PresentedKey::parse(token) else {
            tracing::debug!("refused: a bearer token that is no key");
            return Err(INVALID);
        };
        match self.access.keys.caller(key, self.clock.now_ms()).await {
            Ok(caller) => Ok(caller),
            Err(KeyError::Invalid) => {
                tracing::debug!(key_id = key.id, "refused: invalid API key");
                Err(INVALID)
            }
            Err(KeyError::Unavailable(e)) => {
                tracing::warn!(error = %e, key_id = key.id, "API keys could not be read");
                Err(ApiError::unavailable("the API keys could not be read; try again").into())
            }
        }
    }

    /// `X-Herald-Tenant: NAME`: the admin acts for that tenant. Naming one's
    /// own tenant is harmless; naming another needs the admin.
    async fn act_as(&self, caller: Caller, parts: &Parts) -> Result<Caller, ApiError> {
        let Some(raw) = parts.headers.get(HeaderName::from_static(TENANT_HEADER)) else {
            return Ok(caller);
        };
        let field = |code, message: String| ApiError::field(TENANT_HEADER, code, message);
        let name = String::from_utf8_lossy(raw.as_bytes()).trim().to_string();
        if let Some(problem) = tenant_name_problem(&name) {
            return Err(field("invalid_field", problem));
        }
        if name == caller.tenant_name {
            return Ok(caller);
        }
        if !caller.admin {
            return Err(refusal::forbidden(format!(
                "only the admin may act for another tenant with {TENANT_HEADER}"
            )));
        }
        match self.access.keys.tenant(&name).await {
            Ok(Some(tenant)) => Ok(Caller {
                tenant,
                tenant_name: name,
                ..caller
            }),
            Ok(None) | Err(KeyError::Invalid) => {
                Err(ApiError::unknown_tenant(TENANT_HEADER, &name))
            }
            Err(KeyError::Unavailable(e)) => {
                tracing::warn!(error = %e, "tenants could not be read");
                Err(ApiError::unavailable(
                    "the tenants could not be read; try again",
                ))
            }
        }
    }
}

/// The value of the console's session cookie, if the request has one.
fn session_cookie(parts: &Parts) -> Option<String> {
    parts
        .headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|h| cookie_value(h, SESSION_COOKIE).map(str::to_string))
        .filter(|v| !v.is_empty())
}

/// The token of `Bearer <token>` (the scheme in any case).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' '))
        .then_some(token)
}

/// The layer: admits the request (setting its [`Caller`]) or answers.
pub async fn guard(State(g): State<Guard>, req: Request, next: Next) -> Response {
    guard_with(&g, req, |req| next.run(req)).await
}

/// [`guard`] with the rest of the stack as `next` (the API's edge calls it
/// so, without a layer of its own).
pub async fn guard_with<N, F>(g: &Guard, req: Request, next: N) -> Response
where
    N: FnOnce(Request) -> F,
    F: Future<Output = Response>,
{
    let (mut parts, body) = req.into_parts();
    match g.admit(&parts).await {
        Ok(caller) => {
            // The audit layer, outside this one, reads who asked from the
            // answer of a request that may change state.
            let audited = caller
                .as_ref()
                .filter(|_| !matches!(parts.method, Method::GET | Method::HEAD))
                .cloned();
            if let Some(c) = caller {
                parts.extensions.insert(c);
            }
            let mut resp = next(Request::from_parts(parts, body)).await;
            if let Some(c) = audited {
                resp.extensions_mut().insert(c);
            }
            resp
        }
        Err(refused) => refused.into_response(),
    }
}

/// Says once per process that open mode served a request carrying a key
/// without checking it, so a client that expected its key (and its tenant)
/// to count learns why it did not.
fn key_ignored_once() {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        tracing::warn!(
            "a request carried an Authorization header; open mode checks no keys, so it was \
             served as tenant default with every scope (set the admin key variable to check keys)"
        );
    });
}

#[cfg(test)]
mod tests {
    use super::bearer;

    #[test]
    fn bearer_tokens() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer   abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer"), None);
        assert_eq!(bearer("Bearer "), None);
        assert_eq!(bearer("Bearer a b"), None);
    }
}
