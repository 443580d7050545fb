//! The markdown writer's output for each kind of block, with and without colours, and the
//! stream's rule: each block once, when complete, whatever the deltas.

use super::*;
use crate::render::width::{display_width, strip_styles};

const PLAIN: MarkdownOptions = MarkdownOptions {
    color: false,
    width: 40,
};
const COLOR: MarkdownOptions = MarkdownOptions {
    color: true,
    width: 40,
};

fn plain(markdown: &str) -> String {
    render(markdown, PLAIN)
}

#[test]
fn headings_paragraphs_and_emphasis() {
    assert_eq!(
        plain("# Title\n\nSome *soft* and **strong** text with `code`.\n\n## Next\n"),
        "# Title\n\nSome soft and strong text with `code`.\n\n## Next\n"
    );
    let coloured = render("# Title\n\nA **b** `c`\n", COLOR);
    assert!(coloured.contains("\x1b[1;35mTitle"), "{coloured:?}");
    assert!(coloured.contains("\x1b[1mb"), "{coloured:?}");
    assert!(coloured.contains("\x1b[36mc"), "{coloured:?}");
    assert_eq!(strip_styles(&coloured), "# Title\n\nA b c\n");
    // The model's line breaks stay.
    assert_eq!(plain("one\ntwo\n"), "one\ntwo\n");
}

#[test]
fn lists_nested_and_numbered() {
    let markdown = "- one\n- two\n  - inner\n  - more\n- three\n\n3. c\n4. d\n";
    assert_eq!(
        plain(markdown),
        "• one\n• two\n  ◦ inner\n  ◦ more\n• three\n\n3. c\n4. d\n"
    );
    // A loose list keeps its blank lines; a long item wraps under its text.
    let loose = "1. first item that is long enough to wrap around\n\n2. second\n";
    assert_eq!(
        plain(loose),
        "1. first item that is long enough to\n   wrap around\n\n2. second\n"
    );
    assert_eq!(
        plain("- [x] done\n- [ ] open\n"),
        "• [x] done\n• [ ] open\n"
    );
}

#[test]
fn quotes_rules_and_links() {
    assert_eq!(
        plain("> quoted\n> text\n>\n> more\n"),
        "│ quoted\n│ text\n│\n│ more\n"
    );
    assert_eq!(plain("---\n"), format!("{}\n", "─".repeat(39)));
    assert_eq!(
        plain("see [the docs](https://example.com/d) or <https://x.y>\n"),
        "see the docs (https://example.com/d) or\nhttps://x.y\n"
    );
}

#[test]
fn code_blocks_keep_their_fences_and_get_colours() {
    let markdown = "```rust\nfn main() {\n\tlet x = 1;\n}\n```\n";
    assert_eq!(
        plain(markdown),
        "```rust\nfn main() {\n    let x = 1;\n}\n```\n"
    );
    let coloured = render(markdown, COLOR);
    assert!(coloured.contains("\x1b[0;"), "syntax colours: {coloured:?}");
    assert_eq!(strip_styles(&coloured), plain(markdown));
    // A long code line wraps, nothing is cut.
    let long = format!("```\n{}\n```\n", "x".repeat(50));
    assert_eq!(
        plain(&long),
        format!("```\n{}\n{}\n```\n", "x".repeat(39), "x".repeat(11))
    );
}

#[test]
fn a_table_is_aligned_and_fits() {
    let markdown = "| name | size |\n|:-----|-----:|\n| a.rs | 12 |\n| 日本 | 3400 |\n";
    assert_eq!(
        plain(markdown),
        "name │ size\n─────┼─────\na.rs │   12\n日本 │ 3400\n"
    );
    let wide =
        "| k | v |\n|---|---|\n| key | a value with many words that will not fit in forty |\n";
    let shown = plain(wide);
    assert!(
        shown.lines().all(|line| display_width(line) < 40),
        "{shown}"
    );
    assert!(shown.contains("key │ a value"), "{shown}");
}

#[test]
fn every_line_fits_the_width_and_no_word_is_lost() {
    let text = "A paragraph of words that goes on for longer than one line of forty columns, \
                with **strong words** and *emphasis* that wrap as well.";
    for options in [PLAIN, COLOR] {
        let shown = render(&format!("> {text}\n"), options);
        for line in shown.lines() {
            assert!(display_width(line) < 40, "{line:?}");
        }
        let words: Vec<String> = strip_styles(&shown)
            .split_whitespace()
            .filter(|word| *word != "│")
            .map(str::to_owned)
            .collect();
        assert_eq!(words.join(" "), text.replace("**", "").replace('*', ""));
    }
}

#[test]
fn the_stream_renders_each_block_once_when_the_next_begins() {
    let answer =
        "# Plan\n\nFirst a paragraph\nover two lines.\n\n- a\n- b\n\n```sh\nls\n```\n\nDone.\n";
    let whole = {
        let mut stream = MarkdownStream::default();
        let mut out = stream.push(answer, PLAIN);
        out.push_str(&stream.finish(PLAIN));
        out
    };
    assert_eq!(
        whole,
        "# Plan\n\nFirst a paragraph\nover two lines.\n\n• a\n• b\n\n```sh\nls\n```\n\nDone.\n"
    );
    // Byte by byte, and in uneven pieces: the same, each block as soon as the next began.
    for size in [1, 3, 7] {
        let mut stream = MarkdownStream::default();
        let mut out = String::new();
        let chars: Vec<char> = answer.chars().collect();
        let mut sent = String::new();
        for piece in chars.chunks(size) {
            let piece: String = piece.iter().collect();
            sent.push_str(&piece);
            out.push_str(&stream.push(&piece, PLAIN));
            if !sent.contains("Done.\n") {
                assert!(
                    !out.contains("```"),
                    "the fence waits for what follows: {out:?}"
                );
            }
            if sent.contains("- b") && !sent.contains("```sh\n") {
                assert!(
                    !out.contains("• a"),
                    "the list waits for what follows: {out:?}"
                );
            }
        }
        assert!(
            out.ends_with("```\n"),
            "the fence is written once the next block began"
        );
        assert_eq!(stream.pending(), "Done.\n");
        out.push_str(&stream.finish(PLAIN));
        assert_eq!(out, whole, "pieces of {size}");
    }
}

#[test]
fn an_open_block_waits_and_the_end_flushes_it() {
    let mut stream = MarkdownStream::default();
    assert_eq!(stream.push("| a | b |\n|---|---|\n| 1 | 2 |\n", PLAIN), "");
    assert_eq!(
        stream.push("| 3 | 4 |\n", PLAIN),
        "",
        "a table grows row by row"
    );
    assert_eq!(stream.finish(PLAIN), "a │ b\n──┼──\n1 │ 2\n3 │ 4\n");
    // A line still being written is not judged: `|` alone would end the table.
    let mut stream = MarkdownStream::default();
    let mut out = String::new();
    for piece in ["| a |\n|---|\n", "|", " 1 |\n", "\nafter\n"] {
        out.push_str(&stream.push(piece, PLAIN));
    }
    assert_eq!(out, "a\n─\n1\n");
    // An unfinished fence at the end is still shown whole.
    let mut stream = MarkdownStream::default();
    assert_eq!(stream.push("```py\nprint(1)\n", PLAIN), "");
    assert_eq!(stream.finish(PLAIN), "```py\nprint(1)\n```\n");
    assert_eq!(stream.finish(PLAIN), "");
}
