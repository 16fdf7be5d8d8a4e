//! What the two Tencent APIs (WeChat Official Account, `api.weixin.qq.com`,
//! and WeCom, `qyapi.weixin.qq.com`) share: an `errcode`/`errmsg` in every
//! answer, the same token codes, and the same token answer.

use serde_json::Value;

use crate::provider_http::Answer;
use crate::token_cache::{FetchedToken, TokenError};

/// Codes that mean "this access token is not (or no longer) valid".
pub(crate) const TOKEN_CODES: [i64; 3] = [40001, 40014, 42001];
/// "System busy": worth retrying.
pub(crate) const SYSTEM_BUSY: i64 = -1;
/// "Over the call quota": the token endpoint and WeChat sends throttle on it.
pub(crate) const QUOTA_CODES: [i64; 2] = [45009, 45011];

/// An answer's `errcode` (0 when absent) and `errmsg`.
pub(crate) fn errcode(v: &Value) -> (i64, &str) {
    (
        v.get("errcode").and_then(Value::as_i64).unwrap_or(0),
        v.get("errmsg").and_then(Value::as_str).unwrap_or(""),
    )
}

/// A token endpoint answer: `{access_token, expires_in}` or `{errcode, errmsg}`.
pub(crate) fn parse_token_answer(answer: &Answer, path: &str) -> Result<FetchedToken, TokenError> {
    let Some(v) = answer.json() else {
        return Err(TokenError::Failed(format!(
            "{path}: HTTP {} with a non-JSON answer",
            answer.status
        )));
    };
    let (code, msg) = errcode(&v);
    if QUOTA_CODES.contains(&code) {
        return Err(TokenError::Throttled(format!(
            "{path}: errcode {code}: {msg}"
        )));
    }
    if code != 0 {
        return Err(TokenError::Failed(format!("{path}: errcode {code}: {msg}")));
    }
    match (
        v.get("access_token").and_then(Value::as_str),
        v.get("expires_in").and_then(Value::as_i64),
    ) {
        (Some(t), Some(secs)) if !t.is_empty() => Ok(FetchedToken {
            token: t.to_string(),
            expires_in_secs: secs,
        }),
        _ => Err(TokenError::Failed(format!(
            "{path}: HTTP {}: answer has no access_token/expires_in",
            answer.status
        ))),
    }
}

/// A msgid as text, whether the provider sent a number or a string.
pub(crate) fn msgid_text(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}
