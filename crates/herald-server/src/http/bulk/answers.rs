//! The answers of a bulk request, kept as LZ4-compressed segments of about
//! 64 KiB.
//!
//! A request of 100,000 lines holds some 9 MB of answers until it ends (in
//! one growing `Vec`, up to twice that), and twenty concurrent requests showed
//! it in the node's RSS. The answers are repetitive JSON: a sealed segment
//! compresses several times over, costs well under a millisecond to pack, and
//! is unpacked one at a time as the response body goes out.

use std::convert::Infallible;

use axum::body::Body;
use bytes::Bytes;

/// Size at which the open segment is sealed.
const SEGMENT: usize = 64 * 1024;

/// NDJSON answer lines, in order.
#[derive(Default)]
pub struct Answers {
    /// Full segments, compressed (size-prefixed LZ4 blocks).
    sealed: Vec<Vec<u8>>,
    /// Bytes held by `sealed` (compressed).
    sealed_len: usize,
    /// Uncompressed bytes in `sealed`.
    plain_len: usize,
    open: Vec<u8>,
}

impl Answers {
    /// Where the next answer (one JSON object) is written; end it with
    /// [`Answers::end_line`].
    pub fn line(&mut self) -> &mut Vec<u8> {
        if self.open.capacity() == 0 {
            self.open.reserve_exact(SEGMENT + 1024);
        }
        &mut self.open
    }

    /// Ends the answer just written, sealing the segment once it is full.
    pub fn end_line(&mut self) {
        self.open.push(b'\n');
        if self.open.len() >= SEGMENT {
            let packed = lz4_flex::compress_prepend_size(&self.open);
            self.plain_len += self.open.len();
            self.sealed_len += packed.len();
            self.sealed.push(packed);
            self.open.clear();
        }
    }

    /// Bytes held (what the budget is charged).
    pub fn len(&self) -> usize {
        self.sealed_len + self.open.capacity()
    }

    /// Bytes of NDJSON, uncompressed.
    pub fn plain_len(&self) -> usize {
        self.plain_len + self.open.len()
    }

    /// Every segment, uncompressed, in order.
    fn segments(&self) -> impl Iterator<Item = Bytes> + '_ {
        self.sealed
            .iter()
            .map(|p| Bytes::from(unpack(p)))
            .chain(std::iter::once(Bytes::copy_from_slice(&self.open)))
    }

    /// Calls `f` with every answer line, without its newline.
    pub fn for_each_line(&self, mut f: impl FnMut(&[u8])) {
        for seg in self.segments() {
            for line in seg.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                f(line);
            }
        }
    }

    /// The whole NDJSON, as a body that unpacks one segment at a time.
    pub fn into_body(self) -> Body {
        let Answers { sealed, open, .. } = self;
        let packed = sealed.into_iter().map(|p| Bytes::from(unpack(&p)));
        let parts = packed.chain((!open.is_empty()).then(|| Bytes::from(open)));
        Body::from_stream(futures_util::stream::iter(parts.map(Ok::<_, Infallible>)))
    }
}

/// A sealed segment's bytes. Herald packed them itself a moment ago, so a
/// failure is a bug; it shows as an empty segment rather than a panic.
fn unpack(packed: &[u8]) -> Vec<u8> {
    lz4_flex::decompress_size_prepended(packed).unwrap_or_else(|e| {
        tracing::error!(error = %e, "a packed bulk answer segment did not unpack");
        Vec::new()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn lines_and_body_keep_every_answer_in_order_across_segments() {
        let mut a = Answers::default();
        let mut want = Vec::new();
        for i in 0..5_000 {
            let text = format!("{{\"line\":{i},\"pad\":\"{}\"}}", "x".repeat(i % 50));
            a.line().extend_from_slice(text.as_bytes());
            a.end_line();
            want.push(text);
        }
        assert!(a.sealed.len() > 1, "several segments were sealed");
        let mut lines = Vec::new();
        a.for_each_line(|l| lines.push(String::from_utf8_lossy(l).into_owned()));
        assert_eq!(lines, want);
        let plain = want.iter().map(|l| l.len() + 1).sum::<usize>();
        assert_eq!(a.plain_len(), plain);
        assert!(a.len() < plain / 2, "{} held for {plain}", a.len());
        let body = a.into_body().collect().await.expect("body").to_bytes();
        let mut joined = want.join("\n");
        joined.push('\n');
        assert_eq!(&body[..], joined.as_bytes());
    }
}
