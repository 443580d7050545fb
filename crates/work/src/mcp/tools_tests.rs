//! Names of MCP tools (sanitising, the length cap, collisions) and the conversion of results.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

#[test]
fn names_are_sanitised_and_kept_when_they_fit() {
    let names = exposed_names(&[
        ("everything", "echo"),
        ("my server", "get.time"),
        ("time", "convert-time"),
    ]);
    assert_eq!(
        names,
        [
            "mcp__everything__echo",
            "mcp__my_server__get_time",
            "mcp__time__convert-time",
        ]
    );
}

#[test]
fn long_names_are_cut_to_64_with_a_stable_hash() {
    let tool = "a".repeat(80);
    let names = exposed_names(&[("srv", &tool)]);
    let name = &names[0];
    assert_eq!(name.len(), MAX_TOOL_NAME_CHARS, "{name}");
    assert!(name.starts_with("mcp__srv__aaaa"), "{name}");
    let (_, suffix) = name.rsplit_once('_').unwrap();
    assert_eq!(suffix.len(), 6);
    assert!(suffix.chars().all(|c| c.is_ascii_hexdigit()), "{name}");
    // The same pair gets the same name every time; another long tool another one.
    assert_eq!(exposed_names(&[("srv", &tool)]), names);
    let other = format!("{tool}b");
    assert_ne!(exposed_names(&[("srv", &other)]), names);
}

#[test]
fn collisions_get_a_hash_suffix_and_the_first_in_order_keeps_the_plain_name() {
    // "a.b" and "a_b" sanitise alike; the order given does not change who gets what.
    let forward = exposed_names(&[("s", "a.b"), ("s", "a_b"), ("s", "c")]);
    let backward = exposed_names(&[("s", "c"), ("s", "a_b"), ("s", "a.b")]);
    assert_eq!(forward[0], "mcp__s__a_b");
    assert!(forward[1].starts_with("mcp__s__a_b_"), "{forward:?}");
    assert_eq!(forward[2], "mcp__s__c");
    assert_eq!(
        backward,
        [forward[2].clone(), forward[1].clone(), forward[0].clone()]
    );
    // Servers whose names sanitise alike collide too.
    let servers = exposed_names(&[("x y", "t"), ("x_y", "t")]);
    assert_ne!(servers[0], servers[1]);
    for name in forward.iter().chain(&servers) {
        assert!(name.len() <= MAX_TOOL_NAME_CHARS);
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
    }
}

fn result(content: Vec<McpContent>) -> McpCallResult {
    McpCallResult {
        content,
        structured: None,
        is_error: false,
    }
}

#[test]
fn text_blocks_are_joined_and_links_and_resources_listed() {
    let output = convert_result(
        "mcp__s__t",
        result(vec![
            McpContent::Text("first".into()),
            McpContent::Text("second".into()),
            McpContent::ResourceLink {
                uri: "file:///a.txt".into(),
                name: Some("a.txt".into()),
            },
            McpContent::Resource {
                uri: "test://static/1".into(),
                text: Some("resource body".into()),
            },
            McpContent::Resource {
                uri: "test://static/2".into(),
                text: None,
            },
            McpContent::Other("[audio audio/wav]".into()),
        ]),
    );
    assert_eq!(
        output,
        ToolOutput::ok(
            "first\nsecond\n[resource link: a.txt <file:///a.txt>]\n[resource <test://static/1>]\nresource body\n[binary resource <test://static/2>: not shown]\n[audio audio/wav]"
        )
    );
}

#[test]
fn images_are_kept_for_the_provider_and_oversized_ones_described() {
    let small = McpContent::Image {
        mime_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    };
    let huge = McpContent::Image {
        mime_type: "image/png".into(),
        data: "A".repeat(MAX_IMAGE_BASE64_BYTES + 4),
    };
    let output = convert_result(
        "mcp__s__t",
        result(vec![McpContent::Text("a tiny image".into()), small, huge]),
    );
    assert_eq!(
        output.images,
        [ToolImage {
            mime_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        }]
    );
    assert!(!output.is_error);
    assert_eq!(
        output.content,
        format!(
            "a tiny image\n[image image/png, {} bytes of base64: too large to show to the model]",
            MAX_IMAGE_BASE64_BYTES + 4
        )
    );
}

#[test]
fn images_the_providers_would_refuse_are_described_not_sent() {
    let image = |mime_type: &str, data: &str| McpContent::Image {
        mime_type: mime_type.into(),
        data: data.into(),
    };
    let output = convert_result(
        "mcp__s__t",
        result(vec![
            image("image/svg+xml", "PHN2Zz4="),
            image("image/png", "not base64!"),
            image("image/png", "abc"),
            image("image/jpeg", "/9j/4AAQ"),
        ]),
    );
    assert_eq!(
        output.images,
        [ToolImage {
            mime_type: "image/jpeg".into(),
            data: "/9j/4AAQ".into(),
        }]
    );
    assert_eq!(
        output.content,
        "[image image/svg+xml: a type the model is not shown (only image/png, image/jpeg, image/gif, image/webp)]\n[image image/png: not valid base64, not shown to the model]\n[image image/png: not valid base64, not shown to the model]"
    );
}

#[test]
fn structured_content_is_the_text_only_when_there_is_no_text() {
    let structured = json!({"temperature": 21, "unit": "C"});
    let only = McpCallResult {
        structured: Some(structured.clone()),
        ..result(Vec::new())
    };
    let output = convert_result("mcp__s__t", only);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&output.content).unwrap(),
        structured
    );
    let with_text = McpCallResult {
        structured: Some(structured),
        ..result(vec![McpContent::Text("21 C".into())])
    };
    assert_eq!(convert_result("mcp__s__t", with_text).content, "21 C");
}

/// server-filesystem's `read_media_file`: an image block, and the same image again in
/// `structuredContent`; the model gets the image once, and no base64 as text.
#[test]
fn an_image_only_result_carries_no_structured_content_as_text() {
    let data = "iVBORw0KGgo=".to_owned();
    let media = McpCallResult {
        structured: Some(
            json!({"content": [{"type": "image", "data": data, "mimeType": "image/png"}]}),
        ),
        ..result(vec![McpContent::Image {
            mime_type: "image/png".into(),
            data: data.clone(),
        }])
    };
    let output = convert_result("mcp__fs__read_media_file", media);
    assert_eq!(output.images.len(), 1);
    assert_eq!(output.content, "", "no base64 beside the image");
}

#[test]
fn errors_are_error_results_with_their_text() {
    let refused = McpCallResult {
        is_error: true,
        ..result(vec![McpContent::Text("bad input".into())])
    };
    assert_eq!(
        convert_result("mcp__s__t", refused),
        ToolOutput::error("bad input")
    );
    let silent = McpCallResult {
        is_error: true,
        ..result(Vec::new())
    };
    assert_eq!(
        convert_result("mcp__s__t", silent),
        ToolOutput::error("mcp__s__t reported an error without a message")
    );
    let exited = McpCallError::Exited {
        server: "everything".into(),
        reason: "broken pipe".into(),
    };
    assert_eq!(
        output_of("mcp__everything__echo", Err(exited)),
        ToolOutput::error("MCP server everything exited: broken pipe")
    );
}

#[test]
fn progress_lines() {
    let line = |progress, total, message: Option<&str>| {
        progress_line(&McpProgress {
            progress,
            total,
            message: message.map(str::to_owned),
        })
    };
    assert_eq!(line(3.0, Some(10.0), Some("step 3")), "3/10 step 3");
    assert_eq!(line(0.5, None, None), "0.5");
    assert_eq!(line(2.0, None, Some("")), "2");
}
