"""A scripted MCP server for tests, on the real Python SDK (installed in venv/), for results and
tool lists at their limits. Arguments: `--tools N` adds N generated tools, `--description-chars
N` gives one tool a description of N characters, `--http-port P` serves streamable HTTP on
P (`/mcp`) instead of stdio. Tools:

- `media`: an image block plus `structuredContent` (as server-filesystem's `read_media_file`);
- `big {megabytes}`: a text result of that many megabytes;
- `grow`: adds the tool `grown` and sends `notifications/tools/list_changed` before answering;
- `log {message}`: sends `message` as a `notifications/message` (level warning) and answers.
"""

import argparse
import warnings

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ImageContent, TextContent

parser = argparse.ArgumentParser()
parser.add_argument("--tools", type=int, default=0)
parser.add_argument("--description-chars", type=int, default=0)
parser.add_argument("--http-port", type=int, default=0)
options = parser.parse_args()
# The logging capability is deprecated in the newest spec; the tests still use it.
warnings.simplefilter("ignore")

server = MCPServer("results")

# A 1x1 PNG; repeated so the base64 is long, as a real image's is.
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


@server.tool()
def media() -> CallToolResult:
    """An image with structuredContent, as read_media_file returns it."""
    data = PIXEL
    return CallToolResult(
        content=[ImageContent(type="image", data=data, mime_type="image/png")],
        structured_content={"content": [{"type": "image", "data": data, "mimeType": "image/png"}]},
    )


@server.tool()
def big(megabytes: int) -> str:
    """A text result of `megabytes` megabytes."""
    return "x" * (megabytes * 1024 * 1024)


def grown() -> str:
    """A tool added by `grow`."""
    return "grown"


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `grown` and says the tool list changed."""
    server.add_tool(grown)
    await ctx.session.send_tool_list_changed()
    return "grew"


@server.tool()
async def log(message: str, ctx: Context) -> str:
    """Sends `message` as a log message of level warning."""
    await ctx.warning(message, logger_name="results")
    return "logged"


if options.description_chars:
    def described() -> str:
        return "described"
    server.add_tool(described, description="d" * options.description_chars)


for n in range(options.tools):
    def generated(n: int = n) -> str:
        return str(n)
    server.add_tool(generated, name=f"generated_{n:05}", description=f"Generated tool {n}.")

if options.http_port:
    server.run("streamable-http", host="127.0.0.1", port=options.http_port)
else:
    server.run("stdio")
