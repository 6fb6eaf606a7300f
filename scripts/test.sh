#!/usr/bin/env bash
# Builds kstate and runs the whole test suite: the README's test command and what
# .ci/run executes. Usage: scripts/test.sh [preset]   (default | debug | asan)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
scripts/install-deps.sh
scripts/format.sh --check
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
ctest --preset "$preset"
