#!/usr/bin/env bash
# The Windows binaries run, not only build: agentd.exe and agentctl.exe under Wine, talking over
# the named pipe. `agentctl.exe status` starts the daemon (autostart, a detached process), then
# one `agentctl.exe run --approve all` against the scripted mock LLM (the Linux mock-llm on
# loopback) writes a file and runs a shell command (cmd /C) in a workspace, and the daemon is
# stopped over the pipe. Every step's output is printed when a step fails.
# Needs the x86_64-pc-windows-gnu target, mingw (x86_64-w64-mingw32-gcc) and Wine; check.sh
# installs them. Wine 8 lacks bcryptprimitives.dll, which Rust's standard library loads, so a
# stand-in (bcryptprimitives.c) is built beside the .exe files.
# Usage: tests/windows/smoke.sh   (from anywhere; keeps its Wine prefix in a temporary folder)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
target=x86_64-pc-windows-gnu

echo "windows-smoke: building agentd.exe and agentctl.exe"
cargo build -q -p agentd -p agentctl --target "$target"
# The test command has built the mock by now; building it here alone would change features.
[[ -x target/debug/mock-llm ]] || cargo build -q -p agentd-tests --bin mock-llm
bin="$root/target/$target/debug"
x86_64-w64-mingw32-gcc -shared -O2 -o "$bin/bcryptprimitives.dll" \
    tests/windows/bcryptprimitives.c -ladvapi32

work="$(mktemp -d)"
mock_pid=""
cleanup() {
    [[ -n $mock_pid ]] && kill "$mock_pid" 2>/dev/null
    WINEPREFIX="$work/prefix" wineserver -k 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "windows-smoke: FAILED: $*" >&2
    for log in "$work"/*.log; do
        echo "--- $(basename "$log")" >&2
        cat "$log" >&2
    done
    exit 1
}

export WINEPREFIX="$work/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
echo "windows-smoke: making a Wine prefix"
wineboot -i >"$work/wineboot.log" 2>&1 || fail "wineboot could not make a Wine prefix"

mkdir -p "$work/workspace"
cat >"$work/script.json" <<'JSON'
[{"toolCalls":[{"id":"c1","name":"write_file","arguments":{"path":"hello.txt","content":"hi from windows\n"}}]},
 {"toolCalls":[{"id":"c2","name":"run_shell","arguments":{"command":"type hello.txt"}}]},
 {"text":"Wrote hello.txt and read it back."}]
JSON
mkfifo "$work/mock.out"
target/debug/mock-llm --script "$work/script.json" >"$work/mock.out" 2>"$work/mock.log" &
mock_pid=$!
exec 3<"$work/mock.out"
read -r -t 60 line <&3 || fail "mock-llm did not start"
base="${line#listening on }"
[[ $base == http://127.0.0.1:* ]] || fail "mock-llm printed $line"

# Wine has cmd.exe but no PowerShell, the default shell.
printf '[shell]\nwindows = "cmd"\n' >"$work/config.toml"
export AGENTD_CONFIG="$(winepath -w "$work/config.toml")"
export OPENAI_BASE_URL="$base/v1" OPENAI_API_KEY=smoke
cd "$work/workspace"
echo "windows-smoke: agentctl.exe status (starts agentd.exe)"
timeout 180 wine "$bin/agentctl.exe" status >"$work/status.log" 2>&1 ||
    fail "agentctl.exe status"
grep -qF 'socket       \\.\pipe\agentd-' "$work/status.log" || fail "status does not name the pipe"

echo "windows-smoke: agentctl.exe run --approve all"
timeout 180 wine "$bin/agentctl.exe" run --approve all "write hello.txt and read it" \
    >"$work/run.log" 2>&1 || fail "agentctl.exe run"
grep -q "Wrote hello.txt and read it back." "$work/run.log" || fail "run did not print the answer"
[[ $(cat hello.txt) == "hi from windows" ]] || fail "hello.txt does not hold what was written"
# The shell's output went to the model: the mock recorded the tool result it was sent.
curl -sS "$base/mock/requests" >"$work/requests.log" 2>&1 || fail "cannot read the mock's requests"
grep -q "hi from windows" "$work/requests.log" || fail "the shell's output did not reach the model"

timeout 60 wine "$bin/agentctl.exe" daemon stop >"$work/stop.log" 2>&1 ||
    fail "agentctl.exe daemon stop"
echo "windows-smoke: agentd.exe and agentctl.exe ran under Wine over the named pipe"
