//! "Did you mean" suggestions for misspelt keys, values and names (the
//! command line uses them for preset names too).

/// The candidate closest to `word` by Damerau-Levenshtein distance, if it is
/// close enough to be a plausible typo: at most 2 edits, and fewer edits than
/// the word has characters (so `"x"` suggests nothing). Ties go to the
/// earlier candidate, which keeps suggestions deterministic.
pub fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let limit = 2.min(word.chars().count().saturating_sub(1));
    candidates
        .iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// `, did you mean "x"?` or the empty string.
pub fn did_you_mean(word: &str, candidates: &[&str]) -> String {
    closest(word, candidates)
        .map(|c| format!(", did you mean {c:?}?"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_near_misses_only() {
        let keys = ["size", "kind", "shared", "prot"];
        assert_eq!(closest("sizee", &keys), Some("size"));
        assert_eq!(closest("szie", &keys), Some("size"));
        assert_eq!(closest("shard", &keys), Some("shared"));
        assert_eq!(closest("populate", &keys), None);
        assert_eq!(closest("k", &keys), None);
        assert_eq!(did_you_mean("prto", &keys), ", did you mean \"prot\"?");
        assert_eq!(did_you_mean("zzzzzz", &keys), "");
    }
}
