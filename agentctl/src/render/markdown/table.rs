//! A markdown table laid out in columns: each as wide as its widest cell (in display columns,
//! so wide characters line up), aligned as the table's delimiter row says, the widest columns
//! narrowed when the whole does not fit and their cells wrapped inside them, never cut.

use super::wrap::{Align, pad, wrap};
use crate::render::width::display_width;

/// Between two columns.
const SEPARATOR: &str = " │ ";
/// A column is not narrowed below this many columns.
const MIN_COLUMN: usize = 6;

/// A table's cells (styled text, one line each), its header row first.
#[derive(Debug, Default)]
pub struct Table {
    pub aligns: Vec<Align>,
    pub rows: Vec<Vec<String>>,
    /// How many of `rows` are the header (0 or 1).
    pub header_rows: usize,
}

impl Table {
    /// The table's lines in `width` columns; `dim` paints the rules and separators.
    pub fn lines(&self, width: usize, dim: &dyn Fn(&str) -> String) -> Vec<String> {
        let count = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        if count == 0 {
            return Vec::new();
        }
        let mut widths = vec![1usize; count];
        for row in &self.rows {
            for (index, cell) in row.iter().enumerate() {
                widths[index] = widths[index].max(display_width(cell));
            }
        }
        fit(
            &mut widths,
            width.saturating_sub(display_width(SEPARATOR) * (count - 1)),
        );
        let separator = dim(SEPARATOR);
        let mut lines = Vec::new();
        for (index, row) in self.rows.iter().enumerate() {
            let cells: Vec<Vec<String>> = (0..count)
                .map(|column| {
                    let text = row.get(column).map_or("", String::as_str);
                    wrap(text, widths[column])
                })
                .collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(1);
            for line in 0..height {
                let parts: Vec<String> = (0..count)
                    .map(|column| {
                        let text = cells[column].get(line).map_or("", String::as_str);
                        let align = self.aligns.get(column).copied().unwrap_or(Align::Left);
                        pad(text, widths[column], align)
                    })
                    .collect();
                lines.push(parts.join(&separator).trim_end().to_owned());
            }
            if index + 1 == self.header_rows {
                let rule: Vec<String> = widths.iter().map(|width| "─".repeat(*width)).collect();
                lines.push(dim(&rule.join("─┼─")));
            }
        }
        lines
    }
}

/// Narrows the widest columns, one column at a time, until they fit `available` (or all are
/// at `MIN_COLUMN`: the terminal then wraps the rows itself).
fn fit(widths: &mut [usize], available: usize) {
    while widths.iter().sum::<usize>() > available {
        let Some((widest, width)) = widths
            .iter()
            .copied()
            .enumerate()
            .max_by_key(|(index, width)| (*width, std::cmp::Reverse(*index)))
        else {
            return;
        };
        if width <= MIN_COLUMN {
            return;
        }
        widths[widest] = width - 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: &[&[&str]], aligns: &[Align]) -> Table {
        Table {
            aligns: aligns.to_vec(),
            rows: rows
                .iter()
                .map(|row| row.iter().map(|cell| (*cell).to_owned()).collect())
                .collect(),
            header_rows: 1,
        }
    }

    #[test]
    fn columns_line_up_by_display_width_and_alignment() {
        let table = table(
            &[&["name", "size"], &["日本", "3"], &["longer name", "1200"]],
            &[Align::Left, Align::Right],
        );
        let lines = table.lines(80, &|text| text.to_owned());
        assert_eq!(
            lines,
            [
                "name        │ size",
                "────────────┼─────",
                "日本        │    3",
                "longer name │ 1200",
            ]
        );
    }

    #[test]
    fn a_table_too_wide_wraps_its_widest_cells() {
        let long = "a cell with many words that cannot fit";
        let table = table(&[&["k", "v"], &["key", long]], &[]);
        let lines = table.lines(24, &|text| text.to_owned());
        assert!(
            lines.iter().all(|line| display_width(line) <= 24),
            "{lines:#?}"
        );
        let joined: String = lines
            .iter()
            .skip(2)
            .map(|line| line.split(" │ ").nth(1).unwrap_or("").trim())
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(joined, long, "{lines:#?}");
    }
}
