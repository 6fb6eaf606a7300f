#!/usr/bin/env bash
# Builds kstate and runs the whole test suite: the README's test command and what
# .ci/run executes. Usage: scripts/test.sh [preset]   (default | debug | asan)
# Then every libFuzzer target runs for KSTATE_FUZZ_SECONDS (default 15; 0 skips) in
# build/fuzz, when clang with libFuzzer is installed (scripts/fuzz.sh runs them longer).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
scripts/install-deps.sh
scripts/format.sh --check
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
ctest --preset "$preset"
if [[ ${KSTATE_FUZZ_SECONDS:-15} != 0 ]]; then
  KSTATE_FUZZ_IF_AVAILABLE=1 scripts/fuzz.sh "${KSTATE_FUZZ_SECONDS:-15}"
fi
