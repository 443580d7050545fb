//! The session's todo list, as the `todoUpdated` event carries it (the model writes it with its
//! `todo_write` tool; editors show it as a plan).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One item of the todo list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TodoItem {
    pub content: String,
    pub status: TodoStatus,
}

/// Where an item stands. Spelled as the model writes it (and as ACP plans do): `pending`,
/// `in_progress`, `completed`. At most one item of a list is `in_progress`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}
