//! `session/update` in the session's actor: the new mode, model or title is checked, recorded
//! in the log (`sessionUpdated`) and applied from the next run on.

use protocol::event::Event;
use protocol::session::SessionUpdateParams;

use super::{Actor, SessionError};

/// Longest session title, in characters: it is shown on one line in listings.
pub const MAX_TITLE_CHARS: usize = 200;

impl Actor {
    /// Check and record an update. A run already going keeps what it started with: it read
    /// the header when it started, and the next run reads the new one.
    pub(super) async fn update(&mut self, params: SessionUpdateParams) -> Result<(), SessionError> {
        let provider_model = match params.model.as_deref() {
            Some(model) => {
                let (_, provider) = self.deps.provider(Some(model))?;
                provider
                    .require_key()
                    .map_err(|err| SessionError::Config(err.to_string()))?;
                Some((provider.name, provider.model))
            }
            None => None,
        };
        let title = params.title.map(|title| title.trim().to_owned());
        if let Some(title) = &title
            && title.chars().count() > MAX_TITLE_CHARS
        {
            return Err(SessionError::InvalidParams(format!(
                "title too long: at most {MAX_TITLE_CHARS} characters"
            )));
        }
        if params.permission_mode.is_none() && provider_model.is_none() && title.is_none() {
            return Ok(());
        }
        let (provider, model) = provider_model.unzip();
        let event = Event::SessionUpdated {
            permission_mode: params.permission_mode,
            provider,
            model,
            title,
        };
        self.log
            .append(event.clone())
            .await
            .map_err(|err| SessionError::Internal(format!("{err:#}")))?;
        let mut settings = self
            .settings
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        settings.apply(&event);
        settings.write_into(&mut self.header);
        Ok(())
    }
}
