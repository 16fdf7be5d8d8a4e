//! Just enough of the PostgreSQL frontend/backend protocol (version 3) to log in
//! with `trust` authentication and run simple queries, over a blocking socket.
//!
//! The cluster is started before any async runtime exists (and from code that may
//! not have one), so readiness checks and `CREATE DATABASE` go through this small
//! synchronous client instead of an async driver.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Protocol version 3.0.
const PROTOCOL_3: i32 = 196_608;
/// Messages larger than this are refused as garbage.
const MAX_MESSAGE: usize = 1 << 30;

/// What went wrong talking to the server.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("i/o: {0}")]
    Io(#[from] io::Error),
    /// The server answered with an `ErrorResponse`.
    #[error("{severity} {code}: {message}")]
    Server {
        severity: String,
        code: String,
        message: String,
    },
    #[error("protocol: {0}")]
    Protocol(String),
}

impl WireError {
    /// The SQLSTATE of a server error.
    pub fn code(&self) -> Option<&str> {
        match self {
            WireError::Server { code, .. } => Some(code),
            _ => None,
        }
    }
}

/// A logged-in session.
pub struct Session {
    stream: TcpStream,
}

/// One result row: each column as text, `None` for NULL.
pub type TextRow = Vec<Option<String>>;

impl Session {
    /// Connects to `addr` and logs in as `user` to `database` (trust auth only).
    pub fn connect(
        addr: SocketAddr,
        user: &str,
        database: &str,
        timeout: Duration,
    ) -> Result<Session, WireError> {
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        stream.set_nodelay(true)?;
        let mut session = Session { stream };
        session.startup(user, database)?;
        Ok(session)
    }

    /// Changes how long a single read or write may block (e.g. for a slow statement).
    pub fn set_timeout(&self, timeout: Duration) -> Result<(), WireError> {
        self.stream.set_read_timeout(Some(timeout))?;
        self.stream.set_write_timeout(Some(timeout))?;
        Ok(())
    }

    fn startup(&mut self, user: &str, database: &str) -> Result<(), WireError> {
        let mut body = Vec::with_capacity(64);
        body.extend_from_slice(&PROTOCOL_3.to_be_bytes());
        for (k, v) in [
            ("user", user),
            ("database", database),
            ("application_name", "herald-pgtemp"),
        ] {
            put_cstr(&mut body, k)?;
            put_cstr(&mut body, v)?;
        }
        body.push(0);
        let len = frame_len(body.len())?;
        let mut msg = Vec::with_capacity(body.len() + 4);
        msg.extend_from_slice(&len.to_be_bytes());
        msg.extend_from_slice(&body);
        self.stream.write_all(&msg)?;
        loop {
            let (tag, body) = self.read_message()?;
            match tag {
                b'R' => {
                    let code = read_i32(&body, 0)?;
                    if code != 0 {
                        return Err(WireError::Protocol(format!(
                            "server asks for authentication method {code}; only trust auth is supported"
                        )));
                    }
                }
                b'E' => return Err(parse_error(&body)),
                b'Z' => return Ok(()),
                // ParameterStatus, BackendKeyData, NoticeResponse.
                _ => {}
            }
        }
    }

    /// Runs `sql` with the simple query protocol (it may hold several statements)
    /// and returns the rows of every statement, in order. The first error ends it.
    pub fn simple_query(&mut self, sql: &str) -> Result<Vec<TextRow>, WireError> {
        let mut body = Vec::with_capacity(sql.len() + 1);
        put_cstr(&mut body, sql)?;
        self.send(b'Q', &body)?;
        let mut rows = Vec::new();
        let mut error = None;
        loop {
            let (tag, body) = self.read_message()?;
            match tag {
                b'D' => rows.push(parse_data_row(&body)?),
                b'E' if error.is_none() => error = Some(parse_error(&body)),
                b'Z' => break,
                // RowDescription, CommandComplete, EmptyQueryResponse, notices...
                _ => {}
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(rows),
        }
    }

    fn send(&mut self, tag: u8, body: &[u8]) -> Result<(), WireError> {
        let len = frame_len(body.len())?;
        let mut msg = Vec::with_capacity(body.len() + 5);
        msg.push(tag);
        msg.extend_from_slice(&len.to_be_bytes());
        msg.extend_from_slice(body);
        self.stream.write_all(&msg)?;
        Ok(())
    }

    fn read_message(&mut self) -> Result<(u8, Vec<u8>), WireError> {
        let mut head = [0u8; 5];
        self.stream.read_exact(&mut head)?;
        let len = i32::from_be_bytes([head[1], head[2], head[3], head[4]]);
        let len = usize::try_from(len)
            .ok()
            .and_then(|l| l.checked_sub(4))
            .filter(|&l| l <= MAX_MESSAGE)
            .ok_or_else(|| WireError::Protocol(format!("bad message length {len}")))?;
        let mut body = vec![0u8; len];
        self.stream.read_exact(&mut body)?;
        Ok((head[0], body))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Terminate: the server ends the session without logging an EOF complaint.
        let _ = self.stream.write_all(&[b'X', 0, 0, 0, 4]);
    }
}

/// The length field of a message with a body of `body` bytes (it counts itself).
fn frame_len(body: usize) -> Result<i32, WireError> {
    body.checked_add(4)
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| WireError::Protocol("message too large".into()))
}

fn put_cstr(buf: &mut Vec<u8>, s: &str) -> Result<(), WireError> {
    if s.as_bytes().contains(&0) {
        return Err(WireError::Protocol("string contains a NUL byte".into()));
    }
    buf.extend_from_slice(s.as_bytes());
    buf.push(0);
    Ok(())
}

fn read_i32(body: &[u8], at: usize) -> Result<i32, WireError> {
    body.get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map(i32::from_be_bytes)
        .ok_or_else(|| WireError::Protocol("truncated message".into()))
}

fn parse_data_row(body: &[u8]) -> Result<TextRow, WireError> {
    let count = body
        .get(0..2)
        .map(|b| i16::from_be_bytes([b[0], b[1]]))
        .ok_or_else(|| WireError::Protocol("truncated DataRow".into()))?;
    let mut at = 2;
    let mut row = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
    for _ in 0..count {
        let len = read_i32(body, at)?;
        at += 4;
        if len < 0 {
            row.push(None);
            continue;
        }
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| at.checked_add(l))
            .filter(|&e| e <= body.len())
            .ok_or_else(|| WireError::Protocol("truncated DataRow column".into()))?;
        row.push(Some(String::from_utf8_lossy(&body[at..end]).into_owned()));
        at = end;
    }
    Ok(row)
}

/// An `ErrorResponse` body: `(field code, C string)` pairs ending with a zero byte.
fn parse_error(body: &[u8]) -> WireError {
    let (mut severity, mut code, mut message) = (String::new(), String::new(), String::new());
    let mut fields = body;
    while let Some((&kind, rest)) = fields.split_first() {
        if kind == 0 {
            break;
        }
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        let value = String::from_utf8_lossy(&rest[..end]).into_owned();
        match kind {
            b'S' => severity = value,
            b'C' => code = value,
            b'M' => message = value,
            _ => {}
        }
        fields = rest.get(end + 1..).unwrap_or(&[]);
    }
    WireError::Server {
        severity,
        code,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_error_fields() {
        let mut body = Vec::new();
        for (k, v) in [(b'S', "FATAL"), (b'C', "57P03"), (b'M', "starting up")] {
            body.push(k);
            body.extend_from_slice(v.as_bytes());
            body.push(0);
        }
        body.push(0);
        let e = parse_error(&body);
        assert_eq!(e.code(), Some("57P03"));
        assert_eq!(e.to_string(), "FATAL 57P03: starting up");
    }

    #[test]
    fn parses_data_rows_with_nulls() {
        let mut body = vec![0, 2];
        body.extend_from_slice(&3i32.to_be_bytes());
        body.extend_from_slice(b"abc");
        body.extend_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(
            parse_data_row(&body).unwrap(),
            vec![Some("abc".to_string()), None]
        );
        assert!(parse_data_row(&body[..6]).is_err());
    }
}
