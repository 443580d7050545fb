//! The streamable HTTP client rmcp talks through: reqwest's, with two additions. An event over
//! the size limit in the event stream answering a request ends that stream, and rmcp only logs
//! why and tells the caller the stream closed; here the request's id is noted as too large, so
//! the call that waited for it ends with a size error naming the limit. And the OAuth token
//! ([`Auth`]): sent as `Authorization: Bearer`, refreshed before it expires, refreshed and the
//! request sent again once after a 401; a 401 that no token answers is noted as "needs login".

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use rmcp::transport::streamable_http_client::AuthRequiredError;

use super::super::oauth::{Bearer, BearerError, needs_login_message};
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};

/// Ids noted and not yet taken by their call; past this, the oldest notes are forgotten
/// (calls that were cancelled never take theirs).
const MAX_NOTED: usize = 64;

/// Requests whose answer was over the size limit.
#[derive(Clone, Debug, Default)]
pub(super) struct TooLargeAnswers(Arc<Mutex<HashSet<RequestId>>>);

impl TooLargeAnswers {
    fn note(&self, id: RequestId) {
        let mut noted = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if noted.len() >= MAX_NOTED {
            noted.clear();
        }
        noted.insert(id);
    }

    /// Whether the answer to `id` was over the limit (forgetting it).
    pub(super) fn take(&self, id: &RequestId) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(id)
    }
}

/// reqwest's client, noting answers over the size limit, with the OAuth token.
#[derive(Clone)]
pub(super) struct SizedHttp {
    pub(super) client: reqwest::Client,
    pub(super) too_large: TooLargeAnswers,
    pub(super) auth: Arc<Auth>,
}

/// A connection's OAuth token, and whether the server asked for a login no token answers.
pub(super) struct Auth {
    server: String,
    /// None: no login was made (or the entry sends its own `Authorization` header).
    bearer: Option<Bearer>,
    needs_login: Mutex<Option<String>>,
}

impl Auth {
    pub(super) fn new(server: &str, bearer: Option<Bearer>) -> Self {
        Self {
            server: server.to_owned(),
            bearer,
            needs_login: Mutex::new(None),
        }
    }

    /// Why the server needs a login, once a 401 said so.
    pub(super) fn needs_login(&self) -> Option<String> {
        self.needs_login
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn note_needs_login(&self, message: String) -> AuthError {
        *self
            .needs_login
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(message.clone());
        StreamableHttpError::AuthRequired(AuthRequiredError::new(message))
    }

    /// The token to send: the login's (refreshed when it expires soon), else what rmcp has.
    async fn header(&self, given: Option<String>) -> Result<Option<String>, AuthError> {
        match &self.bearer {
            None => Ok(given),
            Some(bearer) => bearer
                .current()
                .await
                .map(Some)
                .map_err(|error| self.failed(error)),
        }
    }

    fn failed(&self, error: BearerError) -> AuthError {
        match error {
            BearerError::NeedsLogin(message) => self.note_needs_login(message),
            BearerError::Failed(message) => StreamableHttpError::UnexpectedServerResponse(
                format!("cannot refresh the OAuth token: {message}").into(),
            ),
        }
    }

    /// A 401 answered `sent`: the token to send again with, or the error to end with.
    async fn after_401(&self, sent: Option<&str>) -> Result<String, AuthError> {
        match (&self.bearer, sent) {
            (Some(bearer), Some(sent)) => bearer
                .refused(sent)
                .await
                .map_err(|error| self.failed(error)),
            _ => Err(self.note_needs_login(needs_login_message(
                &self.server,
                "it asks for an OAuth login",
            ))),
        }
    }
}

type AuthError = StreamableHttpError<reqwest::Error>;

/// The OAuth token a connection of `server` to `url` sends: the login's, unless the entry
/// sends its own `Authorization` header (then never).
pub(super) async fn auth_for(
    server: &str,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    store: &super::super::oauth::store::TokenStore,
    http: &reqwest::Client,
) -> Result<Arc<Auth>, super::StartError> {
    let own_authorization = headers
        .keys()
        .any(|name| name.eq_ignore_ascii_case("authorization"));
    let bearer = if own_authorization {
        None
    } else {
        Bearer::load(store, http, server, url)
            .await
            .map_err(super::StartError::new)?
    };
    Ok(Arc::new(Auth::new(server, bearer)))
}

/// The entry's `headers` as rmcp sends them.
pub(super) fn custom_headers(
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<HashMap<HeaderName, HeaderValue>, super::StartError> {
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let name = HeaderName::try_from(name.as_str())
            .map_err(|error| super::StartError::new(format!("bad header name {name}: {error}")))?;
        let value = HeaderValue::try_from(value.as_str()).map_err(|error| {
            super::StartError::new(format!("bad value of header {name}: {error}"))
        })?;
        custom.insert(name, value);
    }
    Ok(custom)
}

type PostResult = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;

impl StreamableHttpClient for SizedHttp {
    type Error = reqwest::Error;

    fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = PostResult> + Send + '_ {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
    }

    fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = PostResult> + Send + '_ {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
    }

    fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> impl Future<Output = PostResult> + Send + '_ {
        let id = match &message {
            JsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        async move {
            let sent = self.auth.header(auth_header).await?;
            let again = message.clone();
            let first = self
                .client
                .post_message_with_response_limits(
                    uri.clone(),
                    message,
                    session_id.clone(),
                    sent.clone(),
                    custom_headers.clone(),
                    limits,
                )
                .await;
            let response = match first {
                Err(StreamableHttpError::AuthRequired(_)) => {
                    let fresh = self.auth.after_401(sent.as_deref()).await?;
                    let second = self
                        .client
                        .post_message_with_response_limits(
                            uri,
                            again,
                            session_id,
                            Some(fresh),
                            custom_headers,
                            limits,
                        )
                        .await;
                    if let Err(StreamableHttpError::AuthRequired(_)) = &second {
                        return Err(self.auth.note_needs_login(needs_login_message(
                            &self.auth.server,
                            "it refused a freshly refreshed OAuth token",
                        )));
                    }
                    second?
                }
                other => other?,
            };
            Ok(match (response, id) {
                (StreamableHttpPostResponse::Sse(stream, session), Some(id)) => {
                    let noted = self.too_large.clone();
                    let stream = stream.inspect(move |event| {
                        if let Err(error) = event
                            && is_too_large(error)
                        {
                            noted.note(id.clone());
                        }
                    });
                    StreamableHttpPostResponse::Sse(stream.boxed(), session)
                }
                (other, _) => other,
            })
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<reqwest::Error>> {
        let sent = self.auth.header(auth_header).await?;
        self.client
            .delete_session(uri, session_id, sent, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse, StreamableHttpError<reqwest::Error>> {
        let sent = self.auth.header(auth_header).await?;
        self.client
            .get_stream(uri, session_id, last_event_id, sent, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, StreamableHttpError<reqwest::Error>> {
        let sent = self.auth.header(auth_header).await?;
        self.client
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                sent,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}

/// Whether an event stream ended because an event was over the limit (rmcp's error type for
/// it is private: its words are what is left to read).
fn is_too_large(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(current) = cause {
        if current.to_string().contains("exceeded the maximum size") {
            return true;
        }
        cause = current.source();
    }
    false
}
