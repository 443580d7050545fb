//! The one wrapper of the built-in tools: a [`TypedTool`] names its params struct and returns
//! `Result<ToolOutput, String>`; bad arguments and a tool's `Err` both become the error result
//! the model reads, here and nowhere else.

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use super::{Tool, ToolContext, ToolOutput, parse_input, schema_of};

/// A built-in tool described by its typed params: the schema offered to the model, the
/// validation and the parsing all come from `Params`, so they cannot drift apart. Every
/// `TypedTool` is a [`Tool`].
pub(crate) trait TypedTool: Send + Sync + 'static {
    type Params: JsonSchema + DeserializeOwned + Send + 'static;
    const NAME: &'static str;
    /// Written for the model: when to use the tool, what it returns, its limits.
    const DESCRIPTION: &'static str;
    const READ_ONLY: bool;
    /// Whether the executor may cut the output to the output cap (see [`Tool::truncate_output`]).
    const TRUNCATE_OUTPUT: bool = true;
    /// One line for UIs, e.g. "ls -la" or "src/main.rs".
    fn summary(&self, input: &serde_json::Value) -> String;
    /// Run with parsed params. An `Err` is the text of the error result the model reads; an
    /// `Ok` output is returned as it is (run_shell's failed command is an `Ok` with `is_error`).
    fn run<'a>(
        &'a self,
        params: Self::Params,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>>;
}

impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        T::NAME
    }

    fn description(&self) -> &str {
        T::DESCRIPTION
    }

    fn input_schema(&self) -> serde_json::Value {
        schema_of::<T::Params>()
    }

    fn read_only(&self) -> bool {
        T::READ_ONLY
    }

    fn validate(&self, input: &serde_json::Value) -> Result<(), String> {
        parse_input::<T::Params>(T::NAME, input).map(drop)
    }

    fn truncate_output(&self) -> bool {
        T::TRUNCATE_OUTPUT
    }

    fn summary(&self, input: &serde_json::Value) -> String {
        TypedTool::summary(self, input)
    }

    fn call<'a>(
        &'a self,
        input: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput> {
        match parse_input::<T::Params>(T::NAME, &input) {
            Ok(params) => self
                .run(params, ctx)
                .map(|result| result.unwrap_or_else(ToolOutput::error))
                .boxed(),
            Err(message) => Box::pin(std::future::ready(ToolOutput::error(message))),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::tools::test_support::workspace;

    /// A tool whose params say what it returns: `{"answer": "ok" | "err" | "error output"}`.
    struct Echo;

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct EchoParams {
        answer: String,
    }

    impl TypedTool for Echo {
        type Params = EchoParams;
        const NAME: &'static str = "echo";
        const DESCRIPTION: &'static str = "test tool";
        const READ_ONLY: bool = true;

        fn summary(&self, _input: &serde_json::Value) -> String {
            String::new()
        }

        fn run<'a>(
            &'a self,
            params: EchoParams,
            _ctx: &'a ToolContext,
        ) -> BoxFuture<'a, Result<ToolOutput, String>> {
            Box::pin(async move {
                match params.answer.as_str() {
                    "ok" => Ok(ToolOutput::ok("fine")),
                    "error output" => Ok(ToolOutput::error("failed, with output")),
                    other => Err(format!("refused {other}")),
                }
            })
        }
    }

    #[tokio::test]
    async fn arguments_and_failures_become_the_results_the_model_reads() {
        let (_dir, ctx) = workspace();
        for (input, content, is_error) in [
            (json!({"answer": "ok"}), "fine", false),
            (json!({"answer": "err"}), "refused err", true),
            (
                json!({"answer": "error output"}),
                "failed, with output",
                true,
            ),
            (
                json!({"answer": 3}),
                "invalid arguments for echo: invalid type: integer `3`, expected a string",
                true,
            ),
            (
                json!({}),
                "invalid arguments for echo: missing field `answer`",
                true,
            ),
        ] {
            let output = Tool::call(&Echo, input.clone(), &ctx).await;
            assert_eq!(
                (output.content.as_str(), output.is_error),
                (content, is_error),
                "{input}"
            );
            let valid = Echo.validate(&input);
            if content.starts_with("invalid arguments") {
                assert_eq!(valid, Err(content.to_owned()));
            } else {
                assert_eq!(valid, Ok(()));
            }
        }
    }
}
