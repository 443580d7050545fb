//! Texts many values repeat, kept once: the system prompts of session headers (every session
//! of a workspace started the same day has the same one, a few KiB, and the daemon holds a
//! header for every session it knows, loaded or not).
//!
//! An [`Interner`] holds one `Arc<str>` per distinct text; [`Interner::intern`] returns the
//! held one when the text is known. Texts nobody else holds any more are dropped when the set
//! has doubled since the last sweep, so the set stays within twice what is in use.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// The daemon's shared texts (see the module docs).
#[derive(Debug, Default)]
pub struct Interner {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    texts: HashSet<Arc<str>>,
    /// Texts held after the last sweep; the next sweep comes at twice as many (at least 64).
    swept_at: usize,
}

/// The texts of session headers' system prompts.
pub static SYSTEM_PROMPTS: std::sync::LazyLock<Interner> =
    std::sync::LazyLock::new(Interner::default);

impl Interner {
    /// The held copy of `text`, or `text` itself, held from now on.
    pub fn intern(&self, text: &str) -> Arc<str> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(held) = state.texts.get(text) {
            return held.clone();
        }
        if state.texts.len() >= (state.swept_at * 2).max(64) {
            // Only the set holds them: nobody uses these texts any more.
            state.texts.retain(|held| Arc::strong_count(held) > 1);
            state.swept_at = state.texts.len();
        }
        let held: Arc<str> = Arc::from(text);
        state.texts.insert(held.clone());
        held
    }

    /// Distinct texts held now (tests).
    pub fn len(&self) -> usize {
        self.state
            .lock()
            .map(|state| state.texts.len())
            .unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Serde `deserialize_with` for an `Arc<str>` field: the text, interned in
/// [`SYSTEM_PROMPTS`].
pub fn deserialize_system_prompt<'de, D>(deserializer: D) -> Result<Arc<str>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(deserializer)?;
    Ok(SYSTEM_PROMPTS.intern(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_share_one_copy_and_unused_ones_are_swept() {
        let interner = Interner::default();
        let a = interner.intern("the same prompt");
        let b = interner.intern(&String::from("the same prompt"));
        assert!(Arc::ptr_eq(&a, &b));
        drop((a, b));
        // Texts used once and let go: the set never holds much more than what is in use.
        let kept = interner.intern("kept");
        for i in 0..1000 {
            drop(interner.intern(&format!("prompt {i}")));
        }
        assert!(interner.len() <= 128, "{} texts held", interner.len());
        assert!(Arc::ptr_eq(&kept, &interner.intern("kept")));
    }
}
