//! fetch_url and the network boundary: loopback, private, link-local and metadata addresses are
//! refused in every mode (bypass included), after resolution and at every redirect hop, unless a
//! `WebFetch(domain:…)` allow rule names the host; a redirect to another host is decided by the
//! rules like a new fetch.

use agentd_tests::gate::HttpGate;
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::RunStatus;
use serde_json::json;

/// Bypass mode plus `allow` rules: nothing asks, so only the fetch boundary decides.
fn bypass_with(allow: &[&str]) -> String {
    let allow: Vec<String> = allow.iter().map(|rule| format!("{rule:?}")).collect();
    format!(
        "[permissions]\ndefault_mode = \"bypass\"\nallow = [{}]\n",
        allow.join(", ")
    )
}

/// Runs one batch of `fetch_url` calls (ids `c0`, `c1`, …) and returns `(output, isError)` per
/// call, in call order.
async fn fetch_all(s: &Scenario, urls: &[String]) -> Vec<(String, String, bool)> {
    let calls: Vec<(String, &str, String)> = urls
        .iter()
        .enumerate()
        .map(|(index, url)| {
            (
                format!("c{index}"),
                "fetch_url",
                json!({"url": url}).to_string(),
            )
        })
        .collect();
    s.mock.push(Reply::tool_calls(calls));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "fetch them").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let mut results = tool_results(&events);
    results.sort_by_key(|(id, _, _)| id.trim_start_matches('c').parse::<usize>().unwrap_or(0));
    urls.iter()
        .zip(results)
        .map(|(url, (_, output, is_error))| (url.clone(), output, is_error))
        .collect()
}

both_formats!(every_loopback_spelling_is_refused_in_bypass_mode);
async fn every_loopback_spelling_is_refused_in_bypass_mode(format: Format) {
    let s = Scenario::start(format).await;
    let gate = HttpGate::start().await;
    gate.open("secret", "the secret page");
    let port = gate.port();
    let hosts = [
        "127.0.0.1",
        "127.1",
        "0x7f000001",
        "2130706433",
        "017700000001",
        "localhost",
        "[::1]",
        "0.0.0.0",
        "[::]",
        "[::ffff:127.0.0.1]",
    ];
    let urls: Vec<String> = hosts
        .iter()
        .map(|host| format!("http://{host}:{port}/secret"))
        .collect();
    for (url, output, is_error) in fetch_all(&s, &urls).await {
        assert!(is_error, "{url} was fetched: {output}");
        assert!(output.starts_with("refused: "), "{url}: {output}");
        assert!(output.contains("`WebFetch(domain:"), "{url}: {output}");
        assert!(!output.contains("secret page"), "{url}: {output}");
    }
    assert_eq!(gate.requests(), 0, "a refused fetch reached the server");
}

both_formats!(a_redirect_to_loopback_is_refused_at_the_hop);
async fn a_redirect_to_loopback_is_refused_at_the_hop(format: Format) {
    // 127.0.0.1 is named by a rule (it stands for a public host here); the hosts it redirects
    // to are not.
    let s = Scenario::start_with(format, &bypass_with(&["WebFetch(domain:127.0.0.1)"])).await;
    let gate = HttpGate::start().await;
    let port = gate.port();
    gate.open("secret", "the secret page");
    gate.redirect("to-localhost", &format!("http://localhost:{port}/secret"));
    gate.redirect("to-v6", &format!("http://[::1]:{port}/secret"));
    gate.redirect(
        "to-mapped",
        &format!("http://[::ffff:7f00:1]:{port}/secret"),
    );
    let urls: Vec<String> = ["to-localhost", "to-v6", "to-mapped"]
        .iter()
        .map(|name| gate.url(name))
        .collect();
    let results = fetch_all(&s, &urls).await;
    for (url, output, is_error) in &results {
        assert!(is_error, "{url} was followed: {output}");
        assert!(output.starts_with("refused: "), "{url}: {output}");
        assert!(output.contains("redirect"), "{url}: {output}");
        assert!(!output.contains("secret page"), "{url}: {output}");
    }
    assert!(
        results[0].1.contains("`WebFetch(domain:localhost)`"),
        "{}",
        results[0].1
    );
    assert_eq!(gate.requests(), 3, "only the redirects were served");
}

both_formats!(a_redirect_to_another_host_is_decided_by_the_rules);
async fn a_redirect_to_another_host_is_decided_by_the_rules(format: Format) {
    let extra = format!(
        "{}deny = [\"WebFetch(domain:localhost)\"]\n",
        bypass_with(&["WebFetch(domain:127.0.0.1)", "WebFetch(domain:localhost)"])
    );
    let s = Scenario::start_with(format, &extra).await;
    let gate = HttpGate::start().await;
    let port = gate.port();
    gate.open("secret", "the secret page");
    gate.redirect("hop", &format!("http://localhost:{port}/secret"));
    let results = fetch_all(&s, &[gate.url("hop")]).await;
    let (_, output, is_error) = &results[0];
    assert!(is_error, "{output}");
    assert!(
        output.contains("denied by the rule `WebFetch(domain:localhost)`"),
        "{output}"
    );
    assert_eq!(gate.requests(), 1);
}

both_formats!(a_domain_rule_lets_a_local_server_through);
async fn a_domain_rule_lets_a_local_server_through(format: Format) {
    let s = Scenario::start_with(
        format,
        &bypass_with(&["WebFetch(domain:127.0.0.1)", "WebFetch(domain:localhost)"]),
    )
    .await;
    let gate = HttpGate::start().await;
    let port = gate.port();
    gate.open("page", "the local page");
    gate.redirect("same-host", &format!("http://127.1:{port}/page"));
    gate.redirect("named-host", &format!("http://localhost:{port}/page"));
    let urls = [
        gate.url("page"),
        format!("http://localhost:{port}/page"),
        gate.url("same-host"),
        gate.url("named-host"),
    ];
    for (url, output, is_error) in fetch_all(&s, &urls).await {
        assert!(!is_error, "{url}: {output}");
        assert_eq!(output, "the local page", "{url}");
    }
}

both_formats!(a_redirect_to_a_host_that_would_ask_is_refused_with_how_to_ask);
async fn a_redirect_to_a_host_that_would_ask_is_refused_with_how_to_ask(format: Format) {
    // Default mode: fetching a host no rule allows asks, so the tool does not follow the hop
    // unasked; it tells the model to fetch the target itself (which goes through the gate).
    let extra =
        "[permissions]\ndefault_mode = \"default\"\nallow = [\"WebFetch(domain:127.0.0.1)\"]\n";
    let s = Scenario::start_with(format, extra).await;
    let gate = HttpGate::start().await;
    let port = gate.port();
    gate.open("secret", "the secret page");
    gate.redirect("hop", &format!("http://localhost:{port}/secret"));
    let results = fetch_all(&s, &[gate.url("hop")]).await;
    let (_, output, is_error) = &results[0];
    assert!(is_error, "{output}");
    assert!(output.starts_with("refused: "), "{output}");
    assert!(
        output.contains(&format!(
            "needs approval (approval needed to fetch http://localhost:{port}/secret); call \
             fetch_url with http://localhost:{port}/secret to ask for it"
        )),
        "{output}"
    );
    assert_eq!(gate.requests(), 1);
}
