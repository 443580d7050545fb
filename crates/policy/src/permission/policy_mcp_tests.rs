//! How MCP tools (`mcp__server__tool`) are decided: the server's `readOnlyHint`, allow rules
//! naming the tool, the server (`mcp__server`, `mcp__server__*`), deny and ask rules, modes.

use serde_json::json;

use super::policy_tests::{check, layer, workspace};
use super::*;

/// A call (tool, input, read-only) and the decision expected, as `check` takes them.
type Case = ((&'static str, serde_json::Value, bool), &'static str);

#[test]
fn mcp_tools_by_rule_and_read_only_hint() {
    let (_dir, root) = workspace();
    let read = |tool: &'static str| (tool, json!({}), true);
    let write = |tool: &'static str| (tool, json!({"x": 1}), false);
    let rules = RuleSet::merge([layer(
        RuleLayer::User,
        &[
            "mcp__everything__echo",
            "mcp__time__*",
            "mcp__files",
            "mcp__blocked__get",
        ],
        &["mcp__files__delete"],
        &["mcp__blocked", "mcp__everything__get_env"],
    )]);
    let table: &[(PermissionMode, &[Case])] = &[
        (
            PermissionMode::Default,
            &[
                // Not named by a rule: a writing tool asks, a read-only one runs.
                (
                    write("mcp__everything__add"),
                    "ask approval needed to call mcp__everything__add",
                ),
                (read("mcp__everything__get_sum"), "allow"),
                // Named: the tool, every tool of the server (both spellings).
                (
                    write("mcp__everything__echo"),
                    "allow allowed by `mcp__everything__echo`",
                ),
                (
                    write("mcp__time__convert_time"),
                    "allow allowed by `mcp__time__*`",
                ),
                (write("mcp__files__write"), "allow allowed by `mcp__files`"),
                // Ask beats allow, deny beats everything, read-only or not.
                (write("mcp__files__delete"), "ask"),
                (read("mcp__files__delete"), "ask"),
                (read("mcp__blocked__get"), "deny"),
                (
                    read("mcp__everything__get_env"),
                    "deny call mcp__everything__get_env is denied by the rule",
                ),
                // A server whose name starts like another's is not named.
                (write("mcp__timer__start"), "ask"),
            ],
        ),
        (
            PermissionMode::AcceptEdits,
            &[
                (write("mcp__everything__add"), "ask"),
                (read("mcp__everything__get_sum"), "allow"),
            ],
        ),
        (
            PermissionMode::Plan,
            &[
                (read("mcp__everything__get_sum"), "allow"),
                // Plan mode runs only read-only tools: an allow rule does not lift it.
                (write("mcp__everything__add"), "deny plan mode"),
                (write("mcp__everything__echo"), "deny plan mode"),
            ],
        ),
        (
            PermissionMode::Bypass,
            &[
                (write("mcp__everything__add"), "allow"),
                (read("mcp__blocked__get"), "deny"),
            ],
        ),
    ];
    for (mode, cases) in table {
        let policy = Policy::new(*mode, rules.clone());
        check(&policy, &root, cases);
    }
}

/// An extension's tools (`ext__name__tool`) are decided like MCP tools: its `readOnly`
/// declaration, rules naming the tool or the extension (`ext__name`, `ext__name__*`).
#[test]
fn extension_tools_by_rule_and_read_only_declaration() {
    let (_dir, root) = workspace();
    let read = |tool: &'static str| (tool, json!({}), true);
    let write = |tool: &'static str| (tool, json!({"x": 1}), false);
    let rules = RuleSet::merge([layer(
        RuleLayer::User,
        &["ext__lint__fix", "ext__notes__*"],
        &[],
        &["ext__danger"],
    )]);
    let table: &[(PermissionMode, &[Case])] = &[
        (
            PermissionMode::Default,
            &[
                (
                    write("ext__lint__format"),
                    "ask approval needed to call ext__lint__format",
                ),
                (
                    read("ext__lint__check"),
                    "allow its extension declares it read-only",
                ),
                (write("ext__lint__fix"), "allow allowed by `ext__lint__fix`"),
                (write("ext__notes__add"), "allow allowed by `ext__notes__*`"),
                (read("ext__danger__look"), "deny"),
                // An MCP server of the same name is another thing.
                (write("mcp__notes__add"), "ask"),
                (write("ext__notesx__add"), "ask"),
            ],
        ),
        (
            PermissionMode::Plan,
            &[
                (read("ext__lint__check"), "allow"),
                (write("ext__lint__fix"), "deny plan mode"),
            ],
        ),
    ];
    for (mode, cases) in table {
        let policy = Policy::new(*mode, rules.clone());
        check(&policy, &root, cases);
    }
}
