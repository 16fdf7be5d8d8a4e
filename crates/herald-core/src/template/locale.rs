//! Which variant of a template a subscriber reads: their locale, then ever
//! shorter prefixes of it, then `default` (`zh-Hant-TW`, `zh-Hant`, `zh`,
//! `default`).

/// The variant every template has, read when nothing closer matches.
pub const DEFAULT_LOCALE: &str = "default";

/// A locale tag as variants are keyed: lower case, `-` between subtags
/// (`zh_Hant_TW` and `zh-hant-tw` are the same variant).
pub fn normalize(tag: &str) -> String {
    tag.trim().replace('_', "-").to_ascii_lowercase()
}

/// The variants to try for `locale`, closest first, ending with
/// [`DEFAULT_LOCALE`]. Tags are [`normalize`]d.
pub fn chain(locale: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(tag) = locale.map(normalize).filter(|t| !t.is_empty()) {
        let mut cut = tag.as_str();
        loop {
            out.push(cut.to_string());
            match cut.rfind('-') {
                Some(i) => cut = &cut[..i],
                None => break,
            }
        }
    }
    out.push(DEFAULT_LOCALE.to_string());
    out
}

/// Whether `tag` can key a variant: [`DEFAULT_LOCALE`], or 1 to 8 letters
/// and digits per subtag, at most 35 bytes in all (BCP 47's shape, without
/// checking the registry).
pub fn valid(tag: &str) -> bool {
    if tag == DEFAULT_LOCALE {
        return true;
    }
    !tag.is_empty()
        && tag.len() <= 35
        && tag
            .split(['-', '_'])
            .all(|s| (1..=8).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn falls_back_subtag_by_subtag_to_default() {
        assert_eq!(
            chain(Some("zh-Hant-TW")),
            ["zh-hant-tw", "zh-hant", "zh", "default"]
        );
        assert_eq!(chain(Some("en_GB")), ["en-gb", "en", "default"]);
        assert_eq!(chain(None), ["default"]);
        assert_eq!(chain(Some("  ")), ["default"]);
    }

    #[test]
    fn tags_are_checked_for_shape() {
        assert!(valid("zh-Hant-TW") && valid("default") && valid("en"));
        assert!(!valid("") && !valid("zh--TW") && !valid("toolongsubtag") && !valid("a b"));
    }
}
