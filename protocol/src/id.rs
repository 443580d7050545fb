//! The grammar of the ids the daemon hands out (`ses_…`, `apr_…`). A session id names a file
//! in the sessions directory, so the grammar is what keeps a hostile id (`../x`) from naming
//! anything else: daemon and clients check ids against it before using them.

/// Prefix of every session id.
pub const SESSION_ID_PREFIX: &str = "ses_";
/// Prefix of every approval id.
pub const APPROVAL_ID_PREFIX: &str = "apr_";
/// Longest part after the prefix (the daemon writes 32 hex digits).
pub const MAX_ID_BODY_CHARS: usize = 64;

/// Whether `id` is a well-formed session id: `ses_` then 1 to 64 ASCII letters, digits, `_`
/// or `-` (no dot, no slash: it is safe as a file name).
pub fn is_session_id(id: &str) -> bool {
    has_grammar(id, SESSION_ID_PREFIX)
}

/// Whether `id` is a well-formed approval id: `apr_` then 1 to 64 ASCII letters, digits, `_`
/// or `-`.
pub fn is_approval_id(id: &str) -> bool {
    has_grammar(id, APPROVAL_ID_PREFIX)
}

fn has_grammar(id: &str, prefix: &str) -> bool {
    let Some(body) = id.strip_prefix(prefix) else {
        return false;
    };
    !body.is_empty()
        && body.len() <= MAX_ID_BODY_CHARS
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_the_daemon_makes_are_valid_and_paths_are_not() {
        assert!(is_session_id("ses_0123456789abcdef0123456789abcdef"));
        assert!(is_session_id("ses_nope"));
        assert!(is_approval_id("apr_1"));
        for bad in [
            "",
            "ses_",
            "ses_../x",
            "../../../victim",
            "ses_a/b",
            "ses_a.b",
            "ses_a\0",
            "ses_é",
            "apr_1",
            "ses_ a",
        ] {
            assert!(!is_session_id(bad), "{bad:?}");
        }
        assert!(!is_session_id(&format!("ses_{}", "a".repeat(65))));
        assert!(!is_approval_id("ses_1"));
        assert!(!is_approval_id("apr_../x"));
    }
}
