//! Finding a server's authorization server, as the MCP authorization spec says: the
//! `WWW-Authenticate: Bearer resource_metadata=…` of a 401 (or the well-known URIs of RFC
//! 9728 under the server's URL), its protected-resource metadata, then the authorization
//! server's metadata (RFC 8414, or OpenID Connect discovery) at the well-known URIs of its
//! issuer.

use reqwest::Url;

use super::{OAUTH_REQUEST_TIMEOUT, get_json};

/// What a `WWW-Authenticate: Bearer …` challenge said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    pub(crate) resource_metadata: Option<String>,
    pub(crate) scope: Option<String>,
    /// `error` (`invalid_token` for an expired or revoked token).
    pub(crate) error: Option<String>,
}

/// RFC 9728 protected-resource metadata (the fields used).
#[derive(Clone, Debug, serde::Deserialize)]
pub(crate) struct ResourceMetadata {
    pub(crate) resource: Option<String>,
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    #[serde(default)]
    pub(crate) scopes_supported: Vec<String>,
}

/// RFC 8414 authorization-server metadata (the fields used).
#[derive(Clone, Debug, serde::Deserialize)]
pub(crate) struct ServerMetadata {
    pub(crate) authorization_endpoint: String,
    pub(crate) token_endpoint: String,
    pub(crate) registration_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) code_challenge_methods_supported: Vec<String>,
}

/// Parses a `WWW-Authenticate` value's Bearer challenge (None: no Bearer challenge).
pub(crate) fn parse_challenge(header: &str) -> Option<Challenge> {
    let at = header.to_ascii_lowercase().find("bearer")?;
    let mut rest = &header[at + "bearer".len()..];
    let mut challenge = Challenge::default();
    loop {
        rest = rest.trim_start_matches([' ', ',', '\t']);
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].trim().to_ascii_lowercase();
        rest = &rest[eq + 1..];
        let value;
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut text = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((index, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            text.push(escaped);
                        }
                    }
                    '"' => {
                        end = index + 1;
                        break;
                    }
                    other => text.push(other),
                }
            }
            value = text;
            rest = &quoted[end.min(quoted.len())..];
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            value = rest[..end].trim().to_owned();
            rest = &rest[end..];
        }
        match key.as_str() {
            "resource_metadata" => challenge.resource_metadata = Some(value),
            "scope" => challenge.scope = Some(value),
            "error" => challenge.error = Some(value),
            _ => {}
        }
    }
    Some(challenge)
}

/// The RFC 9728 well-known URIs for the server at `url`: with its path, then at the root.
pub(crate) fn resource_metadata_urls(url: &Url) -> Vec<Url> {
    let mut urls = Vec::new();
    let path = url.path().trim_end_matches('/');
    let mut base = url.clone();
    base.set_query(None);
    base.set_fragment(None);
    if !path.is_empty() {
        let mut with_path = base.clone();
        with_path.set_path(&format!("/.well-known/oauth-protected-resource{path}"));
        urls.push(with_path);
    }
    base.set_path("/.well-known/oauth-protected-resource");
    urls.push(base);
    urls
}

/// The well-known URIs of an issuer's metadata, in the spec's order (RFC 8414 with the path
/// inserted, OIDC with it inserted, OIDC with it appended; at the root the first two).
pub(crate) fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/').to_owned();
    let mut base = issuer.clone();
    base.set_query(None);
    base.set_fragment(None);
    let at = |path: String| {
        let mut url = base.clone();
        url.set_path(&path);
        url
    };
    if path.is_empty() {
        vec![
            at("/.well-known/oauth-authorization-server".into()),
            at("/.well-known/openid-configuration".into()),
        ]
    } else {
        vec![
            at(format!("/.well-known/oauth-authorization-server{path}")),
            at(format!("/.well-known/openid-configuration{path}")),
            at(format!("{path}/.well-known/openid-configuration")),
        ]
    }
}

/// What discovery found for the server at `url`.
#[derive(Clone, Debug)]
pub(crate) struct Discovered {
    /// The RFC 8707 resource: the metadata's `resource`, else the server's URL.
    pub(crate) resource: String,
    pub(crate) metadata: ServerMetadata,
    /// The scope to ask for: the challenge's, else what the resource supports (None: none).
    pub(crate) scope: Option<String>,
}

/// Asks the server at `url` (an `initialize` without a token) for its challenge, then finds
/// its authorization server and that server's metadata.
pub(crate) async fn discover(http: &reqwest::Client, url: &str) -> Result<Discovered, String> {
    let server_url = Url::parse(url).map_err(|error| format!("{url} is not a URL: {error}"))?;
    let challenge = probe(http, url).await?;
    let mut candidates = Vec::new();
    if let Some(metadata) = challenge
        .as_ref()
        .and_then(|c| c.resource_metadata.as_ref())
    {
        candidates.push(Url::parse(metadata).map_err(|error| {
            format!("{url} named its resource metadata {metadata:?}, which is not a URL: {error}")
        })?);
    }
    candidates.extend(resource_metadata_urls(&server_url));
    let mut tried = Vec::new();
    let mut resource_metadata = None;
    for candidate in candidates {
        match get_json::<ResourceMetadata>(http, &candidate).await {
            Ok(found) => {
                resource_metadata = Some(found);
                break;
            }
            Err(error) => tried.push(error),
        }
    }
    let resource_metadata = resource_metadata.ok_or_else(|| {
        format!(
            "{url} asks for a login but publishes no protected-resource metadata (RFC 9728): {}",
            tried.join("; ")
        )
    })?;
    let issuer = resource_metadata
        .authorization_servers
        .first()
        .ok_or_else(|| format!("the resource metadata of {url} names no authorization server"))?;
    let issuer_url = Url::parse(issuer)
        .map_err(|error| format!("the authorization server {issuer:?} is not a URL: {error}"))?;
    let mut tried = Vec::new();
    let mut metadata = None;
    for candidate in server_metadata_urls(&issuer_url) {
        match get_json::<ServerMetadata>(http, &candidate).await {
            Ok(found) => {
                metadata = Some(found);
                break;
            }
            Err(error) => tried.push(error),
        }
    }
    let metadata = metadata.ok_or_else(|| {
        format!(
            "the authorization server {issuer} publishes no metadata (RFC 8414 or OpenID Connect discovery): {}",
            tried.join("; ")
        )
    })?;
    check_pkce(&metadata, issuer)?;
    let scope = challenge.and_then(|challenge| challenge.scope).or_else(|| {
        (!resource_metadata.scopes_supported.is_empty())
            .then(|| resource_metadata.scopes_supported.join(" "))
    });
    let resource = resource_metadata
        .resource
        .unwrap_or_else(|| canonical_resource(&server_url));
    check_same_origin(&resource, &server_url)?;
    Ok(Discovered {
        resource,
        metadata,
        scope,
    })
}

/// A token is asked only for a resource at the server's own origin: metadata naming another
/// would have the user grant a token for a server it does not speak for.
fn check_same_origin(resource: &str, server_url: &Url) -> Result<(), String> {
    let same = Url::parse(resource).is_ok_and(|parsed| parsed.origin() == server_url.origin());
    if same {
        Ok(())
    } else {
        Err(format!(
            "the resource metadata of {server_url} names the resource {resource:?}, which is not at the server's origin; agentd asks no token for it"
        ))
    }
}

/// The server's URL as an RFC 8707 resource: no fragment.
pub(crate) fn canonical_resource(url: &Url) -> String {
    let mut url = url.clone();
    url.set_fragment(None);
    url.to_string()
}

/// POSTs an `initialize` without a token: a 401's Bearer challenge (None: a 401 without
/// one); an answer that is not a 401 means the server needs no login.
async fn probe(http: &reqwest::Client, url: &str) -> Result<Option<Challenge>, String> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "agentd", "version": env!("CARGO_PKG_VERSION")},
        },
    });
    let sent = http
        .post(url)
        .header(
            reqwest::header::ACCEPT,
            "application/json, text/event-stream",
        )
        .json(&body)
        .send();
    let response = tokio::time::timeout(OAUTH_REQUEST_TIMEOUT, sent)
        .await
        .map_err(|_| {
            format!(
                "{url} did not answer within {} s",
                OAUTH_REQUEST_TIMEOUT.as_secs()
            )
        })?
        .map_err(|error| format!("cannot reach {url}: {}", super::words(&error)))?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return Err(format!(
            "{url} answered {} without a token: it asks for no login (if it needs a token, set it in the entry's headers)",
            response.status()
        ));
    }
    Ok(response
        .headers()
        .get_all(reqwest::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(parse_challenge))
}

/// PKCE with S256 is required: MCP's authorization spec takes metadata without
/// `code_challenge_methods_supported` for a server without PKCE, and refuses it.
fn check_pkce(metadata: &ServerMetadata, issuer: &str) -> Result<(), String> {
    let methods = &metadata.code_challenge_methods_supported;
    if methods.iter().any(|method| method == "S256") {
        return Ok(());
    }
    let listed = if methods.is_empty() {
        "lists no PKCE methods (code_challenge_methods_supported)".to_owned()
    } else {
        format!("lists only {}", methods.join(", "))
    };
    Err(format!(
        "the authorization server {issuer} {listed}; MCP requires PKCE with S256, so agentd does not log in there"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_gives_its_metadata_url_scope_and_error() {
        let challenge = parse_challenge(
            r#"Bearer realm="mcp", resource_metadata="https://x.example/.well-known/oauth-protected-resource/mcp", scope="read write", error=invalid_token"#,
        )
        .unwrap();
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("https://x.example/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(challenge.scope.as_deref(), Some("read write"));
        assert_eq!(challenge.error.as_deref(), Some("invalid_token"));
        assert_eq!(parse_challenge("Basic realm=\"x\""), None);
        assert_eq!(parse_challenge("Bearer"), Some(Challenge::default()));
    }

    #[test]
    fn a_resource_at_another_origin_is_refused() {
        let server = Url::parse("https://docs.example/mcp").unwrap();
        assert!(check_same_origin("https://docs.example/mcp", &server).is_ok());
        assert!(check_same_origin("https://docs.example:443/other", &server).is_ok());
        assert!(check_same_origin("https://evil.example/mcp", &server).is_err());
        assert!(check_same_origin("http://docs.example/mcp", &server).is_err());
    }

    #[test]
    fn well_known_uris_insert_the_path_then_fall_back_to_the_root() {
        let url = Url::parse("https://x.example/api/mcp?x=1").unwrap();
        let found: Vec<String> = resource_metadata_urls(&url)
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            found,
            [
                "https://x.example/.well-known/oauth-protected-resource/api/mcp",
                "https://x.example/.well-known/oauth-protected-resource"
            ]
        );
        let issuer = Url::parse("https://auth.example/tenant1").unwrap();
        let found: Vec<String> = server_metadata_urls(&issuer)
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            found,
            [
                "https://auth.example/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example/.well-known/openid-configuration/tenant1",
                "https://auth.example/tenant1/.well-known/openid-configuration"
            ]
        );
        let root = Url::parse("https://auth.example").unwrap();
        assert_eq!(server_metadata_urls(&root).len(), 2);
    }

    #[test]
    fn a_server_without_pkce_s256_is_refused() {
        let metadata = |methods: &[&str]| ServerMetadata {
            authorization_endpoint: "https://as.example/authorize".to_owned(),
            token_endpoint: "https://as.example/token".to_owned(),
            registration_endpoint: None,
            code_challenge_methods_supported: methods.iter().map(|m| (*m).to_owned()).collect(),
        };
        assert!(check_pkce(&metadata(&["plain", "S256"]), "https://as.example").is_ok());
        let none = check_pkce(&metadata(&[]), "https://as.example").unwrap_err();
        assert!(none.contains("lists no PKCE methods"), "{none}");
        let plain = check_pkce(&metadata(&["plain"]), "https://as.example").unwrap_err();
        assert!(plain.contains("lists only plain"), "{plain}");
    }
}
