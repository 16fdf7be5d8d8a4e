//! The console's pages: one HTML shell each, filled in by its script.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

use super::escape;
use crate::access::{KeyError, Mode, SESSION_COOKIE, Scopes, cookie_value};
use crate::http::state::AppState;

/// A page of the console.
pub struct Page {
    /// Its script is `/ui/assets/<id>.js`; its path `/ui/<id>`.
    pub id: &'static str,
    pub title: &'static str,
    /// Whether only the admin can read what it shows (its API needs the
    /// admin scope): left out of the navigation of every other key.
    pub admin: bool,
}

/// Every page, in the order of the navigation bar.
pub const PAGES: &[Page] = &[
    Page {
        id: "overview",
        title: "Overview",
        admin: false,
    },
    Page {
        id: "timers",
        title: "Timers",
        admin: false,
    },
    Page {
        id: "dead-letters",
        title: "Dead letters",
        admin: false,
    },
    Page {
        id: "reminders",
        title: "Reminders",
        admin: false,
    },
    Page {
        id: "subscribers",
        title: "Subscribers",
        admin: false,
    },
    Page {
        id: "users",
        title: "Users",
        admin: false,
    },
    Page {
        id: "templates",
        title: "Templates",
        admin: false,
    },
    Page {
        id: "rules",
        title: "Rules",
        admin: false,
    },
    Page {
        id: "jobs",
        title: "Jobs",
        admin: false,
    },
    Page {
        id: "channels",
        title: "Channels",
        admin: true,
    },
    Page {
        id: "cluster",
        title: "Cluster",
        admin: true,
    },
    Page {
        id: "audit",
        title: "Audit",
        admin: false,
    },
];

/// What a shell tells its script about the session.
struct Viewer {
    csrf: String,
    tenant: String,
    key_name: String,
    admin: bool,
    /// The key's scopes by name: the script offers only what they allow
    /// (the API refuses the rest anyway).
    scopes: String,
    protected: bool,
}

/// The list pages with a "New …" button, which load the forms' script.
const WITH_FORMS: &[&str] = &["timers", "reminders", "rules", "jobs"];

pub async fn overview(st: State<AppState>, headers: HeaderMap) -> Response {
    render(&st, &headers, &PAGES[0]).await
}

pub async fn page(st: State<AppState>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    match PAGES.iter().find(|p| p.id == id) {
        Some(p) => render(&st, &headers, p).await,
        None => (StatusCode::NOT_FOUND, shell_headers(), not_found_html()).into_response(),
    }
}

/// The shell of `page` for the request's session; to the login form
/// without one in protected mode.
async fn render(st: &AppState, headers: &HeaderMap, page: &Page) -> Response {
    let viewer = match viewer(st, headers).await {
        Ok(v) => v,
        Err(KeyError::Invalid) => return Redirect::to("/ui/login").into_response(),
        Err(KeyError::Unavailable(e)) => {
            tracing::warn!(error = %e, "console session could not be checked");
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                shell_headers(),
                "<!doctype html><title>Herald</title><p>The API keys could not be read; try again.</p>",
            )
                .into_response();
        }
    };
    if page.admin && !viewer.admin {
        return (
            StatusCode::FORBIDDEN,
            shell_headers(),
            format!(
                "<!doctype html><title>Herald · {title}</title><p>The {title} page needs the admin key; \
                 this session's key cannot read it. <a href=\"/ui\">Overview</a></p>",
                title = escape(page.title)
            ),
        )
            .into_response();
    }
    (StatusCode::OK, shell_headers(), shell(page, &viewer)).into_response()
}

async fn viewer(st: &AppState, headers: &HeaderMap) -> Result<Viewer, KeyError> {
    if st.access.mode() == Mode::Open {
        return Ok(Viewer {
            csrf: String::new(),
            tenant: herald_core::DEFAULT_TENANT_NAME.to_string(),
            key_name: String::new(),
            admin: true,
            scopes: Scopes::all().names().join(" "),
            protected: false,
        });
    }
    let value = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|h| cookie_value(h, SESSION_COOKIE))
        .ok_or(KeyError::Invalid)?;
    let session = st.access.session(value, st.clock.now_ms()).await?;
    Ok(Viewer {
        csrf: session.csrf_token(),
        tenant: session.caller.tenant_name.clone(),
        key_name: session.caller.key_name.clone().unwrap_or_default(),
        admin: session.caller.admin,
        scopes: session.caller.scopes.names().join(" "),
        protected: true,
    })
}

/// Headers of every HTML answer: never cached (it carries the CSRF
/// token), never framed, scripts from this origin only.
pub fn shell_headers() -> [(header::HeaderName, &'static str); 5] {
    [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CACHE_CONTROL, "no-store"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "same-origin"),
    ]
}

fn shell(page: &Page, v: &Viewer) -> String {
    let mut nav = String::new();
    for p in PAGES.iter().filter(|p| v.admin || !p.admin) {
        let current = if p.id == page.id {
            " aria-current=\"page\""
        } else {
            ""
        };
        let href = if p.id == "overview" {
            "/ui".to_string()
        } else {
            format!("/ui/{}", p.id)
        };
        nav.push_str(&format!(
            "<a href=\"{href}\"{current}>{}</a>",
            escape(p.title)
        ));
    }
    // The API's own reference, for what the pages do not show.
    nav.push_str("<a href=\"/docs\" class=\"api-docs\">API</a>");
    let logout = if v.protected {
        "<form method=\"post\" action=\"/ui/logout\" class=\"logout\"><button type=\"submit\">Log out</button></form>"
    } else {
        ""
    };
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="{csrf}">
<meta name="herald-tenant" content="{tenant}">
<meta name="herald-key" content="{key}">
<meta name="herald-admin" content="{admin}">
<meta name="herald-scopes" content="{scopes}">
<meta name="herald-mode" content="{mode}">
<title>Herald · {title}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/assets/app.css">
</head>
<body data-page="{id}">
<header class="top">
<span class="brand">Herald</span>
<nav>{nav}</nav>
<span class="who" id="who"></span>
{logout}
</header>
<main>
<h1>{title}</h1>
<div id="flash" role="status"></div>
<div id="content"></div>
</main>
<script src="/ui/assets/app.js"></script>
{forms}<script src="/ui/assets/{id}.js"></script>
</body>
</html>
"#,
        csrf = escape(&v.csrf),
        tenant = escape(&v.tenant),
        key = escape(&v.key_name),
        admin = v.admin,
        scopes = escape(&v.scopes),
        forms = if WITH_FORMS.contains(&page.id) {
            "<script src=\"/ui/assets/forms.js\"></script>\n"
        } else {
            ""
        },
        mode = if v.protected { "protected" } else { "open" },
        title = escape(page.title),
        id = escape(page.id),
    )
}

fn not_found_html() -> &'static str {
    "<!doctype html><title>Herald · not found</title><p>No such page. <a href=\"/ui\">Overview</a></p>"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_escapes_what_it_is_given() {
        let v = Viewer {
            csrf: "tok\"<".into(),
            tenant: "<shop>".into(),
            key_name: "k".into(),
            admin: false,
            scopes: "read write".into(),
            protected: true,
        };
        let html = shell(&PAGES[1], &v);
        assert!(html.contains("content=\"tok&quot;&lt;\""), "{html}");
        assert!(html.contains("&lt;shop&gt;"));
        assert!(!html.contains("<shop>"));
        assert!(html.contains("/ui/assets/timers.js"));
        // A list page with a "New …" button loads the forms before its own script.
        let forms = html.find("/ui/assets/forms.js").expect("forms.js");
        assert!(forms < html.find("/ui/assets/timers.js").unwrap_or(0));
        assert!(html.contains("name=\"herald-scopes\" content=\"read write\""));
        assert!(html.contains("action=\"/ui/logout\""));
    }
}
