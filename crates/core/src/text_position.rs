//! Positions in text for error messages: the line and column a parser's byte offset points
//! at. Shared by the config loader and the project settings reader, which report
//! `file:line:col` the same way.

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::line_and_column;

    #[test]
    fn line_and_column_counts_characters() {
        assert_eq!(line_and_column("abc", 0), (1, 1));
        assert_eq!(line_and_column("ab\ncd", 4), (2, 2));
        assert_eq!(line_and_column("é\né", 4), (2, 2));
        assert_eq!(line_and_column("x", 99), (1, 2));
    }
}
