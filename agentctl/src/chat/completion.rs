//! Tab completion in the chat's line editor: a line that is `/` and the start of a name
//! completes to the commands of `commands/list` (and the chat's own), kept in a shared list the
//! chat refreshes; a word `@…` completes to the paths it starts (a mention attaches the file).

use std::sync::{Arc, Mutex, PoisonError};

use rustyline::completion::Completer;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

/// Names offered at most for one Tab (a long list is no help on a terminal).
const MAX_CANDIDATES: usize = 100;

/// The command names the editor completes, shared with the chat loop.
#[derive(Clone, Default)]
pub struct CommandNames(Arc<Mutex<Vec<String>>>);

impl CommandNames {
    /// Replace the names (without their `/`).
    pub fn set(&self, mut names: Vec<String>) {
        names.sort();
        names.dedup();
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = names;
    }

    fn candidates(&self, line: &str, pos: usize) -> (usize, Vec<String>) {
        let names = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        complete(line, pos, &names)
    }
}

/// Where the completed word starts in `line` (cursor at `pos`) and its candidates: `/name`
/// for each of `names` starting with what follows the `/`, when the cursor is in the line's
/// first word and that word starts with one `/`.
pub fn complete(line: &str, pos: usize, names: &[String]) -> (usize, Vec<String>) {
    let Some(typed) = line.get(..pos) else {
        return (0, Vec::new());
    };
    let Some(prefix) = typed.strip_prefix('/') else {
        return (0, Vec::new());
    };
    if prefix.starts_with('/') || prefix.contains(char::is_whitespace) {
        return (0, Vec::new());
    }
    let candidates = names
        .iter()
        .filter(|name| name.starts_with(prefix))
        .take(MAX_CANDIDATES)
        .map(|name| format!("/{name}"))
        .collect();
    (0, candidates)
}

/// When the word before the cursor is `@path…`: where the path's completed part starts and
/// the paths it may become (relative to the current directory, or absolute).
pub fn complete_mention(line: &str, pos: usize) -> Option<(usize, Vec<String>)> {
    let typed = line.get(..pos)?;
    let word_start = typed.rfind(char::is_whitespace).map_or(0, |at| at + 1);
    let path = typed[word_start..].strip_prefix('@')?;
    let completer = rustyline::completion::FilenameCompleter::new();
    let (start, pairs) = completer.complete_path(path, path.len()).ok()?;
    let candidates = pairs
        .into_iter()
        .take(MAX_CANDIDATES)
        .map(|pair| pair.replacement)
        .collect();
    Some((word_start + 1 + start, candidates))
}

/// The editor's helper: completion only.
pub struct ChatHelper {
    pub names: CommandNames,
}

impl Completer for ChatHelper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        if let Some(found) = complete_mention(line, pos) {
            return Ok(found);
        }
        Ok(self.names.candidates(line, pos))
    }
}

impl Hinter for ChatHelper {
    type Hint = String;
}

impl Highlighter for ChatHelper {}

impl Validator for ChatHelper {}

impl Helper for ChatHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_leading_command_word_completes() {
        let names: Vec<String> = ["clear", "compact", "cost", "git:commit", "help"]
            .map(String::from)
            .to_vec();
        let check = |line: &str, expected: &[&str]| {
            let (start, found) = complete(line, line.len(), &names);
            assert_eq!(start, 0);
            assert_eq!(found, expected, "{line:?}");
        };
        check("/co", &["/compact", "/cost"]);
        check("/git", &["/git:commit"]);
        check(
            "/",
            &["/clear", "/compact", "/cost", "/git:commit", "/help"],
        );
        check("/help me", &[]);
        check("//co", &[]);
        check("co", &[]);
        assert_eq!(complete("/co", 1, &names).1.len(), 5);
    }

    #[test]
    fn an_at_word_completes_to_paths() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.md"), "x").unwrap();
        std::fs::write(dir.path().join("other.txt"), "x").unwrap();
        let line = format!("read @{}/no", dir.path().display());
        let (start, found) = complete_mention(&line, line.len()).expect("a mention");
        // The path after `@` is replaced whole.
        assert_eq!(&line[..start], "read @");
        assert_eq!(found, [format!("{}/notes.md", dir.path().display())]);
        assert!(complete_mention("read this", 9).is_none());
        assert!(complete_mention("mail me@x", 9).is_none());
    }
}
