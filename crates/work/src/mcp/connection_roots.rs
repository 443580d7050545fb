//! The client capabilities agentd offers a server (roots, elicitation, sampling when the
//! user allows it), and its roots: the project root the server
//! runs for. A server is shared by the sessions of one [`crate::mcp::ServerKey`], which holds
//! that project root, so every session using it works under that root and a server's roots
//! never change while it runs: `roots.listChanged` is `false` and no
//! `notifications/roots/list_changed` is ever needed (a session in another project gets a
//! server of its own).

// Roots are deprecated by the newest spec (SEP-2577) and so in rmcp; servers still use them.
#![allow(deprecated)]

use std::fmt::Write;
use std::path::Path;

use rmcp::model::{ClientCapabilities, ListRootsResult, Root};

/// What `roots/list` answers.
pub(super) struct Roots(Vec<Root>);

impl Roots {
    /// The roots of a server running for `project_root` (absolute): that directory alone,
    /// named by its last component.
    pub(super) fn for_project(project_root: &Path) -> Self {
        let name = project_root
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| project_root.display().to_string());
        Self(vec![Root::new(file_uri(project_root)).with_name(name)])
    }

    pub(super) fn list(&self) -> ListRootsResult {
        ListRootsResult::new(self.0.clone())
    }
}

/// What agentd offers servers in `initialize`: `roots` (fixed per server, so no
/// `listChanged`), `elicitation` (form questions; agentd opens no URLs), and `sampling` only
/// for a server the user's config marks `sampling = true`.
pub(super) fn capabilities(sampling: bool) -> ClientCapabilities {
    let mut offered = serde_json::json!({
        "roots": { "listChanged": false },
        "elicitation": { "form": {} },
    });
    if sampling {
        offered["sampling"] = serde_json::json!({});
    }
    // rmcp builds capabilities only with its server features: from their wire form here.
    serde_json::from_value(offered).unwrap_or_default()
}

/// `path` (absolute) as a `file://` URI, every byte but the unreserved ones and `/`
/// percent-encoded (RFC 3986, RFC 8089).
fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for &byte in path.as_os_str().as_encoded_bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            let _ = write!(uri, "%{byte:02X}");
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_the_project_root_as_a_file_uri() {
        let roots = Roots::for_project(Path::new("/home/me/my repo/ü")).list();
        assert_eq!(roots.roots.len(), 1);
        assert_eq!(roots.roots[0].uri, "file:///home/me/my%20repo/%C3%BC");
        assert_eq!(roots.roots[0].name.as_deref(), Some("ü"));
        let offered = serde_json::to_value(capabilities(false)).unwrap();
        assert_eq!(
            offered,
            serde_json::json!({"roots": {"listChanged": false}, "elicitation": {"form": {}}})
        );
        let offered = serde_json::to_value(capabilities(true)).unwrap();
        assert_eq!(offered["sampling"], serde_json::json!({}));
    }
}
