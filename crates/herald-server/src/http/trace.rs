//! W3C trace context (`traceparent`) as Herald accepts it: stored with a
//! timer and sent on with its webhook deliveries.

/// Whether `v` is a `traceparent` header value: `version-trace_id-parent_id-flags`
/// in hex, version not `ff`, ids not all zero. Version `00` is exactly 55
/// characters; a later version may append fields after a `-`.
pub fn valid_traceparent(v: &str) -> bool {
    let b = v.as_bytes();
    if b.len() < 55 || (b.len() > 55 && (v.starts_with("00") || b[55] != b'-')) || b.len() > 512 {
        return false;
    }
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_hexdigit());
    let zero = |s: &str| s.bytes().all(|c| c == b'0');
    let (version, trace, parent, flags) = (&v[0..2], &v[3..35], &v[36..52], &v[53..55]);
    b[2] == b'-'
        && b[35] == b'-'
        && b[52] == b'-'
        && hex(version)
        && !version.eq_ignore_ascii_case("ff")
        && hex(trace)
        && !zero(trace)
        && hex(parent)
        && !zero(parent)
        && hex(flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_trace_contexts_pass() {
        let good = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        assert!(valid_traceparent(good));
        assert!(valid_traceparent(
            "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra"
        ));
        for bad in [
            "",
            "garbage",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x",
            "00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",
            "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ] {
            assert!(!valid_traceparent(bad), "{bad:?}");
        }
    }
}
