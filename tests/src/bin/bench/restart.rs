//! Restart figures of `bench` (`BENCH_ONLY=restart` runs only these): 100 sessions each with
//! a run waiting on its model, the daemon killed (-9) and started again, and the time from the
//! new daemon's spawn until every run has resumed (its next model request reached the mock),
//! split into the start itself (until `READY=1`) and the resumes after it.

use std::time::Instant;

use agentd_tests::harness::{Daemon, TestEnv};
use agentd_tests::mock_llm::{MockLlm, Reply};
use serde_json::json;

use super::report::Row;

/// Sessions with an active run at the restart.
const ACTIVE: usize = 100;

pub async fn figures(scale: usize, rows: &mut Vec<Row>) {
    let count = ACTIVE * scale;
    let mock = MockLlm::start().await;
    for _ in 0..count {
        mock.push(Reply::stall());
    }
    let env = TestEnv::new()
        .var("OPENAI_API_KEY", "bench")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .var("AGENTD_LOG", "warn")
        .config("[permissions]\ndefault_mode = \"bypass\"\n");
    let workspace = env.workspace();
    let mut daemon = Daemon::start_in(env).await;
    let mut client = daemon.client().await;
    for i in 0..count {
        let created = client
            .request(
                "session/create",
                json!({"cwd": workspace.display().to_string()}),
            )
            .await
            .expect("session/create");
        let session = created["sessionId"].as_str().expect("sessionId").to_owned();
        client
            .request(
                "session/prompt",
                json!({"sessionId": session, "text": format!("run {i}")}),
            )
            .await
            .expect("session/prompt");
    }
    mock.wait_for_requests(count).await;
    drop(client);
    daemon.kill().await;
    for _ in 0..count {
        mock.push(Reply::text("resumed"));
    }
    let started = Instant::now();
    daemon.restart().await;
    let ready = started.elapsed();
    mock.wait_for_requests(2 * count).await;
    let resumed = started.elapsed();
    rows.push(Row::ms(
        format!(
            "restart → {count} active runs resumed (kill -9, spawn to each run's next request)"
        ),
        resumed,
    ));
    rows.push(Row::ms(
        "  of which the daemon's start (spawn → READY=1)",
        ready,
    ));
}
