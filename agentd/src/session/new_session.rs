//! Adding a new session: its file (the header, written whole) and its first events. Shared by
//! `session/create` and the `task` tool's child sessions.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::SystemTime;

use protocol::event::Event;

use super::events::EventLog;
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
        let mut events = vec![Event::SessionCreated {
            cwd: header.cwd.clone(),
            model: header.model.clone(),
        }];
        events.extend(notes.into_iter().map(|message| Event::Warning { message }));
        // Written whole (the header and the first events) or not at all: a failed create
        // leaves no file; nothing is read back.
        let (log, created) =
            EventLog::create(&id, path, line, events, self.daemon.clone(), &self.tasks)
                .await
                .map_err(|err| {
                    SessionError::Internal(format!(
                        "{err:#}; check free space in the state directory"
                    ))
                })?;
        let session = Arc::new(Session::create(
            header.clone(),
            self.deps.clone(),
            log,
            &self.tasks,
        ));
        let slot = Arc::new(Slot {
            header,
            file_updated_at: Some(now),
            loaded: evict::LoadedCell::with(session.clone()),
            deleted: AtomicBool::new(false),
        });
        self.write_slots().insert(id, slot);
        self.listing.invalidate();
        // Announced once the session can be found.
        if let Err(err) = session.log.publish_created(created) {
            tracing::warn!("cannot announce the new session {}: {err:#}", session.id());
        }
        Ok(session)
    }
}
