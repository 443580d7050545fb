#!/usr/bin/env bash
# Checks that binaries built without agentd's `test-seams` feature hold none of its test seams:
# the bytes of each holds no name of a seam variable, that is no `AGENTD_TEST_…` name written
# anywhere in agentd/src or crates/ (the prefix is kept for seams, see
# crates/core/src/test_seam.rs). The test
# command runs it on the debug binaries of `cargo build --workspace`, before
# `cargo build --workspace --all-targets` turns the seams on for the binaries the tests run;
# release builds and `cargo install` compile the same cfg'd source without the feature.
# Usage: tests/no-test-seams.sh [BINARY...]   (default: target/debug/agentd target/debug/agentctl)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
sources=("$root/agentd/src" "$root/crates")
binaries=("$@")
if (( ${#binaries[@]} == 0 )); then
    binaries=(target/debug/agentd target/debug/agentctl)
fi

mapfile -t names < <(grep -rhoE --include='*.rs' 'AGENTD_TEST_[A-Z0-9_]*[A-Z0-9]' "${sources[@]}" | sort -u)
if (( ${#names[@]} == 0 )); then
    echo "no-test-seams: no AGENTD_TEST_ name in ${sources[*]}: nothing to look for" >&2
    exit 1
fi

status=0
for binary in "${binaries[@]}"; do
    if [[ ! -f $binary ]]; then
        echo "no-test-seams: $binary does not exist: build it first (cargo build --workspace)" >&2
        exit 1
    fi
    for name in "${names[@]}"; do
        found=0
        grep -aqF -- "$name" "$binary" || found=$?
        case $found in
            0) echo "no-test-seams: $binary holds the test seam name $name" \
                    "(built with agentd's test-seams feature?)" >&2
               status=1 ;;
            1) ;;
            *) echo "no-test-seams: cannot read $binary" >&2; exit 1 ;;
        esac
    done
done
if (( status == 0 )); then
    echo "no-test-seams: none of ${names[*]} in ${binaries[*]}"
fi
exit "$status"
