//! The README works in its own order: the set-up of "Try it without an API key", its shell
//! blocks run as written, one after the other, on a clean XDG sandbox with the real binaries
//! and the scripted mock (no network); and the first run sets the key before any command.

use std::path::Path;

use agentd_tests::harness::{TestEnv, WAIT, binary, text};

/// The README at the repository root.
fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    std::fs::read_to_string(path).expect("read README.md")
}

/// The section under `heading` (a whole heading line), up to the next heading of any level.
fn section<'a>(readme: &'a str, heading: &str) -> &'a str {
    let start = readme
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("README has no `{heading}` section"));
    let body = &readme[start + heading.len() + 2..];
    let end = body.find("\n#").unwrap_or(body.len());
    &body[..end]
}

/// The `sh` code blocks of `section`, in order.
fn shell_blocks(section: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut rest = section;
    while let Some(at) = rest.find("```sh\n") {
        let body = &rest[at + "```sh\n".len()..];
        let end = body.find("```").expect("a closed code block");
        blocks.push(body[..end].to_owned());
        rest = &body[end + 3..];
    }
    blocks
}

/// A TCP port nothing listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("local address").port()
}

#[test]
fn the_first_run_sets_the_key_before_the_first_command() {
    let readme = readme();
    let install = shell_blocks(section(&readme, "## Install")).concat();
    assert!(
        install.contains("cargo build --release --locked"),
        "{install}"
    );
    assert_eq!(install.matches("cargo ").count(), 1, "one build: {install}");
    let first_run = shell_blocks(section(&readme, "## First run")).concat();
    let export = first_run.find("export ").expect("the key is exported");
    let command = first_run.find("agentctl ").expect("a first command");
    assert!(export < command, "{first_run}");
}

#[tokio::test]
async fn the_no_key_section_runs_as_written_with_the_mock() {
    let readme = readme();
    let blocks = shell_blocks(section(&readme, "### Try it without an API key"));
    assert!(blocks.len() >= 2, "{blocks:?}");
    let script = blocks.concat();
    assert!(script.contains("--approve all"), "{script}");
    // The release binaries of the Install build are the ones this test build made; the
    // README's port is one free here.
    let bin_dir = binary("agentctl")
        .parent()
        .expect("binary dir")
        .to_path_buf();
    assert!(bin_dir.join("mock-llm").is_file(), "mock-llm is built");
    let port = free_port().to_string();
    let script = script
        .replace("./target/release/", &format!("{}/", bin_dir.display()))
        .replace("8765", &port);
    let env = TestEnv::new();
    let mut command = tokio::process::Command::new("bash");
    env.apply(&mut command);
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    command
        .env("PATH", path)
        .args(["-e", "-c"])
        // The mock started with `&` stops with the script.
        .arg(format!("trap 'kill $(jobs -p) 2>/dev/null' EXIT\n{script}"))
        .current_dir(env.workspace())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(WAIT, command.output())
        .await
        .expect("the README's commands finish in time")
        .expect("run bash");
    let stdout = text(&output.stdout);
    let stderr = text(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{script}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout.contains("I wrote hello.txt and checked it."),
        "{stdout}\n{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(env.workspace().join("hello.txt")).expect("hello.txt written"),
        "hi\n"
    );
}
