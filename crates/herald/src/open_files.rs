//! The process's open-file limit, raised at start.
//!
//! Every connection, store file and outbound provider connection takes a
//! descriptor, and many supervisors start a service with a soft limit of
//! 1,024, far under `api.max_connections`. The soft limit may be raised up
//! to the hard one without privileges, so a node does that itself rather
//! than relying on each supervisor's configuration.

// `rlim_t` is `u64` on Linux but not on every Unix, so the casts stay.
#![allow(clippy::unnecessary_cast)]

/// Descriptors kept for everything but API connections: the store, its
/// WAL and pool, provider connections, the metrics and telemetry clients.
const HEADROOM: u64 = 1024;
/// The most a node asks for when the hard limit is unlimited.
const CEILING: u64 = 1 << 20;

/// What the limit was and became.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFiles {
    pub before: u64,
    pub after: u64,
    pub hard: u64,
}

impl OpenFiles {
    /// Whether `max_connections` API connections fit beside the headroom.
    pub fn fits(&self, max_connections: usize) -> bool {
        self.after >= (max_connections as u64).saturating_add(HEADROOM)
    }
}

/// Raises the soft open-file limit to the hard one (at most [`CEILING`]);
/// never lowers it. An error reading or setting it is returned, not fatal.
#[cfg(unix)]
pub fn raise() -> std::io::Result<OpenFiles> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit for the call's duration.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let value = |v: libc::rlim_t| {
        if v == libc::RLIM_INFINITY {
            u64::MAX
        } else {
            v as u64
        }
    };
    let (before, hard) = (value(lim.rlim_cur), value(lim.rlim_max));
    let target = hard.min(CEILING).max(before);
    if target > before {
        let new = libc::rlimit {
            rlim_cur: target as libc::rlim_t,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: `new` is a valid rlimit; raising the soft limit up to the
        // hard one needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(OpenFiles {
        before,
        after: target,
        hard,
    })
}

#[cfg(not(unix))]
pub fn raise() -> std::io::Result<OpenFiles> {
    Err(std::io::Error::other("open-file limits are Unix only"))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn soft() -> u64 {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        lim.rlim_cur as u64
    }

    #[test]
    fn a_low_soft_limit_is_raised_to_the_hard_one() {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        let hard = lim.rlim_max;
        if hard != libc::RLIM_INFINITY && (hard as u64) < 512 {
            return; // nothing to raise on a machine this tight
        }
        let low = libc::rlimit {
            rlim_cur: 256,
            rlim_max: hard,
        };
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &low) }, 0);
        let got = raise().unwrap();
        assert_eq!(got.before, 256);
        assert!(got.after > 256, "{got:?}");
        assert_eq!(soft(), got.after);
        assert!(got.after <= CEILING);
        // A second call finds it raised and leaves it.
        let again = raise().unwrap();
        assert_eq!((again.before, again.after), (got.after, got.after));
        assert!(
            !OpenFiles {
                before: 256,
                after: 1024,
                hard: 1024
            }
            .fits(10_000)
        );
        assert!(
            OpenFiles {
                before: 256,
                after: 65_536,
                hard: 65_536
            }
            .fits(10_000)
        );
    }
}
