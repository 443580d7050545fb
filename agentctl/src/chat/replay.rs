//! What a resumed chat shows first: the session's last turns (bounded), as the chat showed
//! them live: the prompt after `› `, the answer (its markdown rendered), each tool call and its
//! result's first line; the last result is what `/expand` shows until a run has another.

use protocol::session::HistoryMessage;

use crate::render::markdown::{MarkdownOptions, render};
use crate::render::{Output, ToolResult, one_line};
use crate::safe_text::neutralise;

/// User turns a resumed chat shows.
pub const TURNS_SHOWN: usize = 2;
/// Lines of one message shown; the rest is summed up.
const LINES_PER_MESSAGE: usize = 20;

impl super::Chat {
    /// A resumed session's last turns, shown before its new events.
    pub(super) async fn replay_last_turns(&mut self, session_id: &str) {
        let params = protocol::session::SessionGetParams {
            session_id: session_id.to_owned(),
            include_history: true,
        };
        let got = self
            .connection
            .request::<protocol::methods::SessionGet>(&params)
            .await;
        if let Ok(got) = got {
            let history = got.history.as_deref().unwrap_or(&[]);
            let markdown = MarkdownOptions {
                color: self.color,
                width: super::showing::terminal_width(),
            };
            let shown = last_turns(history, TURNS_SHOWN, Some(markdown));
            if !shown.is_empty() {
                self.live.end_line();
                self.live.push(vec![Output::Stdout(shown)]);
                self.refresh().await;
            }
            self.last_result = last_result(history);
        }
    }
}

/// The last `turns` user turns of `history` and what followed them, bounded, one string,
/// neutralised; the answers' markdown rendered with `markdown`, or as it was written.
pub fn last_turns(
    history: &[HistoryMessage],
    turns: usize,
    markdown: Option<MarkdownOptions>,
) -> String {
    let starts: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(|(_, message)| matches!(message, HistoryMessage::User { .. }))
        .map(|(index, _)| index)
        .collect();
    let Some(&from) = starts
        .len()
        .checked_sub(turns)
        .and_then(|at| starts.get(at))
        .or(starts.first())
    else {
        return String::new();
    };
    let mut out = String::new();
    if from > 0 {
        out.push_str(&format!(
            "(… {from} earlier messages: `agentctl sessions show` has them all)\n"
        ));
    }
    for message in &history[from..] {
        match message {
            HistoryMessage::User {
                content,
                image_count,
            } => {
                out.push_str(&neutralise(&bounded(content, "› ")));
                if *image_count > 0 {
                    out.push_str(&format!("  [{image_count} image(s) attached]\n"));
                }
            }
            HistoryMessage::Assistant {
                content,
                tool_calls,
            } => {
                if !content.trim().is_empty() {
                    let (text, more) = bounded_parts(content);
                    match markdown {
                        Some(options) => out.push_str(&render(&neutralise(&text), options)),
                        None => out.push_str(&neutralise(&text)),
                    }
                    out.push_str(&more);
                }
                for call in tool_calls {
                    out.push_str(&neutralise(&format!(
                        "  [{}] {}\n",
                        call.name,
                        one_line(&call.arguments)
                    )));
                }
            }
            HistoryMessage::Tool {
                tool_name,
                content,
                is_error,
                ..
            } => {
                let mark = if *is_error { "✗" } else { "✓" };
                let first = content
                    .lines()
                    .find(|line| !line.trim().is_empty())
                    .unwrap_or("");
                let line = format!("  {mark} {tool_name}: {}\n", one_line(first));
                out.push_str(&neutralise(&line));
            }
        }
    }
    out
}

/// The last tool result of `history`, for `/expand`.
pub fn last_result(history: &[HistoryMessage]) -> Option<ToolResult> {
    history.iter().rev().find_map(|message| match message {
        HistoryMessage::Tool {
            tool_name,
            content,
            is_error,
            ..
        } => Some(ToolResult {
            label: tool_name.clone(),
            output: content.clone(),
            is_error: *is_error,
        }),
        _ => None,
    })
}

/// `text`'s first `LINES_PER_MESSAGE` lines, and the line counting the rest (or nothing).
fn bounded_parts(text: &str) -> (String, String) {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let shown: String = lines
        .iter()
        .take(LINES_PER_MESSAGE)
        .map(|line| format!("{line}\n"))
        .collect();
    let more = match lines.len().checked_sub(LINES_PER_MESSAGE) {
        Some(left) if left > 0 => format!("(… {left} more lines)\n"),
        _ => String::new(),
    };
    (shown, more)
}

/// `text` with `prefix` on its first line, at most `LINES_PER_MESSAGE` lines.
fn bounded(text: &str, prefix: &str) -> String {
    let (shown, more) = bounded_parts(text);
    format!("{prefix}{shown}{more}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::event::ToolCallInfo;

    fn user(text: &str) -> HistoryMessage {
        HistoryMessage::User {
            content: text.to_owned(),
            image_count: 0,
        }
    }

    fn assistant(text: &str) -> HistoryMessage {
        HistoryMessage::Assistant {
            content: text.to_owned(),
            tool_calls: Vec::new(),
        }
    }

    #[test]
    fn the_last_turns_are_shown_with_their_tools_and_the_rest_is_counted() {
        let history = vec![
            user("first"),
            assistant("one"),
            user("second"),
            HistoryMessage::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCallInfo {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: "{\"path\":\"a.txt\"}".into(),
                }],
            },
            HistoryMessage::Tool {
                tool_call_id: "c1".into(),
                tool_name: "read_file".into(),
                content: "\nalpha\nbeta".into(),
                is_error: false,
            },
            assistant("it says alpha"),
            user("third"),
            assistant("three"),
        ];
        let shown = last_turns(&history, 2, None);
        assert_eq!(
            shown,
            "(… 2 earlier messages: `agentctl sessions show` has them all)\n\
             › second\n  [read_file] {\"path\":\"a.txt\"}\n  ✓ read_file: alpha\nit says alpha\n\
             › third\nthree\n"
        );
        assert_eq!(last_turns(&history[..2], 2, None), "› first\none\n");
        assert_eq!(last_turns(&[], 2, None), "");
        let rendered = last_turns(
            &[user("q"), assistant("- **a**\n- b")],
            1,
            Some(MarkdownOptions {
                color: false,
                width: 80,
            }),
        );
        assert_eq!(rendered, "› q\n• a\n• b\n");
        let result = last_result(&history).expect("a tool result");
        assert_eq!(result.output, "\nalpha\nbeta");
        assert!(last_result(&history[..2]).is_none());
    }

    #[test]
    fn a_long_message_is_cut_to_its_first_lines() {
        let long = (0..30)
            .map(|n| format!("line {n}"))
            .collect::<Vec<_>>()
            .join("\n");
        let shown = last_turns(&[user("q"), assistant(&long)], 1, None);
        assert!(shown.contains("line 19\n(… 10 more lines)\n"), "{shown}");
        assert!(!shown.contains("line 20"));
    }
}
