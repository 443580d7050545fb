//! Tests of fetch_url against a local HTTP server.

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::tools::test_support::{call, workspace};

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
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
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
            let (status, content_type, body) = match path.as_str() {
                "/page" => (
                    "200 OK",
                    "text/html; charset=utf-8",
                    "<html><head><style>p{}</style><script>var x = '<p>';</script></head>\
                     <body><h1>Title</h1><!-- hidden --><p>Fish &amp; chips</p></body></html>"
                        .to_owned(),
                ),
                "/data" => ("200 OK", "application/json", "{\"a\":1}".to_owned()),
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
    let (_dir, ctx) = workspace();
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
    let (_dir, ctx) = workspace();
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
    let (_dir, mut ctx) = workspace();
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
    let (_dir, ctx) = workspace();
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
