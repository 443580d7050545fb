//! Token counts for a reply whose provider reported none (llama.cpp's OpenAI-compatible server
//! sends no `usage`): estimated from sizes, and marked `estimated`, so the context limits,
//! compaction and budgets above still see a number instead of 0.
//!
//! No tokenizer: each model family has its own vocabulary, a tokenizer crate with its tables
//! would weigh more than the rest of this crate, and the counts only decide when to clear or
//! compact, which a margin covers. The estimate is [`BYTES_PER_TOKEN`] bytes a token of the
//! request body as sent (JSON punctuation and keys included, so it errs high and the limits
//! fire early rather than late), images counted as [`IMAGE_TOKENS`] each instead of their
//! base64 bytes, and the same rate for the answer (text, reasoning, tool calls).

use agentd_core::conversation::Usage;

use super::Completion;

/// Bytes per token of the estimate. BPE vocabularies of current models (OpenAI's o200k, Llama
/// 3's, Qwen's) average about 4 bytes a token on English prose and code, fewer on other
/// scripts; 4 is the usual rule of thumb and the one `agentd_knowledge::context` uses.
pub const BYTES_PER_TOKEN: u64 = 4;

/// Tokens counted for one image of the request: about what providers charge for a picture of
/// a megapixel (Anthropic: width × height / 750 ≈ 1,400; OpenAI's high detail: up to ~1,100),
/// where its base64 bytes would count hundreds of thousands.
pub const IMAGE_TOKENS: u64 = 1_600;

/// Fills in `completion.usage` from the request `body` and the answer, marked estimated.
pub(crate) fn estimate(body: &[u8], completion: &mut Completion, thinking_bytes: usize) {
    let answer_bytes = completion.content.len()
        + thinking_bytes
        + completion
            .tool_calls
            .iter()
            .map(|call| call.name.len() + call.arguments.len())
            .sum::<usize>();
    completion.usage = Usage {
        input_tokens: input_tokens(body),
        output_tokens: tokens_of(answer_bytes as u64),
        cached_input_tokens: 0,
        cache_creation_input_tokens: 0,
        estimated: true,
    };
}

/// The request's tokens: its bytes at [`BYTES_PER_TOKEN`], its images at [`IMAGE_TOKENS`].
fn input_tokens(body: &[u8]) -> u64 {
    let (images, image_bytes) = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(value) => images_in(&value, None),
        Err(_) => (0, 0),
    };
    let text_bytes = (body.len() as u64).saturating_sub(image_bytes);
    tokens_of(text_bytes).saturating_add(images.saturating_mul(IMAGE_TOKENS))
}

fn tokens_of(bytes: u64) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN)
}

/// The count and the bytes of the base64 images in a request body: OpenAI's `data:` URLs and
/// Anthropic's `{"type":"base64","data":…}` sources.
fn images_in(value: &serde_json::Value, key: Option<&str>) -> (u64, u64) {
    match value {
        serde_json::Value::String(text) => {
            let is_image = (text.starts_with("data:") && text.contains(";base64,"))
                || (key == Some("data") && text.len() > MIN_IMAGE_DATA_BYTES);
            if is_image {
                (1, text.len() as u64)
            } else {
                (0, 0)
            }
        }
        serde_json::Value::Array(items) => items
            .iter()
            .fold((0, 0), |sum, item| add(sum, images_in(item, None))),
        serde_json::Value::Object(fields) => fields.iter().fold((0, 0), |sum, (name, item)| {
            add(sum, images_in(item, Some(name)))
        }),
        _ => (0, 0),
    }
}

/// A `data` string shorter than this is text, not an image (no picture is this small).
const MIN_IMAGE_DATA_BYTES: usize = 256;

fn add(a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
    (a.0.saturating_add(b.0), a.1.saturating_add(b.1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentd_core::conversation::ToolCall;

    #[test]
    fn the_estimate_is_four_bytes_a_token_of_the_body_and_the_answer() {
        let body = format!(
            r#"{{"model":"m","messages":[{{"role":"user","content":"{}"}}]}}"#,
            "x".repeat(4000)
        );
        let mut completion = Completion {
            content: "y".repeat(40),
            tool_calls: vec![ToolCall {
                id: "c1".to_owned(),
                name: "read".to_owned(),
                arguments: "{}".repeat(2),
            }],
            ..Completion::default()
        };
        estimate(body.as_bytes(), &mut completion, 12);
        let usage = completion.usage;
        assert!(usage.estimated);
        assert_eq!(usage.input_tokens, (body.len() as u64).div_ceil(4));
        assert!(usage.input_tokens >= 1000, "{usage:?}");
        assert_eq!(usage.output_tokens, (40 + 12 + 4 + 4) / 4);
        assert_eq!(usage.cached_input_tokens, 0);
    }

    #[test]
    fn images_count_as_a_picture_not_as_their_base64_bytes() {
        let data = "A".repeat(400_000);
        let openai = format!(
            r#"{{"messages":[{{"role":"user","content":[{{"type":"image_url","image_url":{{"url":"data:image/png;base64,{data}"}}}}]}}]}}"#
        );
        let anthropic = format!(
            r#"{{"messages":[{{"role":"user","content":[{{"type":"image","source":{{"type":"base64","media_type":"image/png","data":"{data}"}}}}]}}]}}"#
        );
        for body in [openai, anthropic] {
            let tokens = input_tokens(body.as_bytes());
            assert!(
                (IMAGE_TOKENS..IMAGE_TOKENS + 100).contains(&tokens),
                "{tokens}"
            );
        }
        let short = r#"{"messages":[{"role":"user","content":"data: 1"}],"data":"short"}"#;
        assert_eq!(
            input_tokens(short.as_bytes()),
            (short.len() as u64).div_ceil(4)
        );
    }

    #[test]
    fn a_body_that_is_not_json_is_counted_by_its_bytes() {
        assert_eq!(input_tokens(b"not json at all"), 4);
        assert_eq!(input_tokens(b""), 0);
    }
}
