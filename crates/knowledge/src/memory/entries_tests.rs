//! Table-driven tests of the store semantics: each case starts from a store text, applies one
//! edit under a limit and checks the outcome and the store text after it.

use super::entries::{Applied, Edit, Entries};

/// What a case expects: the edit's outcome (Ok) or a refusal containing these words (Err), and
/// the store's text afterwards.
struct Case {
    name: &'static str,
    before: &'static str,
    edit: Edit,
    limit: usize,
    outcome: Result<Applied, &'static [&'static str]>,
    after: &'static str,
}

fn add(content: &str) -> Edit {
    Edit::Add {
        content: content.to_owned(),
    }
}

fn replace(old_text: &str, new_content: &str) -> Edit {
    Edit::Replace {
        old_text: old_text.to_owned(),
        new_content: new_content.to_owned(),
    }
}

fn remove(old_text: &str) -> Edit {
    Edit::Remove {
        old_text: old_text.to_owned(),
    }
}

#[test]
fn edits() {
    let cases = [
        Case {
            name: "add to an empty store",
            before: "",
            edit: add("uses pnpm"),
            limit: 100,
            outcome: Ok(Applied::Changed),
            after: "uses pnpm",
        },
        Case {
            name: "add appends after the delimiter, trimmed",
            before: "a",
            edit: add("  b\n"),
            limit: 100,
            outcome: Ok(Applied::Changed),
            after: "a\n§\nb",
        },
        Case {
            name: "an exact duplicate is not added",
            before: "a\n§\nb",
            edit: add("b"),
            limit: 100,
            outcome: Ok(Applied::AlreadySaved),
            after: "a\n§\nb",
        },
        Case {
            name: "add that fits exactly (delimiters count)",
            before: "aaaa",
            edit: add("bbb"),
            limit: 10,
            outcome: Ok(Applied::Changed),
            after: "aaaa\n§\nbbb",
        },
        Case {
            name: "add past the budget is refused with usage and the entries",
            before: "aaaa",
            edit: add("bbbb"),
            limit: 10,
            outcome: Err(&["11/10 chars", "4/10 chars", "- aaaa", "replace", "remove"]),
            after: "aaaa",
        },
        Case {
            name: "an entry may span lines",
            before: "a",
            edit: add("line one\nline two"),
            limit: 100,
            outcome: Ok(Applied::Changed),
            after: "a\n§\nline one\nline two",
        },
        Case {
            name: "a delimiter line inside an entry is refused",
            before: "a",
            edit: add("one\n§\ntwo"),
            limit: 100,
            outcome: Err(&["only §"]),
            after: "a",
        },
        Case {
            name: "a delimiter line at the end of an entry is refused",
            before: "a",
            edit: add("one\n§"),
            limit: 100,
            outcome: Err(&["only §"]),
            after: "a",
        },
        Case {
            name: "§ inside a line is fine",
            before: "",
            edit: add("see § 4.2"),
            limit: 100,
            outcome: Ok(Applied::Changed),
            after: "see § 4.2",
        },
        Case {
            name: "empty content is refused",
            before: "a",
            edit: add("   "),
            limit: 100,
            outcome: Err(&["content is empty"]),
            after: "a",
        },
        Case {
            name: "replace the one entry containing oldText",
            before: "python 3.11\n§\ndeploys to k8s",
            edit: replace("3.11", "python 3.12"),
            limit: 100,
            outcome: Ok(Applied::Changed),
            after: "python 3.12\n§\ndeploys to k8s",
        },
        Case {
            name: "replace with several matching entries is refused and lists them",
            before: "prefers vue\n§\nprefers fastapi\n§\nother",
            edit: replace("prefers", "x"),
            limit: 100,
            outcome: Err(&[
                "ambiguous",
                "2 entries",
                "- prefers vue",
                "- prefers fastapi",
            ]),
            after: "prefers vue\n§\nprefers fastapi\n§\nother",
        },
        Case {
            name: "replace with no match says not found with a hint",
            before: "a",
            edit: replace("zzz", "x"),
            limit: 100,
            outcome: Err(&["not found", "\"zzz\"", "- a"]),
            after: "a",
        },
        Case {
            name: "replace in an empty store says to add",
            before: "",
            edit: replace("zzz", "x"),
            limit: 100,
            outcome: Err(&["not found", "no entries", "add"]),
            after: "",
        },
        Case {
            name: "replace past the budget is refused",
            before: "short",
            edit: replace("short", "much longer entry"),
            limit: 10,
            outcome: Err(&["17/10 chars"]),
            after: "short",
        },
        Case {
            name: "a store over its limit can still be shortened",
            before: "aaaaaaaa\n§\nbbbbbbbb",
            edit: replace("bbbbbbbb", "bb"),
            limit: 5,
            outcome: Ok(Applied::Changed),
            after: "aaaaaaaa\n§\nbb",
        },
        Case {
            name: "a store over its limit refuses growth",
            before: "aaaaaaaa",
            edit: replace("aaaaaaaa", "aaaaaaaaa"),
            limit: 5,
            outcome: Err(&["9/5 chars"]),
            after: "aaaaaaaa",
        },
        Case {
            name: "replace into another entry's text is refused",
            before: "a1\n§\nb2",
            edit: replace("a1", "b2"),
            limit: 100,
            outcome: Err(&["already another entry", "remove"]),
            after: "a1\n§\nb2",
        },
        Case {
            name: "replace with empty content points to remove",
            before: "a1",
            edit: replace("a1", ""),
            limit: 100,
            outcome: Err(&["newContent is empty", "remove"]),
            after: "a1",
        },
        Case {
            name: "remove the one entry containing oldText",
            before: "a1\n§\nb2\n§\nc3",
            edit: remove("b"),
            limit: 100,
            outcome: Ok(Applied::Changed),
            after: "a1\n§\nc3",
        },
        Case {
            name: "remove with several matches is refused",
            before: "a1\n§\na2",
            edit: remove("a"),
            limit: 100,
            outcome: Err(&["ambiguous", "- a1", "- a2"]),
            after: "a1\n§\na2",
        },
        Case {
            name: "remove with an empty oldText is refused",
            before: "a1",
            edit: remove(" "),
            limit: 100,
            outcome: Err(&["oldText is empty"]),
            after: "a1",
        },
        Case {
            name: "oldText may span lines of one entry",
            before: "one\ntwo\n§\nthree",
            edit: remove("one\ntwo"),
            limit: 100,
            outcome: Ok(Applied::Changed),
            after: "three",
        },
    ];
    for case in cases {
        let mut entries = Entries::parse(case.before);
        let outcome = entries.apply(&case.edit, "MEMORY.md", case.limit);
        match (&outcome, &case.outcome) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{}", case.name),
            (Err(refusal), Err(words)) => {
                for word in *words {
                    assert!(
                        refusal.0.contains(word),
                        "{}: {word:?} not in {:?}",
                        case.name,
                        refusal.0
                    );
                }
            }
            _ => panic!("{}: got {outcome:?}", case.name),
        }
        assert_eq!(entries.render(), case.after, "{}", case.name);
        assert!(
            entries.usage() <= case.limit || entries.usage() <= Entries::parse(case.before).usage(),
            "{}",
            case.name
        );
    }
}

#[test]
fn loading_trims_drops_empty_entries_and_duplicates_keeping_order() {
    let entries = Entries::parse("b\n§\n a \n§\n\n§\nb\n§\na\n§\nc\n");
    assert_eq!(entries.as_slice(), ["b", "a", "c"]);
    assert_eq!(entries.render(), "b\n§\na\n§\nc");
}

#[test]
fn usage_counts_chars_and_delimiters() {
    assert_eq!(Entries::parse("").usage(), 0);
    assert_eq!(Entries::parse("ab").usage(), 2);
    // Three chars a delimiter; characters, not bytes.
    assert_eq!(Entries::parse("ab\n§\né").usage(), 6);
    let entries = Entries::parse("ab\n§\né");
    assert_eq!(entries.usage(), entries.render().chars().count());
}

#[test]
fn usage_text_groups_thousands() {
    assert_eq!(super::usage_text(1474, 2200), "1,474/2,200 chars");
    assert_eq!(super::usage_text(0, 999), "0/999 chars");
    assert_eq!(
        super::usage_text(1_000_000, 100_000),
        "1,000,000/100,000 chars"
    );
}

#[test]
fn long_entries_are_previewed_on_one_line_when_ambiguous() {
    let long = format!("shared {}\nsecond line", "x".repeat(200));
    let text = format!("{long}\n§\nshared other");
    let mut entries = Entries::parse(&text);
    let refusal = entries
        .apply(&remove("shared"), "MEMORY.md", 1000)
        .unwrap_err();
    assert!(refusal.0.contains('…'), "{}", refusal.0);
    assert!(!refusal.0.contains(&"x".repeat(100)), "{}", refusal.0);
}

#[test]
fn within_keeps_the_entries_that_fit() {
    let entries = Entries::parse("aaaa\n§\nbbbb\n§\ncc");
    let (kept, left_out) = entries.within(11);
    assert_eq!(kept.render(), "aaaa\n§\nbbbb");
    assert_eq!(left_out, 1);
    assert_eq!(entries.within(100), (entries.clone(), 0));
    assert_eq!(entries.within(3), (Entries::default(), 3));
}
