//! Search tools: glob (files by name) and grep (lines by regex). Both walk the workspace with
//! the `ignore` crate, so `.gitignore`d and hidden files are skipped, on the blocking pool;
//! files the run's Read deny rules cover are withheld (counted) and denied directories are
//! not entered.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::read_filter::{Withheld, WithheldBy};
use super::{ReadFilter, ToolContext, ToolOutput, TypedTool, str_field, text_file};
use agentd_core::workspace::{display_path, resolve_in_workspace_async};

/// Bytes looked at to decide whether a file is binary (a NUL byte in them); grep skips those.
const BINARY_SNIFF_BYTES: usize = 8192;

/// Finds files by glob pattern.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Glob;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct GlobParams {
    /// Glob pattern, e.g. `**/*.rs` or `*.toml`.
    pattern: String,
    /// Directory to search (default: the workspace root).
    path: Option<String>,
}

impl TypedTool for Glob {
    type Params = GlobParams;
    const NAME: &'static str = "glob";
    const DESCRIPTION: &'static str = "Find files by glob (`*`, `?`, `[ab]`, `{a,b}`, `**`): without `/` it matches \
         names at any depth (`*.rs`), with `/` paths under `path` (`src/**/*.rs`). Skips \
         gitignored, hidden and denied files (counted). Up to 1000 sorted paths, relative \
         to the workspace.";
    const READ_ONLY: bool = true;

    fn summary(&self, input: &serde_json::Value) -> String {
        with_path(str_field(input, "pattern"), str_field(input, "path"))
    }

    fn run<'a>(
        &'a self,
        params: GlobParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        Box::pin(glob(params, ctx))
    }
}

async fn glob(params: GlobParams, ctx: &ToolContext) -> Result<ToolOutput, String> {
    let root = search_root(ctx, params.path.as_deref()).await?;
    let matcher = FileMatcher::new(&params.pattern)?;
    let workspace = ctx.workspace.clone();
    let cancel = ctx.cancel.clone();
    let filter = ctx.read_filter.clone();
    let max = ctx.limits.listing_max_entries;
    let pattern = params.pattern.clone();
    run_blocking(move || {
        let (files, withheld) = walk_files(Glob::NAME, &root, &filter, &cancel, |path| {
            matcher.is_match(&root, path)
        });
        let mut found: Vec<String> = files
            .into_iter()
            .map(|path| display_path(&workspace, &path))
            .collect();
        if found.is_empty() {
            let none = format!(
                "no files match `{pattern}` in {}",
                display_path(&workspace, &root)
            );
            return with_note(none, &withheld.note());
        }
        found.sort();
        let hidden = found.len().saturating_sub(max);
        found.truncate(max);
        let mut out = found.join("\n");
        out.push('\n');
        if hidden > 0 {
            out.push_str(&format!(
                "[… {hidden} more files not shown; narrow the pattern or path]\n"
            ));
        }
        out.push_str(&withheld.note());
        out
    })
    .await
}

/// Searches file contents by regex.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Grep;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct GrepParams {
    /// Regex, e.g. `fn\s+main`.
    pattern: String,
    /// File or directory to search (default: the workspace root).
    path: Option<String>,
    /// Only files matching this glob, e.g. `*.rs`.
    glob: Option<String>,
}

impl TypedTool for Grep {
    type Params = GrepParams;
    const NAME: &'static str = "grep";
    const DESCRIPTION: &'static str = "Search file contents with a Rust regex (`(?i)`: ignore case). Skips gitignored, \
         hidden, binary, special and denied files (counted). Up to 500 `path:line: text` \
         matches sorted by path; narrow with `path` or `glob`.";
    const READ_ONLY: bool = true;

    fn summary(&self, input: &serde_json::Value) -> String {
        with_path(str_field(input, "pattern"), str_field(input, "path"))
    }

    fn run<'a>(
        &'a self,
        params: GrepParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        Box::pin(grep(params, ctx))
    }
}

async fn grep(params: GrepParams, ctx: &ToolContext) -> Result<ToolOutput, String> {
    let regex = regex::Regex::new(&params.pattern)
        .map_err(|error| format!("invalid regex `{}`: {error}", params.pattern))?;
    let root = search_root(ctx, params.path.as_deref()).await?;
    let matcher = params.glob.as_deref().map(FileMatcher::new).transpose()?;
    let workspace = ctx.workspace.clone();
    let cancel = ctx.cancel.clone();
    let max = ctx.limits.grep_max_matches;
    let max_line_chars = ctx.limits.read_file_max_line_chars;
    let max_line_bytes = ctx.limits.grep_max_line_bytes;
    let filter = ctx.read_filter.clone();
    run_blocking(move || {
        let (mut files, withheld) = walk_files(Grep::NAME, &root, &filter, &cancel, |path| {
            matcher.as_ref().is_none_or(|m| m.is_match(&root, path))
        });
        files.sort();
        let mut out = String::new();
        let mut matches = 0usize;
        let mut capped = false;
        let mut long_lines = 0usize;
        'files: for path in files {
            if cancel.is_cancelled() {
                break;
            }
            let shown = display_path(&workspace, &path);
            // One more than the room left, to know whether the cap cut the results.
            let budget = max - matches + 1;
            let found = matching_lines(
                &path,
                &regex,
                budget,
                max_line_bytes,
                max_line_chars,
                &cancel,
            );
            long_lines += found.long_lines;
            for (number, line) in found.lines {
                if matches == max {
                    capped = true;
                    break 'files;
                }
                matches += 1;
                out.push_str(&format!("{shown}:{number}: {line}\n"));
            }
        }
        let mut notes = String::new();
        if long_lines > 0 {
            notes.push_str(&format!(
                "[{long_lines} lines longer than {max_line_bytes} bytes were searched in their \
                 first {max_line_bytes} bytes only]\n"
            ));
        }
        notes.push_str(&withheld.note());
        if matches == 0 {
            let none = format!(
                "no matches for `{}` in {}",
                regex.as_str(),
                display_path(&workspace, &root)
            );
            return with_note(none, &notes);
        }
        if capped {
            out.push_str(&format!(
                "[… stopped at {max} matches; narrow the pattern, path or glob]\n"
            ));
        }
        out.push_str(&notes);
        out
    })
    .await
}

/// What grep found in one file.
#[derive(Default)]
struct FileMatches {
    /// (1-based number, text cut to the line limit), at most the budget asked for.
    lines: Vec<(usize, String)>,
    /// Lines longer than the byte budget, searched in their first bytes only.
    long_lines: usize,
}

/// The matching lines of a regular text file, at most `budget` of them; nothing for binary,
/// unreadable or special files (a FIFO or device is never opened for a blocking read) or a
/// symlink put in the file's place after the walk. Each line is read with a byte budget
/// (`max_line_bytes`), so memory stays bounded.
fn matching_lines(
    path: &Path,
    regex: &regex::Regex,
    budget: usize,
    max_line_bytes: usize,
    max_line_chars: usize,
    cancel: &CancellationToken,
) -> FileMatches {
    let mut found = FileMatches::default();
    let Ok(file) = text_file::open_found_regular(path) else {
        return found;
    };
    let mut lines = text_file::BoundedLines::from_file(file, BINARY_SNIFF_BYTES, max_line_bytes);
    match lines.peek() {
        Ok(start) if !start.contains(&0) => {}
        _ => return found,
    }
    let mut line = text_file::Line::new();
    let mut number = 0;
    while found.lines.len() < budget && !cancel.is_cancelled() {
        match lines.next_into(&mut line) {
            Ok(true) => {}
            Ok(false) | Err(_) => break,
        }
        number += 1;
        found.long_lines += usize::from(line.cut);
        let text = String::from_utf8_lossy(&line.bytes);
        if regex.is_match(&text) {
            found
                .lines
                .push((number, text.chars().take(max_line_chars).collect()));
        }
    }
    found
}

/// A glob matched against file names (pattern without `/`) or paths relative to the search root.
struct FileMatcher {
    matcher: GlobMatcher,
    match_full_path: bool,
}

impl FileMatcher {
    fn new(pattern: &str) -> Result<Self, String> {
        let pattern = pattern.trim_start_matches("./");
        let matcher = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|error| format!("invalid glob `{pattern}`: {error}"))?
            .compile_matcher();
        Ok(Self {
            matcher,
            match_full_path: pattern.contains('/'),
        })
    }

    fn is_match(&self, root: &Path, path: &Path) -> bool {
        if self.match_full_path {
            path.strip_prefix(root)
                .is_ok_and(|relative| self.matcher.is_match(relative))
        } else {
            path.file_name()
                .is_some_and(|name| self.matcher.is_match(Path::new(name)))
        }
    }
}

/// The regular files under `root` (or `root` itself if it is a file) that `keep` accepts and
/// the read filter lets `tool` show, gitignore-aware, hidden files skipped, symlinks not
/// followed; stops early when `cancel` fires. Counted as withheld: each kept file a deny rule
/// covers, and each directory whose whole contents are denied, which is not entered.
fn walk_files(
    tool: &'static str,
    root: &Path,
    filter: &ReadFilter,
    cancel: &CancellationToken,
    keep: impl Fn(&Path) -> bool,
) -> (Vec<PathBuf>, Withheld) {
    let mut withheld = Withheld::default();
    // The walk never filters its root: judge it here.
    if root.is_dir() && filter.denies_everything_under(tool, root) {
        withheld.count(WithheldBy::DenyRule);
        return (Vec::new(), withheld);
    }
    let pruned = Arc::new(AtomicUsize::new(0));
    let mut builder = ignore::WalkBuilder::new(root);
    builder.require_git(false);
    {
        let filter = filter.clone();
        let pruned = Arc::clone(&pruned);
        builder.filter_entry(move |entry| {
            let denied_dir = entry.file_type().is_some_and(|kind| kind.is_dir())
                && filter.denies_everything_under(tool, entry.path());
            if denied_dir {
                pruned.fetch_add(1, Ordering::Relaxed);
            }
            !denied_dir
        });
    }
    let mut files = Vec::new();
    for entry in builder.build() {
        if cancel.is_cancelled() {
            break;
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|kind| kind.is_file()) || !keep(entry.path()) {
            continue;
        }
        if filter.denies(tool, entry.path()) {
            withheld.count(WithheldBy::DenyRule);
        } else {
            files.push(entry.into_path());
        }
    }
    withheld.by_deny_rules += pruned.load(Ordering::Relaxed);
    (files, withheld)
}

async fn search_root(ctx: &ToolContext, path: Option<&str>) -> Result<PathBuf, String> {
    let root = resolve_in_workspace_async(&ctx.workspace, path.unwrap_or(".")).await?;
    if tokio::fs::metadata(&root).await.is_err() {
        return Err(format!(
            "{} does not exist",
            display_path(&ctx.workspace, &root)
        ));
    }
    Ok(root)
}

/// Runs a walk on the blocking pool; its text is the tool's (successful) output.
async fn run_blocking(
    work: impl FnOnce() -> String + Send + 'static,
) -> Result<ToolOutput, String> {
    tokio::task::spawn_blocking(work)
        .await
        .map(ToolOutput::ok)
        .map_err(|error| format!("search failed: {error}"))
}

/// A one-line answer followed by its notes (lines that each end in a newline), if any.
fn with_note(mut answer: String, notes: &str) -> String {
    if !notes.is_empty() {
        answer.push('\n');
        answer.push_str(notes);
    }
    answer
}

fn with_path(pattern: &str, path: &str) -> String {
    if path.is_empty() {
        pattern.to_owned()
    } else {
        format!("{pattern} in {path}")
    }
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
