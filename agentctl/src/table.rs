//! The one table layout of agentctl's lists (`sessions list`, `task list`, `approvals list`,
//! `daemon models`, `mcp list`, `agents list`, `skills list`): a header row, then one row
//! each, columns aligned to their widest cell (in chars), two spaces apart, no trailing
//! spaces. Cells arrive already made safe and
//! short (`render::one_line`, `render::truncate`); printing goes through `say_raw!` as before.

use std::fmt::Write as _;

/// Columns between two cells.
const GAP: &str = "  ";

/// Where a column's cells sit in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    /// Counts and ids, so their digits line up.
    Right,
}

/// The table's text, one line per row with a newline each, the header first, every column
/// left-aligned. The last column is not padded, so a long last cell (a title, a reason) does
/// not widen the others.
pub fn format<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    format_aligned(header, rows, [Align::Left; N])
}

/// [`format`] with each column aligned as `align` says (the last one is never padded).
pub fn format_aligned<const N: usize>(
    header: [&str; N],
    rows: &[[String; N]],
    align: [Align; N],
) -> String {
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
        for (index, ((cell, width), align)) in row.iter().zip(widths).zip(align).enumerate() {
            if index + 1 == N {
                line.push_str(cell);
            } else if align == Align::Right {
                let _ = write!(line, "{cell:>width$}{GAP}");
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

    #[test]
    fn right_aligned_columns_line_up_their_digits() {
        assert_eq!(
            format_aligned(
                ["NAME", "PID", "NOTE"],
                &[row(["a", "7", "x"]), row(["bb", "12345", ""])],
                [Align::Left, Align::Right, Align::Left]
            ),
            "NAME    PID  NOTE\n\
             a         7  x\n\
             bb    12345\n"
        );
    }
}
