//! A command file's body as a prompt template, in Claude Code's syntax: `$ARGUMENTS` is
//! everything typed after the command's name, `$1`, `$2`, … its words (split like a shell's,
//! quotes group), a missing one empty. A body that names none of them gets the arguments
//! appended (`ARGUMENTS: …`), so they are never lost. Pure.

/// The placeholder of the whole argument text.
const ARGUMENTS: &str = "$ARGUMENTS";

/// `template` with its placeholders replaced from `args`.
pub fn expand(template: &str, args: &str) -> String {
    let args = args.trim();
    let words = split_args(args);
    let mut out = String::with_capacity(template.len() + args.len());
    let mut used = false;
    let mut rest = template;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        if let Some(tail) = after.strip_prefix(ARGUMENTS) {
            out.push_str(args);
            used = true;
            rest = tail;
            continue;
        }
        let digits = after[1..]
            .bytes()
            .take_while(|byte| byte.is_ascii_digit())
            .count();
        match after[1..1 + digits].parse::<usize>() {
            Ok(index) if index >= 1 => {
                if let Some(word) = words.get(index - 1) {
                    out.push_str(word);
                }
                used = true;
                rest = &after[1 + digits..];
            }
            _ => {
                out.push('$');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    if !used && !args.is_empty() {
        let trimmed = out.trim_end().len();
        out.truncate(trimmed);
        out.push_str("\n\nARGUMENTS: ");
        out.push_str(args);
    }
    out
}

/// `args` as words: split on whitespace, `"…"` and `'…'` group (the quotes are dropped), a
/// backslash outside single quotes takes the next character as it is.
pub fn split_args(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = args.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(open), c) if c == open => quote = None,
            (Some('"') | None, '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
                in_word = true;
            }
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}
