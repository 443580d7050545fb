//! One MCP server entry as written (`.mcp.json`, `[mcp_servers.<name>]`, `session/create`) and
//! its resolution into an [`McpServerConfig`]: `${VAR}` and `${VAR:-default}` expanded, the
//! transport chosen, values checked against their bounds. Pure: the environment comes in as a
//! function.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::mcp::{McpOAuth, McpServerConfig, McpSource, McpTransport};

/// One entry as written, in `.mcp.json`, in config.toml or in `session/create` params. The
/// keys are snake_case; `.mcp.json` and `session/create` also accept their camelCase spelling.
/// Other keys (of other tools) are ignored here; config.toml reports them ([`TOML_KEYS`]).
///
/// `Debug` is written by hand: env and header values often hold tokens, and a config may be
/// logged.
#[derive(Clone, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct McpServerEntry {
    /// `stdio`, `http` (also `streamable-http`, `streamableHttp`); absent: stdio with a
    /// `command`, http with a `url`. `sse` is refused as unsupported.
    #[serde(default, rename = "type")]
    pub(crate) kind: Option<String>,
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    pub url: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub(crate) enabled: Option<bool>,
    #[serde(alias = "startupTimeoutSecs")]
    pub(crate) startup_timeout_secs: Option<u64>,
    #[serde(alias = "toolTimeoutSecs")]
    pub tool_timeout_secs: Option<u64>,
    #[serde(alias = "enabledTools")]
    pub(crate) enabled_tools: Option<Vec<String>>,
    #[serde(default, alias = "disabledTools")]
    pub(crate) disabled_tools: Vec<String>,
    /// An HTTP server's OAuth login settings (`client_id`, `scopes`).
    #[serde(default)]
    pub(crate) oauth: Option<OAuthEntry>,
    /// The server may ask the session's model (`sampling/createMessage`); honoured only in the
    /// user's config.toml, so a project's file cannot widen what its servers may do.
    pub(crate) sampling: Option<bool>,
}

/// The `oauth` table of an entry as written (Claude Code writes `clientId`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) struct OAuthEntry {
    #[serde(alias = "clientId")]
    pub(crate) client_id: Option<String>,
    #[serde(default)]
    pub(crate) scopes: Vec<String>,
}

impl std::fmt::Debug for McpServerEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted = |map: &BTreeMap<String, String>| -> BTreeMap<String, &'static str> {
            map.keys().map(|key| (key.clone(), "<redacted>")).collect()
        };
        f.debug_struct("McpServerEntry")
            .field("kind", &self.kind)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &redacted(&self.env))
            .field("cwd", &self.cwd)
            .field("url", &self.url)
            .field("headers", &redacted(&self.headers))
            .field("enabled", &self.enabled)
            .field("startup_timeout_secs", &self.startup_timeout_secs)
            .field("tool_timeout_secs", &self.tool_timeout_secs)
            .field("enabled_tools", &self.enabled_tools)
            .field("disabled_tools", &self.disabled_tools)
            .field("oauth", &self.oauth)
            .field("sampling", &self.sampling)
            .finish()
    }
}

/// The keys config.toml accepts in `[mcp_servers.<name>]`; any other is reported, so a typo
/// does not silently drop a setting.
pub(crate) const TOML_KEYS: &[&str] = &[
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "enabled",
    "startup_timeout_secs",
    "tool_timeout_secs",
    "enabled_tools",
    "disabled_tools",
    "oauth",
    "sampling",
];

/// The longest server name: it becomes part of tool names (`mcp__<server>__<tool>`), which
/// providers cap at 64 characters.
pub(crate) const MAX_SERVER_NAME_CHARS: usize = 64;
/// The longest `startup_timeout_secs`: a server that needs more than ten minutes to answer
/// `initialize` is broken, and a bound keeps the value away from clock overflow.
pub(crate) const MAX_STARTUP_TIMEOUT_SECS: u64 = 10 * 60;
/// The longest `tool_timeout_secs`: a day, far above any interactive tool call.
pub(crate) const MAX_TOOL_TIMEOUT_SECS: u64 = 24 * 60 * 60;
/// The most names `enabled_tools` or `disabled_tools` may list: a server offers tens of tools,
/// not thousands.
pub(crate) const MAX_TOOL_FILTER_NAMES: usize = 1000;

/// Whether `name` may name a server: 1 to [`MAX_SERVER_NAME_CHARS`] of `[A-Za-z0-9_-]`, so it
/// reads the same in tool names, log file names and messages.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the server name is empty; name it with letters, digits, _ or -".to_owned());
    }
    if name.chars().count() > MAX_SERVER_NAME_CHARS {
        return Err(format!(
            "the server name is longer than {MAX_SERVER_NAME_CHARS} characters; use a shorter one"
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "the server name {name:?} contains {bad:?}; use only letters, digits, _ and -"
        ));
    }
    Ok(())
}

/// Where an entry's relative `cwd` is resolved.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RelativeTo<'a> {
    /// The directory of the `.mcp.json` (project entries) or the session's cwd.
    Dir(&'a Path),
    /// Nowhere: the `cwd` must be absolute (config.toml entries).
    AbsoluteOnly,
}

/// Which variables an entry's `${VAR}` may read.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Expansion<'a> {
    /// The user's own entries (config.toml, `session/create`): every variable, everywhere.
    Full,
    /// A project file's: only the variables the user lists in `[mcp] expand_env`, and only in
    /// `env` and `headers` values (a command line is readable by every local user, and a url
    /// goes wherever the file says).
    Project { allowed: &'a [String] },
}

/// `entry` named `name`, resolved with `expansion` of `env`; the error is the reason the entry
/// cannot be used.
pub(crate) fn resolve(
    name: &str,
    entry: &McpServerEntry,
    source: McpSource,
    relative_to: RelativeTo<'_>,
    expansion: Expansion<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<McpServerConfig, String> {
    // `expand` for the command line, cwd and url; `expand_secret` for env and header values.
    let expand_secret = |what: &str, text: &str| expand_scoped(what, text, expansion, true, env);
    let expand = |what: &str, text: &str| expand_scoped(what, text, expansion, false, env);
    let transport = match transport_kind(entry)? {
        Kind::Stdio => {
            let command = entry
                .command
                .as_deref()
                .ok_or("a stdio server needs a command (or give a url with type \"http\")")?;
            let command = expand("command", command)?;
            if command.trim().is_empty() {
                return Err("the command is empty".to_owned());
            }
            let args = entry
                .args
                .iter()
                .enumerate()
                .map(|(index, arg)| expand(&format!("args[{index}]"), arg))
                .collect::<Result<Vec<_>, _>>()?;
            let mut resolved_env = BTreeMap::new();
            for (key, value) in &entry.env {
                check_env_name(key)?;
                resolved_env.insert(key.clone(), expand_secret(&format!("env.{key}"), value)?);
            }
            let cwd = match &entry.cwd {
                None => None,
                Some(cwd) => Some(resolve_cwd(&expand("cwd", cwd)?, relative_to)?),
            };
            for text in std::iter::once(&command)
                .chain(&args)
                .chain(resolved_env.values())
            {
                if text.contains('\0') {
                    return Err("a command, argument or env value contains a NUL byte".to_owned());
                }
            }
            McpTransport::Stdio {
                command,
                args,
                env: resolved_env,
                cwd,
            }
        }
        Kind::Http => {
            let url = entry.url.as_deref().ok_or("an http server needs a url")?;
            let url = expand("url", url)?;
            check_url(&url)?;
            let mut headers = BTreeMap::new();
            for (key, value) in &entry.headers {
                let value = expand_secret(&format!("headers.{key}"), value)?;
                check_header(key, &value)?;
                headers.insert(key.clone(), value);
            }
            let oauth = match &entry.oauth {
                None => McpOAuth::default(),
                Some(oauth) => McpOAuth {
                    client_id: match &oauth.client_id {
                        Some(id) => Some(expand("oauth.client_id", id)?),
                        None => None,
                    },
                    scopes: oauth.scopes.clone(),
                },
            };
            McpTransport::Http {
                url,
                headers,
                oauth,
            }
        }
    };
    if entry.oauth.is_some() && matches!(transport, McpTransport::Stdio { .. }) {
        return Err(
            "oauth is for http servers; a stdio server takes its secrets in env".to_owned(),
        );
    }
    Ok(McpServerConfig {
        name: name.to_owned(),
        transport,
        enabled: entry.enabled.unwrap_or(true),
        startup_timeout: timeout(
            "startup_timeout_secs",
            entry.startup_timeout_secs,
            crate::mcp::DEFAULT_STARTUP_TIMEOUT,
            MAX_STARTUP_TIMEOUT_SECS,
        )?,
        tool_timeout: timeout(
            "tool_timeout_secs",
            entry.tool_timeout_secs,
            crate::mcp::DEFAULT_TOOL_TIMEOUT,
            MAX_TOOL_TIMEOUT_SECS,
        )?,
        enabled_tools: match &entry.enabled_tools {
            Some(names) => Some(tool_names("enabled_tools", names)?),
            None => None,
        },
        disabled_tools: tool_names("disabled_tools", &entry.disabled_tools)?,
        // A project's `.mcp.json` or a client's entry cannot let a server use the model.
        sampling: entry.sampling == Some(true) && matches!(source, McpSource::User { .. }),
        source,
    })
}

/// [`expand`] of `text` (the value of `what`) as `expansion` allows: everything for the user's
/// own entries; in a project's, only variables the user listed and only in `secret_ok` places
/// (env and header values). A variable refused reads as unset, so `${VAR:-default}` still
/// works, and `${VAR}` says why it was not expanded and what to do.
fn expand_scoped(
    what: &str,
    text: &str,
    expansion: Expansion<'_>,
    secret_ok: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let allowed = match expansion {
        Expansion::Full => {
            return expand(text, env).map_err(|why| format!("{what}: {why}"));
        }
        Expansion::Project { allowed } => allowed,
    };
    let refused = std::cell::RefCell::new(None::<String>);
    let scoped = |name: &str| {
        if secret_ok && allowed.iter().any(|listed| listed == name) {
            env(name)
        } else {
            refused.borrow_mut().get_or_insert_with(|| name.to_owned());
            None
        }
    };
    expand(text, &scoped).map_err(|why| match refused.take() {
        Some(name) if secret_ok => {
            let listed = if allowed.is_empty() {
                "none are listed".to_owned()
            } else {
                format!("listed: {}", allowed.join(", "))
            };
            format!(
                "{what}: ${{{name}}} is not expanded: a project's .mcp.json may only use the \
                 variables listed in `[mcp] expand_env` of your config ({listed}); add {name} \
                 there to pass it to this server"
            )
        }
        Some(name) => format!(
            "{what}: ${{{name}}} is not expanded: a project's .mcp.json never expands \
             variables into command, args, cwd or url (a command line is readable by every \
             local user); pass secrets through env, with the variable listed in \
             `[mcp] expand_env` of your config"
        ),
        None => format!("{what}: {why}"),
    })
}

/// `text` with every `${VAR}` replaced by the variable's value and every `${VAR:-default}` by
/// the value, or `default` when the variable is unset or empty. An unset `${VAR}` is an error
/// naming it; a `$` not followed by `{` is kept as written.
pub(crate) fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("{:?} has a ${{ without its closing }}", text))?;
        let inner = &after[..end];
        let (variable, default) = match inner.split_once(":-") {
            Some((variable, default)) => (variable, Some(default)),
            None => (inner, None),
        };
        let valid = variable
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && variable
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!(
                "${{{inner}}} does not name an environment variable (letters, digits and _)"
            ));
        }
        match (env(variable), default) {
            (Some(value), Some(default)) if value.is_empty() => out.push_str(default),
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                return Err(format!(
                    "environment variable {variable} is not set; set it for the daemon, or write \
                     ${{{variable}:-default}}"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The transport an entry asks for.
pub enum Kind {
    Stdio,
    Http,
}

/// The transport `entry` asks for, or why it names none usable.
pub fn transport_kind(entry: &McpServerEntry) -> Result<Kind, String> {
    match entry.kind.as_deref() {
        Some("stdio") => Ok(Kind::Stdio),
        Some("http" | "streamable-http" | "streamableHttp") => Ok(Kind::Http),
        Some("sse") => Err(
            "the sse transport is not supported; use the server's streamable HTTP endpoint \
             (type \"http\")"
                .to_owned(),
        ),
        Some(other) => Err(format!("unknown type {other:?}; use \"stdio\" or \"http\"")),
        None => match (&entry.command, &entry.url) {
            (Some(_), None) => Ok(Kind::Stdio),
            (None, Some(_)) => Ok(Kind::Http),
            (Some(_), Some(_)) => Err(
                "the entry has both a command and a url; set type to \"stdio\" or \"http\""
                    .to_owned(),
            ),
            (None, None) => {
                Err("the entry has neither a command (stdio) nor a url (http)".to_owned())
            }
        },
    }
}

fn resolve_cwd(cwd: &str, relative_to: RelativeTo<'_>) -> Result<PathBuf, String> {
    let path = PathBuf::from(cwd);
    if path.is_absolute() {
        return Ok(path);
    }
    match relative_to {
        RelativeTo::Dir(dir) => Ok(dir.join(path)),
        RelativeTo::AbsoluteOnly => Err(format!(
            "cwd {cwd:?} is relative; config.toml entries need an absolute cwd"
        )),
    }
}

fn check_env_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.contains('=') || name.contains('\0') {
        return Err(format!(
            "env key {name:?} is not a variable name (empty, or contains = or NUL)"
        ));
    }
    Ok(())
}

fn check_url(url: &str) -> Result<(), String> {
    let parsed =
        reqwest::Url::parse(url).map_err(|why| format!("url {url:?} is not a url: {why}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("url {url:?} is not http or https"));
    }
    Ok(())
}

fn check_header(name: &str, value: &str) -> Result<(), String> {
    reqwest::header::HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("headers: {name:?} is not a valid header name"))?;
    reqwest::header::HeaderValue::from_str(value)
        .map_err(|_| format!("headers.{name}: the value is not a valid header value"))?;
    Ok(())
}

fn timeout(key: &str, value: Option<u64>, default: Duration, max: u64) -> Result<Duration, String> {
    match value {
        None => Ok(default),
        Some(0) => Err(format!("{key} must be at least 1")),
        Some(secs) if secs > max => Err(format!(
            "{key} = {secs} is too large (at most {max} seconds); remove it for the default ({} \
             seconds)",
            default.as_secs()
        )),
        Some(secs) => Ok(Duration::from_secs(secs)),
    }
}

fn tool_names(key: &str, names: &[String]) -> Result<Vec<String>, String> {
    if names.len() > MAX_TOOL_FILTER_NAMES {
        return Err(format!(
            "{key} lists {} tools (at most {MAX_TOOL_FILTER_NAMES})",
            names.len()
        ));
    }
    if names.iter().any(|name| name.trim().is_empty()) {
        return Err(format!("{key} has an empty tool name"));
    }
    Ok(names.to_vec())
}

#[cfg(test)]
#[path = "entry_tests.rs"]
mod tests;
