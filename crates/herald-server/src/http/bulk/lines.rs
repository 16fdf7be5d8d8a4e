//! NDJSON lines out of a streamed body, with bounded memory: at most one
//! line (of the longest allowed) is buffered, besides the frame being
//! split. The body's limits are checked as it arrives, so a request over
//! them is stopped the moment it crosses, not after it has been read.

use axum::body::{Body, BodyDataStream, Bytes};
use axum::http::StatusCode;
use http_body_util::BodyExt;

use crate::http::error::ApiError;
use crate::http::request::body_error;

/// What the reader gives: a non-blank line (without its `\r\n`) or a line
/// over the longest allowed (skipped), each with its 1-based number.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    Text(usize, Vec<u8>),
    TooLong(usize),
}

/// The limits of one body.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_bytes: usize,
    pub max_lines: usize,
    pub max_line_bytes: usize,
}

/// Splits a body into lines as its frames arrive.
pub struct LineReader {
    frames: Frames,
    limits: Limits,
    /// The unsplit rest of the current frame.
    pending: Bytes,
    /// The line being gathered across frames.
    line: Vec<u8>,
    /// The current line is over the limit: drop it up to its newline.
    skipping: bool,
    /// Lines seen, blank ones included (the number of the last one).
    line_no: usize,
    /// Non-blank lines given out, against `max_lines`.
    given: usize,
    /// Body bytes received, against `max_bytes`.
    received: usize,
    done: bool,
}

/// Where frames come from: a request body, or (in tests) a list.
enum Frames {
    Body(BodyDataStream),
    #[cfg(test)]
    List(std::collections::VecDeque<Bytes>),
}

impl Frames {
    async fn next(&mut self) -> Option<Result<Bytes, ApiError>> {
        match self {
            Frames::Body(s) => loop {
                match s.frame().await? {
                    Ok(f) => match f.into_data() {
                        Ok(data) => return Some(Ok(data)),
                        // Trailers: not data; read on.
                        Err(_) => continue,
                    },
                    Err(e) => return Some(Err(body_error(&e))),
                }
            },
            #[cfg(test)]
            Frames::List(l) => l.pop_front().map(Ok),
        }
    }
}

impl LineReader {
    pub fn new(body: Body, limits: Limits) -> Self {
        Self::with_frames(Frames::Body(body.into_data_stream()), limits)
    }

    fn with_frames(frames: Frames, limits: Limits) -> Self {
        Self {
            frames,
            limits,
            pending: Bytes::new(),
            line: Vec::new(),
            skipping: false,
            line_no: 0,
            given: 0,
            received: 0,
            done: false,
        }
    }

    /// Non-blank lines given out so far.
    pub fn lines_given(&self) -> usize {
        self.given
    }

    /// The next non-blank line, `None` at the end of the body, or the error
    /// that stops the request: a limit crossed (`413`) or a body that could
    /// not be read (`400`, or `408` if it was too slow).
    pub async fn next(&mut self) -> Result<Option<Line>, ApiError> {
        loop {
            if self.pending.is_empty() {
                if self.done {
                    return Ok(None);
                }
                match self.frames.next().await {
                    Some(Ok(data)) => {
                        self.received = self.received.saturating_add(data.len());
                        if self.received > self.limits.max_bytes {
                            self.done = true;
                            return Err(ApiError::too_large(self.limits.max_bytes));
                        }
                        self.pending = data;
                        continue;
                    }
                    Some(Err(e)) => {
                        self.done = true;
                        return Err(e);
                    }
                    None => {
                        self.done = true;
                        // The last line needs no newline.
                        if (self.skipping || !self.line.is_empty())
                            && let Some(l) = self.end_line()?
                        {
                            return Ok(Some(l));
                        }
                        return Ok(None);
                    }
                }
            }
            match self.pending.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    let part = self.pending.split_to(i + 1);
                    if !self.skipping {
                        self.gather(&part[..i]);
                    }
                    if let Some(l) = self.end_line()? {
                        return Ok(Some(l));
                    }
                }
                None => {
                    let part = std::mem::take(&mut self.pending);
                    if !self.skipping {
                        self.gather(&part);
                    }
                }
            }
        }
    }

    /// Adds to the current line, or starts skipping it once it is too long.
    fn gather(&mut self, part: &[u8]) {
        // One byte of slack for a `\r` before the newline.
        if self.line.len() + part.len() > self.limits.max_line_bytes + 1 {
            self.skipping = true;
            self.line = Vec::new();
        } else {
            self.line.extend_from_slice(part);
        }
    }

    /// Ends the current line: what to give out for it, if anything.
    fn end_line(&mut self) -> Result<Option<Line>, ApiError> {
        self.line_no += 1;
        let out = if std::mem::take(&mut self.skipping) {
            Line::TooLong(self.line_no)
        } else {
            let mut line = std::mem::take(&mut self.line);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.iter().all(|b| b.is_ascii_whitespace()) {
                return Ok(None);
            }
            if line.len() > self.limits.max_line_bytes {
                Line::TooLong(self.line_no)
            } else {
                Line::Text(self.line_no, line)
            }
        };
        self.given += 1;
        if self.given > self.limits.max_lines {
            self.done = true;
            self.pending = Bytes::new();
            let mut e = ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_many_lines",
                format!(
                    "line {} is over the limit of {} lines per request",
                    self.line_no, self.limits.max_lines
                ),
            );
            e.body.field = Some("body".into());
            return Err(e);
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(frames: &[&str], limits: Limits) -> LineReader {
        let list = frames
            .iter()
            .map(|f| Bytes::copy_from_slice(f.as_bytes()))
            .collect();
        LineReader::with_frames(Frames::List(list), limits)
    }

    const ROOMY: Limits = Limits {
        max_bytes: 1000,
        max_lines: 10,
        max_line_bytes: 5,
    };

    async fn all(r: &mut LineReader) -> Result<Vec<Line>, ApiError> {
        let mut out = Vec::new();
        while let Some(l) = r.next().await? {
            out.push(l);
        }
        Ok(out)
    }

    fn text(n: usize, s: &str) -> Line {
        Line::Text(n, s.as_bytes().to_vec())
    }

    #[tokio::test]
    async fn lines_split_across_frames_skip_blanks_and_count_from_one() {
        let mut r = reader(&["a\n\n  \r", "\nb", "c\r\nd"], ROOMY);
        let got = all(&mut r).await.unwrap();
        assert_eq!(got, vec![text(1, "a"), text(4, "bc"), text(5, "d")]);
        assert_eq!(r.lines_given(), 3);
    }

    #[tokio::test]
    async fn a_long_line_is_skipped_whole_and_named() {
        let mut r = reader(&["abcd", "efgh\nok\n", "123456"], ROOMY);
        let got = all(&mut r).await.unwrap();
        assert_eq!(got, vec![Line::TooLong(1), text(2, "ok"), Line::TooLong(3)]);
        // Exactly the limit, with a `\r`, is fine.
        let mut r = reader(&["abcde\r\n"], ROOMY);
        assert_eq!(all(&mut r).await.unwrap(), vec![text(1, "abcde")]);
    }

    #[tokio::test]
    async fn limits_stop_the_body_as_it_crosses_them() {
        let few = Limits {
            max_lines: 2,
            ..ROOMY
        };
        let mut r = reader(&["a\nb\n\nc\nd\n"], few);
        assert_eq!(r.next().await.unwrap(), Some(text(1, "a")));
        assert_eq!(r.next().await.unwrap(), Some(text(2, "b")));
        let e = r.next().await.unwrap_err();
        assert_eq!(
            (e.status, e.body.code),
            (StatusCode::PAYLOAD_TOO_LARGE, "too_many_lines")
        );
        assert_eq!(r.next().await.unwrap(), None);
        let small = Limits {
            max_bytes: 6,
            ..ROOMY
        };
        let mut r = reader(&["a\nb\n", "c\nd\n"], small);
        assert_eq!(r.next().await.unwrap(), Some(text(1, "a")));
        assert_eq!(r.next().await.unwrap(), Some(text(2, "b")));
        let e = r.next().await.unwrap_err();
        assert_eq!(e.body.code, "payload_too_large");
    }
}
