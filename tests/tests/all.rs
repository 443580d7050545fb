//! All integration tests, in one binary: they start the real daemon and clients.

/// `both_formats!(scenario)` turns `async fn scenario(format: Format)` into a module of two
/// tests, `scenario::openai` and `scenario::anthropic`.
macro_rules! both_formats {
    ($name:ident) => {
        mod $name {
            #[tokio::test]
            async fn openai() {
                super::$name(agentd_tests::mock_llm::Format::OpenAi).await
            }

            #[tokio::test]
            async fn anthropic() {
                super::$name(agentd_tests::mock_llm::Format::Anthropic).await
            }
        }
    };
}

mod acp_bridge;
mod agents_defs;
mod agents_elsewhere;
mod approvals;
mod approvals_cli;
mod approvals_deny_always;
mod budgets;
mod budgets_answered;
mod chat;
mod chat_commands;
mod chat_live;
mod chat_output;
mod chat_restart;
mod chat_resume;
mod checkpoints;
mod cli;
mod cli_markdown;
mod cli_screen;
mod commands;
mod config_live;
mod context_compact;
mod context_memory;
mod context_memory_scope;
mod context_skills;
mod daemon;
mod daily_cli;
mod daily_daemon;
mod editors_plugin;
mod extensions;
mod first_run;
mod hooks;
mod llm;
mod llm_robustness;
mod mcp_capabilities;
mod mcp_clients;
mod mcp_config;
mod mcp_elicitation;
mod mcp_oauth;
mod mcp_reconnect;
mod mcp_results;
mod mcp_runtime;
mod mcp_sessions;
mod mcp_sessions_supervision;
mod mcp_supervision;
mod mcp_tool_search;
mod perf_budgets;
mod prompt_images;
mod protocol_contract;
mod protocol_errors;
mod protocol_schema;
mod protocol_schema_live;
mod protocol_subscriptions;
mod protocol_versions;
mod readme;
mod reliability_conn;
mod reliability_evict;
mod reliability_files;
mod reliability_log;
mod reliability_proc;
mod reliability_wedge;
mod restart_cli;
mod restart_resume;
mod restart_resume_options;
mod runs_thinking;
mod security_approvals;
mod security_fetch;
mod security_filter;
mod security_harden;
mod security_links;
mod security_project_files;
mod security_redirect;
mod security_sandbox;
mod security_sandbox_config;
mod security_server;
mod security_shell;
mod security_symlink;
mod security_trust;
mod security_trust_pins;
mod security_uid;
mod sessions;
mod sessions_fork;
mod snapshots;
mod tasks_approvals;
mod tasks_clients;
mod tasks_durable;
mod tasks_faults;
mod tasks_notifications;
mod tasks_resume;
mod tasks_shell;
mod tasks_start;
mod tasks_subagents;
mod tidy;
mod tidy_map;
mod tools_runs;
