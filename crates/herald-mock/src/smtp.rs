//! A real SMTP sink: a small RFC 5321 server on its own TCP listener that accepts mail,
//! records it, and can be told to refuse some of it.
//!
//! Why a real server rather than a fake transport: the email channel talks SMTP through
//! `lettre`, and what breaks in production is the conversation itself (EHLO extensions,
//! AUTH, a 451 on RCPT versus a 550, dot-stuffing, size limits). So the mock speaks the
//! protocol on a socket and the channel is tested over the wire.
//!
//! Scope: EHLO/HELO, AUTH PLAIN and LOGIN (offered only when credentials are configured),
//! MAIL (with SIZE and BODY parameters), RCPT (at most [`MAX_RECIPIENTS`]), DATA with
//! dot-unstuffing, RSET, NOOP, VRFY, HELP, QUIT. STARTTLS is not offered. Everything is
//! bounded: command and text lines, message size, recipients, concurrent connections,
//! bad commands per connection, and idle time.
//!
//! Recorded messages keep the raw text plus the parsed envelope, `Subject` (RFC 2047
//! encoded-words decoded) and the text body (first `text/plain` part, transfer encoding
//! undone), so tests can assert on what a person would read.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};

use crate::MockState;

/// Most recipients accepted in one transaction (RFC 5321's required minimum).
pub const MAX_RECIPIENTS: usize = 100;
/// Default largest message, as advertised by `SIZE`.
pub const DEFAULT_SMTP_MAX_MESSAGE_BYTES: usize = 10 * 1024 * 1024;
/// How many messages `GET /_mock/smtp/messages` can show.
pub const SMTP_RING_CAPACITY: usize = 1_000;
/// Longest command line, without CRLF. RFC 5321 says 512 with CRLF, but RFC 4954 lets
/// AUTH lines run to 12288; this sits between.
const MAX_COMMAND_LINE: usize = 4096;
/// Longest text line in DATA, without CRLF (RFC 5321 4.5.3.1.6).
const MAX_TEXT_LINE: usize = 998;
/// Default for closing a connection that sends no line for this long (RFC 5321 4.5.3.2
/// suggests 5 minutes).
pub const DEFAULT_SMTP_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Bad commands tolerated on one connection before it is closed with 421.
const MAX_BAD_COMMANDS: u32 = 20;
const MAX_CONNECTIONS: usize = 256;
const MAX_ADDRESS_LEN: usize = 320;
const HOSTNAME: &str = "herald-mock";

/// Where a `tempfail_next` fault strikes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TempfailStage {
    /// 451 to `RCPT TO` (the recipient is not accepted).
    Rcpt,
    /// 451 after the message data (the message is not accepted).
    #[default]
    Data,
}

/// What the SMTP sink should refuse. Set with `POST /_mock/smtp/faults`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SmtpFaults {
    /// The next N RCPTs or messages (see `tempfail_stage`) answer 451 4.3.0.
    pub tempfail_next: u32,
    pub tempfail_stage: TempfailStage,
    /// Recipient addresses (case-insensitive) answered 550 5.1.1 at RCPT.
    pub reject: Vec<String>,
}

/// `GET /_mock/smtp/stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SmtpStats {
    /// TCP connections accepted.
    pub connections: u64,
    /// Messages accepted (250 after DATA).
    pub messages: u64,
    /// Recipients over all accepted messages.
    pub recipients: u64,
    pub auth_successes: u64,
    /// AUTH attempts answered 535.
    pub auth_failures: u64,
    /// Recipients or messages refused for good (550, 552, 554 and too many recipients).
    pub rejected: u64,
    /// Recipients or messages refused for now by a `tempfail_next` fault (451).
    pub tempfailed: u64,
    /// Commands answered 500/501/503/504 (unknown, bad syntax, bad sequence).
    pub protocol_errors: u64,
    /// Bytes of accepted message data.
    pub bytes: u64,
}

/// One accepted message; `GET /_mock/smtp/messages`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SmtpMessage {
    /// Queue id answered with the 250.
    pub id: String,
    /// Envelope sender (`MAIL FROM`), empty for the null sender.
    pub from: String,
    /// Envelope recipients that were accepted.
    pub to: Vec<String>,
    /// Decoded `Subject` header, if any.
    pub subject: Option<String>,
    /// The text body: first text/plain part, transfer encoding undone, LF line ends.
    pub body: String,
    /// The message as received, dot-unstuffed, CRLF line ends.
    pub raw: String,
    /// The name given in EHLO/HELO.
    pub helo: String,
    /// The AUTH user, if the client authenticated.
    pub auth_user: Option<String>,
    /// Wall clock (unix ms) of acceptance.
    pub at_ms: u64,
}

pub(crate) struct SmtpSettings {
    pub(crate) credentials: Option<(String, String)>,
    pub(crate) max_message_bytes: usize,
    pub(crate) idle_timeout: Duration,
}

#[derive(Default)]
struct Records {
    stats: SmtpStats,
    ring: VecDeque<SmtpMessage>,
}

pub(crate) struct SmtpState {
    settings: SmtpSettings,
    faults: Mutex<SmtpFaults>,
    records: Mutex<Records>,
    next_id: AtomicU64,
}

impl SmtpState {
    pub(crate) fn new(settings: SmtpSettings) -> SmtpState {
        SmtpState {
            settings,
            faults: Mutex::new(SmtpFaults::default()),
            records: Mutex::new(Records::default()),
            next_id: AtomicU64::new(1),
        }
    }

    pub(crate) fn faults(&self) -> SmtpFaults {
        self.faults.lock().clone()
    }

    pub(crate) fn set_faults(&self, f: SmtpFaults) {
        *self.faults.lock() = f;
    }

    pub(crate) fn stats(&self) -> SmtpStats {
        self.records.lock().stats.clone()
    }

    /// The newest `limit` messages (only those with recipient `to`, if given), oldest first.
    pub(crate) fn messages(&self, limit: usize, to: Option<&str>) -> Vec<SmtpMessage> {
        let records = self.records.lock();
        let mut out: Vec<SmtpMessage> = records
            .ring
            .iter()
            .rev()
            .filter(|m| to.is_none_or(|t| m.to.iter().any(|r| r.eq_ignore_ascii_case(t))))
            .take(limit)
            .cloned()
            .collect();
        out.reverse();
        out
    }

    pub(crate) fn reset(&self) {
        *self.records.lock() = Records::default();
    }

    fn bump(&self, f: impl FnOnce(&mut SmtpStats)) {
        f(&mut self.records.lock().stats);
    }

    /// Uses up one tempfail if one is due at `stage`.
    fn take_tempfail(&self, stage: TempfailStage) -> bool {
        let mut f = self.faults.lock();
        if f.tempfail_next > 0 && f.tempfail_stage == stage {
            f.tempfail_next -= 1;
            return true;
        }
        false
    }

    fn is_rejected(&self, addr: &str) -> bool {
        self.faults
            .lock()
            .reject
            .iter()
            .any(|r| r.eq_ignore_ascii_case(addr))
    }

    fn record(&self, mut msg: SmtpMessage) -> String {
        let id = format!("MOCK{:08X}", self.next_id.fetch_add(1, Ordering::Relaxed));
        msg.id = id.clone();
        let mut r = self.records.lock();
        r.stats.messages += 1;
        r.stats.recipients += msg.to.len() as u64;
        r.stats.bytes += msg.raw.len() as u64;
        if r.ring.len() >= SMTP_RING_CAPACITY {
            r.ring.pop_front();
        }
        r.ring.push_back(msg);
        id
    }
}

/// Accepts SMTP connections until `stop` turns true (or its sender is dropped).
pub(crate) async fn serve(
    listener: TcpListener,
    state: MockState,
    mut stop: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = stop.wait_for(|s| *s) => break,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "smtp mock: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        state.shared.smtp.bump(|s| s.connections += 1);
        let permit = slots.clone().try_acquire_owned();
        let state = state.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let Ok(_permit) = permit else {
                let (_, mut w) = stream.into_split();
                let _ = w
                    .write_all(b"421 4.7.0 herald-mock too many connections, try later\r\n")
                    .await;
                return;
            };
            tracing::debug!(%peer, "smtp mock: connection");
            let idle = state.shared.smtp.settings.idle_timeout;
            let mut conn = Conn::new(stream, stop, idle);
            match conn.session(&state).await {
                Ok(()) => tracing::debug!(%peer, "smtp mock: connection closed"),
                Err(e) => tracing::debug!(%peer, error = %e, "smtp mock: connection ended"),
            }
        });
    }
    tracing::debug!("smtp mock: listener stopped");
}

/// One line read from the client.
enum Line {
    /// A complete line (in the buffer, CRLF or LF stripped).
    Text,
    /// The line was longer than allowed; it was read to its end and dropped.
    TooLong,
}

/// Why a session ends early. Replies that go with it have already been sent.
#[derive(Debug)]
enum End {
    Closed,
    Io(std::io::Error),
    Idle,
    Stopping,
}

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            End::Closed => f.write_str("client closed the connection"),
            End::Io(e) => write!(f, "i/o error: {e}"),
            End::Idle => f.write_str("idle timeout"),
            End::Stopping => f.write_str("server stopping"),
        }
    }
}

/// Reads one line of at most `max` bytes into `buf` (terminator stripped). A longer line
/// is consumed to its end and reported as [`Line::TooLong`]; end of input mid-line or
/// before a line is `Ok(None)`.
async fn read_line<R: AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<Line>> {
    buf.clear();
    let mut too_long = false;
    loop {
        let avail = r.fill_buf().await?;
        if avail.is_empty() {
            return Ok(None);
        }
        match avail.iter().position(|&b| b == b'\n') {
            Some(i) => {
                if !too_long && buf.len() + i <= max + 1 {
                    buf.extend_from_slice(&avail[..i]);
                } else {
                    too_long = true;
                }
                r.consume(i + 1);
                break;
            }
            None => {
                let n = avail.len();
                if !too_long && buf.len() + n <= max + 1 {
                    buf.extend_from_slice(avail);
                } else {
                    too_long = true;
                    buf.clear();
                }
                r.consume(n);
            }
        }
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    if too_long || buf.len() > max {
        buf.clear();
        return Ok(Some(Line::TooLong));
    }
    Ok(Some(Line::Text))
}

/// An open mail transaction.
struct Transaction {
    from: String,
    rcpts: Vec<String>,
}

struct Conn {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    buf: Vec<u8>,
    stop: watch::Receiver<bool>,
    idle: Duration,
    helo: Option<String>,
    esmtp: bool,
    auth_user: Option<String>,
    tx: Option<Transaction>,
    bad_commands: u32,
}

impl Conn {
    fn new(stream: TcpStream, stop: watch::Receiver<bool>, idle: Duration) -> Conn {
        let (r, w) = stream.into_split();
        Conn {
            reader: BufReader::with_capacity(8 * 1024, r),
            writer: w,
            buf: Vec::with_capacity(1024),
            stop,
            idle,
            helo: None,
            esmtp: false,
            auth_user: None,
            tx: None,
            bad_commands: 0,
        }
    }

    async fn reply(&mut self, text: &str) -> Result<(), End> {
        let mut out = String::with_capacity(text.len() + 2);
        out.push_str(text);
        out.push_str("\r\n");
        match tokio::time::timeout(WRITE_TIMEOUT, self.writer.write_all(out.as_bytes())).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(End::Io(e)),
            Err(_) => Err(End::Idle),
        }
    }

    /// Next line from the client, honouring the idle timeout and server stop (both are
    /// answered with a 421 before the session ends).
    async fn next_line(&mut self, max: usize) -> Result<Line, End> {
        let read = tokio::select! {
            r = tokio::time::timeout(self.idle, read_line(&mut self.reader, &mut self.buf, max)) => Some(r),
            _ = self.stop.wait_for(|s| *s) => None,
        };
        let Some(read) = read else {
            let _ = self.reply("421 4.3.2 herald-mock shutting down").await;
            return Err(End::Stopping);
        };
        match read {
            Err(_) => {
                let _ = self
                    .reply("421 4.4.2 herald-mock idle timeout, closing connection")
                    .await;
                Err(End::Idle)
            }
            Ok(Err(e)) => Err(End::Io(e)),
            Ok(Ok(None)) => Err(End::Closed),
            Ok(Ok(Some(line))) => Ok(line),
        }
    }

    /// Answers a protocol error and counts it; closes after too many.
    async fn bad(&mut self, state: &MockState, text: &str) -> Result<(), End> {
        state.shared.smtp.bump(|s| s.protocol_errors += 1);
        self.bad_commands += 1;
        self.reply(text).await?;
        if self.bad_commands >= MAX_BAD_COMMANDS {
            self.reply("421 4.7.0 herald-mock too many errors, closing connection")
                .await?;
            return Err(End::Closed);
        }
        Ok(())
    }

    async fn session(&mut self, state: &MockState) -> Result<(), End> {
        self.reply(&format!("220 {HOSTNAME} ESMTP Herald mock ready"))
            .await?;
        loop {
            let line = self.next_line(MAX_COMMAND_LINE).await?;
            if let Line::TooLong = line {
                self.bad(state, "500 5.5.2 Line too long").await?;
                continue;
            }
            let text = String::from_utf8_lossy(&self.buf).into_owned();
            let (verb, arg) = match text.split_once(' ') {
                Some((v, a)) => (v.to_ascii_uppercase(), a.trim().to_owned()),
                None => (text.trim().to_ascii_uppercase(), String::new()),
            };
            match verb.as_str() {
                "EHLO" | "HELO" => self.hello(state, &verb, &arg).await?,
                "AUTH" => self.auth(state, &arg).await?,
                "MAIL" => self.mail(state, &arg).await?,
                "RCPT" => self.rcpt(state, &arg).await?,
                "DATA" => self.data(state, &arg).await?,
                "RSET" => {
                    self.tx = None;
                    self.reply("250 2.0.0 Ok").await?;
                }
                "NOOP" => self.reply("250 2.0.0 Ok").await?,
                "VRFY" => {
                    self.reply("252 2.0.0 Cannot VRFY user, but will accept message")
                        .await?
                }
                "HELP" => {
                    self.reply(
                        "214 2.0.0 Commands: EHLO HELO AUTH MAIL RCPT DATA RSET NOOP VRFY QUIT",
                    )
                    .await?
                }
                "QUIT" => {
                    self.reply(&format!("221 2.0.0 {HOSTNAME} closing connection"))
                        .await?;
                    let _ = self.writer.shutdown().await;
                    return Ok(());
                }
                "STARTTLS" => self.bad(state, "502 5.5.1 STARTTLS not offered").await?,
                _ => {
                    self.bad(state, "500 5.5.2 Syntax error, command unrecognized")
                        .await?
                }
            }
        }
    }

    async fn hello(&mut self, state: &MockState, verb: &str, arg: &str) -> Result<(), End> {
        let name = arg.split_whitespace().next().unwrap_or("");
        if name.is_empty() {
            return self
                .bad(state, &format!("501 5.5.4 Syntax: {verb} hostname"))
                .await;
        }
        self.helo = Some(name.to_owned());
        self.tx = None;
        if verb == "HELO" {
            self.esmtp = false;
            return self.reply(&format!("250 {HOSTNAME} Hello {name}")).await;
        }
        self.esmtp = true;
        let smtp = &state.shared.smtp;
        let mut lines = vec![
            format!("{HOSTNAME} Hello {name}"),
            "8BITMIME".to_owned(),
            format!("SIZE {}", smtp.settings.max_message_bytes),
            "ENHANCEDSTATUSCODES".to_owned(),
        ];
        if smtp.settings.credentials.is_some() {
            lines.push("AUTH PLAIN LOGIN".to_owned());
        }
        let last = lines.len() - 1;
        let text = lines
            .iter()
            .enumerate()
            .map(|(i, l)| format!("250{}{l}", if i == last { ' ' } else { '-' }))
            .collect::<Vec<_>>()
            .join("\r\n");
        self.reply(&text).await
    }

    /// Reads one AUTH continuation line and decodes it; `None` if the client cancelled
    /// or sent bad base64 (already answered).
    async fn auth_response(&mut self, state: &MockState) -> Result<Option<Vec<u8>>, End> {
        if let Line::TooLong = self.next_line(MAX_COMMAND_LINE).await? {
            self.bad(state, "500 5.5.2 Line too long").await?;
            return Ok(None);
        }
        let text = String::from_utf8_lossy(&self.buf).trim().to_owned();
        if text == "*" {
            self.bad(state, "501 5.7.0 Authentication cancelled")
                .await?;
            return Ok(None);
        }
        match B64.decode(text.as_bytes()) {
            Ok(b) => Ok(Some(b)),
            Err(_) => {
                self.bad(state, "501 5.5.2 Cannot decode response").await?;
                Ok(None)
            }
        }
    }

    async fn auth(&mut self, state: &MockState, arg: &str) -> Result<(), End> {
        let smtp = &state.shared.smtp;
        let Some((user, pass)) = smtp.settings.credentials.clone() else {
            return self
                .bad(state, "503 5.5.1 Error: authentication not enabled")
                .await;
        };
        if !self.esmtp {
            return self.bad(state, "503 5.5.1 Error: send EHLO first").await;
        }
        if self.auth_user.is_some() {
            return self
                .bad(state, "503 5.5.1 Error: already authenticated")
                .await;
        }
        if self.tx.is_some() {
            return self
                .bad(state, "503 5.5.1 Error: MAIL transaction in progress")
                .await;
        }
        let mut words = arg.split_whitespace();
        let mechanism = words.next().unwrap_or("").to_ascii_uppercase();
        let initial = words.next();
        let (given_user, given_pass) = match mechanism.as_str() {
            "PLAIN" => {
                let decoded = match initial {
                    Some("=") => Some(Vec::new()),
                    Some(i) => match B64.decode(i.as_bytes()) {
                        Ok(b) => Some(b),
                        Err(_) => {
                            return self.bad(state, "501 5.5.2 Cannot decode response").await;
                        }
                    },
                    None => {
                        self.reply("334 ").await?;
                        self.auth_response(state).await?
                    }
                };
                let Some(decoded) = decoded else {
                    return Ok(());
                };
                let mut parts = decoded.split(|&b| b == 0);
                let (Some(_authz), Some(u), Some(p), None) =
                    (parts.next(), parts.next(), parts.next(), parts.next())
                else {
                    return self.bad(state, "501 5.5.2 Invalid PLAIN response").await;
                };
                (
                    String::from_utf8_lossy(u).into_owned(),
                    String::from_utf8_lossy(p).into_owned(),
                )
            }
            "LOGIN" => {
                let given_user = match initial {
                    Some(i) => match B64.decode(i.as_bytes()) {
                        Ok(b) => b,
                        Err(_) => {
                            return self.bad(state, "501 5.5.2 Cannot decode response").await;
                        }
                    },
                    None => {
                        self.reply("334 VXNlcm5hbWU6").await?;
                        let Some(u) = self.auth_response(state).await? else {
                            return Ok(());
                        };
                        u
                    }
                };
                self.reply("334 UGFzc3dvcmQ6").await?;
                let Some(given_pass) = self.auth_response(state).await? else {
                    return Ok(());
                };
                (
                    String::from_utf8_lossy(&given_user).into_owned(),
                    String::from_utf8_lossy(&given_pass).into_owned(),
                )
            }
            "" => return self.bad(state, "501 5.5.4 Syntax: AUTH mechanism").await,
            _ => {
                return self
                    .bad(state, "504 5.5.4 Unrecognized authentication type")
                    .await;
            }
        };
        if given_user == user && given_pass == pass {
            smtp.bump(|s| s.auth_successes += 1);
            tracing::debug!(user = %given_user, mechanism = %mechanism, "smtp mock: authenticated");
            self.auth_user = Some(given_user);
            self.reply("235 2.7.0 Authentication successful").await
        } else {
            smtp.bump(|s| s.auth_failures += 1);
            tracing::info!(user = %given_user, mechanism = %mechanism, "smtp mock: authentication failed");
            self.reply("535 5.7.8 Authentication credentials invalid")
                .await
        }
    }

    async fn mail(&mut self, state: &MockState, arg: &str) -> Result<(), End> {
        let smtp = &state.shared.smtp;
        if self.helo.is_none() {
            return self
                .bad(state, "503 5.5.1 Error: send HELO/EHLO first")
                .await;
        }
        if self.tx.is_some() {
            return self
                .bad(state, "503 5.5.1 Error: nested MAIL command")
                .await;
        }
        if smtp.settings.credentials.is_some() && self.auth_user.is_none() {
            return self.bad(state, "530 5.7.0 Authentication required").await;
        }
        let Some((from, params)) = parse_path(arg, "FROM:") else {
            return self
                .bad(state, "501 5.5.4 Syntax: MAIL FROM:<address>")
                .await;
        };
        if !from.is_empty() && !plausible_address(&from) {
            return self.bad(state, "501 5.1.7 Bad sender address syntax").await;
        }
        for p in params.split_whitespace() {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            match k.to_ascii_uppercase().as_str() {
                "SIZE" if self.esmtp => match v.parse::<usize>() {
                    Ok(n) if n > smtp.settings.max_message_bytes => {
                        smtp.bump(|s| s.rejected += 1);
                        return self
                            .reply("552 5.3.4 Message size exceeds fixed maximum message size")
                            .await;
                    }
                    Ok(_) => {}
                    Err(_) => return self.bad(state, "501 5.5.4 Bad SIZE parameter").await,
                },
                "BODY" if self.esmtp => {
                    if !v.eq_ignore_ascii_case("7BIT") && !v.eq_ignore_ascii_case("8BITMIME") {
                        return self.bad(state, "501 5.5.4 Bad BODY parameter").await;
                    }
                }
                "AUTH" if self.esmtp => {}
                _ => {
                    return self
                        .bad(state, "555 5.5.4 Unsupported MAIL parameter")
                        .await;
                }
            }
        }
        self.tx = Some(Transaction {
            from,
            rcpts: Vec::new(),
        });
        self.reply("250 2.1.0 Ok").await
    }

    async fn rcpt(&mut self, state: &MockState, arg: &str) -> Result<(), End> {
        let smtp = &state.shared.smtp;
        let Some(count) = self.tx.as_ref().map(|t| t.rcpts.len()) else {
            return self.bad(state, "503 5.5.1 Error: need MAIL command").await;
        };
        let Some((to, params)) = parse_path(arg, "TO:") else {
            return self.bad(state, "501 5.5.4 Syntax: RCPT TO:<address>").await;
        };
        if !params.trim().is_empty() {
            return self
                .bad(state, "555 5.5.4 Unsupported RCPT parameter")
                .await;
        }
        if !plausible_address(&to) {
            return self
                .bad(state, "501 5.1.3 Bad recipient address syntax")
                .await;
        }
        if count >= MAX_RECIPIENTS {
            smtp.bump(|s| s.rejected += 1);
            return self.reply("452 4.5.3 Error: too many recipients").await;
        }
        if smtp.is_rejected(&to) {
            smtp.bump(|s| s.rejected += 1);
            tracing::debug!(to = %to, "smtp mock: recipient rejected by fault");
            return self
                .reply(&format!(
                    "550 5.1.1 <{to}>: Recipient address rejected: User unknown"
                ))
                .await;
        }
        if smtp.take_tempfail(TempfailStage::Rcpt) {
            smtp.bump(|s| s.tempfailed += 1);
            tracing::debug!(to = %to, "smtp mock: recipient tempfailed by fault");
            return self
                .reply(&format!(
                    "451 4.3.0 <{to}>: Temporary failure, try again later"
                ))
                .await;
        }
        if let Some(tx) = self.tx.as_mut() {
            tx.rcpts.push(to);
        }
        self.reply("250 2.1.5 Ok").await
    }

    async fn data(&mut self, state: &MockState, arg: &str) -> Result<(), End> {
        let smtp = &state.shared.smtp;
        if !arg.is_empty() {
            return self.bad(state, "501 5.5.4 Syntax: DATA").await;
        }
        let Some(rcpts) = self.tx.as_ref().map(|t| t.rcpts.len()) else {
            return self.bad(state, "503 5.5.1 Error: need MAIL command").await;
        };
        if rcpts == 0 {
            return self
                .bad(state, "554 5.5.1 Error: no valid recipients")
                .await;
        }
        self.reply("354 End data with <CR><LF>.<CR><LF>").await?;

        let max = smtp.settings.max_message_bytes;
        let mut raw: Vec<u8> = Vec::new();
        let mut oversized = false;
        let mut long_line = false;
        loop {
            match self.next_line(MAX_TEXT_LINE).await? {
                Line::TooLong => long_line = true,
                Line::Text => {
                    if self.buf == b"." {
                        break;
                    }
                    let content = self.buf.strip_prefix(b".").unwrap_or(&self.buf);
                    if !oversized {
                        if raw.len() + content.len() + 2 > max {
                            oversized = true;
                            raw = Vec::new();
                        } else {
                            raw.extend_from_slice(content);
                            raw.extend_from_slice(b"\r\n");
                        }
                    }
                }
            }
        }
        let Some(tx) = self.tx.take() else {
            return self.bad(state, "503 5.5.1 Error: need MAIL command").await;
        };
        if oversized {
            smtp.bump(|s| s.rejected += 1);
            return self
                .reply("552 5.3.4 Message size exceeds fixed maximum message size")
                .await;
        }
        if long_line {
            smtp.bump(|s| s.rejected += 1);
            return self
                .reply("500 5.5.2 Message has a line longer than 998 octets")
                .await;
        }
        if smtp.take_tempfail(TempfailStage::Data) {
            smtp.bump(|s| s.tempfailed += 1);
            tracing::debug!(from = %tx.from, "smtp mock: message tempfailed by fault");
            return self
                .reply("451 4.3.0 Temporary failure, try again later")
                .await;
        }
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let (subject, body) = parse_message(&raw);
        let to_count = tx.rcpts.len();
        let id = smtp.record(SmtpMessage {
            id: String::new(),
            from: tx.from,
            to: tx.rcpts,
            subject,
            body,
            raw,
            helo: self.helo.clone().unwrap_or_default(),
            auth_user: self.auth_user.clone(),
            at_ms: now_ms(),
        });
        tracing::debug!(id = %id, recipients = to_count, "smtp mock: message accepted");
        self.reply(&format!("250 2.0.0 Ok: queued as {id}")).await
    }
}

/// Parses `FROM:<addr> params` / `TO:<addr> params` (the keyword case-insensitive, a
/// space after the colon tolerated, angle brackets optional). Returns (address, params).
fn parse_path(arg: &str, keyword: &str) -> Option<(String, String)> {
    let head = arg.get(..keyword.len())?;
    if !head.eq_ignore_ascii_case(keyword) {
        return None;
    }
    let rest = arg[keyword.len()..].trim_start();
    let (addr, params) = if let Some(inner) = rest.strip_prefix('<') {
        let close = inner.find('>')?;
        (&inner[..close], &inner[close + 1..])
    } else {
        match rest.split_once(' ') {
            Some((a, p)) => (a, p),
            None => (rest, ""),
        }
    };
    if addr.len() > MAX_ADDRESS_LEN || addr.contains(['<', '>', ' ']) {
        return None;
    }
    // A source route (`@a,@b:user@host`) is allowed by the grammar and ignored.
    let addr = match addr.rsplit_once(':') {
        Some((route, a)) if route.starts_with('@') => a,
        _ => addr,
    };
    Some((addr.to_owned(), params.to_owned()))
}

fn plausible_address(addr: &str) -> bool {
    match addr.rsplit_once('@') {
        Some((local, domain)) => {
            !local.is_empty() && !domain.is_empty() && !addr.chars().any(char::is_control)
        }
        None => false,
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Splits a message (or MIME part) into unfolded headers and the body.
fn split_headers(text: &str) -> (Vec<(String, String)>, &str) {
    let (head, body) = match text.find("\r\n\r\n") {
        Some(i) => (&text[..i], &text[i + 4..]),
        None => match text.find("\n\n") {
            Some(i) => (&text[..i], &text[i + 2..]),
            None => (text, ""),
        },
    };
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in head.lines() {
        if line.starts_with([' ', '\t']) {
            if let Some((_, v)) = headers.last_mut() {
                v.push(' ');
                v.push_str(line.trim());
            }
        } else if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    (headers, body)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A parameter of a structured header value, e.g. `boundary` of Content-Type.
fn header_param(value: &str, name: &str) -> Option<String> {
    value.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().trim_matches('"').to_owned())
    })
}

/// The decoded subject and text body of a message.
fn parse_message(raw: &str) -> (Option<String>, String) {
    let (headers, body) = split_headers(raw);
    let subject = header(&headers, "subject").map(decode_encoded_words);
    (subject, text_body(&headers, body, 0).unwrap_or_default())
}

/// The first text/plain part (or the body itself if it is a single text part), decoded.
fn text_body(headers: &[(String, String)], body: &str, depth: u32) -> Option<String> {
    let ctype = header(headers, "content-type").unwrap_or("text/plain");
    let mime = ctype
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if mime.starts_with("multipart/") {
        if depth > 8 {
            return None;
        }
        let boundary = header_param(ctype, "boundary")?;
        let delimiter = format!("--{boundary}");
        let mut first_text = None;
        for part in body.split(delimiter.as_str()).skip(1) {
            if part.starts_with("--") {
                break;
            }
            let part = part
                .strip_prefix("\r\n")
                .or_else(|| part.strip_prefix('\n'))
                .unwrap_or(part);
            let (h, b) = split_headers(part);
            let part_type = header(&h, "content-type").unwrap_or("text/plain");
            let found = text_body(&h, b, depth + 1);
            if part_type.to_ascii_lowercase().starts_with("text/plain") && found.is_some() {
                return found;
            }
            if first_text.is_none() {
                first_text = found;
            }
        }
        return first_text;
    }
    if !mime.starts_with("text/") {
        return None;
    }
    let cte = header(headers, "content-transfer-encoding")
        .unwrap_or("7bit")
        .to_ascii_lowercase();
    let bytes = match cte.as_str() {
        "base64" => {
            let compact: String = body.chars().filter(|c| !c.is_whitespace()).collect();
            B64.decode(compact)
                .unwrap_or_else(|_| body.as_bytes().to_vec())
        }
        "quoted-printable" => decode_quoted_printable(body),
        _ => body.as_bytes().to_vec(),
    };
    let text = String::from_utf8_lossy(&bytes).replace("\r\n", "\n");
    let text = text.strip_suffix('\n').unwrap_or(&text).to_owned();
    Some(text)
}

fn hex_val(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Quoted-printable (RFC 2045 6.7): `=XX` escapes and `=` soft line breaks.
fn decode_quoted_printable(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'=' {
            if b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n') {
                i += 3;
                continue;
            }
            if b.get(i + 1) == Some(&b'\n') {
                i += 2;
                continue;
            }
            if let (Some(h), Some(l)) = (
                b.get(i + 1).copied().and_then(hex_val),
                b.get(i + 2).copied().and_then(hex_val),
            ) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// Decodes one encoded-word's text, or `None` if it is not one this mock understands.
fn decode_word(charset: &str, encoding: &str, text: &str) -> Option<String> {
    let charset = charset.split('*').next().unwrap_or("").to_ascii_lowercase();
    let bytes = match encoding {
        "B" | "b" => base64::engine::GeneralPurpose::new(
            &base64::alphabet::STANDARD,
            base64::engine::GeneralPurposeConfig::new()
                .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
        )
        .decode(text)
        .ok()?,
        "Q" | "q" => decode_quoted_printable(&text.replace('_', " ")),
        _ => return None,
    };
    match charset.as_str() {
        "utf-8" | "utf8" | "us-ascii" => Some(String::from_utf8_lossy(&bytes).into_owned()),
        "iso-8859-1" | "latin1" => Some(bytes.iter().map(|&b| b as char).collect()),
        _ => None,
    }
}

/// Decodes RFC 2047 encoded-words (`=?utf-8?B?...?=`, `=?utf-8?Q?...?=`) in a header
/// value. Whitespace between two adjacent encoded-words is dropped, as the RFC says.
/// Words in charsets other than UTF-8, US-ASCII and ISO-8859-1 are left as they are.
pub(crate) fn decode_encoded_words(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    let mut pending_ws = String::new();
    let mut last_was_word = false;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("=?")
            && let Some((charset, after)) = after.split_once('?')
            && let Some((encoding, after)) = after.split_once('?')
            && let Some(end) = after.find("?=")
            && let Some(decoded) = decode_word(charset, encoding, &after[..end])
        {
            if !last_was_word {
                out.push_str(&pending_ws);
            }
            pending_ws.clear();
            out.push_str(&decoded);
            last_was_word = true;
            rest = &after[end + 2..];
            continue;
        }
        let Some(c) = rest.chars().next() else {
            break;
        };
        if c.is_whitespace() {
            pending_ws.push(c);
        } else {
            out.push_str(&pending_ws);
            pending_ws.clear();
            out.push(c);
            last_was_word = false;
        }
        rest = &rest[c.len_utf8()..];
    }
    out.push_str(&pending_ws);
    out
}

pub(crate) fn routes() -> Router<MockState> {
    Router::new()
        .route("/_mock/smtp/stats", get(get_stats))
        .route("/_mock/smtp/messages", get(get_messages))
        .route("/_mock/smtp/faults", get(get_faults).post(set_faults))
}

async fn get_stats(State(state): State<MockState>) -> Response {
    Json(state.shared.smtp.stats()).into_response()
}

#[derive(Deserialize)]
struct MessagesQuery {
    limit: Option<usize>,
    to: Option<String>,
}

async fn get_messages(State(state): State<MockState>, Query(q): Query<MessagesQuery>) -> Response {
    let limit = q.limit.unwrap_or(SMTP_RING_CAPACITY);
    Json(state.shared.smtp.messages(limit, q.to.as_deref())).into_response()
}

async fn get_faults(State(state): State<MockState>) -> Response {
    Json(state.shared.smtp.faults()).into_response()
}

/// Takes the body as plain bytes so callers need not set a JSON content type.
async fn set_faults(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<SmtpFaults>(&body) {
        Ok(f) => {
            state.shared.smtp.set_faults(f);
            Json(state.shared.smtp.faults()).into_response()
        }
        Err(e) => (
            StatusCode::BAD_REQUEST,
            Json(serde_json::json!({ "error": { "code": "bad_request", "message": format!("smtp faults: {e}") } })),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_words() {
        assert_eq!(decode_encoded_words("plain"), "plain");
        assert_eq!(
            decode_encoded_words("=?UTF-8?B?5L2g5aW9?= =?utf-8?Q?_w=C3=B6rld?="),
            "你好 wörld"
        );
        assert_eq!(
            decode_encoded_words("Re: =?utf-8?q?caf=C3=A9?= ok"),
            "Re: café ok"
        );
        assert_eq!(decode_encoded_words("=?koi8-r?B?abc?="), "=?koi8-r?B?abc?=");
        assert_eq!(decode_encoded_words("=?utf-8?B?broken"), "=?utf-8?B?broken");
    }

    #[test]
    fn multipart_body() {
        let raw = "Subject: x\r\nContent-Type: multipart/alternative; boundary=\"b1\"\r\n\r\n--b1\r\nContent-Type: text/html\r\n\r\n<p>hi</p>\r\n--b1\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nh=C3=A9llo =\r\nthere\r\n--b1--\r\n";
        let (subject, body) = parse_message(raw);
        assert_eq!(subject.as_deref(), Some("x"));
        assert_eq!(body, "héllo there");
    }

    #[test]
    fn paths() {
        assert_eq!(
            parse_path("FROM:<a@b.c> SIZE=10", "FROM:"),
            Some(("a@b.c".into(), " SIZE=10".into()))
        );
        assert_eq!(
            parse_path("from: <>", "FROM:"),
            Some((String::new(), String::new()))
        );
        assert_eq!(
            parse_path("TO:<@r1,@r2:u@h>", "TO:"),
            Some(("u@h".into(), String::new()))
        );
        assert_eq!(parse_path("TO:<a@b", "TO:"), None);
        assert_eq!(parse_path("T", "TO:"), None);
    }
}
