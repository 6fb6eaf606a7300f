#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/*) with clang, ASan and UBSan into
# build/fuzz and runs each for the given number of seconds (default 60), starting
# from its seed corpus in tests/fuzz/corpus/<name without _fuzz>/. New inputs go to
# build/fuzz/corpus/, never into the source tree; crashes are written to
# build/fuzz/artifacts/ and fail the script.
#   scripts/fuzz.sh [seconds]
set -euo pipefail
seconds=${1:-60}
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build/fuzz"
# Warnings stay warnings here: the fuzz build uses another compiler than the one the
# project's -Werror policy is checked with.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DKSTATE_FUZZ=ON -DKSTATE_WERROR=OFF >/dev/null
targets=()
for source in "$root"/tests/fuzz/*_fuzz.cpp; do
  targets+=("$(basename "$source" .cpp)")
done
cmake --build "$build" --target "${targets[@]}" -- -j2
mkdir -p "$build/artifacts"
status=0
for target in "${targets[@]}"; do
  seeds="$root/tests/fuzz/corpus/${target%_fuzz}"
  work="$build/corpus/${target%_fuzz}"
  mkdir -p "$work"
  echo "fuzz: $target for ${seconds}s (seeds: ${seeds#$root/})"
  if ! "$build/tests/fuzz/$target" "$work" "$seeds" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/artifacts/$target-"; then
    echo "fuzz: $target FAILED (see $build/artifacts/)" >&2
    status=1
  fi
done
exit $status
