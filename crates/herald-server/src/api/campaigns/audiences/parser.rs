//! NDJSON and CSV recipient lists, read incrementally: the body of an
//! audience upload arrives in pieces cut anywhere, and each complete record
//! becomes a checked recipient as soon as it is whole. Pure: no I/O.

use serde::Deserialize;

use crate::http::fields::recipient_problem;

/// Longest line (NDJSON) or record (CSV) of an upload.
pub const MAX_RECORD_BYTES: usize = 64 * 1024;

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

/// One line of an NDJSON audience upload (`POST /v1/audiences`); blank
/// lines are skipped.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RecipientLine)]
pub(crate) struct NdLine {
    /// 1..=256 bytes, no control characters.
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"
    )]
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
            Format::Ndjson => match crate::http::json_body::object::<NdLine>(rec) {
                Ok(l) => l.recipient,
                Err(e) => {
                    let msg = e.body.message;
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
