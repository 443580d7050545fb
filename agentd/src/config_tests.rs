//! Table-driven tests of config loading and provider resolution.

use std::collections::HashMap;
use std::io::Write;

use super::*;

fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

fn write_config(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(text.as_bytes()).unwrap();
    file
}

fn load_with(text: Option<&str>, vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let env = env_of(vars);
    match text {
        Some(text) => {
            let file = write_config(text);
            load(Some(file.path()), &env)
        }
        None => load(None, &env),
    }
}

/// Resolves `model` and returns "provider kind base_url model key" or the error text.
fn resolved(config: &Config, model: Option<&str>) -> String {
    match config.resolve_provider(model) {
        Ok(p) => format!(
            "{} {:?} {} {} key={}",
            p.name,
            p.kind,
            p.base_url,
            p.model,
            p.api_key.as_deref().unwrap_or("-")
        ),
        Err(error) => format!("error: {error}"),
    }
}

/// (config file, environment, model asked for, expected resolution)
type Case = (
    Option<&'static str>,
    &'static [(&'static str, &'static str)],
    Option<&'static str>,
    &'static str,
);

const TWO_PROVIDERS: &str = r#"
max_steps = 7
[providers.local]
kind = "openai"
base_url = "http://localhost:11434/v1/"
model = "qwen3"
context_window = 32768
[providers.claude]
kind = "anthropic"
api_key_env = "MY_CLAUDE_KEY"
model = "claude-opus-4"
max_output_tokens = 4096
max_retries = 2
"#;

#[test]
fn resolve_provider_table() {
    let cases: &[Case] = &[
        // (file, env, model asked, expected)
        (
            None,
            &[],
            None,
            "error: no provider configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY, or add [providers.NAME] to config.toml",
        ),
        (
            None,
            &[("OPENAI_API_KEY", "sk-1")],
            None,
            "openai OpenAi https://api.openai.com/v1 gpt-4o-mini key=sk-1",
        ),
        (
            None,
            &[
                ("OPENAI_API_KEY", "x"),
                ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/"),
            ],
            Some("llama3"),
            "openai OpenAi http://127.0.0.1:9/v1 llama3 key=x",
        ),
        (
            None,
            &[("ANTHROPIC_API_KEY", "a"), ("AGENTD_MODEL", "claude-haiku")],
            None,
            "anthropic Anthropic https://api.anthropic.com claude-haiku key=a",
        ),
        (
            None,
            &[("ANTHROPIC_API_KEY", "a"), ("OPENAI_API_KEY", "o")],
            None,
            "error: several providers configured (anthropic, openai): set default_provider in config.toml or AGENTD_PROVIDER, or pick one with the model name PROVIDER:MODEL",
        ),
        (
            None,
            &[
                ("ANTHROPIC_API_KEY", "a"),
                ("OPENAI_API_KEY", "o"),
                ("AGENTD_PROVIDER", "anthropic"),
            ],
            None,
            "anthropic Anthropic https://api.anthropic.com claude-sonnet-4-5 key=a",
        ),
        (
            None,
            &[("ANTHROPIC_API_KEY", "a"), ("OPENAI_API_KEY", "o")],
            Some("openai"),
            "openai OpenAi https://api.openai.com/v1 gpt-4o-mini key=o",
        ),
        (
            None,
            &[("ANTHROPIC_API_KEY", "a"), ("OPENAI_API_KEY", "o")],
            Some("openai:gpt-5"),
            "openai OpenAi https://api.openai.com/v1 gpt-5 key=o",
        ),
        (
            None,
            &[("OPENAI_API_KEY", "")],
            None,
            "error: no provider configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY, or add [providers.NAME] to config.toml",
        ),
        (
            None,
            &[("OPENAI_API_KEY", "o"), ("AGENTD_PROVIDER", "nope")],
            None,
            "error: unknown provider \"nope\" (from default_provider / AGENTD_PROVIDER); configured providers: openai",
        ),
        // A file with two providers and no default.
        (
            Some(TWO_PROVIDERS),
            &[("MY_CLAUDE_KEY", "ck")],
            Some("claude"),
            "claude Anthropic https://api.anthropic.com claude-opus-4 key=ck",
        ),
        (
            Some(TWO_PROVIDERS),
            &[],
            Some("local"),
            "local OpenAi http://localhost:11434/v1 qwen3 key=-",
        ),
        (
            Some(TWO_PROVIDERS),
            &[],
            Some("local:qwen3:8b"),
            "local OpenAi http://localhost:11434/v1 qwen3:8b key=-",
        ),
        // An unknown `provider:` prefix is refused (a typo would otherwise reach the default
        // provider as a model name); a model with ':' is named with its provider first.
        (
            Some(TWO_PROVIDERS),
            &[("AGENTD_PROVIDER", "local")],
            Some("qwen3:8b"),
            "error: unknown provider \"qwen3\" in model \"qwen3:8b\"; configured providers: claude, local; name a model whose name contains ':' with its provider first (PROVIDER:MODEL)",
        ),
        (
            None,
            &[("OPENAI_API_KEY", "o")],
            Some("opnai:gpt-5"),
            "error: unknown provider \"opnai\" in model \"opnai:gpt-5\"; configured providers: openai; name a model whose name contains ':' with its provider first (PROVIDER:MODEL)",
        ),
        // File providers win over env quick start with the same name; other env providers add.
        (
            Some("[providers.openai]\nkind = \"openai\"\nmodel = \"gpt-5\"\n"),
            &[("OPENAI_API_KEY", "o"), ("AGENTD_MODEL", "ignored")],
            None,
            "openai OpenAi https://api.openai.com/v1 gpt-5 key=o",
        ),
        (
            Some(
                "default_provider = \"anthropic\"\n[providers.anthropic]\nkind = \"anthropic\"\nmodel = \"m\"\n",
            ),
            &[("OPENAI_API_KEY", "o")],
            None,
            "anthropic Anthropic https://api.anthropic.com m key=-",
        ),
    ];
    for (index, (file, vars, model, expected)) in cases.iter().enumerate() {
        let config = load_with(*file, vars).unwrap_or_else(|e| panic!("case {index}: {e}"));
        assert_eq!(resolved(&config, *model), *expected, "case {index}");
    }
}

#[test]
fn a_provider_whose_key_variable_is_unset_is_refused_with_the_variable_named() {
    let config = load_with(Some(TWO_PROVIDERS), &[]).unwrap();
    let claude = config.resolve_provider(Some("claude")).unwrap();
    let error = claude.require_key().unwrap_err().to_string();
    assert!(
        error.contains("\"claude\"") && error.contains("MY_CLAUDE_KEY"),
        "{error}"
    );
    assert!(error.contains("restart the daemon"), "{error}");
    // A custom endpoint needs no key; a set variable is fine.
    config
        .resolve_provider(Some("local"))
        .unwrap()
        .require_key()
        .unwrap();
    let with_key = load_with(Some(TWO_PROVIDERS), &[("MY_CLAUDE_KEY", "ck")]).unwrap();
    with_key
        .resolve_provider(Some("claude"))
        .unwrap()
        .require_key()
        .unwrap();
}

#[test]
fn file_values_and_defaults() {
    let config = load_with(Some(TWO_PROVIDERS), &[]).unwrap();
    assert_eq!(config.max_steps, 7);
    assert_eq!(config.tool_output_max_chars, DEFAULT_TOOL_OUTPUT_MAX_CHARS);
    assert!(config.source.is_some());
    let local = &config.providers["local"];
    assert_eq!(local.context_window, Some(32768));
    assert_eq!(local.api_key_env, None, "custom endpoints need no key");
    assert_eq!(local.max_retries, DEFAULT_MAX_RETRIES);
    assert_eq!(
        local.stream_idle_timeout_secs,
        DEFAULT_STREAM_IDLE_TIMEOUT_SECS
    );
    let claude = &config.providers["claude"];
    assert_eq!(claude.api_key_env.as_deref(), Some("MY_CLAUDE_KEY"));
    assert_eq!(claude.api_key, None, "unset key env is not a load error");
    assert_eq!(claude.max_output_tokens, Some(4096));
    assert_eq!(claude.max_retries, 2);
}

#[test]
fn missing_file_is_env_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let config = load(Some(&path), &env_of(&[])).unwrap();
    assert!(config.source.is_none());
    assert!(config.providers.is_empty());
    assert_eq!(config.max_steps, DEFAULT_MAX_STEPS);
    let error = config.resolve_provider(None).unwrap_err().to_string();
    assert!(
        error.ends_with(&format!("add [providers.NAME] to {}", path.display())),
        "{error}"
    );
}

#[test]
fn bad_files_report_where() {
    let cases: &[(&str, &str)] = &[
        // (file, expected error after "<path>:")
        (
            "max_steps = 5\nmax_stepz = 6\n",
            "2:1: unknown field `max_stepz`",
        ),
        (
            "[providers.a]\nkind = \"openai\"\nmodle = \"x\"\n",
            "3:1: unknown field `modle`",
        ),
        (
            "[providers.a]\nkind = \"gemini\"\nmodel = \"x\"\n",
            "2:8: unknown variant `gemini`",
        ),
        (
            "max_steps = \"many\"\n",
            "1:13: invalid type: string \"many\", expected u32",
        ),
        ("[providers.a\n", "1:13: "),
        (
            "[providers.a]\nkind = \"openai\"\n",
            "1:1: missing field `model`",
        ),
        ("max_steps = 0\n", " max_steps must be at least 1"),
        (
            "[permissions]\napproval_timeout_secs = 9223372036854775807\n",
            " permissions.approval_timeout_secs = 9223372036854775807 is too large (at most 604800 seconds); set a smaller value, or remove it for the default (600 seconds)",
        ),
        (
            "[providers.a]\nkind = \"openai\"\nmodel = \"m\"\nretry_max_delay_ms = 18446744073709551\n",
            " providers.a.retry_max_delay_ms = 18446744073709551 is too large (at most 3600000 milliseconds)",
        ),
        (
            "[providers.a]\nkind = \"openai\"\nmodel = \"m\"\nretry_base_delay_ms = 3600001\n",
            " providers.a.retry_base_delay_ms = 3600001 is too large",
        ),
        (
            "[providers.a]\nkind = \"openai\"\nmodel = \"m\"\nstream_idle_timeout_secs = 3601\n",
            " providers.a.stream_idle_timeout_secs = 3601 is too large (at most 3600 seconds)",
        ),
        (
            "[llm]\nstream_idle_secs = 3601\n",
            " llm.stream_idle_secs = 3601 is too large (at most 3600 seconds)",
        ),
        (
            "[llm]\nstream_idle_secs = 0\n",
            " llm.stream_idle_secs must be at least 1",
        ),
        (
            "default_provider = \"x\"\n[providers.a]\nkind = \"openai\"\nmodel = \"m\"\n",
            " default_provider \"x\" is not one of [providers.*] (a)",
        ),
    ];
    for (text, expected) in cases {
        let file = write_config(text);
        let error = load(Some(file.path()), &env_of(&[]))
            .unwrap_err()
            .to_string();
        let prefix = format!("{}:", file.path().display());
        let rest = error
            .strip_prefix(&prefix)
            .unwrap_or_else(|| panic!("{error}"));
        assert!(
            rest.starts_with(expected),
            "for {text:?}: got {error:?}, want …{expected:?}"
        );
    }
}

#[test]
fn debug_output_hides_the_key() {
    let config = load(None, &env_of(&[("OPENAI_API_KEY", "sk-secret")])).unwrap();
    let text = format!("{config:?}");
    assert!(!text.contains("sk-secret"), "{text}");
    assert!(text.contains("<redacted>"), "{text}");
    // Nor the tokens of MCP servers' env and headers.
    let config = load_with(
        Some(
            "[mcp_servers.gh]\ncommand = \"gh-mcp\"\nenv = { GITHUB_TOKEN = \"ghp-secret\" }\n\
             [mcp_servers.docs]\nurl = \"https://h/mcp\"\nheaders = { Authorization = \"Bearer t-secret\" }\n",
        ),
        &[],
    )
    .unwrap();
    let text = format!("{config:?}");
    assert!(
        text.contains("GITHUB_TOKEN") && text.contains("Authorization"),
        "{text}"
    );
    assert!(
        !text.contains("ghp-secret") && !text.contains("t-secret"),
        "{text}"
    );
}

#[test]
fn session_idle_unload_is_read_and_bounded() {
    let default = load_with(Some(""), &[]).unwrap();
    assert_eq!(
        default.session_idle_unload,
        std::time::Duration::from_secs(DEFAULT_SESSION_IDLE_UNLOAD_SECS)
    );
    let set = load_with(Some("[sessions]\nidle_unload_secs = 5\n"), &[]).unwrap();
    assert_eq!(set.session_idle_unload, std::time::Duration::from_secs(5));
    let cases = [
        ("0", "sessions.idle_unload_secs must be at least 1"),
        (
            "9223372036854775807",
            "sessions.idle_unload_secs = 9223372036854775807 is too large (at most 2592000 seconds)",
        ),
        (
            "2592001",
            "sessions.idle_unload_secs = 2592001 is too large (at most 2592000 seconds)",
        ),
    ];
    for (bad, expected) in cases {
        let text = format!("[sessions]\nidle_unload_secs = {bad}\n");
        let error = load_with(Some(&text), &[]).unwrap_err().to_string();
        assert!(error.contains(expected), "{error}");
    }
    let longest = load_with(Some("[sessions]\nidle_unload_secs = 2592000\n"), &[]).unwrap();
    assert_eq!(
        longest.session_idle_unload,
        std::time::Duration::from_secs(MAX_SESSION_IDLE_UNLOAD_SECS)
    );
}

#[test]
fn session_budgets_are_read_and_checked() {
    let default = load_with(Some(""), &[]).unwrap();
    assert_eq!(default.session_budgets, Default::default());
    let set = load_with(
        Some("[sessions]\nmax_cost_usd = 2.5\nmax_tokens = 200000\nmax_run_secs = 900\n"),
        &[],
    )
    .unwrap();
    assert_eq!(
        set.session_budgets,
        agentd_agent::budget::SessionBudgets {
            max_cost_usd: Some(2.5),
            max_tokens: Some(200_000),
            max_run_secs: Some(900),
        }
    );
    for (bad, expected) in [
        (
            "max_cost_usd = 0.0",
            "sessions.max_cost_usd = 0 is not a budget",
        ),
        ("max_cost_usd = nan", "is not a budget"),
        ("max_tokens = 0", "sessions.max_tokens must be at least 1"),
        (
            "max_run_secs = 0",
            "sessions.max_run_secs must be at least 1",
        ),
        (
            "max_run_secs = 2592001",
            "sessions.max_run_secs = 2592001 is too large",
        ),
    ] {
        let text = format!("[sessions]\n{bad}\n");
        let error = load_with(Some(&text), &[]).unwrap_err().to_string();
        assert!(error.contains(expected), "{bad}: {error}");
    }
}

#[test]
fn sandbox_section_and_its_defaults() {
    let config = load_with(None, &[]).unwrap();
    assert_eq!(
        config.sandbox,
        agentd_policy::process::sandbox::SandboxConfig::default()
    );
    assert!(config.sandbox.enabled && config.sandbox.network);
    let config = load_with(
        Some(
            "[sandbox]\nenabled = false\nnetwork = false\nwritable = [\"/srv/cache\", \"~/.cargo\"]\npass_env = [\"CARGO_HOME\"]\n",
        ),
        &[("HOME", "/home/me")],
    )
    .unwrap();
    assert!(!config.sandbox.enabled && !config.sandbox.network);
    assert_eq!(
        config.sandbox.writable,
        [
            std::path::PathBuf::from("/srv/cache"),
            std::path::PathBuf::from("/home/me/.cargo")
        ]
    );
    assert_eq!(config.sandbox.pass_env, ["CARGO_HOME"]);
    let error = load_with(Some("[sandbox]\nwritable = [\"cache\"]\n"), &[])
        .unwrap_err()
        .to_string();
    assert!(
        error.ends_with(
            "sandbox.writable: cache is not an absolute path; write the full path (or ~/…)"
        ),
        "{error}"
    );
}

#[test]
fn context_limits_are_read_and_checked() {
    let default = load_with(Some(""), &[]).unwrap();
    assert_eq!(default.context, ContextConfig::default());
    assert_eq!(default.context.soft_limit_percent, 50);
    assert_eq!(default.context.hard_limit_percent, 80);
    let set = load_with(
        Some("[context]\nsoft_limit_percent = 40\nhard_limit_percent = 90\n"),
        &[],
    )
    .unwrap();
    assert_eq!(
        set.context,
        ContextConfig {
            soft_limit_percent: 40,
            hard_limit_percent: 90
        }
    );
    for bad in [
        "soft_limit_percent = 0",
        "hard_limit_percent = 101",
        "soft_limit_percent = 90\nhard_limit_percent = 60",
    ] {
        let text = format!("[context]\n{bad}\n");
        let error = load_with(Some(&text), &[]).unwrap_err().to_string();
        assert!(
            error.contains("each must be between 1 and 100, the soft limit at most the hard one"),
            "{error}"
        );
    }
    let error = load_with(Some("[context]\nsoft_limit_percent = 300\n"), &[])
        .unwrap_err()
        .to_string();
    assert!(error.contains(":2:"), "{error}");
}

#[test]
fn mcp_settings_are_read_and_bounded() {
    let default = load_with(Some(""), &[]).unwrap();
    assert_eq!(default.mcp.idle_stop, agentd_work::mcp::DEFAULT_IDLE_STOP);
    assert_eq!(
        default.mcp.startup_grace,
        agentd_work::mcp::DEFAULT_STARTUP_GRACE
    );
    assert_eq!(default.mcp.idle_stop.as_secs(), 600);
    assert_eq!(default.mcp.startup_grace.as_secs(), 5);
    let set = load_with(
        Some("[mcp]\nidle_stop_secs = 30\nstartup_grace_secs = 0\n"),
        &[],
    )
    .unwrap();
    assert_eq!(set.mcp.idle_stop, std::time::Duration::from_secs(30));
    assert_eq!(set.mcp.startup_grace, std::time::Duration::ZERO);
    // (the [mcp] body, a part of the error)
    let cases = [
        (
            "idle_stop_secs = 0",
            "mcp.idle_stop_secs must be at least 1",
        ),
        (
            "idle_stop_secs = 99999999999",
            "mcp.idle_stop_secs = 99999999999 is too large",
        ),
        (
            "startup_grace_secs = 301",
            "mcp.startup_grace_secs = 301 is too large",
        ),
        ("idle_stop = 5", "unknown field `idle_stop`"),
    ];
    for (body, expected) in cases {
        let error = load_with(Some(&format!("[mcp]\n{body}\n")), &[])
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{body}: {error}");
    }
}

#[test]
fn a_bad_mcp_server_entry_is_a_problem_of_the_server_not_a_config_error() {
    let config = load_with(
        Some(
            r#"
[mcp_servers.time]
command = "uvx"
args = ["mcp-server-time"]
tool_timeout_secs = 30

[mcp_servers.broken]
command = ["not", "a", "string"]

[mcp_servers."bad name"]
command = "x"
"#,
        ),
        &[],
    )
    .unwrap();
    let servers = &config.mcp.servers;
    assert_eq!(servers.file.as_deref(), config.source.as_deref());
    assert_eq!(servers.entries.keys().collect::<Vec<_>>(), ["time"]);
    assert_eq!(servers.entries["time"].args, ["mcp-server-time"]);
    assert_eq!(servers.entries["time"].tool_timeout_secs, Some(30));
    let problems: Vec<String> = servers.problems.iter().map(ToString::to_string).collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].contains("server bad name: the server name"),
        "{}",
        problems[0]
    );
    assert!(
        problems[1].contains("server broken: [mcp_servers.broken]: invalid type"),
        "{}",
        problems[1]
    );
    // A TOML syntax error stays a config error, with its position.
    let error = load_with(Some("[mcp_servers.x]\ncommand = \n"), &[])
        .unwrap_err()
        .to_string();
    assert!(error.contains(":2:"), "{error}");
    // So does a section of the wrong shape.
    assert!(load_with(Some("mcp_servers = 3\n"), &[]).is_err());
}

#[test]
fn tasks_section_sets_the_cap_and_refuses_zero() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        "[tasks]\nmax_running = 2\nparallel_writers = true\nnotify_idle_parent = false\n",
    )
    .unwrap();
    let config = load(Some(&path), &|_| None).unwrap();
    assert_eq!(config.tasks.limits.max_running, 2);
    assert!(config.tasks.limits.parallel_writers);
    assert!(!config.tasks.notify_idle_parent);
    assert_eq!(
        config.tasks.max_notification_runs,
        crate::task::DEFAULT_MAX_NOTIFICATION_RUNS
    );
    std::fs::write(&path, "[tasks]\nmax_notification_runs = 3\n").unwrap();
    let config = load(Some(&path), &|_| None).unwrap();
    assert_eq!(config.tasks.max_notification_runs, 3);
    std::fs::write(&path, "[tasks]\nmax_notification_runs = 0\n").unwrap();
    let err = load(Some(&path), &|_| None).unwrap_err().to_string();
    assert!(
        err.contains("tasks.max_notification_runs = 0 must be between 1 and 1000"),
        "{err}"
    );
    std::fs::write(&path, "[tasks]\nmax_running = 0\n").unwrap();
    let err = load(Some(&path), &|_| None).unwrap_err().to_string();
    assert!(
        err.contains("tasks.max_running = 0 must be between 1 and 64"),
        "{err}"
    );
}

#[test]
fn llm_stream_idle_secs_holds_for_every_provider_without_its_own() {
    let text = "[llm]\nstream_idle_secs = 5\n\
                [providers.own]\nkind = \"openai\"\nmodel = \"m\"\nstream_idle_timeout_secs = 30\n\
                [providers.plain]\nkind = \"openai\"\nmodel = \"m\"\n";
    let config = load_with(Some(text), &[("OPENAI_API_KEY", "k")]).unwrap();
    assert_eq!(config.stream_idle_secs, 5);
    assert_eq!(config.providers["own"].stream_idle_timeout_secs, 30);
    assert_eq!(config.providers["plain"].stream_idle_timeout_secs, 5);
    assert_eq!(config.providers["openai"].stream_idle_timeout_secs, 5);
    let defaults = load_with(None, &[("OPENAI_API_KEY", "k")]).unwrap();
    assert_eq!(defaults.stream_idle_secs, DEFAULT_STREAM_IDLE_TIMEOUT_SECS);
}
