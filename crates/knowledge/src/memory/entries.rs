//! The entries of one memory store and the edits the `memory` tool makes to them: pure logic,
//! no I/O. A store's text is its entries joined by [`DELIMITER`]; its usage is the character
//! count of that text, delimiters included, and an edit that would pass the limit is refused.

/// What separates two entries in a store file: a line holding only `§`. Entries may span lines.
pub const DELIMITER: &str = "\n§\n";

/// Characters of an entry shown where a message lists several (ambiguous matches).
const PREVIEW_CHARS: usize = 80;

/// The entries of one store, in order, without duplicates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entries {
    entries: Vec<String>,
}

/// One change the model asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edit {
    Add {
        content: String,
    },
    Replace {
        old_text: String,
        new_content: String,
    },
    Remove {
        old_text: String,
    },
}

/// What an edit did, for the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Applied {
    /// The entries changed: save them.
    Changed,
    /// Nothing to save: the entry is already there (an exact duplicate).
    AlreadySaved,
}

/// Why an edit was refused; the message is written for the model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refusal(pub(crate) String);

impl Entries {
    /// The entries of a store file's text: split at the delimiter, trimmed, empty ones and
    /// repeats of an earlier entry dropped.
    pub(crate) fn parse(text: &str) -> Entries {
        let mut entries = Entries::default();
        for entry in text.split(DELIMITER) {
            let entry = entry.trim();
            if !entry.is_empty() && !entries.entries.iter().any(|known| known == entry) {
                entries.entries.push(entry.to_owned());
            }
        }
        entries
    }

    /// The store file's text.
    pub(crate) fn render(&self) -> String {
        self.entries.join(DELIMITER)
    }

    /// Characters of [`Entries::render`], delimiters included: what the limit counts.
    pub fn usage(&self) -> usize {
        let text: usize = self.entries.iter().map(|entry| entry.chars().count()).sum();
        text + self.entries.len().saturating_sub(1) * DELIMITER.chars().count()
    }

    pub fn as_slice(&self) -> &[String] {
        &self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Applies `edit`, keeping the usage within `limit`; `name` (`MEMORY.md`) is for messages.
    /// On a refusal the entries are unchanged.
    pub(crate) fn apply(
        &mut self,
        edit: &Edit,
        name: &str,
        limit: usize,
    ) -> Result<Applied, Refusal> {
        match edit {
            Edit::Add { content } => {
                let content = checked_content(content, "content")?;
                if self.entries.contains(&content) {
                    return Ok(Applied::AlreadySaved);
                }
                let mut next = self.clone();
                next.entries.push(content);
                self.replace_within(next, name, limit)
            }
            Edit::Replace {
                old_text,
                new_content,
            } => {
                let index = self.find_one(old_text, name)?;
                let new_content = checked_content(new_content, "newContent")?;
                if self.entries.get(index) == Some(&new_content) {
                    return Ok(Applied::AlreadySaved);
                }
                if self.entries.contains(&new_content) {
                    return Err(Refusal(format!(
                        "the new content is already another entry of {name}; remove the old \
                         entry instead (action remove with this oldText)"
                    )));
                }
                let mut next = self.clone();
                if let Some(entry) = next.entries.get_mut(index) {
                    *entry = new_content;
                }
                self.replace_within(next, name, limit)
            }
            Edit::Remove { old_text } => {
                let index = self.find_one(old_text, name)?;
                self.entries.remove(index);
                Ok(Applied::Changed)
            }
        }
    }

    /// Takes `next` if it fits in `limit` or is no longer than now (a store already over its
    /// limit, after a hand edit or a lower limit, can still be shortened); else refuses with
    /// the usage and every entry, so the model can consolidate.
    fn replace_within(
        &mut self,
        next: Entries,
        name: &str,
        limit: usize,
    ) -> Result<Applied, Refusal> {
        let usage = next.usage();
        if usage > limit && usage > self.usage() {
            return Err(Refusal(format!(
                "not saved: {name} would hold {} chars, over its limit; it holds {} now. \
                 Make room first: merge related entries into one shorter entry (action replace) \
                 or remove stale ones (action remove), then try again. Current entries:\n{}",
                usage_text(usage, limit),
                usage_text(self.usage(), limit),
                self.listing(usize::MAX)
            )));
        }
        *self = next;
        Ok(Applied::Changed)
    }

    /// The index of the one entry containing `old_text`.
    fn find_one(&self, old_text: &str, name: &str) -> Result<usize, Refusal> {
        if old_text.trim().is_empty() {
            return Err(Refusal(
                "oldText is empty; give a short piece of text found in exactly one entry"
                    .to_owned(),
            ));
        }
        let matches: Vec<usize> = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, entry)| entry.contains(old_text))
            .map(|(index, _)| index)
            .collect();
        match matches.as_slice() {
            [index] => Ok(*index),
            [] if self.entries.is_empty() => Err(Refusal(format!(
                "not found: {name} has no entries yet; use action add"
            ))),
            [] => Err(Refusal(format!(
                "not found: no entry of {name} contains {old_text:?}; oldText must be copied \
                 exactly from one entry. Current entries:\n{}",
                self.listing(PREVIEW_CHARS)
            ))),
            several => Err(Refusal(format!(
                "ambiguous: {} entries of {name} contain {old_text:?}; nothing changed. Give a \
                 longer oldText found in only one of them:\n{}",
                several.len(),
                several
                    .iter()
                    .filter_map(|index| self.entries.get(*index))
                    .map(|entry| format!("- {}", preview(entry, PREVIEW_CHARS)))
                    .collect::<Vec<_>>()
                    .join("\n")
            ))),
        }
    }

    /// The longest prefix of the entries whose text fits in `limit` chars, and how many entries
    /// are left out (for the system prompt: a store over its limit never floods the prompt).
    pub fn within(&self, limit: usize) -> (Entries, usize) {
        let mut kept = Entries::default();
        for entry in &self.entries {
            let mut next = kept.clone();
            next.entries.push(entry.clone());
            if next.usage() > limit {
                break;
            }
            kept = next;
        }
        let left_out = self.entries.len() - kept.entries.len();
        (kept, left_out)
    }

    /// The entries as a list, each cut to `max_chars`.
    pub(crate) fn listing(&self, max_chars: usize) -> String {
        if self.entries.is_empty() {
            return "(none)".to_owned();
        }
        self.entries
            .iter()
            .map(|entry| format!("- {}", preview(entry, max_chars)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `1,474/2,200 chars`.
pub fn usage_text(usage: usize, limit: usize) -> String {
    format!("{}/{} chars", thousands(usage), thousands(limit))
}

/// `1474` → `1,474`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// An entry on one line, cut to `max_chars` (with `…`).
fn preview(entry: &str, max_chars: usize) -> String {
    let flat = entry.replace('\n', " ⏎ ");
    if flat.chars().count() <= max_chars {
        return flat;
    }
    let mut cut: String = flat.chars().take(max_chars).collect();
    cut.push('…');
    cut
}

/// `content` trimmed, refused when empty or when a line of it is only `§` (it would split
/// into two entries when the file is read again).
fn checked_content(content: &str, field: &str) -> Result<String, Refusal> {
    let content = content.trim();
    if content.is_empty() {
        return Err(Refusal(format!(
            "{field} is empty; give the text of the entry (use action remove to delete one)"
        )));
    }
    if content.lines().any(|line| line.trim() == "§") {
        return Err(Refusal(format!(
            "{field} has a line holding only §, which separates entries; write it without that \
             line (an entry may span several lines)"
        )));
    }
    Ok(content.to_owned())
}
