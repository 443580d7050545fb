//! What `session/update` changes in a session: its settings as they now are, the header with
//! every `sessionUpdated` event of the log applied in order.

use protocol::approval::PermissionMode;
use protocol::event::Event;
use serde::{Deserialize, Serialize};

use super::SessionHeader;

/// The changeable part of a session (the rest of its header is fixed at creation).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSettings {
    pub provider: String,
    pub model: String,
    pub permission_mode: PermissionMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl SessionSettings {
    /// The settings a header was created with.
    pub fn of(header: &SessionHeader) -> SessionSettings {
        SessionSettings {
            provider: header.provider.clone(),
            model: header.model.clone(),
            permission_mode: header.permission_mode,
            title: header.title.clone(),
        }
    }

    /// Apply `event` when it is a `sessionUpdated`; true when it was one.
    pub fn apply(&mut self, event: &Event) -> bool {
        let Event::SessionUpdated {
            permission_mode,
            provider,
            model,
            title,
        } = event
        else {
            return false;
        };
        if let Some(mode) = permission_mode {
            self.permission_mode = *mode;
        }
        if let Some(provider) = provider {
            self.provider.clone_from(provider);
        }
        if let Some(model) = model {
            self.model.clone_from(model);
        }
        if let Some(title) = title {
            self.title = Some(title.clone()).filter(|title| !title.trim().is_empty());
        }
        true
    }

    /// Write these settings into `header` (what runs and listings read).
    pub fn write_into(&self, header: &mut SessionHeader) {
        header.provider.clone_from(&self.provider);
        header.model.clone_from(&self.model);
        header.permission_mode = self.permission_mode;
        header.title.clone_from(&self.title);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> SessionSettings {
        SessionSettings {
            provider: "openai".to_owned(),
            model: "gpt-4o-mini".to_owned(),
            permission_mode: PermissionMode::Default,
            title: Some("first".to_owned()),
        }
    }

    #[test]
    fn an_update_changes_only_the_fields_it_names() {
        let mut current = settings();
        assert!(current.apply(&Event::SessionUpdated {
            permission_mode: Some(PermissionMode::Plan),
            provider: None,
            model: None,
            title: None,
        }));
        assert_eq!(current.permission_mode, PermissionMode::Plan);
        assert_eq!(current.model, "gpt-4o-mini");
        assert_eq!(current.title.as_deref(), Some("first"));
        current.apply(&Event::SessionUpdated {
            permission_mode: None,
            provider: Some("local".to_owned()),
            model: Some("qwen3".to_owned()),
            title: Some(String::new()),
        });
        assert_eq!(
            (current.provider.as_str(), current.model.as_str()),
            ("local", "qwen3")
        );
        assert_eq!(current.title, None, "an empty title removes it");
        assert!(!current.apply(&Event::SessionDeleted {}));
    }
}
