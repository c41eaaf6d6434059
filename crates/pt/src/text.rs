//! Positions in configuration text, for error messages that say where.

/// The 1-based line and column (in characters) of a TOML parse error in
/// `text`, or 1:1 when the error has no span.
pub fn toml_error_at(text: &str, e: &toml::de::Error) -> (usize, usize) {
    e.span().map_or((1, 1), |s| line_col(text, s.start))
}

/// The 1-based line and column (in characters) of byte `byte` of `text`.
pub fn line_col(text: &str, byte: usize) -> (usize, usize) {
    let before = &text[..byte.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_count_from_one_in_characters() {
        let t = "a = 1\nbé = x\n";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 6), (2, 1));
        // 'é' is two bytes and one column.
        assert_eq!(line_col(t, 10), (2, 4));
        assert_eq!(line_col(t, 1000), (3, 1));
    }
}
