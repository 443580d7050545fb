//! Text helpers of the renderer and the list commands: durations, one-line summaries and
//! cutting to a number of characters.

/// `12 ms`, `1.5 s`, `2 min 5 s`.
pub fn format_duration(duration_ms: u64) -> String {
    if duration_ms < 1000 {
        format!("{duration_ms} ms")
    } else if duration_ms < 60_000 {
        format!("{:.1} s", duration_ms as f64 / 1000.0)
    } else {
        let secs = duration_ms / 1000;
        format!("{} min {} s", secs / 60, secs % 60)
    }
}

/// The first non-empty line of `text`, trimmed, with a `…` when more lines follow.
pub fn one_line(text: &str) -> String {
    let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty());
    let first = lines.next().unwrap_or_default();
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first.to_owned()
    }
}

/// At most `max_chars` characters, ending in `…` when cut.
pub fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    cut.push('…');
    cut
}
