//! A chat line's `@path` words: the files they name attached (`crate::mentions`) before the
//! line is sent as a prompt, steer or follow-up; what was skipped or cut is said.

impl super::Chat {
    /// `text` with the files its `@path` words name attached (`mentions`); what was skipped
    /// or cut is said.
    pub(super) async fn with_mentions(&mut self, text: String) -> String {
        if !text.contains('@') {
            return text;
        }
        let cwd = self.cwd.clone();
        let (expanded, notes) =
            match tokio::task::spawn_blocking(move || crate::mentions::expand(&text, &cwd)).await {
                Ok(done) => done,
                Err(err) => return format!("(agentctl could not read the mentioned files: {err})"),
            };
        for note in notes {
            self.say(&note).await;
        }
        expanded
    }
}
