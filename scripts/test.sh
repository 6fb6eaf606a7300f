#!/usr/bin/env bash
# Builds kstate and runs the whole test suite: the README's test command and what
# .ci/run executes.
#   scripts/test.sh            everything CI runs: the default preset (build + CTest),
#                              the Debian package (scripts/check-package.sh), the
#                              benchmarks' quick mode as a smoke check, the same
#                              suite under ASan + UBSan (asan preset; the
#                              emulator's own tests aside: it starts the default
#                              preset's emulator), then every libFuzzer target for a
#                              bounded time
#   scripts/test.sh PRESET     one preset only (default | debug | asan), no fuzzing
# Environment: KSTATE_SOAK_SECONDS (default 30 here, 20 for a bare ctest) is how long
# the daemon soak test runs in the default pass; KSTATE_BENCH=0 skips the benchmarks'
# quick mode (bench/run.sh --quick, about 40 s) that follows it; KSTATE_ASAN=0 skips the sanitizer
# pass (whose soak keeps 20 s); KSTATE_FUZZ_SECONDS (default
# 10 per target, 0 skips) bounds the fuzzing, which runs in build/fuzz when clang with
# libFuzzer is installed (scripts/fuzz.sh runs the targets longer on demand).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/format.sh --check

run_preset() {
  local preset=$1 start=$SECONDS
  echo "== preset $preset: configure, build, test"
  if [[ $preset == asan ]]; then
    # Its tests start the default preset's emulator (KSTATE_EMULATOR in
    # CMakePresets.json): an optimized server, not rebuilt under the sanitizers.
    cmake --preset default >/dev/null
    cmake --build --preset default --target kstate-emulator
  fi
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  ctest --preset "$preset"
  echo "== preset $preset: done in $((SECONDS - start)) s"
}

if (($# > 0)); then
  run_preset "$1"
  exit 0
fi
KSTATE_SOAK_SECONDS=${KSTATE_SOAK_SECONDS:-30} run_preset default
# The Debian package from the default preset's build: contents, conffiles and
# dependencies (dpkg-deb), installed into a scratch root and upgraded (about 10 s).
scripts/check-package.sh
if [[ ${KSTATE_BENCH:-1} != 0 ]]; then
  # The benchmarks' quick mode, as a smoke check: every scenario once, against the
  # default preset's binaries. It fails only when a command fails, never on a figure.
  start=$SECONDS
  bench/run.sh --quick --build build
  echo "== bench (quick): done in $((SECONDS - start)) s"
fi
if [[ ${KSTATE_ASAN:-1} != 0 ]]; then
  run_preset asan
fi
if [[ ${KSTATE_FUZZ_SECONDS:-10} != 0 ]]; then
  start=$SECONDS
  KSTATE_FUZZ_IF_AVAILABLE=1 scripts/fuzz.sh "${KSTATE_FUZZ_SECONDS:-10}"
  echo "== fuzzing: done in $((SECONDS - start)) s"
fi
