//! A connection to agentd: connect (starting the daemon when asked), `initialize`, then typed
//! requests over jsonrpsee's client, and subscriptions on agentd's own wire (`EventStream`: the
//! notifications of one method that carry the `subscriptionId` the subscribe call answered).

use std::path::{Path, PathBuf};
use std::time::Duration;

use interprocess::local_socket::traits::tokio::Stream as _;
use interprocess::local_socket::{GenericFilePath, ToFsName};
use jsonrpsee::async_client::{Client, ClientBuilder};
use jsonrpsee::core::client::{ClientT, Error as RpcClientError, SubscriptionClientT};
use jsonrpsee::core::traits::ToRpcParams;
use protocol::Method;
use protocol::daemon::{ClientCapabilities, Implementation, InitializeParams, InitializeResult};
use protocol::error::ErrorData;
use protocol::event::{EventNotificationParams, SessionEventEnvelope};
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::io::BufReader;

use crate::transport::{LineReceiver, LineSender, Refusal};

/// Notifications buffered per notification method before jsonrpsee's client drops a lagging
/// stream; a busy run streams many deltas, and the terminal may be slow.
const SUBSCRIPTION_BUFFER: usize = 1 << 16;

/// How long a single request may take before the client gives up: no method the daemon
/// serves waits on a person or a model (runs stream as events), so a minute means the daemon
/// is hung, and the user is told so instead of waiting forever.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// How long connecting and `initialize` may take: the daemon answers `initialize` at once,
/// so a daemon that accepts but stays silent is reported quickly.
pub const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why talking to the daemon failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing answers on the socket.
    #[error("cannot reach agentd at {socket}: {reason}")]
    Unreachable { socket: PathBuf, reason: String },
    /// The daemon runs but serves no more connections now (its connection limit).
    #[error("{message}")]
    Busy { message: String },
    /// The daemon answered with a JSON-RPC error; `data` is its `error.data` when that has
    /// the documented shape (a suggestion agentctl words as its own command).
    #[error("{message}")]
    Rpc {
        code: i32,
        message: String,
        data: Option<ErrorData>,
    },
    /// The connection broke or a reply could not be read.
    #[error("{0}")]
    Transport(String),
    /// The daemon took the connection but did not answer in time (hung or overloaded).
    #[error(
        "agentd at {socket} did not answer {method} within {} s; it may be hung or overloaded: see its log ($XDG_STATE_HOME/agentd/agentd.*.log), and restart it if it stays so",
        waited.as_secs()
    )]
    NotAnswering {
        socket: PathBuf,
        method: String,
        waited: Duration,
    },
}

impl From<RpcClientError> for ClientError {
    fn from(err: RpcClientError) -> Self {
        match err {
            RpcClientError::Call(err) => ClientError::Rpc {
                code: err.code(),
                message: err.message().to_owned(),
                // Data of another shape (a newer daemon's) is ignored, never an error.
                data: err
                    .data()
                    .and_then(|raw| serde_json::from_str::<ErrorData>(raw.get()).ok()),
            },
            RpcClientError::RestartNeeded(reason) => {
                ClientError::Transport(format!("connection to agentd lost: {reason}"))
            }
            other => ClientError::Transport(other.to_string()),
        }
    }
}

/// An initialised connection to the daemon.
pub struct Connection {
    client: Client,
    pub socket: PathBuf,
    pub server: InitializeResult,
    /// The name and capabilities `initialize` declared: a reconnection declares the same, so
    /// the daemon counts it as the same kind of client (one that answers approvals, or not).
    client_name: String,
    capabilities: ClientCapabilities,
    /// This command started the daemon it talks to (`autostart`): nothing else (no service
    /// manager) would start it again after a crash.
    pub started_daemon: bool,
}

/// Params sent as a JSON object (what editors and docs show), not jsonrpsee's default array.
struct ObjectParams(Box<RawValue>);

impl ToRpcParams for ObjectParams {
    fn to_rpc_params(self) -> Result<Option<Box<RawValue>>, serde_json::Error> {
        Ok(Some(self.0))
    }
}

fn object_params<T: Serialize>(params: &T) -> Result<ObjectParams, ClientError> {
    serde_json::value::to_raw_value(params)
        .map(ObjectParams)
        .map_err(|err| ClientError::Transport(format!("cannot encode params: {err}")))
}

impl Connection {
    /// Connect to `socket` and perform `initialize`, declaring no capabilities.
    pub async fn connect(socket: &Path, client_name: &str) -> Result<Connection, ClientError> {
        Connection::connect_declaring(socket, client_name, ClientCapabilities::default()).await
    }

    /// Connect to `socket` and perform `initialize`, declaring `capabilities` (a client that
    /// answers approvals says so, and only its subscriptions make a run wait for an answer).
    pub async fn connect_declaring(
        socket: &Path,
        client_name: &str,
        capabilities: ClientCapabilities,
    ) -> Result<Connection, ClientError> {
        let unreachable = |reason: String| ClientError::Unreachable {
            socket: socket.to_path_buf(),
            reason,
        };
        let name = socket
            .to_fs_name::<GenericFilePath>()
            .map_err(|err| unreachable(err.to_string()))?;
        let not_answering = || ClientError::NotAnswering {
            socket: socket.to_path_buf(),
            method: protocol::methods::Initialize::NAME.to_owned(),
            waited: INITIALIZE_TIMEOUT,
        };
        let stream = tokio::time::timeout(
            INITIALIZE_TIMEOUT,
            interprocess::local_socket::tokio::Stream::connect(name),
        )
        .await
        .map_err(|_| not_answering())?
        .map_err(|err| unreachable(err.to_string()))?;
        let (recv, send) = tokio::io::split(stream);
        let refusal = std::sync::Arc::new(std::sync::OnceLock::<Refusal>::new());
        let client = ClientBuilder::default()
            .request_timeout(REQUEST_TIMEOUT)
            .max_buffer_capacity_per_subscription(SUBSCRIPTION_BUFFER)
            .build_with_tokio(
                LineSender { inner: send },
                LineReceiver {
                    inner: BufReader::new(recv),
                    buf: Vec::new(),
                    refusal: refusal.clone(),
                },
            );
        let params = InitializeParams {
            client_info: Implementation {
                name: client_name.to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
            },
            protocol_version: protocol::PROTOCOL_VERSION.to_owned(),
            capabilities: capabilities.clone(),
        };
        let initialize =
            client.request(protocol::methods::Initialize::NAME, object_params(&params)?);
        let server: InitializeResult = tokio::time::timeout(INITIALIZE_TIMEOUT, initialize)
            .await
            .map_err(|_| not_answering())?
            .map_err(|err| match (ClientError::from(err), refusal.get()) {
                // The daemon refused the connection with a reason: say that, not "unreachable".
                (ClientError::Transport(_), Some(refusal))
                    if refusal.code == protocol::error::OVERLOADED =>
                {
                    ClientError::Busy {
                        message: refusal.message.clone(),
                    }
                }
                (ClientError::Transport(_), Some(refusal)) => ClientError::Rpc {
                    code: refusal.code,
                    message: refusal.message.clone(),
                    data: None,
                },
                (ClientError::Transport(reason), None) => unreachable(reason),
                (other, _) => other,
            })?;
        Ok(Connection {
            client,
            socket: socket.to_path_buf(),
            server,
            client_name: client_name.to_owned(),
            capabilities,
            started_daemon: false,
        })
    }

    /// A new connection to the same socket, declaring the same name and capabilities (after
    /// this one was lost). It never starts a daemon; `started_daemon` carries over.
    pub async fn reconnect(&self) -> Result<Connection, ClientError> {
        let mut connection = Connection::connect_declaring(
            &self.socket,
            &self.client_name,
            self.capabilities.clone(),
        )
        .await?;
        connection.started_daemon = self.started_daemon;
        Ok(connection)
    }

    /// Call method `M`.
    pub async fn request<M: Method>(&self, params: &M::Params) -> Result<M::Result, ClientError> {
        let answer = self.client.request(M::NAME, object_params(params)?).await;
        answer.map_err(|err| self.error_of(M::NAME, err))
    }

    /// Call a method by name with raw JSON params (for tools and tests).
    pub async fn request_raw(
        &self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, ClientError> {
        let answer = self.client.request(method, object_params(&params)?).await;
        answer.map_err(|err| self.error_of(method, err))
    }

    /// Subscribe with `subscribe_method`: the stream yields the `notification_method`
    /// notifications that carry the answered `subscriptionId`, until the daemon ends the
    /// connection or the client falls behind (`close_reason`). Listening starts before the
    /// subscribe call, so nothing sent after its answer is missed. One stream per
    /// notification method per connection.
    pub async fn subscribe<P: Serialize>(
        &self,
        subscribe_method: &str,
        params: &P,
        notification_method: &str,
        unsubscribe_method: &str,
    ) -> Result<EventStream, ClientError> {
        let notifications = self
            .client
            .subscribe_to_method::<serde_json::Value>(notification_method)
            .await
            .map_err(|err| self.error_of(subscribe_method, err))?;
        let answer: serde_json::Value = self
            .client
            .request(subscribe_method, object_params(params)?)
            .await
            .map_err(|err| self.error_of(subscribe_method, err))?;
        let Some(subscription_id) = answer["subscriptionId"].as_str().map(str::to_owned) else {
            return Err(ClientError::Transport(format!(
                "agentd answered {subscribe_method} without a subscriptionId: {answer}"
            )));
        };
        Ok(EventStream {
            notifications,
            subscription_id,
            unsubscribe_method: unsubscribe_method.to_owned(),
        })
    }

    /// End `stream` on the daemon's side too; true when the daemon still had it.
    pub async fn unsubscribe(&self, stream: EventStream) -> Result<bool, ClientError> {
        let EventStream {
            notifications,
            subscription_id,
            unsubscribe_method,
        } = stream;
        // Stop listening first, so a new stream of the same method can start right after.
        drop(notifications);
        let answer = self
            .request_raw(
                &unsubscribe_method,
                serde_json::json!({"subscriptionId": subscription_id}),
            )
            .await?;
        Ok(answer["unsubscribed"].as_bool().unwrap_or(false))
    }

    /// A failed call of `method` as the user should read it: a timeout names the method.
    fn error_of(&self, method: &str, err: RpcClientError) -> ClientError {
        match err {
            RpcClientError::RequestTimeout => ClientError::NotAnswering {
                socket: self.socket.clone(),
                method: method.to_owned(),
                waited: REQUEST_TIMEOUT,
            },
            other => other.into(),
        }
    }

    /// True while the connection is up.
    pub fn is_connected(&self) -> bool {
        self.client.is_connected()
    }

    /// Resolves when the daemon closes the connection.
    pub async fn closed(&self) {
        self.client.on_disconnect().await;
    }
}

/// One subscription's events: the notifications of its method that carry its
/// `subscriptionId`, as envelopes whose event stays raw JSON (unknown event types survive).
pub struct EventStream {
    notifications: jsonrpsee::core::client::Subscription<serde_json::Value>,
    subscription_id: String,
    unsubscribe_method: String,
}

impl EventStream {
    /// The next event of this subscription; `None` once the stream ended (see
    /// `close_reason`), an error for a notification that cannot be read.
    pub async fn next(
        &mut self,
    ) -> Option<Result<SessionEventEnvelope<serde_json::Value>, ClientError>> {
        loop {
            let params = match self.notifications.next().await? {
                Ok(params) => params,
                Err(err) => return Some(Err(ClientError::Transport(err.to_string()))),
            };
            match serde_json::from_value::<EventNotificationParams<serde_json::Value>>(params) {
                Ok(params) if params.subscription_id == self.subscription_id => {
                    return Some(Ok(params.envelope));
                }
                // Another subscription's (one this client ended, say): not ours.
                Ok(_) => continue,
                Err(err) => return Some(Err(ClientError::Transport(err.to_string()))),
            }
        }
    }

    /// Why the stream ended: `Lagged` when this client could not keep up.
    pub fn close_reason(&self) -> Option<jsonrpsee::core::client::SubscriptionCloseReason> {
        self.notifications.close_reason()
    }

    /// The id the daemon gave this subscription.
    pub fn id(&self) -> &str {
        &self.subscription_id
    }
}
