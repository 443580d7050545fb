//! The one table layout of agentctl's lists (`sessions list`, `task list`, `approvals list`,
//! `daemon models`): a header row, then one row each, columns left-aligned to their widest
//! cell (in chars), two spaces apart, no trailing spaces. Cells arrive already made safe and
//! short (`render::one_line`, `render::truncate`); printing goes through `say_raw!` as before.

use std::fmt::Write as _;

/// Columns between two cells.
const GAP: &str = "  ";

/// The table's text, one line per row with a newline each, the header first. The last column
/// is not padded, so a long last cell (a title, a reason) does not widen the others.
pub fn format<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    let mut widths = header.map(|cell| cell.chars().count());
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut table = String::new();
    let header = header.map(str::to_owned);
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (index, (cell, width)) in row.iter().zip(widths).enumerate() {
            if index + 1 == N {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<width$}{GAP}");
            }
        }
        table.push_str(line.trim_end());
        table.push('\n');
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row<const N: usize>(cells: [&str; N]) -> [String; N] {
        cells.map(str::to_owned)
    }

    #[test]
    fn columns_take_the_widest_cell_in_chars_and_lines_end_without_spaces() {
        let table = format(
            ["ID", "NAME", "NOTE"],
            &[
                row(["1", "ünïcode", ""]),
                row(["22", "a", "last column long"]),
            ],
        );
        assert_eq!(
            table,
            "ID  NAME     NOTE\n\
             1   ünïcode\n\
             22  a        last column long\n"
        );
    }

    #[test]
    fn an_empty_header_cell_and_no_rows() {
        assert_eq!(format(["", "NAME"], &[]), "  NAME\n");
        assert_eq!(
            format(
                ["", "NAME", "KEY"],
                &[row(["*", "one", ""]), row(["", "two", "$K"])]
            ),
            "   NAME  KEY\n*  one\n   two   $K\n"
        );
    }
}
