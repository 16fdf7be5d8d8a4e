//! Reading the parts of a request every endpoint has: a bounded body, an id in the path, a query string and its integer parameters. Each
//! failure is a `4xx` naming what was wrong.

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequestParts, Query};
use axum::http::StatusCode;
use axum::http::request::Parts;

use crate::http::body_meter::BodyFailure;
use crate::http::error::ApiError;

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

/// The query of a route. Each route's query type refuses unknown names
/// (`#[serde(deny_unknown_fields)]`), and a name given twice is refused as
/// serde refuses a duplicate field: a mistyped filter (`?stat=dead`) must not
/// quietly match everything. Either is a `400 invalid_query` naming the
/// parameter.
pub fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    match q {
        Ok(Query(t)) => Ok(t),
        Err(e) => Err(query_error(&e.body_text())),
    }
}

/// The `400 invalid_query` of a query string serde refused, from its text
/// (`unknown field `stat`, expected one of ...`, `duplicate field `limit``).
fn query_error(text: &str) -> ApiError {
    let text = text
        .strip_prefix("Failed to deserialize query string: ")
        .unwrap_or(text);
    let name = |after: &str| {
        let rest = text.split_once(after)?.1;
        let (name, rest) = rest.split_once('`')?;
        Some((name.to_string(), rest.to_string()))
    };
    if let Some((name, rest)) = name("unknown field `") {
        let takes = rest
            .trim_start_matches(',')
            .trim()
            .replace("expected one of ", "this route takes ")
            .replace("expected ", "this route takes ")
            .replace("there are no fields", "this route takes none");
        return ApiError::field(
            &name,
            "invalid_query",
            format!("unknown query parameter `{name}`; {takes}"),
        );
    }
    if let Some((name, _)) = name("duplicate field `") {
        return ApiError::field(
            &name,
            "invalid_query",
            format!("query parameter `{name}` is given more than once; give it once"),
        );
    }
    ApiError::field(
        "query",
        "invalid_query",
        format!("bad query string: {text}"),
    )
}

/// A route that takes no query parameters: any is a `400 invalid_query`
/// naming it (a caller who adds `?dry_run=1` must not have it ignored).
pub struct NoQuery;

impl<S: Send + Sync> FromRequestParts<S> for NoQuery {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let Some(raw) = parts.uri.query().filter(|q| !q.is_empty()) else {
            return Ok(NoQuery);
        };
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw).unwrap_or_default();
        let name = pairs.into_iter().next().map_or_else(
            || raw.split(['=', '&']).next().unwrap_or(raw).to_string(),
            |(name, _)| name,
        );
        Err(ApiError::field(
            &name,
            "invalid_query",
            format!("unknown query parameter `{name}`; this route takes none"),
        ))
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
    fn unknown_and_repeated_parameters_are_named() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Q {
            state: Option<String>,
            limit: Option<String>,
        }
        let read = |q: &str| {
            let uri: axum::http::Uri = format!("/x?{q}").parse().unwrap();
            query(Query::<Q>::try_from_uri(&uri))
        };
        assert!(read("state=dead&limit=5").is_ok());
        let e = read("stat=dead").unwrap_err();
        assert_eq!(
            (e.status, e.body.code, e.body.field.as_deref()),
            (StatusCode::BAD_REQUEST, "invalid_query", Some("stat"))
        );
        assert_eq!(
            e.body.message,
            "unknown query parameter `stat`; this route takes `state` or `limit`"
        );
        let e = read("state=dead&state=failed").unwrap_err();
        assert_eq!(e.body.field.as_deref(), Some("state"));
        assert!(
            e.body.message.contains("more than once"),
            "{}",
            e.body.message
        );
    }

    #[tokio::test]
    async fn a_route_without_parameters_refuses_any() {
        let parts = |uri: &str| {
            axum::http::Request::get(uri)
                .body(())
                .unwrap()
                .into_parts()
                .0
        };
        for ok in ["/v1/timers/1", "/v1/timers/1?"] {
            assert!(
                NoQuery::from_request_parts(&mut parts(ok), &())
                    .await
                    .is_ok()
            );
        }
        for (uri, name) in [
            ("/v1/timers/1?dry_run=1", "dry_run"),
            ("/v1/timers/1?a%20b=1&c=2", "a b"),
            ("/v1/timers/1?flag", "flag"),
        ] {
            let Err(e) = NoQuery::from_request_parts(&mut parts(uri), &()).await else {
                panic!("{uri} taken");
            };
            assert_eq!(e.body.field.as_deref(), Some(name), "{uri}");
            assert_eq!(e.body.code, "invalid_query");
        }
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
