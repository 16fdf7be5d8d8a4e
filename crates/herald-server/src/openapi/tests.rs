//! The document against the router, and against itself.

use std::collections::BTreeSet;

use serde_json::Value;

use super::operations::OPS;
use super::{document, route_of};
use crate::access::Verb;
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
    let registered: BTreeSet<(Verb, &str)> =
        crate::api_routes().registered().iter().copied().collect();
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
            assert_ne!(
                op["summary"],
                "(undocumented)",
                "{} {p} has no row in openapi::operations::OPS",
                verb.as_str()
            );
        }
    }
}

#[test]
fn every_documented_operation_is_served() {
    for op in OPS {
        assert!(
            route_of(op).is_some(),
            "{} {} is documented but not served",
            op.method,
            op.path
        );
    }
}

#[test]
fn operations_are_unique_and_public_routes_need_no_key() {
    let mut seen = BTreeSet::new();
    for op in OPS {
        assert!(
            seen.insert((op.method, op.path)),
            "{} {} twice",
            op.method,
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
    let text = super::document_text();
    let again: Value = serde_json::from_str(text).expect("the served text is JSON");
    assert_eq!(again, doc);
}
