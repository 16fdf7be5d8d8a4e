//! Key secrets: their format, their hash, and comparing hashes without
//! telling an attacker how much of a guess was right.
//!
//! An API key reads `hrk_<id>_<secret>`, where the secret is 32 random
//! bytes in unpadded base64url. The id lets the server look the key up
//! directly; only the SHA-256 of the secret is stored, so a leaked table
//! holds no usable key. The hash covers the secret and not the id because
//! the store numbers a key as it stores its hash; the id only picks the
//! row, and the secret's 256 random bits are what prove the caller.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// What every API key starts with, so a leaked one is easy to recognise
/// (secret scanners) and easy to tell from the admin key.
pub const KEY_PREFIX: &str = "hrk_";

/// Random bytes in a key's secret.
const SECRET_BYTES: usize = 32;

/// The secret of a key about to be stored: its hash goes into the store,
/// and once the store has numbered the key, [`KeySecret::key`] is shown to
/// the caller once.
pub struct KeySecret(String);

impl KeySecret {
    pub fn generate() -> KeySecret {
        // ThreadRng is a CSPRNG seeded from the OS.
        let bytes: [u8; SECRET_BYTES] = rand::random();
        KeySecret(URL_SAFE_NO_PAD.encode(bytes))
    }

    /// SHA-256 of the secret, as stored.
    pub fn hash(&self) -> [u8; 32] {
        key_hash(&self.0)
    }

    /// The whole key, once the store has given it `id`.
    pub fn key(&self, id: i64) -> String {
        format!("{KEY_PREFIX}{id}_{}", self.0)
    }
}

/// Never prints the secret.
impl std::fmt::Debug for KeySecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeySecret(..)")
    }
}

/// A new key for the stored key `id` (tests, and callers that number keys
/// themselves).
pub fn new_key(id: i64) -> String {
    KeySecret::generate().key(id)
}

/// SHA-256 of a token: the admin key whole, a stored key's secret.
pub fn key_hash(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// The hash the store keeps for the API key `key`; `None` if `key` is not
/// shaped like one.
pub fn stored_hash(key: &str) -> Option<[u8; 32]> {
    PresentedKey::parse(key).map(|p| key_hash(p.secret))
}

/// Equal hashes, in time that does not depend on where they differ: every
/// byte is looked at, with no early exit.
pub fn same_hash(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        // Hash lengths are public; only the contents are secret.
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// A bearer token that has the shape of an API key.
#[derive(Clone, Copy)]
pub struct PresentedKey<'a> {
    /// The stored key's id, read from the token.
    pub id: i64,
    secret: &'a str,
}

impl<'a> PresentedKey<'a> {
    /// `hrk_<id>_<secret>` with a positive id and a base64url secret, or
    /// `None` for anything else.
    pub fn parse(token: &'a str) -> Option<PresentedKey<'a>> {
        let rest = token.strip_prefix(KEY_PREFIX)?;
        let (id, secret) = rest.split_once('_')?;
        let id = id
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| id.parse::<i64>().ok())
            .flatten()
            .filter(|id| *id > 0)?;
        let base64url = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
        if secret.is_empty() || !secret.bytes().all(base64url) {
            return None;
        }
        Some(PresentedKey { id, secret })
    }

    /// Whether this is the key whose stored hash is `stored`, in constant
    /// time.
    pub fn matches(&self, stored: &[u8]) -> bool {
        same_hash(&key_hash(self.secret), stored)
    }
}

/// Never prints the secret.
impl std::fmt::Debug for PresentedKey<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PresentedKey {{ id: {} }}", self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_keys_parse_and_match_only_their_own_hash() {
        let key = new_key(42);
        assert!(key.starts_with("hrk_42_"), "{key}");
        assert_eq!(key.len(), "hrk_42_".len() + 43);
        let p = PresentedKey::parse(&key).unwrap();
        assert_eq!(p.id, 42);
        assert!(p.matches(&stored_hash(&key).unwrap()));
        assert!(!p.matches(&stored_hash(&new_key(42)).unwrap()));
        assert!(!p.matches(&key_hash(&key)));
        assert!(!format!("{p:?}").contains(&key[7..]));
        let secret = KeySecret::generate();
        let key = secret.key(9);
        assert_eq!(stored_hash(&key), Some(secret.hash()));
        assert!(!format!("{secret:?}").contains(&key[6..]));
    }

    #[test]
    fn other_tokens_are_not_keys() {
        for t in [
            "",
            "hrk_",
            "hrk_1",
            "hrk_1_",
            "hrk_0_abc",
            "hrk_-1_abc",
            "hrk_+1_abc",
            "hrk_x_abc",
            "hrk_1_a b",
            "hrk_1_a=",
            "hrk_99999999999999999999_abc",
            "HRK_1_abc",
            "admin-secret",
        ] {
            assert!(PresentedKey::parse(t).is_none(), "{t:?}");
        }
        assert_eq!(PresentedKey::parse("hrk_7_a-b_c").unwrap().id, 7);
    }

    #[test]
    fn hashes_compare_whole() {
        let a = key_hash("a");
        let mut b = a;
        assert!(same_hash(&a, &b));
        b[31] ^= 1;
        assert!(!same_hash(&a, &b));
        assert!(!same_hash(&a, &a[..31]));
    }
}
