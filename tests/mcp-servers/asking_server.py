"""A scripted MCP server for tests, on the real Python SDK (installed in venv/), that asks its
client things during tool calls. Tools:

- `ask_name`: asks the user for a name and an age (`ctx.elicit`, the SDK validating the
  answer against its model) and answers with what it got: `accept name=… age=…`, `decline`
  or `cancel`, followed by ` reason=…` when the client said why (`_meta.reason`);
- `summarize {text}`: asks the client's model to summarise `text` (`sampling/createMessage`,
  with a system prompt and `maxTokens` 50) and answers `summary: …`, or `refused: …` with the
  client's error.
"""

import warnings

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import SamplingMessage, TextContent
from pydantic import BaseModel, Field

# Sampling is deprecated in the newest spec; the tests still use it.
warnings.simplefilter("ignore")

server = MCPServer("asking")


class Person(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(default=30, description="Your age in years")


@server.tool()
async def ask_name(ctx: Context) -> str:
    """Asks the user for their name and age."""
    # The raw result keeps `_meta` (why a client declined); the SDK's helper validates.
    session = ctx.request_context.session
    from mcp.server.elicitation import render_elicitation_schema

    raw = await session.elicit_form(
        message="Who are you?",
        requested_schema=render_elicitation_schema(Person),
        related_request_id=ctx.request_id,
    )
    reason = ""
    meta = raw.meta or {}
    if not isinstance(meta, dict):
        meta = meta.model_dump(by_alias=True)
    if meta.get("reason"):
        reason = f" reason={meta['reason']}"
    if raw.action == "accept":
        person = Person.model_validate(raw.content)
        return f"accept name={person.name} age={person.age}{reason}"
    return f"{raw.action}{reason}"


@server.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Asks the client's model for a summary of `text`."""
    try:
        result = await ctx.session.create_message(
            messages=[SamplingMessage(role="user", content=TextContent(type="text", text=text))],
            max_tokens=50,
            system_prompt="You summarise in five words.",
        )
    except Exception as error:  # the client's refusal, as the server sees it
        return f"refused: {error}"
    content = result.content
    text_out = getattr(content, "text", None) or str(content)
    return f"summary: {text_out} (model {result.model})"


server.run("stdio")
