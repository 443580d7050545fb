//! Frontmatter of Markdown definition files (`SKILL.md`, subagent definitions): the
//! `key: value` lines between two `---` fences at the top of the file, and the body after them.
//!
//! This is a small strict subset of YAML, not a YAML parser: plain, single- and double-quoted
//! scalars, folded (`>`) and literal (`|`) block scalars, plain scalars continued on indented
//! lines, lists of scalars (`- item` lines or `[a, b]`), and nested block mappings and sequences
//! or a one-line JSON object under a key ([`Value::Nested`], `nested`: Claude Code writes a
//! subagent's `hooks` and `mcpServers` so). Anything else (anchors, tags, a key given twice) is
//! refused with the line it is on, never guessed at.

/// A frontmatter value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Text(String),
    List(Vec<String>),
    /// Nested mappings or sequences (or a one-line JSON object), as JSON.
    Nested(serde_json::Value),
}

mod nested;

/// A parsed file: its frontmatter fields in file order and the body after the closing fence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document<'a> {
    pub fields: Vec<(String, Value)>,
    /// Everything after the closing fence (the whole text when there is no frontmatter).
    pub body: &'a str,
}

/// Why a frontmatter could not be read: the 1-based line of the file and what is wrong there.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct FrontmatterError {
    pub line: usize,
    pub message: String,
}

impl Document<'_> {
    /// The text of field `key`: a scalar as is, a list joined with ", ". None when absent.
    pub fn text(&self, key: &str) -> Option<String> {
        self.fields
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| match value {
                Value::Text(text) => text.clone(),
                Value::List(items) => items.join(", "),
                Value::Nested(value) => value.to_string(),
            })
    }
}

/// The opening and closing fence line.
const FENCE: &str = "---";

/// Splits `text` into frontmatter fields and body. A file that does not open with a `---` line
/// has no frontmatter: no fields, the whole text is the body.
pub fn parse(text: &str) -> Result<Document<'_>, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = LineCursor::new(text);
    match lines.peek() {
        Some((_, first)) if first.trim_end() == FENCE => {
            lines.advance();
        }
        _ => {
            return Ok(Document {
                fields: Vec::new(),
                body: text,
            });
        }
    }
    let mut fields: Vec<(String, Value)> = Vec::new();
    loop {
        let Some((number, line)) = lines.peek() else {
            return Err(FrontmatterError {
                line: 1,
                message:
                    "the frontmatter opened with `---` is never closed; end it with a `---` line"
                        .to_owned(),
            });
        };
        lines.advance();
        let trimmed = line.trim_end();
        if trimmed == FENCE {
            break;
        }
        if trimmed.trim_start().is_empty() || trimmed.trim_start().starts_with('#') {
            continue;
        }
        if trimmed.starts_with([' ', '\t']) {
            return Err(error(
                number,
                "unexpected indented line; nested mappings are not supported, write `key: value` lines",
            ));
        }
        let Some((key, rest)) = trimmed.split_once(':') else {
            return Err(error(
                number,
                format!("expected `key: value`, found `{}`", preview(trimmed)),
            ));
        };
        let key = key.trim();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        {
            return Err(error(
                number,
                format!(
                    "`{}` is not a supported key (letters, digits, `-`, `_`, `.`)",
                    preview(key)
                ),
            ));
        }
        if fields.iter().any(|(name, _)| name == key) {
            return Err(error(number, format!("the key `{key}` is given twice")));
        }
        let value = value(number, rest.trim(), &mut lines)?;
        fields.push((key.to_owned(), value));
    }
    Ok(Document {
        fields,
        body: lines.rest(),
    })
}

/// The value after `key:` on line `number`, with the indented lines that continue it.
fn value(number: usize, raw: &str, lines: &mut LineCursor<'_>) -> Result<Value, FrontmatterError> {
    let raw = strip_comment(raw);
    if raw.is_empty() {
        let block = lines.take_indented();
        if block.is_empty() {
            return Ok(Value::Text(String::new()));
        }
        // A list of scalars at one column; anything deeper or another shape is nested.
        let column = |line: &str| line.len() - line.trim_start().len();
        let first_column = block
            .iter()
            .find(|(_, line)| !line.trim().is_empty())
            .map(|(_, line)| column(line));
        let mut items = Vec::new();
        for (line_number, line) in &block {
            let item = line.trim();
            if item.is_empty() {
                continue;
            }
            let item = item
                .strip_prefix("- ")
                .or(if item == "-" { Some("") } else { None })
                .map(str::trim)
                .filter(|item| Some(column(line)) == first_column && nested::is_plain_item(item));
            let Some(item) = item else {
                return nested::parse_block(&block).map(Value::Nested);
            };
            items.push(scalar(*line_number, item)?);
        }
        return Ok(Value::List(items));
    }
    if let Some(indicator) = block_indicator(raw) {
        let block = lines.take_indented();
        return Ok(Value::Text(block_scalar(indicator, &block)));
    }
    if raw.starts_with('[') {
        return flow_list(number, raw).map(Value::List);
    }
    if raw.starts_with('{')
        && let Ok(object @ serde_json::Value::Object(_)) = serde_json::from_str(strip_comment(raw))
    {
        return Ok(Value::Nested(object));
    }
    if raw.starts_with(['{', '&', '*', '!', '|', '>', '%', '@', '`']) {
        return Err(error(
            number,
            format!(
                "`{}` uses YAML that is not supported here; quote the value",
                preview(raw)
            ),
        ));
    }
    if raw.starts_with(['"', '\'']) {
        return scalar(number, raw).map(Value::Text);
    }
    // A plain scalar may go on over indented lines, folded with spaces.
    let mut text = raw.to_owned();
    for (_, line) in lines.take_indented() {
        let line = line.trim();
        if line.is_empty() {
            text.push('\n');
        } else {
            if !text.ends_with('\n') {
                text.push(' ');
            }
            text.push_str(strip_comment(line));
        }
    }
    Ok(Value::Text(text.trim().to_owned()))
}

/// One scalar: quoted (with its escapes) or plain.
fn scalar(number: usize, raw: &str) -> Result<String, FrontmatterError> {
    if let Some(inner) = raw.strip_prefix('"') {
        return double_quoted(number, inner);
    }
    if let Some(inner) = raw.strip_prefix('\'') {
        let Some(inner) = inner.strip_suffix('\'') else {
            return Err(error(
                number,
                "a single-quoted value is not closed on its line",
            ));
        };
        return Ok(inner.replace("''", "'"));
    }
    Ok(strip_comment(raw).to_owned())
}

fn double_quoted(number: usize, inner: &str) -> Result<String, FrontmatterError> {
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                let rest = chars.as_str().trim();
                if !rest.is_empty() && !rest.starts_with('#') {
                    return Err(error(number, "text after the closing quote"));
                }
                return Ok(out);
            }
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some('/') => out.push('/'),
                Some(other) => {
                    return Err(error(
                        number,
                        format!("unsupported escape `\\{other}` in a double-quoted value"),
                    ));
                }
                None => break,
            },
            other => out.push(other),
        }
    }
    Err(error(
        number,
        "a double-quoted value is not closed on its line",
    ))
}

/// `[a, "b", c]` on one line.
fn flow_list(number: usize, raw: &str) -> Result<Vec<String>, FrontmatterError> {
    let Some(inner) = strip_comment(raw)
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
    else {
        return Err(error(
            number,
            "a `[` list must close with `]` on the same line; quote the value if it is text",
        ));
    };
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    inner
        .split(',')
        .map(|item| {
            let item = item.trim();
            if item.starts_with(['[', '{']) {
                Err(error(number, "nested lists and mappings are not supported"))
            } else {
                scalar(number, item)
            }
        })
        .collect()
}

/// `>`, `|`, with an optional chomping indicator (`-`, `+`).
fn block_indicator(raw: &str) -> Option<(char, char)> {
    let mut chars = raw.chars();
    let style = chars.next().filter(|c| *c == '>' || *c == '|')?;
    let chomp = match chars.as_str() {
        "" => ' ',
        "-" => '-',
        "+" => '+',
        _ => return None,
    };
    Some((style, chomp))
}

/// The text of a block scalar: `|` keeps line breaks, `>` folds lines into spaces (a blank line
/// stays a line break); `-` strips the final line break, `+` keeps all, default keeps one.
fn block_scalar((style, chomp): (char, char), block: &[(usize, &str)]) -> String {
    let indent = block
        .iter()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(_, line)| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    let lines: Vec<&str> = block
        .iter()
        .map(|(_, line)| line.get(indent..).unwrap_or("").trim_end())
        .collect();
    let mut text = String::new();
    if style == '|' {
        for line in &lines {
            text.push_str(line);
            text.push('\n');
        }
    } else {
        let mut previous_blank = true;
        for line in &lines {
            if line.is_empty() {
                text.push('\n');
                previous_blank = true;
            } else {
                if !previous_blank {
                    text.push(' ');
                }
                text.push_str(line);
                previous_blank = false;
            }
        }
        text.push('\n');
    }
    match chomp {
        '-' => text.trim_end_matches('\n').to_owned(),
        '+' => text,
        _ => format!("{}\n", text.trim_end_matches('\n')),
    }
}

/// A plain value without its trailing ` # comment`.
fn strip_comment(raw: &str) -> &str {
    if raw.starts_with(['"', '\'']) {
        return raw;
    }
    match raw.find(" #") {
        Some(at) => raw[..at].trim_end(),
        None if raw.starts_with('#') => "",
        None => raw,
    }
}

fn error(line: usize, message: impl Into<String>) -> FrontmatterError {
    FrontmatterError {
        line,
        message: message.into(),
    }
}

/// At most 40 chars of `text`, for messages.
fn preview(text: &str) -> String {
    let mut out: String = text.chars().take(40).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// Lines of the text with their 1-based numbers, and the byte offset of the rest.
struct LineCursor<'a> {
    text: &'a str,
    offset: usize,
    number: usize,
}

impl<'a> LineCursor<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            offset: 0,
            number: 1,
        }
    }

    /// The next line (without its line break) and its number.
    fn peek(&self) -> Option<(usize, &'a str)> {
        let rest = &self.text[self.offset..];
        if rest.is_empty() {
            return None;
        }
        let line = rest.split('\n').next().unwrap_or("");
        Some((self.number, line.strip_suffix('\r').unwrap_or(line)))
    }

    fn advance(&mut self) {
        let rest = &self.text[self.offset..];
        match rest.find('\n') {
            Some(at) => self.offset += at + 1,
            None => self.offset = self.text.len(),
        }
        self.number += 1;
    }

    /// The following lines that are indented or blank (a blank line only when an indented
    /// one follows it).
    fn take_indented(&mut self) -> Vec<(usize, &'a str)> {
        let mut taken = Vec::new();
        let mut blanks = Vec::new();
        while let Some((number, line)) = self.peek() {
            if line.trim_end() == FENCE {
                break;
            }
            if line.trim().is_empty() {
                blanks.push((number, line));
            } else if line.starts_with([' ', '\t']) {
                taken.append(&mut blanks);
                taken.push((number, line));
            } else {
                break;
            }
            self.advance();
        }
        // Blank lines not followed by an indented one belong to the mapping: they were
        // consumed, which is harmless (blank lines between keys mean nothing).
        taken
    }

    fn rest(&self) -> &'a str {
        &self.text[self.offset..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn text(value: &str) -> Value {
        Value::Text(value.to_owned())
    }

    /// Data-driven: the fields of a frontmatter, or the error.
    fn check(input: &str, expected: Result<Vec<(&str, Value)>, &str>) {
        let got = parse(input).map(|document| document.fields);
        let expected = expected
            .map(|fields| {
                fields
                    .into_iter()
                    .map(|(key, value)| (key.to_owned(), value))
                    .collect::<Vec<_>>()
            })
            .map_err(str::to_owned);
        assert_eq!(got.map_err(|err| err.to_string()), expected, "{input}");
    }

    #[test]
    fn scalars_quoted_and_plain() {
        check(
            "---\nname: pdf\ndescription: Fill PDF forms: use it for forms # why\n---\nbody",
            Ok(vec![
                ("name", text("pdf")),
                ("description", text("Fill PDF forms: use it for forms")),
            ]),
        );
        check(
            "---\na: \"say \\\"hi\\\"\\n\"\nb: 'it''s # not a comment'\n---\n",
            Ok(vec![
                ("a", text("say \"hi\"\n")),
                ("b", text("it's # not a comment")),
            ]),
        );
        check("---\nempty:\n---\n", Ok(vec![("empty", text(""))]));
    }

    #[test]
    fn folded_literal_and_continued_values() {
        check(
            "---\nd: >\n  one\n  two\n\n  three\nn: x\n---\n",
            Ok(vec![("d", text("one two\nthree\n")), ("n", text("x"))]),
        );
        check(
            "---\nd: |-\n  one\n    two\n---\n",
            Ok(vec![("d", text("one\n  two"))]),
        );
        check(
            "---\nd: a long\n  description\n---\n",
            Ok(vec![("d", text("a long description"))]),
        );
    }

    #[test]
    fn lists() {
        check(
            "---\ntools:\n  - Read\n  - \"Grep\"\nother: [a, 'b c']\n---\n",
            Ok(vec![
                ("tools", Value::List(vec!["Read".into(), "Grep".into()])),
                ("other", Value::List(vec!["a".into(), "b c".into()])),
            ]),
        );
    }

    #[test]
    fn refusals_name_the_line() {
        check(
            "---\nname: x\n",
            Err(
                "line 1: the frontmatter opened with `---` is never closed; end it with a `---` line",
            ),
        );
        check(
            "---\nname: x\nname: y\n---\n",
            Err("line 3: the key `name` is given twice"),
        );
        check(
            "---\nmeta:\n  a: b\n   c: d\n---\n",
            Err("line 4: `c: d` is not indented as the lines before it"),
        );
        check(
            "---\nmeta:\n  a: |\n    x\n---\n",
            Err("line 3: `|` uses YAML that is not supported here; quote the value"),
        );
        check(
            "---\njust text\n---\n",
            Err("line 2: expected `key: value`, found `just text`"),
        );
        check(
            "---\na: &anchor x\n---\n",
            Err("line 2: `&anchor x` uses YAML that is not supported here; quote the value"),
        );
        check(
            "---\na: \"open\n---\n",
            Err("line 2: a double-quoted value is not closed on its line"),
        );
    }

    #[test]
    fn nested_mappings_and_sequences_are_json() {
        let hooks = "---\nname: x\nhooks:\n  PreToolUse:\n    - matcher: \"Bash\"\n      hooks:\n        - type: command\n          command: ./check.sh # why\n          timeout: 30\nmcpServers:\n  - github\n  - playwright:\n      type: stdio\n      command: npx\n      args: [\"-y\", \"@playwright/mcp\"]\n  - fs: {\"command\": \"node\"}\n---\nbody";
        check(
            hooks,
            Ok(vec![
                ("name", text("x")),
                (
                    "hooks",
                    Value::Nested(
                        serde_json::json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
                            {"type": "command", "command": "./check.sh", "timeout": 30}
                        ]}]}),
                    ),
                ),
                (
                    "mcpServers",
                    Value::Nested(serde_json::json!([
                        "github",
                        {"playwright": {"type": "stdio", "command": "npx", "args": ["-y", "@playwright/mcp"]}},
                        {"fs": {"command": "node"}}
                    ])),
                ),
            ]),
        );
        // A sequence at its key's column, typed scalars, a one-line JSON object.
        check(
            "---\nmeta:\n  list:\n  - 1\n  - true\n  - ~\n  - '2'\njson: {\"a\": [1]}\n---\n",
            Ok(vec![
                (
                    "meta",
                    Value::Nested(serde_json::json!({"list": [1, true, null, "2"]})),
                ),
                ("json", Value::Nested(serde_json::json!({"a": [1]}))),
            ]),
        );
        // Lists of plain items stay lists.
        check(
            "---\ntools:\n  - Read\n  - \"Bash(git: status)\"\n---\n",
            Ok(vec![(
                "tools",
                Value::List(vec!["Read".into(), "Bash(git: status)".into()]),
            )]),
        );
    }

    #[test]
    fn body_and_no_frontmatter() {
        let document = parse("---\r\nname: x\r\n---\r\n# Title\nText\n").unwrap();
        assert_eq!(document.text("name").as_deref(), Some("x"));
        assert_eq!(document.body, "# Title\nText\n");
        let document = parse("# No frontmatter\n").unwrap();
        assert!(document.fields.is_empty());
        assert_eq!(document.body, "# No frontmatter\n");
        assert_eq!(document.text("name"), None);
    }
}
