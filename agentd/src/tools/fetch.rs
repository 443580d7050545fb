//! fetch_url: GET an http(s) URL and return its text, with a size cap, a timeout, text content
//! types only, and HTML crudely reduced to its text.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{ToolContext, ToolOutput, TypedTool, str_field};

/// Fetches a web page or text resource.
#[derive(Clone, Copy, Debug, Default)]
pub struct FetchUrl;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct FetchUrlParams {
    /// The http or https URL to fetch.
    url: String,
}

impl TypedTool for FetchUrl {
    type Params = FetchUrlParams;
    const NAME: &'static str = "fetch_url";
    const DESCRIPTION: &'static str = "Fetch an http(s) URL with GET and return its text: HTML pages reduced to their text \
         (tags, scripts and styles removed), JSON, XML and plain text as they are. Other content \
         types (images, PDFs, archives) are refused. At most 1 MiB is read, and the request \
         times out after 30 seconds. Use it for documentation and API responses; it cannot log \
         in or run JavaScript.";
    const READ_ONLY: bool = true;

    fn summary(&self, input: &serde_json::Value) -> String {
        str_field(input, "url").to_owned()
    }

    fn run<'a>(
        &'a self,
        params: FetchUrlParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            tokio::select! {
                output = fetch(params, ctx) => output.unwrap_or_else(ToolOutput::error),
                () = ctx.cancel.cancelled() => ToolOutput::error("cancelled"),
            }
        })
    }
}

async fn fetch(params: FetchUrlParams, ctx: &ToolContext) -> Result<ToolOutput, String> {
    let url = reqwest::Url::parse(params.url.trim())
        .map_err(|error| format!("invalid URL `{}`: {error}", params.url))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "unsupported URL scheme `{}`; only http and https URLs can be fetched",
            url.scheme()
        ));
    }
    let mut response = ctx
        .http
        .get(url.clone())
        .timeout(ctx.limits.fetch_timeout)
        .send()
        .await
        .map_err(|error| format!("fetching {url} failed: {}", error_chain(&error)))?;
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if !content_type.is_empty() && !is_text(&content_type) {
        return Err(format!(
            "{url} returned content type `{content_type}`, which is not text; fetch_url only \
             returns text, HTML, JSON and XML"
        ));
    }

    let max = ctx.limits.fetch_max_bytes;
    let mut body = Vec::new();
    let mut cut = false;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| format!("reading {url} failed: {}", error_chain(&error)))?
    {
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    if content_type.is_empty() && body.iter().take(8192).any(|&byte| byte == 0) {
        return Err(format!(
            "{url} returned binary data; fetch_url only returns text"
        ));
    }

    let raw = String::from_utf8_lossy(&body);
    let is_html = content_type.contains("html")
        || (content_type.is_empty() && raw.trim_start().starts_with('<'));
    let mut text = if is_html {
        html_to_text(&raw)
    } else {
        raw.into_owned()
    };
    if cut {
        text.push_str(&format!("\n[… cut at {max} bytes]"));
    }
    if !status.is_success() {
        return Err(format!("{url} returned HTTP {status}\n{text}"));
    }
    Ok(ToolOutput::ok(text))
}

fn is_text(content_type: &str) -> bool {
    let mime = content_type.split(';').next().unwrap_or("").trim();
    mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || matches!(
            mime,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
                | "application/x-yaml"
                | "application/yaml"
                | "application/toml"
                | "application/x-sh"
        )
}

/// The error and its sources ("error sending request: connection refused").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Crude HTML to text: drops comments, `<script>`/`<style>`/`<head>`-like blocks and tags, turns
/// block tags into line breaks, decodes the common entities and collapses blank space.
pub(crate) fn html_to_text(html: &str) -> String {
    const SKIPPED_BLOCKS: [&str; 5] = ["script", "style", "noscript", "svg", "template"];
    const BLOCK_TAGS: [&str; 16] = [
        "p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "section",
        "article", "header", "footer",
    ];
    let lower = html.to_ascii_lowercase();
    let mut out = String::with_capacity(html.len() / 2);
    let mut index = 0;
    while index < html.len() {
        let Some(offset) = html[index..].find('<') else {
            out.push_str(&html[index..]);
            break;
        };
        out.push_str(&html[index..index + offset]);
        index += offset;
        if lower[index..].starts_with("<!--") {
            index = lower[index..]
                .find("-->")
                .map_or(html.len(), |end| index + end + 3);
            continue;
        }
        let Some(tag_end) = html[index..].find('>').map(|end| index + end + 1) else {
            out.push_str(&html[index..]);
            break;
        };
        let name: String = lower[index + 1..tag_end]
            .trim_start_matches('/')
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect();
        index = tag_end;
        if SKIPPED_BLOCKS.contains(&name.as_str()) && !lower[..tag_end].ends_with("/>") {
            let closing = format!("</{name}");
            index = lower[index..]
                .find(&closing)
                .and_then(|start| {
                    lower[index + start..]
                        .find('>')
                        .map(|end| index + start + end + 1)
                })
                .unwrap_or(html.len());
        } else if BLOCK_TAGS.contains(&name.as_str()) {
            out.push('\n');
        }
    }
    let decoded = decode_entities(&out);
    let mut text = String::with_capacity(decoded.len());
    let mut blank_run = 0;
    for line in decoded.lines() {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if line.is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
        } else {
            blank_run = 0;
        }
        text.push_str(&line);
        text.push('\n');
    }
    text.trim().to_owned()
}

fn decode_entities(text: &str) -> String {
    text.replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
#[path = "fetch_tests.rs"]
mod tests;
