//! A tool result's first lines under its ✓/✗ line on a terminal: what the agent saw, bounded
//! (a few rows for a result, more for an error, which usually says what to do), each row
//! wrapped to the width instead of cut, dimmed; the rest counted. A shell command's last
//! lines instead (its output's tail, as it showed while it ran, and its exit code).

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

/// A shell command's last rows, at most `max_rows` (the first saying how many lines came
/// before them): its output's end and its exit code are what a person looks for, as the live
/// tail showed them while it ran.
pub fn tail_rows(output: &str, width: usize, max_rows: usize) -> Vec<String> {
    let columns = width.saturating_sub(INDENT.len()).max(20);
    let lines: Vec<&str> = output
        .trim_matches('\n')
        .lines()
        .map(str::trim_end)
        .collect();
    // Each line is a row at least: more than `max_rows` lines from the end are never shown.
    let from = lines.len().saturating_sub(max_rows);
    let mut rows: Vec<(usize, String)> = Vec::new();
    for (index, line) in lines.iter().enumerate().skip(from) {
        let mut rest = *line;
        loop {
            let (head, tail) = split_at_width(rest, columns);
            rows.push((index, format!("{INDENT}{}", head.trim_end())));
            if tail.is_empty() {
                break;
            }
            rest = tail;
        }
    }
    if from == 0 && rows.len() <= max_rows {
        return rows.into_iter().map(|(_, row)| row).collect();
    }
    let kept = rows.split_off(rows.len() - (max_rows - 1).min(rows.len()));
    let earlier = kept.first().map_or(lines.len(), |(index, _)| *index);
    let mut out = vec![format!(
        "{INDENT}… {earlier} earlier line{}",
        if earlier == 1 { "" } else { "s" }
    )];
    out.extend(kept.into_iter().map(|(_, row)| row));
    out
}

/// Rows of a shell command's output shown (its end); more for a failure.
pub const SHELL_ROWS: usize = 5;
pub const SHELL_ERROR_ROWS: usize = 8;

/// Rows of an edit's or a write's lines shown.
pub const EDIT_ROWS: usize = 12;

/// How a row is painted: removed lines red, added green, the rest dimmed.
pub fn style_of(row: &str) -> super::style::Style {
    use super::style::Style;
    match row
        .strip_prefix(INDENT)
        .and_then(|rest| rest.chars().next())
    {
        Some('-') => Style::Bad,
        Some('+') => Style::Good,
        _ => Style::Dim,
    }
}

/// An `edit_file` or `write_file` call, from its arguments, as the lines it took out and put
/// in (`-`/`+`, at most `EDIT_ROWS` rows); None for other tools or arguments not readable.
pub fn edit_rows(tool: &str, arguments: &str, width: usize) -> Option<Vec<String>> {
    let arguments: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let text = |key: &str| arguments.get(key).and_then(serde_json::Value::as_str);
    let (removed, added) = match tool {
        "edit_file" => (text("oldText")?, text("newText")?),
        "write_file" => ("", text("content")?),
        _ => return None,
    };
    let mut lines: Vec<String> = removed.lines().map(|line| format!("-{line}")).collect();
    lines.extend(added.lines().map(|line| format!("+{line}")));
    let columns = width.saturating_sub(INDENT.len()).max(20);
    let mut out: Vec<String> = lines
        .iter()
        .take(EDIT_ROWS)
        .map(|line| {
            let (head, _) = split_at_width(line, columns);
            format!("{INDENT}{head}")
        })
        .collect();
    if lines.len() > EDIT_ROWS {
        out.pop();
        let left = lines.len() - (EDIT_ROWS - 1);
        out.push(format!("{INDENT}… {left} more lines"));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_shows_the_lines_it_took_out_and_put_in() {
        let rows = edit_rows(
            "edit_file",
            r#"{"path":"a.rs","oldText":"let a = 1;","newText":"let a = 2;\nlet b = 3;"}"#,
            80,
        )
        .unwrap();
        assert_eq!(
            rows,
            ["  │ -let a = 1;", "  │ +let a = 2;", "  │ +let b = 3;"]
        );
        assert_eq!(style_of(&rows[0]), super::super::style::Style::Bad);
        assert_eq!(style_of(&rows[1]), super::super::style::Style::Good);
        let written =
            edit_rows("write_file", r#"{"path":"n.txt","content":"one\ntwo"}"#, 80).unwrap();
        assert_eq!(written, ["  │ +one", "  │ +two"]);
        assert!(edit_rows("read_file", r#"{"path":"a"}"#, 80).is_none());
        assert!(edit_rows("edit_file", "not json", 80).is_none());
        let long: String = (0..20).map(|n| format!("l{n}\n")).collect();
        let args = serde_json::json!({"path": "x", "content": long}).to_string();
        let rows = edit_rows("write_file", &args, 80).unwrap();
        assert_eq!(rows.len(), EDIT_ROWS);
        assert_eq!(rows.last().unwrap(), "  │ … 9 more lines");
    }

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
    fn a_shell_commands_last_rows_are_kept_and_the_earlier_counted() {
        let output: String = (1..=30).map(|n| format!("line {n}\n")).collect();
        let output = format!("{output}[exit code 0]");
        assert_eq!(
            tail_rows(&output, 80, 5),
            [
                "  │ … 27 earlier lines",
                "  │ line 28",
                "  │ line 29",
                "  │ line 30",
                "  │ [exit code 0]"
            ]
        );
        assert_eq!(
            tail_rows("ok\n[exit code 0]", 80, 5),
            ["  │ ok", "  │ [exit code 0]"]
        );
        // A long last line wraps; its head may be what is left out of sight.
        let long = format!("start\n{}", "x".repeat(100));
        let rows = tail_rows(&long, 40, 3);
        assert_eq!(rows[0], "  │ … 1 earlier line");
        assert_eq!(rows.len(), 3);
        assert!(
            rows.iter()
                .all(|row| super::super::width::display_width(row) <= 40)
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
