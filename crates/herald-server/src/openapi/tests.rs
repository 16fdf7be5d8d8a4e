//! The document against the router, and against itself.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::{document, operations};
use crate::access::Verb;
use crate::api::timers::changes::RetryState;
use crate::routes::ROUTES;

/// The documented operations whose route path (less an `:action`) and
/// method are `verb` and `path`.
fn documented(doc: &Value, verb: &str, path: &str) -> Vec<String> {
    let method = verb.to_ascii_lowercase();
    doc["paths"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(p, item)| {
            let base = match p.rfind("}:") {
                Some(i) if !p[i..].contains('/') => &p[..=i],
                _ => p.as_str(),
            };
            base == path && item.get(&method).is_some()
        })
        .map(|(p, _)| p.clone())
        .collect()
}

#[test]
fn every_route_of_the_table_and_the_router_is_documented() {
    let doc = document();
    let registered: BTreeSet<(Verb, &str)> = crate::routes::api_routes()
        .registered()
        .iter()
        .copied()
        .collect();
    let table: BTreeSet<(Verb, &str)> = ROUTES.iter().map(|p| (p.verb, p.path)).collect();
    for (verb, path) in registered.union(&table) {
        let found = documented(&doc, verb.as_str(), path);
        assert!(
            !found.is_empty(),
            "{} {path} is not in /openapi.json",
            verb.as_str()
        );
        for p in found {
            let op = &doc["paths"][&p][verb.as_str().to_ascii_lowercase()];
            assert!(
                op["summary"].as_str().is_some_and(|s| !s.is_empty()),
                "{} {p} has no summary",
                verb.as_str()
            );
        }
    }
}

#[test]
fn every_documented_operation_is_served() {
    let registered = crate::routes::api_routes();
    for op in operations() {
        assert!(
            registered
                .registered()
                .contains(&(op.policy.verb, op.policy.path)),
            "{} {} is documented but not served",
            op.method(),
            op.path
        );
    }
}

#[test]
fn operations_are_unique_and_public_routes_need_no_key() {
    let mut seen = BTreeSet::new();
    for op in operations() {
        assert!(
            seen.insert((op.method(), op.path.clone())),
            "{} {} twice",
            op.method(),
            op.path
        );
    }
    let doc = document();
    for p in ["/healthz", "/readyz", "/openapi.json", "/docs"] {
        assert_eq!(
            doc["paths"][p]["get"]["security"],
            serde_json::json!([]),
            "{p}"
        );
    }
    assert_eq!(
        doc["paths"]["/v1/timers"]["post"]["security"],
        serde_json::json!([{ "bearer": [] }])
    );
}

fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => out.push(r),
                    _ => refs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

#[test]
fn every_reference_resolves_and_errors_share_one_shape() {
    let doc = document();
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(all.len() > 50);
    for r in all {
        let pointer = r.strip_prefix('#').unwrap_or(r);
        assert!(doc.pointer(pointer).is_some(), "{r} does not resolve");
    }
    let error = &doc["components"]["schemas"]["ErrorBody"];
    let mut required: Vec<&str> = error["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["code", "message"]);
    assert!(error["properties"]["field"].is_object());
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        for (method, op) in item.as_object().into_iter().flatten() {
            assert_eq!(
                op["responses"]["4XX"]["$ref"], "#/components/responses/Error",
                "{method} {path}"
            );
        }
    }
}

#[test]
fn the_document_is_openapi_3_1() {
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["info"]["version"].is_string());
    let text = super::document_text(super::node::NodeFacts::default());
    let again: Value = serde_json::from_str(&text).expect("the served text is JSON");
    assert_eq!(again, doc);
}

/// The served document names the node's channels and leads, where request
/// bodies and parameters take them.
#[test]
fn the_document_names_the_nodes_channels_and_leads() {
    use super::node::{CHANNEL_FIELDS, LEAD_FIELDS, NodeFacts};
    let facts = NodeFacts {
        channels: vec!["hooks".into(), "log".into()],
        leads: vec![0, 15, 30],
    };
    let doc = super::document_for(&facts);
    for p in CHANNEL_FIELDS {
        let field = doc
            .pointer(p)
            .unwrap_or_else(|| panic!("{p} does not resolve"));
        let names: Vec<&Value> = field["enum"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| !v.is_null())
            .collect();
        assert_eq!(names, [&json!("hooks"), &json!("log")], "{p}");
    }
    for p in LEAD_FIELDS {
        let field = doc
            .pointer(p)
            .unwrap_or_else(|| panic!("{p} does not resolve"));
        assert_eq!(field["enum"], json!([0, 15, 30]), "{p}");
    }
    let lead = schema_of(
        &doc,
        "delete",
        "/v1/reminders/{user_id}/{subject_id}",
        "lead_minutes",
    );
    assert_eq!(lead["enum"], json!([0, 15, 30]));
    // Another node's facts, another document.
    let other = super::document_text(NodeFacts::default());
    assert!(!other.contains("\"hooks\""));
}

/// Every parameter of `method path`, by name.
fn params<'a>(doc: &'a Value, method: &str, path: &str) -> Vec<(&'a str, &'a Value)> {
    doc["paths"][path][method]["parameters"]
        .as_array()
        .unwrap_or_else(|| panic!("{method} {path} has no parameters"))
        .iter()
        .map(|p| (p["name"].as_str().unwrap_or_default(), p))
        .collect()
}

fn schema_of<'a>(doc: &'a Value, method: &str, path: &str, name: &str) -> &'a Value {
    let found = params(doc, method, path)
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("{method} {path} has no parameter {name}"));
    &found.1["schema"]
}

/// Ids, cursors and limits carry what the handlers check: a bare string
/// lets a generator send `limit=abc` as valid input.
#[test]
fn parameters_carry_their_constraints() {
    let doc = document();
    // Filters by free text are the only unconstrained parameters.
    let free = ["channel", "recipient", "idempotency_key"];
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        for (method, op) in item.as_object().into_iter().flatten() {
            for p in op["parameters"].as_array().into_iter().flatten() {
                let name = p["name"].as_str().unwrap_or_default();
                let s = &p["schema"];
                let constrained = s["type"] == "integer"
                    || s["type"] == "array"
                    || s.get("enum").is_some()
                    || s.get("pattern").is_some()
                    || s.get("format").is_some()
                    || s.get("anyOf").is_some()
                    || s.get("minLength").is_some();
                assert!(
                    constrained || (p["in"] == "query" && free.contains(&name)),
                    "{method} {path}: parameter {name} has no constraint: {s}"
                );
                if p["in"] == "path" {
                    assert_eq!(p["required"], true, "{method} {path} {name}");
                }
            }
        }
    }
    let id = schema_of(&doc, "get", "/v1/timers/{id}", "id");
    assert_eq!(
        (&id["type"], &id["minimum"], &id["maximum"]),
        (&json!("integer"), &json!(1), &json!(i64::MAX))
    );
    let user = schema_of(&doc, "get", "/v1/users/{user_id}/reminders", "user_id");
    assert_eq!(user["pattern"], super::operations::ID_PATTERN);
    let state = schema_of(&doc, "get", "/v1/timers", "state");
    assert_eq!(
        state["enum"],
        json!(["pending", "done", "failed", "dead", "cancelled", "in_doubt"])
    );
    // The retry filter's states are the words the handler takes.
    let taken: Vec<&str> = RetryState::ALL
        .iter()
        .map(|s| s.timer_state().as_str())
        .collect();
    assert_eq!(
        doc["components"]["schemas"]["RetryState"]["enum"],
        json!(taken)
    );
    let group_by = params(&doc, "get", "/v1/reports")
        .into_iter()
        .find(|(n, _)| *n == "group_by")
        .map(|(_, p)| p.clone())
        .unwrap_or_default();
    assert_eq!(
        (&group_by["style"], &group_by["explode"]),
        (&json!("form"), &json!(false))
    );
}

/// The limits the document states are the handlers' own constants.
#[test]
fn limits_are_the_handlers_limits() {
    use crate::http::pagination::{ASCENDING, DESCENDING};
    let doc = document();
    let max = |method: &str, path: &str, name: &str| {
        schema_of(&doc, method, path, name)["maximum"]
            .as_i64()
            .unwrap_or_default()
    };
    let min = |method: &str, path: &str, name: &str| {
        schema_of(&doc, method, path, name)["minimum"]
            .as_i64()
            .unwrap_or_default()
    };
    assert_eq!(
        max("get", "/v1/timers", "limit"),
        crate::api::timers::search::MAX_LIMIT
    );
    assert_eq!(max("get", "/v1/jobs", "limit"), DESCENDING.max_limit);
    assert_eq!(min("get", "/v1/jobs", "before"), DESCENDING.min_cursor);
    for path in [
        "/v1/rules",
        "/v1/rules/{id}/versions",
        "/v1/jobs/{id}/segments",
        "/v1/keys",
    ] {
        assert_eq!(max("get", path, "limit"), ASCENDING.max_limit, "{path}");
        assert_eq!(min("get", path, "after"), ASCENDING.min_cursor, "{path}");
    }
    assert_eq!(
        max("get", "/v1/jobs/{id}/sends", "limit"),
        crate::api::campaigns::jobs::MAX_SENDS_WINDOW as i64
    );
    assert_eq!(
        max("get", "/v1/reports", "limit"),
        herald_store::MAX_REPORT_ROWS as i64
    );
    assert_eq!(
        schema_of(&doc, "post", "/v1/audiences", "name")["maxLength"],
        crate::api::campaigns::audiences::MAX_NAME_BYTES
    );
}

/// Request bodies as the handlers read them.
#[test]
fn request_bodies_are_as_the_handlers_read_them() {
    let doc = document();
    // An audience line is `{"recipient": ...}` and nothing else.
    let line = &doc["components"]["schemas"]["RecipientLine"];
    assert_eq!(line["required"], json!(["recipient"]), "{line}");
    assert_eq!(line["additionalProperties"], false, "{line}");
    let upload = &doc["paths"]["/v1/audiences"]["post"]["requestBody"];
    assert_eq!(
        upload["content"]["application/x-ndjson"]["schema"]["$ref"],
        "#/components/schemas/RecipientLine"
    );
    // `:pause` takes no body at all as well as `{}`.
    let pause = &doc["paths"]["/v1/channels/{name}:pause"]["post"]["requestBody"];
    assert_eq!(pause["required"], false, "{pause}");
    assert_eq!(
        doc["paths"]["/v1/timers"]["post"]["requestBody"]["required"],
        true
    );
}

/// Every refinement lands on a field of a request schema.
#[test]
fn every_refinement_names_a_field() {
    let mut doc = document();
    for (pointer, _) in super::refine::refinements() {
        assert!(doc.pointer(pointer).is_some(), "{pointer} does not resolve");
    }
    super::refine::apply(&mut doc);
    assert_eq!(
        doc["components"]["schemas"]["ReceiptBody"]["properties"]["event"]["enum"],
        json!(["delivered", "read", "clicked"])
    );
}

/// The documented operations, `METHOD path` sorted, one a line.
fn operation_list(doc: &Value) -> String {
    const METHODS: &[&str] = &["get", "put", "post", "delete", "patch", "head", "options"];
    let mut ops: Vec<String> = doc["paths"]
        .as_object()
        .into_iter()
        .flatten()
        .flat_map(|(path, item)| {
            item.as_object()
                .into_iter()
                .flatten()
                .filter(|(method, _)| METHODS.contains(&method.as_str()))
                .map(move |(method, _)| format!("{} {path}", method.to_ascii_uppercase()))
        })
        .collect();
    ops.sort();
    ops.iter().map(|op| format!("{op}\n")).collect()
}

/// The operation list is pinned in `operations.snapshot`, beside this file:
/// moving handlers and routes around must neither lose nor add one. A change
/// of the API changes the snapshot in the same commit, on purpose.
#[test]
fn the_operation_list_is_the_snapshot() {
    let got = operation_list(&document());
    let want = include_str!("operations.snapshot");
    assert!(
        got == want,
        "the documented operations differ from openapi/operations.snapshot:\n{}",
        diff(want, &got)
    );
}

/// The lines only one of `want` and `got` has, marked `-` and `+`.
fn diff(want: &str, got: &str) -> String {
    let want: BTreeSet<&str> = want.lines().collect();
    let got: BTreeSet<&str> = got.lines().collect();
    let gone = want.difference(&got).map(|l| format!("- {l}\n"));
    let new = got.difference(&want).map(|l| format!("+ {l}\n"));
    gone.chain(new).collect()
}
