//! `mock-llm [--port N] [--script FILE.json]`: the scripted mock LLM server as a process, for
//! trying agentd without an API key. Replies from the script (a JSON array of `Reply`), then
//! echoes. Prints `listening on http://127.0.0.1:PORT` once ready. Then, for example:
//!
//! ```text
//! OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=x agentctl run "hello"
//! curl -d '[{"text":"scripted"}]' http://127.0.0.1:PORT/mock/replies   # queue replies
//! curl http://127.0.0.1:PORT/mock/requests                             # what was sent
//! curl -X POST http://127.0.0.1:PORT/mock/release                      # held replies go on
//! ```

use std::io::Write;

use agentd_tests::mock_llm::{MockLlm, Reply};
use anyhow::Context;

const USAGE: &str = "usage: mock-llm [--port N] [--script FILE.json]";

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut port = 0u16;
    let mut script = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => {
                let value = args.next().context(USAGE)?;
                port = value
                    .parse()
                    .with_context(|| format!("bad port {value:?}; {USAGE}"))?;
            }
            "--script" => script = Some(args.next().context(USAGE)?),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => anyhow::bail!("unknown argument {other:?}; {USAGE}"),
        }
    }
    let replies: Vec<Reply> = match &script {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("cannot read {path}"))?;
            serde_json::from_str(&text)
                .with_context(|| format!("{path}: expected a JSON array of replies"))?
        }
        None => Vec::new(),
    };
    let mock = MockLlm::bind(port, true)
        .await
        .with_context(|| format!("cannot listen on 127.0.0.1:{port}"))?;
    for reply in replies {
        mock.push(reply);
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on {}", mock.base_url())?;
    stdout.flush()?;
    drop(stdout);
    tokio::signal::ctrl_c()
        .await
        .context("cannot wait for ctrl-c")?;
    mock.shutdown();
    Ok(())
}
