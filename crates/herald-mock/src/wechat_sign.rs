//! How the WeChat mock signs (and, in safe mode, encrypts) the callbacks it
//! posts, as the real platform does with the account's `Token` and
//! `EncodingAESKey`: `signature = sha1(sort(token, timestamp, nonce))`, and
//! in safe mode `msg_signature = sha1(sort(token, timestamp, nonce, Encrypt))`
//! over `AES-256-CBC(16 random bytes | len (BE u32) | xml | appid)`, padded
//! to 32-byte blocks, IV = the key's first 16 bytes.

use aes::Aes256;
use base64::Engine;
use base64::alphabet::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use cbc::cipher::block_padding::NoPadding;
use cbc::cipher::{BlockEncryptMut, KeyIvInit};
use ring::rand::{SecureRandom, SystemRandom};
use sha1::{Digest, Sha1};

/// `EncodingAESKey`s are 43 random alphanumerics: the last one's spare bits
/// are ignored.
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// `sha1` of the parts sorted and joined, in lower-case hex.
pub(crate) fn signature(parts: &[&str]) -> String {
    let mut sorted = parts.to_vec();
    sorted.sort_unstable();
    let mut h = Sha1::new();
    for p in sorted {
        h.update(p.as_bytes());
    }
    hex::encode(h.finalize())
}

/// The 32-byte key of an `EncodingAESKey`, if it is one.
pub(crate) fn aes_key(encoding_aes_key: &str) -> Result<[u8; 32], String> {
    let k = encoding_aes_key.trim();
    if k.len() != 43 {
        return Err("encoding_aes_key must be 43 characters".into());
    }
    LENIENT
        .decode(format!("{k}="))
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .ok_or_else(|| "encoding_aes_key is not base64 of 32 bytes".into())
}

/// The base64 `<Encrypt>` text of `xml` for `appid`.
pub(crate) fn encrypt(key: &[u8; 32], xml: &[u8], appid: &str) -> String {
    let mut random = [0u8; 16];
    // A failed draw leaves zeros: fine for a mock, the text still decrypts.
    let _ = SystemRandom::new().fill(&mut random);
    let len = u32::try_from(xml.len()).unwrap_or(u32::MAX);
    let mut plain = Vec::with_capacity(16 + 4 + xml.len() + appid.len() + 32);
    plain.extend_from_slice(&random);
    plain.extend_from_slice(&len.to_be_bytes());
    plain.extend_from_slice(xml);
    plain.extend_from_slice(appid.as_bytes());
    let pad = 32 - plain.len() % 32;
    plain.extend(std::iter::repeat_n(pad as u8, pad));
    let n = plain.len();
    let mut iv = [0u8; 16];
    iv.copy_from_slice(&key[..16]);
    let enc = cbc::Encryptor::<Aes256>::new(key.into(), &iv.into());
    let sealed = enc
        .encrypt_padded_mut::<NoPadding>(&mut plain, n)
        .map(|c| c.to_vec())
        .unwrap_or_default();
    base64::engine::general_purpose::STANDARD.encode(sealed)
}

/// What a callback is sent with: its query pairs and its body.
pub(crate) struct Signed {
    pub query: Vec<(&'static str, String)>,
    pub body: String,
}

/// One account's callback secrets and names.
pub(crate) struct Signer {
    pub token: String,
    /// The AES key of safe mode; plain callbacks without one.
    pub key: Option<[u8; 32]>,
    pub appid: String,
    pub original_id: String,
}

impl Signer {
    /// Signs `xml`, for `openid`, as a callback sent at `timestamp` with
    /// `nonce`: plain with only a token, encrypted with a key too.
    pub(crate) fn sign(&self, openid: &str, xml: String, timestamp: u64, nonce: &str) -> Signed {
        let token = self.token.as_str();
        let ts = timestamp.to_string();
        let mut query = vec![
            ("signature", signature(&[token, &ts, nonce])),
            ("timestamp", ts.clone()),
            ("nonce", nonce.to_string()),
            ("openid", openid.to_string()),
        ];
        let Some(key) = &self.key else {
            return Signed { query, body: xml };
        };
        let encrypted = encrypt(key, xml.as_bytes(), &self.appid);
        query.push(("encrypt_type", "aes".into()));
        query.push(("msg_signature", signature(&[token, &ts, nonce, &encrypted])));
        let body = format!(
            "<xml><ToUserName><![CDATA[{}]]></ToUserName><Encrypt><![CDATA[{encrypted}]]></Encrypt></xml>",
            self.original_id
        );
        Signed { query, body }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wechats_sample_signature() {
        // WeChat's WXBizMsgCrypt demo: token, timestamp, nonce and Encrypt.
        let encrypt = "hyzAe4OzmOMbd6TvGdIOO6uBmdJoD0Fk53REIHvxYtJlE2B655HuD0m8KUePWB3+LrPXo87wzQ1QLvbeUgmBM4x6F8PGHQHFVAFmOD2LdJF9FrXpbUAh0B5GIItb52sn896wVsMSHGuPE328HnRGBcrS7C41IzDWyWNlZkyyXwon8T332jisa+h6tEDYsVticbSnyU8dKOIbgU6ux5VTjg3yt+WGzjlpKn6NPhRjpA912xMezR4kw6KWwMrCVKSVCZciVGCgavjIQ6X8tCOp3yZbGpy0VxpAe+77TszTfRd5RJSVO/HTnifJpXgCSUdUue1v6h0EIBYYI1BD1DlD+C0CR8e6OewpusjZ4uBl9FyJvnhvQl+q5rv1ixrcpCumEPo5MJSgM9ehVsNPfUM669WuMyVWQLCzpu9GhglF2PE=";
        assert_eq!(
            signature(&["spamtest", "1409735669", "1320562132", encrypt]),
            "5d197aaffba7e9b25a30732f161a50dee96bd5fa"
        );
        assert!(aes_key("abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG").is_ok());
        assert!(aes_key("short").is_err());
    }

    #[test]
    fn encrypted_callbacks_carry_both_signatures() {
        let mut signer = Signer {
            token: "tok".into(),
            key: Some(aes_key("abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG").unwrap()),
            appid: "wx1".into(),
            original_id: "gh_1".into(),
        };
        let s = signer.sign("o1", "<xml/>".into(), 1_700_000_000, "n1");
        let names: Vec<&str> = s.query.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            names,
            [
                "signature",
                "timestamp",
                "nonce",
                "openid",
                "encrypt_type",
                "msg_signature"
            ]
        );
        assert!(s.body.contains("<Encrypt><![CDATA["));
        signer.key = None;
        let plain = signer.sign("o1", "<xml/>".into(), 1, "n");
        assert_eq!(plain.body, "<xml/>");
        assert_eq!(plain.query[0].1, signature(&["tok", "1", "n"]));
    }
}
