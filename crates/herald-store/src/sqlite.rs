//! SQLite backend (being written).
use crate::{Result, StoreOptions};
pub struct SqliteStore;
impl SqliteStore {
    pub async fn open(_path: &str, _opts: &StoreOptions) -> Result<Self> { todo!() }
    pub async fn open_memory(_opts: &StoreOptions) -> Result<Self> { todo!() }
}
