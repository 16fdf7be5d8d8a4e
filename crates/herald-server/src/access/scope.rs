//! What a key may do: five scopes, and a key's set of them.

use std::fmt;

/// One permission a route needs. A key holds a set of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Every `GET` of the tenant's own data.
    Read,
    /// Timers, subjects, reminders: what reaches one recipient.
    Write,
    /// Audiences, jobs, rules: whatever sends to many.
    Campaign,
    /// Keys, every tenant's audit, channel actions, cluster views.
    Admin,
    /// `GET /metrics`.
    Metrics,
}

impl Scope {
    pub const ALL: [Scope; 5] = [
        Scope::Read,
        Scope::Write,
        Scope::Campaign,
        Scope::Admin,
        Scope::Metrics,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Campaign => "campaign",
            Scope::Admin => "admin",
            Scope::Metrics => "metrics",
        }
    }

    /// The scope of that name (as keys store and the API spells them).
    pub fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == name)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of scopes, as a bit set: copied into every request's caller.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Scopes(u8);

impl Scopes {
    pub const NONE: Scopes = Scopes(0);

    /// Every scope: the admin key, and open mode.
    pub fn all() -> Scopes {
        Scope::ALL.into_iter().collect()
    }

    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    pub fn with(self, scope: Scope) -> Scopes {
        Scopes(self.0 | scope.bit())
    }

    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL.into_iter().filter(move |s| self.contains(*s))
    }

    /// The names, in the order of [`Scope::ALL`].
    pub fn names(self) -> Vec<&'static str> {
        self.iter().map(Scope::as_str).collect()
    }

    /// Scopes from their names; the first unknown name is the error.
    pub fn parse<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Scopes, String> {
        names.into_iter().try_fold(Scopes::NONE, |set, n| {
            Scope::parse(n).map(|s| set.with(s)).ok_or_else(|| {
                let known: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
                format!("unknown scope {n:?}; scopes are {}", known.join(", "))
            })
        })
    }
}

impl FromIterator<Scope> for Scopes {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Self {
        iter.into_iter().fold(Scopes::NONE, Scopes::with)
    }
}

impl fmt::Debug for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.names()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sets_hold_what_was_put() {
        for s in Scope::ALL {
            assert_eq!(Scope::parse(s.as_str()), Some(s));
        }
        assert_eq!(Scope::parse("Write"), None);
        let set = Scopes::parse(["write", "read"]).unwrap();
        assert!(set.contains(Scope::Read) && set.contains(Scope::Write));
        assert!(!set.contains(Scope::Campaign));
        assert_eq!(set.names(), ["read", "write"]);
        assert_eq!(Scopes::all().names().len(), 5);
        let e = Scopes::parse(["read", "root"]).unwrap_err();
        assert!(e.contains("\"root\"") && e.contains("metrics"), "{e}");
    }
}
