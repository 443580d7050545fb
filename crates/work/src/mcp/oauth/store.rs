//! The stored OAuth tokens: one file per server under the state dir (`mcp/oauth/`), named by
//! the server's name and a digest of its URL, private (0600, in a 0700 dir) and replaced whole
//! (`atomic_file`). A token file holds what a refresh needs (the client, the token endpoint,
//! the resource) beside the tokens. Its `Debug` never shows a secret.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// The format of a token file; a newer one is refused (a login writes it again).
const FORMAT: u32 = 1;
/// The largest token file read: tokens are a few kilobytes.
const MAX_FILE_BYTES: usize = 256 * 1024;

/// What a login leaves for a server.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StoredToken {
    pub(crate) version: u32,
    /// The server's name and URL the token is for (the file's key).
    pub(crate) server: String,
    pub(crate) url: String,
    pub(crate) client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<String>,
    pub(crate) token_endpoint: String,
    /// The RFC 8707 `resource` the token was asked for.
    pub(crate) resource: String,
    pub(crate) access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refresh_token: Option<String>,
    /// Unix seconds when the access token expires (None: the server did not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) scope: Option<String>,
}

impl std::fmt::Debug for StoredToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredToken")
            .field("server", &self.server)
            .field("url", &self.url)
            .field("client_id", &self.client_id)
            .field("token_endpoint", &self.token_endpoint)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl StoredToken {
    /// Whether the access token expires within `ahead` seconds (false when its expiry is
    /// unknown: a 401 tells then).
    pub(crate) fn expires_within(&self, ahead: u64) -> bool {
        self.expires_at
            .is_some_and(|at| now_secs().saturating_add(ahead) >= at)
    }
}

/// Unix seconds now.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or(0)
}

/// The directory of the token files.
#[derive(Clone, Debug)]
pub(crate) struct TokenStore {
    dir: PathBuf,
}

impl TokenStore {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The file of `server` at `url`.
    pub(crate) fn path(&self, server: &str, url: &str) -> PathBuf {
        let digest = agentd_policy::process::supervisor::fnv1a(url.as_bytes());
        self.dir.join(format!(
            "{}-{digest:016x}.json",
            super::super::manager::file_safe(server)
        ))
    }

    /// The token of `server` at `url`, if a login left one. Blocking.
    pub(crate) fn load(&self, server: &str, url: &str) -> Result<Option<StoredToken>, String> {
        let path = self.path(server, url);
        let text = match agentd_core::regular_file::read_own_text(&path, MAX_FILE_BYTES) {
            Ok(text) => text.text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(format!("cannot read {}: {error}", path.display())),
        };
        let token: StoredToken = serde_json::from_str(&text).map_err(|error| {
            format!(
                "{} is not a token file agentd wrote ({error}); log in to MCP server {server} again",
                path.display()
            )
        })?;
        if token.version > FORMAT {
            return Err(format!(
                "{} is of a newer format ({}); log in to MCP server {server} again",
                path.display(),
                token.version
            ));
        }
        // A renamed server or a changed URL is another key: never send a token elsewhere.
        Ok((token.server == server && token.url == url).then_some(token))
    }

    /// Writes `token` (0600, replaced whole). Blocking.
    pub(crate) fn save(&self, token: &StoredToken) -> Result<(), String> {
        agentd_core::paths::prepare_private_dir(&self.dir)
            .map_err(|error| format!("cannot prepare {}: {error:#}", self.dir.display()))?;
        let path = self.path(&token.server, &token.url);
        let mut bytes = serde_json::to_vec_pretty(token)
            .map_err(|error| format!("cannot encode the token: {error}"))?;
        bytes.push(b'\n');
        agentd_core::atomic_file::replace_atomically(&path, &bytes, 0o600)
            .map_err(|error| format!("cannot write {}: {error}", path.display()))
    }

    /// Deletes the token of `server` at `url`; true when there was one. Blocking.
    pub(crate) fn delete(&self, server: &str, url: &str) -> Result<bool, String> {
        let path = self.path(server, url);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(format!("cannot delete {}: {error}", path.display())),
        }
    }
}

/// A new token record of `FORMAT`.
pub(crate) fn format_version() -> u32 {
    FORMAT
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> StoredToken {
        StoredToken {
            version: FORMAT,
            server: "docs".into(),
            url: "https://example.com/mcp".into(),
            client_id: "client".into(),
            client_secret: None,
            token_endpoint: "https://example.com/token".into(),
            resource: "https://example.com/mcp".into(),
            access_token: "secret-access".into(),
            refresh_token: Some("secret-refresh".into()),
            expires_at: Some(now_secs() + 30),
            scope: None,
        }
    }

    #[test]
    fn a_token_is_saved_private_loaded_by_its_key_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path().join("oauth"));
        store.save(&token()).unwrap();
        let path = store.path("docs", "https://example.com/mcp");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(
            store.load("docs", "https://example.com/mcp").unwrap(),
            Some(token())
        );
        assert_eq!(
            store.load("docs", "https://other.example/mcp").unwrap(),
            None
        );
        let shown = format!("{:?}", token());
        assert!(!shown.contains("secret"), "{shown}");
        assert!(token().expires_within(60) && !token().expires_within(0));
        assert!(store.delete("docs", "https://example.com/mcp").unwrap());
        assert!(!store.delete("docs", "https://example.com/mcp").unwrap());
    }
}
