//! Searching a tenant's timers, replaying the dead and failed ones, and the
//! dead-letter summary: the filters, and the SQL both backends run for them.
//!
//! The statements are written once here, with the backend's placeholder
//! style passed in, so both stores search the same way through the same
//! indexes (see migration `0009_timer_search`): one tenant's timers in
//! `(due_at, id)` order, narrowed by state or by recipient, or looked up by
//! idempotency key. Other filters (channel, kind, error) narrow the rows an
//! index walk reads.

use std::collections::HashMap;

use herald_core::{TenantId, TimerId, TimerKind, TimerState};

use crate::DueCursor;

/// Which of a tenant's timers a search lists. Every field narrows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimerFilter {
    /// A state. `Firing` is stored only for channels that skip in-doubt
    /// sends (elsewhere a firing timer is stored `Pending`).
    pub state: Option<TimerState>,
    pub channel: Option<String>,
    pub recipient: Option<String>,
    pub idempotency_key: Option<String>,
    pub kind: Option<TimerKind>,
    /// `due_at >= due_after`.
    pub due_after: Option<i64>,
    /// `due_at < due_before`.
    pub due_before: Option<i64>,
}

/// The direction of a listing in `(due_at, id)` order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SortOrder {
    #[default]
    Asc,
    Desc,
}

/// Which dead, failed or in-doubt timers of a tenant a retry replays.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetryFilter {
    /// `Dead`, `Failed` or `InDoubt`; `None` for dead and failed.
    pub state: Option<TimerState>,
    pub channel: Option<String>,
    /// A prefix of `last_error`.
    pub error: Option<String>,
    pub due_after: Option<i64>,
    pub due_before: Option<i64>,
}

impl RetryFilter {
    /// The states to replay, each searched through the state index.
    pub fn states(&self) -> Vec<TimerState> {
        match self.state {
            Some(s) => vec![s],
            None => vec![TimerState::Dead, TimerState::Failed],
        }
    }
}

/// The most dead and failed timers the dead-letter summary reads.
pub const DEAD_LETTER_SCAN: usize = 10_000;

/// Timer ids a dead-letter group names (its newest).
pub const DEAD_LETTER_SAMPLE: usize = 5;

/// Dead or failed timers sharing a channel, a state and a last error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetterGroup {
    pub channel: String,
    pub state: TimerState,
    pub error: Option<String>,
    pub count: u64,
    pub first_due_at: i64,
    pub last_due_at: i64,
    /// The newest few, newest first.
    pub timer_ids: Vec<TimerId>,
}

/// The summary of a tenant's newest dead and failed timers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeadLetters {
    /// Largest groups first.
    pub groups: Vec<DeadLetterGroup>,
    pub scanned: u64,
    /// More dead or failed timers exist than were read.
    pub truncated: bool,
}

/// What the dead-letter summary reads of one timer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeadRow {
    pub id: TimerId,
    pub due_at: i64,
    pub state: TimerState,
    pub channel: String,
    pub last_error: Option<String>,
}

/// Groups the newest `DEAD_LETTER_SCAN` of `rows` (each state's newest
/// first, at most `DEAD_LETTER_SCAN + 1` per state).
pub(crate) fn group_dead(mut rows: Vec<DeadRow>) -> DeadLetters {
    rows.sort_by_key(|r| std::cmp::Reverse((r.due_at, r.id)));
    let truncated = rows.len() > DEAD_LETTER_SCAN;
    rows.truncate(DEAD_LETTER_SCAN);
    let scanned = rows.len() as u64;
    let mut groups: Vec<DeadLetterGroup> = Vec::new();
    let mut index: HashMap<(String, TimerState, Option<String>), usize> = HashMap::new();
    for r in rows {
        let key = (r.channel, r.state, r.last_error);
        match index.get(&key) {
            Some(&i) => {
                let g = &mut groups[i];
                g.count += 1;
                g.first_due_at = g.first_due_at.min(r.due_at);
                if g.timer_ids.len() < DEAD_LETTER_SAMPLE {
                    g.timer_ids.push(r.id);
                }
            }
            None => {
                index.insert(key.clone(), groups.len());
                groups.push(DeadLetterGroup {
                    channel: key.0,
                    state: key.1,
                    error: key.2,
                    count: 1,
                    first_due_at: r.due_at,
                    last_due_at: r.due_at,
                    timer_ids: vec![r.id],
                });
            }
        }
    }
    groups.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(b.last_due_at.cmp(&a.last_due_at))
    });
    DeadLetters {
        groups,
        scanned,
        truncated,
    }
}

/// A value bound to a statement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    Int(i64),
    Text(String),
}

/// A statement and its arguments, in placeholder order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Query {
    pub sql: String,
    pub args: Vec<Arg>,
}

/// How a backend writes placeholders and names the index a search walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// `?N`; the index is named with `INDEXED BY` (SQLite's planner cannot
    /// see how selective a tenant or a state is without statistics).
    Sqlite,
    /// `$N`; the planner picks the index.
    Postgres,
}

/// Builds a `WHERE` clause, numbering placeholders as it goes.
struct Where {
    dialect: Dialect,
    conds: Vec<String>,
    args: Vec<Arg>,
}

impl Where {
    fn new(dialect: Dialect) -> Self {
        Self {
            dialect,
            conds: Vec::new(),
            args: Vec::new(),
        }
    }

    /// The placeholder of the next argument, `arg` bound to it.
    fn bind(&mut self, arg: Arg) -> String {
        // PostgreSQL infers a parameter's type from the column it meets
        // (`INTEGER`, `SMALLINT`): typed placeholders let every integer bind
        // as an `i64`, compared across types as the indexes allow.
        let cast = match &arg {
            Arg::Int(_) => "::int8",
            Arg::Text(_) => "::text",
        };
        self.args.push(arg);
        match self.dialect {
            Dialect::Sqlite => format!("?{}", self.args.len()),
            Dialect::Postgres => format!("${}{cast}", self.args.len()),
        }
    }

    fn cond(&mut self, column_op: &str, arg: Arg) {
        let p = self.bind(arg);
        self.conds.push(format!("{column_op} {p}"));
    }

    fn text(&mut self, column_op: &str, v: &Option<String>) {
        if let Some(v) = v {
            self.cond(column_op, Arg::Text(v.clone()));
        }
    }

    fn int(&mut self, column_op: &str, v: Option<i64>) {
        if let Some(v) = v {
            self.cond(column_op, Arg::Int(v));
        }
    }

    fn sql(&self) -> String {
        self.conds.join(" AND ")
    }
}

/// The index a search of `f` walks on SQLite: the key's, the recipient's, the
/// state's, or the tenant's. PostgreSQL has no index of the tenant's timers
/// across states (migration `0024_tenant_due`): a search of every state
/// walks the state index once per stored state and merges the walks.
pub(crate) fn search_index(f: &TimerFilter) -> &'static str {
    if f.idempotency_key.is_some() {
        "timers_idempotency_key"
    } else if f.recipient.is_some() {
        "timers_tenant_recipient_due"
    } else if f.state.is_some() {
        "timers_tenant_state_due"
    } else {
        "timers_tenant_due"
    }
}

/// Which timers a walk reads: any, or only finished ones (whose unfiled
/// part has an index of its own on SQLite).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reads {
    Any,
    Finished,
}

impl Reads {
    fn of(state: Option<TimerState>) -> Self {
        match state {
            Some(s) if s.code() >= 2 => Reads::Finished,
            _ => Reads::Any,
        }
    }

    /// The SQLite index of the unfiled timers this walk reads, and the
    /// term that lets the planner use it.
    fn unfiled(self) -> (&'static str, &'static str) {
        match self {
            Reads::Any => ("timers_unfiled", "filed = 0"),
            Reads::Finished => ("timers_unfiled_done", "filed = 0 AND state >= 2"),
        }
    }
}

/// The timers matching `conds`, in `order` (which ends in a `LIMIT`), read
/// through one of the search indexes. On SQLite those hold only filed
/// timers (migrations `0042_search_filing`, `0043_unfiled_done`): the walk of the index is merged
/// with a walk of the timers not filed yet (`timers_unfiled`, or for
/// finished ones `timers_unfiled_done`), each cut at the limit. PostgreSQL
/// files every timer as it is inserted.
fn walk(
    dialect: Dialect,
    index: &str,
    reads: Reads,
    cols: &str,
    conds: &str,
    order: &str,
) -> String {
    match dialect {
        Dialect::Sqlite => {
            let (unfiled, term) = reads.unfiled();
            format!(
                "SELECT * FROM (SELECT {cols} FROM timers INDEXED BY {index} \
                 WHERE filed = 1 AND {conds} {order}) \
                 UNION ALL SELECT * FROM (SELECT {cols} FROM timers INDEXED BY {unfiled} \
                 WHERE {term} AND {conds} {order}) {order}"
            )
        }
        Dialect::Postgres => format!("SELECT {cols} FROM timers WHERE {conds} {order}"),
    }
}

/// The statements of one page of a search, to run in order in one snapshot
/// until `limit` rows are read: after a cursor, the rest of the cursor's
/// millisecond, then the later (or, descending, earlier) ones. Two range
/// seeks rather than one row comparison, which SQLite cannot seek with when
/// `id` is the rowid.
pub(crate) fn search(
    dialect: Dialect,
    cols: &str,
    tenant: TenantId,
    f: &TimerFilter,
    after: Option<DueCursor>,
    limit: usize,
    order: SortOrder,
) -> Vec<Query> {
    let (dir, later, beyond) = match order {
        SortOrder::Asc => ("ASC", ">", ">"),
        SortOrder::Desc => ("DESC", "<", "<"),
    };
    let index = search_index(f);
    let merge_states = dialect == Dialect::Postgres && index == "timers_tenant_due";
    let page = |seek: &dyn Fn(&mut Where)| {
        let mut w = Where::new(dialect);
        w.cond("tenant_id =", Arg::Int(i64::from(tenant.0)));
        w.text("idempotency_key =", &f.idempotency_key);
        w.text("recipient =", &f.recipient);
        w.int("state =", f.state.map(|s| s.code()));
        w.text("channel =", &f.channel);
        w.text("kind =", &f.kind.map(|k| k.as_str().to_string()));
        w.int("due_at >=", f.due_after);
        w.int("due_at <", f.due_before);
        seek(&mut w);
        let lim = w.bind(Arg::Int(crate::model::limit_to_db(limit)));
        let order = format!("ORDER BY due_at {dir}, id {dir} LIMIT {lim}");
        let sql = if merge_states {
            // Each state's first `limit` in order, then the first `limit`
            // of those: one bounded walk of the state index each. (`Firing`
            // is stored too, for channels that skip in-doubt sends.)
            let walks: Vec<String> = TimerState::ALL
                .iter()
                .map(|s| {
                    format!(
                        "(SELECT {cols} FROM timers WHERE {} AND state = {} {order})",
                        w.sql(),
                        s.code()
                    )
                })
                .collect();
            format!("SELECT * FROM ({}) AS t {order}", walks.join(" UNION ALL "))
        } else if index == "timers_idempotency_key" {
            // The key's index holds every timer, filed or not.
            format!("SELECT {cols} FROM timers WHERE {} {order}", w.sql())
        } else {
            walk(dialect, index, Reads::of(f.state), cols, &w.sql(), &order)
        };
        Query { sql, args: w.args }
    };
    match after {
        None => vec![page(&|_| {})],
        Some(c) => vec![
            page(&|w| {
                w.cond("due_at =", Arg::Int(c.due_at));
                w.cond(&format!("id {later}"), Arg::Int(c.id));
            }),
            page(&|w| w.cond(&format!("due_at {beyond}"), Arg::Int(c.due_at))),
        ],
    }
}

/// The newest dead-letter rows of one state (at most `DEAD_LETTER_SCAN + 1`,
/// so the caller can tell the scan was cut short).
pub(crate) fn dead_rows(
    dialect: Dialect,
    tenant: TenantId,
    state: TimerState,
    channel: &Option<String>,
) -> Query {
    let mut w = Where::new(dialect);
    w.cond("tenant_id =", Arg::Int(i64::from(tenant.0)));
    w.cond("state =", Arg::Int(state.code()));
    w.text("channel =", channel);
    let lim = w.bind(Arg::Int(DEAD_LETTER_SCAN as i64 + 1));
    Query {
        sql: walk(
            dialect,
            STATE_INDEX,
            Reads::Finished,
            "id, due_at, state, channel, last_error",
            &w.sql(),
            &format!("ORDER BY due_at DESC, id DESC LIMIT {lim}"),
        ),
        args: w.args,
    }
}

/// The conditions picking the timers of one state that `f` replays.
fn retry_where(dialect: Dialect, tenant: TenantId, state: TimerState, f: &RetryFilter) -> Where {
    let mut w = Where::new(dialect);
    w.cond("tenant_id =", Arg::Int(i64::from(tenant.0)));
    w.cond("state =", Arg::Int(state.code()));
    w.text("channel =", &f.channel);
    w.int("due_at >=", f.due_after);
    w.int("due_at <", f.due_before);
    if let Some(prefix) = &f.error {
        let p = w.bind(Arg::Text(prefix.clone()));
        w.conds
            .push(format!("substr(last_error, 1, length({p})) = {p}"));
    }
    w
}

/// The index of a tenant's timers by state.
const STATE_INDEX: &str = "timers_tenant_state_due";

/// The oldest due (at most `limit`) timers of one state that `f` replays,
/// as `due_cols`. The caller then replays them by id (a join of the update
/// with this search makes PostgreSQL's planner scan the table).
pub(crate) fn retry_pick(
    dialect: Dialect,
    due_cols: &str,
    tenant: TenantId,
    state: TimerState,
    f: &RetryFilter,
    limit: usize,
) -> Query {
    let mut w = retry_where(dialect, tenant, state, f);
    let lim = w.bind(Arg::Int(crate::model::limit_to_db(limit)));
    Query {
        sql: walk(
            dialect,
            STATE_INDEX,
            Reads::Finished,
            due_cols,
            &w.sql(),
            &format!("ORDER BY due_at, id LIMIT {lim}"),
        ),
        args: w.args,
    }
}

/// Whether any timer of one state still matches `f`: its first pick.
pub(crate) fn retry_more(
    dialect: Dialect,
    due_cols: &str,
    tenant: TenantId,
    state: TimerState,
    f: &RetryFilter,
) -> Query {
    retry_pick(dialect, due_cols, tenant, state, f, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: i64, due_at: i64, channel: &str, error: &str) -> DeadRow {
        DeadRow {
            id,
            due_at,
            state: TimerState::Dead,
            channel: channel.into(),
            last_error: Some(error.into()),
        }
    }

    #[test]
    fn dead_letters_group_largest_first_with_the_newest_ids() {
        let mut rows: Vec<DeadRow> = (1..=7).map(|i| row(i, i * 10, "hook", "500")).collect();
        rows.push(row(8, 5, "hook", "404"));
        let d = group_dead(rows);
        assert_eq!((d.scanned, d.truncated), (8, false));
        assert_eq!(d.groups.len(), 2);
        let g = &d.groups[0];
        assert_eq!((g.count, g.first_due_at, g.last_due_at), (7, 10, 70));
        assert_eq!(g.timer_ids, vec![7, 6, 5, 4, 3]);
        assert_eq!(d.groups[1].error.as_deref(), Some("404"));
    }

    #[test]
    fn a_search_after_a_cursor_seeks_twice() {
        let f = TimerFilter {
            state: Some(TimerState::Dead),
            ..TimerFilter::default()
        };
        let c = DueCursor { due_at: 5, id: 9 };
        let q = search(
            Dialect::Postgres,
            "id",
            TenantId(1),
            &f,
            Some(c),
            10,
            SortOrder::Desc,
        );
        assert_eq!(q.len(), 2);
        assert!(
            q[0].sql.contains("due_at = $3::int8 AND id < $4::int8"),
            "{}",
            q[0].sql
        );
        assert!(q[1].sql.contains("due_at < $3::int8"), "{}", q[1].sql);
        assert!(
            q[1].sql
                .ends_with("ORDER BY due_at DESC, id DESC LIMIT $4::int8")
        );
        assert_eq!(q[1].args.len(), 4);
    }
}
