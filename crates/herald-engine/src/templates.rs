//! The templates every node renders from: all stored versions, compiled, in
//! one [`Library`] that is rebuilt when the store's census of versions moves
//! (read about every [`POLL_MS`]), and swapped in whole. A version written
//! through this node's API is added at once ([`Templates::refresh`]), so a
//! timer created right after its template finds it.

use std::sync::Arc;
use std::time::Duration;

use herald_core::template::{Library, TemplateBody};
use herald_store::{Store, TemplateCensus, TemplateRecord};
use parking_lot::{Mutex, RwLock};

use crate::loops::stop::Stop;

/// How often every node looks for new template versions.
pub const POLL_MS: u64 = 1_000;

/// The compiled templates of every tenant, and the census they were read at.
#[derive(Default)]
pub struct Templates {
    library: RwLock<Arc<Library>>,
    census: Mutex<Option<TemplateCensus>>,
    /// Serializes rebuilds (the loop and an API write may both ask).
    rebuilding: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Templates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Templates")
            .field("census", &*self.census.lock())
            .finish()
    }
}

impl Templates {
    /// What senders render from now (cheap: an `Arc` clone).
    pub fn library(&self) -> Arc<Library> {
        self.library.read().clone()
    }

    /// Rebuilds the library if the stored census differs from the one it was
    /// built at. Returns whether it rebuilt.
    pub async fn refresh(&self, store: &dyn Store) -> herald_store::Result<bool> {
        let _one = self.rebuilding.lock().await;
        let census = store.template_census().await?;
        if *self.census.lock() == Some(census) {
            return Ok(false);
        }
        let rows = store.all_templates().await?;
        let library = build(&rows);
        *self.library.write() = Arc::new(library);
        *self.census.lock() = Some(census);
        Ok(true)
    }
}

/// Compiles every row; a row that no longer compiles (written by a build
/// with other rules) is left out and logged, and sends that name it end with
/// `template_error`.
fn build(rows: &[TemplateRecord]) -> Library {
    let mut lib = Library::new();
    for r in rows {
        let compiled = serde_json::from_str::<TemplateBody>(&r.body)
            .map_err(|e| e.to_string())
            .and_then(|b| {
                lib.insert(r.tenant, &r.name, r.version, &b)
                    .map_err(|e| e.to_string())
            });
        if let Err(e) = compiled {
            tracing::error!(tenant = r.tenant.0, name = %r.name, version = r.version,
                            error = %e, "a stored template version does not compile; left out");
        }
    }
    lib
}

/// Re-reads the templates until the engine stops.
pub(crate) async fn run(templates: Arc<Templates>, store: Arc<dyn Store>, stop: Arc<Stop>) {
    while !stop.is_stopped() {
        if let Err(e) = templates.refresh(store.as_ref()).await {
            // The templates last read stay in use until the store answers.
            tracing::warn!(error = %e, "reading templates failed");
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(POLL_MS)) => {}
            _ = stop.wait() => {}
        }
    }
}
