//! A tool result's first lines under its ✓/✗ line on a terminal: what the agent saw, bounded
//! (a few rows for a result, more for an error, which usually says what to do), each row
//! wrapped to the width instead of cut, dimmed; the rest counted.

use super::width::split_at_width;

/// Rows of a successful result shown.
pub const RESULT_ROWS: usize = 3;
/// Rows of an error shown: a denial names its rule and where it comes from.
pub const ERROR_ROWS: usize = 6;
/// What each row starts with.
const INDENT: &str = "  │ ";

/// The rows showing `output` in `width` columns, at most `max_rows` (the last saying how many
/// lines were left out).
pub fn rows(output: &str, width: usize, max_rows: usize) -> Vec<String> {
    let columns = width.saturating_sub(INDENT.len()).max(20);
    let lines: Vec<&str> = output
        .trim_matches('\n')
        .lines()
        .map(str::trim_end)
        .collect();
    let mut rows = Vec::new();
    // The line each row shows (part of).
    let mut of_line = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let mut rest = *line;
        loop {
            if rows.len() == max_rows {
                // The last row makes room for the count; its line counts as not shown.
                rows.pop();
                let left = lines.len() - of_line.pop().unwrap_or(index);
                rows.push(format!(
                    "{INDENT}… {left} more line{}",
                    if left == 1 { "" } else { "s" }
                ));
                return rows;
            }
            let (head, tail) = split_at_width(rest, columns);
            rows.push(format!("{INDENT}{}", head.trim_end()));
            of_line.push(index);
            if tail.is_empty() {
                break;
            }
            rest = tail;
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_result_is_shown_whole() {
        assert_eq!(rows("alpha\nbeta\n", 80, 3), ["  │ alpha", "  │ beta"]);
        assert!(rows("", 80, 3).is_empty());
    }

    #[test]
    fn a_long_result_is_cut_and_the_rest_counted() {
        let output = "1\n2\n3\n4\n5\n";
        assert_eq!(
            rows(output, 80, 3),
            ["  │ 1", "  │ 2", "  │ … 3 more lines"]
        );
    }

    #[test]
    fn a_long_line_wraps_to_the_width_instead_of_being_cut() {
        let denial = "denied by the rule `Bash(rm:*)` from /home/me/.config/agentd/config.toml";
        let shown = rows(denial, 40, 6);
        assert!(shown.len() > 1, "{shown:?}");
        let joined: String = shown
            .iter()
            .map(|row| row.trim_start_matches(INDENT))
            .collect::<String>()
            .replace(' ', "");
        assert_eq!(joined, denial.replace(' ', ""), "nothing cut: {shown:?}");
        assert!(
            shown
                .iter()
                .all(|row| super::super::width::display_width(row) <= 40),
            "{shown:?}"
        );
    }
}
