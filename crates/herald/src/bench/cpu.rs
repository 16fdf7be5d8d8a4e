//! The CPU meter: CPU seconds over a phase of a scenario, split between the
//! nodes under test, the bench itself (sink and clients), the PostgreSQL
//! server the bench started, and everything else on the machine, from `/proc`.

use std::path::{Path, PathBuf};

use super::harness::Deployment;

/// CPU seconds (user + system) a process has used so far, from `/proc`.
fn cpu_seconds(pid: Option<u32>) -> Option<f64> {
    let path = match pid {
        Some(p) => format!("/proc/{p}/stat"),
        None => "/proc/self/stat".to_string(),
    };
    let stat = std::fs::read_to_string(path).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// CPU seconds of the whole machine (all processes), from `/proc/stat`.
fn machine_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?;
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    let busy: f64 = line
        .split_whitespace()
        .skip(1)
        .enumerate()
        .filter(|(i, _)| matches!(i, 0 | 1 | 2 | 5 | 6 | 7))
        .filter_map(|(_, v)| v.parse::<f64>().ok())
        .sum();
    Some(busy / 100.0)
}

/// CPU seconds of a PostgreSQL server: the postmaster, its live backends, and
/// the backends that already exited (counted in the postmaster's reaped
/// children time).
fn pg_cpu_seconds(data_dir: &Path) -> Option<f64> {
    let pid: u32 = std::fs::read_to_string(data_dir.join("postmaster.pid"))
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()?;
    let fields = |p: &str| -> Option<Vec<f64>> {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        let rest = &stat[stat.rfind(')')? + 2..];
        Some(
            rest.split_whitespace()
                .map(|v| v.parse::<f64>().unwrap_or(0.0))
                .collect(),
        )
    };
    let own = fields(&pid.to_string())?;
    // utime stime cutime cstime are fields 11..=14 after the name.
    let mut ticks: f64 = own.get(11..15)?.iter().sum();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(p) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if let Some(f) = fields(p)
            && f.get(1).copied() == Some(f64::from(pid))
        {
            ticks += f.get(11..13).map_or(0.0, |t| t.iter().sum());
        }
    }
    Some(ticks / 100.0)
}

impl CpuUse {
    pub(super) fn describe(&self, n: usize) -> String {
        let per = |s: f64| s * 1e6 / n.max(1) as f64;
        format!(
            "nodes {:.1} s, sink+bench {:.1} s, postgres {:.1} s, other load {:.1} s \
             ({:.0} / {:.0} / {:.0} us per item)",
            self.nodes,
            self.own,
            self.pg,
            self.other,
            per(self.nodes),
            per(self.own),
            per(self.pg)
        )
    }
}

/// CPU used over a phase by the nodes, by this process (sink and clients), by
/// the PostgreSQL server the bench started (0 on SQLite or an existing
/// database), and by the whole machine (the rest is other load, not ours).
pub(super) struct CpuMeter {
    pids: Vec<u32>,
    pg_dir: Option<PathBuf>,
    nodes0: f64,
    own0: f64,
    pg0: f64,
    all0: f64,
}

/// CPU seconds over a phase, by whom.
pub(super) struct CpuUse {
    pub(super) nodes: f64,
    pub(super) own: f64,
    pub(super) pg: f64,
    /// Busy time of the machine outside all of the above.
    pub(super) other: f64,
}

impl CpuMeter {
    pub(super) fn start(d: &Deployment) -> Self {
        let pids = d.pids();
        let pg_dir =
            d.pg.as_ref()
                .and_then(|p| p.data_dir())
                .map(Path::to_path_buf);
        Self {
            nodes0: pids.iter().filter_map(|p| cpu_seconds(Some(*p))).sum(),
            own0: cpu_seconds(None).unwrap_or(0.0),
            pg0: pg_dir.as_deref().and_then(pg_cpu_seconds).unwrap_or(0.0),
            all0: machine_cpu_seconds().unwrap_or(0.0),
            pids,
            pg_dir,
        }
    }

    /// What each used since `start`.
    pub(super) fn read(&self) -> CpuUse {
        let nodes = self
            .pids
            .iter()
            .filter_map(|p| cpu_seconds(Some(*p)))
            .sum::<f64>()
            - self.nodes0;
        let own = cpu_seconds(None).unwrap_or(0.0) - self.own0;
        let pg = self
            .pg_dir
            .as_deref()
            .and_then(pg_cpu_seconds)
            .map_or(0.0, |c| c - self.pg0);
        let all = machine_cpu_seconds().unwrap_or(0.0) - self.all0;
        CpuUse {
            nodes,
            own,
            pg,
            other: (all - nodes - own - pg).max(0.0),
        }
    }
}
