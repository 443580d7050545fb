//! Tests of the Read deny and ask rules listings and searches apply: which rules apply to which tool,
//! and which directories a walk may skip whole.

use std::path::Path;

use super::{ReadWithholdRules, RuleLayer, RuleSet, RuleSource};

const WORKSPACE: &str = "/ws";
const HOME: &str = "/home/u";

fn rules(deny: &[&str]) -> ReadWithholdRules {
    rules_with_ask(&["Edit(./asked/**)"], deny)
}

fn rules_with_ask(ask: &[&str], deny: &[&str]) -> ReadWithholdRules {
    let owned =
        |rules: &[&str]| -> Vec<String> { rules.iter().map(|rule| (*rule).to_owned()).collect() };
    let (set, errors) = RuleSet::parse(
        &RuleSource::new(RuleLayer::User, "config.toml"),
        &["Read(./secrets/**)".to_owned()],
        &owned(ask),
        &owned(deny),
    );
    assert!(errors.is_empty(), "{errors:?}");
    ReadWithholdRules::new(&set, Path::new(WORKSPACE), Some(Path::new(HOME)))
}

/// `(tool, path, denied)` rows, paths relative to the workspace unless absolute.
fn check_denies(rules: &ReadWithholdRules, rows: &[(&str, &str, bool)]) {
    for (tool, path, expected) in rows {
        let path = Path::new(WORKSPACE).join(path);
        assert_eq!(
            rules.denies(tool, &path),
            *expected,
            "{tool} {}",
            path.display()
        );
    }
}

/// `(tool, dir, skipped whole)` rows.
fn check_everything_under(rules: &ReadWithholdRules, rows: &[(&str, &str, bool)]) {
    for (tool, dir, expected) in rows {
        let dir = Path::new(WORKSPACE).join(dir);
        assert_eq!(
            rules.denies_everything_under(tool, &dir),
            *expected,
            "{tool} {}",
            dir.display()
        );
    }
}

#[test]
fn only_deny_and_ask_rules_of_reading_tools_are_kept() {
    assert!(
        rules(&[]).is_empty(),
        "allow rules and ask rules of other tools never filter"
    );
    assert!(rules(&["Bash(cat:*)", "Edit(./src/**)", "WebFetch"]).is_empty());
    assert!(!rules(&["Grep(*.pem)"]).is_empty());
}

#[test]
fn a_rule_filters_its_own_tools_and_read_file_rules_filter_all() {
    let rules = rules(&["Read(./secrets/**)", "Grep(*.log)", "read_file(*.pem)"]);
    check_denies(
        &rules,
        &[
            ("grep", "secrets/a.txt", true),
            ("glob", "secrets/deep/b.txt", true),
            ("list_dir", "secrets/a.txt", true),
            // `secrets/**` covers what is in the directory, not the directory itself.
            ("list_dir", "secrets", false),
            ("grep", "src/app.log", true),
            ("glob", "src/app.log", false),
            ("list_dir", "app.log", false),
            ("glob", "keys/id.pem", true),
            ("list_dir", "id.pem", true),
            ("grep", "src/main.rs", false),
        ],
    );
}

#[test]
fn a_denied_directory_covers_everything_under_it() {
    let rules = rules(&["Read(./build)", "Read(//etc/**)", "Read(~/.ssh/**)"]);
    check_denies(
        &rules,
        &[
            ("grep", "build", true),
            ("grep", "build/out/x.o", true),
            ("grep", "builder/x", false),
        ],
    );
    assert!(rules.denies("grep", Path::new("/etc/passwd")));
    assert!(rules.denies("glob", Path::new("/home/u/.ssh/id_rsa")));
    assert!(!rules.denies("glob", Path::new("/home/u/notes")));
    assert!(rules.denies_everything_under("grep", Path::new("/etc")));
    assert!(rules.denies_everything_under("grep", Path::new("/home/u/.ssh")));
    check_everything_under(
        &rules,
        &[("grep", "build", true), ("grep", "build/out", true)],
    );
}

#[test]
fn directories_whose_whole_contents_are_denied_are_skipped() {
    let rules = rules(&[
        "Read(./secrets/**)",
        "Read(./vault/*)",
        "Read(**/node_modules/**)",
        "Read(*.pem)",
        "Read(./logs/**/*.log)",
    ]);
    check_everything_under(
        &rules,
        &[
            ("grep", "secrets", true),
            ("glob", "secrets/deep", true),
            ("list_dir", "vault", true),
            ("grep", "node_modules", true),
            ("grep", "web/node_modules", true),
            ("grep", "web/node_modules/react", true),
            // Only some entries are denied: the walk goes in and filters file by file.
            ("grep", "logs", false),
            ("grep", "keys", false),
            ("grep", "src", false),
            ("grep", "", false),
        ],
    );
    // `*` matches any one name, dotted ones too, so `vault/*` covers `vault/.env`.
    check_denies(
        &rules,
        &[
            ("grep", "vault/.env", true),
            ("grep", "vault/a/b", true),
            ("grep", "logs/a/x.log", true),
            ("grep", "logs/a/x.txt", false),
        ],
    );
}

#[test]
fn rules_of_other_tools_do_not_skip_directories() {
    let rules = rules(&["Grep(./secrets/**)"]);
    check_everything_under(
        &rules,
        &[
            ("grep", "secrets", true),
            ("glob", "secrets", false),
            ("list_dir", "secrets", false),
        ],
    );
}

#[test]
fn an_ask_rule_for_reading_withholds_like_a_deny_rule() {
    let rules = rules_with_ask(&["Read(./private/**)", "Grep(*.log)"], &[]);
    check_denies(
        &rules,
        &[
            ("grep", "private/diary.txt", true),
            ("glob", "private/diary.txt", true),
            ("grep", "build.log", true),
            ("glob", "build.log", false),
            ("grep", "src/main.rs", false),
        ],
    );
    check_everything_under(&rules, &[("list_dir", "private", true)]);
}
