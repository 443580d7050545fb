#!/usr/bin/env python3
"""A raw-socket agentd plugin: attach to a live session, show its events, answer its approvals.
Usage: watch_session.py SESSION_ID  (socket: $AGENTD_SOCKET, else $XDG_RUNTIME_DIR/agentd/
agentd.sock, else /tmp/agentd-UID/agentd.sock). Approvals are asked on stdin: `y` allows the
call once, anything else denies it. Python 3.8+, standard library only."""
import json, os, socket, sys, tempfile

DETAIL = ("summary", "content", "output", "decision", "status", "message")

def socket_path():
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    folder = os.path.join(runtime, "agentd") if runtime else f"{tempfile.gettempdir()}/agentd-{os.getuid()}"
    return os.environ.get("AGENTD_SOCKET") or os.path.join(folder, "agentd.sock")

class Connection:
    """One JSON-RPC 2.0 message per line; notifications read while waiting are kept."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.lines, self.last_id, self.kept = self.sock.makefile("r", encoding="utf-8"), 0, []

    def call(self, method, params):
        self.last_id += 1
        request = {"jsonrpc": "2.0", "id": self.last_id, "method": method, "params": params}
        self.sock.sendall((json.dumps(request) + "\n").encode())
        for message in map(json.loads, iter(self.lines.readline, "")):
            if message.get("id") == self.last_id:
                return message.get("result"), message.get("error")
            self.kept.append(message)
        sys.exit("agentd closed the connection")

    def notifications(self):
        while self.kept or (line := self.lines.readline()):
            yield self.kept.pop(0) if self.kept else json.loads(line)

def main(session_id):
    conn = Connection(socket_path())
    hello = {"clientInfo": {"name": "watch-session", "version": "1"}, "protocolVersion": "1.1",
             "capabilities": {"approvals": True}}  # we answer approvals: runs wait for us
    for method, params in (("initialize", hello), ("session/subscribe", {"sessionId": session_id})):
        if (error := conn.call(method, params)[1]):
            sys.exit(f"{method}: {error['message']}")
    print(f"watching {session_id}", flush=True)
    for message in conn.notifications():
        event = message["params"]["event"] if message.get("method") == "session/event" else {}
        if event.get("type") in (None, "messageDelta"):
            continue
        detail = next((str(event[key]) for key in DETAIL if key in event), "").splitlines()
        print(event["type"], *detail[:1], flush=True)
        if event["type"] == "approvalRequested":
            approval = event["approval"]
            print(f"allow {approval['tool']}: {approval['summary']}? [y/N]", flush=True)
            yes = sys.stdin.readline().strip().lower() == "y"
            answer = {"approvalId": approval["approvalId"], "decision": "allowOnce" if yes else "deny"}
            if (error := conn.call("approval/respond", answer)[1]):
                print("not answered:", error["message"], flush=True)  # e.g. decided elsewhere

if __name__ == "__main__":
    main(sys.argv[1]) if len(sys.argv) == 2 else sys.exit(__doc__)
