#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/*_fuzz.cpp) with clang, ASan and UBSan and
# runs each for the given number of seconds (default 60), starting from its seed
# corpus in tests/fuzz/corpus/<name without _fuzz>/. New inputs go to
# <build>/corpus/, never into the source tree; crashes are written to
# <build>/artifacts/ and fail the script.
#   scripts/fuzz.sh [seconds] [target...]      e.g. scripts/fuzz.sh 300 watch_fuzz
# Environment: KSTATE_FUZZ_BUILD (build folder, default build/fuzz); KSTATE_FUZZ_JOBS
# (compilations and fuzzers running at once, default 2); KSTATE_FUZZ_IF_AVAILABLE=1
# (CI: exit 0 with a message when clang++ or libFuzzer is missing, instead of failing).
set -euo pipefail
seconds=${1:-60}
shift || true
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${KSTATE_FUZZ_BUILD:-$root/build/fuzz}"
jobs="${KSTATE_FUZZ_JOBS:-2}"

# libFuzzer ships with clang's runtime (Debian: libclang-rt-14-dev); check that a
# trivial target links before configuring anything.
probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' \
  > "$probe_dir/probe.cpp"
if ! command -v clang++ >/dev/null ||
   ! clang++ -fsanitize=fuzzer,address,undefined "$probe_dir/probe.cpp" -o "$probe_dir/probe" 2>/dev/null; then
  if [[ ${KSTATE_FUZZ_IF_AVAILABLE:-0} == 1 ]]; then
    echo "fuzz: skipped (clang++ with libFuzzer not available; scripts/install-deps.sh installs clang and libclang-rt-14-dev)"
    exit 0
  fi
  echo "fuzz: clang++ with libFuzzer is needed (scripts/install-deps.sh installs clang and libclang-rt-14-dev)" >&2
  exit 1
fi

targets=("$@")
if ((${#targets[@]} == 0)); then
  for source in "$root"/tests/fuzz/*_fuzz.cpp; do
    targets+=("$(basename "$source" .cpp)")
  done
fi
# Warnings stay warnings here: the fuzz build uses another compiler than the one the
# project's -Werror policy is checked with. Only the fuzz
# targets and the libraries they need are built.
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DKSTATE_FUZZ=ON -DKSTATE_WERROR=OFF "${launcher[@]}" >/dev/null
cmake --build "$build" --target "${targets[@]}" -- -j"$jobs"
mkdir -p "$build/artifacts"
# Runs one target; its output goes to <build>/<target>.log.
run_target() {
  local target=$1
  local seeds="$root/tests/fuzz/corpus/${target%_fuzz}"
  local work="$build/corpus/${target%_fuzz}"
  mkdir -p "$work"
  "$build/tests/fuzz/$target" "$work" "$seeds" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/artifacts/$target-" \
    >"$build/$target.log" 2>&1
}
# Says how a finished target did; returns non-zero when it failed.
report_target() {
  local target=$1 exit_code=$2 log="$build/$1.log"
  if ((exit_code != 0)); then
    # From the first report (sanitizer, abort, uncaught exception) to the end.
    sed -n '/ERROR:\|runtime error\|terminate called\|deadly signal/,$p' "$log" | head -n 80 >&2
    echo "fuzz: $target FAILED (log: $log, input: $build/artifacts/)" >&2
    return 1
  fi
  local runs coverage
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
  echo "fuzz: $target ok: ${runs:-?} inputs in ${seconds}s, $coverage," \
    "corpus $(find "$build/corpus/${target%_fuzz}" -type f | wc -l) files"
}

# $jobs targets at a time (each fuzzer uses one core).
echo "fuzz: ${targets[*]} for ${seconds}s each, $jobs at a time"
status=0
for ((first = 0; first < ${#targets[@]}; first += jobs)); do
  batch=("${targets[@]:first:jobs}")
  pids=()
  for target in "${batch[@]}"; do
    run_target "$target" &
    pids+=($!)
  done
  for i in "${!batch[@]}"; do
    code=0
    wait "${pids[$i]}" || code=$?
    report_target "${batch[$i]}" "$code" || status=1
  done
done
exit $status
