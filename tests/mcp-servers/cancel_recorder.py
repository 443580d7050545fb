"""A scripted MCP server for tests, on the real Python SDK (installed in venv/): its `wait` tool
sleeps and, when the client cancels the call (`notifications/cancelled`), appends `cancelled`
to the file named by the first argument, so a test can see the cancellation reached the server.
"""

import sys

import anyio
from mcp.server.mcpserver import MCPServer

record = sys.argv[1]
server = MCPServer("cancel-recorder")


@server.tool()
async def wait(seconds: float) -> str:
    """Waits `seconds`, recording a cancellation."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        with open(record, "a") as out:
            out.write("cancelled\n")
        raise
    return "done"


server.run("stdio")
