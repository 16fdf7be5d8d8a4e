//! Store URLs as they may be shown: with any password replaced.
//!
//! A PostgreSQL URL may carry a password (`postgres://user:secret@host/db`, or
//! `?password=secret`, or `password=secret` in the key=value form). Logs,
//! errors and API answers show the URL only through [`RedactedUrl`].

use std::fmt;

/// What a password is shown as.
const MASK: &str = "***";

/// Displays a store URL with its password (in the user-info part or as a
/// `password` parameter) masked; everything else is shown as given.
#[derive(Clone, Copy)]
pub struct RedactedUrl<'a>(pub &'a str);

impl fmt::Display for RedactedUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact(self.0))
    }
}

impl fmt::Debug for RedactedUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", redact(self.0))
    }
}

/// The URL with its password masked.
pub fn redact(url: &str) -> String {
    let out = match url.split_once("://") {
        Some((scheme, rest)) => format!("{scheme}://{}", redact_authority(rest)),
        None => url.to_string(),
    };
    redact_password_params(&out)
}

/// `user:secret@host/...` → `user:***@host/...`. The user-info ends at the
/// last `@` before the path, so a password holding `@` is masked whole.
fn redact_authority(rest: &str) -> String {
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:{MASK}@{host}{tail}"),
            None => rest.to_string(),
        },
        None => rest.to_string(),
    }
}

/// Masks the value of every `password=` parameter (query string or
/// space-separated key=value form).
fn redact_password_params(s: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let mut out = String::with_capacity(s.len());
    let mut from = 0;
    let mut search = 0;
    while let Some(pos) = lower[search..].find("password=") {
        let start = search + pos;
        let at_boundary = start == 0
            || matches!(
                s.as_bytes().get(start - 1),
                Some(b'?' | b'&' | b' ' | b'\t')
            );
        let value = start + "password=".len();
        search = value;
        if !at_boundary {
            continue;
        }
        let end = s[value..]
            .find(['&', ' ', '\t'])
            .map_or(s.len(), |n| value + n);
        out.push_str(&s[from..value]);
        out.push_str(MASK);
        from = end;
        search = end;
    }
    out.push_str(&s[from..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked_wherever_a_url_carries_them() {
        let cases = [
            (
                "postgres://herald:s3cret@db:5432/h?pool_size=4",
                "postgres://herald:***@db:5432/h?pool_size=4",
            ),
            ("postgresql://u:p@ss@w0rd@h/db", "postgresql://u:***@h/db"),
            (
                "postgres://u@h/db?password=s3cret&sslmode=require",
                "postgres://u@h/db?password=***&sslmode=require",
            ),
            (
                "host=h user=u password=s3cret dbname=d",
                "host=h user=u password=*** dbname=d",
            ),
            ("postgres://u@h/db", "postgres://u@h/db"),
            ("sqlite://./data/herald.db", "sqlite://./data/herald.db"),
            ("sqlite::memory:", "sqlite::memory:"),
            (
                "postgres://h/db?mypassword=x",
                "postgres://h/db?mypassword=x",
            ),
        ];
        for (url, want) in cases {
            assert_eq!(RedactedUrl(url).to_string(), want, "{url}");
            assert!(!format!("{:?}", RedactedUrl(url)).contains("s3cret"));
        }
    }
}
