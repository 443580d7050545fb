//! Adding a new session: its file (the header, written whole) and its first events. Shared by
//! `session/create` and the `task` tool's child sessions.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::SystemTime;

use protocol::event::Event;

use super::{Session, SessionError, SessionManager, Slot, evict};
use crate::store::{self, SessionHeader};

impl SessionManager {
    /// Write a new session's file (its header) and load it; `notes` go into its log as
    /// warnings after `sessionCreated`. Not half-created on failure: no slot, no file.
    pub(super) async fn add_session(
        &self,
        header: SessionHeader,
        notes: Vec<String>,
    ) -> Result<Arc<Session>, SessionError> {
        let now = SystemTime::now();
        let id = header.id.clone();
        let path = store::session_path(&self.deps.paths.sessions_dir, &id);
        let line = store::encode(&store::Entry::Header(header.clone()))
            .map_err(|err| SessionError::Internal(err.to_string()))?;
        // Written whole or not at all: a failed create leaves no empty session file.
        let create_path = path.clone();
        tokio::task::spawn_blocking(move || store::create_file(&create_path, line.as_bytes()))
            .await
            .map_err(|err| SessionError::Internal(err.to_string()))?
            .map_err(|err| {
                SessionError::Internal(format!("{err:#}; check free space in the state directory"))
            })?;
        let slot = Arc::new(Slot {
            header: header.clone(),
            file_updated_at: Some(now),
            loaded: evict::LoadedCell::new(),
            deleted: AtomicBool::new(false),
        });
        self.write_slots().insert(id.clone(), slot.clone());
        self.listing.invalidate();
        let created = async {
            let session = self.load(&slot).await?;
            session
                .log
                .append(Event::SessionCreated {
                    cwd: header.cwd.clone(),
                    model: header.model.clone(),
                })
                .await
                .map_err(|err| SessionError::Internal(format!("{err:#}")))?;
            for message in notes {
                session
                    .log
                    .append(Event::Warning { message })
                    .await
                    .map_err(|err| SessionError::Internal(format!("{err:#}")))?;
            }
            Ok(session)
        }
        .await;
        if created.is_err() {
            // Not half-created: no slot, no file.
            if let Some(session) = self.write_slots().remove(&id).and_then(|s| s.loaded.get()) {
                session.close();
            }
            let _ = tokio::fs::remove_file(&path).await;
        }
        created
    }
}
