//! What fetch_url may reach: the address classes it refuses (loopback, private, link-local,
//! metadata, …), the HTTP clients that enforce it at connect time (a resolver that refuses a
//! name with any such address; no proxy, no automatic redirects), and the session's rules as the
//! tool sees them ([`FetchRules`]).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// The session's permission rules as fetch_url needs them: which hosts may resolve to
/// non-public addresses, and how a redirect to another host is decided. The agent provides it
/// per batch from the session's policy; tools never see the policy itself.
pub trait FetchRules: Send + Sync + fmt::Debug {
    /// Whether an allow rule names `host` (`WebFetch(domain:host)`, `*.parent` rules included),
    /// which lets fetch_url reach it at a loopback or private address (a local dev server).
    fn names_host(&self, host: &str) -> bool;
    /// The decision on fetching `url` as if the model had called fetch_url with it (a redirect
    /// to another host). May touch the file system: callers run it on the blocking pool.
    fn decide(&self, url: &str) -> FetchDecision;
}

/// What the rules say about a redirect target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchDecision {
    Allow,
    /// A person would have to approve it; the reason says why.
    Ask(String),
    Deny(String),
}

/// Rules that name no host and let no redirect leave its host without an approval: the
/// context's default until a run provides the session's rules.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoFetchRules;

/// How long fetch_url waits for one connection to open; the call as a whole is bounded by
/// `ToolLimits::fetch_timeout`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// The two HTTP clients of fetch_url, built once and shared (connection pools). Neither uses a
/// proxy (the daemon must resolve and connect itself for the address check to mean anything)
/// nor follows redirects (fetch_url checks every hop).
#[derive(Clone, Debug)]
pub struct FetchClients {
    /// For hosts no rule names: its resolver refuses a name that has any non-public address.
    pub(crate) public_only: reqwest::Client,
    /// For hosts an allow rule names: any address.
    pub(crate) any_address: reqwest::Client,
}

/// Why an address is not public, as words for the refusal (`a loopback address`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AddressClass {
    Loopback,
    Unspecified,
    Private,
    LinkLocal,
    /// 100.64.0.0/10, carrier-grade NAT (cloud providers put services there too).
    SharedNat,
    /// Cloud instance metadata (169.254.169.254, fd00:ec2::254): credentials live there.
    Metadata,
    Multicast,
    Broadcast,
    /// Not routable on the internet (240/4, benchmarking, IETF protocol assignments, discard).
    Reserved,
}

/// A host fetch_url will not reach: which address, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) host: String,
    pub(crate) address: IpAddr,
    pub(crate) class: AddressClass,
}

impl FetchRules for NoFetchRules {
    fn names_host(&self, _host: &str) -> bool {
        false
    }

    fn decide(&self, url: &str) -> FetchDecision {
        FetchDecision::Ask(format!("approval needed to fetch {url}"))
    }
}

impl FetchClients {
    /// Builds both clients on the system resolver.
    pub fn new() -> anyhow::Result<FetchClients> {
        Self::with_lookup(Lookup::System)
    }

    /// Builds both clients on `lookup` (tests give a fixed table of names).
    pub(crate) fn with_lookup(lookup: Lookup) -> anyhow::Result<FetchClients> {
        // reqwest is built without a crypto provider; an error here only means one is
        // installed already.
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
        let lookup = Arc::new(lookup);
        let build = |public_only: bool| {
            let builder = reqwest::Client::builder()
                .connect_timeout(CONNECT_TIMEOUT)
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy();
            let builder = builder.dns_resolver(Arc::new(CheckingResolver {
                lookup: lookup.clone(),
                public_only,
            }));
            builder
                .build()
                .map_err(|error| anyhow::anyhow!("cannot build the fetch_url HTTP client: {error}"))
        };
        // Without any CA certificate on the machine the daemon still starts: fetch_url then
        // reaches `http://` URLs only, and an `https://` one fails with a certificate error
        // the model reads.
        let build = |public_only: bool| match build(public_only) {
            Ok(client) => Ok(client),
            Err(error) => {
                tracing::warn!(
                    "{error:#}; fetch_url works for http:// only (install the system's CA certificates and restart the daemon)"
                );
                reqwest::Client::builder()
                    .connect_timeout(CONNECT_TIMEOUT)
                    .redirect(reqwest::redirect::Policy::none())
                    .no_proxy()
                    .tls_certs_only(std::iter::empty())
                    .dns_resolver(Arc::new(CheckingResolver {
                        lookup: lookup.clone(),
                        public_only,
                    }))
                    .build()
                    .map_err(|error| {
                        anyhow::anyhow!("cannot build the fetch_url HTTP client: {error}")
                    })
            }
        };
        Ok(FetchClients {
            public_only: build(true)?,
            any_address: build(false)?,
        })
    }
}

/// How host names become addresses: the system resolver, or (tests) a fixed table.
#[derive(Debug)]
pub(crate) enum Lookup {
    System,
    #[cfg(test)]
    Table(Vec<(String, Vec<IpAddr>)>),
}

/// The resolver of both clients; the public-only one refuses a name if any of its addresses is
/// not public (never filters: a name that answers 127.0.0.1 besides a public address is a trap).
#[derive(Debug)]
struct CheckingResolver {
    lookup: Arc<Lookup>,
    public_only: bool,
}

impl Resolve for CheckingResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let lookup = self.lookup.clone();
        let public_only = self.public_only;
        Box::pin(async move {
            let addresses = lookup.resolve(&host).await?;
            if public_only && let Some(refusal) = check_addresses(&host, &addresses) {
                return Err(Box::new(refusal) as Box<dyn std::error::Error + Send + Sync>);
            }
            let addresses: Addrs = Box::new(
                addresses
                    .into_iter()
                    .map(|address| SocketAddr::new(address, 0)),
            );
            Ok(addresses)
        })
    }
}

impl Lookup {
    async fn resolve(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        match self {
            // tokio resolves on its blocking pool.
            Lookup::System => Ok(tokio::net::lookup_host((host, 0))
                .await?
                .map(|address| address.ip())
                .collect()),
            #[cfg(test)]
            Lookup::Table(table) => table
                .iter()
                .find(|(name, _)| name == host)
                .map(|(_, addresses)| addresses.clone())
                .ok_or_else(|| {
                    std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        format!("no such host {host}"),
                    )
                }),
        }
    }
}

/// The first address of `host` that is not public, as a refusal.
pub(crate) fn check_addresses(host: &str, addresses: &[IpAddr]) -> Option<Refusal> {
    addresses.iter().find_map(|address| {
        address_class(*address).map(|class| Refusal {
            host: host.to_owned(),
            address: *address,
            class,
        })
    })
}

/// Why `address` is not a public internet address, or None when it is. IPv6 addresses that
/// carry an IPv4 address (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64
/// `64:ff9b::/96`, 6to4 `2002::/16`) are judged by that IPv4 address.
pub(crate) fn address_class(address: IpAddr) -> Option<AddressClass> {
    match address {
        IpAddr::V4(v4) => ipv4_class(v4),
        IpAddr::V6(v6) => ipv6_class(v6),
    }
}

fn ipv4_class(address: Ipv4Addr) -> Option<AddressClass> {
    let [a, b, c, _] = address.octets();
    let class = if address == Ipv4Addr::new(169, 254, 169, 254) {
        AddressClass::Metadata
    } else if a == 0 {
        // 0.0.0.0/8, "this network": 0.0.0.0 reaches the local host on Linux.
        AddressClass::Unspecified
    } else if a == 127 {
        AddressClass::Loopback
    } else if a == 10 || (a == 172 && (16..32).contains(&b)) || (a == 192 && b == 168) {
        AddressClass::Private
    } else if a == 169 && b == 254 {
        AddressClass::LinkLocal
    } else if a == 100 && (64..128).contains(&b) {
        AddressClass::SharedNat
    } else if address.is_broadcast() {
        AddressClass::Broadcast
    } else if (224..240).contains(&a) {
        AddressClass::Multicast
    } else if a >= 240 || (a == 198 && (b == 18 || b == 19)) || (a == 192 && b == 0 && c == 0) {
        AddressClass::Reserved
    } else {
        return None;
    };
    Some(class)
}

fn ipv6_class(address: Ipv6Addr) -> Option<AddressClass> {
    let segments = address.segments();
    let embedded_v4 = |high: u16, low: u16| {
        let [h1, h2] = high.to_be_bytes();
        let [l1, l2] = low.to_be_bytes();
        Ipv4Addr::new(h1, h2, l1, l2)
    };
    if address.is_unspecified() {
        return Some(AddressClass::Unspecified);
    }
    if address.is_loopback() {
        return Some(AddressClass::Loopback);
    }
    if let Some(v4) = address.to_ipv4_mapped() {
        return ipv4_class(v4);
    }
    match segments {
        // IPv4-compatible (deprecated, still routed to the IPv4 address by some stacks).
        [0, 0, 0, 0, 0, 0, high, low] => return ipv4_class(embedded_v4(high, low)),
        // NAT64: the gateway connects to the embedded IPv4 address.
        [0x64, 0xff9b, 0, 0, 0, 0, high, low] => return ipv4_class(embedded_v4(high, low)),
        // 6to4: 2002:AABB:CCDD::/48 stands for AA.BB.CC.DD.
        [0x2002, high, low, ..] => return ipv4_class(embedded_v4(high, low)),
        _ => {}
    }
    let first = segments[0];
    let class = if address == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254) {
        AddressClass::Metadata
    } else if first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfec0 {
        // Unique local fc00::/7, and the deprecated site-local fec0::/10.
        AddressClass::Private
    } else if first & 0xffc0 == 0xfe80 {
        AddressClass::LinkLocal
    } else if first & 0xff00 == 0xff00 {
        AddressClass::Multicast
    } else if segments[..4] == [0x0100, 0, 0, 0] {
        // 100::/64, discard-only.
        AddressClass::Reserved
    } else {
        return None;
    };
    Some(class)
}

impl AddressClass {
    /// The class with its article: `a loopback address`.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            AddressClass::Loopback => "a loopback address",
            AddressClass::Unspecified => "an unspecified address",
            AddressClass::Private => "a private address",
            AddressClass::LinkLocal => "a link-local address",
            AddressClass::SharedNat => "a shared (carrier-grade NAT) address",
            AddressClass::Metadata => "a cloud metadata address",
            AddressClass::Multicast => "a multicast address",
            AddressClass::Broadcast => "a broadcast address",
            AddressClass::Reserved => "a reserved address",
        }
    }
}

impl fmt::Display for Refusal {
    /// `localhost resolves to a loopback address 127.0.0.1`, or for an address written as the
    /// host, `127.0.0.1 is a loopback address`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let literal = self
            .host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|address| address == self.address);
        if literal {
            write!(f, "{} is {}", self.host, self.class.describe())
        } else {
            write!(
                f,
                "{} resolves to {} {}",
                self.host,
                self.class.describe(),
                self.address
            )
        }
    }
}

impl std::error::Error for Refusal {}
