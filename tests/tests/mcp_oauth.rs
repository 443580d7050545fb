//! OAuth logins of streamable HTTP servers against the local authorization server and
//! protected MCP server of `agentd_tests::oauth_server`, through the daemon: a server asking
//! for a login is `needsLogin` saying so; `agentctl mcp login` (the test plays
//! the browser: it opens the printed URL and follows the redirect to the daemon's loopback
//! port) stores a 0600 token, the server becomes ready and a tool call works with it; a
//! short-lived token is refreshed before it is sent, one the server expired is refreshed
//! after the 401; a revoked login makes the server `needsLogin` again and deletes the token;
//! `agentctl mcp logout` deletes it. No token ever reaches the daemon's log.

use std::path::PathBuf;
use std::time::Duration;

use agentd_tests::harness::{Client, text};
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::oauth_server::{OAuthOptions, OAuthServer, PRESET_CLIENT};
use agentd_tests::scenario::*;
use protocol::event::{Event, RunStatus};
use protocol::mcp::{McpListResult, McpServerState};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// A daemon whose user config has the protected server `docs`, a client on the daemon stream,
/// and a session (with its own client) whose first run found the server asking for a login.
struct Setup {
    s: Scenario,
    client: Client,
    session_client: Client,
    session: String,
}

async fn needing_login(oauth: &OAuthServer) -> Setup {
    needing_login_with(oauth, "").await
}

/// [`needing_login`] with `entry` added to the server's entry.
async fn needing_login_with(oauth: &OAuthServer, entry: &str) -> Setup {
    let servers = format!("[mcp_servers.docs]\nurl = \"{}\"\n{entry}", oauth.url());
    let s = Scenario::start_with(Format::OpenAi, &servers).await;
    let mut client = s.client().await;
    client
        .request("daemon/subscribe", json!({}))
        .await
        .expect("daemon/subscribe");
    let (mut session_client, session) = s.session().await;
    s.mock.push(Reply::text("hello"));
    session_client.prompt(&session, "hi").await;
    session_client.events_until_run_finished().await;
    let error = wait_status(&mut client, McpServerState::NeedsLogin).await;
    assert!(
        error.contains("log in to MCP server docs again"),
        "says what to run: {error}"
    );
    Setup {
        s,
        client,
        session_client,
        session,
    }
}

/// Waits for `docs` to reach `status` on the daemon stream; returns its error text.
async fn wait_status(client: &mut Client, wanted: McpServerState) -> String {
    let events = client
        .daemon_events_until(|event| {
            matches!(event, Event::McpServerStatus { server, status, .. } if server == "docs" && *status == wanted)
        })
        .await;
    match &events.last().expect("an event").event {
        Event::McpServerStatus { error, .. } => error.clone().unwrap_or_default(),
        _ => unreachable!(),
    }
}

/// What a browser does with the login URL: the authorization server approves at once and
/// redirects to the daemon's loopback port, whose page is returned.
async fn play_browser(authorization_url: &str, redirect_uri: &str) -> String {
    // Builds the daemon's client once: it installs the TLS provider reqwest needs here too.
    let _ = agentd_llm::LlmClient::http_client();
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let approved = browser.get(authorization_url).send().await.unwrap();
    assert_eq!(approved.status(), 302, "{:?}", approved.text().await);
    let location = approved.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with(redirect_uri), "{location}");
    let page = browser.get(&location).send().await.unwrap();
    assert_eq!(page.status(), 200);
    page.text().await.unwrap()
}

/// A login over the socket (`mcp/login`, the browser, `mcp/loginStatus`).
async fn log_in(s: &Scenario, client: &mut Client) {
    let started = client
        .request(
            "mcp/login",
            json!({"name": "docs", "cwd": s.workspace().display().to_string()}),
        )
        .await
        .expect("mcp/login");
    let page = play_browser(
        started["authorizationUrl"].as_str().unwrap(),
        started["redirectUri"].as_str().unwrap(),
    )
    .await;
    assert!(page.contains("return to the terminal"), "{page}");
    let status = client
        .request(
            "mcp/loginStatus",
            json!({"loginId": started["loginId"], "waitSecs": 20}),
        )
        .await
        .expect("mcp/loginStatus");
    assert_eq!(status["state"], "done", "{status}");
}

/// The token files under the daemon's state dir.
fn token_files(s: &Scenario) -> Vec<PathBuf> {
    let dir = s.daemon.env.path("state").join("agentd/mcp/oauth");
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
        .unwrap_or_default()
}

/// A run that calls `whoami`; returns its result text.
async fn call_whoami(s: &Scenario, client: &mut Client, session: &str) -> (String, bool) {
    s.mock
        .push(Reply::tool_call("w1", "mcp__docs__whoami", json!({})));
    s.mock.push(Reply::text("done"));
    client.prompt(session, "who am I?").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let results = tool_results(&events);
    let (_, output, is_error) = results.last().expect("a tool result").clone();
    (output, is_error)
}

async fn mcp_list(client: &mut Client, s: &Scenario) -> McpListResult {
    let result = client
        .request(
            "mcp/list",
            json!({"cwd": s.workspace().display().to_string()}),
        )
        .await
        .expect("mcp/list");
    serde_json::from_value::<McpListResult>(result).unwrap()
}

fn assert_no_token_in_the_log(s: &Scenario) {
    let log = s.daemon.log();
    assert!(
        !log.contains("access-secret") && !log.contains("refresh-secret"),
        "a token in the daemon's log:\n{log}"
    );
}

#[tokio::test]
async fn agentctl_mcp_login_connects_the_server_and_its_tool_works_with_the_token() {
    let oauth = OAuthServer::start(OAuthOptions::default()).await;
    let Setup {
        s,
        mut client,
        mut session_client,
        session,
    } = needing_login(&oauth).await;
    let list = mcp_list(&mut client, &s).await;
    assert_eq!(list.servers[0].status, McpServerState::NeedsLogin);
    let listed = s.daemon.env.run_agentctl(&["mcp", "list"]).await;
    assert!(
        text(&listed.stdout).contains("needs login"),
        "{}",
        text(&listed.stdout)
    );

    // agentctl prints the URL (no display here), the test opens it.
    let mut login = s.daemon.env.agentctl();
    login
        .args(["mcp", "login", "docs"])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut login = login.spawn().unwrap();
    let mut stdout = BufReader::new(login.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), stdout.next_line())
        .await
        .expect("the URL in time")
        .unwrap()
        .expect("a line");
    let query: Vec<(String, String)> = reqwest::Url::parse(&url)
        .unwrap()
        .query_pairs()
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect();
    let redirect = query
        .iter()
        .find(|(key, _)| key == "redirect_uri")
        .map(|(_, value)| value.clone())
        .unwrap();
    assert!(redirect.starts_with("http://127.0.0.1:"), "{redirect}");
    play_browser(&url, &redirect).await;
    let output = tokio::time::timeout(Duration::from_secs(60), login.wait_with_output())
        .await
        .expect("agentctl ends")
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("logged in to MCP server docs"), "{stderr}");

    // PKCE S256, the resource, a registered client.
    {
        let record = oauth.record();
        let asked = &record.authorize_queries[0];
        assert_eq!(asked["code_challenge_method"], "S256");
        assert_eq!(asked["resource"], oauth.url());
        assert_eq!(asked["scope"], "tools");
        assert!(asked["client_id"].starts_with("dyn-client-"), "{asked:?}");
        assert_eq!(record.grants, ["authorization_code"]);
    }
    wait_status(&mut client, McpServerState::Ready).await;
    let (output, is_error) = call_whoami(&s, &mut session_client, &session).await;
    assert_eq!((output.as_str(), is_error), ("you are logged in", false));
    assert_eq!(oauth.record().calls, 1);

    let files = token_files(&s);
    assert_eq!(files.len(), 1, "{files:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&files[0]).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert!(
        stored["accessToken"]
            .as_str()
            .unwrap()
            .starts_with("access-secret-")
    );
    assert_no_token_in_the_log(&s);

    // Logged out: the token goes and the server asks again.
    let logout = s.daemon.env.run_agentctl(&["mcp", "logout", "docs"]).await;
    assert_eq!(logout.status.code(), Some(0), "{}", text(&logout.stderr));
    assert!(text(&logout.stdout).contains("token is deleted"));
    assert!(token_files(&s).is_empty());
    wait_status(&mut client, McpServerState::NeedsLogin).await;
}

#[tokio::test]
async fn a_short_lived_token_is_refreshed_before_it_is_sent_and_an_expired_one_after_the_401() {
    let oauth = OAuthServer::start(OAuthOptions {
        // Inside the refresh margin: every request refreshes it first.
        access_ttl: Duration::from_secs(30),
        ..OAuthOptions::default()
    })
    .await;
    let Setup {
        s,
        mut client,
        mut session_client,
        session,
    } = needing_login(&oauth).await;
    log_in(&s, &mut client).await;
    wait_status(&mut client, McpServerState::Ready).await;
    {
        let record = oauth.record();
        assert_eq!(record.grants[0], "authorization_code");
        assert!(
            record.grants[1..]
                .iter()
                .all(|grant| grant == "refresh_token")
        );
        assert!(
            record.grants.len() >= 2,
            "refreshed before use: {:?}",
            record.grants
        );
        // The login's own token was never sent: it was refreshed first.
        assert!(
            !record.tokens_used.contains(&record.issued[0]),
            "{:?}",
            record.tokens_used
        );
    }
    let (output, _) = call_whoami(&s, &mut session_client, &session).await;
    assert_eq!(output, "you are logged in");
    assert_no_token_in_the_log(&s);
}

#[tokio::test]
async fn a_token_the_server_expired_is_refreshed_after_the_401_and_the_call_goes_through() {
    let oauth = OAuthServer::start(OAuthOptions::default()).await;
    let Setup {
        s,
        mut client,
        mut session_client,
        session,
    } = needing_login(&oauth).await;
    log_in(&s, &mut client).await;
    wait_status(&mut client, McpServerState::Ready).await;
    assert_eq!(oauth.record().grants, ["authorization_code"]);
    oauth.expire_access_tokens();
    let (output, is_error) = call_whoami(&s, &mut session_client, &session).await;
    assert_eq!((output.as_str(), is_error), ("you are logged in", false));
    assert_eq!(
        oauth.record().grants,
        ["authorization_code", "refresh_token"]
    );
    // The refreshed token is stored for the next start.
    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(&token_files(&s)[0]).unwrap()).unwrap();
    assert_eq!(
        Some(stored["accessToken"].as_str().unwrap().to_owned()),
        oauth.record().tokens_used.last().cloned()
    );
    assert_no_token_in_the_log(&s);
}

#[tokio::test]
async fn a_revoked_login_makes_the_server_need_a_login_again() {
    let oauth = OAuthServer::start(OAuthOptions::default()).await;
    let Setup {
        s,
        mut client,
        mut session_client,
        session,
    } = needing_login(&oauth).await;
    log_in(&s, &mut client).await;
    wait_status(&mut client, McpServerState::Ready).await;
    oauth.revoke_all();
    let (output, is_error) = call_whoami(&s, &mut session_client, &session).await;
    assert!(is_error, "{output}");
    let error = wait_status(&mut client, McpServerState::NeedsLogin).await;
    assert!(error.contains("log in to MCP server docs again"), "{error}");
    assert!(token_files(&s).is_empty(), "the refused token is deleted");
    let list = mcp_list(&mut client, &s).await;
    assert_eq!(list.servers[0].status, McpServerState::NeedsLogin);
    assert_no_token_in_the_log(&s);
}

#[tokio::test]
async fn without_registration_the_entrys_client_id_logs_in_and_without_one_the_error_says_to_set_it()
 {
    let oauth = OAuthServer::start(OAuthOptions {
        registration: false,
        ..OAuthOptions::default()
    })
    .await;
    let Setup { s, mut client, .. } = needing_login(&oauth).await;
    let refused = client
        .request(
            "mcp/login",
            json!({"name": "docs", "cwd": s.workspace().display().to_string()}),
        )
        .await
        .expect_err("no client to log in as");
    assert_eq!(refused.code, -32007, "{refused:?}");
    assert!(refused.message.contains("oauth.client_id"), "{refused:?}");
    drop(s);

    let oauth_entry = format!("oauth = {{ client_id = \"{PRESET_CLIENT}\" }}\n");
    let Setup { s, mut client, .. } = needing_login_with(&oauth, &oauth_entry).await;
    log_in(&s, &mut client).await;
    wait_status(&mut client, McpServerState::Ready).await;
    assert_eq!(
        oauth.record().authorize_queries.last().unwrap()["client_id"],
        PRESET_CLIENT
    );
}
