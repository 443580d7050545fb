//! `@path` in a prompt: each word `@path` that names a readable text file (relative to the
//! current directory, or absolute) attaches the file, bounded and fenced, after the prompt,
//! the way piped stdin is attached. The word stays in the text, so the model sees what was
//! meant by it; a word that names no file (`@here`, an address) is left as it is.

use std::path::Path;

/// A file attached is cut here: it goes into the session's history and every later request.
pub const MAX_FILE_BYTES: usize = 64 * 1024;
/// Files attached at most per prompt.
pub const MAX_FILES: usize = 10;

/// `text` with the files its `@path` words name attached after it, and notes for the person
/// (a file skipped, cut). Blocking (reads the files).
pub fn expand(text: &str, cwd: &Path) -> (String, Vec<String>) {
    let mut attached: Vec<String> = Vec::new();
    let mut out = text.to_owned();
    let mut notes = Vec::new();
    for word in text.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else {
            continue;
        };
        let path = path.trim_end_matches([',', '.', ';', ':', '!', '?', ')', '"', '\'']);
        if path.is_empty() || attached.iter().any(|seen| seen == path) {
            continue;
        }
        let full = cwd.join(path);
        let Ok(meta) = std::fs::metadata(&full) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        if attached.len() == MAX_FILES {
            notes.push(format!(
                "@{path} not attached: at most {MAX_FILES} files per prompt"
            ));
            continue;
        }
        let bytes = match read_bounded(&full) {
            Ok(bytes) => bytes,
            Err(err) => {
                notes.push(format!("@{path} not attached: {err}"));
                continue;
            }
        };
        if bytes.contains(&0) {
            notes.push(format!("@{path} not attached: not a text file"));
            continue;
        }
        let cut = meta.len() as usize > MAX_FILE_BYTES;
        let content = String::from_utf8_lossy(&bytes);
        if cut {
            notes.push(format!(
                "@{path} attached, cut at {} KiB",
                MAX_FILE_BYTES / 1024
            ));
        }
        out.push_str(&fenced(path, &content, cut));
        attached.push(path.to_owned());
    }
    (out, notes)
}

fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_FILE_BYTES as u64)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// `content` of `path` in a fence longer than any backtick run inside.
fn fenced(path: &str, content: &str, cut: bool) -> String {
    let longest_run = content.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest_run.max(2) + 1);
    let body = content.strip_suffix('\n').unwrap_or(content);
    let note = if cut {
        format!("\n(@{path} was cut at {} KiB)", MAX_FILE_BYTES / 1024)
    } else {
        String::new()
    };
    format!("\n\n{fence}{path}\n{body}\n{fence}{note}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mentioned_file_is_attached_once_and_other_words_stay() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.md"), "has ``` inside\n").unwrap();
        let (text, notes) = expand(
            "read @notes.md, then @notes.md again; mail me@x.org @here",
            dir.path(),
        );
        assert_eq!(
            text,
            "read @notes.md, then @notes.md again; mail me@x.org @here\n\n````notes.md\nhas ``` inside\n````"
        );
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn binary_and_big_files_are_said() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.bin"), [0u8, 1, 2]).unwrap();
        std::fs::write(dir.path().join("big.txt"), "x".repeat(MAX_FILE_BYTES + 10)).unwrap();
        let (text, notes) = expand("@a.bin @big.txt", dir.path());
        assert!(!text.contains("```a.bin"));
        assert!(
            text.contains("(@big.txt was cut at 64 KiB)"),
            "{}",
            &text[text.len() - 80..]
        );
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("not a text file"));
    }
}
