//! Proof that a callback comes from WeChat: the account's `Token` (and, in
//! safe mode, its `EncodingAESKey`) as set on the WeChat console's server
//! configuration page.
//!
//! WeChat signs `signature = sha1(sort(token, timestamp, nonce) joined)`,
//! which covers none of the body; in safe mode it adds
//! `msg_signature = sha1(sort(token, timestamp, nonce, Encrypt) joined)`,
//! which covers the encrypted body. So a channel with an AES key takes only
//! encrypted callbacks. Either way a timestamp more than
//! [`MAX_SKEW_S`] from now is refused, so a captured request soon stops
//! working.

use std::borrow::Cow;

use sha1::{Digest, Sha1};

use super::callback::encrypted_part;
use super::crypt::MsgCrypt;
use crate::provider_http::Secret;
use crate::{CallbackError, CallbackRequest};

/// How far a callback's timestamp may be from now, either way.
pub const MAX_SKEW_S: i64 = 300;

/// `sha1` of the parts sorted and joined, in lower-case hex: WeChat's
/// signature of a callback.
pub fn signature(parts: &[&str]) -> String {
    let mut sorted = parts.to_vec();
    sorted.sort_unstable();
    let mut h = Sha1::new();
    for p in sorted {
        h.update(p.as_bytes());
    }
    hex::encode(h.finalize())
}

/// Compares without stopping at the first difference.
pub(crate) fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A channel's callback secrets.
#[derive(Debug)]
pub(super) struct CallbackAuth {
    token: Secret,
    crypt: Option<MsgCrypt>,
    appid: String,
}

fn refuse(message: impl Into<String>) -> CallbackError {
    CallbackError::Unauthorized(message.into())
}

impl CallbackAuth {
    pub(super) fn new(token: String, crypt: Option<MsgCrypt>, appid: String) -> Self {
        Self {
            token: Secret::new(token),
            crypt,
            appid,
        }
    }

    /// The `timestamp` and `nonce` of a request, when the timestamp is
    /// within [`MAX_SKEW_S`] of now.
    fn fresh<'a>(req: &CallbackRequest<'a>) -> Result<(&'a str, &'a str), CallbackError> {
        let ts = req
            .param("timestamp")
            .ok_or_else(|| refuse("timestamp: missing"))?;
        let nonce = req.param("nonce").ok_or_else(|| refuse("nonce: missing"))?;
        let at: i64 = ts
            .trim()
            .parse()
            .map_err(|_| refuse("timestamp: not a number of unix seconds"))?;
        if at.abs_diff(req.now_s) > MAX_SKEW_S.unsigned_abs() {
            return Err(refuse(format!(
                "timestamp: more than {MAX_SKEW_S} s from this server's clock"
            )));
        }
        Ok((ts, nonce))
    }

    /// Checks `signature` over token, timestamp and nonce.
    fn check_plain(&self, req: &CallbackRequest<'_>) -> Result<(), CallbackError> {
        let (ts, nonce) = Self::fresh(req)?;
        let sent = req
            .param("signature")
            .ok_or_else(|| refuse("signature: missing"))?;
        let want = signature(&[self.token.expose(), ts, nonce]);
        if !same_text(&want, &sent.trim().to_ascii_lowercase()) {
            return Err(refuse(
                "signature: does not match the channel's callback_token",
            ));
        }
        Ok(())
    }

    /// The server-URL check: `echostr` when the request is signed.
    pub(super) fn handshake(&self, req: &CallbackRequest<'_>) -> Result<String, CallbackError> {
        self.check_plain(req)?;
        req.param("echostr")
            .map(str::to_string)
            .ok_or_else(|| CallbackError::Invalid("echostr: missing".into()))
    }

    /// The event XML of a callback, once its signature is checked (and, in
    /// safe mode, its body decrypted).
    pub(super) fn open<'a>(
        &self,
        req: &CallbackRequest<'a>,
    ) -> Result<Cow<'a, [u8]>, CallbackError> {
        let Some(crypt) = &self.crypt else {
            self.check_plain(req)?;
            return Ok(Cow::Borrowed(req.body));
        };
        let (ts, nonce) = Self::fresh(req)?;
        if !req
            .param("encrypt_type")
            .is_some_and(|t| t.eq_ignore_ascii_case("aes"))
        {
            return Err(refuse(
                "encrypt_type: this channel has an encoding_aes_key and takes only encrypted callbacks (encrypt_type=aes)",
            ));
        }
        let sent = req
            .param("msg_signature")
            .ok_or_else(|| refuse("msg_signature: missing"))?;
        let encrypted = encrypted_part(req.body)?;
        let want = signature(&[self.token.expose(), ts, nonce, &encrypted]);
        if !same_text(&want, &sent.trim().to_ascii_lowercase()) {
            return Err(refuse(
                "msg_signature: does not match the channel's callback_token and the body",
            ));
        }
        let opened = crypt.decrypt(&encrypted).map_err(refuse)?;
        if !same_text(&String::from_utf8_lossy(&opened.appid), self.appid.as_str()) {
            return Err(refuse("Encrypt: encrypted for another appid"));
        }
        Ok(Cow::Owned(opened.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "spamtest";
    const KEY: &str = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG";
    const APPID: &str = "wx2c2769f8efd9abc2";

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn req<'a>(query: &'a [(String, String)], body: &'a [u8], now_s: i64) -> CallbackRequest<'a> {
        CallbackRequest { query, body, now_s }
    }

    #[test]
    fn wechats_sample_msg_signature() {
        // From WeChat's WXBizMsgCrypt demo: token, timestamp, nonce, Encrypt.
        let encrypt = "hyzAe4OzmOMbd6TvGdIOO6uBmdJoD0Fk53REIHvxYtJlE2B655HuD0m8KUePWB3+LrPXo87wzQ1QLvbeUgmBM4x6F8PGHQHFVAFmOD2LdJF9FrXpbUAh0B5GIItb52sn896wVsMSHGuPE328HnRGBcrS7C41IzDWyWNlZkyyXwon8T332jisa+h6tEDYsVticbSnyU8dKOIbgU6ux5VTjg3yt+WGzjlpKn6NPhRjpA912xMezR4kw6KWwMrCVKSVCZciVGCgavjIQ6X8tCOp3yZbGpy0VxpAe+77TszTfRd5RJSVO/HTnifJpXgCSUdUue1v6h0EIBYYI1BD1DlD+C0CR8e6OewpusjZ4uBl9FyJvnhvQl+q5rv1ixrcpCumEPo5MJSgM9ehVsNPfUM669WuMyVWQLCzpu9GhglF2PE=";
        assert_eq!(
            signature(&[TOKEN, "1409735669", "1320562132", encrypt]),
            "5d197aaffba7e9b25a30732f161a50dee96bd5fa"
        );
        let auth = CallbackAuth::new(
            TOKEN.into(),
            Some(MsgCrypt::new(KEY).unwrap()),
            APPID.into(),
        );
        let body = format!(
            "<xml><ToUserName><![CDATA[gh_10f6c3c3ac5a]]></ToUserName><Encrypt><![CDATA[{encrypt}]]></Encrypt></xml>"
        );
        let query = q(&[
            ("timestamp", "1409735669"),
            ("nonce", "1320562132"),
            ("encrypt_type", "aes"),
            ("msg_signature", "5d197aaffba7e9b25a30732f161a50dee96bd5fa"),
        ]);
        let xml = auth
            .open(&req(&query, body.as_bytes(), 1_409_735_700))
            .unwrap();
        assert!(String::from_utf8_lossy(&xml).contains("abcdteT"));
        // Ten minutes later the same request is stale.
        assert!(matches!(
            auth.open(&req(&query, body.as_bytes(), 1_409_736_300)),
            Err(CallbackError::Unauthorized(m)) if m.starts_with("timestamp")
        ));
        // Another appid is refused.
        let other = CallbackAuth::new(
            TOKEN.into(),
            Some(MsgCrypt::new(KEY).unwrap()),
            "wxother".into(),
        );
        assert!(matches!(
            other.open(&req(&query, body.as_bytes(), 1_409_735_700)),
            Err(CallbackError::Unauthorized(_))
        ));
        // Plain callbacks are refused in safe mode.
        let plain = q(&[
            ("timestamp", "1409735669"),
            ("nonce", "1320562132"),
            (
                "signature",
                &signature(&[TOKEN, "1409735669", "1320562132"]),
            ),
        ]);
        assert!(auth.open(&req(&plain, b"<xml/>", 1_409_735_700)).is_err());
    }

    #[test]
    fn plain_signatures_and_the_handshake() {
        let auth = CallbackAuth::new(TOKEN.into(), None, APPID.into());
        let now = 1_800_000_000;
        let ts = now.to_string();
        let sig = signature(&[TOKEN, &ts, "n1"]);
        let good = q(&[
            ("signature", &sig),
            ("timestamp", &ts),
            ("nonce", "n1"),
            ("echostr", "e42"),
        ]);
        assert_eq!(auth.handshake(&req(&good, b"", now)).unwrap(), "e42");
        assert_eq!(
            &*auth.open(&req(&good, b"<xml/>", now + 299)).unwrap(),
            b"<xml/>"
        );
        assert!(auth.open(&req(&good, b"", now - 301)).is_err());
        assert!(auth.open(&req(&good, b"", now + 301)).is_err());
        for drop in ["signature", "timestamp", "nonce"] {
            let missing: Vec<_> = good.iter().filter(|(k, _)| k != drop).cloned().collect();
            let err = auth.handshake(&req(&missing, b"", now)).unwrap_err();
            assert!(
                matches!(&err, CallbackError::Unauthorized(m) if m.starts_with(drop)),
                "{err:?}"
            );
        }
        let bad = q(&[
            ("signature", &"0".repeat(40)),
            ("timestamp", &ts),
            ("nonce", "n1"),
        ]);
        assert!(matches!(
            auth.open(&req(&bad, b"", now)),
            Err(CallbackError::Unauthorized(_))
        ));
        let other_nonce = q(&[("signature", &sig), ("timestamp", &ts), ("nonce", "n2")]);
        assert!(auth.open(&req(&other_nonce, b"", now)).is_err());
    }

    #[test]
    fn comparison() {
        assert!(same_text("abc", "abc"));
        assert!(!same_text("abc", "abd"));
        assert!(!same_text("abc", "ab"));
    }
}
