//! Quote-aware parsing of shell command lines into the simple commands they run, so rules and
//! the destructive-command list see every part of `a && b | c`, `$( … )`, backticks, subshells,
//! substitutions inside `${x:-…}` and `$(( … ))`, `sh -c '…'` / `eval` bodies and the inner
//! commands of wrappers (`sudo`, `find -exec`, see `wrapper`). What it cannot account for is
//! noted in [`ParsedShell::unaccounted`].
//!
//! This is not a shell: it knows quoting, escapes, separators, redirections and substitutions,
//! and errs towards finding more parts (a heredoc body is read as commands, for example), never
//! fewer.

use super::wrapper::decode_ansi_c;
pub(crate) use super::wrapper::effective_words;

/// The simple commands of `command`, outermost first, each as written (quotes kept, trimmed):
/// the parts a rule must match.
///
/// Separators are `;`, `&&`, `||`, `|`, `|&`, `&` and newlines; `( … )`, `{ …; }`, `$( … )`,
/// `<( … )`, `>( … )`, backticks (also inside `${x:-…}` and `$(( … ))`), the bodies of `sh -c`,
/// `bash -c` (any shell, any option cluster containing `c`), `eval`, `su -c`, `env -S` and
/// the inner commands of wrappers (`sudo make` gives `sudo make` and `make`) are parts of their
/// own. A command holding a
/// substitution stays a part too (`echo $(date)` gives `echo $(date)` and `date`). Nothing is
/// split inside single quotes; inside double quotes only substitutions are. Exact duplicates are
/// listed once.
pub(crate) fn split_shell_command(command: &str) -> Vec<String> {
    let parsed = parse(command);
    let mut parts = Vec::new();
    collect_parts(&parsed.pipelines, &mut parts);
    let mut seen = std::collections::HashSet::new();
    parts.retain(|part| seen.insert(part.clone()));
    parts
}

/// A parsed command line.
#[derive(Clone, Debug, Default)]
pub(crate) struct ParsedShell {
    pub pipelines: Vec<Pipeline>,
    /// Nesting went past [`MAX_NESTING`]: the line cannot be checked and is refused.
    pub too_deep: bool,
    /// Why the parts may not be all the line runs (an unterminated quote, a script read from
    /// standard input, a command name known only when it runs): such a line asks and no allow
    /// prefix covers it.
    pub unaccounted: Option<String>,
}

/// Commands joined by `|`: what one writes, the next reads.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pipeline {
    pub commands: Vec<SimpleCommand>,
}

/// One command with its words.
#[derive(Clone, Debug, Default)]
pub(crate) struct SimpleCommand {
    /// As written (quotes kept), trimmed.
    pub text: String,
    /// Words after quote removal; redirection operators are words of their own.
    pub words: Vec<String>,
    /// Indices in `words` of the redirection operators (a quoted `'>'` is a plain word).
    pub operators: Vec<usize>,
    /// Lists run by this command: substitutions, a subshell's body, `sh -c` / `eval` bodies.
    pub nested: Vec<Nested>,
    /// `( … )` or `{ …; }` with no command of its own: not a part itself, only its body is.
    pub grouping: bool,
}

/// A command list run inside another command.
#[derive(Clone, Debug)]
pub(crate) struct Nested {
    pub kind: NestedKind,
    pub pipelines: Vec<Pipeline>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NestedKind {
    /// `$( … )`, backticks, `<( … )`, `>( … )`: output becomes text or a file for the command.
    Substitution,
    /// `( … )` or `{ …; }`.
    Group,
    /// `sh -c '…'` or `eval …`: the text is run as a script.
    Script,
    /// The command a wrapper runs: `rm -rf x` of `sudo rm -rf x`, `rm {}` of `find -exec`.
    Wrapped,
}

/// Deeper nesting is refused rather than parsed (adversarial input must not blow the stack).
pub(crate) const MAX_NESTING: usize = 16;

/// Shells whose `-c` body is a script.
pub(crate) const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"];

/// Parses a command line.
pub(crate) fn parse(command: &str) -> ParsedShell {
    let chars: Vec<char> = command.chars().collect();
    let mut parser = Parser {
        chars: &chars,
        pos: 0,
        depth: 0,
        too_deep: false,
        unaccounted: None,
    };
    let pipelines = parser.parse_list(false);
    ParsedShell {
        pipelines,
        too_deep: parser.too_deep,
        unaccounted: parser.unaccounted,
    }
}

/// `/usr/bin/rm` → `rm`.
pub(crate) fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Redirection operators, which the parser emits as words of their own.
pub(crate) fn is_redirection(word: &str) -> bool {
    !word.is_empty() && word.chars().all(|c| matches!(c, '<' | '>' | '&' | '|'))
}

fn collect_parts(pipelines: &[Pipeline], parts: &mut Vec<String>) {
    for pipeline in pipelines {
        for command in &pipeline.commands {
            if !command.grouping && !command.text.is_empty() {
                parts.push(command.text.clone());
            }
            for nested in &command.nested {
                collect_parts(&nested.pipelines, parts);
            }
        }
    }
}

pub(super) struct Parser<'a> {
    chars: &'a [char],
    pos: usize,
    pub(super) depth: usize,
    pub(super) too_deep: bool,
    unaccounted: Option<String>,
}

/// The command being read.
#[derive(Default)]
struct Builder {
    command: SimpleCommand,
    word: String,
    /// A word has started (so `""` is an empty word, not none).
    in_word: bool,
}

impl Builder {
    fn push_raw(&mut self, c: char) {
        self.command.text.push(c);
    }

    fn push_char(&mut self, c: char) {
        self.command.text.push(c);
        self.word.push(c);
        self.in_word = true;
    }

    fn end_word(&mut self) {
        if self.in_word {
            self.command.words.push(std::mem::take(&mut self.word));
            self.in_word = false;
        }
    }

    /// Adds a redirection operator as a word of its own.
    fn push_operator(&mut self, word: &str) {
        self.end_word();
        self.command.operators.push(self.command.words.len());
        self.command.text.push_str(word);
        self.command.words.push(word.to_owned());
    }

    fn is_at_command_start(&self) -> bool {
        !self.in_word && self.command.words.is_empty() && self.command.nested.is_empty()
    }
}

impl Parser<'_> {
    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn slice(&self, start: usize, end: usize) -> String {
        self.chars.get(start..end).unwrap_or(&[]).iter().collect()
    }

    /// Parses commands until the end, or until the `)` closing the list when `in_parens`.
    fn parse_list(&mut self, in_parens: bool) -> Vec<Pipeline> {
        let mut pipelines = Vec::new();
        let mut pipeline = Pipeline::default();
        let mut builder = Builder::default();
        let mut closed = !in_parens;
        while let Some(c) = self.peek_at(0) {
            match c {
                ')' if in_parens => {
                    self.pos += 1;
                    closed = true;
                    break;
                }
                ';' | '\n' => {
                    self.pos += 1;
                    self.end_command(&mut builder, &mut pipeline);
                    end_pipeline(&mut pipeline, &mut pipelines);
                }
                '&' if self.peek_at(1) == Some('>') => {
                    let operator = self.redirection_operator();
                    builder.push_operator(&operator);
                }
                '&' => {
                    self.pos += if self.peek_at(1) == Some('&') { 2 } else { 1 };
                    self.end_command(&mut builder, &mut pipeline);
                    end_pipeline(&mut pipeline, &mut pipelines);
                }
                '|' if self.peek_at(1) == Some('|') => {
                    self.pos += 2;
                    self.end_command(&mut builder, &mut pipeline);
                    end_pipeline(&mut pipeline, &mut pipelines);
                }
                '|' => {
                    self.pos += if self.peek_at(1) == Some('&') { 2 } else { 1 };
                    self.end_command(&mut builder, &mut pipeline);
                }
                ' ' | '\t' | '\r' => {
                    self.pos += 1;
                    builder.end_word();
                    builder.push_raw(' ');
                }
                '\'' => self.single_quoted(&mut builder),
                '"' => self.double_quoted(&mut builder),
                '\\' => {
                    match self.peek_at(1) {
                        Some('\n') => {}
                        Some(next) => {
                            builder.push_raw('\\');
                            builder.push_char(next);
                        }
                        None => builder.push_char('\\'),
                    }
                    self.pos += 2;
                }
                '$' => self.dollar(&mut builder),
                '`' => self.backticks(&mut builder),
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    let start = self.pos;
                    self.pos += 2;
                    let nested = self.nested_list();
                    self.push_substitution(&mut builder, start, NestedKind::Substitution, nested);
                }
                '<' | '>' => {
                    let operator = self.redirection_operator();
                    builder.push_operator(&operator);
                }
                '(' if self.peek_at(1) == Some(')') && !builder.is_at_command_start() => {
                    // `name()` of a function definition.
                    self.pos += 2;
                    builder.push_char('(');
                    builder.push_char(')');
                }
                '(' => {
                    builder.end_word();
                    let start = self.pos;
                    let grouping = builder.is_at_command_start();
                    self.pos += 1;
                    let nested = self.nested_list();
                    builder.command.grouping |= grouping;
                    self.push_substitution(&mut builder, start, NestedKind::Group, nested);
                    builder.end_word();
                }
                '#' if !builder.in_word => {
                    while let Some(c) = self.peek_at(0) {
                        if c == '\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                _ => {
                    self.pos += 1;
                    builder.push_char(c);
                }
            }
        }
        self.end_command(&mut builder, &mut pipeline);
        end_pipeline(&mut pipeline, &mut pipelines);
        if !closed && !self.too_deep {
            self.unaccounted("a `(` is not closed");
        }
        pipelines
    }

    /// Parses the list after an opening `(` up to its `)`, one level deeper.
    fn nested_list(&mut self) -> Vec<Pipeline> {
        if self.depth >= MAX_NESTING {
            self.too_deep = true;
            self.pos = self.chars.len();
            return Vec::new();
        }
        self.depth += 1;
        let pipelines = self.parse_list(true);
        self.depth -= 1;
        pipelines
    }

    /// Parses `text` (a backtick or `sh -c` body) as a list one level deeper.
    pub(super) fn nested_text(&mut self, text: &str) -> Vec<Pipeline> {
        if self.depth >= MAX_NESTING {
            self.too_deep = true;
            return Vec::new();
        }
        let chars: Vec<char> = text.chars().collect();
        let mut inner = Parser {
            chars: &chars,
            pos: 0,
            depth: self.depth + 1,
            too_deep: false,
            unaccounted: None,
        };
        let pipelines = inner.parse_list(false);
        self.too_deep |= inner.too_deep;
        if let Some(why) = inner.unaccounted {
            self.unaccounted(&why);
        }
        pipelines
    }

    /// Adds the raw text from `start` to here to the current word and records the nested list.
    fn push_substitution(
        &mut self,
        builder: &mut Builder,
        start: usize,
        kind: NestedKind,
        pipelines: Vec<Pipeline>,
    ) {
        let raw = self.slice(start, self.pos);
        builder.command.text.push_str(&raw);
        if kind != NestedKind::Group {
            builder.word.push_str(&raw);
            builder.in_word = true;
        }
        builder.command.nested.push(Nested { kind, pipelines });
    }

    fn redirection_operator(&mut self) -> String {
        let mut operator = String::new();
        while let Some(c) = self.peek_at(0) {
            if !matches!(c, '<' | '>' | '&' | '|') || operator.len() >= 3 {
                break;
            }
            if c == '|' && !operator.ends_with('>') {
                break;
            }
            operator.push(c);
            self.pos += 1;
        }
        operator
    }

    fn single_quoted(&mut self, builder: &mut Builder) {
        builder.push_raw('\'');
        builder.in_word = true;
        self.pos += 1;
        while let Some(c) = self.peek_at(0) {
            self.pos += 1;
            if c == '\'' {
                builder.push_raw('\'');
                return;
            }
            builder.push_char(c);
        }
        self.unaccounted("a quote is not closed");
    }

    fn double_quoted(&mut self, builder: &mut Builder) {
        builder.push_raw('"');
        builder.in_word = true;
        self.pos += 1;
        while let Some(c) = self.peek_at(0) {
            match c {
                '"' => {
                    self.pos += 1;
                    builder.push_raw('"');
                    return;
                }
                '\\' => {
                    match self.peek_at(1) {
                        Some(next @ ('"' | '\\' | '$' | '`')) => {
                            builder.push_raw('\\');
                            builder.push_char(next);
                        }
                        Some('\n') => {}
                        Some(next) => {
                            builder.push_char('\\');
                            builder.push_char(next);
                        }
                        None => builder.push_char('\\'),
                    }
                    self.pos += 2;
                }
                '$' => self.dollar(builder),
                '`' => self.backticks(builder),
                _ => {
                    self.pos += 1;
                    builder.push_char(c);
                }
            }
        }
        self.unaccounted("a quote is not closed");
    }

    /// `$( … )`, `$(( … ))`, `${ … }` or a plain `$`.
    fn dollar(&mut self, builder: &mut Builder) {
        let start = self.pos;
        match (self.peek_at(1), self.peek_at(2)) {
            (Some('('), Some('(')) => {
                // Arithmetic: text, but every substitution inside it runs.
                self.pos += 3;
                self.expansion(builder, start, '(', ')', 2);
            }
            (Some('('), _) => {
                self.pos += 2;
                let nested = self.nested_list();
                self.push_substitution(builder, start, NestedKind::Substitution, nested);
            }
            (Some('\''), _) => {
                // `$'…'`: ANSI-C quoting, escapes decoded (`$'\x2f'` is `/`).
                self.pos += 1;
                builder.push_raw('$');
                self.ansi_c_quoted(builder);
            }
            (Some('{'), _) => {
                // Parameter expansion: `${x:-$(cmd)}`, `${x:=`cmd`}` run what they hold.
                self.pos += 2;
                self.expansion(builder, start, '{', '}', 1);
            }
            _ => {
                self.pos += 1;
                builder.push_char('$');
            }
        }
    }

    /// Reads an arithmetic or parameter expansion up to the `close` that brings `depth` to zero,
    /// parsing the substitutions and quotes inside it, and adds it to the current word.
    fn expansion(
        &mut self,
        builder: &mut Builder,
        start: usize,
        open: char,
        close: char,
        mut depth: usize,
    ) {
        if self.depth >= MAX_NESTING {
            self.too_deep = true;
            self.pos = self.chars.len();
            return;
        }
        self.depth += 1;
        let mut inner = Builder::default();
        let mut closed = false;
        while let Some(c) = self.peek_at(0) {
            match c {
                '$' => self.dollar(&mut inner),
                '`' => self.backticks(&mut inner),
                '\\' => self.pos += 2,
                '\'' if open == '{' => self.single_quoted(&mut inner),
                '"' => self.double_quoted(&mut inner),
                _ => {
                    self.pos += 1;
                    if c == open {
                        depth += 1;
                    } else if c == close {
                        depth -= 1;
                        if depth == 0 {
                            closed = true;
                            break;
                        }
                    }
                }
            }
        }
        self.depth -= 1;
        if !closed {
            self.unaccounted("an expansion is not closed");
        }
        let raw = self.slice(start, self.pos.min(self.chars.len()));
        builder.command.text.push_str(&raw);
        builder.word.push_str(&raw);
        builder.in_word = true;
        builder.command.nested.append(&mut inner.command.nested);
    }

    /// The `'…'` of `$'…'`: kept as written in the text, escapes decoded in the word.
    fn ansi_c_quoted(&mut self, builder: &mut Builder) {
        let start = self.pos;
        self.pos += 1;
        let mut closed = false;
        while let Some(c) = self.peek_at(0) {
            self.pos += 1;
            match c {
                '\\' => self.pos += 1,
                '\'' => {
                    closed = true;
                    break;
                }
                _ => {}
            }
        }
        let end = self.pos.min(self.chars.len());
        let raw = self.slice(start, end);
        let body = self.slice(start + 1, if closed { end - 1 } else { end });
        builder.command.text.push_str(&raw);
        builder.word.push_str(&decode_ansi_c(&body));
        builder.in_word = true;
        if !closed {
            self.unaccounted("a quote is not closed");
        }
    }

    /// Notes the first thing the parser cannot account for: the line then asks.
    pub(super) fn unaccounted(&mut self, why: &str) {
        if self.unaccounted.is_none() {
            self.unaccounted = Some(why.to_owned());
        }
    }

    fn backticks(&mut self, builder: &mut Builder) {
        let start = self.pos;
        self.pos += 1;
        let mut body = String::new();
        let mut closed = false;
        while let Some(c) = self.peek_at(0) {
            self.pos += 1;
            match c {
                '`' => {
                    closed = true;
                    break;
                }
                '\\' => {
                    if let Some(next) = self.peek_at(0) {
                        self.pos += 1;
                        if !matches!(next, '`' | '\\' | '$') {
                            body.push('\\');
                        }
                        body.push(next);
                    }
                }
                _ => body.push(c),
            }
        }
        if !closed {
            self.unaccounted("a backtick is not closed");
        }
        let nested = self.nested_text(&body);
        self.push_substitution(builder, start, NestedKind::Substitution, nested);
    }

    /// Finishes the current command: drops `{` / `}` group words, parses `sh -c` and `eval`
    /// bodies, and adds it to the pipeline unless empty.
    fn end_command(&mut self, builder: &mut Builder, pipeline: &mut Pipeline) {
        builder.end_word();
        let mut command = std::mem::take(builder).command;
        command.text = command.text.trim().to_owned();
        if command.words.first().is_some_and(|word| word == "{") {
            command.words.remove(0);
            for operator in &mut command.operators {
                *operator = operator.saturating_sub(1);
            }
            command.text = command.text.trim_start_matches('{').trim().to_owned();
        }
        if command.words.last().is_some_and(|word| word == "}") && command.words.len() == 1 {
            return;
        }
        if command.words.is_empty() && command.nested.is_empty() {
            return;
        }
        self.add_runs(&mut command);
        pipeline.commands.push(command);
    }
}

fn end_pipeline(pipeline: &mut Pipeline, pipelines: &mut Vec<Pipeline>) {
    if !pipeline.commands.is_empty() {
        pipelines.push(std::mem::take(pipeline));
    }
}
