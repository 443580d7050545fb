#!/usr/bin/env python3
"""An agentd extension in plain Python 3 (stdlib only): JSON-RPC 2.0, one message per line,
over agentd's Unix socket. No SDK: this file is the whole protocol an extension needs.

Run it next to a running daemon:  python3 examples/extension.py [--scope DIR]

The socket is $AGENTD_SOCKET, else $XDG_RUNTIME_DIR/agentd/agentd.sock, else
<tmp>/agentd-<uid>/agentd.sock (the same rule as agentd and agentctl). What it does:
  - a tool `shout` (the model sees `ext__example__shout`): returns its text in capitals;
  - a tool `hold`: never answers, so a call stays in flight until the extension exits;
  - `input`: refuses prompts that mention "forbidden", rewrites "shout: x" as "X";
  - `toolCall`: blocks run_shell commands containing "rm -rf";
  - `toolResult`: replaces "SECRET" in what the model reads with "[redacted]";
  - `messageUpdate`: cuts an answer off as soon as it has written "STOP-STREAM";
  - a command `/example-hello`.
It prints "registered <extensionId>", then serves until the connection closes.
"""
import json
import os
import socket
import sys
import tempfile


def socket_path():
    if os.environ.get("AGENTD_SOCKET"):
        return os.environ["AGENTD_SOCKET"]
    if os.environ.get("XDG_RUNTIME_DIR"):
        return os.path.join(os.environ["XDG_RUNTIME_DIR"], "agentd", "agentd.sock")
    return os.path.join(tempfile.gettempdir(), f"agentd-{os.getuid()}", "agentd.sock")


class Connection:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.lines = self.sock.makefile("r", encoding="utf-8")
        self.next_id = 0

    def send(self, message):
        message["jsonrpc"] = "2.0"
        self.sock.sendall((json.dumps(message) + "\n").encode("utf-8"))

    def call(self, method, params):
        """Our own request; the daemon's requests that arrive meanwhile are served."""
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        for message in self.messages():
            if message.get("id") == self.next_id and "method" not in message:
                if "error" in message:
                    sys.exit(f"{method} failed: {message['error']['message']}")
                return message["result"]
            self.serve(message)
        sys.exit("the daemon closed the connection")

    def messages(self):
        return (json.loads(line) for line in self.lines if line.strip())

    def serve(self, message):
        """Answers a request of the daemon; notifications and answers need nothing."""
        if "method" not in message or "id" not in message:
            return
        handler = HANDLERS.get(message["method"])
        if handler is None:
            self.send({"id": message["id"], "error": {"code": -32601, "message": "unknown"}})
            return
        result = handler(message.get("params") or {})
        if result is not None:  # None: leave the call unanswered (the `hold` tool)
            self.send({"id": message["id"], "result": result})


def call_tool(params):
    args = params.get("arguments") or {}
    if params["tool"] == "shout":
        return {"content": str(args.get("text", "")).upper()}
    return None  # `hold`


def run_command(params):
    return {"output": f"hello from the example extension ({params['args'] or 'no args'})"}


streamed = {}  # run id -> the answer streamed so far


def event(params):
    kind = params["event"]
    if kind == "input":
        text = params["text"]
        if "forbidden" in text:
            return {"block": "the example extension refuses prompts that mention 'forbidden'"}
        if text.startswith("shout: "):
            return {"text": text[len("shout: "):].upper()}
    elif kind == "toolCall":
        command = (params.get("arguments") or {}).get("command", "")
        if params["tool"] == "run_shell" and "rm -rf" in str(command):
            return {"block": "the example extension does not let rm -rf run"}
    elif kind == "toolResult":
        if "SECRET" in params["content"]:
            return {"content": params["content"].replace("SECRET", "[redacted]")}
    elif kind == "messageUpdate":
        text = streamed.get(params.get("runId"), "") + params["delta"]
        streamed[params.get("runId")] = text[-64:]  # enough to find the marker across pieces
        if "STOP-STREAM" in text:
            return {"cut": True, "reason": "the answer said STOP-STREAM"}
    return {}


HANDLERS = {
    "extension/callTool": call_tool,
    "extension/runCommand": run_command,
    "extension/event": event,
}

REGISTRATION = {
    "name": "example",
    "tools": [
        {"name": "shout", "description": "Returns the text in capital letters.", "readOnly": True,
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                         "required": ["text"]}},
        {"name": "hold", "description": "Waits for ever (a demonstration of a call in flight).",
         "inputSchema": {"type": "object", "properties": {}}, "readOnly": True},
    ],
    "commands": [{"name": "example-hello", "description": "Say hello", "argumentHint": "[name]"}],
    "events": ["input", "toolCall", "toolResult", "messageUpdate"],
}


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--scope":
        REGISTRATION["scope"] = {"cwd": os.path.abspath(sys.argv[2])}
    connection = Connection(socket_path())
    connection.call("initialize", {
        "clientInfo": {"name": "example-extension", "version": "1"},
        "protocolVersion": "1.1",
        "capabilities": {"extensions": True},
    })
    registered = connection.call("extension/register", REGISTRATION)
    print(f"registered {registered['extensionId']}", flush=True)
    for message in connection.messages():
        connection.serve(message)


if __name__ == "__main__":
    main()
