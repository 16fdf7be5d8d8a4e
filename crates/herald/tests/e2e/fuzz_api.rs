//! Fuzzes every route of the API through the real `herald serve`, on SQLite
//! and on PostgreSQL, over raw HTTP/1.1 (so bodies, paths and headers can be
//! anything, invalid UTF-8 included).
//!
//! For each route of `herald_server::ROUTES` and each part of a request
//! (body, path, query, headers, method and raw bytes), proptest generates
//! mutations of a valid request with a fixed seed. Every answer must be:
//! not a `5xx` other than `503`, and, when it is not a `2xx` and has a body,
//! JSON with `error.code`. The process must stay up and answer `/healthz`
//! throughout. A violation is shrunk to its smallest request, and every
//! route's violations are listed together at the end.
//!
//! `HERALD_FUZZ_CASES` (default 32) sets the cases per route and part,
//! `HERALD_FUZZ_SEED` (a number) changes the seed. PostgreSQL runs when it is
//! installed, and must with `HERALD_REQUIRE_PG=1`.

use crate::common;

use std::fmt;
use std::time::Duration;

use common::{Mock, Server, now_ms, pg_database, rfc3339, wait_for};
use herald_server::ROUTES;
use herald_server::access::{Payload, Verb};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::{BoxedStrategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Cap on one answer's wait: only a hang takes this long.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_CASES: u32 = 32;
/// Distinct kinds of violation looked for per route and part.
const MAX_KINDS: usize = 4;
const DEFAULT_SEED: u64 = 0x6865_7261_6c64_0014;

// ---------------------------------------------------------------------------
// Raw HTTP

/// One request, byte for byte (`Host`, `Content-Length` and
/// `Connection: close` are added when it is sent).
#[derive(Clone)]
struct Req {
    method: String,
    /// Path and query, as they go on the request line.
    target: Vec<u8>,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

impl fmt::Debug for Req {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} {}", self.method, show(&self.target, 400))?;
        for (k, v) in &self.headers {
            writeln!(f, "{k}: {}", show(v, 200))?;
        }
        write!(
            f,
            "body ({} bytes): {}",
            self.body.len(),
            show(&self.body, 600)
        )
    }
}

/// Bytes for a report: escaped, cut at `max`.
fn show(b: &[u8], max: usize) -> String {
    let cut = &b[..b.len().min(max)];
    let mut s = cut.escape_ascii().to_string();
    if b.len() > max {
        s.push_str(&format!("...(+{} bytes)", b.len() - max));
    }
    s
}

#[derive(Debug)]
struct Answer {
    status: u16,
    content_type: String,
    body: Vec<u8>,
}

/// Sends `req` to `addr` (`host:port`) and reads the whole answer.
async fn send(addr: &str, req: &Req) -> Result<Answer, String> {
    let mut wire = Vec::with_capacity(req.body.len() + 256);
    wire.extend_from_slice(req.method.as_bytes());
    wire.push(b' ');
    wire.extend_from_slice(&req.target);
    wire.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    wire.extend_from_slice(addr.as_bytes());
    wire.extend_from_slice(b"\r\nConnection: close\r\n");
    for (k, v) in &req.headers {
        wire.extend_from_slice(k.as_bytes());
        wire.extend_from_slice(b": ");
        wire.extend_from_slice(v);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(format!("Content-Length: {}\r\n\r\n", req.body.len()).as_bytes());
    wire.extend_from_slice(&req.body);
    let exchange = async {
        let mut stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("cannot connect (is the server down?): {e}"))?;
        // The server may answer (and close) before it has read the body: a
        // failed write is no failure as long as an answer comes back.
        let _ = stream.write_all(&wire).await;
        let mut raw = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) => break,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
                Err(e) if raw.is_empty() => return Err(format!("no answer: {e}")),
                Err(_) => break,
            }
        }
        Ok(raw)
    };
    let raw = tokio::time::timeout(ANSWER_TIMEOUT, exchange)
        .await
        .map_err(|_| format!("no answer within {ANSWER_TIMEOUT:?}"))??;
    parse_answer(&raw)
}

fn parse_answer(mut raw: &[u8]) -> Result<Answer, String> {
    // An interim `100 Continue` (for `Expect: 100-continue`) comes first.
    while raw.starts_with(b"HTTP/1.1 1")
        && let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n")
    {
        raw = &raw[end + 4..];
    }
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("no complete answer head: {}", show(raw, 300)))?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("bad status line: {}", show(raw, 300)))?;
    let mut content_type = String::new();
    let mut chunked = false;
    let mut length = None;
    for l in lines {
        let Some((k, v)) = l.split_once(':') else {
            continue;
        };
        let v = v.trim();
        match k.trim().to_ascii_lowercase().as_str() {
            "content-type" => content_type = v.to_string(),
            "transfer-encoding" => chunked = v.eq_ignore_ascii_case("chunked"),
            "content-length" => length = v.parse::<usize>().ok(),
            _ => {}
        }
    }
    let rest = &raw[end + 4..];
    let body = if chunked {
        dechunk(rest)?
    } else {
        rest[..length.unwrap_or(rest.len()).min(rest.len())].to_vec()
    };
    Ok(Answer {
        status,
        content_type,
        body,
    })
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let eol = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("truncated chunked body")?;
        let size_text = String::from_utf8_lossy(&rest[..eol]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("bad chunk size {size_text:?}"))?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        if rest.len() < size {
            return Err("truncated chunk".into());
        }
        out.extend_from_slice(&rest[..size]);
        rest = rest.get(size + 2..).unwrap_or(&[]);
    }
}

/// What is wrong with `a`, if anything.
fn violation(a: &Answer) -> Option<String> {
    if a.status >= 500 && a.status != 503 {
        return Some(format!("status {}", a.status));
    }
    if (200..300).contains(&a.status) || a.body.is_empty() {
        return None;
    }
    let json: Option<Value> = serde_json::from_slice(&a.body).ok();
    match json {
        Some(v) if v["error"]["code"].is_string() => None,
        Some(_) => Some(format!("status {}: JSON without error.code", a.status)),
        None => Some(format!(
            "status {}: body is not JSON (content-type {:?})",
            a.status, a.content_type
        )),
    }
}

// ---------------------------------------------------------------------------
// What exists on the server, for valid paths and bodies

struct Fixture {
    timer: i64,
    audience: i64,
    rule: i64,
    job: i64,
    delivery: i64,
    key: i64,
    msgid: String,
    later: String,
}

impl Fixture {
    async fn build(s: &Server) -> Fixture {
        let later = rfc3339(now_ms() + 86_400_000);
        let created = |(st, v): (u16, Value)| {
            assert!(st == 200 || st == 201, "fixture: {st} {v}");
            v["id"].as_i64().unwrap_or_default()
        };
        let timer = created(s.post("/v1/timers", &timer_body()).await);
        let sent = created(
            s.post(
                "/v1/timers",
                &json!({"delay_ms": 0, "channel": "wx", "recipient": "oFuzz",
                    "message": {"template_id": "TPL", "data": {"first": {"value": "x"}}}}),
            )
            .await,
        );
        let deliveries = format!("/v1/timers/{sent}/deliveries");
        wait_for("the wechat delivery", Duration::from_secs(60), || async {
            s.get(&deliveries).await.1["deliveries"][0]["provider_msgid"].is_string()
        })
        .await;
        let delivery = s.get(&deliveries).await.1["deliveries"][0].clone();
        let (st, v) = s.put("/v1/subjects/subj-1", &subject_body(&later)).await;
        assert_eq!(st, 201, "{v}");
        created(s.post("/v1/reminders", &reminder_body()).await);
        let audience = created(
            s.post_raw(
                "/v1/audiences?name=fz",
                "application/x-ndjson",
                "{\"recipient\":\"a1\"}\n{\"recipient\":\"a2\"}\n".into(),
            )
            .await,
        );
        let rule = created(s.post("/v1/rules", &rule_body(&later)).await);
        let job = created(s.post("/v1/jobs", &job_body()).await);
        let key = created(s.post("/v1/keys", &key_body(&later)).await);
        Fixture {
            timer,
            audience,
            rule,
            job,
            delivery: delivery["id"].as_i64().unwrap_or_default(),
            key,
            msgid: delivery["provider_msgid"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            later,
        }
    }

    /// The value of `{param}` in `pattern` that names something that exists.
    fn param(&self, verb: Verb, pattern: &str, param: &str) -> String {
        let action = |id: i64, verb: &str| format!("{id}:{verb}");
        match (param, pattern.split('/').nth(2).unwrap_or("")) {
            ("subject_id", _) => "subj-1".into(),
            ("user_id", _) => "alice".into(),
            ("name", _) => "wx".into(),
            (_, "timers") => self.timer.to_string(),
            (_, "audiences") => self.audience.to_string(),
            (_, "rules") if verb == Verb::Post => action(self.rule, "disable"),
            (_, "rules") => self.rule.to_string(),
            (_, "jobs") if verb == Verb::Post => action(self.job, "cancel"),
            (_, "jobs") => self.job.to_string(),
            (_, "deliveries") => action(self.delivery, "recall"),
            (_, "keys") => self.key.to_string(),
            _ => "1".into(),
        }
    }

    fn callback_xml(&self) -> String {
        format!(
            "<xml><ToUserName><![CDATA[gh_fuzz]]></ToUserName>\
             <FromUserName><![CDATA[oFuzz]]></FromUserName><CreateTime>1395658920</CreateTime>\
             <MsgType><![CDATA[event]]></MsgType><Event><![CDATA[TEMPLATESENDJOBFINISH]]></Event>\
             <MsgID>{}</MsgID><Status><![CDATA[success]]></Status></xml>",
            self.msgid
        )
    }
}

fn timer_body() -> Value {
    json!({"delay_ms": 86_400_000, "channel": "log", "recipient": "r1",
        "message": {"text": "hi", "n": [1, 2]}, "idempotency_key": "fz-1", "priority": 5})
}

fn subject_body(later: &str) -> Value {
    json!({"start_at": later, "title": "sale", "data": {"a": 1}})
}

fn reminder_body() -> Value {
    json!({"user_id": "alice", "subject_id": "subj-1", "channel_type": "app",
        "lead_minutes": 5, "channel": "log"})
}

fn rule_body(later: &str) -> Value {
    json!({"name": "fz-rule",
        "schedule": {"type": "cron", "cron": "0 9 * * 1-5", "timezone": "Asia/Shanghai",
            "exclude_dates": ["2030-01-01"], "start_at": later},
        "audience": {"users": ["u1", "u2"]},
        "channel": "log", "message": {"text": "x"}, "deadline_secs": 3600})
}

fn job_body() -> Value {
    json!({"users": ["u1", "u2"], "channel": "log", "message": {"text": "x"}, "priority": 5})
}

fn key_body(later: &str) -> Value {
    json!({"tenant": "fz", "scopes": ["read", "write"], "name": "fz", "expires_at": later})
}

// ---------------------------------------------------------------------------
// Routes and their valid requests

#[derive(Clone)]
struct Route {
    verb: Verb,
    pattern: &'static str,
    payload: Payload,
    /// Path parameters that exist, in order.
    params: Vec<String>,
    /// A valid body and its content type, if the route takes one.
    body: Option<(&'static str, Vec<u8>)>,
    /// A valid JSON body to mutate field by field (JSON and NDJSON routes).
    json: Option<Value>,
}

impl Route {
    fn new(p: &herald_server::access::Policy, fx: &Fixture) -> Route {
        let params: Vec<String> = p
            .path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
            .map(|name| fx.param(p.verb, p.path, name))
            .collect();
        let json = match (p.verb, p.path) {
            (Verb::Post, "/v1/timers" | "/v1/timers:bulk") => Some(timer_body()),
            (Verb::Put, "/v1/subjects/{subject_id}") => Some(subject_body(&fx.later)),
            (Verb::Post, "/v1/reminders" | "/v1/reminders:bulk") => Some(reminder_body()),
            (Verb::Post | Verb::Put, "/v1/rules" | "/v1/rules/{id}") => Some(rule_body(&fx.later)),
            (Verb::Post, "/v1/jobs") => Some(job_body()),
            (Verb::Post, "/v1/keys") => Some(key_body(&fx.later)),
            (Verb::Post, "/v1/audiences") => Some(json!({"recipient": "a1"})),
            _ => None,
        };
        let body = match p.payload {
            Payload::Json => json
                .as_ref()
                .map(|j| ("application/json", j.to_string().into_bytes())),
            Payload::Ndjson | Payload::Recipients => json
                .as_ref()
                .map(|j| ("application/x-ndjson", format!("{j}\n{j}\n").into_bytes())),
            Payload::Xml => Some(("text/xml", fx.callback_xml().into_bytes())),
            Payload::Action | Payload::None => None,
        };
        Route {
            verb: p.verb,
            pattern: p.path,
            payload: p.payload,
            params,
            body,
            json,
        }
    }

    fn name(&self) -> String {
        format!("{} {}", self.verb.as_str(), self.pattern)
    }

    /// The path with `params` in place of the pattern's `{...}` segments.
    fn path_with(&self, params: &[String]) -> String {
        let mut values = params.iter();
        self.pattern
            .split('/')
            .map(|seg| {
                if seg.starts_with('{') {
                    values.next().cloned().unwrap_or_default()
                } else {
                    seg.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("/")
    }

    fn valid_query(&self) -> &'static str {
        if self.payload == Payload::Recipients {
            "?name=fz"
        } else {
            ""
        }
    }

    fn valid(&self) -> Req {
        let mut headers = Vec::new();
        if let Some((ct, _)) = &self.body {
            headers.push(("Content-Type".to_string(), ct.as_bytes().to_vec()));
        }
        Req {
            method: self.verb.as_str().to_string(),
            target: format!("{}{}", self.path_with(&self.params), self.valid_query()).into_bytes(),
            headers,
            body: self.body.clone().map(|(_, b)| b).unwrap_or_default(),
        }
    }
}

// ---------------------------------------------------------------------------
// Mutations

/// Bytes outside `A-Za-z0-9-._~:` percent-encoded, for a path or query.
fn pct(b: &[u8]) -> String {
    let mut s = String::new();
    for &c in b {
        if c.is_ascii_alphanumeric() || b"-._~:".contains(&c) {
            s.push(c as char);
        } else {
            s.push_str(&format!("%{c:02X}"));
        }
    }
    s
}

/// A value for a path segment or query parameter: numbers at and past the
/// edges, encodings of NUL and invalid UTF-8, long and random text.
fn odd_value() -> BoxedStrategy<String> {
    prop_oneof![
        prop::sample::select(vec![
            "0",
            "-1",
            "1",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775809",
            "99999999999999999999999999",
            "1e3",
            "0x10",
            "1.5",
            "+1",
            "%00",
            "a%00b",
            "%FF%FE",
            "%C0%AF",
            "%2F",
            "%",
            "%zz",
            "..",
            "%2e%2e",
            "null",
            "true",
            "%20",
            "%0A",
            "%7B%7D",
        ])
        .prop_map(String::from),
        (1usize..20_000).prop_map(|n| "x".repeat(n)),
        prop::collection::vec(any::<u8>(), 0..48).prop_map(|b| pct(&b)),
        "[a-zA-Z0-9:_.-]{0,24}",
    ]
    .boxed()
}

/// A JSON value (or raw JSON text) to put somewhere in a body.
#[derive(Debug, Clone)]
enum Mutant {
    Remove,
    Set(Value),
    /// Raw text put in place of the value: what `Value` cannot hold.
    Raw(Vec<u8>),
    /// An unknown field next to the chosen one.
    Extra(String, Value),
}

fn mutant() -> BoxedStrategy<Mutant> {
    let set = |v: Value| Just(Mutant::Set(v));
    let raw = |s: &'static [u8]| Just(Mutant::Raw(s.to_vec()));
    prop_oneof![
        Just(Mutant::Remove),
        set(Value::Null),
        set(json!(true)),
        set(json!(0)),
        set(json!(-1)),
        set(json!(i64::MAX)),
        set(json!(i64::MIN)),
        set(json!(u64::MAX)),
        set(json!(1.5)),
        set(json!(-1e308)),
        set(json!("")),
        set(json!(" ")),
        set(json!([])),
        set(json!({})),
        set(json!(["a", 1, null])),
        set(json!("2026-02-30T25:61:61Z")),
        set(json!("herald-timer-1")),
        raw(b"1e400"),
        raw(b"-1e400"),
        raw(b"18446744073709551616"),
        raw(b"-0"),
        raw(b"NaN"),
        raw(b"\"\xff\xfe\""),
        raw(b"\"a\\u0000b\""),
        raw(b"\"\\ud800\""),
        raw(b"\"\0\""),
        any::<String>().prop_map(|s| Mutant::Set(Value::String(s))),
        "[\\x00-\\x1f\\x7f]{1,4}[a-z]{0,4}".prop_map(|s| Mutant::Set(Value::String(s))),
        prop::sample::select(vec![255usize, 256, 1024, 1025, 65_536, 300_000])
            .prop_map(|n| Mutant::Set(Value::String("y".repeat(n)))),
        (1usize..3000)
            .prop_map(|d| Mutant::Raw(["[".repeat(d), "]".repeat(d)].concat().into_bytes())),
        (1usize..300).prop_map(|d| Mutant::Raw(
            ["{\"a\":".repeat(d), "1".into(), "}".repeat(d)]
                .concat()
                .into_bytes()
        )),
        ("[a-z_]{1,12}", any::<i64>()).prop_map(|(k, v)| Mutant::Extra(k, json!(v))),
    ]
    .boxed()
}

/// Every JSON pointer in `v`, `""` (the whole value) first.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                pointers(x, format!("{at}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                pointers(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// `v` with `muts` applied, as bytes.
fn mutate_json(v: &Value, muts: &[(Index, Mutant)]) -> Vec<u8> {
    let mut v = v.clone();
    let mut raws: Vec<(String, Vec<u8>)> = Vec::new();
    for (idx, m) in muts {
        let mut ptrs = Vec::new();
        pointers(&v, String::new(), &mut ptrs);
        let ptr = idx.get(&ptrs).clone();
        let (parent, last) = match ptr.rfind('/') {
            Some(i) => (ptr[..i].to_string(), ptr[i + 1..].to_string()),
            None => (String::new(), String::new()),
        };
        match m {
            Mutant::Set(x) => match v.pointer_mut(&ptr) {
                Some(slot) => *slot = x.clone(),
                None => v = x.clone(),
            },
            Mutant::Raw(bytes) => {
                let marker = format!("__fuzz_raw_{}__", raws.len());
                raws.push((format!("\"{marker}\""), bytes.clone()));
                match v.pointer_mut(&ptr) {
                    Some(slot) => *slot = Value::String(marker),
                    None => v = Value::String(marker),
                }
            }
            Mutant::Remove => match v.pointer_mut(&parent) {
                Some(Value::Object(o)) if !ptr.is_empty() => {
                    o.remove(&last);
                }
                Some(Value::Array(a)) if !ptr.is_empty() => {
                    if let Ok(i) = last.parse::<usize>()
                        && i < a.len()
                    {
                        a.remove(i);
                    }
                }
                _ => {}
            },
            Mutant::Extra(k, x) => {
                let target = match v.pointer(&ptr) {
                    Some(Value::Object(_)) => ptr.clone(),
                    _ => parent,
                };
                if let Some(Value::Object(o)) = v.pointer_mut(&target) {
                    o.insert(k.clone(), x.clone());
                }
            }
        }
    }
    let mut out = v.to_string().into_bytes();
    for (marker, bytes) in raws {
        out = replace_bytes(&out, marker.as_bytes(), &bytes);
    }
    out
}

fn replace_bytes(hay: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    match hay.windows(needle.len()).position(|w| w == needle) {
        Some(i) => [&hay[..i], with, &hay[i + needle.len()..]].concat(),
        None => hay.to_vec(),
    }
}

/// Damage at the byte level: cut, insert, overwrite.
#[derive(Debug, Clone)]
enum ByteOp {
    Cut(Index),
    Insert(Index, u8),
    Overwrite(Index, u8),
}

fn byte_op() -> BoxedStrategy<ByteOp> {
    prop_oneof![
        any::<Index>().prop_map(ByteOp::Cut),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| ByteOp::Insert(i, b)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| ByteOp::Overwrite(i, b)),
    ]
    .boxed()
}

fn apply_bytes(mut b: Vec<u8>, ops: &[ByteOp]) -> Vec<u8> {
    for op in ops {
        if b.is_empty() {
            break;
        }
        match op {
            ByteOp::Cut(i) => b.truncate(i.index(b.len())),
            ByteOp::Insert(i, x) => {
                let at = i.index(b.len() + 1);
                b.insert(at, *x);
            }
            ByteOp::Overwrite(i, x) => {
                let at = i.index(b.len());
                b[at] = *x;
            }
        }
    }
    b
}

/// A mutated body for `r`, in the route's own format.
fn body_strategy(r: &Route) -> BoxedStrategy<Vec<u8>> {
    let muts = prop::collection::vec((any::<Index>(), mutant()), 1..4);
    let ops = prop::collection::vec(byte_op(), 0..3);
    match (r.payload, r.json.clone()) {
        (Payload::Json, Some(j)) => (muts, ops)
            .prop_map(move |(m, o)| apply_bytes(mutate_json(&j, &m), &o))
            .boxed(),
        (Payload::Ndjson | Payload::Recipients, Some(j)) => {
            let line = prop_oneof![
                4 => prop::collection::vec((any::<Index>(), mutant()), 0..3)
                    .prop_map(move |m| mutate_json(&j, &m)),
                1 => Just(Vec::new()),
                1 => prop::collection::vec(any::<u8>(), 0..64),
            ];
            let sep = prop::sample::select(vec![&b"\n"[..], b"\r\n", b"\r", b"\n\n"]);
            (prop::collection::vec((line, sep), 1..8), ops)
                .prop_map(|(lines, o)| {
                    let mut b = Vec::new();
                    for (l, s) in lines {
                        b.extend_from_slice(&l);
                        b.extend_from_slice(s);
                    }
                    apply_bytes(b, &o)
                })
                .boxed()
        }
        (Payload::Xml, _) => {
            let xml = r.body.clone().map(|(_, b)| b).unwrap_or_default();
            let inserts = prop::sample::select(vec![
                &b"<!DOCTYPE x [<!ENTITY a \"aaaa\"><!ENTITY b \"&a;&a;&a;\">]>"[..],
                b"&b;",
                b"<![CDATA[",
                b"]]>",
                b"</xml>",
                b"<MsgID>",
                b"</MsgID>",
                b"\0",
                b"\xff",
                b"&#0;",
                b"&#x110000;",
                b"<?xml version=\"1.0\" encoding=\"GBK\"?>",
                b"<Event>subscribe</Event>",
                b"<Status>failed: user block</Status>",
            ]);
            (
                prop::collection::vec((any::<Index>(), inserts), 0..4),
                ops,
                prop::option::of(1usize..20_000),
            )
                .prop_map(move |(ins, o, deep)| {
                    let mut b = xml.clone();
                    for (i, s) in ins {
                        let at = i.index(b.len() + 1);
                        b.splice(at..at, s.iter().copied());
                    }
                    if let Some(d) = deep {
                        let at = b.len().saturating_sub(6);
                        let nest = ["<a>".repeat(d), "</a>".repeat(d)].concat();
                        b.splice(at..at, nest.bytes());
                    }
                    apply_bytes(b, &o)
                })
                .boxed()
        }
        _ => prop_oneof![
            Just(Vec::new()),
            Just(b"{}".to_vec()),
            prop::collection::vec(any::<u8>(), 0..64),
        ]
        .boxed(),
    }
}

fn content_type() -> BoxedStrategy<Option<Vec<u8>>> {
    prop_oneof![
        Just(None),
        prop::sample::select(vec![
            &b"application/json"[..],
            b"application/json; charset=utf-8",
            b"APPLICATION/JSON",
            b"application/json;charset=latin1",
            b"application/x-ndjson",
            b"application/ndjson",
            b"text/csv",
            b"text/xml",
            b"application/xml",
            b"text/plain",
            b"multipart/form-data; boundary=x",
            b"application/x-www-form-urlencoded",
            b"",
            b";",
            b"application/",
            b"*/*",
            b"application/json, text/plain",
            b"\xff\xfe",
        ])
        .prop_map(|s| Some(s.to_vec())),
        "[ -~]{0,40}".prop_map(|s| Some(s.into_bytes())),
    ]
    .boxed()
}

fn extra_headers() -> BoxedStrategy<Vec<(String, Vec<u8>)>> {
    let header = prop_oneof![
        odd_value().prop_map(|v| ("X-Herald-Tenant".to_string(), v.into_bytes())),
        "[ -~]{0,40}".prop_map(|v| (
            "Authorization".to_string(),
            format!("Bearer {v}").into_bytes()
        )),
        Just(("Authorization".to_string(), b"Basic Og==".to_vec())),
        prop::sample::select(vec!["*/*", "text/html", "application/xml", "\u{7f}"])
            .prop_map(|v| ("Accept".to_string(), v.as_bytes().to_vec())),
        Just(("Content-Encoding".to_string(), b"gzip".to_vec())),
        Just(("Expect".to_string(), b"100-continue".to_vec())),
        "[ -~]{0,30}".prop_map(|v| ("Origin".to_string(), v.into_bytes())),
        prop::collection::vec(0x80u8..=0xff, 1..16).prop_map(|v| ("X-Fuzz".to_string(), v)),
        (1usize..16_000).prop_map(|n| ("X-Long".to_string(), vec![b'h'; n])),
    ];
    prop::collection::vec(header, 0..4).boxed()
}

fn query_strategy() -> BoxedStrategy<String> {
    let key = prop::sample::select(vec![
        "limit", "after", "before", "cursor", "since", "tenant", "start", "end", "name", "x", "",
        "limit[]",
    ]);
    let pair = (key, odd_value()).prop_map(|(k, v)| format!("{k}={v}"));
    prop_oneof![
        3 => prop::collection::vec(pair, 1..4).prop_map(|p| format!("?{}", p.join("&"))),
        1 => prop::sample::select(vec!["?", "?&&&", "?=", "?a", "?%", "?a=%zz", "?limit=1&limit=2", "?%00=%00"])
            .prop_map(String::from),
        1 => prop::collection::vec(any::<u8>(), 0..40).prop_map(|b| format!("?{}", pct(&b))),
    ]
    .boxed()
}

/// The parts of a request a phase mutates.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Part {
    Body,
    Path,
    Query,
    Headers,
    MethodAndBytes,
}

const PARTS: [Part; 5] = [
    Part::Body,
    Part::Path,
    Part::Query,
    Part::Headers,
    Part::MethodAndBytes,
];

fn strategy(r: &Route, part: Part) -> BoxedStrategy<Req> {
    let base = r.valid();
    match part {
        Part::Body => {
            let base = base.clone();
            body_strategy(r)
                .prop_map(move |body| Req {
                    body,
                    ..base.clone()
                })
                .boxed()
        }
        Part::Path => {
            let r2 = r.clone();
            let q = r.valid_query();
            let n = r.params.len();
            let params = if n == 0 {
                Just(Vec::<Option<String>>::new()).boxed()
            } else {
                prop::collection::vec(prop::option::of(odd_value()), n..=n).boxed()
            };
            let suffix = prop::sample::select(vec![
                "", "", "/", "//", "/x", "/%00", "%00", ":bulk", ":nope", "?", "#frag", "/..",
            ]);
            (params, suffix, any::<bool>())
                .prop_map(move |(ps, suffix, upper)| {
                    let values: Vec<String> = ps
                        .iter()
                        .zip(&r2.params)
                        .map(|(p, valid)| p.clone().unwrap_or_else(|| valid.clone()))
                        .collect();
                    let mut path = r2.path_with(&values);
                    if upper {
                        path = path.to_uppercase();
                    }
                    Req {
                        target: format!("{path}{suffix}{q}").into_bytes(),
                        ..r2.valid()
                    }
                })
                .boxed()
        }
        Part::Query => {
            let path = r.path_with(&r.params);
            let base = base.clone();
            query_strategy()
                .prop_map(move |q| Req {
                    target: format!("{path}{q}").into_bytes(),
                    ..base.clone()
                })
                .boxed()
        }
        Part::Headers => {
            let base = base.clone();
            (content_type(), extra_headers())
                .prop_map(move |(ct, extra)| {
                    let mut headers: Vec<(String, Vec<u8>)> =
                        ct.map(|c| ("Content-Type".into(), c)).into_iter().collect();
                    headers.extend(extra);
                    Req {
                        headers,
                        ..base.clone()
                    }
                })
                .boxed()
        }
        Part::MethodAndBytes => {
            let base = base.clone();
            let method = prop::sample::select(vec![
                "GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "get", "FUZZ",
            ]);
            (
                prop::option::of(method),
                content_type(),
                prop::collection::vec(any::<u8>(), 0..2048),
            )
                .prop_map(move |(m, ct, body)| Req {
                    method: m.map(String::from).unwrap_or_else(|| base.method.clone()),
                    headers: ct.map(|c| ("Content-Type".into(), c)).into_iter().collect(),
                    body,
                    ..base.clone()
                })
                .boxed()
        }
    }
}

// ---------------------------------------------------------------------------
// The run

fn cases() -> u32 {
    std::env::var("HERALD_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

fn base_seed() -> u64 {
    std::env::var("HERALD_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_SEED)
}

/// A seed of its own for each route and part, so adding a route does not
/// change the inputs of the others.
fn seed_for(name: &str, part: Part) -> [u8; 32] {
    // FNV-1a, then spread over 32 bytes.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ base_seed();
    for b in name.bytes().chain(format!("{part:?}").bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let mut seed = [0u8; 32];
    for (i, chunk) in seed.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&(h.rotate_left(i as u32 * 16) ^ i as u64).to_le_bytes());
    }
    seed
}

/// A violation without its details (digits, most of the answer), to tell
/// one kind from another.
fn kind(why: &str) -> String {
    let cut = why
        .find("answer: ")
        .map_or(why.len(), |i| (i + 38).min(why.len()));
    why.char_indices()
        .take_while(|(i, _)| *i < cut)
        .map(|(_, c)| c)
        .filter(|c| !c.is_ascii_digit())
        .collect()
}

/// Whether the server is still up: the child runs and `/healthz` says 200.
fn alive(rt: &tokio::runtime::Runtime, s: &mut Server, addr: &str) -> Result<(), String> {
    if let Some(c) = s.child.as_mut()
        && let Ok(Some(status)) = c.try_wait()
    {
        return Err(format!("the server exited: {status}"));
    }
    let health = Req {
        method: "GET".into(),
        target: b"/healthz".to_vec(),
        headers: Vec::new(),
        body: Vec::new(),
    };
    match rt.block_on(send(addr, &health)) {
        Ok(a) if a.status == 200 => Ok(()),
        Ok(a) => Err(format!("/healthz answered {}", a.status)),
        Err(e) => Err(format!("/healthz: {e}")),
    }
}

fn fuzz(store: Option<String>, label: &str) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (mut server, _mock, fx) = rt.block_on(async {
        let mock = Mock::start(&[]).await;
        let extra = format!(
            "[[channels]]\nname = \"log\"\nkind = \"log\"\n\
             [[channels]]\nname = \"wx\"\nkind = \"wechat\"\napi_base = \"{}\"\n\
             appid = \"wxmockappid\"\nsecret = \"mock-wechat-secret\"\ntoken_mode = \"classic\"\n\
             backoff_base_ms = 100\nbackoff_max_ms = 400\nmax_attempts = 2\n",
            mock.url
        );
        let server = match &store {
            Some(url) => Server::start_on(url, tempfile::tempdir().unwrap(), &extra).await,
            None => Server::start(&extra).await,
        };
        let fx = Fixture::build(&server).await;
        (server, mock, fx)
    });
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let mut violations: Vec<String> = Vec::new();
    let n = cases();
    eprintln!(
        "fuzz_api[{label}]: seed {} (HERALD_FUZZ_SEED), {n} cases per route and part (HERALD_FUZZ_CASES)",
        base_seed()
    );
    for policy in ROUTES {
        let route = Route::new(policy, &fx);
        for part in PARTS {
            // Each kind of violation is reported once per route and part:
            // after a failure, the run starts again with that kind allowed,
            // so one common fault does not hide the others.
            let mut seen: Vec<String> = Vec::new();
            while seen.len() < MAX_KINDS {
                let config = Config {
                    cases: n,
                    failure_persistence: None,
                    max_shrink_iters: 200,
                    max_shrink_time: 20_000,
                    ..Config::default()
                };
                let seed = seed_for(&route.name(), part);
                let mut runner = TestRunner::new_with_rng(
                    config,
                    TestRng::from_seed(RngAlgorithm::ChaCha, &seed),
                );
                let result = runner.run(&strategy(&route, part), |req| {
                    let why = match rt.block_on(send(&addr, &req)) {
                        Ok(a) => match violation(&a) {
                            None => return Ok(()),
                            Some(v) => format!("{v}; answer: {}", show(&a.body, 300)),
                        },
                        Err(e) => e,
                    };
                    if seen.contains(&kind(&why)) {
                        return Ok(());
                    }
                    Err(TestCaseError::fail(why))
                });
                match result {
                    Ok(()) => break,
                    Err(TestError::Fail(why, req)) => {
                        seen.push(kind(why.message()));
                        violations.push(format!(
                            "[{label}] {} ({part:?}): {why}\n  minimal request:\n    {}",
                            route.name(),
                            format!("{req:?}").replace('\n', "\n    ")
                        ));
                    }
                    Err(TestError::Abort(why)) => {
                        violations.push(format!(
                            "[{label}] {} ({part:?}): aborted: {why}",
                            route.name()
                        ));
                        break;
                    }
                }
            }
        }
        if let Err(e) = alive(&rt, &mut server, &addr) {
            violations.push(format!("[{label}] after {}: {e}", route.name()));
            break;
        }
    }
    if let Err(e) = alive(&rt, &mut server, &addr) {
        violations.push(format!("[{label}] at the end: {e}"));
    }
    let log = server.log();
    if let Some(at) = log.find("panicked") {
        let line_start = log[..at].rfind('\n').map_or(0, |i| i + 1);
        let line_end = log[at..].find('\n').map_or(log.len(), |i| at + i);
        violations.push(format!(
            "[{label}] the server panicked: {}",
            &log[line_start..line_end]
        ));
    }
    rt.block_on(stop(&mut server));
    assert!(
        violations.is_empty(),
        "{} violation(s):\n\n{}",
        violations.len(),
        violations.join("\n\n")
    );
}

/// Stops the server without asserting on how it exits (the checks above
/// say what matters).
async fn stop(s: &mut Server) {
    if let Some(mut c) = s.child.take() {
        let _ = c.start_kill();
        let _ = c.wait().await;
    }
}

#[test]
fn every_route_survives_fuzzed_requests_on_sqlite() {
    fuzz(None, "sqlite");
}

#[test]
fn every_route_survives_fuzzed_requests_on_postgres() {
    let Some((_db, url)) = pg_database("fuzz") else {
        eprintln!("PostgreSQL is not installed; skipped");
        return;
    };
    fuzz(Some(url), "postgres");
}

/// The harness itself: raw answers parse, the checks tell good answers from
/// bad, and a raw mutant replaces the value it marks.
#[test]
fn the_answer_parser_reads_chunked_and_plain_bodies() {
    let a = parse_answer(b"HTTP/1.1 404 Not Found\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n").unwrap();
    assert_eq!((a.status, a.body.as_slice()), (404, &b"abcde"[..]));
    assert!(violation(&a).is_some_and(|v| v.contains("not JSON")));
    let a = parse_answer(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 31\r\n\r\n{\"error\":{\"code\":\"x\",\"m\":1}}  ").unwrap();
    assert_eq!(violation(&a), None);
    let a = parse_answer(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\n{}",
    )
    .unwrap();
    assert_eq!((a.status, a.body.as_slice()), (201, &b"{}"[..]));
    let a = parse_answer(b"HTTP/1.1 500 Internal\r\ncontent-length: 0\r\n\r\n").unwrap();
    assert!(violation(&a).is_some());
    let a = parse_answer(b"HTTP/1.1 503 Busy\r\ncontent-length: 0\r\n\r\n").unwrap();
    assert_eq!(violation(&a), None);
    let v = json!({"a": {"b": [1, 2]}, "c": "d"});
    let first = Index::arbitrary()
        .new_tree(&mut TestRunner::deterministic())
        .unwrap()
        .current();
    let out = mutate_json(&v, &[(first, Mutant::Raw(b"\xff".to_vec()))]);
    assert!(out.contains(&0xff), "{}", show(&out, 100));
}
