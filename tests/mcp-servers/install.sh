#!/usr/bin/env bash
# Installs the real MCP servers the integration tests run, at the pinned versions, into this
# folder: npm @modelcontextprotocol/server-everything, @modelcontextprotocol/server-filesystem and
# the official ACP client SDK @agentclientprotocol/sdk (which drives `agentctl acp`) into
# node_modules/ (package-lock.json)
# and PyPI mcp-server-time into venv/ (requirements.txt). Does nothing when both are already
# installed from the current pins (a stamp holds the digest of the pin file).
# Needs node + npm and python3 (with venv) on PATH. Also makes sure `jq` is there (the hooks
# tests run Claude Code's hook scripts unchanged, and those read their input with jq): from
# Debian's package when it is missing.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v jq >/dev/null; then
    echo "mcp-servers: installing jq (Debian package) for the hooks tests"
    as_root=()
    [[ $(id -u) -eq 0 ]] || as_root=(sudo)
    "${as_root[@]}" apt-get install -y -qq jq >/dev/null 2>&1 ||
        { "${as_root[@]}" apt-get update -qq && "${as_root[@]}" apt-get install -y -qq jq; } ||
        true
    if ! command -v jq >/dev/null; then
        echo "mcp-servers: jq is missing and could not be installed; install it (apt-get install jq)" >&2
        exit 1
    fi
fi

digest() { sha256sum "$1" | cut -d' ' -f1; }

node_stamp=node_modules/.agentd-installed
if [[ -f $node_stamp && "$(cat "$node_stamp")" == "$(digest package-lock.json)" ]]; then
    echo "mcp-servers: node servers already installed"
else
    echo "mcp-servers: installing node servers (npm ci)"
    npm ci --no-audit --no-fund --loglevel=error
    digest package-lock.json >"$node_stamp"
fi

venv_stamp=venv/.agentd-installed
if [[ -f $venv_stamp && "$(cat "$venv_stamp")" == "$(digest requirements.txt)" ]]; then
    echo "mcp-servers: python servers already installed"
else
    echo "mcp-servers: installing python servers (venv + pip)"
    rm -rf venv
    python3 -m venv venv
    venv/bin/pip install --quiet --disable-pip-version-check --no-input -r requirements.txt
    digest requirements.txt >"$venv_stamp"
fi
