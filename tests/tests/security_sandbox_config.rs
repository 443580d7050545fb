//! The project's configuration and the shell's sandbox: existing configuration files and dirs
//! are read-only for a command (and `git commit` still works), configuration a command creates
//! where nothing could cover it is said in its result, and a trusted project's MCP servers run
//! confined like the shell unless `[mcp] unconfined` names them. The sandbox helpers are those
//! of `security_sandbox`.

use agentd_tests::mock_llm::{Format, Reply};
use serde_json::json;

use crate::security_sandbox::{confined, sandboxed};

/// Runs `git args` in `dir` outside the sandbox (the test's own setup).
fn git(dir: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// Existing project configuration files are read-only for the shell as well as dirs: a hook
/// cannot be appended to, `AGENTS.md` written, `.mcp.json` removed, `CLAUDE.md` renamed over,
/// `.git/config` changed, nor a file created in an existing `.claude/`; while `git commit`,
/// `mkdir build` and new files elsewhere keep working.
#[tokio::test]
async fn project_configuration_files_are_read_only_and_git_commit_still_works() {
    let t = sandboxed("", &[]).await;
    let status = t.status().await;
    let workspace = t.scenario.workspace();
    std::fs::create_dir_all(&workspace).unwrap();
    git(&workspace, &["init", "-q"]);
    std::fs::create_dir_all(workspace.join(".claude")).unwrap();
    for file in ["AGENTS.md", "CLAUDE.md", ".mcp.json", "tracked.txt"] {
        std::fs::write(workspace.join(file), "original").unwrap();
    }
    git(&workspace, &["add", "-A"]);
    git(&workspace, &["commit", "-qm", "base"]);
    let config_before = std::fs::read_to_string(workspace.join(".git/config")).unwrap();
    let output = t
        .shell(
            "echo x >> .git/hooks/pre-commit && echo hook-written; \
             echo x > AGENTS.md && echo agents-written; \
             rm -f .mcp.json && echo mcp-removed; \
             echo x > planted && mv -f planted CLAUDE.md && echo claude-renamed; \
             git config user.name someone && echo config-written; \
             mkdir -p .claude && echo x > .claude/settings.json && echo settings-written; \
             mkdir build && touch new.txt && echo x >> tracked.txt && echo ordinary-written; \
             git add -A && git -c user.name=t -c user.email=t@t commit -qm second \
               && echo git-committed",
        )
        .await;
    assert!(output.contains("ordinary-written"), "{output}");
    assert!(output.contains("git-committed"), "{output}");
    let log = std::process::Command::new("git")
        .args(["log", "--format=%s"])
        .current_dir(&workspace)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&log.stdout), "second\nbase\n");
    if confined(&status) && status.contains("read-only project configuration") {
        for refused in [
            "hook-written",
            "agents-written",
            "mcp-removed",
            "claude-renamed",
            "config-written",
            "settings-written",
        ] {
            assert!(!output.contains(refused), "{refused}:\n{output}");
        }
        assert!(!workspace.join(".git/hooks/pre-commit").exists());
        assert!(!workspace.join(".claude/settings.json").exists());
        for file in ["AGENTS.md", "CLAUDE.md", ".mcp.json"] {
            assert_eq!(
                std::fs::read_to_string(workspace.join(file)).unwrap(),
                "original",
                "{file}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(workspace.join(".git/config")).unwrap(),
            config_before
        );
        assert!(output.contains("Read-only file system"), "{output}");
        assert!(
            output.contains("busy"),
            "unlink and rename-over: EBUSY\n{output}"
        );
        assert!(
            !output.contains("this command"),
            "nothing to report:\n{output}"
        );
    } else {
        assert!(output.contains("agents-written"), "{output}");
        assert!(output.contains("changed AGENTS.md"), "{output}");
    }
}

/// Project configuration absent when the command starts cannot be covered by a mount (and
/// nothing is written into the workspace to make one): a command that creates it, as a
/// directory with a settings file or as a symlink to one, gets it said in its result.
#[tokio::test]
async fn absent_project_configuration_a_command_creates_is_reported() {
    let t = sandboxed("", &[]).await;
    let output = t
        .shell("mkdir -p .claude && echo '{}' > .claude/settings.json && echo created")
        .await;
    assert!(output.contains("created\n"), "{output}");
    assert!(
        output.contains(
            "[this command created .claude/settings.json; project configuration written by a \
             command does not apply until the user reviews what it would apply and trusts the \
             project again (project/trust)]"
        ),
        "{output}"
    );
    let output = t
        .shell("mkdir real && ln -s real .agents && echo linked")
        .await;
    assert!(output.contains("linked"), "{output}");
    assert!(
        output.contains("[this command created .agents;"),
        "{output}"
    );
    // An ordinary command reports nothing.
    let output = t.shell("mkdir build && touch new.txt && echo made").await;
    assert!(!output.contains("this command"), "{output}");
}

/// A stdio server that tries to write outside the workspace, then runs server-everything;
/// it writes `ran-<name>` in its cwd (the project root) either way.
fn writing_server(
    name: &str,
    outside: &std::path::Path,
) -> agentd_tests::mcp_servers::ServerCommand {
    let everything = agentd_tests::mcp_servers::everything_stdio();
    let mut args = vec![
        "-c".to_owned(),
        format!(
            "echo x > {outside}/{name}; echo ran > ran-{name}; exec \"$0\" \"$@\"",
            outside = outside.display()
        ),
        everything.command,
    ];
    args.extend(everything.args);
    agentd_tests::mcp_servers::ServerCommand {
        command: "/bin/sh".to_owned(),
        args,
        env: everything.env,
    }
}

/// The servers of a trusted project's `.mcp.json` run confined like the shell: one cannot
/// write outside the workspace (and still answers tools), one listed in `[mcp] unconfined`
/// can, and a server of the user's config.toml runs as before.
#[tokio::test]
async fn a_projects_mcp_servers_run_confined_unless_listed_unconfined() {
    // `sandboxed` puts the test's dir in place of `{dir}`.
    let placeholder = std::path::Path::new("{dir}/outside");
    let user =
        agentd_tests::mcp_scenario::server_toml("user", &writing_server("user", placeholder), "");
    let t = sandboxed(
        &format!("[mcp]\nunconfined = [\"free\"]\nstartup_grace_secs = 60\n\n{user}"),
        &[],
    )
    .await;
    let status = t.status().await;
    let outside = t.env_dir.join("outside");
    let workspace = t.scenario.workspace();
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(
        workspace.join(".mcp.json"),
        agentd_tests::mcp_scenario::mcp_json(&[
            ("confined", writing_server("confined", &outside)),
            ("free", writing_server("free", &outside)),
        ]),
    )
    .unwrap();
    let s = &t.scenario;
    let (mut client, session) = s.session().await;
    client
        .request(
            "project/trust",
            json!({"path": workspace.display().to_string()}),
        )
        .await
        .expect("project/trust");
    s.mock.push(Reply::text("done"));
    client.prompt(&session, "go").await;
    client.events_until_run_finished().await;
    let requests = s.mock.wait_for_requests(1).await;
    let tools = agentd_tests::mcp_scenario::request_tool_names(Format::OpenAi, &requests[0]);
    for name in ["confined", "free", "user"] {
        assert!(
            workspace.join(format!("ran-{name}")).exists(),
            "{name} did not run"
        );
        assert!(
            tools.contains(&format!("mcp__{name}__echo")),
            "{name} is not ready: {tools:?}"
        );
    }
    assert!(outside.join("free").exists(), "listed unconfined");
    assert!(outside.join("user").exists(), "the user's server");
    if confined(&status) {
        assert!(
            !outside.join("confined").exists(),
            "a project's server wrote outside the workspace"
        );
    } else {
        assert!(outside.join("confined").exists());
    }
}
