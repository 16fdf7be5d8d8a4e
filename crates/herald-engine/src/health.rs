//! What `/readyz` asks the engine: are its core loops running, and does this
//! node hold its leases.

use serde::Serialize;

/// One kind of core loop (a channel's senders count as one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoopHealth {
    pub name: String,
    /// Every loop of this name is running.
    pub alive: bool,
    /// Deaths since start that were followed by a restart.
    pub restarts: u64,
}

/// The engine's own view of whether it can do its work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Health {
    /// Every supervised loop, by name.
    pub loops: Vec<LoopHealth>,
    /// A membership round (heartbeat and renewal) completed within the lease
    /// time: the shards this node fires are still its own.
    pub leases_current: bool,
    pub owned_shards: usize,
    /// A loop that cannot be restarted died: the process should exit.
    pub failed: bool,
}

impl Health {
    pub fn ok(&self) -> bool {
        self.problems().is_empty()
    }

    /// What is wrong, one short line each, naming the failing part.
    pub fn problems(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .loops
            .iter()
            .filter(|l| !l.alive)
            .map(|l| format!("loop {} is not running", l.name))
            .collect();
        if !self.leases_current {
            out.push("leases: no membership round completed within the lease time".into());
        }
        if self.failed {
            out.push("engine: a core loop that cannot restart died".into());
        }
        out
    }
}
