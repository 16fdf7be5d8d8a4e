//! The route table against the router and the body table: every route has a
//! policy, no policy is stale, a route has a body limit exactly when it takes
//! a body, every GET is a read, each route serves only its methods, and each
//! action route exactly its documented actions.

use std::collections::{BTreeMap, BTreeSet};

use axum::body::Body;
use axum::http::{Request, StatusCode};

use super::Api;
use crate::access::{Need, Payload, Scope, Verb};
use crate::openapi::operations::Docs;
use crate::routes::{ROUTES, policy};

#[test]
fn every_route_has_exactly_one_policy() {
    let set = crate::routes::api_routes();
    let registered: BTreeSet<(Verb, &str)> = set.registered().iter().copied().collect();
    assert_eq!(
        registered.len(),
        set.registered().len(),
        "a route is registered twice"
    );
    for (verb, path) in &registered {
        assert!(
            policy(*verb, path).is_some(),
            "{} {path} has no entry in routes::ROUTES",
            verb.as_str()
        );
    }
    let table: BTreeSet<(Verb, &str)> = ROUTES.iter().map(|p| (p.verb, p.path)).collect();
    assert_eq!(table.len(), ROUTES.len(), "a route is in the table twice");
    let stale: Vec<_> = table.difference(&registered).collect();
    assert!(
        stale.is_empty(),
        "in the table, not in the router: {stale:?}"
    );
}

/// Every route that takes a body has a limit, and no other has one (the
/// table's entries are checked as they compile; this holds the resolved
/// rules against the policies the guard reads).
#[test]
fn every_route_that_takes_a_body_has_a_limit_and_no_other_does() {
    for p in ROUTES {
        assert_eq!(
            crate::routes::body_spec(p.verb, p.path).is_some(),
            p.payload != Payload::None,
            "{} {}: a body limit exactly when the route takes a body",
            p.verb.as_str(),
            p.path
        );
    }
}

/// The limits follow the `[api]` settings, and the fixed ones are fixed.
#[test]
fn limits_follow_the_settings() {
    use crate::http::body_limits::BodyRule;
    let api = crate::ApiConfig {
        max_timer_bytes: 1000,
        bulk_max_bytes: 5000,
        ..crate::ApiConfig::default()
    };
    let of = |verb, path| {
        crate::routes::body_spec(verb, path)
            .expect("takes a body")
            .resolve(&api)
    };
    assert_eq!(
        of(Verb::Post, "/v1/timers"),
        BodyRule {
            limit: Some(1000),
            streamed: false
        }
    );
    assert_eq!(
        of(Verb::Post, "/v1/timers:bulk"),
        BodyRule {
            limit: Some(5000),
            streamed: true
        }
    );
    assert_eq!(of(Verb::Patch, "/v1/timers/{id}").limit, Some(1 << 20));
    assert_eq!(
        of(Verb::Post, "/v1/schedules:preview").limit,
        Some(64 * 1024)
    );
    assert_eq!(of(Verb::Post, "/v1/jobs/{id}").limit, Some(64 * 1024));
    assert_eq!(of(Verb::Post, "/v1/audiences").limit, None);
    assert!(of(Verb::Post, "/v1/audiences").streamed);
}

/// POST routes that compute an answer from their body and change nothing.
/// (Method and path: `PUT /v1/templates/{name}` writes, its `POST` previews.)
const COMPUTE_ONLY: &[(Verb, &str)] = &[
    (Verb::Post, "/v1/schedules:preview"),
    (Verb::Post, "/v1/templates/{name}"),
];

#[test]
fn no_get_changes_state() {
    for p in ROUTES {
        let route = format!("{} {}", p.verb.as_str(), p.path);
        if p.verb == Verb::Get {
            assert!(
                matches!(
                    p.need,
                    Need::Nothing
                        | Need::Scope(Scope::Read | Scope::Metrics | Scope::Admin)
                        | Need::Signed(Scope::Admin)
                ),
                "{route} is a GET, so a read"
            );
            assert_eq!(p.payload, Payload::None, "{route} reads no body");
            assert!(!p.changes_state(), "{route}");
        } else if COMPUTE_ONLY.contains(&(p.verb, p.path)) {
            // A POST only because its input is a document: it stores nothing.
            assert_eq!(p.need, Need::Scope(Scope::Read), "{route}");
        } else {
            assert!(
                matches!(
                    p.need,
                    Need::Scope(Scope::Write | Scope::Campaign | Scope::Admin)
                        | Need::Signed(Scope::Admin)
                ),
                "{route} changes state: it needs write, campaign or admin"
            );
            assert!(p.changes_state(), "{route}");
            if matches!(p.verb, Verb::Post | Verb::Put | Verb::Patch) {
                assert_ne!(p.payload, Payload::None, "{route} says what it reads");
            } else {
                assert_eq!(p.payload, Payload::None, "{route} reads no body");
            }
        }
    }
}

/// A concrete URI for a route pattern.
fn concrete(path: &str) -> String {
    path.replace("{id}", "999")
        .replace("{subject_id}", "s")
        .replace("{user_id}", "u")
        .replace("{name}", "log")
}

/// Each route answers its own methods and `405` to the others, so no route
/// serves a method the table does not hold a policy for.
#[tokio::test]
async fn routes_serve_only_their_methods() {
    let api = Api::new().await;
    let mut by_path: BTreeMap<&str, BTreeSet<Verb>> = BTreeMap::new();
    for (verb, path) in crate::routes::api_routes().registered() {
        by_path.entry(path).or_default().insert(*verb);
    }
    for (path, verbs) in by_path {
        for verb in Verb::ALL {
            let req = Request::builder()
                .method(verb.as_str())
                .uri(concrete(path))
                .body(Body::empty())
                .expect("request");
            let (st, body) = api.send(req).await;
            if verbs.contains(&verb) {
                assert_ne!(
                    st,
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{} {path}: {body}",
                    verb.as_str()
                );
            } else {
                assert_eq!(
                    st,
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{} {path} is served, but has no policy: {body}",
                    verb.as_str()
                );
            }
        }
    }
}

/// Each action route serves exactly the actions its table entry documents:
/// the handler answers an unknown action with the ones it serves, in order.
#[tokio::test]
async fn action_routes_serve_their_documented_actions() {
    let api = Api::new().await;
    for route in crate::routes::TABLE {
        let Docs::Actions(actions) = route.docs else {
            continue;
        };
        let path = route.policy.path;
        let req = Request::builder()
            .method("POST")
            .uri(format!("{}:no-such-action", concrete(path)))
            .body(Body::empty())
            .expect("request");
        let (st, body) = api.send(req).await;
        assert_eq!(st, StatusCode::NOT_FOUND, "{path}: {body}");
        assert_eq!(body["error"]["code"], "unknown_action", "{path}: {body}");
        let documented: Vec<String> = actions.iter().map(|a| format!(":{}", a.name)).collect();
        let served = body["error"]["message"]
            .as_str()
            .and_then(|m| m.split_once("; use "))
            .map(|(_, list)| list.to_string())
            .unwrap_or_default();
        assert_eq!(served, documented.join(" or "), "{path}: {body}");
    }
}
