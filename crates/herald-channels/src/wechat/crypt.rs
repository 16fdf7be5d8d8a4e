//! WeChat's message encryption ("safe mode", 消息加解密): what the account's
//! `EncodingAESKey` does to a callback body.
//!
//! The key is 43 base64 characters (with a `=` appended, 32 bytes of
//! AES-256 key); the IV is the key's first 16 bytes. The plaintext is
//! `16 random bytes | message length (4 bytes, big-endian) | message | appid`,
//! padded PKCS#7-style to a multiple of 32 bytes (not AES's 16), encrypted
//! with AES-256-CBC and sent base64 in the `<Encrypt>` element.

use aes::Aes256;
use base64::Engine;
use base64::alphabet::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use cbc::cipher::block_padding::NoPadding;
use cbc::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};

/// Characters of an `EncodingAESKey`.
pub const ENCODING_AES_KEY_LEN: usize = 43;
/// WeChat pads to this, not to AES's block of 16.
const PAD_BLOCK: usize = 32;
/// Random bytes in front of each message.
const RANDOM_LEN: usize = 16;

/// Keys are random alphanumerics, so the 43rd character carries bits past
/// the 32nd byte: they are ignored, as WeChat's own samples do.
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// One account's message cipher.
#[derive(Clone)]
pub struct MsgCrypt {
    key: [u8; 32],
}

impl std::fmt::Debug for MsgCrypt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MsgCrypt(<redacted>)")
    }
}

/// What a decrypted `<Encrypt>` holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// The message (the event XML).
    pub message: Vec<u8>,
    /// The appid it was encrypted for.
    pub appid: Vec<u8>,
}

impl MsgCrypt {
    /// The cipher of an `EncodingAESKey`; the error says what is wrong
    /// with it, never what it is.
    pub fn new(encoding_aes_key: &str) -> Result<Self, String> {
        let k = encoding_aes_key.trim();
        if k.len() != ENCODING_AES_KEY_LEN
            || !k
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
        {
            return Err(format!(
                "must be {ENCODING_AES_KEY_LEN} base64 characters, as the WeChat console shows it"
            ));
        }
        let bytes = LENIENT
            .decode(format!("{k}="))
            .map_err(|_| "is not base64".to_string())?;
        let key: [u8; 32] = bytes
            .try_into()
            .map_err(|_| "does not decode to 32 bytes".to_string())?;
        Ok(Self { key })
    }

    fn iv(&self) -> [u8; 16] {
        let mut iv = [0u8; 16];
        iv.copy_from_slice(&self.key[..16]);
        iv
    }

    /// Decrypts the base64 text of `<Encrypt>`. Fails, without panicking,
    /// on any input that is not such a text under this key.
    pub fn decrypt(&self, encrypted: &str) -> Result<Opened, String> {
        let mut data = LENIENT
            .decode(encrypted.trim())
            .map_err(|_| "Encrypt is not base64".to_string())?;
        if data.is_empty() || data.len() % 16 != 0 {
            return Err("Encrypt is not a whole number of AES blocks".into());
        }
        let dec = cbc::Decryptor::<Aes256>::new(&self.key.into(), &self.iv().into());
        let plain = dec
            .decrypt_padded_mut::<NoPadding>(&mut data)
            .map_err(|_| "Encrypt could not be decrypted".to_string())?;
        let pad = usize::from(*plain.last().unwrap_or(&0));
        if pad == 0 || pad > PAD_BLOCK || pad > plain.len() {
            return Err("Encrypt did not decrypt with this encoding_aes_key (bad padding)".into());
        }
        let content = &plain[..plain.len() - pad];
        let Some(len_bytes) = content.get(RANDOM_LEN..RANDOM_LEN + 4) else {
            return Err("Encrypt is too short".into());
        };
        let mut be = [0u8; 4];
        be.copy_from_slice(len_bytes);
        let len = u32::from_be_bytes(be) as usize;
        let start = RANDOM_LEN + 4;
        let Some(message) = start
            .checked_add(len)
            .and_then(|end| content.get(start..end))
        else {
            return Err("Encrypt did not decrypt with this encoding_aes_key (bad length)".into());
        };
        Ok(Opened {
            message: message.to_vec(),
            appid: content[start + len..].to_vec(),
        })
    }

    /// Encrypts `message` for `appid` as WeChat does, with `random` in
    /// front (what a provider, or `herald mock`, sends).
    pub fn encrypt(&self, message: &[u8], appid: &str, random: [u8; RANDOM_LEN]) -> String {
        let len = u32::try_from(message.len()).unwrap_or(u32::MAX);
        let mut plain =
            Vec::with_capacity(RANDOM_LEN + 4 + message.len() + appid.len() + PAD_BLOCK);
        plain.extend_from_slice(&random);
        plain.extend_from_slice(&len.to_be_bytes());
        plain.extend_from_slice(message);
        plain.extend_from_slice(appid.as_bytes());
        let pad = PAD_BLOCK - plain.len() % PAD_BLOCK;
        plain.extend(std::iter::repeat_n(pad as u8, pad));
        let n = plain.len();
        let enc = cbc::Encryptor::<Aes256>::new(&self.key.into(), &self.iv().into());
        let out = match enc.encrypt_padded_mut::<NoPadding>(&mut plain, n) {
            Ok(out) => out.to_vec(),
            // The length is a multiple of the block by construction.
            Err(_) => Vec::new(),
        };
        base64::engine::general_purpose::STANDARD.encode(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The sample of WeChat's own WXBizMsgCrypt demo.
    const KEY: &str = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG";
    const APPID: &str = "wx2c2769f8efd9abc2";
    const SAMPLE: &str = "hyzAe4OzmOMbd6TvGdIOO6uBmdJoD0Fk53REIHvxYtJlE2B655HuD0m8KUePWB3+LrPXo87wzQ1QLvbeUgmBM4x6F8PGHQHFVAFmOD2LdJF9FrXpbUAh0B5GIItb52sn896wVsMSHGuPE328HnRGBcrS7C41IzDWyWNlZkyyXwon8T332jisa+h6tEDYsVticbSnyU8dKOIbgU6ux5VTjg3yt+WGzjlpKn6NPhRjpA912xMezR4kw6KWwMrCVKSVCZciVGCgavjIQ6X8tCOp3yZbGpy0VxpAe+77TszTfRd5RJSVO/HTnifJpXgCSUdUue1v6h0EIBYYI1BD1DlD+C0CR8e6OewpusjZ4uBl9FyJvnhvQl+q5rv1ixrcpCumEPo5MJSgM9ehVsNPfUM669WuMyVWQLCzpu9GhglF2PE=";

    #[test]
    fn decrypts_wechats_sample() {
        let c = MsgCrypt::new(KEY).unwrap();
        let opened = c.decrypt(SAMPLE).unwrap();
        assert_eq!(opened.appid, APPID.as_bytes());
        let xml = String::from_utf8(opened.message).unwrap();
        assert!(xml.starts_with("<xml>"), "{xml}");
        assert!(xml.contains("<![CDATA[abcdteT]]>"), "{xml}");
    }

    #[test]
    fn roundtrips_every_length_around_the_block() {
        let c = MsgCrypt::new(KEY).unwrap();
        for n in 0..70 {
            let msg = vec![b'x'; n];
            let sealed = c.encrypt(&msg, APPID, [7; 16]);
            let opened = c.decrypt(&sealed).unwrap();
            assert_eq!(
                (opened.message, opened.appid),
                (msg, APPID.as_bytes().to_vec())
            );
        }
    }

    #[test]
    fn refuses_bad_keys_and_texts() {
        assert!(MsgCrypt::new("short").is_err());
        assert!(MsgCrypt::new(&"!".repeat(43)).is_err());
        let c = MsgCrypt::new(KEY).unwrap();
        assert!(c.decrypt("").is_err());
        assert!(c.decrypt("not base64 ***").is_err());
        assert!(c.decrypt("AAAA").is_err());
        let other = MsgCrypt::new(&KEY.replace('a', "b")).unwrap();
        let sealed = other.encrypt(b"<xml/>", APPID, [1; 16]);
        assert!(
            c.decrypt(&sealed)
                .map(|o| o.appid != APPID.as_bytes())
                .unwrap_or(true)
        );
    }

    proptest::proptest! {
        /// Decryption answers every text, an error at worst.
        #[test]
        fn decrypt_never_panics(text in "[A-Za-z0-9+/=]{0,200}", raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let c = MsgCrypt::new(KEY).unwrap();
            let _ = c.decrypt(&text);
            let _ = c.decrypt(&base64::engine::general_purpose::STANDARD.encode(&raw));
        }
    }
}
