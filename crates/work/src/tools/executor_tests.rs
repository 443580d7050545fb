//! Tests of the batch executor with test tools whose behaviour depends on their input.

use std::sync::Mutex;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::json;
use tokio::sync::{Barrier, Notify};

use super::*;
use crate::tools::test_support::workspace;
use crate::tools::{ReadFile, ToolLimits};

/// What a test tool call does, chosen by its input.
#[derive(Default)]
struct Shared {
    log: Mutex<Vec<String>>,
    barrier: Option<Barrier>,
    released: Notify,
    entered: Notify,
}

/// A test tool: `{"id": .., "action": ..}`; actions are "record" (log start, yield, log end),
/// "barrier_then_wait" / "barrier_then_release" (meet at the barrier, then one waits for the
/// other), "hang", "panic", "big" (100 chars), "progress".
struct TestTool {
    name: &'static str,
    read_only: bool,
    shared: Arc<Shared>,
}

impl Tool for TestTool {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "test tool"
    }
    fn input_schema(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn summary(&self, input: &serde_json::Value) -> String {
        format!(
            "{} {}",
            input["action"].as_str().unwrap_or("record"),
            input["id"]
        )
    }
    fn call<'a>(
        &'a self,
        input: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput> {
        if input["action"] == "panic_now" {
            panic!("sync boom");
        }
        Box::pin(async move {
            let id = input["id"].as_i64().unwrap_or(0);
            let shared = &self.shared;
            match input["action"].as_str().unwrap_or("record") {
                "record" => {
                    shared.log.lock().unwrap().push(format!("start {id}"));
                    for _ in 0..3 {
                        tokio::task::yield_now().await;
                    }
                    shared.log.lock().unwrap().push(format!("end {id}"));
                }
                "barrier_then_wait" => {
                    shared.barrier.as_ref().unwrap().wait().await;
                    shared.released.notified().await;
                    shared.log.lock().unwrap().push(format!("end {id}"));
                }
                "barrier_then_release" => {
                    shared.barrier.as_ref().unwrap().wait().await;
                    shared.log.lock().unwrap().push(format!("end {id}"));
                    shared.released.notify_one();
                }
                "hang" => {
                    shared.entered.notify_one();
                    std::future::pending::<()>().await;
                }
                "panic" => panic!("boom"),
                "big" => return ToolOutput::ok("x".repeat(100)),
                "progress" => ctx.progress.report("halfway"),
                other => return ToolOutput::error(format!("unknown action {other}")),
            }
            ToolOutput::ok(format!("done {id}"))
        })
    }
}

fn registry(shared: &Arc<Shared>) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for (name, read_only) in [("ro", true), ("rw", false)] {
        registry.register(Arc::new(TestTool {
            name,
            read_only,
            shared: Arc::clone(shared),
        }));
    }
    registry.register(Arc::new(ReadFile));
    registry
}

fn call(index: usize, name: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        id: format!("call_{index}"),
        name: name.to_owned(),
        arguments: arguments.to_string(),
    }
}

/// Records observer events; skips every call after `skip_after` completions.
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<String>>,
    skip_after: Option<usize>,
}

impl BatchObserver for Recorder {
    fn started(&self, call: &ToolCall, summary: &str) {
        self.events
            .lock()
            .unwrap()
            .push(format!("started {} {summary}", call.id));
    }
    fn progress(&self, call: &ToolCall, message: &str) {
        self.events
            .lock()
            .unwrap()
            .push(format!("progress {} {message}", call.id));
    }
    fn completed(&self, call: &ToolCall, output: &ToolOutput, _duration: Duration) {
        self.events
            .lock()
            .unwrap()
            .push(format!("completed {} {}", call.id, output.content));
    }
    fn skip_reason(&self) -> Option<String> {
        let completed = self
            .events
            .lock()
            .unwrap()
            .iter()
            .filter(|event| event.starts_with("completed"))
            .count();
        self.skip_after
            .filter(|&after| completed >= after)
            .map(|_| "skipped: user steered".to_owned())
    }
}

fn contents(results: &[ToolResult]) -> Vec<(&str, &str, bool)> {
    results
        .iter()
        .map(|result| {
            (
                result.call.id.as_str(),
                result.output.content.as_str(),
                result.output.is_error,
            )
        })
        .collect()
}

/// Fails the test instead of hanging when a batch deadlocks (e.g. ran sequentially).
async fn bounded<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("the batch did not finish")
}

#[tokio::test]
async fn read_only_batch_runs_concurrently_and_keeps_model_order() {
    let shared = Arc::new(Shared {
        barrier: Some(Barrier::new(2)),
        ..Shared::default()
    });
    let (_dir, ctx) = workspace();
    // Call 0 can only finish after call 1 did: both must run at once, and the results still
    // come back in the model's order.
    let calls = [
        call(0, "ro", json!({"id": 0, "action": "barrier_then_wait"})),
        call(1, "ro", json!({"id": 1, "action": "barrier_then_release"})),
    ];
    let results = bounded(execute_batch(
        &registry(&shared),
        &calls,
        &ctx,
        &NoopObserver,
    ))
    .await;
    assert_eq!(
        contents(&results),
        [("call_0", "done 0", false), ("call_1", "done 1", false)]
    );
    assert_eq!(*shared.log.lock().unwrap(), ["end 1", "end 0"]);
}

#[tokio::test]
async fn read_only_calls_interleave() {
    let shared = Arc::new(Shared::default());
    let (_dir, ctx) = workspace();
    let calls = [
        call(0, "ro", json!({"id": 0})),
        call(1, "ro", json!({"id": 1})),
    ];
    bounded(execute_batch(
        &registry(&shared),
        &calls,
        &ctx,
        &NoopObserver,
    ))
    .await;
    // Both started before either ended (the end order is up to the scheduler).
    let log = shared.log.lock().unwrap();
    assert_eq!(log[..2], ["start 0", "start 1"], "{log:?}");
}

#[tokio::test]
async fn a_batch_with_a_writing_tool_runs_sequentially_in_model_order() {
    let shared = Arc::new(Shared::default());
    let (_dir, ctx) = workspace();
    let calls = [
        call(0, "ro", json!({"id": 0})),
        call(1, "rw", json!({"id": 1})),
        call(2, "ro", json!({"id": 2})),
    ];
    let results = bounded(execute_batch(
        &registry(&shared),
        &calls,
        &ctx,
        &NoopObserver,
    ))
    .await;
    assert_eq!(
        *shared.log.lock().unwrap(),
        ["start 0", "end 0", "start 1", "end 1", "start 2", "end 2"]
    );
    assert_eq!(
        contents(&results),
        [
            ("call_0", "done 0", false),
            ("call_1", "done 1", false),
            ("call_2", "done 2", false)
        ]
    );
}

#[tokio::test]
async fn unknown_tools_and_bad_arguments_become_error_results() {
    let shared = Arc::new(Shared::default());
    let (_dir, ctx) = workspace();
    let calls = [
        call(0, "nope", json!({})),
        ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: "{\"path\": ".into(),
        },
        call(2, "read_file", json!([1])),
        call(3, "read_file", json!({})),
        call(4, "read_file", json!({"path": 7})),
        call(5, "ro", json!({"id": 5})),
    ];
    let results = bounded(execute_batch(
        &registry(&shared),
        &calls,
        &ctx,
        &NoopObserver,
    ))
    .await;
    let results = contents(&results);
    assert_eq!(
        results[0],
        (
            "call_0",
            "unknown tool `nope`; available tools: read_file, ro, rw",
            true
        )
    );
    assert!(
        results[1]
            .1
            .starts_with("invalid arguments for read_file: not valid JSON")
    );
    let mcp = [call(0, "mcp__gone__tool", json!({}))];
    let gone = bounded(execute_batch(&registry(&shared), &mcp, &ctx, &NoopObserver)).await;
    assert!(
        contents(&gone)[0].1.starts_with(
            "unknown tool `mcp__gone__tool`: no MCP server of this session offers it now"
        ),
        "{gone:?}"
    );
    assert_eq!(
        results[2].1,
        "invalid arguments for read_file: expected a JSON object, got an array"
    );
    assert_eq!(
        results[3].1,
        "invalid arguments for read_file: missing field `path`"
    );
    assert!(
        results[4]
            .1
            .starts_with("invalid arguments for read_file: invalid type: integer `7`"),
        "{}",
        results[4].1
    );
    assert!(results[..5].iter().all(|result| result.2));
    assert_eq!(results[5], ("call_5", "done 5", false));
}

#[tokio::test]
async fn empty_arguments_count_as_an_empty_object() {
    let shared = Arc::new(Shared::default());
    let (_dir, ctx) = workspace();
    let mut empty = call(0, "ro", json!({}));
    empty.arguments = " ".into();
    let results = bounded(execute_batch(
        &registry(&shared),
        &[empty],
        &ctx,
        &NoopObserver,
    ))
    .await;
    assert_eq!(contents(&results), [("call_0", "done 0", false)]);
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result() {
    let shared = Arc::new(Shared::default());
    let (_dir, ctx) = workspace();
    let calls = [
        call(0, "rw", json!({"action": "panic"})),
        call(1, "rw", json!({"action": "panic_now"})),
        call(2, "rw", json!({"id": 2})),
    ];
    let results = bounded(execute_batch(
        &registry(&shared),
        &calls,
        &ctx,
        &NoopObserver,
    ))
    .await;
    assert_eq!(
        contents(&results),
        [
            ("call_0", "rw failed with an internal error: boom", true),
            (
                "call_1",
                "rw failed with an internal error: sync boom",
                true
            ),
            ("call_2", "done 2", false)
        ]
    );
}

#[tokio::test]
async fn skip_reason_skips_the_rest_of_a_sequential_batch() {
    let shared = Arc::new(Shared::default());
    let (_dir, ctx) = workspace();
    let observer = Recorder {
        skip_after: Some(1),
        ..Recorder::default()
    };
    let calls = [
        call(0, "rw", json!({"id": 0})),
        call(1, "rw", json!({"id": 1})),
        call(2, "ro", json!({"id": 2})),
    ];
    let results = bounded(execute_batch(&registry(&shared), &calls, &ctx, &observer)).await;
    assert_eq!(
        contents(&results),
        [
            ("call_0", "done 0", false),
            ("call_1", "skipped: user steered", true),
            ("call_2", "skipped: user steered", true)
        ]
    );
    assert_eq!(*shared.log.lock().unwrap(), ["start 0", "end 0"]);
    assert_eq!(
        *observer.events.lock().unwrap(),
        [
            "started call_0 record 0",
            "completed call_0 done 0",
            "completed call_1 skipped: user steered",
            "completed call_2 skipped: user steered"
        ]
    );
}

#[tokio::test]
async fn cancel_stops_running_calls_and_does_not_start_the_rest() {
    let shared = Arc::new(Shared::default());
    let (_dir, ctx) = workspace();
    let observer = Recorder::default();
    let calls = [
        call(0, "rw", json!({"id": 0})),
        call(1, "rw", json!({"id": 1, "action": "hang"})),
        call(2, "rw", json!({"id": 2})),
    ];
    let registry = registry(&shared);
    let batch = execute_batch(&registry, &calls, &ctx, &observer);
    let canceller = async {
        shared.entered.notified().await;
        ctx.cancel.cancel();
    };
    let (results, ()) = bounded(async { tokio::join!(batch, canceller) }).await;
    assert_eq!(
        contents(&results),
        [
            ("call_0", "done 0", false),
            ("call_1", "cancelled", true),
            ("call_2", "cancelled", true)
        ]
    );
    assert_eq!(*shared.log.lock().unwrap(), ["start 0", "end 0"]);
    let events = observer.events.lock().unwrap();
    assert_eq!(
        events.iter().filter(|e| e.starts_with("started")).count(),
        2
    );
    assert_eq!(
        events.iter().filter(|e| e.starts_with("completed")).count(),
        3
    );
}

#[tokio::test]
async fn long_output_is_truncated_with_a_marker() {
    let shared = Arc::new(Shared::default());
    let (_dir, mut ctx) = workspace();
    ctx.limits = ToolLimits {
        output_max_chars: 10,
        ..ToolLimits::default()
    };
    let calls = [call(0, "ro", json!({"action": "big"}))];
    let results = bounded(execute_batch(
        &registry(&shared),
        &calls,
        &ctx,
        &NoopObserver,
    ))
    .await;
    assert_eq!(
        results[0].output,
        ToolOutput::ok("xxxxx\n[… 90 chars omitted …]\nxxxxx")
    );
}

#[tokio::test]
async fn progress_reaches_the_observer_with_its_call() {
    let shared = Arc::new(Shared::default());
    let (_dir, ctx) = workspace();
    let observer = Recorder::default();
    let calls = [call(0, "ro", json!({"id": 0, "action": "progress"}))];
    bounded(execute_batch(&registry(&shared), &calls, &ctx, &observer)).await;
    assert_eq!(
        *observer.events.lock().unwrap(),
        [
            "started call_0 progress 0",
            "progress call_0 halfway",
            "completed call_0 done 0"
        ]
    );
}

#[test]
fn builtin_specs_are_sorted_and_filterable() {
    let registry = ToolRegistry::builtin();
    let names: Vec<String> = registry.specs().into_iter().map(|spec| spec.name).collect();
    assert_eq!(
        names,
        [
            "edit_file",
            "fetch_url",
            "glob",
            "grep",
            "list_dir",
            "read_file",
            "run_shell",
            "todo_write",
            "write_file"
        ]
    );
    let read_only =
        registry.filtered(|name| registry.get(name).is_some_and(|tool| tool.read_only()));
    assert_eq!(
        read_only.names(),
        [
            "fetch_url",
            "glob",
            "grep",
            "list_dir",
            "read_file",
            "todo_write"
        ]
    );
    for spec in registry.specs() {
        assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
        assert!(!spec.description.is_empty());
    }
}

#[test]
fn descriptions_state_the_default_limits() {
    let limits = ToolLimits::default();
    let registry = ToolRegistry::builtin();
    // What the model reads of a tool: its description and its parameters' descriptions.
    let described = |name: &str| {
        let tool = registry.get(name).unwrap();
        format!("{} {}", tool.description(), tool.input_schema())
    };
    let check = |name: &str, text: String| {
        assert!(
            described(name).contains(&text),
            "{name} should mention {text}"
        );
    };
    check("read_file", limits.read_file_default_lines.to_string());
    check("list_dir", limits.listing_max_entries.to_string());
    check("glob", limits.listing_max_entries.to_string());
    check("grep", limits.grep_max_matches.to_string());
    check(
        "fetch_url",
        format!("{} MiB", limits.fetch_max_bytes / (1024 * 1024)),
    );
    check("fetch_url", format!("{} s", limits.fetch_timeout.as_secs()));
    check(
        "run_shell",
        format!("default {}", limits.shell_default_timeout.as_millis()),
    );
    check(
        "run_shell",
        format!("at most {}", limits.shell_max_timeout.as_millis()),
    );
}

#[tokio::test]
async fn cancelling_a_batch_kills_the_shell_and_its_grandchildren() {
    let (_dir, ctx) = workspace();
    let registry = ToolRegistry::builtin();
    let calls = [call(
        0,
        "run_shell",
        json!({"command": "sleep 30 & echo $! > pid; echo started; wait"}),
    )];
    // run_shell reports progress once "started" is printed: then the pid file is written.
    struct CancelOnProgress(tokio_util::sync::CancellationToken);
    impl BatchObserver for CancelOnProgress {
        fn started(&self, _: &ToolCall, _: &str) {}
        fn progress(&self, _: &ToolCall, _: &str) {
            self.0.cancel();
        }
        fn completed(&self, _: &ToolCall, _: &ToolOutput, _: Duration) {}
        fn skip_reason(&self) -> Option<String> {
            None
        }
    }
    let observer = CancelOnProgress(ctx.cancel.clone());
    let results = bounded(execute_batch(&registry, &calls, &ctx, &observer)).await;
    // Either the executor or run_shell itself noticed first; both end in "cancelled".
    assert!(results[0].output.is_error);
    assert!(
        results[0].output.content.ends_with("cancelled"),
        "{:?}",
        results[0].output
    );
    let pid = std::fs::read_to_string(ctx.workspace.join("pid")).unwrap();
    agentd_policy::process::test_support::wait_until_dead(pid.trim().parse().unwrap()).await;
}
