//! Reading the parts of a request every endpoint has: a bounded body, an id in the path, a query string and its integer parameters. Each
//! failure is a `4xx` naming what was wrong.

use std::time::Duration;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;

use crate::body_meter::BodyFailure;
use crate::error::ApiError;

/// Reads a body of at most `limit` bytes; over it is a 413.
pub async fn read_body(body: Body, limit: usize) -> Result<bytes::Bytes, ApiError> {
    use http_body_util::BodyExt;
    match http_body_util::Limited::new(body, limit).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(ApiError::too_large(limit))
        }
        Err(e) => Err(body_error(&*e)),
    }
}

/// Gives every request body a deadline between its pieces
/// (`api.body_read_timeout_ms`): a client that stops sending mid-body
/// cannot hold its connection, or the request, forever.
pub async fn body_timeout(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    next.run(req.map(|b| Body::new(tower_http::timeout::TimeoutBody::new(limit, b))))
        .await
}

/// A body that could not be read: stopped by the body layer (over its
/// limit `413`, over the budget `503`, past its total deadline `408`), too
/// slow between pieces (`408`) or broken off (`400`).
pub fn body_error(e: &(dyn std::error::Error + 'static)) -> ApiError {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(f) = c.downcast_ref::<BodyFailure>() {
            return f.error();
        }
        if c.is::<tower_http::timeout::TimeoutError>() {
            return ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
                "the body stopped arriving; send it without pauses",
            );
        }
        cause = c.source();
    }
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "bad_body",
        format!("could not read the body: {e}"),
    )
}

/// A positive integer id from a path segment; anything else is a 400 on `id`.
/// `what` names the thing in the message ("timer", "job", ...).
pub fn parse_id(raw: &str, what: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
        ApiError::field(
            "id",
            "invalid_field",
            format!("{what} id {raw:?} is not a positive integer"),
        )
    })
}

/// Splits the `{id}:{verb}` of `POST /v1/{collection}/{id}:{verb}` and
/// checks the verb is one of `verbs`; otherwise a 404 `unknown_action` that
/// lists them. `what` names one item of the collection ("job").
pub fn action<'a>(
    segment: &'a str,
    collection: &str,
    what: &str,
    verbs: &[&'static str],
) -> Result<(&'a str, &'static str), ApiError> {
    let unknown = |message: String| ApiError::new(StatusCode::NOT_FOUND, "unknown_action", message);
    let Some((id, verb)) = segment.split_once(':') else {
        let forms: Vec<String> = verbs.iter().map(|v| format!("{segment}:{v}")).collect();
        return Err(unknown(format!(
            "POST /v1/{collection}/{segment} needs an action: {}",
            forms.join(" or ")
        )));
    };
    match verbs.iter().find(|v| **v == verb) {
        Some(v) => Ok((id, v)),
        None => {
            let forms: Vec<String> = verbs.iter().map(|v| format!(":{v}")).collect();
            Err(unknown(format!(
                "no {what} action {verb:?}; use {}",
                forms.join(" or ")
            )))
        }
    }
}

/// A query string that does not parse is a 400 naming the query.
pub fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    match q {
        Ok(Query(t)) => Ok(t),
        Err(e) => Err(ApiError::field(
            "query",
            "invalid_query",
            format!("bad query string: {}", e.body_text()),
        )),
    }
}

/// An optional integer query parameter within `range`.
pub fn int_param(
    name: &str,
    raw: &Option<String>,
    range: std::ops::RangeInclusive<i64>,
) -> Result<Option<i64>, ApiError> {
    match raw {
        None => Ok(None),
        Some(s) => match s.trim().parse::<i64>() {
            Ok(v) if range.contains(&v) => Ok(Some(v)),
            _ => Err(ApiError::field(
                name,
                "invalid_field",
                format!(
                    "{name} must be an integer in {}..={}, not {s:?}",
                    range.start(),
                    range.end()
                ),
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_positive_integers() {
        assert_eq!(parse_id("7", "job").unwrap(), 7);
        for bad in ["0", "-1", "x", "", "1.5", "99999999999999999999"] {
            let e = parse_id(bad, "job").unwrap_err();
            assert_eq!(e.status, StatusCode::BAD_REQUEST);
            assert_eq!(e.body.field.as_deref(), Some("id"));
        }
    }

    #[test]
    fn actions_name_their_verbs() {
        let verbs = &["enable", "disable"];
        assert_eq!(
            action("7:disable", "rules", "rule", verbs).unwrap(),
            ("7", "disable")
        );
        let e = action("7", "rules", "rule", verbs).unwrap_err();
        assert_eq!(
            (e.status, e.body.code, e.body.message.as_str()),
            (
                StatusCode::NOT_FOUND,
                "unknown_action",
                "POST /v1/rules/7 needs an action: 7:enable or 7:disable"
            )
        );
        let e = action("7:stop", "jobs", "job", &["cancel"]).unwrap_err();
        assert_eq!(e.body.message, "no job action \"stop\"; use :cancel");
    }

    #[test]
    fn int_params_stay_in_range() {
        assert_eq!(int_param("limit", &None, 1..=10).unwrap(), None);
        assert_eq!(
            int_param("limit", &Some(" 10 ".into()), 1..=10).unwrap(),
            Some(10)
        );
        let e = int_param("limit", &Some("11".into()), 1..=10).unwrap_err();
        assert_eq!(e.body.field.as_deref(), Some("limit"));
        assert!(int_param("limit", &Some("ten".into()), 1..=10).is_err());
    }
}
