//! "Did you mean …?": the known name closest to a misspelt one.

/// The edits (insert, delete, replace, swap two neighbours) that turn `a`
/// into `b`, compared without regard to case.
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    // rows[i][j]: the distance between a[..i] and b[..j].
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

/// The candidate closest to `word`, if one is close enough to be what was
/// meant: at most one edit in three characters (and at least one).
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let most = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (distance(word, c), c))
        .filter(|(d, _)| *d <= most)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_are_suggested_far_ones_not() {
        assert_eq!(distance("lisen", "listen"), 1);
        assert_eq!(distance("listne", "listen"), 1);
        assert_eq!(distance("", "abc"), 3);
        let keys = ["listen", "store", "shards", "node_id"];
        assert_eq!(closest("lisen", keys), Some("listen"));
        assert_eq!(closest("STROE", keys), Some("store"));
        assert_eq!(closest("shard", keys), Some("shards"));
        assert_eq!(closest("telemetry", keys), None);
        assert_eq!(closest("x", keys), None);
    }
}
