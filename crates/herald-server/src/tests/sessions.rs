//! The console's session cookie at the edge: login, the cookie standing for
//! the key, CSRF on state changes, and the end of a session with its key.

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use serde_json::Value;

use super::keys::{ADMIN, req, stored_keys_api};
use super::{Api, Options, error};

/// `POST /ui/login` with `key`: the status and headers.
async fn login(api: &Api, key: &str, extra: &[(&str, &str)]) -> (StatusCode, HeaderMap) {
    let mut r = Request::builder()
        .method(Method::POST)
        .uri("/ui/login")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    for (k, v) in extra {
        r = r.header(*k, *v);
    }
    let body = serde_urlencoded::to_string([("key", key)]).expect("form");
    let (st, headers, _) = api
        .exchange(r.body(Body::from(body)).expect("request"))
        .await;
    (st, headers)
}

/// The `name=value` of the session cookie a login set.
async fn session(api: &Api, key: &str) -> String {
    let (st, headers) = login(api, key, &[]).await;
    assert_eq!(st, StatusCode::SEE_OTHER, "{headers:?}");
    let set = headers[header::SET_COOKIE].to_str().expect("ascii");
    set.split(';').next().expect("a pair").to_string()
}

/// A request carrying `cookie` (and `csrf`, if any).
fn with_cookie(method: Method, uri: &str, cookie: &str, csrf: Option<&str>) -> Request<Body> {
    let mut r = req(method, uri, None, None);
    r.headers_mut()
        .insert(header::COOKIE, cookie.parse().expect("header"));
    if let Some(t) = csrf {
        r.headers_mut()
            .insert("x-csrf-token", t.parse().expect("header"));
    }
    r
}

/// The CSRF token a page shell carries for `cookie`.
async fn csrf_of(api: &Api, cookie: &str) -> String {
    let (st, _, body) = api
        .exchange(with_cookie(Method::GET, "/ui/jobs", cookie, None))
        .await;
    assert_eq!(st, StatusCode::OK);
    let html = body.as_str().expect("html").to_string();
    let start = html.find("name=\"csrf-token\" content=\"").expect("meta") + 27;
    html[start..start + html[start..].find('"').expect("end")].to_string()
}

#[tokio::test]
async fn a_key_logs_in_and_its_cookie_stands_for_it() {
    let api = stored_keys_api(Options::default()).await;
    let (_, key) = api.make_key("shop", &["read", "campaign"]).await;
    let (st, headers) = login(&api, &key, &[]).await;
    assert_eq!(st, StatusCode::SEE_OTHER);
    assert_eq!(headers[header::LOCATION], "/ui");
    let set = headers[header::SET_COOKIE].to_str().unwrap();
    for part in [
        "herald_session=v2.",
        "HttpOnly",
        "SameSite=Strict",
        "Path=/",
        "Max-Age=43200",
    ] {
        assert!(set.contains(part), "{set}");
    }
    assert!(!set.contains("Secure"), "{set}");
    assert!(!set.contains(&key), "the key itself is never in the cookie");
    let cookie = set.split(';').next().unwrap().to_string();

    // Reads work with the cookie alone, as the key's tenant.
    let (st, body) = api
        .send(with_cookie(Method::GET, "/v1/audit", &cookie, None))
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    // A state change needs the page's CSRF token.
    let (st, body) = api
        .send(with_cookie(
            Method::POST,
            "/v1/jobs/1:cancel",
            &cookie,
            None,
        ))
        .await;
    error(st, &body, StatusCode::FORBIDDEN, "csrf");
    let (st, body) = api
        .send(with_cookie(
            Method::POST,
            "/v1/jobs/1:cancel",
            &cookie,
            Some("AAAA"),
        ))
        .await;
    error(st, &body, StatusCode::FORBIDDEN, "csrf");
    let token = csrf_of(&api, &cookie).await;
    assert!(token.len() >= 43, "{token}");
    let (st, body) = api
        .send(with_cookie(
            Method::POST,
            "/v1/jobs/1:cancel",
            &cookie,
            Some(&token),
        ))
        .await;
    error(st, &body, StatusCode::NOT_FOUND, "not_found");
    // The key's scopes still hold: no admin routes.
    let (st, body) = api
        .send(with_cookie(Method::GET, "/v1/keys", &cookie, None))
        .await;
    error(st, &body, StatusCode::FORBIDDEN, "forbidden");
    // A bearer key wins over the cookie and needs no CSRF token.
    let (st, _) = api
        .send({
            let mut r = with_cookie(Method::POST, "/v1/jobs/1:cancel", &cookie, None);
            r.headers_mut().insert(
                header::AUTHORIZATION,
                format!("Bearer {key}").parse().unwrap(),
            );
            r
        })
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn wrong_keys_and_forged_cookies_open_nothing() {
    let api = stored_keys_api(Options::default()).await;
    let (id, key) = api.make_key("shop", &["read"]).await;
    let (st, headers) = login(&api, "hrk_1_wrong", &[]).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    assert!(!headers.contains_key(header::SET_COOKIE));
    let (st, _) = login(&api, "", &[]).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);

    let cookie = session(&api, &key).await;
    // Another expiry with the same MAC, or another key id.
    let parts: Vec<&str> = cookie.split('.').collect();
    let later = format!(
        "{}.{}.{}.{}",
        parts[0],
        parts[1],
        parts[2].parse::<i64>().unwrap() + 1,
        parts[3]
    );
    let other = format!("herald_session=v2.{}.{}.{}", id + 1, parts[2], parts[3]);
    let admin = format!("herald_session=v2.0.{}.{}", parts[2], parts[3]);
    for forged in [later, other, admin, "herald_session=garbage".to_string()] {
        let (st, body) = api
            .send(with_cookie(Method::GET, "/v1/jobs", &forged, None))
            .await;
        error(st, &body, StatusCode::UNAUTHORIZED, "unauthorized");
        // A page sends the browser to the login form.
        let (st, headers, _) = api
            .exchange(with_cookie(Method::GET, "/ui/jobs", &forged, None))
            .await;
        assert_eq!(st, StatusCode::SEE_OTHER, "{forged}");
        assert_eq!(headers[header::LOCATION], "/ui/login");
    }
}

#[tokio::test]
async fn revoking_the_key_ends_its_sessions() {
    let api = stored_keys_api(Options::default()).await;
    let (id, key) = api.make_key("shop", &["read"]).await;
    let cookie = session(&api, &key).await;
    let (st, _) = api
        .send(with_cookie(Method::GET, "/v1/jobs", &cookie, None))
        .await;
    assert_eq!(st, StatusCode::OK);
    let (st, _) = api
        .as_key(ADMIN, Method::DELETE, &format!("/v1/keys/{id}"), None)
        .await;
    assert_eq!(st, StatusCode::OK);
    let (st, body) = api
        .send(with_cookie(Method::GET, "/v1/jobs", &cookie, None))
        .await;
    error(st, &body, StatusCode::UNAUTHORIZED, "unauthorized");
    let (st, _, _) = api
        .exchange(with_cookie(Method::GET, "/ui", &cookie, None))
        .await;
    assert_eq!(st, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn the_admin_logs_in_and_may_act_for_a_tenant() {
    let api = stored_keys_api(Options::default()).await;
    api.make_key("shop", &["read"]).await;
    let (st, headers) = login(&api, ADMIN, &[("x-forwarded-proto", "https")]).await;
    assert_eq!(st, StatusCode::SEE_OTHER);
    let set = headers[header::SET_COOKIE].to_str().unwrap();
    assert!(set.contains("; Secure"), "behind TLS: {set}");
    let cookie = set.split(';').next().unwrap().to_string();
    let (st, _, body) = api
        .exchange(with_cookie(Method::GET, "/ui/cluster", &cookie, None))
        .await;
    assert_eq!(st, StatusCode::OK);
    let html = body.as_str().unwrap();
    assert!(
        html.contains("name=\"herald-admin\" content=\"true\""),
        "{html}"
    );
    let mut r = with_cookie(Method::GET, "/v1/audit", &cookie, None);
    r.headers_mut()
        .insert("x-herald-tenant", "shop".parse().unwrap());
    let (st, body) = api.send(r).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    // Logging out clears the cookie.
    let (st, headers, _) = api
        .exchange(with_cookie(Method::POST, "/ui/logout", &cookie, None))
        .await;
    assert_eq!(st, StatusCode::SEE_OTHER);
    assert!(
        headers[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
}

#[tokio::test]
async fn open_mode_needs_no_login() {
    let api = Api::new().await;
    let (st, headers, body) = api.exchange(req(Method::GET, "/ui", None, None)).await;
    assert_eq!(st, StatusCode::OK);
    assert!(
        headers[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap()
            .contains("script-src 'self'")
    );
    assert!(
        matches!(body, Value::String(ref s) if s.contains("name=\"herald-mode\" content=\"open\""))
    );
    let (st, headers, _) = api
        .exchange(req(Method::GET, "/ui/login", None, None))
        .await;
    assert_eq!(st, StatusCode::SEE_OTHER);
    assert_eq!(headers[header::LOCATION], "/ui");
    // A cookie means nothing in open mode.
    let (st, _) = api
        .send(with_cookie(
            Method::GET,
            "/v1/jobs",
            "herald_session=garbage",
            None,
        ))
        .await;
    assert_eq!(st, StatusCode::OK);
    let (st, headers, body) = api
        .exchange(req(Method::GET, "/ui/assets/app.js", None, None))
        .await;
    assert_eq!(st, StatusCode::OK);
    assert!(
        headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
    assert!(matches!(body, Value::String(ref s) if s.contains("__heraldErrors")));
    let (st, _, _) = api
        .exchange(req(Method::GET, "/ui/nothing", None, None))
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
}

/// Login CSRF: a page of another origin may not post the login form (it
/// would log the victim into the attacker's key) nor the logout form.
#[tokio::test]
async fn cross_origin_logins_and_logouts_are_refused() {
    let api = stored_keys_api(Options::default()).await;
    let (_, key) = api.make_key("shop", &["read"]).await;
    let foreign: [&[(&str, &str)]; 3] = [
        &[("origin", "http://evil.example")],
        &[("origin", "null")],
        &[
            ("sec-fetch-site", "cross-site"),
            ("origin", "http://evil.example"),
        ],
    ];
    for headers in foreign {
        let (st, set) = login(&api, &key, headers).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{headers:?}");
        assert!(!set.contains_key(header::SET_COOKIE), "{headers:?}");
        let mut r = req(Method::POST, "/ui/logout", None, None);
        for (k, v) in headers {
            r.headers_mut().insert(*k, v.parse().unwrap());
        }
        let (st, set, body) = api.exchange(r).await;
        error(st, &body, StatusCode::FORBIDDEN, "cross_origin");
        assert!(!set.contains_key(header::SET_COOKIE));
    }
    // The console's own form (same origin; behind a proxy, the host it
    // forwarded), and a client that is no browser, log in.
    let own: [&[(&str, &str)]; 4] = [
        &[("origin", "http://localhost")],
        &[
            ("sec-fetch-site", "same-origin"),
            ("origin", "https://herald.example.com"),
        ],
        &[
            ("origin", "https://herald.example.com"),
            ("x-forwarded-host", "herald.example.com"),
        ],
        &[],
    ];
    for headers in own {
        let (st, set) = login(&api, &key, headers).await;
        assert_eq!(st, StatusCode::SEE_OTHER, "{headers:?}");
        assert!(set.contains_key(header::SET_COOKIE), "{headers:?}");
    }
}

/// A failed login leaves a trace: a tally in the audit log (and a metric and
/// a warning, which the end-to-end tests read).
#[tokio::test]
async fn failed_logins_are_counted_in_the_audit_log() {
    let api = stored_keys_api(Options::default()).await;
    for key in ["hrk_1_wrong", "not a key", "hrk_2_wrong"] {
        let (st, _) = login(&api, key, &[]).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED);
    }
    let started = std::time::Instant::now();
    loop {
        let (st, body) = api.as_key(ADMIN, Method::GET, "/v1/audit", None).await;
        assert_eq!(st, StatusCode::OK);
        let counted: u64 = body["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["reason"] == "login_failed")
            .inspect(|e| {
                assert_eq!(
                    (&e["method"], &e["route"], &e["status"]),
                    (&"POST".into(), &"/ui/login".into(), &401.into())
                );
            })
            .map(|e| e["count"].as_u64().unwrap())
            .sum();
        if counted == 3 {
            break;
        }
        assert!(
            counted < 3 && started.elapsed() < std::time::Duration::from_secs(5),
            "{body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
