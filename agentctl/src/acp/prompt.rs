//! An ACP prompt (content blocks) as the one text a daemon run starts from: text as is,
//! resource links as references, embedded resources as fenced context; and its images, which
//! go with the prompt (`session/prompt {images}`).

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use protocol::session::PromptImage;

/// The prompt's blocks joined into one text, and its images; audio is refused (the bridge
/// does not advertise it). The daemon checks the images (count, size, type).
pub fn prompt_parts(blocks: &[ContentBlock]) -> Result<(String, Vec<PromptImage>), String> {
    let mut parts = Vec::with_capacity(blocks.len());
    let mut images = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Image(image) => images.push(PromptImage {
                mime_type: image.mime_type.clone(),
                data: image.data.clone(),
            }),
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::ResourceLink(link) => parts.push(format!("@{}", link.uri)),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(resource) => parts.push(format!(
                    "<context uri=\"{}\">\n{}\n</context>",
                    resource.uri, resource.text
                )),
                _ => parts.push(String::from("(a binary resource was left out)")),
            },
            _ => {
                return Err(
                    "agentd takes text, images, resource links and embedded text resources in a \
                     prompt; remove the audio"
                        .to_owned(),
                );
            }
        }
    }
    let text = parts.join("\n");
    if text.trim().is_empty() && images.is_empty() {
        return Err("the prompt is empty; type something for the agent".to_owned());
    }
    Ok((text, images))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, ImageContent, ResourceLink, TextResourceContents,
    };

    #[test]
    fn blocks_become_one_text() {
        let blocks = vec![
            ContentBlock::from("fix this"),
            ContentBlock::ResourceLink(ResourceLink::new("a.rs", "file:///w/a.rs")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn a() {}",
                    "file:///w/b.rs",
                )),
            )),
        ];
        assert_eq!(
            prompt_parts(&blocks).unwrap().0,
            "fix this\n@file:///w/a.rs\n<context uri=\"file:///w/b.rs\">\nfn a() {}\n</context>"
        );
    }

    #[test]
    fn images_go_beside_the_text_and_empty_prompts_are_refused() {
        let blocks = vec![
            ContentBlock::from("what is this?"),
            ContentBlock::Image(ImageContent::new("AAAA", "image/png")),
        ];
        let (text, images) = prompt_parts(&blocks).unwrap();
        assert_eq!(text, "what is this?");
        assert_eq!(
            images,
            vec![PromptImage {
                mime_type: "image/png".to_owned(),
                data: "AAAA".to_owned()
            }]
        );
        assert!(prompt_parts(&[ContentBlock::from("  ")]).is_err());
    }
}
