//! The socket server: accepts local-socket connections, checks the peer is our user, enforces
//! the connection limit (when full, the longest idle connection with nothing going on makes
//! room, `registry`) and hands each connection to the NDJSON loop in `connection`.

pub mod connection;
pub mod line;
pub mod os;
pub mod outbound;
pub mod params;
pub mod peer;
mod registry;
pub mod request;
mod subscriptions;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use interprocess::local_socket::tokio::{Listener, Stream};
use interprocess::local_socket::traits::tokio::Listener as _;
use jsonrpsee::Methods;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use connection::ConnectionContext;

/// Largest line either way (16 MiB): `ServerLimits::max_line_bytes` by default, and the
/// `maxLineBytes` announced in `initialize`.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The server's limits. Each exists to keep one client from hurting the others or the daemon.
#[derive(Clone, Debug)]
pub struct ServerLimits {
    /// Largest accepted line, and largest response (16 MiB): big enough for any tool output we
    /// send, small enough that a runaway client cannot make us buffer gigabytes.
    pub max_line_bytes: usize,
    /// Open connections at once, so a leaking client cannot exhaust file descriptors. At it,
    /// a new connection evicts the longest idle one that has no subscription and no request
    /// in flight (told why with an "overloaded" error line) and takes its slot; when there is
    /// none, the new one gets the "overloaded" error and is closed.
    pub max_connections: usize,
    /// Messages queued for one connection before senders wait (or, for best-effort events,
    /// drop); bounds memory per slow client.
    pub outbound_queue: usize,
    /// Bytes of answers queued for one connection and not yet written: with `outbound_queue`
    /// alone, a client that pipelines big answers (`session/get` with a long history) and reads
    /// nothing would hold `outbound_queue` times 16 MiB. Never below `max_line_bytes`.
    pub outbound_bytes: usize,
    /// Bytes of answers queued on all connections together: `outbound_bytes` bounds one
    /// connection, but many that pipeline big answers and read nothing would hold that many
    /// times it. Past it the connection holding the most is closed at once, as a reader that
    /// does not read; so the daemon holds at most about this plus one connection's
    /// `outbound_bytes`. Never below `outbound_bytes`.
    pub outbound_bytes_total: usize,
    /// Live subscriptions per connection (both kinds together); past it subscribing is
    /// refused with `-32001`. Each holds a forwarder task and a broadcast receiver.
    pub max_subscriptions_per_connection: u32,
    /// How long in-flight requests may run on, and the last messages take to be written,
    /// after the client hangs up.
    pub drain_deadline: Duration,
    /// The same when the daemon stops, once the runs were stopped: short, so a client that
    /// stopped reading cannot push the daemon's stop past its budget (`daemon::STOP_DEADLINE`).
    pub stop_flush_deadline: Duration,
    /// Requests of one connection being handled at once; at the cap the connection's reader
    /// stops reading until one finishes. A client that pipelines without reading its answers
    /// then waits on its own socket instead of growing the daemon (each request holds a task
    /// and, once answered, a queued response).
    pub max_in_flight_per_connection: usize,
    /// Requests in one batch; a longer batch is refused whole. A batch runs as one task and
    /// collects its answers in memory, so its length bounds that memory.
    pub max_batch_len: usize,
    /// Bytes all connections together may hold in lines longer than `big_line_bytes` while
    /// they are read and handled. A big line takes `max_line_bytes` of it before it is
    /// buffered (so a reader that started always finishes), and gives it back once handled;
    /// other big lines wait. Never below `max_line_bytes`.
    pub frame_memory_budget: usize,
    /// Lines up to this size are read without touching `frame_memory_budget`: connections
    /// times this is small.
    pub big_line_bytes: usize,
    /// How long a new connection has to call `initialize`; then it is closed, so idle
    /// connections cannot hold every connection slot.
    pub initialize_deadline: Duration,
    /// Refused connections (over the connection limit) being answered at once; past it a
    /// refused connection is closed without an answer, so a flood cannot exhaust descriptors.
    pub max_refusals: usize,
    /// Methods whose answer can be as long as a line (a history, a long listing): an answer's
    /// size is only known once it is built, and `max_in_flight_per_connection` of them built
    /// at once for a client that reads nothing would hold that many lines of memory.
    pub heavy_answer_methods: &'static [&'static str],
    /// Calls of `heavy_answer_methods` of one connection running at once, each from its start
    /// until its answer is queued (within `outbound_bytes`); the others wait before they
    /// start. Bounds a connection's answers to this many lines, plus `outbound_bytes`, plus
    /// small ones.
    pub heavy_answers_per_connection: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_line_bytes: MAX_LINE_BYTES,
            max_connections: 512,
            outbound_queue: 1024,
            outbound_bytes: 32 * 1024 * 1024,
            outbound_bytes_total: 256 * 1024 * 1024,
            max_subscriptions_per_connection: 64,
            drain_deadline: Duration::from_secs(10),
            stop_flush_deadline: Duration::from_secs(3),
            max_in_flight_per_connection: 64,
            max_batch_len: 1024,
            frame_memory_budget: 64 * 1024 * 1024,
            big_line_bytes: 64 * 1024,
            initialize_deadline: Duration::from_secs(5),
            max_refusals: 64,
            heavy_answer_methods: &[
                <protocol::methods::SessionGet as protocol::Method>::NAME,
                <protocol::methods::SessionList as protocol::Method>::NAME,
                <protocol::methods::ApprovalList as protocol::Method>::NAME,
            ],
            heavy_answers_per_connection: 2,
        }
    }
}

/// Environment variable that overrides `ServerLimits::initialize_deadline`, in milliseconds
/// (tests shorten it).
pub const INITIALIZE_DEADLINE_ENV: &str = "AGENTD_INITIALIZE_DEADLINE_MS";

impl ServerLimits {
    /// The defaults, with overrides from the environment (`AGENTD_INITIALIZE_DEADLINE_MS`).
    /// A value that is not a positive number of milliseconds is an error.
    pub fn from_env() -> anyhow::Result<ServerLimits> {
        let mut limits = ServerLimits::default();
        if let Some(value) = std::env::var_os(INITIALIZE_DEADLINE_ENV) {
            let millis = value
                .to_str()
                .and_then(|text| text.trim().parse::<u64>().ok())
                .filter(|millis| (1..=3_600_000).contains(millis))
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "{INITIALIZE_DEADLINE_ENV} must be a number of milliseconds from 1 to 3600000, not {value:?}"
                    )
                })?;
            limits.initialize_deadline = Duration::from_millis(millis);
        }
        Ok(limits)
    }
}

/// Live counters the daemon reports in `daemon/status`.
#[derive(Debug, Default)]
pub struct ConnectionStats {
    pub open: AtomicU64,
    next_id: AtomicU64,
}

impl ConnectionStats {
    pub fn open_connections(&self) -> u64 {
        self.open.load(Ordering::Relaxed)
    }
}

/// Accept connections until `shutdown` fires, then wait for every connection to finish (each
/// bounded by `limits.stop_flush_deadline`, or by `limits.drain_deadline` if its client had
/// already hung up; the daemon bounds its whole stop on top).
pub async fn serve(
    listener: Listener,
    methods: Methods,
    limits: ServerLimits,
    stats: Arc<ConnectionStats>,
    shutdown: CancellationToken,
) {
    let connections = TaskTracker::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let refusals = Arc::new(Semaphore::new(limits.max_refusals));
    let registry = registry::ConnectionRegistry::new(
        limits
            .outbound_bytes_total
            .max(limits.outbound_bytes.max(limits.max_line_bytes)),
    );
    let frame_budget = Arc::new(Semaphore::new(
        limits
            .frame_memory_budget
            .max(limits.max_line_bytes)
            .min(Semaphore::MAX_PERMITS),
    ));
    loop {
        let stream = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(stream) => stream,
                Err(err) => {
                    tracing::warn!(%err, "accept failed");
                    // Back off briefly so a persistent error (EMFILE) does not spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        if let Err(message) = os::check_peer(&stream) {
            refuse_bounded(
                &connections,
                &refusals,
                stream,
                protocol::error::FORBIDDEN,
                message,
            );
            continue;
        }
        let busy = format!(
            "agentd is busy: too many connections (limit {}), all of them subscribed or working; close some clients and retry",
            limits.max_connections
        );
        // Full: an idle connection makes room, and this one waits (bounded, like refusals)
        // for its slot.
        let (slot, waiting) = match slots.clone().try_acquire_owned() {
            Ok(slot) => (Some(slot), None),
            Err(_) => match refusals.clone().try_acquire_owned() {
                Ok(waiting) if registry.evict_idle() => (None, Some(waiting)),
                Ok(waiting) => {
                    drop(waiting);
                    refuse_bounded(
                        &connections,
                        &refusals,
                        stream,
                        protocol::error::OVERLOADED,
                        busy,
                    );
                    continue;
                }
                Err(_) => {
                    tracing::debug!("too many refusals at once; closing a connection unanswered");
                    drop(stream);
                    continue;
                }
            },
        };
        let connection_id = stats.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let methods = methods.clone();
        let limits = limits.clone();
        let stats = stats.clone();
        let shutdown = shutdown.clone();
        let frame_budget = frame_budget.clone();
        let registry = registry.clone();
        let slots = slots.clone();
        connections.spawn(async move {
            let slot = match slot {
                Some(slot) => slot,
                None => {
                    let wait = limits.stop_flush_deadline + REFUSAL_GRACE;
                    match tokio::time::timeout(wait, slots.acquire_owned()).await {
                        Ok(Ok(slot)) => slot,
                        _ => {
                            refuse(stream, protocol::error::OVERLOADED, busy).await;
                            return;
                        }
                    }
                }
            };
            drop(waiting);
            stats.open.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(connection_id, "client connected");
            connection::serve_connection(
                stream,
                connection_id,
                methods,
                limits,
                frame_budget,
                registry,
                shutdown,
            )
            .await;
            stats.open.fetch_sub(1, Ordering::Relaxed);
            drop(slot);
        });
    }
    drop(listener);
    connections.close();
    connections.wait().await;
}

/// Answer a refused connection in a task while fewer than `max_refusals` are being answered;
/// past that, close it at once.
fn refuse_bounded(
    connections: &TaskTracker,
    refusals: &Arc<Semaphore>,
    stream: Stream,
    code: i32,
    message: String,
) {
    match refusals.clone().try_acquire_owned() {
        Ok(permit) => {
            connections.spawn(async move {
                refuse(stream, code, message).await;
                drop(permit);
            });
        }
        Err(_) => {
            tracing::debug!("too many refusals at once; closing a connection unanswered");
            drop(stream);
        }
    }
}

/// Answer a connection we will not serve with one error line, then close it.
async fn refuse(mut stream: Stream, code: i32, message: String) {
    let line = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message },
    });
    let line = format!("{line}\n");
    let _ = tokio::time::timeout(REFUSAL_GRACE, async {
        stream.write_all(line.as_bytes()).await?;
        stream.shutdown().await?;
        // Read what the client already sent, so closing does not reset the connection
        // before it has read the error.
        let mut discard = [0u8; 4096];
        while stream.read(&mut discard).await? > 0 {}
        Ok::<(), std::io::Error>(())
    })
    .await;
}

/// How long a refused connection is given to read its error before it is closed.
const REFUSAL_GRACE: Duration = Duration::from_secs(1);
