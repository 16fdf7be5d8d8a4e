//! Configuration errors in the operator's words: `unknown key "lisen" in
//! herald.toml; did you mean "listen"?`, rather than figment's
//! ``unknown field: found `lisen`, expected `one of `listen`, ...`` for key
//! "default.lisen"`` (its profile prefix and nested backticks).

use figment::error::Kind;
use figment::value::{Dict, Value};
use figment::{Figment, Metadata, Provider, Source};

/// The dotted key an error is about, the unknown key itself included.
pub fn key_of(e: &figment::Error) -> String {
    let mut path = e.path.clone();
    if let Kind::UnknownField(name, _) = &e.kind
        && path.last() != Some(name)
    {
        path.push(name.clone());
    }
    path.join(".")
}

/// The environment variable that sets `key`.
pub fn env_name(key: &str) -> String {
    format!("HERALD_{}", key.replace('.', "__").to_ascii_uppercase())
}

/// Where a key was set: the file, or the variable.
enum Origin {
    File(String),
    Env,
    Unknown,
}

fn origin(md: Option<&Metadata>) -> Origin {
    match md {
        Some(Metadata {
            source: Some(Source::File(p)),
            ..
        }) => Origin::File(p.display().to_string()),
        Some(md) if md.source.is_none() && md.name.contains("environment") => Origin::Env,
        _ => Origin::Unknown,
    }
}

/// One error as a line: the key, where it was set, what is wrong, and for
/// an unknown key the nearest known one.
pub fn describe(e: &figment::Error, key: &str, fig: &Figment) -> String {
    let md = (!key.is_empty())
        .then(|| fig.find_metadata(key))
        .flatten()
        .or(e.metadata.as_ref());
    let origin = origin(md);
    let parent = key
        .rsplit_once('.')
        .map(|(p, _)| format!("{p}."))
        .unwrap_or_default();
    if let Kind::UnknownField(name, known) = &e.kind {
        let near = crate::suggest::closest(name, known.iter().copied());
        return match origin {
            Origin::Env => {
                let mut line = format!(
                    "unknown key \"{key}\" set by the environment variable {}",
                    env_name(key)
                );
                if let Some(n) = near {
                    line.push_str(&format!(
                        "; did you mean {}?",
                        env_name(&format!("{parent}{n}"))
                    ));
                }
                line
            }
            Origin::File(_) | Origin::Unknown => {
                let place = match &origin {
                    Origin::File(f) => format!(" in {f}"),
                    _ => String::new(),
                };
                let mut line = format!("unknown key \"{key}\"{place}");
                if let Some(n) = near {
                    line.push_str(&format!("; did you mean \"{parent}{n}\"?"));
                }
                line
            }
        };
    }
    let what = plain(&e.kind.to_string());
    let place = match origin {
        Origin::File(f) => format!(" in {f}"),
        Origin::Env => format!(" (set by the environment variable {})", env_name(key)),
        Origin::Unknown => String::new(),
    };
    if key.is_empty() {
        format!("{what}{place}")
    } else {
        format!("\"{key}\"{place}: {what}")
    }
}

/// figment's own words for a kind, without its backticks.
fn plain(text: &str) -> String {
    text.replace('`', "")
}

/// `fig`'s values without the keys in `keys` (dotted), so the rest can be
/// read again; `None` when none of them could be taken out (the same error
/// would come back).
pub fn without(fig: &Figment, keys: &[String]) -> Option<Figment> {
    let mut data = fig.data().ok()?;
    let mut removed = false;
    for dict in data.values_mut() {
        for key in keys.iter().filter(|k| !k.is_empty()) {
            removed |= remove(dict, key);
        }
    }
    if !removed {
        return None;
    }
    let mut next = Figment::new();
    for (profile, dict) in data {
        next = next.merge(figment::providers::Serialized::from(dict, profile));
    }
    Some(next)
}

/// Takes the dotted `key` out of `dict`; whether it was there.
fn remove(dict: &mut Dict, key: &str) -> bool {
    match key.split_once('.') {
        None => dict.remove(key).is_some(),
        Some((head, rest)) => match dict.get_mut(head) {
            Some(Value::Dict(_, inner)) => remove(inner, rest),
            Some(Value::Array(_, items)) => match rest.split_once('.') {
                None => rest
                    .parse::<usize>()
                    .ok()
                    .filter(|i| *i < items.len())
                    .map(|i| items.remove(i))
                    .is_some(),
                Some((index, deeper)) => match rest_index(items, index) {
                    Some(Value::Dict(_, inner)) => remove(inner, deeper),
                    _ => false,
                },
            },
            _ => false,
        },
    }
}

fn rest_index<'a>(items: &'a mut [Value], index: &str) -> Option<&'a mut Value> {
    index.parse::<usize>().ok().and_then(|i| items.get_mut(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names_follow_the_nesting() {
        assert_eq!(env_name("listen"), "HERALD_LISTEN");
        assert_eq!(env_name("engine.window_ms"), "HERALD_ENGINE__WINDOW_MS");
    }
}
