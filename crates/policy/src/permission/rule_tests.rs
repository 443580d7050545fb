//! Table-driven tests of rule parsing, errors and specifier matching.

use std::path::Path;

use pretty_assertions::assert_eq;

use super::rule::PathContext;
use super::{Rule, RuleLayer, RuleList, RuleSet, RuleSource};

fn user() -> RuleSource {
    RuleSource::new(RuleLayer::User, "~/.config/agentd/config.toml")
}

fn rule(text: &str) -> Rule {
    Rule::parse(text, user(), RuleList::Allow).unwrap()
}

#[test]
fn parse_errors_table() {
    let cases: &[(&str, &str)] = &[
        ("Bsh(ls)", r#"unknown tool "Bsh"; did you mean "Bash"?"#),
        ("bash", r#"unknown tool "bash"; did you mean "Bash"?"#),
        (
            "read_fle",
            r#"unknown tool "read_fle"; did you mean "read_file"?"#,
        ),
        (
            "Frobnicate",
            r#"unknown tool "Frobnicate"; known tools are Bash, Read"#,
        ),
        ("", "empty rule"),
        ("Bash(ls", "missing `)` at the end of the rule"),
        ("Bash)", "`)` without `(`"),
        (
            "Bash()",
            "empty specifier; write `Bash` to match every call of the tool",
        ),
        ("Bash(:*)", "empty command prefix"),
        ("WebFetch(example.com)", "WebFetch rules take `domain:HOST`"),
        ("WebFetch(domain:)", "bad domain"),
        ("fetch_url(domain:a*b.com)", "bad domain"),
        ("fetch_url(domain:[::1)", "bad domain"),
        ("fetch_url(domain:[not:an:address])", "bad domain"),
        (
            "mcp__github(x)",
            "MCP and extension rules take no specifier",
        ),
        ("mcp__", "bad MCP tool name"),
        ("mcp____x", "bad MCP tool name"),
        ("todo_write(x)", "todo_write takes no specifier"),
        ("Read([)", "bad glob"),
    ];
    for (text, expected) in cases {
        let error = Rule::parse(text, user(), RuleList::Deny).unwrap_err();
        assert!(error.starts_with(expected), "{text:?}: {error}");
    }
}

#[test]
fn good_rules_load_and_bad_ones_are_reported_with_their_source() {
    let allow = vec![
        "Bash(npm run test:*)".to_owned(),
        "Read".to_owned(),
        "Bsh".to_owned(),
    ];
    let deny = vec!["Read(./secrets/**)".to_owned(), "WebFetch(x)".to_owned()];
    let (rules, errors) = RuleSet::parse(&user(), &allow, &[], &deny);
    assert_eq!(rules.allow.len(), 2);
    assert_eq!(rules.deny.len(), 1);
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        vec![
            r#"~/.config/agentd/config.toml: permissions.allow[2] "Bsh": unknown tool "Bsh"; did you mean "Bash"?"#,
            r#"~/.config/agentd/config.toml: permissions.deny[1] "WebFetch(x)": WebFetch rules take `domain:HOST` (e.g. WebFetch(domain:example.com))"#,
        ]
    );
}

#[test]
fn tool_names_table() {
    // (rule, tools it names, tools it does not)
    let cases: &[(&str, &[&str], &[&str])] = &[
        ("Bash", &["run_shell"], &["read_file"]),
        ("run_shell(git status)", &["run_shell"], &["write_file"]),
        (
            "Read",
            &["read_file", "list_dir", "glob", "grep"],
            &["write_file", "edit_file"],
        ),
        ("Edit(src/**)", &["edit_file", "write_file"], &["read_file"]),
        ("Write", &["write_file"], &["edit_file"]),
        ("WebFetch", &["fetch_url"], &["run_shell"]),
        ("read_file", &["read_file"], &["list_dir"]),
        (
            "mcp__github",
            &["mcp__github__create_issue", "mcp__github__x"],
            &["mcp__githubx__y", "mcp__git__x", "run_shell"],
        ),
        (
            "mcp__github__*",
            &["mcp__github__create_issue"],
            &["mcp__other__create_issue"],
        ),
        (
            "mcp__github__create_issue",
            &["mcp__github__create_issue"],
            &["mcp__github__create_issues", "mcp__github__list"],
        ),
    ];
    for (text, yes, no) in cases {
        let rule = rule(text);
        for tool in *yes {
            assert!(rule.names_tool(tool), "{text} should name {tool}");
        }
        for tool in *no {
            assert!(!rule.names_tool(tool), "{text} should not name {tool}");
        }
    }
}

#[test]
fn command_specifiers_table() {
    let cases: &[(&str, &str, bool)] = &[
        ("Bash(npm run test:*)", "npm run test", true),
        ("Bash(npm run test:*)", "npm run test -- --watch", true),
        ("Bash(npm run test:*)", "npm run tests", false),
        ("Bash(npm run test:*)", "npm run lint", false),
        ("Bash(git status)", "git status", true),
        ("Bash(git status)", "git status -s", false),
        ("run_shell(git status)", "  git status ", true),
        ("Bash(git * main)", "git push origin main", true),
        ("Bash(git * main)", "git push origin dev", false),
        ("Bash(*)", "anything at all", true),
        ("Bash", "anything at all", true),
        ("Bash(ls *.rs:*)", "ls *.rs -l", true),
        ("Bash(ls *.rs:*)", "ls main.rs", false),
    ];
    for (text, command, expected) in cases {
        assert_eq!(
            rule(text).matches_command(command),
            *expected,
            "{text} on {command:?}"
        );
    }
}

#[test]
fn path_specifiers_table() {
    let workspace = Path::new("/w");
    let home = Path::new("/home/me");
    let context = PathContext {
        workspace,
        home: Some(home),
    };
    let cases: &[(&str, &str, bool)] = &[
        ("Read(./secrets/**)", "/w/secrets/key.pem", true),
        ("Read(./secrets/**)", "/w/secrets/a/b", true),
        ("Read(./secrets/**)", "/w/src/secrets/x", false),
        ("Read(secrets/**)", "/w/secrets/x", true),
        ("Read(/secrets/**)", "/w/secrets/x", true),
        // A matched directory covers its contents (gitignore).
        ("Read(./secrets)", "/w/secrets/deep/x", true),
        ("Read(secrets/)", "/w/secrets/x", true),
        // No slash: any depth.
        ("Read(*.env)", "/w/.env", true), // as in gitignore
        ("Read(*.env)", "/w/prod.env", true),
        ("Read(.env)", "/w/.env", true),
        ("Read(.env)", "/w/app/.env", true),
        ("Read(.env)", "/w/.envrc", false),
        // `*` stays within one directory; `**` crosses.
        ("Edit(src/*.rs)", "/w/src/main.rs", true),
        ("Edit(src/*.rs)", "/w/src/bin/x.rs", false),
        ("Edit(src/**/*.rs)", "/w/src/bin/x.rs", true),
        ("Edit(src/**)", "/w/srcx/a", false),
        // Absolute and home.
        ("Read(//etc/**)", "/etc/passwd", true),
        ("Read(//w/secrets/**)", "/w/secrets/x", true),
        ("Read(~/.ssh/**)", "/home/me/.ssh/id_ed25519", true),
        ("Read(~/.ssh/**)", "/w/.ssh/x", false),
        ("Read(~)", "/home/me/anything", true),
        ("Read", "/w/anything", true),
    ];
    for (text, path, expected) in cases {
        assert_eq!(
            rule(text).matches_path(Path::new(path), &context),
            *expected,
            "{text} on {path}"
        );
    }
}

#[test]
fn domain_specifiers_table() {
    let cases: &[(&str, Option<&str>, bool)] = &[
        ("WebFetch(domain:example.com)", Some("example.com"), true),
        ("WebFetch(domain:Example.COM)", Some("example.com"), true),
        (
            "WebFetch(domain:example.com)",
            Some("api.example.com"),
            false,
        ),
        (
            "WebFetch(domain:example.com)",
            Some("badexample.com"),
            false,
        ),
        (
            "WebFetch(domain:*.example.com)",
            Some("api.example.com"),
            true,
        ),
        ("WebFetch(domain:*.example.com)", Some("example.com"), false),
        (
            "WebFetch(domain:*.example.com)",
            Some("badexample.com"),
            false,
        ),
        ("WebFetch(domain:example.com)", None, false),
        ("WebFetch", None, true),
        // Address literals match however the URL spelled them (hosts come normalised).
        ("WebFetch(domain:127.1)", Some("127.0.0.1"), true),
        ("WebFetch(domain:0x7f000001)", Some("127.0.0.1"), true),
        ("WebFetch(domain:[::1])", Some("[::1]"), true),
        ("WebFetch(domain:[0:0::1])", Some("[::1]"), true),
        (
            "WebFetch(domain:[::ffff:127.0.0.1])",
            Some("[::ffff:7f00:1]"),
            true,
        ),
        ("WebFetch(domain:[::1])", Some("[::2]"), false),
    ];
    for (text, host, expected) in cases {
        assert_eq!(
            rule(text).matches_host(*host),
            *expected,
            "{text} on {host:?}"
        );
    }
}
