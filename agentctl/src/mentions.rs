//! `@path` in a prompt: each word `@path` that names a readable text file (relative to the
//! current directory, or absolute) attaches the file, bounded and fenced, after the prompt,
//! the way piped stdin is attached; one that names an image (PNG, JPEG, GIF, WebP, by its
//! bytes) attaches the image (`session/prompt {images}`), as `run --image FILE` does. The word
//! stays in the text, so the model sees what was meant by it; a word that names no file
//! (`@here`, an address) is left as it is.

use std::path::Path;

use base64::Engine as _;
use protocol::session::{MAX_IMAGE_BYTES, MAX_PROMPT_IMAGES, PromptImage, image_mime_type};

/// A file attached is cut here: it goes into the session's history and every later request.
pub const MAX_FILE_BYTES: usize = 64 * 1024;
/// Files attached at most per prompt.
pub const MAX_FILES: usize = 10;

/// A prompt with its mentions attached.
#[derive(Debug, Default)]
pub struct Expanded {
    /// The text, the text files attached after it.
    pub text: String,
    /// The images mentioned.
    pub images: Vec<PromptImage>,
    /// For the person: a file skipped or cut.
    pub notes: Vec<String>,
}

/// `text` with the files its `@path` words name attached after it (text files) or beside it
/// (images), and notes for the person (a file skipped, cut). Blocking (reads the files).
pub fn expand(text: &str, cwd: &Path) -> Expanded {
    let mut attached: Vec<String> = Vec::new();
    let mut out = text.to_owned();
    let mut notes = Vec::new();
    let mut images = Vec::new();
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
        if is_image(&full) {
            if images.len() == MAX_PROMPT_IMAGES {
                notes.push(format!(
                    "@{path} not attached: at most {MAX_PROMPT_IMAGES} images per prompt"
                ));
            } else {
                match read_image(&full) {
                    Ok(image) => images.push(image),
                    Err(err) => notes.push(format!("@{path} not attached: {err}")),
                }
            }
            attached.push(path.to_owned());
            continue;
        }
        if attached.len() - images.len() == MAX_FILES {
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
    Expanded {
        text: out,
        images,
        notes,
    }
}

/// Whether the file's first bytes are an image's.
fn is_image(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 12];
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let mut read = 0;
    while read < head.len() {
        match file.read(&mut head[read..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => read += n,
        }
    }
    image_mime_type(&head[..read]).is_some()
}

/// The image at `path` for a prompt, or why it cannot go (not an image, too big, unreadable).
/// Blocking.
pub fn read_image(path: &Path) -> Result<PromptImage, String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| {
            file.take(MAX_IMAGE_BYTES as u64 + 1)
                .read_to_end(&mut bytes)
        })
        .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(format!(
            "{} is over {} MiB, the most an image may be: make it smaller first",
            path.display(),
            MAX_IMAGE_BYTES / (1024 * 1024)
        ));
    }
    let Some(mime_type) = image_mime_type(&bytes) else {
        return Err(format!(
            "{} is not a PNG, JPEG, GIF or WebP image",
            path.display()
        ));
    };
    Ok(PromptImage {
        mime_type: mime_type.to_owned(),
        data: base64::engine::general_purpose::STANDARD.encode(&bytes),
    })
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
        let Expanded { text, notes, .. } = expand(
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
        let Expanded { text, notes, .. } = expand("@a.bin @big.txt", dir.path());
        assert!(!text.contains("```a.bin"));
        assert!(
            text.contains("(@big.txt was cut at 64 KiB)"),
            "{}",
            &text[text.len() - 80..]
        );
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("not a text file"));
    }

    #[test]
    fn a_mentioned_image_goes_beside_the_text_and_a_fake_one_is_text() {
        let dir = tempfile::tempdir().unwrap();
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        std::fs::write(dir.path().join("shot.png"), &png).unwrap();
        std::fs::write(dir.path().join("fake.png"), "just text").unwrap();
        let expanded = expand("look at @shot.png and @fake.png", dir.path());
        assert_eq!(expanded.images.len(), 1);
        assert_eq!(expanded.images[0].mime_type, "image/png");
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(&expanded.images[0].data)
                .unwrap(),
            png
        );
        assert!(!expanded.text.contains("```shot.png"), "{}", expanded.text);
        assert!(
            expanded.text.contains("```fake.png\njust text"),
            "{}",
            expanded.text
        );
    }

    #[test]
    fn an_image_too_big_or_not_an_image_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let mut big = b"\x89PNG\r\n\x1a\n".to_vec();
        big.resize(MAX_IMAGE_BYTES + 1, 0);
        std::fs::write(dir.path().join("big.png"), &big).unwrap();
        std::fs::write(dir.path().join("a.txt"), "text").unwrap();
        let err = read_image(&dir.path().join("big.png")).unwrap_err();
        assert!(err.contains("over 5 MiB"), "{err}");
        let err = read_image(&dir.path().join("a.txt")).unwrap_err();
        assert!(err.contains("not a PNG, JPEG, GIF or WebP image"), "{err}");
        let expanded = expand("@big.png", dir.path());
        assert!(expanded.images.is_empty());
        assert!(
            expanded.notes[0].starts_with("@big.png not attached"),
            "{:?}",
            expanded.notes
        );
    }
}
