//! fetch_url: GET an http(s) URL and return its text, with a size cap, a timeout, text content
//! types only, and HTML crudely reduced to its text. Loopback, private, link-local and metadata
//! addresses are refused in every mode, at every redirect hop, unless an allow rule names the
//! host (see `fetch_access`); a redirect to another host is decided by the rules like a new
//! fetch.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use std::net::IpAddr;

use super::fetch_access::{FetchDecision, Refusal, check_addresses};
use super::{ToolContext, ToolOutput, TypedTool, str_field};

/// Fetches a web page or text resource.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FetchUrl;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct FetchUrlParams {
    /// The http(s) URL.
    url: String,
}

impl TypedTool for FetchUrl {
    type Params = FetchUrlParams;
    const NAME: &'static str = "fetch_url";
    const DESCRIPTION: &'static str = "GET an http(s) URL as text: HTML reduced to text; JSON, XML, plain text as is; \
         other types refused. At most 1 MiB and 30 s; no login or JavaScript. Private, \
         loopback, link-local and metadata addresses are refused (redirects too) unless a \
         `WebFetch(domain:HOST)` rule allows the host.";
    const READ_ONLY: bool = true;

    fn summary(&self, input: &serde_json::Value) -> String {
        str_field(input, "url").to_owned()
    }

    fn run<'a>(
        &'a self,
        params: FetchUrlParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        Box::pin(async move {
            tokio::select! {
                output = fetch(params, ctx) => output,
                () = ctx.cancel.cancelled() => Err("cancelled".to_owned()),
            }
        })
    }
}

async fn fetch(params: FetchUrlParams, ctx: &ToolContext) -> Result<ToolOutput, String> {
    let url = reqwest::Url::parse(params.url.trim())
        .map_err(|error| format!("invalid URL `{}`: {error}", params.url))?;
    check_scheme(&url)?;
    let (url, mut response) = follow(url, ctx).await?;
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

/// GETs `url`, following redirects by hand so that every hop is checked: its address (a host no
/// allow rule names must resolve to public addresses only) and, when it changes host, the rules
/// as for a new fetch. Returns the final URL and its response.
async fn follow(
    mut url: reqwest::Url,
    ctx: &ToolContext,
) -> Result<(reqwest::Url, reqwest::Response), String> {
    let deadline = tokio::time::Instant::now() + ctx.limits.fetch_timeout;
    let mut redirected_from: Option<reqwest::Url> = None;
    let mut redirects = 0;
    loop {
        let hop = redirected_from
            .as_ref()
            .map(|from| format!(" (redirected from {from})"))
            .unwrap_or_default();
        let host = url.host_str().unwrap_or("").to_ascii_lowercase();
        let named = ctx.fetch_rules.names_host(&host);
        if !named && let Some(refusal) = literal_refusal(&url) {
            return Err(refused(&refusal, &hop));
        }
        let client = if named {
            &ctx.fetch.any_address
        } else {
            &ctx.fetch.public_only
        };
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        let response = client
            .get(url.clone())
            .timeout(remaining)
            .send()
            .await
            .map_err(|error| match find_refusal(&error) {
                Some(refusal) => refused(refusal, &hop),
                None => format!("fetching {url}{hop} failed: {}", error_chain(&error)),
            })?;
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .filter(|_| response.status().is_redirection());
        let Some(location) = location else {
            return Ok((url, response));
        };
        let location = String::from_utf8_lossy(location.as_bytes()).into_owned();
        let next = url.join(&location).map_err(|error| {
            format!("{url} redirects to an invalid location `{location}`: {error}")
        })?;
        redirects += 1;
        if redirects > ctx.limits.fetch_max_redirects {
            return Err(format!(
                "stopped after {} redirects ({url} redirects to {next}); fetch the final URL \
                 directly",
                ctx.limits.fetch_max_redirects
            ));
        }
        check_scheme(&next).map_err(|why| format!("{url} redirects to {next}: {why}"))?;
        if next.host_str() != url.host_str() {
            let rules = ctx.fetch_rules.clone();
            let target = next.to_string();
            let decision = tokio::task::spawn_blocking(move || rules.decide(&target))
                .await
                .map_err(|_| format!("checking the redirect from {url} to {next} failed"))?;
            match decision {
                FetchDecision::Allow => {}
                FetchDecision::Ask(reason) => {
                    return Err(format!(
                        "refused: {url} redirects to {next}, another host, and fetching it needs \
                         approval ({reason}); call fetch_url with {next} to ask for it"
                    ));
                }
                FetchDecision::Deny(reason) => {
                    return Err(format!(
                        "refused: {url} redirects to {next}: permission denied: {reason}"
                    ));
                }
            }
        }
        redirected_from = Some(std::mem::replace(&mut url, next));
    }
}

fn check_scheme(url: &reqwest::Url) -> Result<(), String> {
    if matches!(url.scheme(), "http" | "https") {
        Ok(())
    } else {
        Err(format!(
            "unsupported URL scheme `{}`; only http and https URLs can be fetched",
            url.scheme()
        ))
    }
}

/// The refusal of a URL whose host is written as an address (`127.1`, `0x7f000001`, `[::1]`,
/// all normalised by the URL parser): the resolver never sees those.
fn literal_refusal(url: &reqwest::Url) -> Option<Refusal> {
    let host = url.host_str()?;
    let address: IpAddr = host
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(host)
        .parse()
        .ok()?;
    check_addresses(host, &[address])
}

/// The resolver's refusal inside a request error, if that is why it failed.
fn find_refusal<'e>(error: &'e (dyn std::error::Error + 'static)) -> Option<&'e Refusal> {
    let mut source = Some(error);
    while let Some(cause) = source {
        if let Some(refusal) = cause.downcast_ref::<Refusal>() {
            return Some(refusal);
        }
        source = cause.source();
    }
    None
}

/// The tool result text of a refusal, with what to do about it.
fn refused(refusal: &Refusal, hop: &str) -> String {
    let host = &refusal.host;
    format!(
        "refused: {refusal}{hop}; fetch_url does not reach loopback, private, link-local or \
         metadata addresses unless an allow rule names the host: allow it with a \
         `WebFetch(domain:{host})` rule"
    )
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
