//! The providers' HTTP clients. A plain `http://` provider (Ollama, vLLM on this machine)
//! needs no TLS roots, so the client for `https://` (the system's roots, read by rustls'
//! platform verifier) is built on its first use, off the runtime: a machine without CA
//! certificates still starts the daemon and reaches a local provider, and startup does not
//! wait for the certificate stores.

use std::sync::Arc;

use tokio::sync::OnceCell;

/// The plain client, and the TLS one once an `https://` provider was used.
#[derive(Clone, Debug)]
pub struct HttpClients {
    inner: Arc<Clients>,
}

#[derive(Debug)]
struct Clients {
    plain: reqwest::Client,
    /// Built on first `https://` use; a failure is not kept, so installing certificates and
    /// sending again works without a restart.
    tls: OnceCell<reqwest::Client>,
}

impl HttpClients {
    /// The plain client now (no certificate store is read); the TLS client later.
    pub fn new() -> anyhow::Result<HttpClients> {
        install_crypto_provider();
        let plain = base_builder()
            // No roots: this client is only used for `http://` URLs.
            .tls_certs_only(std::iter::empty())
            .build()
            .map_err(|error| {
                anyhow::anyhow!(
                    "cannot build the HTTP client: {}",
                    super::error_chain(&error)
                )
            })?;
        Ok(HttpClients {
            inner: Arc::new(Clients {
                plain,
                tls: OnceCell::new(),
            }),
        })
    }

    /// The client for `url`: the plain one unless it is `https://`.
    pub async fn for_url(&self, url: &str) -> Result<reqwest::Client, String> {
        let is_https = url
            .get(..8)
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"));
        if !is_https {
            return Ok(self.inner.plain.clone());
        }
        self.inner
            .tls
            .get_or_try_init(|| async {
                tokio::task::spawn_blocking(build_tls)
                    .await
                    .map_err(|error| format!("cannot build the HTTPS client: {error}"))?
            })
            .await
            .cloned()
    }
}

/// reqwest is built without a crypto provider; an error only means one is installed already.
fn install_crypto_provider() {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
}

/// A connect timeout but no total timeout: streams run long (idle streams are caught per
/// event instead).
fn base_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder().connect_timeout(super::CONNECT_TIMEOUT)
}

/// The TLS client with the system's roots. Blocking: reads the certificate stores.
fn build_tls() -> Result<reqwest::Client, String> {
    install_crypto_provider();
    base_builder().build().map_err(|error| {
        format!(
            "cannot build the HTTPS client: {}; install the system's CA certificates (e.g. the ca-certificates package) or point SSL_CERT_FILE at a bundle",
            super::error_chain(&error)
        )
    })
}
