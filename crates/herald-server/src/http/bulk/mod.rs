//! The bulk NDJSON endpoints (`POST /v1/timers:bulk`, `/v1/reminders:bulk`)
//! as one pipeline: lines are read from the streamed body ([`lines`]),
//! checked, and committed in chunks as they come, so what a request holds
//! is two chunks and its answers, charged to the node's [`BodyBudget`].
//! One chunk commits while the next is read and checked: a full chunk is
//! handed to the writer, and its answers are taken only when the next one
//! is full (or the body ends), so parsing and committing overlap instead of
//! taking turns on an otherwise idle core.
//!
//! A request that crosses `bulk_max_lines` or `bulk_max_bytes` is stopped
//! there: the lines before it are committed and answered, and the answer is
//! a `413` whose body carries those per-line answers (see [`cut_short`]).

mod answers;
pub mod lines;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use herald_core::TenantId;
use herald_store::{WriteOp, WriteResult};
use serde::Serialize;
use utoipa::ToSchema;

use herald_engine::QueuedWrite;

use crate::http::budget::{BodyBudget, Lease, Overloaded};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::state::AppState;
use answers::Answers;
use lines::{Limits, Line, LineReader};

/// Most a bulk request is admitted with: room for a chunk of parsed lines
/// (committed once it holds half of this) and its answers. Less when the
/// budget is small (an eighth of it), so that several requests stream at once.
pub const BULK_RESERVE: u64 = 8 * 1024 * 1024;
/// What a pending line is charged besides twice its bytes (its parsed form
/// and the record the store hands back are about its size each).
const LINE_OVERHEAD: u64 = 256;

/// What one bulk route does with its lines.
pub trait BulkRoute {
    type Item;
    /// Whether a line may create a timer, and so is charged to the tenant's
    /// timer quota (given back when it did not).
    const CHARGED: bool = true;
    /// Checks one line.
    fn parse(&self, line: &[u8]) -> Result<Self::Item, ApiError>;
    /// The write of a checked line.
    fn op(&self, item: Self::Item) -> WriteOp;
    /// Writes the answer of a written line (one JSON object, no newline)
    /// and says whether it created a timer (else its quota is given back).
    fn answer(&self, line: usize, result: WriteResult, out: &mut Vec<u8>) -> bool;
}

// A refused line as it is, and the part every endpoint's own line flattens
// in (its fields and `error` never meet in one line).
/// One answer line of a bulk endpoint (NDJSON), in input order.
#[derive(Serialize, ToSchema)]
#[schema(as = BulkLineResult)]
pub struct LineResult<'a> {
    /// 1-based line number of the request.
    #[schema(value_type = u64)]
    pub line: usize,
    /// The status the single endpoint would have answered.
    pub status: u16,
    // Absent, never `null`, when the line was not refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<ErrorBody>, nullable = false)]
    pub error: Option<&'a ErrorBody>,
}

impl<'a> LineResult<'a> {
    /// The line of a written answer.
    pub fn ok(line: usize, status: u16) -> Self {
        Self {
            line,
            status,
            error: None,
        }
    }

    /// The line of a refusal.
    pub fn refused(line: usize, e: &'a ApiError) -> Self {
        Self {
            line,
            status: e.status.as_u16(),
            error: Some(&e.body),
        }
    }
}

/// A line read and not yet answered.
enum Entry<T> {
    Valid(usize, T),
    Refused(usize, ApiError),
}

/// A line of a chunk, as it will be answered: a written one by its number,
/// a refused one with its error.
type ChunkLine = Result<usize, (usize, ApiError)>;

/// A chunk handed to the writer and not yet answered.
struct InFlight {
    /// Its ops committing (`None` when it had none), or why they were not
    /// handed over.
    write: Result<Option<QueuedWrite>, ApiError>,
    lines: Vec<ChunkLine>,
    n_ops: usize,
    /// What its lines are charged until they are answered.
    bytes: u64,
}

/// One bulk request on its way.
struct Run<'a, R: BulkRoute> {
    route: &'a R,
    st: &'a AppState,
    tenant: TenantId,
    lease: Lease,
    /// Lines read since the last commit, in order.
    pending: Vec<Entry<R::Item>>,
    valid: usize,
    /// What the pending lines are charged.
    pending_bytes: u64,
    /// The chunk committing while `pending` fills.
    in_flight: Option<InFlight>,
    /// The answers so far, NDJSON.
    out: Answers,
    answered: usize,
    over_quota: bool,
    /// Once the store has failed, later lines are answered with its error.
    failed: Option<ApiError>,
}

/// Serves a bulk request: admission against the budget, then lines in,
/// committed chunk by chunk, answers out.
pub async fn serve<R: BulkRoute>(
    route: &R,
    st: &AppState,
    tenant: TenantId,
    budget: &Arc<BodyBudget>,
    headers: &HeaderMap,
    body: Body,
) -> Response {
    let api = &st.api;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > api.bulk_max_bytes as u64) {
        return ApiError::too_large(api.bulk_max_bytes).into_response();
    }
    // A small body is admitted with what it can hold; a large one with
    // the reserve, and it streams. Never less than one line and a frame.
    let room = api.max_timer_bytes as u64 + 64 * 1024;
    let reserve = (budget.limit() / 8).clamp(room, BULK_RESERVE.max(room));
    let floor = declared.map_or(reserve, |n| (n.saturating_mul(2) + room).min(reserve));
    let lease = match budget.lease(floor) {
        Ok(l) => l,
        Err(o) => return o.into_response(),
    };
    let mut reader = LineReader::new(
        body,
        Limits {
            max_bytes: api.bulk_max_bytes,
            max_lines: api.bulk_max_lines,
            max_line_bytes: api.max_timer_bytes,
        },
    );
    let mut run = Run {
        route,
        st,
        tenant,
        lease,
        pending: Vec::new(),
        valid: 0,
        pending_bytes: 0,
        in_flight: None,
        out: Answers::default(),
        answered: 0,
        over_quota: false,
        failed: None,
    };
    let stop = loop {
        match reader.next().await {
            Ok(Some(line)) => {
                if let Err(e) = run.take(line).await {
                    break Some(e);
                }
            }
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    // What was read before a stop is committed and answered too.
    run.commit().await;
    match stop {
        None => run.finish(),
        Some(e) => {
            tracing::info!(
                code = e.body.code,
                lines = reader.lines_given(),
                answered = run.answered,
                "bulk request stopped"
            );
            cut_short(e, run.answered, &run.out, run.over_quota)
        }
    }
}

impl<R: BulkRoute> Run<'_, R> {
    /// Returns quota charged for lines that created no timer.
    fn give_back(&self, n: u64) {
        if R::CHARGED {
            self.st.quotas.give_back(self.tenant, n);
        }
    }

    /// Room the chunk may fill before it is committed.
    fn chunk_room(&self) -> u64 {
        self.lease.floor() / 2
    }

    fn used(&self) -> u64 {
        let in_flight = self.in_flight.as_ref().map_or(0, |f| f.bytes);
        self.pending_bytes + in_flight + self.out.len() as u64
    }

    /// Checks one line into the pending chunk; commits the chunk when full.
    async fn take(&mut self, line: Line) -> Result<(), ApiError> {
        let (entry, cost) = match line {
            Line::TooLong(n) => (
                Entry::Refused(n, ApiError::too_large(self.st.api.max_timer_bytes)),
                LINE_OVERHEAD,
            ),
            Line::Text(n, text) => {
                let cost = 2 * text.len() as u64 + LINE_OVERHEAD;
                let entry = match self.route.parse(&text) {
                    Err(e) => Entry::Refused(n, e),
                    Ok(item) if !R::CHARGED => Entry::Valid(n, item),
                    Ok(item) => match self.st.quotas.admit(self.tenant, 1) {
                        // Lines past the tenant's quota are refused one by one.
                        Err(over) => {
                            self.over_quota = true;
                            Entry::Refused(n, over.error())
                        }
                        Ok(()) => Entry::Valid(n, item),
                    },
                };
                (entry, cost)
            }
        };
        if let Entry::Valid(..) = entry {
            self.valid += 1;
        }
        self.pending.push(entry);
        self.pending_bytes += cost;
        if self.valid >= self.st.api.bulk_chunk.max(1) || self.pending_bytes >= self.chunk_room() {
            self.send().await;
        }
        // The chunks and answers grow past the floor only if the budget has
        // room; committing both chunks first frees them.
        if self.lease.cover(self.used()).is_err() {
            self.commit().await;
            self.lease
                .cover(self.used())
                .map_err(|Overloaded| Overloaded.error())?;
        }
        Ok(())
    }

    /// Commits every line read so far and answers them in order.
    async fn commit(&mut self) {
        self.send().await;
        self.settle().await;
    }

    /// Hands the pending chunk to the writer (its lines commit on their
    /// own, in one transaction with whatever else is queued), after
    /// answering the chunk before it: one chunk commits at a time, and
    /// answers stay in line order.
    async fn send(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        self.settle().await;
        let entries = std::mem::take(&mut self.pending);
        let mut ops = Vec::with_capacity(self.valid);
        let mut lines = Vec::with_capacity(entries.len());
        for e in entries {
            match e {
                Entry::Valid(n, item) => {
                    ops.push(self.route.op(item));
                    lines.push(Ok(n));
                }
                Entry::Refused(n, e) => lines.push(Err((n, e))),
            }
        }
        let n_ops = ops.len();
        let write = match (&self.failed, n_ops) {
            (_, 0) => Ok(None),
            // Once the store failed, later chunks are not tried.
            (Some(e), _) => Err(e.clone()),
            (None, _) => self
                .st
                .engine
                .queue_each(ops)
                .await
                .map(Some)
                .map_err(ApiError::from),
        };
        self.in_flight = Some(InFlight {
            write,
            lines,
            n_ops,
            bytes: self.pending_bytes,
        });
        self.valid = 0;
        self.pending_bytes = 0;
    }

    /// Waits for the chunk in flight to commit and answers its lines in
    /// order.
    async fn settle(&mut self) {
        let Some(InFlight {
            write,
            lines,
            n_ops,
            ..
        }) = self.in_flight.take()
        else {
            return;
        };
        // Each line commits on its own: one the store refuses fails alone.
        let written: Result<Vec<Result<WriteResult, ApiError>>, ApiError> = match write {
            Ok(None) => Ok(Vec::new()),
            Ok(Some(queued)) => queued
                .results()
                .await
                .map(|rs| rs.into_iter().map(|r| r.map_err(ApiError::from)).collect())
                .map_err(ApiError::from),
            Err(e) => Err(e),
        };
        if let Err(e) = &written {
            // Later chunks are not tried: the store is failing.
            self.give_back(n_ops as u64);
            self.failed = Some(e.clone());
        }
        let mut results = match written {
            Ok(rs) => rs.into_iter(),
            Err(_) => Vec::new().into_iter(),
        };
        for l in lines {
            match l {
                Ok(n) => match (&self.failed, results.next()) {
                    (_, Some(Ok(r))) => {
                        if !self.route.answer(n, r, self.out.line()) {
                            self.give_back(1);
                        }
                        self.out.end_line();
                    }
                    (_, Some(Err(e))) => {
                        self.give_back(1);
                        if e.status.is_server_error() && self.failed.is_none() {
                            // The store failed under this line: later chunks are not tried.
                            self.failed = Some(e.clone());
                        }
                        self.error_line(n, &e);
                    }
                    (Some(e), None) => {
                        let e = e.clone();
                        self.error_line(n, &e);
                    }
                    (None, None) => {
                        self.give_back(1);
                        self.error_line(n, &ApiError::unavailable("line was not processed"));
                    }
                },
                Err((n, e)) => self.error_line(n, &e),
            }
            self.answered += 1;
        }
        self.lease.trim(self.used());
    }

    fn error_line(&mut self, line: usize, e: &ApiError) {
        let answer = LineResult::refused(line, e);
        if serde_json::to_writer(self.out.line(), &answer).is_ok() {
            self.out.end_line();
        }
    }

    /// The whole body was read: `200`, one NDJSON answer per line.
    fn finish(self) -> Response {
        let mut resp = (
            [(header::CONTENT_TYPE, "application/x-ndjson")],
            self.out.into_body(),
        )
            .into_response();
        if self.over_quota {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        resp
    }
}

/// A bulk request stopped before the end of its body (a limit crossed, the
/// budget spent, a body that broke off): the error, with the per-line
/// answers of the lines read before it, which stay committed:
/// `{"error": {...}, "answered": N, "lines": [{"line": 1, "status": 201, ...}, ...]}`.
fn cut_short(e: ApiError, answered: usize, answers: &Answers, over_quota: bool) -> Response {
    let mut body = Vec::with_capacity(answers.plain_len() + 256);
    body.extend_from_slice(b"{\"error\":");
    if serde_json::to_writer(&mut body, &e.body).is_err() {
        return e.into_response();
    }
    body.extend_from_slice(format!(",\"answered\":{answered},\"lines\":[").as_bytes());
    let mut first = true;
    answers.for_each_line(|line| {
        if !first {
            body.push(b',');
        }
        first = false;
        body.extend_from_slice(line);
    });
    body.extend_from_slice(b"]}");
    let mut resp = (e.status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    if e.status == StatusCode::SERVICE_UNAVAILABLE || over_quota {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    resp
}
