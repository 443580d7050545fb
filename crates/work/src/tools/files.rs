//! File tools: read_file, write_file, edit_file and list_dir, all confined to the workspace
//! (list_dir also withholds entries the run's Read deny rules cover, and links out of it).

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::read_filter::Withheld;
use super::write_target::WriteTarget;
use super::{ReadFilter, ToolContext, ToolOutput, TypedTool, str_field, text_file};
use agentd_core::workspace::{display_path, resolve_in_workspace_async};

/// Bytes looked at to decide whether a file is binary (a NUL byte in them).
const BINARY_SNIFF_BYTES: usize = 8192;

/// Reads a text file with line numbers.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ReadFile;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ReadFileParams {
    /// Relative to the workspace (or absolute in it).
    path: String,
    /// First line, 1-based (default 1).
    offset: Option<u64>,
    /// Lines at most (default 2000).
    limit: Option<u64>,
}

impl TypedTool for ReadFile {
    type Params = ReadFileParams;
    const NAME: &'static str = "read_file";
    const DESCRIPTION: &'static str = "Read a workspace text file, lines numbered like `cat -n`: the first 2000, or \
         `offset` (1-based) and `limit`; the result says when there is more. Long lines \
         are cut; binary files and devices refused. Read before editing; prefer it to \
         `cat`.";
    const READ_ONLY: bool = true;

    fn summary(&self, input: &serde_json::Value) -> String {
        str_field(input, "path").to_owned()
    }

    fn run<'a>(
        &'a self,
        params: ReadFileParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        Box::pin(read_file(params, ctx))
    }
}

async fn read_file(params: ReadFileParams, ctx: &ToolContext) -> Result<ToolOutput, String> {
    let path = resolve_in_workspace_async(&ctx.workspace, &params.path).await?;
    let shown = display_path(&ctx.workspace, &path);
    let request = ReadRequest {
        first: params.offset.unwrap_or(1).max(1),
        limit: params
            .limit
            .unwrap_or(ctx.limits.read_file_default_lines as u64)
            .max(1),
        max_line_chars: ctx.limits.read_file_max_line_chars,
        max_bytes: ctx.limits.read_file_max_bytes,
    };
    let cancel = ctx.cancel.clone();
    tokio::task::spawn_blocking(move || read_lines(&path, &shown, &request, &cancel))
        .await
        .map_err(|error| format!("read_file failed: {error}"))?
}

/// Which lines read_file returns, and its memory bounds.
struct ReadRequest {
    /// 1-based first line.
    first: u64,
    /// Lines returned at most.
    limit: u64,
    max_line_chars: usize,
    /// Bytes of numbered text returned at most; the rest is read on with `offset`.
    max_bytes: usize,
}

/// read_file's work, on the blocking pool: a regular file only, read line by line with a byte
/// budget per line, so a huge single-line file costs no more memory than a small one.
fn read_lines(
    path: &Path,
    shown: &str,
    request: &ReadRequest,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<ToolOutput, String> {
    let file = text_file::open_regular(path).map_err(|error| match error {
        text_file::OpenError::Directory => {
            format!("{shown} is a directory; use list_dir to see its entries")
        }
        error => error.describe(shown),
    })?;
    let read_error = |error: std::io::Error| format!("cannot read {shown}: {error}");
    // Up to 4 bytes per char, so a cut line still has `max_line_chars` chars to show.
    let keep = request.max_line_chars.saturating_mul(4).saturating_add(4);
    let mut lines = text_file::BoundedLines::from_file(file, BINARY_SNIFF_BYTES, keep);
    let start = lines.peek().map_err(read_error)?;
    if start.is_empty() {
        return Ok(ToolOutput::ok(format!("({shown} is empty)")));
    }
    if start.contains(&0) {
        return Err(format!(
            "{shown} looks like a binary file; read_file only reads text"
        ));
    }

    let first = request.first;
    let mut out = String::new();
    let mut line = text_file::Line::new();
    let mut number = 0u64;
    let mut shown_lines = 0u64;
    let mut more = false;
    while lines.next_into(&mut line).map_err(read_error)? {
        if cancel.is_cancelled() {
            return Err(crate::tools::CANCELLED.to_owned());
        }
        number += 1;
        if number < first {
            continue;
        }
        if shown_lines == request.limit || out.len() >= request.max_bytes {
            more = true;
            break;
        }
        shown_lines += 1;
        let text = String::from_utf8_lossy(&line.bytes);
        out.push_str(&format!("{number:>6}\t"));
        if line.cut || text.chars().count() > request.max_line_chars {
            out.extend(text.chars().take(request.max_line_chars));
            out.push_str(" [… line cut]");
        } else {
            out.push_str(&text);
        }
        out.push('\n');
    }
    if shown_lines == 0 {
        return Err(format!(
            "offset {first} is past the end of {shown}, which has {number} lines"
        ));
    }
    if more {
        let last = first + shown_lines - 1;
        out.push_str(&format!(
            "[showing lines {first}-{last}; the file has more: call read_file with offset={} \
             to read on]\n",
            last + 1
        ));
    }
    Ok(ToolOutput::ok(out))
}

/// Creates or overwrites a file.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct WriteFile;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct WriteFileParams {
    /// Relative to the workspace (or absolute in it).
    path: String,
    /// The whole new content.
    content: String,
}

impl TypedTool for WriteFile {
    type Params = WriteFileParams;
    const NAME: &'static str = "write_file";
    const DESCRIPTION: &'static str = "Create a file or replace all its content (parent directories created, atomic). \
         To change part of a file, use edit_file.";
    const READ_ONLY: bool = false;

    fn summary(&self, input: &serde_json::Value) -> String {
        str_field(input, "path").to_owned()
    }

    fn run<'a>(
        &'a self,
        params: WriteFileParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        Box::pin(write_file(params, ctx))
    }
}

async fn write_file(params: WriteFileParams, ctx: &ToolContext) -> Result<ToolOutput, String> {
    let workspace = ctx.workspace.clone();
    tokio::task::spawn_blocking(move || {
        let target = WriteTarget::open(&workspace, &params.path, true)?;
        let existed = target.exists()?;
        target
            .write_atomic(params.content.as_bytes())
            .map_err(|error| format!("cannot write {}: {error}", target.shown))?;
        let verb = if existed { "overwrote" } else { "created" };
        Ok(ToolOutput::ok(format!(
            "{verb} {} ({} bytes)",
            target.shown,
            params.content.len()
        )))
    })
    .await
    .map_err(|error| format!("write_file failed: {error}"))?
}

/// Replaces exact text in a file.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct EditFile;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct EditFileParams {
    /// Relative to the workspace (or absolute in it).
    path: String,
    /// The exact text to replace.
    old_text: String,
    /// Its replacement.
    new_text: String,
    /// Replace every occurrence (default false).
    replace_all: Option<bool>,
}

impl TypedTool for EditFile {
    type Params = EditFileParams;
    const NAME: &'static str = "edit_file";
    const DESCRIPTION: &'static str = "Replace exact text in a file: `oldText` must match exactly (whitespace included, \
         no line numbers) and occur once unless `replaceAll`; else add surrounding lines. \
         Returns the edited region. Read it first; create files with write_file.";
    const READ_ONLY: bool = false;

    fn summary(&self, input: &serde_json::Value) -> String {
        str_field(input, "path").to_owned()
    }

    fn run<'a>(
        &'a self,
        params: EditFileParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        Box::pin(edit_file(params, ctx))
    }
}

async fn edit_file(params: EditFileParams, ctx: &ToolContext) -> Result<ToolOutput, String> {
    if params.old_text.is_empty() {
        return Err(
            "oldText is empty; give the exact text to replace (use write_file to \
                    create a file)"
                .to_owned(),
        );
    }
    if params.old_text == params.new_text {
        return Err("oldText and newText are the same; nothing to change".to_owned());
    }
    let (target, content) =
        read_for_edit(&ctx.workspace, &params.path, ctx.limits.edit_file_max_bytes).await?;
    let shown = target.shown.clone();
    let (old_text, new_text) = crlf_adjusted(&content, params.old_text, params.new_text);
    let count = content.matches(&old_text).count();
    let replace_all = params.replace_all.unwrap_or(false);
    if count == 0 {
        let hint = if content.contains(old_text.trim()) {
            "the text occurs with different leading or trailing whitespace; copy it exactly"
        } else {
            "read_file it again and copy the text exactly (whitespace and indentation \
             included, without line numbers)"
        };
        return Err(format!("oldText was not found in {shown}; {hint}"));
    }
    if count > 1 && !replace_all {
        return Err(format!(
            "oldText matches {count} times in {shown}; include more surrounding lines to make \
             it unique, or set replaceAll to true to replace all of them"
        ));
    }
    let first_match = content.find(&old_text).unwrap_or(0);
    let updated = if replace_all {
        content.replace(&old_text, &new_text)
    } else {
        content.replacen(&old_text, &new_text, 1)
    };
    let updated = tokio::task::spawn_blocking(move || {
        target
            .write_atomic(updated.as_bytes())
            .map(|()| updated)
            .map_err(|error| format!("cannot write {}: {error}", target.shown))
    })
    .await
    .map_err(|error| format!("edit_file failed: {error}"))??;
    let plural = if count == 1 { "" } else { "s" };
    let snippet = numbered_snippet(&updated, first_match, new_text.len());
    Ok(ToolOutput::ok(format!(
        "edited {shown}: replaced {count} occurrence{plural}\n{snippet}"
    )))
}

/// The file `path` names, opened beneath the workspace (see [`WriteTarget`]), and its whole
/// text: a regular file of at most `max_bytes` bytes (FIFOs and devices refused).
async fn read_for_edit(
    workspace: &Path,
    path: &str,
    max_bytes: u64,
) -> Result<(WriteTarget, String), String> {
    let workspace = workspace.to_path_buf();
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let target = WriteTarget::open(&workspace, &path, false)?;
        let shown = &target.shown;
        let file = target.open_read().map_err(|error| match error {
            text_file::OpenError::Io(error) => format!("cannot read {shown}: {error}"),
            error => error.describe(shown),
        })?;
        let size = file
            .metadata()
            .map_err(|error| format!("cannot read {shown}: {error}"))?
            .len();
        if size > max_bytes {
            return Err(format!(
                "{shown} is {size} bytes, more than edit_file handles ({max_bytes}); edit it \
                 with run_shell (e.g. sed) instead"
            ));
        }
        let mut content = String::new();
        file.take(max_bytes)
            .read_to_string(&mut content)
            .map_err(|error| format!("cannot read {shown} as text: {error}"))?;
        Ok((target, content))
    })
    .await
    .map_err(|error| format!("edit_file failed: {error}"))?
}

/// The model writes `\n`; in a file with CRLF line ends whose text only matches with `\r\n`,
/// both texts are converted so the edit applies and the file keeps its line ends.
fn crlf_adjusted(content: &str, old_text: String, new_text: String) -> (String, String) {
    let needs_crlf = content.contains("\r\n")
        && old_text.contains('\n')
        && !old_text.contains('\r')
        && !content.contains(&old_text);
    if needs_crlf {
        (
            old_text.replace('\n', "\r\n"),
            new_text.replace("\r\n", "\n").replace('\n', "\r\n"),
        )
    } else {
        (old_text, new_text)
    }
}

/// The lines around bytes `start..start + len` of `text`, numbered, with 3 lines of context.
fn numbered_snippet(text: &str, start: usize, len: usize) -> String {
    const CONTEXT_LINES: usize = 3;
    const MAX_LINES: usize = 40;
    let first_line = text[..start.min(text.len())].matches('\n').count();
    let end = (start + len).min(text.len());
    let last_line = first_line + text[start.min(end)..end].matches('\n').count();
    let from = first_line.saturating_sub(CONTEXT_LINES);
    let to = (last_line + CONTEXT_LINES).min(from + MAX_LINES);
    text.lines()
        .enumerate()
        .skip(from)
        .take(to - from + 1)
        .map(|(index, line)| format!("{:>6}\t{line}\n", index + 1))
        .collect()
}

/// Lists a directory.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ListDir;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ListDirParams {
    /// Directory, relative to the workspace root (default: the root).
    path: Option<String>,
}

impl TypedTool for ListDir {
    type Params = ListDirParams;
    const NAME: &'static str = "list_dir";
    const DESCRIPTION: &'static str = "List one directory (not recursive), sorted, directories ending in `/`, at most \
         1000 entries. Hidden and ignored files included; denied entries and symlinks out \
         of the workspace left out (counted).";
    const READ_ONLY: bool = true;

    fn summary(&self, input: &serde_json::Value) -> String {
        match str_field(input, "path") {
            "" => ".".to_owned(),
            path => path.to_owned(),
        }
    }

    fn run<'a>(
        &'a self,
        params: ListDirParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        Box::pin(list_dir(params, ctx))
    }
}

async fn list_dir(params: ListDirParams, ctx: &ToolContext) -> Result<ToolOutput, String> {
    let requested = params.path.unwrap_or_else(|| ".".to_owned());
    let path: PathBuf = resolve_in_workspace_async(&ctx.workspace, &requested).await?;
    let workspace = ctx.workspace.clone();
    let filter = ctx.read_filter.clone();
    let max = ctx.limits.listing_max_entries;
    tokio::task::spawn_blocking(move || list_entries(&path, &workspace, &filter, max))
        .await
        .map_err(|error| format!("list_dir failed: {error}"))?
}

/// The listing of the resolved directory `path`: names sorted, directories (and links to
/// them) marked with `/`, entries the read filter withholds counted, never named. Blocking.
fn list_entries(
    path: &Path,
    workspace: &Path,
    filter: &ReadFilter,
    max: usize,
) -> Result<ToolOutput, String> {
    let shown = display_path(workspace, path);
    let reader =
        std::fs::read_dir(path).map_err(|error| format!("cannot list {shown}: {error}"))?;
    let mut entries = Vec::new();
    let mut withheld = Withheld::default();
    for entry in reader {
        let entry = entry.map_err(|error| format!("cannot list {shown}: {error}"))?;
        let entry_path = entry.path();
        let kind = entry.file_type().ok();
        let is_symlink = kind.is_some_and(|kind| kind.is_symlink());
        if let Some(by) = filter.judge_entry(ListDir::NAME, workspace, &entry_path, is_symlink) {
            withheld.count(by);
            continue;
        }
        let is_dir = if is_symlink {
            std::fs::metadata(&entry_path).is_ok_and(|metadata| metadata.is_dir())
        } else {
            kind.is_some_and(|kind| kind.is_dir())
        };
        let mut name = entry.file_name().to_string_lossy().into_owned();
        if is_dir {
            name.push('/');
        }
        entries.push(name);
    }
    if entries.is_empty() {
        if withheld.is_empty() {
            return Ok(ToolOutput::ok(format!("{shown} is empty")));
        }
        return Ok(ToolOutput::ok(format!(
            "no entries of {shown} can be shown\n{}",
            withheld.note()
        )));
    }
    entries.sort();
    let hidden = entries.len().saturating_sub(max);
    entries.truncate(max);
    let mut out = entries.join("\n");
    out.push('\n');
    if hidden > 0 {
        out.push_str(&format!("[… {hidden} more entries not shown]\n"));
    }
    out.push_str(&withheld.note());
    Ok(ToolOutput::ok(out))
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
