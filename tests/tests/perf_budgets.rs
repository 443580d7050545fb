//! Deterministic performance budgets, which a busy machine cannot fool: sizes, not times.
//! The first request a session sends with the default tools must stay within its budget of
//! bytes of tool definitions (names, descriptions and schemas, `first_request.tools_bytes` in
//! `tests/perf-budgets.toml`) without losing a tool; each figure is printed beside its budget.
//! The allocation and log-size budgets of the same file are checked by the `perf_counts` test
//! binary (`tests/perf/main.rs`).

use agentd_tests::budgets::Budgets;
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;

/// The default tool set's JSON in the first request (OpenAI wire form), in bytes.
const FIRST_REQUEST_TOOLS_BUDGET: &str = "first_request.tools_bytes";

#[tokio::test]
async fn the_default_tools_fit_their_budget_in_the_first_request() {
    let s = Scenario::start(Format::OpenAi).await;
    s.mock.push(Reply::text("hi"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "hello").await;
    client.events_until_run_finished().await;
    let requests = s.mock.requests();
    let tools = requests[0].json["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut sizes: Vec<(String, usize)> = tools
        .iter()
        .map(|tool| {
            let name = tool["function"]["name"].as_str().unwrap_or("?").to_owned();
            (name, serde_json::to_string(tool).unwrap().len())
        })
        .collect();
    sizes.sort_by_key(|(_, size)| std::cmp::Reverse(*size));
    let total = serde_json::to_string(&requests[0].json["tools"])
        .unwrap()
        .len();
    let budgets = Budgets::load();
    let budget = budgets.get(FIRST_REQUEST_TOOLS_BUDGET);
    if std::env::var_os("DUMP_TOOLS").is_some() {
        println!(
            "{}",
            serde_json::to_string_pretty(&requests[0].json["tools"]).unwrap()
        );
    }
    for (name, size) in &sizes {
        println!("{size:>6} B  {name}");
    }
    println!(
        "first request: tools {total} B of a {budget} B budget ({} tools), whole body {} B",
        sizes.len(),
        requests[0].body.len()
    );
    if let Some(over) = budgets.exceeded(
        "first request's default tools (bytes)",
        FIRST_REQUEST_TOOLS_BUDGET,
        total as u64,
    ) {
        panic!("{over}: {sizes:?}");
    }
}
