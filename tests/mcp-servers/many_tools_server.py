"""A scripted MCP server for tests, on the real Python SDK (installed in venv/), offering a large
tool set: `--tools N` (default 500) tools `item_000` … each taking a `key` and answering
`item_NNN looked up KEY`. Their descriptions name one of a few registers ("Looks up record 12
in the parish register."), but `item_271`'s, which reads tide tables: a tool a search finds by a
word of its description alone.
"""

import argparse

from mcp.server.mcpserver import MCPServer

parser = argparse.ArgumentParser()
parser.add_argument("--tools", type=int, default=500)
options = parser.parse_args()

REGISTERS = ["parish", "land", "ship", "trade", "court", "army", "school", "census"]

server = MCPServer("many")


def make(n: int):
    def tool(key: str) -> str:
        return f"item_{n:03} looked up {key}"

    return tool


for n in range(options.tools):
    if n == 271:
        description = "Reads the tide tables of a harbour for the day named by key."
    else:
        description = f"Looks up record {n} in the {REGISTERS[n % len(REGISTERS)]} register."
    server.add_tool(make(n), name=f"item_{n:03}", description=description)

server.run()
