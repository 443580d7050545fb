//! The streamable HTTP client rmcp talks through: reqwest's, with one addition. An event over
//! the size limit in the event stream answering a request ends that stream, and rmcp only logs
//! why and tells the caller the stream closed; here the request's id is noted as too large, so
//! the call that waited for it ends with a size error naming the limit.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
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

/// reqwest's client, noting answers over the size limit.
#[derive(Clone)]
pub(super) struct SizedHttp {
    pub(super) client: reqwest::Client,
    pub(super) too_large: TooLargeAnswers,
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
            let response = self
                .client
                .post_message_with_response_limits(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    limits,
                )
                .await?;
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

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<reqwest::Error>>> + Send + '_ {
        self.client
            .delete_session(uri, session_id, auth_header, custom_headers)
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<BoxedSseResponse, StreamableHttpError<reqwest::Error>>> + Send + '_
    {
        self.client
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Result<BoxedSseResponse, StreamableHttpError<reqwest::Error>>> + Send + '_
    {
        self.client.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
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
