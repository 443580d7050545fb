//! Images in prompts: `agentctl run --image FILE` and `@shot.png` reach the model in both wire
//! formats (OpenAI `image_url` parts, Anthropic image blocks before the text); a mislabelled
//! or fake image is refused with a clear error and the session goes on; an image-only prompt
//! runs; the history says how many images a message carried; an ACP image block is accepted.

use agentd_tests::acp_client::{AcpClient, initialize};
use agentd_tests::harness::{TestEnv, text};
use agentd_tests::mock_llm::{Format, MockLlm, RecordedRequest, Reply};
use agentd_tests::scenario::*;
use base64::Engine as _;
use serde_json::{Value, json};

/// A 1×1 PNG.
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

fn png() -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(PNG_BASE64)
        .unwrap()
}

/// The images (mime type, base64) and the texts of the last user message of a request.
fn last_user_message(
    format: Format,
    request: &RecordedRequest,
) -> (Vec<(String, String)>, Vec<String>) {
    let messages = request.json["messages"].as_array().expect("messages");
    let user = messages
        .iter()
        .rev()
        .find(|message| message["role"] == "user")
        .expect("a user message");
    let parts = user["content"].as_array().cloned().unwrap_or_default();
    let mut images = Vec::new();
    let mut texts = Vec::new();
    for part in &parts {
        match (format, part["type"].as_str()) {
            (Format::OpenAi, Some("image_url")) => {
                let url = part["image_url"]["url"].as_str().unwrap_or_default();
                let (head, data) = url.split_once(";base64,").expect("a data URL");
                let mime = head.strip_prefix("data:").expect("data:");
                images.push((mime.to_owned(), data.to_owned()));
            }
            (Format::Anthropic, Some("image")) => {
                assert!(texts.is_empty(), "images come before the text: {parts:?}");
                images.push((
                    part["source"]["media_type"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    part["source"]["data"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                ));
            }
            (_, Some("text")) => texts.push(part["text"].as_str().unwrap_or_default().to_owned()),
            other => panic!("unexpected part {other:?}: {part}"),
        }
    }
    (images, texts)
}

#[tokio::test]
async fn run_image_and_an_image_mention_reach_the_model_in_both_formats() {
    for format in FORMATS {
        let mock = MockLlm::start().await;
        let env = TestEnv::new().config(&config_toml(&mock, format, ""));
        std::fs::write(env.workspace().join("shot.png"), png()).unwrap();
        std::fs::write(env.workspace().join("other.png"), png()).unwrap();
        mock.push(Reply::text("a white pixel"));
        let output = env
            .run_agentctl(&["run", "--image", "other.png", "what is in @shot.png?"])
            .await;
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        let requests = mock.requests();
        let (images, texts) = last_user_message(format, &requests[0]);
        let expected = ("image/png".to_owned(), PNG_BASE64.to_owned());
        assert_eq!(images, vec![expected.clone(), expected], "{format:?}");
        // The word stays, so the model knows which image was meant; no fenced bytes.
        assert_eq!(
            texts,
            vec!["what is in @shot.png?".to_owned()],
            "{format:?}"
        );
    }
}

#[tokio::test]
async fn a_file_that_is_not_an_image_or_images_too_big_together_are_refused_by_agentctl_first() {
    let mock = MockLlm::start().await;
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    std::fs::write(env.workspace().join("notes.png"), "plain text").unwrap();
    let output = env
        .run_agentctl(&["run", "--image", "notes.png", "look"])
        .await;
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("notes.png is not a PNG, JPEG, GIF or WebP image"),
        "{}",
        text(&output.stderr)
    );
    // Two of the largest images are more than one request takes: said before anything is sent
    // (the daemon would drop the line and agentctl lose the connection).
    let mut big = png();
    big.resize(protocol::session::MAX_IMAGE_BYTES, 0);
    std::fs::write(env.workspace().join("a.png"), &big).unwrap();
    std::fs::write(env.workspace().join("b.png"), &big).unwrap();
    let output = env
        .run_agentctl(&["run", "--image", "a.png", "--image", "b.png", "look"])
        .await;
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("a prompt carries at most 12 MiB of images"),
        "{}",
        text(&output.stderr)
    );
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn bad_images_over_the_wire_are_refused_and_the_session_goes_on() {
    let s = Scenario::start(Format::Anthropic).await;
    let (mut client, session) = s.session().await;
    let prompt = |images: Value| json!({"sessionId": session, "text": "look", "images": images});
    let mislabelled = client
        .request(
            "session/prompt",
            prompt(json!([{"mimeType": "image/jpeg", "data": PNG_BASE64}])),
        )
        .await
        .unwrap_err();
    assert_eq!(mislabelled.code, i64::from(protocol::error::INVALID_PARAMS));
    assert!(
        mislabelled
            .message
            .contains("labelled \"image/jpeg\" but its bytes are image/png"),
        "{}",
        mislabelled.message
    );
    let fake = client
        .request(
            "session/prompt",
            prompt(json!([{"mimeType": "image/png", "data": "aGVsbG8="}])),
        )
        .await
        .unwrap_err();
    assert!(fake.message.contains("is not a PNG"), "{}", fake.message);
    assert!(s.mock.requests().is_empty(), "nothing reached the model");

    // An image alone is a prompt.
    s.mock.push(Reply::text("a pixel"));
    client
        .request(
            "session/prompt",
            json!({"sessionId": session, "text": "", "images": [{"mimeType": "image/png", "data": PNG_BASE64}]}),
        )
        .await
        .expect("an image-only prompt");
    client.events_until_run_finished().await;
    let (images, texts) = last_user_message(Format::Anthropic, &s.mock.requests()[0]);
    assert_eq!(images.len(), 1);
    assert!(texts.is_empty(), "{texts:?}");
    let got = client
        .request(
            "session/get",
            json!({"sessionId": session, "includeHistory": true}),
        )
        .await
        .unwrap();
    assert_eq!(got["history"][0]["role"], "user", "{got}");
    assert_eq!(got["history"][0]["imageCount"], 1, "{got}");
    assert!(
        !got.to_string().contains(PNG_BASE64),
        "the image's bytes are not sent back"
    );
    let shown = s
        .daemon
        .env
        .run_agentctl(&["sessions", "show", &session])
        .await;
    assert!(
        text(&shown.stdout).contains("> [1 image(s) attached]"),
        "{}",
        text(&shown.stdout)
    );
}

#[tokio::test]
async fn an_acp_image_block_goes_with_the_prompt() {
    let s = Scenario::start(Format::OpenAi).await;
    s.mock.push(Reply::text("a pixel"));
    let mut editor = AcpClient::start(&s.daemon.env).await;
    let init = initialize(&mut editor).await;
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["image"], true,
        "{init}"
    );
    let session = editor
        .request(
            "session/new",
            json!({"cwd": s.workspace().display().to_string(), "mcpServers": []}),
        )
        .await
        .expect("session/new");
    let session_id = session["sessionId"].as_str().unwrap();
    let answer = editor
        .request(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [
                {"type": "text", "text": "what is this?"},
                {"type": "image", "mimeType": "image/png", "data": PNG_BASE64},
            ]}),
        )
        .await
        .expect("session/prompt");
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    let (images, texts) = last_user_message(Format::OpenAi, &s.mock.requests()[0]);
    assert_eq!(
        images,
        vec![("image/png".to_owned(), PNG_BASE64.to_owned())]
    );
    assert_eq!(texts, vec!["what is this?".to_owned()]);
    assert_eq!(editor.close().await["code"], 0);
}
