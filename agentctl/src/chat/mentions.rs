//! A chat line's `@path` words: the files they name attached (`crate::mentions`) before the
//! line is sent as a prompt, steer or follow-up; what was skipped or cut is said. Images go
//! with a prompt only: a steer or follow-up says the ones it leaves out.

use protocol::session::PromptImage;

impl super::Chat {
    /// `text` with the files its `@path` words name attached (`mentions`) and the images it
    /// names; what was skipped or cut is said.
    pub(super) async fn with_mentions(&mut self, text: String) -> (String, Vec<PromptImage>) {
        if !text.contains('@') {
            return (text, Vec::new());
        }
        let cwd = self.cwd.clone();
        let expanded =
            match tokio::task::spawn_blocking(move || crate::mentions::expand(&text, &cwd)).await {
                Ok(done) => done,
                Err(err) => {
                    let text = format!("(agentctl could not read the mentioned files: {err})");
                    return (text, Vec::new());
                }
            };
        for note in expanded.notes {
            self.say(&note).await;
        }
        (expanded.text, expanded.images)
    }

    /// [`Self::with_mentions`] for a steer or follow-up, which carry no images.
    pub(super) async fn with_text_mentions(&mut self, text: String) -> String {
        let (text, images) = self.with_mentions(text).await;
        if !images.is_empty() {
            self.say(&format!(
                "({} image(s) not attached: images go with a prompt, once the run ends)",
                images.len()
            ))
            .await;
        }
        text
    }
}
