//! An ACP prompt (content blocks) as the one text a daemon run starts from: text as is,
//! resource links as references, embedded resources as fenced context.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};

/// The prompt's blocks joined into one text; images and audio are refused (the bridge
/// advertises neither).
pub fn prompt_text(blocks: &[ContentBlock]) -> Result<String, String> {
    let mut parts = Vec::with_capacity(blocks.len());
    for block in blocks {
        match block {
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
                    "agentd takes text, resource links and embedded text resources in a prompt; \
                     remove images and audio"
                        .to_owned(),
                );
            }
        }
    }
    let text = parts.join("\n");
    if text.trim().is_empty() {
        return Err("the prompt is empty; type something for the agent".to_owned());
    }
    Ok(text)
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
            prompt_text(&blocks).unwrap(),
            "fix this\n@file:///w/a.rs\n<context uri=\"file:///w/b.rs\">\nfn a() {}\n</context>"
        );
    }

    #[test]
    fn images_and_empty_prompts_are_refused() {
        let image = vec![ContentBlock::Image(ImageContent::new("AAAA", "image/png"))];
        assert!(prompt_text(&image).unwrap_err().contains("remove images"));
        assert!(prompt_text(&[ContentBlock::from("  ")]).is_err());
    }
}
