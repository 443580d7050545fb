//! The authorization code flow with PKCE (S256): the client (configured `client_id`, else
//! dynamic client registration, RFC 7591), the authorization URL with `state` and the RFC 8707
//! `resource`, the code exchanged for tokens, and refreshes.

use base64::Engine as _;
use reqwest::Url;
use sha2::Digest as _;

use super::discovery::Discovered;
use super::store::{StoredToken, format_version, now_secs};
use super::{OAUTH_REQUEST_TIMEOUT, words};

/// The client the login goes as.
#[derive(Clone, Debug)]
pub(crate) struct Client {
    pub(crate) id: String,
    pub(crate) secret: Option<String>,
}

/// Random text of 32 bytes, base64url without padding (43 characters): a PKCE verifier or a
/// `state`.
pub(crate) fn random_text() -> String {
    let mut bytes = Vec::with_capacity(32);
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The S256 challenge of `verifier`.
pub(crate) fn challenge_of(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier))
}

/// Registers agentd as a public client for `redirect_uri` (RFC 7591).
pub(crate) async fn register(
    http: &reqwest::Client,
    endpoint: &str,
    redirect_uri: &str,
    scope: Option<&str>,
) -> Result<Client, String> {
    let mut body = serde_json::json!({
        "client_name": "agentd",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    if let Some(scope) = scope {
        body["scope"] = scope.into();
    }
    let sent = http.post(endpoint).json(&body).send();
    let response = tokio::time::timeout(OAUTH_REQUEST_TIMEOUT, sent)
        .await
        .map_err(|_| format!("the registration endpoint {endpoint} did not answer in time"))?
        .map_err(|error| {
            format!(
                "cannot reach the registration endpoint {endpoint}: {}",
                words(&error)
            )
        })?;
    let status = response.status();
    let answer: serde_json::Value = response.json().await.unwrap_or_default();
    if !status.is_success() {
        return Err(format!(
            "the registration endpoint {endpoint} refused agentd ({status}{}); set oauth.client_id in the server's entry to a client registered for http://127.0.0.1",
            oauth_error(&answer)
        ));
    }
    let id = answer["client_id"]
        .as_str()
        .ok_or_else(|| format!("the registration endpoint {endpoint} answered no client_id"))?;
    Ok(Client {
        id: id.to_owned(),
        secret: answer["client_secret"].as_str().map(str::to_owned),
    })
}

/// The URL the user opens.
pub(crate) fn authorization_url(
    discovered: &Discovered,
    client: &Client,
    redirect_uri: &str,
    state: &str,
    verifier: &str,
) -> Result<String, String> {
    let endpoint = &discovered.metadata.authorization_endpoint;
    let mut url = Url::parse(endpoint).map_err(|error| {
        format!("the authorization endpoint {endpoint:?} is not a URL: {error}")
    })?;
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", &client.id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_challenge", &challenge_of(verifier))
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", state)
            .append_pair("resource", &discovered.resource);
        if let Some(scope) = &discovered.scope {
            query.append_pair("scope", scope);
        }
    }
    Ok(url.to_string())
}

/// What a login needs to turn a code into a token.
#[derive(Clone, Debug)]
pub(crate) struct Exchange {
    pub(crate) server: String,
    pub(crate) url: String,
    pub(crate) client: Client,
    pub(crate) token_endpoint: String,
    pub(crate) resource: String,
    pub(crate) redirect_uri: String,
    pub(crate) verifier: String,
}

/// Turns `code` into a token.
pub(crate) async fn exchange(
    http: &reqwest::Client,
    exchange: &Exchange,
    code: &str,
) -> Result<StoredToken, String> {
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", exchange.redirect_uri.as_str()),
        ("client_id", exchange.client.id.as_str()),
        ("code_verifier", exchange.verifier.as_str()),
        ("resource", exchange.resource.as_str()),
    ];
    if let Some(secret) = &exchange.client.secret {
        form.push(("client_secret", secret));
    }
    let answer = post_token(http, &exchange.token_endpoint, &form)
        .await
        .map_err(|failure| failure.message)?;
    Ok(StoredToken {
        version: format_version(),
        server: exchange.server.clone(),
        url: exchange.url.clone(),
        client_id: exchange.client.id.clone(),
        client_secret: exchange.client.secret.clone(),
        token_endpoint: exchange.token_endpoint.clone(),
        resource: exchange.resource.clone(),
        access_token: answer.access_token,
        refresh_token: answer.refresh_token,
        expires_at: answer
            .expires_in
            .map(|secs| now_secs().saturating_add(secs)),
        scope: answer.scope,
    })
}

/// Why a refresh failed.
#[derive(Clone, Debug)]
pub(crate) struct TokenFailure {
    pub(crate) message: String,
    /// The grant was refused (revoked, expired, invalid): only a new login helps.
    pub(crate) refused: bool,
}

/// A new access token for `token` from its refresh token (the refresh token kept when the
/// server sends no new one).
pub(crate) async fn refresh(
    http: &reqwest::Client,
    token: &StoredToken,
) -> Result<StoredToken, TokenFailure> {
    let Some(refresh_token) = &token.refresh_token else {
        return Err(TokenFailure {
            message: "the token expired and the server gave no refresh token".to_owned(),
            refused: true,
        });
    };
    let mut form = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token.as_str()),
        ("client_id", token.client_id.as_str()),
        ("resource", token.resource.as_str()),
    ];
    if let Some(secret) = &token.client_secret {
        form.push(("client_secret", secret));
    }
    let answer = post_token(http, &token.token_endpoint, &form).await?;
    Ok(StoredToken {
        access_token: answer.access_token,
        refresh_token: answer.refresh_token.or_else(|| token.refresh_token.clone()),
        expires_at: answer
            .expires_in
            .map(|secs| now_secs().saturating_add(secs)),
        scope: answer.scope.or_else(|| token.scope.clone()),
        ..token.clone()
    })
}

/// A token endpoint's answer.
#[derive(serde::Deserialize)]
struct TokenAnswer {
    access_token: String,
    refresh_token: Option<String>,
    expires_in: Option<u64>,
    scope: Option<String>,
}

/// POSTs `form` to the token endpoint; an error names the endpoint and the OAuth error, never
/// a token.
async fn post_token(
    http: &reqwest::Client,
    endpoint: &str,
    form: &[(&str, &str)],
) -> Result<TokenAnswer, TokenFailure> {
    let failed = |message: String| TokenFailure {
        message,
        refused: false,
    };
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let sent = http
        .post(endpoint)
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(reqwest::header::ACCEPT, "application/json")
        .body(body)
        .send();
    let response = tokio::time::timeout(OAUTH_REQUEST_TIMEOUT, sent)
        .await
        .map_err(|_| {
            failed(format!(
                "the token endpoint {endpoint} did not answer in time"
            ))
        })?
        .map_err(|error| {
            failed(format!(
                "cannot reach the token endpoint {endpoint}: {}",
                words(&error)
            ))
        })?;
    let status = response.status();
    let answer: serde_json::Value = response.json().await.unwrap_or_default();
    if !status.is_success() {
        // RFC 6749 §5.2: a refused grant is a 400 `invalid_grant` (some servers say 401).
        let refused = matches!(
            answer["error"].as_str(),
            Some("invalid_grant" | "invalid_client" | "unauthorized_client")
        ) || status == reqwest::StatusCode::UNAUTHORIZED;
        return Err(TokenFailure {
            message: format!(
                "the token endpoint {endpoint} answered {status}{}",
                oauth_error(&answer)
            ),
            refused,
        });
    }
    serde_json::from_value(answer).map_err(|error| {
        failed(format!(
            "the token endpoint {endpoint} answered no usable token ({error})"
        ))
    })
}

/// `: error (description)` of an OAuth error answer, or nothing.
fn oauth_error(answer: &serde_json::Value) -> String {
    let Some(error) = answer["error"].as_str() else {
        return String::new();
    };
    let error = agentd_core::truncate::truncate_middle(error, 100);
    match answer["error_description"].as_str() {
        Some(description) => format!(
            ": {error} ({})",
            agentd_core::truncate::truncate_middle(description, 300)
        ),
        None => format!(": {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_s256_challenge_is_the_unpadded_base64url_sha256_of_the_verifier() {
        // As `base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")`.
        assert_eq!(
            challenge_of("dBjftJeZ4CVP-mA92Q8VGEgTLWEA5Fy1ZzsSYL7RTeg"),
            "76btZtmkPir8K-0RdyrYtigPxjzlAI8jKZZ9ly6IN3k"
        );
        let verifier = random_text();
        assert_eq!(verifier.len(), 43);
        assert_ne!(verifier, random_text());
    }
}
