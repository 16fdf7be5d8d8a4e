//! `/v1/audiences`: streamed uploads of recipient ids (NDJSON or CSV), stored
//! in chunks of [`AUDIENCE_CHUNK`] and addressed by index, so a job's segment
//! is just `[start, end)`.
//!
//! The body is never held whole: it is parsed frame by frame while the
//! previous chunk is being written, so parsing and the store overlap. Any bad
//! line drops the whole audience; nothing of a refused upload remains.
//!
//! Also the helpers the rule and job endpoints share: ids in paths, recipient
//! checks, query strings, and audiences built from an inline `users` list.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use herald_core::time::format_rfc3339_ms;
use herald_store::{AUDIENCE_CHUNK, AudienceRecord, Store, StoreError};
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;

use crate::AppState;
use crate::error::ApiError;
use crate::timers::store_err;

/// Longest recipient id, in bytes.
pub const MAX_RECIPIENT_BYTES: usize = 256;
/// Longest audience name, in bytes.
pub const MAX_NAME_BYTES: usize = 200;
/// Longest line (NDJSON) or record (CSV) of an upload.
pub const MAX_RECORD_BYTES: usize = 64 * 1024;

// ---- Shared helpers ----

/// A positive integer id from a path segment; anything else is a 400 on `id`.
pub(crate) fn parse_id(raw: &str, what: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
        ApiError::field(
            "id",
            "invalid_field",
            format!("{what} id {raw:?} is not a positive integer"),
        )
    })
}

/// Why a recipient id is not acceptable, if it is not.
pub(crate) fn recipient_problem(r: &str) -> Option<String> {
    if r.is_empty() {
        return Some("recipient is empty".into());
    }
    if r.len() > MAX_RECIPIENT_BYTES {
        return Some(format!(
            "recipient is {} bytes; at most {MAX_RECIPIENT_BYTES}",
            r.len()
        ));
    }
    if r.chars().any(char::is_control) {
        return Some("recipient contains a control character".into());
    }
    None
}

/// A query string that does not parse is a 400 naming the query.
pub(crate) fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    match q {
        Ok(Query(t)) => Ok(t),
        Err(e) => Err(ApiError::field(
            "query",
            "invalid_query",
            format!("bad query string: {}", e.body_text()),
        )),
    }
}

/// An optional integer query parameter within `range`.
pub(crate) fn int_param(
    name: &str,
    raw: &Option<String>,
    range: std::ops::RangeInclusive<i64>,
) -> Result<Option<i64>, ApiError> {
    match raw {
        None => Ok(None),
        Some(s) => match s.trim().parse::<i64>() {
            Ok(v) if range.contains(&v) => Ok(Some(v)),
            _ => Err(ApiError::field(
                name,
                "invalid_field",
                format!(
                    "{name} must be an integer in {}..={}, not {s:?}",
                    range.start(),
                    range.end()
                ),
            )),
        },
    }
}

/// Stores `users` (already checked) as a new sealed audience and returns its id.
/// Duplicates are dropped (first occurrence kept), so a user listed twice gets
/// one message. On failure nothing remains.
pub(crate) async fn inline_audience(
    store: &Arc<dyn Store>,
    users: &[String],
    name: Option<String>,
    now: i64,
) -> Result<AudienceRecord, ApiError> {
    let mut seen = std::collections::HashSet::with_capacity(users.len());
    let unique: Vec<String> = users
        .iter()
        .filter(|u| seen.insert(u.as_str()))
        .cloned()
        .collect();
    let id = store.create_audience(name, now).await.map_err(store_err)?;
    let written: Result<Option<AudienceRecord>, StoreError> = async {
        for (n, chunk) in unique.chunks(AUDIENCE_CHUNK as usize).enumerate() {
            store
                .append_audience(id, n as u64 * AUDIENCE_CHUNK, chunk)
                .await?;
        }
        store.seal_audience(id, unique.len() as u64, now).await
    }
    .await;
    match written {
        Ok(Some(a)) => Ok(a),
        Ok(None) => {
            let _ = store.drop_audience(id).await;
            Err(ApiError::unavailable(
                "the inline audience vanished while being written",
            ))
        }
        Err(e) => {
            let _ = store.drop_audience(id).await;
            Err(store_err(e))
        }
    }
}

// ---- Parsing ----

/// The two upload formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `{"recipient": "..."}` per line.
    Ndjson,
    /// RFC 4180; the recipient is the first column; an optional first line
    /// whose first column is `recipient` is a header.
    Csv,
}

impl Format {
    /// The format a `Content-Type` names, if it names one.
    pub fn from_content_type(ct: &str) -> Option<Format> {
        let media = ct
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match media.as_str() {
            "application/x-ndjson" | "application/ndjson" | "application/jsonl" => {
                Some(Format::Ndjson)
            }
            "text/csv" => Some(Format::Csv),
            _ => None,
        }
    }
}

/// A bad line: its 1-based number and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NdLine {
    recipient: String,
}

/// Turns body bytes, fed in arbitrary pieces, into recipients. Lines are
/// counted from 1; blank lines are skipped (and counted). A CSV record may
/// span lines inside quotes; an error names the line it starts on.
pub struct Parser {
    format: Format,
    /// Bytes of the record being read (and of any after it not yet scanned).
    buf: Vec<u8>,
    /// How much of `buf` has been scanned.
    scanned: usize,
    /// CSV: inside a quoted field at `scanned`.
    in_quotes: bool,
    /// CSV: newlines inside quotes in the current record so far.
    inner_newlines: usize,
    /// Line the current record starts on.
    line: usize,
    /// A non-blank record has been seen (the header may only be the first).
    seen_record: bool,
    /// Nothing has been read yet (a UTF-8 byte order mark may come).
    at_start: bool,
}

impl Parser {
    pub fn new(format: Format) -> Self {
        Self {
            format,
            buf: Vec::new(),
            scanned: 0,
            in_quotes: false,
            inner_newlines: 0,
            line: 1,
            seen_record: false,
            at_start: true,
        }
    }

    /// Reads `data`, appending every complete record's recipient to `out`.
    pub fn push(&mut self, data: &[u8], out: &mut Vec<String>) -> Result<(), LineError> {
        self.buf.extend_from_slice(data);
        if self.at_start {
            if self.buf.len() < 3 && b"\xEF\xBB\xBF".starts_with(&self.buf) {
                return Ok(()); // maybe a byte order mark; wait for more
            }
            if self.buf.starts_with(b"\xEF\xBB\xBF") {
                self.buf.drain(..3);
            }
            self.at_start = false;
        }
        let buf = std::mem::take(&mut self.buf);
        let mut rec_start = 0;
        let mut i = self.scanned;
        let result = self.scan(&buf, &mut i, &mut rec_start, out);
        self.buf = buf;
        result?;
        self.buf.drain(..rec_start);
        self.scanned = i - rec_start;
        if self.buf.len() > MAX_RECORD_BYTES {
            return Err(self.err(format!(
                "longer than {MAX_RECORD_BYTES} bytes without a line end"
            )));
        }
        Ok(())
    }

    /// Reads every complete record of `buf` from `*i` on; `*rec_start` is
    /// where the current record starts.
    fn scan(
        &mut self,
        buf: &[u8],
        i: &mut usize,
        rec_start: &mut usize,
        out: &mut Vec<String>,
    ) -> Result<(), LineError> {
        match self.format {
            Format::Ndjson => {
                while let Some(off) = buf[*i..].iter().position(|&b| b == b'\n') {
                    let end = *i + off;
                    self.record(&buf[*rec_start..end], out)?;
                    self.line += 1;
                    *rec_start = end + 1;
                    *i = end + 1;
                }
                *i = buf.len();
            }
            Format::Csv => {
                while *i < buf.len() {
                    match buf[*i] {
                        b'"' => self.in_quotes = !self.in_quotes,
                        b'\n' if self.in_quotes => self.inner_newlines += 1,
                        b'\n' => {
                            self.record(&buf[*rec_start..*i], out)?;
                            self.line += 1 + self.inner_newlines;
                            self.inner_newlines = 0;
                            *rec_start = *i + 1;
                        }
                        _ => {}
                    }
                    *i += 1;
                }
            }
        }
        Ok(())
    }

    /// Ends the body: the last record may lack its newline.
    pub fn finish(&mut self, out: &mut Vec<String>) -> Result<(), LineError> {
        if self.format == Format::Csv && self.in_quotes {
            return Err(self.err("a quoted field is never closed".into()));
        }
        let buf = std::mem::take(&mut self.buf);
        self.scanned = 0;
        self.record(&buf, out)
    }

    fn err(&self, message: String) -> LineError {
        LineError {
            line: self.line,
            message,
        }
    }

    fn record(&mut self, rec: &[u8], out: &mut Vec<String>) -> Result<(), LineError> {
        let rec = rec.strip_suffix(b"\r").unwrap_or(rec);
        if rec.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        if rec.len() > MAX_RECORD_BYTES {
            return Err(self.err(format!("longer than {MAX_RECORD_BYTES} bytes")));
        }
        let first = !self.seen_record;
        self.seen_record = true;
        let recipient = match self.format {
            Format::Ndjson => match serde_json::from_slice::<NdLine>(rec) {
                Ok(l) => l.recipient,
                Err(e) => {
                    let msg = e.to_string();
                    // The position serde gives is within the line; the line is ours.
                    let msg = match msg.rfind(" at line ") {
                        Some(at) => msg[..at].to_string(),
                        None => msg,
                    };
                    return Err(self.err(format!("expected {{\"recipient\": \"...\"}}: {msg}")));
                }
            },
            Format::Csv => {
                let field = csv_first_field(rec).map_err(|m| self.err(m))?;
                let s = String::from_utf8(field)
                    .map_err(|_| self.err("the recipient is not valid UTF-8".into()))?;
                if first && s.trim().eq_ignore_ascii_case("recipient") {
                    return Ok(()); // the header
                }
                s
            }
        };
        if let Some(problem) = recipient_problem(&recipient) {
            return Err(self.err(problem));
        }
        out.push(recipient);
        Ok(())
    }
}

/// The first field of one CSV record (RFC 4180: `"` quotes a field, `""` is
/// a quote inside one).
fn csv_first_field(rec: &[u8]) -> Result<Vec<u8>, String> {
    if let Some(rest) = rec.strip_prefix(b"\"") {
        let mut out = Vec::with_capacity(rest.len());
        let mut i = 0;
        loop {
            let Some(off) = rest[i..].iter().position(|&b| b == b'"') else {
                return Err("a quoted field is never closed".into());
            };
            out.extend_from_slice(&rest[i..i + off]);
            let q = i + off;
            if rest.get(q + 1) == Some(&b'"') {
                out.push(b'"');
                i = q + 2;
                continue;
            }
            return match rest.get(q + 1) {
                None | Some(b',') => Ok(out),
                Some(_) => Err("unexpected character after a closing quote; \
                                a quote inside a quoted field is written \"\""
                    .into()),
            };
        }
    }
    let field = match rec.iter().position(|&b| b == b',') {
        Some(end) => &rec[..end],
        None => rec,
    };
    if field.contains(&b'"') {
        return Err("a quote inside an unquoted field; quote the whole field".into());
    }
    Ok(field.to_vec())
}

// ---- Upload ----

/// An upload under way: the audience, and the append in flight. Dropped
/// unfinished (the client went away), it removes the audience.
struct Upload {
    store: Arc<dyn Store>,
    id: i64,
    next_start: u64,
    inflight: Option<JoinHandle<Result<(), StoreError>>>,
    done: bool,
}

impl Upload {
    /// Waits for the append in flight, then starts writing `chunk`.
    async fn write(&mut self, chunk: Vec<String>) -> Result<(), ApiError> {
        self.wait().await?;
        let store = self.store.clone();
        let (id, start) = (self.id, self.next_start);
        self.next_start += chunk.len() as u64;
        self.inflight = Some(tokio::spawn(async move {
            store.append_audience(id, start, &chunk).await
        }));
        Ok(())
    }

    async fn wait(&mut self) -> Result<(), ApiError> {
        match self.inflight.take() {
            None => Ok(()),
            Some(h) => match h.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(store_err(e)),
                Err(_) => Err(ApiError::unavailable("writing the audience failed")),
            },
        }
    }

    /// Removes the audience (after any write in flight).
    async fn abandon(mut self) {
        self.done = true;
        if let Some(h) = self.inflight.take() {
            let _ = h.await;
        }
        if let Err(e) = self.store.drop_audience(self.id).await {
            tracing::warn!(audience = self.id, error = %e, "dropping a refused upload failed");
        }
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let (store, id, inflight) = (self.store.clone(), self.id, self.inflight.take());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                if let Some(h) = inflight {
                    let _ = h.await;
                }
                if let Err(e) = store.drop_audience(id).await {
                    tracing::warn!(audience = id, error = %e, "dropping an interrupted upload failed");
                }
            });
        }
    }
}

#[derive(Deserialize)]
pub struct UploadQuery {
    #[serde(default)]
    name: Option<String>,
}

#[derive(Serialize)]
pub struct AudienceJson {
    pub id: i64,
    pub name: Option<String>,
    /// `null` while the upload is still going.
    pub size: Option<u64>,
    pub created_at: String,
}

impl From<AudienceRecord> for AudienceJson {
    fn from(a: AudienceRecord) -> Self {
        Self {
            id: a.id,
            name: a.name,
            size: a.size,
            created_at: format_rfc3339_ms(a.created_at),
        }
    }
}

/// `POST /v1/audiences[?name=]`: streams NDJSON or CSV into a new audience.
/// `201 {id, name, size, created_at}`; a bad line is a 400 on `line N` and
/// leaves nothing behind.
pub async fn upload(
    State(st): State<AppState>,
    headers: HeaderMap,
    q: Result<Query<UploadQuery>, QueryRejection>,
    body: Body,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let Some(format) = Format::from_content_type(ct) else {
        let mut e = ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!(
                "content-type {ct:?} is not accepted; send application/x-ndjson \
                 (one {{\"recipient\": \"...\"}} per line) or text/csv (recipient in the first column)"
            ),
        );
        e.body.field = Some("content-type".into());
        return Err(e);
    };
    if let Some(n) = &q.name
        && (n.is_empty() || n.len() > MAX_NAME_BYTES || n.chars().any(char::is_control))
    {
        return Err(ApiError::field(
            "name",
            "invalid_field",
            format!("name must be 1..={MAX_NAME_BYTES} bytes without control characters"),
        ));
    }
    let store = st.engine.store().clone();
    let now = st.clock.now_ms();
    let id = store
        .create_audience(q.name, now)
        .await
        .map_err(store_err)?;
    let mut up = Upload {
        store: store.clone(),
        id,
        next_start: 0,
        inflight: None,
        done: false,
    };
    match ingest(&mut up, body, format, st.api.audience_max_recipients).await {
        Ok(size) => {
            up.done = true;
            match store.seal_audience(id, size, st.clock.now_ms()).await {
                Ok(Some(a)) => {
                    Ok((StatusCode::CREATED, axum::Json(AudienceJson::from(a))).into_response())
                }
                Ok(None) => Err(ApiError::unavailable(
                    "the audience vanished during its upload",
                )),
                Err(e) => {
                    let _ = store.drop_audience(id).await;
                    Err(store_err(e))
                }
            }
        }
        Err(e) => {
            up.abandon().await;
            Err(e)
        }
    }
}

/// Reads the body into the audience; returns its size once every chunk is written.
async fn ingest(up: &mut Upload, body: Body, format: Format, max: u64) -> Result<u64, ApiError> {
    use http_body_util::BodyExt;
    let chunk = AUDIENCE_CHUNK as usize;
    let mut parser = Parser::new(format);
    let mut pending: Vec<String> = Vec::with_capacity(chunk * 2);
    let mut total: u64 = 0;
    let mut stream = body.into_data_stream();
    let line_err = |e: LineError| {
        ApiError::field(
            &format!("line {}", e.line),
            "invalid_line",
            format!("line {}: {}", e.line, e.message),
        )
    };
    let too_many = || {
        let mut e = ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_many_recipients",
            format!("more than {max} recipients; at most {max} per audience"),
        );
        e.body.field = Some("body".into());
        e
    };
    loop {
        let frame = match stream.frame().await {
            None => break,
            Some(Ok(f)) => f,
            Some(Err(e)) => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "bad_body",
                    format!("could not read the body: {e}"),
                ));
            }
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let before = pending.len();
        parser.push(&data, &mut pending).map_err(line_err)?;
        total += (pending.len() - before) as u64;
        if total > max {
            return Err(too_many());
        }
        while pending.len() >= chunk {
            let rest = pending.split_off(chunk);
            let full = std::mem::replace(&mut pending, rest);
            up.write(full).await?;
        }
    }
    let before = pending.len();
    parser.finish(&mut pending).map_err(line_err)?;
    total += (pending.len() - before) as u64;
    if total > max {
        return Err(too_many());
    }
    while !pending.is_empty() {
        let rest = pending.split_off(chunk.min(pending.len()));
        let full = std::mem::replace(&mut pending, rest);
        up.write(full).await?;
    }
    up.wait().await?;
    Ok(total)
}

/// `GET /v1/audiences/{id}`.
pub async fn get(
    State(st): State<AppState>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw, "audience")?;
    match st
        .engine
        .store()
        .get_audience(id)
        .await
        .map_err(store_err)?
    {
        Some(a) => Ok(axum::Json(AudienceJson::from(a)).into_response()),
        None => Err(ApiError::not_found("audience")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(format: Format, pieces: &[&[u8]]) -> Result<Vec<String>, LineError> {
        let mut p = Parser::new(format);
        let mut out = Vec::new();
        for piece in pieces {
            p.push(piece, &mut out)?;
        }
        p.finish(&mut out)?;
        Ok(out)
    }

    /// Every way of cutting `body` in two gives the same answer.
    fn parse_split(format: Format, body: &[u8]) -> Result<Vec<String>, LineError> {
        let whole = parse_all(format, &[body]);
        for cut in 0..=body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(parse_all(format, &[a, b]), whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(parse_all(format, &bytes), whole, "byte by byte");
        whole
    }

    #[test]
    fn ndjson_lines_blank_lines_and_crlf() {
        let body = b"{\"recipient\":\"a\"}\n\n  \r\n{\"recipient\":\"b\"}\r\n{\"recipient\": \"c\\u00e9\"}";
        assert_eq!(
            parse_split(Format::Ndjson, body).unwrap(),
            vec!["a", "b", "c\u{e9}"]
        );
    }

    #[test]
    fn ndjson_errors_name_the_line() {
        let e = parse_split(
            Format::Ndjson,
            b"{\"recipient\":\"a\"}\n\n{\"recipent\":\"c\"}\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("unknown field"), "{}", e.message);
        assert!(!e.message.contains("at line"), "{}", e.message);
        let e = parse_split(Format::Ndjson, b"{\"recipient\":\"a\"}\nnot json").unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse_split(Format::Ndjson, b"{\"recipient\":\"\"}").unwrap_err();
        assert_eq!((e.line, e.message.as_str()), (1, "recipient is empty"));
        let e = parse_split(Format::Ndjson, b"{\"recipient\":\"a\\tb\"}").unwrap_err();
        assert!(e.message.contains("control"), "{}", e.message);
        let e = parse_split(Format::Ndjson, b"{\"recipient\":7}").unwrap_err();
        assert_eq!(e.line, 1);
        let long = format!("{{\"recipient\":\"{}\"}}", "x".repeat(257));
        let e = parse_all(Format::Ndjson, &[long.as_bytes()]).unwrap_err();
        assert!(e.message.contains("257 bytes"), "{}", e.message);
        let ok = format!("{{\"recipient\":\"{}\"}}", "x".repeat(256));
        assert_eq!(
            parse_all(Format::Ndjson, &[ok.as_bytes()]).unwrap().len(),
            1
        );
    }

    #[test]
    fn csv_header_quotes_and_other_columns() {
        let body = b"recipient,name\nalice,A\n\"bob,jr\",B\n\ncarol\n\"say \"\"hi\"\"\",x\n";
        assert_eq!(
            parse_split(Format::Csv, body).unwrap(),
            vec!["alice", "bob,jr", "carol", "say \"hi\""]
        );
        // No header: the first line is a recipient.
        assert_eq!(
            parse_split(Format::Csv, b"alice\r\nbob").unwrap(),
            vec!["alice", "bob"]
        );
        // "recipient" later on is a recipient.
        assert_eq!(
            parse_split(Format::Csv, b"Recipient\nrecipient\n").unwrap(),
            vec!["recipient"]
        );
        // A byte order mark before the header.
        assert_eq!(
            parse_split(Format::Csv, b"\xEF\xBB\xBFrecipient\nalice\n").unwrap(),
            vec!["alice"]
        );
    }

    #[test]
    fn csv_quoted_newlines_in_later_columns_keep_line_numbers() {
        let body = b"a,\"two\nlines\"\nb\n\"\"\n";
        let e = parse_split(Format::Csv, body).unwrap_err();
        assert_eq!(e.line, 4, "{e:?}");
        assert_eq!(e.message, "recipient is empty");
        // A newline inside the recipient itself is a control character.
        let e = parse_split(Format::Csv, b"ok\n\"x\ny\",1\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("control"));
    }

    #[test]
    fn csv_bad_quoting() {
        let e = parse_split(Format::Csv, b"a\n\"open,b\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("never closed"), "{}", e.message);
        let e = parse_split(Format::Csv, b"\"a\"b,c\n").unwrap_err();
        assert!(e.message.contains("closing quote"), "{}", e.message);
        let e = parse_split(Format::Csv, b"x\na\"b\"\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("unquoted"), "{}", e.message);
    }

    #[test]
    fn an_endless_line_is_refused() {
        let mut p = Parser::new(Format::Ndjson);
        let mut out = Vec::new();
        p.push(b"{\"recipient\":\"a\"}\n", &mut out).unwrap();
        let junk = vec![b'x'; MAX_RECORD_BYTES + 1];
        let e = p.push(&junk, &mut out).unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn content_types() {
        assert_eq!(
            Format::from_content_type("application/x-ndjson"),
            Some(Format::Ndjson)
        );
        assert_eq!(
            Format::from_content_type("text/CSV; charset=utf-8"),
            Some(Format::Csv)
        );
        assert_eq!(Format::from_content_type("application/json"), None);
        assert_eq!(Format::from_content_type(""), None);
    }

    #[test]
    fn many_lines_in_big_pieces() {
        let mut body = Vec::new();
        for i in 0..20_000 {
            body.extend_from_slice(format!("{{\"recipient\":\"user-{i}\"}}\n").as_bytes());
        }
        let pieces: Vec<&[u8]> = body.chunks(16_384).collect();
        let out = parse_all(Format::Ndjson, &pieces).unwrap();
        assert_eq!(out.len(), 20_000);
        assert_eq!(out[19_999], "user-19999");
    }
}
