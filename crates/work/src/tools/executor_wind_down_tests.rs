//! Cancelling a batch lets a tool that winds down (an MCP call telling its server) finish that
//! within `ToolLimits::cancel_wind_down`; its result is `cancelled` all the same.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::json;
use tokio::sync::Notify;

use super::*;
use crate::tools::test_support::workspace;

/// Waits for the cancel, then takes a few more steps (like sending `notifications/cancelled`)
/// before saying it told its server.
struct TellsItsServer {
    winds_down: bool,
    entered: Arc<Notify>,
    told: Arc<AtomicBool>,
}

impl Tool for TellsItsServer {
    fn name(&self) -> &str {
        "mcp__srv__slow"
    }
    fn description(&self) -> &str {
        "test tool"
    }
    fn input_schema(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    fn read_only(&self) -> bool {
        false
    }
    fn winds_down_on_cancel(&self) -> bool {
        self.winds_down
    }
    fn summary(&self, _input: &serde_json::Value) -> String {
        String::new()
    }
    fn call<'a>(
        &'a self,
        _input: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            self.entered.notify_one();
            ctx.cancel.cancelled().await;
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
            self.told.store(true, Ordering::SeqCst);
            ToolOutput::error("cancelled on the server")
        })
    }
}

/// Runs one call of the tool, cancels it once it runs; returns whether it told its server and
/// the result.
async fn cancel_one(winds_down: bool) -> (bool, ToolOutput) {
    let (_dir, ctx) = workspace();
    let entered = Arc::new(Notify::new());
    let told = Arc::new(AtomicBool::new(false));
    let mut registry = ToolRegistry::new();
    registry.register(Arc::new(TellsItsServer {
        winds_down,
        entered: Arc::clone(&entered),
        told: Arc::clone(&told),
    }));
    let calls = [ToolCall {
        id: "c1".to_owned(),
        name: "mcp__srv__slow".to_owned(),
        arguments: "{}".to_owned(),
    }];
    let batch = execute_batch(&registry, &calls, &ctx, &NoopObserver);
    let canceller = async {
        entered.notified().await;
        ctx.cancel.cancel();
    };
    let (results, ()) = tokio::time::timeout(Duration::from_secs(20), async {
        tokio::join!(batch, canceller)
    })
    .await
    .expect("the batch did not finish");
    (told.load(Ordering::SeqCst), results[0].output.clone())
}

#[tokio::test]
async fn a_tool_that_winds_down_finishes_telling_its_server_after_a_cancel() {
    let (told, output) = cancel_one(true).await;
    assert!(told, "the call was dropped before it told its server");
    assert_eq!(output, ToolOutput::error(CANCELLED));
    // Other tools are dropped at once, as before.
    let (told, output) = cancel_one(false).await;
    assert!(!told);
    assert_eq!(output, ToolOutput::error(CANCELLED));
}
