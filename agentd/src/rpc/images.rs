//! The images of `session/prompt {images}`, checked before a run starts: how many, how big,
//! valid base64, and a type that matches the bytes (a model given a mislabelled image fails
//! the whole request, far from its cause).

use base64::Engine as _;
use protocol::error as codes;
use protocol::session::{MAX_IMAGE_BYTES, PromptImage, image_mime_type, prompt_images_problem};

use super::{RpcResult, rpc_error};
use agentd_core::conversation::ToolImage;

/// The prompt's images as the conversation holds them, or an error naming the image and what
/// to do.
pub(super) fn checked(images: Vec<PromptImage>) -> RpcResult<Vec<ToolImage>> {
    if let Some(problem) = prompt_images_problem(&images) {
        return Err(invalid(problem));
    }
    images
        .into_iter()
        .enumerate()
        .map(|(index, image)| check(index + 1, image))
        .collect()
}

fn check(number: usize, image: PromptImage) -> RpcResult<ToolImage> {
    // Base64 of MAX_IMAGE_BYTES, rounded up: a longer text cannot decode to a valid size.
    if image.data.len() > MAX_IMAGE_BYTES.div_ceil(3) * 4 {
        return Err(too_big(number, image.data.len() / 4 * 3));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(image.data.as_bytes())
        .map_err(|err| invalid(format!("image {number} is not valid base64: {err}")))?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(too_big(number, bytes.len()));
    }
    let Some(found) = image_mime_type(&bytes) else {
        return Err(invalid(format!(
            "image {number} is not a PNG, JPEG, GIF or WebP image (its bytes say so, whatever its mimeType)"
        )));
    };
    if image.mime_type != found {
        return Err(invalid(format!(
            "image {number} is labelled {:?} but its bytes are {found}; send mimeType {found:?}",
            image.mime_type
        )));
    }
    Ok(ToolImage {
        mime_type: image.mime_type,
        data: image.data,
    })
}

fn too_big(number: usize, bytes: usize) -> jsonrpsee::types::ErrorObjectOwned {
    invalid(format!(
        "image {number} is {} KiB; an image is at most {} KiB: make it smaller first",
        bytes / 1024,
        MAX_IMAGE_BYTES / 1024
    ))
}

fn invalid(message: String) -> jsonrpsee::types::ErrorObjectOwned {
    rpc_error(codes::INVALID_PARAMS, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::session::MAX_PROMPT_IMAGES;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    fn image(mime_type: &str, bytes: &[u8]) -> PromptImage {
        PromptImage {
            mime_type: mime_type.to_owned(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    fn error_of(images: Vec<PromptImage>) -> String {
        checked(images).unwrap_err().message().to_owned()
    }

    #[test]
    fn a_png_passes_as_sent() {
        let checked = checked(vec![image("image/png", PNG)]).unwrap();
        assert_eq!(checked[0].mime_type, "image/png");
        assert_eq!(checked[0].data, image("image/png", PNG).data);
    }

    #[test]
    fn a_mislabelled_image_names_its_real_type() {
        let message = error_of(vec![image("image/jpeg", PNG)]);
        assert!(
            message.contains("labelled \"image/jpeg\" but its bytes are image/png"),
            "{message}"
        );
    }

    #[test]
    fn text_is_not_an_image_and_bad_base64_is_named() {
        let message = error_of(vec![image("image/png", PNG), image("image/png", b"hello")]);
        assert!(message.starts_with("image 2 is not a PNG"), "{message}");
        let bad = PromptImage {
            mime_type: "image/png".to_owned(),
            data: "not base64!".to_owned(),
        };
        assert!(error_of(vec![bad]).contains("not valid base64"));
    }

    #[test]
    fn too_many_and_too_big_are_refused_with_the_limit() {
        let many = vec![image("image/png", PNG); MAX_PROMPT_IMAGES + 1];
        assert!(error_of(many).contains("at most 8"));
        let mut big = PNG.to_vec();
        big.resize(MAX_IMAGE_BYTES + 1, 0);
        let message = error_of(vec![image("image/png", &big)]);
        assert!(message.contains("at most 5120 KiB"), "{message}");
        // Two of the largest are more than one request line takes.
        big.truncate(MAX_IMAGE_BYTES);
        let message = error_of(vec![image("image/png", &big); 2]);
        assert!(message.contains("at most 12 MiB of images"), "{message}");
    }
}
