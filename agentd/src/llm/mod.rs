//! LLM providers: OpenAI-compatible chat completions and Anthropic messages, streamed over SSE.
