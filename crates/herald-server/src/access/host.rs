//! `Host`, `Origin` and `Sec-Fetch-Site` as open mode and the console's login
//! check them: a page on another site can reach a loopback port through the
//! browser (DNS rebinding, simple cross-origin POSTs) and can post a form to
//! `/ui/login`, and these headers are how such requests show.

use axum::http::{HeaderMap, header};

/// The host name of a `Host` header or URI authority, lower-case, without
/// port, brackets or a trailing dot. `None` when it is not a plain
/// `host[:port]`.
pub fn host_name(authority: &str) -> Option<String> {
    if authority.is_empty()
        || authority
            .bytes()
            .any(|b| matches!(b, b'@' | b'/' | b'\\' | b'?' | b'#') || b.is_ascii_whitespace())
    {
        return None;
    }
    let name = if let Some(rest) = authority.strip_prefix('[') {
        let (ip, after) = rest.split_once(']')?;
        if !(after.is_empty() || port_ok(after.strip_prefix(':')?)) {
            return None;
        }
        ip
    } else {
        match authority.split_once(':') {
            Some((name, port)) if port_ok(port) => name,
            Some(_) => return None,
            None => authority,
        }
    };
    let name = name.strip_suffix('.').unwrap_or(name);
    (!name.is_empty()).then(|| name.to_ascii_lowercase())
}

fn port_ok(port: &str) -> bool {
    !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())
}

/// `localhost`, an address in 127.0.0.0/8, or `::1` (names as
/// [`host_name`] gives them).
pub fn is_loopback_name(name: &str) -> bool {
    if name == "localhost" {
        return true;
    }
    name.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// Whether the request's `Origin` (if any) is the site the request is
/// addressed to. Browsers send `Origin` with every cross-origin POST, so a
/// different one (or `null`) is a page elsewhere trying to change state.
pub fn same_origin(origin: Option<&str>, host: &str) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    authority.is_some_and(|a| a.eq_ignore_ascii_case(host))
}

/// Whether a request that changes state may have come from a page of this
/// site: not when the browser says (`Sec-Fetch-Site`) or shows (`Origin`)
/// that a page of another origin sent it. `host` is the authority the
/// request was addressed to; an `Origin` naming the `X-Forwarded-Host` a
/// proxy set is this site too (a page cannot set that header on a form or
/// a simple request). A request with neither header is not from a browser
/// that would carry a user's cookie for another site, so it passes.
pub fn from_this_origin(headers: &HeaderMap, host: &str) -> bool {
    if let Some(site) = headers.get("sec-fetch-site") {
        // Browsers set it and pages cannot: `none` is the user's own doing
        // (the address bar, a bookmark).
        return matches!(site.as_bytes(), b"same-origin" | b"none");
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let origin = String::from_utf8_lossy(origin.as_bytes());
    let forwarded = headers
        .get("x-forwarded-host")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let forwarded = forwarded
        .as_deref()
        .and_then(|f| f.split(',').next())
        .map(str::trim);
    same_origin(Some(&origin), host) || forwarded.is_some_and(|f| same_origin(Some(&origin), f))
}

/// The authority a request was addressed to: its `Host` header, or the
/// authority of its URI (HTTP/2).
pub fn addressed_to(headers: &HeaderMap, uri: &axum::http::Uri) -> String {
    headers
        .get(header::HOST)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .or_else(|| uri.authority().map(|a| a.as_str().to_string()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names() {
        let cases = [
            ("localhost:8780", Some("localhost")),
            ("LocalHost", Some("localhost")),
            ("localhost.:1", Some("localhost")),
            ("127.0.0.1:8780", Some("127.0.0.1")),
            ("[::1]:8780", Some("::1")),
            ("[::1]", Some("::1")),
            ("herald.example.com", Some("herald.example.com")),
            ("", None),
            (":80", None),
            ("a:b", None),
            ("user@localhost", None),
            ("localhost:8780/x", None),
            ("[::1", None),
            ("[::1]x", None),
            ("a b", None),
        ];
        for (raw, want) in cases {
            assert_eq!(host_name(raw).as_deref(), want, "{raw:?}");
        }
    }

    #[test]
    fn loopback_names() {
        for n in ["localhost", "127.0.0.1", "127.9.8.7", "::1"] {
            assert!(is_loopback_name(n), "{n}");
        }
        for n in [
            "0.0.0.0",
            "10.0.0.1",
            "evil.example",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
        ] {
            assert!(!is_loopback_name(n), "{n}");
        }
    }

    #[test]
    fn origins() {
        assert!(same_origin(None, "localhost:8780"));
        assert!(same_origin(Some("http://localhost:8780"), "localhost:8780"));
        assert!(same_origin(Some("http://LOCALHOST:8780"), "localhost:8780"));
        assert!(!same_origin(Some("http://evil.example"), "localhost:8780"));
        assert!(!same_origin(
            Some("http://localhost:3000"),
            "localhost:8780"
        ));
        assert!(!same_origin(Some("null"), "localhost:8780"));
    }

    #[test]
    fn posts_from_this_origin() {
        let headers = |pairs: &[(&'static str, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, v.parse().unwrap());
            }
            h
        };
        let host = "herald.internal:8780";
        let passes = [
            vec![],
            vec![("origin", "http://herald.internal:8780")],
            vec![
                ("origin", "https://herald.example.com"),
                ("x-forwarded-host", "herald.example.com"),
            ],
            vec![
                ("sec-fetch-site", "same-origin"),
                ("origin", "https://herald.example.com"),
            ],
            vec![("sec-fetch-site", "none")],
        ];
        for p in passes {
            assert!(from_this_origin(&headers(&p), host), "{p:?}");
        }
        let refused = [
            vec![("origin", "http://evil.example")],
            vec![("origin", "null")],
            vec![
                ("origin", "http://evil.example"),
                ("x-forwarded-host", "herald.example.com"),
            ],
            vec![("sec-fetch-site", "cross-site")],
            vec![
                ("sec-fetch-site", "same-site"),
                ("origin", "http://herald.internal:8780"),
            ],
            vec![
                ("sec-fetch-site", "cross-site"),
                ("origin", "http://herald.internal:8780"),
            ],
        ];
        for p in refused {
            assert!(!from_this_origin(&headers(&p), host), "{p:?}");
        }
    }
}
