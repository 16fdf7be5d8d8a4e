//! Tenants: the unit of isolation. Every stored object belongs to one; one
//! tenant's keys see only its own data, and dispatch is fair between them.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A tenant as the store numbers it. Names live in the store; the number is
/// what rows, the wheel and the dispatch queues carry (4 bytes, `Copy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TenantId(pub u32);

/// The tenant every row written before tenants existed belongs to, and the one
/// an open (development) server acts as.
pub const DEFAULT_TENANT: TenantId = TenantId(1);

/// The name of [`DEFAULT_TENANT`].
pub const DEFAULT_TENANT_NAME: &str = "default";

/// The longest tenant name.
pub const MAX_TENANT_NAME: usize = 64;

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Why a tenant name is refused, or `None` when it is fine: 1 to 64
/// characters of `A-Z a-z 0-9 _ - .`.
pub fn tenant_name_problem(name: &str) -> Option<String> {
    if name.is_empty() || name.len() > MAX_TENANT_NAME {
        return Some(format!(
            "a tenant name is 1 to {MAX_TENANT_NAME} characters, not {}",
            name.len()
        ));
    }
    name.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .map(|c| format!("a tenant name is made of A-Z a-z 0-9 _ - . (found {c:?})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(tenant_name_problem("shop"), None);
        assert_eq!(tenant_name_problem("crm-2.eu_west"), None);
        assert!(tenant_name_problem("").is_some());
        assert!(tenant_name_problem("a b").is_some());
        assert!(tenant_name_problem("ü").is_some());
        assert!(tenant_name_problem(&"x".repeat(65)).is_some());
        assert_eq!(tenant_name_problem(&"x".repeat(64)), None);
        assert_eq!(DEFAULT_TENANT.to_string(), "1");
    }
}
