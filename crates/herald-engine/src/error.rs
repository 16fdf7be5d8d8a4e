//! The error the engine answers its callers with ([`EngineError`]): a store
//! failure, or an engine shutting down. Its own module so that the loops
//! that report it (the writer) and the API that returns it share one type.

use std::sync::Arc;

/// Why the engine could not do what it was asked.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EngineError {
    /// Shared: one store failure can answer several requests of a batch.
    #[error("store: {0}")]
    Store(Arc<herald_store::StoreError>),
    #[error("the engine is shutting down")]
    ShuttingDown,
}

impl From<herald_store::StoreError> for EngineError {
    fn from(e: herald_store::StoreError) -> Self {
        EngineError::Store(Arc::new(e))
    }
}
