#!/usr/bin/env bash
# The Windows check of the test command: clippy of the workspace for x86_64-pc-windows-gnu, then
# the smoke run under Wine (tests/windows/smoke.sh). Installs what it needs when it is missing:
# the target's standard library (rustup), the mingw cross compiler that `ring`'s C code needs and
# Wine (Debian's gcc-mingw-w64-x86-64 and wine64). When one cannot be installed here, it prints
# one line saying what was skipped and why, and exits 0: the rest of the run decides.
# The tests crate (agentd-tests) is left out of the clippy run: its harness drives the daemon
# through Unix sockets and pseudo-terminals, which the Windows build does not have.
# Usage: tests/windows/check.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
target=x86_64-pc-windows-gnu

as_root=()
[[ $(id -u) -eq 0 ]] || as_root=(sudo)
apt_install() {
    command -v apt-get >/dev/null || return 1
    "${as_root[@]}" apt-get install -y -qq "$@" >/dev/null 2>&1 ||
        { "${as_root[@]}" apt-get update -qq >/dev/null 2>&1 &&
            "${as_root[@]}" apt-get install -y -qq "$@" >/dev/null 2>&1; }
}

if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    echo "windows-check: installing the $target target (rustup)"
    if ! timeout 600 rustup target add "$target" >/dev/null 2>&1; then
        echo "Windows check skipped: the $target target is not installed and rustup could not" \
            "install it (rustup target add $target)"
        exit 0
    fi
fi
if ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
    echo "windows-check: installing the mingw cross compiler (Debian gcc-mingw-w64-x86-64)"
    if ! apt_install gcc-mingw-w64-x86-64 || ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
        echo "Windows check skipped: no x86_64-w64-mingw32-gcc, which ring's C code needs, and" \
            "apt-get could not install it (apt-get install gcc-mingw-w64-x86-64)"
        exit 0
    fi
fi

echo "windows-check: cargo clippy --workspace --exclude agentd-tests --target $target" \
    "(the tests crate needs Unix sockets and pseudo-terminals)"
cargo clippy --workspace --exclude agentd-tests --target "$target" -- -D warnings

if ! command -v wine >/dev/null; then
    echo "windows-check: installing Wine (Debian wine64) for the smoke run"
    if ! apt_install wine64 || ! command -v wine >/dev/null; then
        echo "Windows smoke run skipped: no Wine, and apt-get could not install it" \
            "(apt-get install wine64); the clippy check above passed"
        exit 0
    fi
fi
tests/windows/smoke.sh
