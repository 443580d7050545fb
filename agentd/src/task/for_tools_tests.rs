//! The task tools over the real task manager: a session reaches only its own tasks, and the
//! tools say which of them only read.

use std::sync::Arc;

use serde_json::json;

use crate::task::{NewTask, TaskLimits, TaskManager};
use agentd_work::tools::{
    FetchClients, TaskGet, TaskList, TaskOutputTool, TaskStop, Tool, ToolContext, ToolOutput,
};
use protocol::task::TaskKind;

const SESSION: &str = "ses_0123456789abcdef0123456789abcdef";
const OTHER_SESSION: &str = "ses_fedcba9876543210fedcba9876543210";

/// A temp workspace and a tool context on it.
fn workspace() -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(
        dir.path().canonicalize().unwrap(),
        FetchClients::new().unwrap(),
    );
    (dir, ctx)
}

/// Validates `input` like the executor does, then calls the tool.
async fn call(tool: &dyn Tool, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
    if let Err(message) = tool.validate(&input) {
        return ToolOutput::error(message);
    }
    tool.call(input, ctx).await
}

#[tokio::test]
async fn unknown_tasks_and_other_sessions_tasks_are_refused_with_what_to_do() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    let (dir, mut ctx) = workspace();
    ctx.session_id = Some(SESSION.to_owned());
    let others = tasks
        .create(NewTask {
            kind: TaskKind::Shell,
            parent_session_id: Some(OTHER_SESSION.to_owned()),
            agent_type: None,
            description: None,
            prompt: "make".to_owned(),
            cwd: dir.path().to_path_buf(),
            background: false,
        })
        .await
        .unwrap();
    for task_id in ["task_nope", others.task_id.as_str()] {
        for tool in [
            Arc::new(TaskGet(tasks.clone())) as Arc<dyn Tool>,
            Arc::new(TaskOutputTool(tasks.clone())),
            Arc::new(TaskStop(tasks.clone())),
        ] {
            let output = call(tool.as_ref(), json!({ "taskId": task_id }), &ctx).await;
            assert!(output.is_error, "{}", output.content);
            assert_eq!(
                output.content,
                format!("no task {task_id} of yours; call task_list to see your tasks")
            );
        }
    }
    let listed = call(&TaskList(tasks.clone()), json!({}), &ctx).await;
    assert!(!listed.is_error);
    assert!(
        listed.content.starts_with("no background task of yours"),
        "{}",
        listed.content
    );
    ctx.session_id = Some(OTHER_SESSION.to_owned());
    let listed = call(&TaskList(tasks.clone()), json!({}), &ctx).await;
    assert_eq!(
        listed.content,
        format!("{} pending shell: make", others.task_id)
    );
    let shown = call(&TaskGet(tasks), json!({ "taskId": others.task_id }), &ctx).await;
    assert!(
        shown.content.starts_with(&format!(
            "task {}\nstatus: pending\nkind: shell\ndescription: make\n",
            others.task_id
        )),
        "{}",
        shown.content
    );
}

#[test]
fn the_read_only_tools_say_so_and_stop_does_not() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    assert!(TaskList(tasks.clone()).read_only());
    assert!(TaskGet(tasks.clone()).read_only());
    assert!(TaskOutputTool(tasks.clone()).read_only());
    assert!(!TaskStop(tasks).read_only());
}
