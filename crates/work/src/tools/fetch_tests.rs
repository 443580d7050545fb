//! Tests of fetch_url against a local HTTP server: content handling, and the address boundary
//! (every spelling of a non-public address refused, resolution and redirect hops checked).

use std::net::IpAddr;
use std::sync::Arc;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::tools::fetch_access::{AddressClass, FetchClients, FetchRules, Lookup, address_class};
use crate::tools::test_support::{call, workspace};

/// Rules naming some hosts; redirects to other hosts get `redirect`.
#[derive(Debug)]
struct TestRules {
    named: Vec<String>,
    redirect: FetchDecision,
}

impl FetchRules for TestRules {
    fn names_host(&self, host: &str) -> bool {
        self.named.iter().any(|named| named == host)
    }

    fn decide(&self, _url: &str) -> FetchDecision {
        self.redirect.clone()
    }
}

/// A workspace context whose rules name `hosts` and allow redirects to other hosts.
fn naming(hosts: &[&str]) -> (tempfile::TempDir, ToolContext) {
    let (dir, mut ctx) = workspace();
    ctx.fetch_rules = Arc::new(TestRules {
        named: hosts.iter().map(|host| (*host).to_owned()).collect(),
        redirect: FetchDecision::Allow,
    });
    (dir, ctx)
}

/// [`naming`] with a resolver that knows only `table` (names → addresses).
fn naming_with_table(
    hosts: &[&str],
    table: &[(&str, &[&str])],
) -> (tempfile::TempDir, ToolContext) {
    let (dir, mut ctx) = naming(hosts);
    let table = table
        .iter()
        .map(|(name, addresses)| {
            let addresses = addresses
                .iter()
                .map(|a| a.parse::<IpAddr>().unwrap())
                .collect();
            ((*name).to_owned(), addresses)
        })
        .collect();
    ctx.fetch = FetchClients::with_lookup(Lookup::Table(table)).unwrap();
    (dir, ctx)
}

/// A one-response-per-connection HTTP/1.1 server on localhost; aborted on drop.
struct Server {
    base: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn server() -> Server {
    server_with(Vec::new()).await
}

/// A server that also answers each `(path, location)` with a 302 to `location`, where `{port}`
/// stands for the server's port.
async fn server_with(redirects: Vec<(&str, &str)>) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let base = format!("http://{address}");
    let redirects: Vec<(String, String)> = redirects
        .into_iter()
        .map(|(path, location)| {
            let location = location.replace("{port}", &address.port().to_string());
            (path.to_owned(), location)
        })
        .collect();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let mut request = Vec::new();
            let mut buffer = [0u8; 1024];
            while !request.windows(4).any(|window| window == b"\r\n\r\n") {
                match socket.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(read) => request.extend_from_slice(&buffer[..read]),
                }
            }
            let request = String::from_utf8_lossy(&request);
            let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
            if let Some((_, location)) = redirects.iter().find(|(from, _)| *from == path) {
                let response = format!(
                    "HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\n\
                     connection: close\r\n\r\n"
                );
                let _ = socket.write_all(response.as_bytes()).await;
                continue;
            }
            let (status, content_type, body) = match path.as_str() {
                "/page" => (
                    "200 OK",
                    "text/html; charset=utf-8",
                    "<html><head><style>p{}</style><script>var x = '<p>';</script></head>\
                     <body><h1>Title</h1><!-- hidden --><p>Fish &amp; chips</p></body></html>"
                        .to_owned(),
                ),
                "/data" => ("200 OK", "application/json", "{\"a\":1}".to_owned()),
                "/secret" => ("200 OK", "text/plain", "the secret".to_owned()),
                "/image" => ("200 OK", "image/png", "\u{89}PNG".to_owned()),
                "/big" => ("200 OK", "text/plain", "x".repeat(5000)),
                _ => ("404 Not Found", "text/plain", "no such page".to_owned()),
            };
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
        }
    });
    Server { base, task }
}

#[tokio::test]
async fn html_is_reduced_to_text() {
    let server = server().await;
    let (_dir, ctx) = naming(&["127.0.0.1"]);
    let output = call(
        &FetchUrl,
        json!({"url": format!("{}/page", server.base)}),
        &ctx,
    )
    .await;
    assert_eq!(output, ToolOutput::ok("Title\n\nFish & chips"));
}

#[tokio::test]
async fn json_is_returned_as_is() {
    let server = server().await;
    let (_dir, ctx) = naming(&["127.0.0.1"]);
    let output = call(
        &FetchUrl,
        json!({"url": format!("{}/data", server.base)}),
        &ctx,
    )
    .await;
    assert_eq!(output, ToolOutput::ok("{\"a\":1}"));
}

#[tokio::test]
async fn size_is_capped() {
    let server = server().await;
    let (_dir, mut ctx) = naming(&["127.0.0.1"]);
    ctx.limits.fetch_max_bytes = 1000;
    let output = call(
        &FetchUrl,
        json!({"url": format!("{}/big", server.base)}),
        &ctx,
    )
    .await;
    assert!(!output.is_error);
    assert_eq!(
        output.content,
        format!("{}\n[… cut at 1000 bytes]", "x".repeat(1000))
    );
}

#[tokio::test]
async fn errors_are_results() {
    let server = server().await;
    let (_dir, ctx) = naming(&["127.0.0.1"]);
    let cases = [
        (format!("{}/image", server.base), "content type `image/png`"),
        (
            format!("{}/missing", server.base),
            "returned HTTP 404 Not Found\nno such page",
        ),
        (
            "file:///etc/passwd".to_owned(),
            "unsupported URL scheme `file`",
        ),
        ("not a url".to_owned(), "invalid URL `not a url`"),
    ];
    for (url, expected) in cases {
        let output = call(&FetchUrl, json!({"url": url}), &ctx).await;
        assert!(output.is_error, "{url}");
        assert!(
            output.content.contains(expected),
            "{url}: {}",
            output.content
        );
    }
}

#[test]
fn html_to_text_handles_unclosed_and_nested_markup() {
    assert_eq!(html_to_text("a<br>b<div>c</div>d"), "a\nb\nc\nd");
    assert_eq!(html_to_text("<p>x</p><script>never closed"), "x");
    assert_eq!(html_to_text("text < more"), "text < more");
}

#[test]
fn address_classes() {
    let cases: &[(&str, Option<AddressClass>)] = &[
        ("127.0.0.1", Some(AddressClass::Loopback)),
        ("127.255.0.9", Some(AddressClass::Loopback)),
        ("0.0.0.0", Some(AddressClass::Unspecified)),
        ("0.1.2.3", Some(AddressClass::Unspecified)),
        ("10.1.2.3", Some(AddressClass::Private)),
        ("172.16.0.1", Some(AddressClass::Private)),
        ("172.31.255.255", Some(AddressClass::Private)),
        ("172.32.0.1", None),
        ("192.168.1.1", Some(AddressClass::Private)),
        ("169.254.1.1", Some(AddressClass::LinkLocal)),
        ("169.254.169.254", Some(AddressClass::Metadata)),
        ("100.64.0.1", Some(AddressClass::SharedNat)),
        ("100.100.100.200", Some(AddressClass::SharedNat)),
        ("100.128.0.1", None),
        ("224.0.0.1", Some(AddressClass::Multicast)),
        ("255.255.255.255", Some(AddressClass::Broadcast)),
        ("240.0.0.1", Some(AddressClass::Reserved)),
        ("198.18.0.1", Some(AddressClass::Reserved)),
        ("93.184.216.34", None),
        ("8.8.8.8", None),
        ("::", Some(AddressClass::Unspecified)),
        ("::1", Some(AddressClass::Loopback)),
        ("::ffff:127.0.0.1", Some(AddressClass::Loopback)),
        ("::ffff:10.0.0.1", Some(AddressClass::Private)),
        ("::ffff:169.254.169.254", Some(AddressClass::Metadata)),
        ("::127.0.0.1", Some(AddressClass::Loopback)),
        ("64:ff9b::7f00:1", Some(AddressClass::Loopback)),
        ("2002:7f00:1::1", Some(AddressClass::Loopback)),
        ("fd00:ec2::254", Some(AddressClass::Metadata)),
        ("fc00::1", Some(AddressClass::Private)),
        ("fd12:3456::1", Some(AddressClass::Private)),
        ("fec0::1", Some(AddressClass::Private)),
        ("fe80::1", Some(AddressClass::LinkLocal)),
        ("ff02::1", Some(AddressClass::Multicast)),
        ("100::1", Some(AddressClass::Reserved)),
        ("2606:4700::1111", None),
        ("::ffff:8.8.8.8", None),
    ];
    for (address, expected) in cases {
        let parsed: IpAddr = address.parse().unwrap();
        assert_eq!(address_class(parsed), *expected, "{address}");
    }
}

#[tokio::test]
async fn every_spelling_of_a_local_address_is_refused_before_connecting() {
    // Nothing listens on these ports: a refusal that came from a connection attempt would read
    // "connection refused", not "refused: … address".
    let (_dir, ctx) = workspace();
    let cases = [
        (
            "http://127.0.0.1:9/",
            "refused: 127.0.0.1 is a loopback address",
        ),
        (
            "http://127.1:9/",
            "refused: 127.0.0.1 is a loopback address",
        ),
        (
            "http://0x7f000001:9/",
            "refused: 127.0.0.1 is a loopback address",
        ),
        (
            "http://2130706433:9/",
            "refused: 127.0.0.1 is a loopback address",
        ),
        (
            "http://017700000001:9/",
            "refused: 127.0.0.1 is a loopback address",
        ),
        (
            "http://0177.0.0.1:9/",
            "refused: 127.0.0.1 is a loopback address",
        ),
        ("http://[::1]:9/", "refused: [::1] is a loopback address"),
        (
            "http://[0:0:0:0:0:0:0:1]:9/",
            "refused: [::1] is a loopback address",
        ),
        (
            "http://[::ffff:127.0.0.1]:9/",
            "refused: [::ffff:7f00:1] is a loopback address",
        ),
        (
            "http://0.0.0.0:9/",
            "refused: 0.0.0.0 is an unspecified address",
        ),
        ("http://0:9/", "refused: 0.0.0.0 is an unspecified address"),
        ("http://[::]:9/", "refused: [::] is an unspecified address"),
        (
            "http://localhost:9/",
            "refused: localhost resolves to a loopback address",
        ),
        (
            "http://LocalHost:9/",
            "refused: localhost resolves to a loopback address",
        ),
        (
            "http://169.254.169.254/latest/meta-data/",
            "is a cloud metadata address",
        ),
        ("http://[fd00:ec2::254]/", "is a cloud metadata address"),
        (
            "http://10.0.0.1:9/",
            "refused: 10.0.0.1 is a private address",
        ),
        (
            "http://192.168.0.1:9/",
            "refused: 192.168.0.1 is a private address",
        ),
        ("http://[fe80::1]:9/", "is a link-local address"),
        (
            "http://100.64.0.1:9/",
            "is a shared (carrier-grade NAT) address",
        ),
    ];
    for (url, expected) in cases {
        let output = call(&FetchUrl, json!({"url": url}), &ctx).await;
        assert!(output.is_error, "{url}: {}", output.content);
        assert!(
            output.content.contains(expected),
            "{url}: {}",
            output.content
        );
    }
    let output = call(&FetchUrl, json!({"url": "http://127.1:9/"}), &ctx).await;
    assert_eq!(
        output.content,
        "refused: 127.0.0.1 is a loopback address; fetch_url does not reach loopback, private, \
         link-local or metadata addresses unless an allow rule names the host: allow it with a \
         `WebFetch(domain:127.0.0.1)` rule"
    );
}

#[tokio::test]
async fn a_name_with_any_local_address_is_refused() {
    let (_dir, ctx) = naming_with_table(
        &[],
        &[
            ("mixed.example", &["93.184.216.34", "127.0.0.1"]),
            ("rebound.example", &["10.1.2.3"]),
            ("metadata.example", &["169.254.169.254"]),
        ],
    );
    let cases = [
        (
            "http://mixed.example/",
            "refused: mixed.example resolves to a loopback address 127.0.0.1",
        ),
        (
            "http://rebound.example/",
            "refused: rebound.example resolves to a private address 10.1.2.3",
        ),
        (
            "https://metadata.example/",
            "refused: metadata.example resolves to a cloud metadata address 169.254.169.254",
        ),
    ];
    for (url, expected) in cases {
        let output = call(&FetchUrl, json!({"url": url}), &ctx).await;
        assert!(output.is_error, "{url}: {}", output.content);
        assert!(
            output.content.starts_with(expected),
            "{url}: {}",
            output.content
        );
        assert!(
            output.content.contains("`WebFetch(domain:"),
            "{url}: {}",
            output.content
        );
    }
}

#[tokio::test]
async fn a_public_looking_host_redirecting_to_loopback_is_refused_at_the_hop() {
    // docs.example stands for a public host (named, so it may resolve to the test server);
    // the hosts it redirects to are not named.
    let server = server_with(vec![
        ("/to-ip", "http://127.1:{port}/secret"),
        ("/to-name", "http://internal.example:{port}/secret"),
        ("/to-file", "file:///etc/passwd"),
        ("/loop", "/loop"),
    ])
    .await;
    let port = server.base.rsplit(':').next().unwrap().to_owned();
    let (_dir, ctx) = naming_with_table(
        &["docs.example"],
        &[
            ("docs.example", &["127.0.0.1"]),
            ("internal.example", &["127.0.0.1"]),
        ],
    );
    let base = format!("http://docs.example:{port}");
    let cases = [
        (
            "/to-ip",
            format!("refused: 127.0.0.1 is a loopback address (redirected from {base}/to-ip)"),
        ),
        (
            "/to-name",
            format!(
                "refused: internal.example resolves to a loopback address 127.0.0.1 \
                 (redirected from {base}/to-name)"
            ),
        ),
        ("/to-file", "unsupported URL scheme `file`".to_owned()),
        ("/loop", "stopped after 10 redirects".to_owned()),
    ];
    for (path, expected) in cases {
        let output = call(&FetchUrl, json!({"url": format!("{base}{path}")}), &ctx).await;
        assert!(output.is_error, "{path}: {}", output.content);
        assert!(
            output.content.contains(&expected),
            "{path}: {}",
            output.content
        );
    }
}

#[tokio::test]
async fn a_redirect_to_another_host_is_decided_like_a_new_fetch() {
    let server = server_with(vec![("/away", "http://elsewhere.example/")]).await;
    let (_dir, mut ctx) = naming(&["127.0.0.1"]);
    let url = format!("{}/away", server.base);
    for (decision, expected) in [
        (
            FetchDecision::Ask("approval needed".to_owned()),
            "another host, and fetching it needs approval (approval needed); call fetch_url with \
             http://elsewhere.example/ to ask for it",
        ),
        (
            FetchDecision::Deny("denied by a rule".to_owned()),
            "redirects to http://elsewhere.example/: permission denied: denied by a rule",
        ),
    ] {
        ctx.fetch_rules = Arc::new(TestRules {
            named: vec!["127.0.0.1".to_owned()],
            redirect: decision,
        });
        let output = call(&FetchUrl, json!({"url": url}), &ctx).await;
        assert!(output.is_error, "{}", output.content);
        assert!(output.content.contains(expected), "{}", output.content);
    }
}

#[tokio::test]
async fn a_named_host_is_fetched_and_same_host_redirects_followed() {
    let server = server_with(vec![("/moved", "/data")]).await;
    let (_dir, ctx) = naming(&["127.0.0.1"]);
    let output = call(
        &FetchUrl,
        json!({"url": format!("{}/moved", server.base)}),
        &ctx,
    )
    .await;
    assert_eq!(output, ToolOutput::ok("{\"a\":1}"));
}
