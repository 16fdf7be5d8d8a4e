//! The API description: an OpenAPI 3.1 document at `/openapi.json`, and an
//! interactive reference of our own at `/docs` that renders it.
//!
//! Schemas come from the types the handlers serialize (`derive(ToSchema)`);
//! operations from the route table (`crate::routes::TABLE`), where each
//! route names its documentation (written in [`operations`]' words, beside
//! its handler): a route cannot be declared without it.

mod node;
pub(crate) mod operations;
mod refine;
mod schemas;
pub(crate) mod serve;
pub(crate) mod subscriber;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value, json};
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;

use crate::access::{Need, Policy};
use crate::routes::{Body, Route, TABLE};
use node::NodeFacts;
use operations::{Answer, Doc, Docs, ID_PATTERN, Tag, Takes};

/// The document as served for `facts`, built once.
pub fn document_text(facts: NodeFacts) -> std::sync::Arc<str> {
    node::served_text(facts, |f| document_for(f).to_string())
}

/// The document of a node with no channels known and the default leads.
#[cfg(test)]
pub fn document() -> Value {
    document_for(&NodeFacts::default())
}

/// The document of a node with `facts`.
pub fn document_for(facts: &NodeFacts) -> Value {
    let mut paths = Map::new();
    for op in operations() {
        let entry = paths.entry(op.path.clone()).or_insert_with(|| json!({}));
        entry[op.method().to_ascii_lowercase()] = operation(&op, facts);
    }
    let mut doc = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Herald",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "A durable, distributed scheduler for reminders and mass push messages. \
                Times are RFC 3339 strings. Every error answers `{\"error\": {\"code\", \"message\", \"field\"?}}`.",
        },
        "tags": tags(),
        "paths": paths,
        "components": {
            "schemas": component_schemas(),
            "responses": {
                "Error": {
                    "description": "An error, in the API's one error shape",
                    "content": { "application/json": { "schema": schema_ref("ErrorResponse") } },
                },
            },
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An API key (`Authorization: Bearer <key>`); not needed in open mode. \
                        The admin acts for a tenant with `X-Herald-Tenant: NAME`.",
                },
            },
        },
        "security": [{ "bearer": [] }],
    });
    refine::apply(&mut doc);
    facts.apply(&mut doc);
    doc
}

/// One documented operation: a route of the table, or one action of an
/// action route (`POST /v1/jobs/{id}:cancel`).
struct Op {
    policy: Policy,
    /// As documented: the route's path, plus `:action` for an action.
    path: String,
    doc: Doc,
    request_body: Option<Value>,
}

impl Op {
    fn method(&self) -> &'static str {
        self.policy.verb.as_str()
    }
}

/// Every documented operation, in the table's order.
fn operations() -> Vec<Op> {
    TABLE.iter().flat_map(operations_of).collect()
}

/// The operations of one table route: itself, or one per action.
fn operations_of(route: &Route) -> Vec<Op> {
    let policy = route.policy;
    match route.docs {
        Docs::One(doc) => vec![Op {
            policy,
            path: policy.path.to_string(),
            doc,
            request_body: request_body(route.body),
        }],
        Docs::Actions(actions) => actions
            .iter()
            .map(|a| Op {
                policy,
                path: format!("{}:{}", policy.path, a.name),
                doc: a.doc,
                request_body: a.body.map(optional_json_body),
            })
            .collect(),
    }
}

fn operation(op: &Op, facts: &NodeFacts) -> Value {
    let doc = &op.doc;
    let mut params = path_params(&op.path);
    for p in doc.query {
        let mut param = json!({
            "name": p.name, "in": "query", "required": false,
            "description": p.what, "schema": param_schema(p.takes, facts),
        });
        if let Takes::Words(_) = p.takes {
            // `group_by=channel,day`: one parameter, its values joined by commas.
            param["style"] = json!("form");
            param["explode"] = json!(false);
        }
        params.push(param);
    }
    let mut responses = error_responses();
    for (status, answer) in doc.ok {
        responses.insert(status.to_string(), ok_response(*answer));
    }
    let mut out = json!({
        "tags": [doc.tag.name()],
        "summary": doc.summary,
        "operationId": operation_id(op.method(), &op.path),
        "parameters": params,
        "responses": responses,
        "security": security(op.policy.need),
        "description": format!("Needs: {}.", need_text(op.policy.need)),
    });
    if let Some(b) = &op.request_body {
        out["requestBody"] = b.clone();
    }
    out
}

fn need_text(need: Need) -> String {
    match need {
        Need::Nothing => "nothing (public)".into(),
        Need::Scope(s) => format!("a key with the `{}` scope", s.as_str()),
        Need::Signed(s) => format!(
            "the provider's signature when the channel checks one, else the `{}` scope",
            s.as_str()
        ),
    }
}

/// `[]` for a public route; else the document's default (a bearer key).
fn security(need: Need) -> Value {
    match need {
        Need::Nothing => json!([]),
        _ => json!([{ "bearer": [] }]),
    }
}

/// `post_v1_jobs_id_cancel` for `POST /v1/jobs/{id}:cancel`.
fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_ascii_lowercase();
    let mut last = '_';
    for c in path.chars() {
        let c = if c.is_ascii_alphanumeric() { c } else { '_' };
        if c != '_' || last != '_' {
            id.push(c);
        }
        last = c;
    }
    id.trim_end_matches('_').to_string()
}

/// The JSON schema of what a parameter takes.
fn param_schema(takes: Takes, facts: &NodeFacts) -> Value {
    match takes {
        Takes::Lead => facts.lead_schema(),
        Takes::Text => json!({ "type": "string" }),
        Takes::Printable(max) => json!({
            "type": "string", "minLength": 1, "maxLength": max,
            "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*$",
        }),
        Takes::Label(max) => json!({
            "type": "string", "minLength": 1, "maxLength": max,
            "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$",
        }),
        Takes::Int(min, max) => json!({ "type": "integer", "minimum": min, "maximum": max }),
        Takes::Word(words) => json!({ "type": "string", "enum": words }),
        Takes::Words(words) => json!({
            "type": "array", "uniqueItems": true,
            "items": { "type": "string", "enum": words },
        }),
        Takes::Time => json!({ "type": "string", "format": "date-time" }),
        Takes::Day => json!({
            "type": "string",
            "anyOf": [{ "format": "date" }, { "format": "date-time" }],
        }),
        Takes::Pattern(p) => json!({ "type": "string", "pattern": p }),
    }
}

/// What a path parameter takes, by its name: ids are positive integers,
/// user and subject ids short words (`http::fields::check_id`), channel names
/// any segment (an unknown one is a `404`).
fn path_param_schema(name: &str) -> Value {
    match name {
        "id" | "task_id" => json!({ "type": "integer", "minimum": 1, "maximum": i64::MAX }),
        "user_id" | "subject_id" => json!({ "type": "string", "pattern": ID_PATTERN }),
        _ => json!({ "type": "string", "minLength": 1 }),
    }
}

/// One required parameter per `{name}` of the path.
fn path_params(path: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        let name = &rest[start + 1..start + len];
        out.push(json!({
            "name": name, "in": "path", "required": true, "schema": path_param_schema(name),
        }));
        rest = &rest[start + len..];
    }
    out
}

fn error_responses() -> Map<String, Value> {
    let error = json!({ "$ref": "#/components/responses/Error" });
    let mut m = Map::new();
    m.insert("4XX".into(), error.clone());
    m.insert("5XX".into(), error);
    m
}

fn schema_ref(name: &str) -> Value {
    if name == "Object" {
        return json!({ "type": "object" });
    }
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn ok_response(answer: Answer) -> Value {
    let (ctype, schema, what) = match answer {
        Answer::Json(s) => ("application/json", schema_ref(s), "OK"),
        Answer::Ndjson(s) => (
            "application/x-ndjson",
            schema_ref(s),
            "One JSON object per line, in input order",
        ),
        Answer::Text => ("text/plain", json!({ "type": "string" }), "OK"),
        Answer::Html => ("text/html", json!({ "type": "string" }), "OK"),
    };
    json!({ "description": what, "content": { ctype: { "schema": schema } } })
}

/// The request body a route reads, as its table entry declares it; none
/// for a route (or an action) that reads none.
fn request_body(body: Body) -> Option<Value> {
    let content = match body {
        Body::None | Body::Action => return None,
        Body::Json(s) => json!({ "application/json": { "schema": schema_ref(s) } }),
        Body::Ndjson(s) => json!({ "application/x-ndjson": { "schema": schema_ref(s) } }),
        Body::Recipients => json!({
            "application/x-ndjson": { "schema": schema_ref("RecipientLine") },
            "text/csv": { "schema": { "type": "string" } },
        }),
        Body::Xml => json!({
            "text/xml": { "schema": { "type": "string" } },
            "application/json": { "schema": { "type": "array", "items": { "type": "object" } } },
        }),
    };
    Some(json!({ "required": true, "content": content }))
}

/// An action's JSON body of `schema`, which it also reads when absent.
fn optional_json_body(schema: &str) -> Value {
    json!({
        "required": false,
        "content": { "application/json": { "schema": schema_ref(schema) } },
    })
}

fn tags() -> Value {
    Tag::ALL
        .iter()
        .map(|t| json!({ "name": t.name(), "description": t.description() }))
        .collect()
}

/// Every named schema, with the schemas they refer to.
fn component_schemas() -> Map<String, Value> {
    let mut all: Vec<(String, RefOr<Schema>)> = Vec::new();
    schemas::collect(&mut all);
    let mut out = Map::new();
    for (name, schema) in all {
        // A schema that does not serialize is a bug of its derive: leave it
        // out rather than fail the document (the tests check every `$ref`).
        match serde_json::to_value(&schema) {
            Ok(v) => {
                out.insert(name, v);
            }
            Err(e) => tracing::error!(schema = %name, error = %e, "schema does not serialize"),
        }
    }
    out
}

/// Adds `T` and the schemas it refers to.
fn add<T: ToSchema>(all: &mut Vec<(String, RefOr<Schema>)>) {
    all.push((T::name().into_owned(), T::schema()));
    T::schemas(all);
}
