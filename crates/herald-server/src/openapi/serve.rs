//! The two routes of the API description: `GET /openapi.json` (the document
//! as this node serves it) and `GET /docs` (the page that renders it). Apart
//! from the document's making, so the route table can name them without
//! importing what reads the table.

use axum::extract::State;
use axum::http::header;
use axum::response::{Html, IntoResponse};

use super::document_text;
use super::node::NodeFacts;
use super::operations::{Answer, Doc, Tag};
use crate::http::state::AppState;

/// `GET /openapi.json`: the document, with this node's channels and leads.
pub async fn openapi_json(State(st): State<AppState>) -> impl IntoResponse {
    let mut channels = st.engine.channel_names();
    channels.sort();
    let facts = NodeFacts {
        channels,
        leads: st.reminders.leads().minutes().to_vec(),
    };
    (
        [(header::CONTENT_TYPE, "application/json")],
        document_text(facts).to_string(),
    )
}

/// `GET /docs`: one self-contained page (no CDN, nothing downloaded).
pub async fn docs() -> impl IntoResponse {
    (
        [(header::CONTENT_SECURITY_POLICY, DOCS_CSP)],
        Html(include_str!("docs.html")),
    )
}

/// The page loads nothing from elsewhere and talks only to this server.
const DOCS_CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:";

/// How `GET /openapi.json` is documented (named by its route-table entry).
pub(crate) const OPENAPI_JSON: Doc = Doc::new(
    Tag::Operations,
    "This document",
    &[(200, Answer::Json("Object"))],
);
/// How `GET /docs` is documented.
pub(crate) const DOCS: Doc = Doc::new(
    Tag::Operations,
    "The interactive reference (HTML)",
    &[(200, Answer::Html)],
);
