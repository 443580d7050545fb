//! Tool search figures of `bench` (with the MCP ones, `BENCH_ONLY=mcp`): a session's first
//! request with the 500 tools of `tests/mcp-servers/many_tools_server.py`, every tool listed
//! (`[tools] search = "never"`) and searched (the default): the request's body and its tools'
//! JSON in bytes, and how many tools it lists. Needs the venv of `tests/mcp-servers/install.sh`.

use agentd_tests::harness::{Daemon, TestEnv};
use agentd_tests::mcp_scenario::server_toml;
use agentd_tests::mcp_servers::many_tools_server;
use agentd_tests::mock_llm::MockLlm;

use super::report::Row;
use super::{create, prompt, subscribe, wait_finished};

pub async fn figures(rows: &mut Vec<Row>) {
    for (how, tools_section) in [
        (
            "listed (search = \"never\")",
            "[tools]\nsearch = \"never\"\n",
        ),
        ("searched (the default)", ""),
    ] {
        let (body, tools, count) = first_request(tools_section).await;
        rows.push(Row::with(
            format!("first request with 500 MCP tools, {how}: body"),
            format!("{body} B"),
            body as f64,
            "B",
        ));
        rows.push(Row::text(
            "  its tools' JSON, tools listed",
            format!("{tools} B, {count}"),
        ));
    }
}

/// The first request's body bytes, tools bytes and tool count with `tools_section` in the config.
async fn first_request(tools_section: &str) -> (usize, usize, usize) {
    let mock = MockLlm::start_echo().await;
    let env = TestEnv::new()
        .var("OPENAI_API_KEY", "bench")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .var("AGENTD_LOG", "warn")
        .config(&format!(
            "[permissions]\ndefault_mode = \"bypass\"\n\n{tools_section}\n[mcp]\nstartup_grace_secs = 60\n\n{}",
            server_toml("many", &many_tools_server(&[]), "")
        ));
    let daemon = Daemon::start_in(env).await;
    let mut client = daemon.client().await;
    let session = create(&mut client, &daemon).await;
    subscribe(&mut client, &session).await;
    prompt(&mut client, &session, "hello").await;
    wait_finished(&mut client).await;
    let request = mock.wait_for_requests(1).await.remove(0);
    let tools = &request.json["tools"];
    let count = tools.as_array().map_or(0, Vec::len);
    (request.body.len(), tools.to_string().len(), count)
}
