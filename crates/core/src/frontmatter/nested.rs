//! Nested values of a frontmatter key, as Claude Code writes a subagent's `hooks` and inline
//! `mcpServers`: block mappings (`key: value`, `key:` over deeper lines), block sequences
//! (`- item`, `- key: value` going on at the item's column), plain and quoted scalars (plain
//! `true`, `false`, `null` and numbers typed as YAML types them), one-line `[a, b]` lists and
//! one-line JSON objects. Still a strict subset: block scalars, anchors, tags, flow mappings
//! that are not JSON and tabs in the indentation are refused with their line.

use serde_json::Value as Json;

use super::{FrontmatterError, error, flow_list, preview, scalar, strip_comment};

/// One line of a nested block after splitting `- ` markers off: its number, the column its
/// content starts at, and the content (comments stripped).
#[derive(Clone, Copy, Debug)]
struct Line<'a> {
    number: usize,
    indent: usize,
    content: &'a str,
}

/// Whether a `- item` of a list is a scalar of a list of scalars: quoted, or plain without a
/// `key:` in it (`- playwright:` starts a mapping).
pub(super) fn is_plain_item(item: &str) -> bool {
    item.starts_with(['"', '\'']) || (key_of(item).is_none() && !item.starts_with('{'))
}

/// The value the indented `block` under a key holds.
pub(super) fn parse_block(block: &[(usize, &str)]) -> Result<Json, FrontmatterError> {
    let mut lines = Vec::new();
    for (number, raw) in block {
        let body = raw.trim_start_matches(' ');
        if body.starts_with('\t') {
            return Err(error(
                *number,
                "a tab in the indentation; indent with spaces",
            ));
        }
        let content = strip_comment(body.trim_end());
        if content.is_empty() {
            continue;
        }
        let mut indent = raw.len() - body.len();
        let mut content = content;
        // `- - x` and `- key: v`: each marker a line of its own, the rest at its column.
        while let Some(rest) = content
            .strip_prefix("- ")
            .or_else(|| (content == "-").then_some(""))
        {
            lines.push(Line {
                number: *number,
                indent,
                content: "-",
            });
            let trimmed = rest.trim_start();
            indent += content.len() - trimmed.len();
            content = trimmed;
            if content.is_empty() {
                break;
            }
        }
        if !content.is_empty() {
            lines.push(Line {
                number: *number,
                indent,
                content,
            });
        }
    }
    let Some(first) = lines.first() else {
        return Ok(Json::Null);
    };
    let (value, used) = node(&lines, 0, first.indent)?;
    if let Some(extra) = lines.get(used) {
        return Err(error(
            extra.number,
            format!(
                "`{}` is not indented as the lines before it",
                preview(extra.content)
            ),
        ));
    }
    Ok(value)
}

/// The node starting at `lines[at]`, whose lines are at column `indent` (deeper ones belong to
/// its children), and the index after it.
fn node(lines: &[Line<'_>], at: usize, indent: usize) -> Result<(Json, usize), FrontmatterError> {
    let first = lines[at];
    if first.content == "-" {
        return sequence(lines, at, indent);
    }
    if key_of(first.content).is_some() {
        return mapping(lines, at, indent);
    }
    Ok((leaf(first.number, first.content)?, at + 1))
}

/// `- item` lines at `indent`.
fn sequence(
    lines: &[Line<'_>],
    mut at: usize,
    indent: usize,
) -> Result<(Json, usize), FrontmatterError> {
    let mut items = Vec::new();
    while let Some(line) = lines.get(at) {
        if line.indent != indent || line.content != "-" {
            break;
        }
        at += 1;
        match lines.get(at) {
            Some(child) if child.indent > indent => {
                let (value, next) = node(lines, at, child.indent)?;
                items.push(value);
                at = next;
            }
            _ => items.push(Json::Null),
        }
    }
    Ok((Json::Array(items), at))
}

/// `key: value` lines at `indent`.
fn mapping(
    lines: &[Line<'_>],
    mut at: usize,
    indent: usize,
) -> Result<(Json, usize), FrontmatterError> {
    let mut map = serde_json::Map::new();
    while let Some(line) = lines.get(at) {
        if line.indent != indent {
            break;
        }
        let Some((key, rest)) = key_of(line.content) else {
            return Err(error(
                line.number,
                format!("expected `key: value`, found `{}`", preview(line.content)),
            ));
        };
        let key = scalar(line.number, key)?;
        if map.contains_key(&key) {
            return Err(error(
                line.number,
                format!("the key `{key}` is given twice"),
            ));
        }
        at += 1;
        let value = if rest.is_empty() {
            match lines.get(at) {
                // Deeper lines, or a sequence at the key's own column (as YAML allows).
                Some(child)
                    if child.indent > indent
                        || (child.indent == indent && child.content == "-") =>
                {
                    let (value, next) = node(lines, at, child.indent)?;
                    at = next;
                    value
                }
                _ => Json::Null,
            }
        } else {
            leaf(line.number, rest)?
        };
        map.insert(key, value);
    }
    Ok((Json::Object(map), at))
}

/// `key` and the rest of a `key: value` or `key:` line; None when the line is a scalar.
fn key_of(content: &str) -> Option<(&str, &str)> {
    if content.starts_with(['[', '{']) {
        return None;
    }
    // A quoted key ends at its closing quote.
    let search_from = match content.chars().next() {
        Some(quote @ ('"' | '\'')) => content[1..].find(quote).map(|end| end + 2)?,
        _ => 0,
    };
    let tail = &content[search_from..];
    let at = match tail.find(": ") {
        Some(at) => at,
        None if tail.ends_with(':') => tail.len() - 1,
        None => return None,
    };
    let at = search_from + at;
    Some((content[..at].trim_end(), content[at + 1..].trim()))
}

/// A value on one line: a JSON object, a `[a, b]` list, or a scalar.
fn leaf(number: usize, raw: &str) -> Result<Json, FrontmatterError> {
    if raw.starts_with('{') {
        return serde_json::from_str(raw).map_err(|why| {
            error(
                number,
                format!(
                    "`{}` is not a JSON object ({why}); write it as nested lines",
                    preview(raw)
                ),
            )
        });
    }
    if raw.starts_with('[') {
        return Ok(Json::Array(
            flow_list(number, raw)?
                .into_iter()
                .map(Json::String)
                .collect(),
        ));
    }
    if raw.starts_with(['&', '*', '!', '|', '>', '%', '@', '`']) {
        return Err(error(
            number,
            format!(
                "`{}` uses YAML that is not supported here; quote the value",
                preview(raw)
            ),
        ));
    }
    if raw.starts_with(['"', '\'']) {
        return scalar(number, raw).map(Json::String);
    }
    Ok(match raw {
        "true" => Json::Bool(true),
        "false" => Json::Bool(false),
        "null" | "~" => Json::Null,
        _ => raw
            .parse::<i64>()
            .map(Json::from)
            .ok()
            .or_else(|| {
                raw.parse::<f64>()
                    .ok()
                    .filter(|number| number.is_finite())
                    .and_then(serde_json::Number::from_f64)
                    .map(Json::Number)
            })
            .unwrap_or_else(|| Json::String(raw.to_owned())),
    })
}
