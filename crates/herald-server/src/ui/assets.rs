//! The console's static files, compiled into the binary.

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::http::error::ApiError;

/// Name, content type, content.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("assets/app.css"),
    ),
    ("app.js", JS, include_str!("assets/app.js")),
    ("overview.js", JS, include_str!("assets/overview.js")),
    ("timers.js", JS, include_str!("assets/timers.js")),
    (
        "dead-letters.js",
        JS,
        include_str!("assets/dead-letters.js"),
    ),
    ("reminders.js", JS, include_str!("assets/reminders.js")),
    ("subscribers.js", JS, include_str!("assets/subscribers.js")),
    ("users.js", JS, include_str!("assets/users.js")),
    ("templates.js", JS, include_str!("assets/templates.js")),
    ("rules.js", JS, include_str!("assets/rules.js")),
    ("jobs.js", JS, include_str!("assets/jobs.js")),
    ("channels.js", JS, include_str!("assets/channels.js")),
    ("cluster.js", JS, include_str!("assets/cluster.js")),
    ("audit.js", JS, include_str!("assets/audit.js")),
    ("forms.js", JS, include_str!("assets/forms.js")),
];

const JS: &str = "text/javascript; charset=utf-8";

pub async fn serve(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|(name, _, _)| *name == file) {
        Some((_, ctype, body)) => (
            [
                (header::CONTENT_TYPE, *ctype),
                // Assets change with the binary; a short cache is enough.
                (header::CACHE_CONTROL, "public, max-age=60"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            *body,
        )
            .into_response(),
        None => ApiError::not_found("asset").into_response(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_page_has_its_script() {
        for page in super::super::pages::PAGES {
            let script = format!("{}.js", page.id);
            assert!(
                super::ASSETS.iter().any(|(name, _, _)| *name == script),
                "{script}"
            );
        }
    }

    #[test]
    fn no_script_writes_markup_from_strings() {
        for (name, _, body) in super::ASSETS {
            assert!(!body.contains("innerHTML"), "{name} uses innerHTML");
            assert!(!body.contains("outerHTML"), "{name} uses outerHTML");
            assert!(!body.contains("insertAdjacentHTML"), "{name}");
            assert!(!body.contains("document.write"), "{name}");
        }
    }
}
