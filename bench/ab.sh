#!/usr/bin/env bash
# bench/ab.sh: is kstate build B faster than build A on one scenario? It alternates the
# two binaries pair after pair (the order swapped every other pair), with kstate pinned
# to the first CPUs and the emulator to the last one. On the 2-CPU VMs these benchmarks
# run on, two unpinned runs of one binary differ by up to 20%, so a change of a few
# percent only shows in a pinned, alternating comparison (bench/RESULTS.md, thirteenth
# round: 30-40 pairs told 2 ms apart where 60 unpinned pairs could not). --unpinned
# runs both unpinned, as bench/run.sh does: what a change to memory or threads does
# there can differ (bench/RESULTS.md, fifteenth round: transparent huge pages won
# pinned and lost unpinned).
#
#   bench/ab.sh --a KSTATE_A --b KSTATE_B [--scenario cold|reapply] [--pairs N]
#               [--build DIR] [--objects N] [--unpinned]
#
# cold: each run on a fresh emulator with the corpus' CRD created first, a fresh cache
# (discovery asked), as bench/run.sh's scenario 1. reapply: one emulator, the corpus
# applied once, then re-applies with nothing changed (scenario 2), each binary with its
# own warm cache. Prints every pair, then medians, quartiles and how many pairs B won.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build="$repo/build"
a="" b="" scenario=cold pairs=30 objects=1000 pinned=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --a) a=$2; shift 2 ;;
    --b) b=$2; shift 2 ;;
    --scenario) scenario=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --objects) objects=$2; shift 2 ;;
    --unpinned) pinned=0; shift ;;
    *) echo "bench/ab.sh: unknown argument $1 (see the top of the script)" >&2; exit 2 ;;
  esac
done
[[ -x "$a" && -x "$b" ]] || { echo "bench/ab.sh: --a and --b must name two kstate binaries" >&2; exit 2; }
[[ $scenario == cold || $scenario == reapply ]] || { echo "bench/ab.sh: --scenario cold or reapply" >&2; exit 2; }
emulator="$build/kstate-emulator"
corpus_tool="$build/bench/kstate-bench-corpus"
for tool in "$emulator" "$corpus_tool"; do
  [[ -x "$tool" ]] || { echo "bench/ab.sh: $tool not found: build it or pass --build DIR" >&2; exit 2; }
done
cpus=$(nproc)
((cpus >= 2)) || { echo "bench/ab.sh: needs 2 CPUs or more (kstate and the emulator on separate ones)" >&2; exit 2; }
server_cpu=$((cpus - 1))
client_cpus="0-$((cpus - 2))"
if ((pinned == 0)); then
  server_cpu="0-$((cpus - 1))"
  client_cpus=$server_cpu
fi

work=$(mktemp -d /tmp/kstate-ab.XXXXXX)
emulator_pid=""
cleanup() {
  [[ -n "$emulator_pid" ]] && kill "$emulator_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
corpus="$work/corpus"
"$corpus_tool" --out "$corpus" --objects "$objects" --namespaces $((objects / 100 > 0 ? objects / 100 : 1)) >/dev/null
kc="$work/kubeconfig"

start_emulator() {
  [[ -n "$emulator_pid" ]] && { kill "$emulator_pid" 2>/dev/null; wait "$emulator_pid" 2>/dev/null || true; }
  rm -f "$kc"
  taskset -c "$server_cpu" "$emulator" --listen 127.0.0.1:0 --kubeconfig-out "$kc" >"$work/emulator.log" 2>&1 &
  emulator_pid=$!
  for _ in $(seq 200); do
    grep -q "listening on" "$work/emulator.log" 2>/dev/null && [[ -s "$kc" ]] && break
    sleep 0.05
  done
  [[ -s "$kc" ]] || { echo "bench/ab.sh: the emulator did not start" >&2; cat "$work/emulator.log" >&2; exit 1; }
  # The CRD first, as bench/run.sh does (kubectl when installed; it can wait for Established).
  if command -v kubectl >/dev/null; then
    kubectl --kubeconfig "$kc" apply --server-side -f "$corpus/00-crd.yaml" >/dev/null
    kubectl --kubeconfig "$kc" wait --for=condition=Established --timeout=30s crd/widgets.bench.kstate.io >/dev/null
  else
    "$a" apply "$corpus/00-crd.yaml" --kubeconfig "$kc" --cache-dir "$work/crd-cache" >/dev/null 2>&1
    sleep 2
  fi
}

# One kstate apply on the client CPUs; leaves its milliseconds (one decimal) in $elapsed.
# (Not through $(...): the cold scenario starts an emulator, which must stay this
# shell's child to be stopped.)
elapsed=""
run_once() {  # binary label
  local cache="$work/cache-$2" start end
  if [[ $scenario == cold ]]; then
    start_emulator
    cache="$work/cache-cold"
    rm -rf "$cache"
  fi
  start=${EPOCHREALTIME/./}
  taskset -c "$client_cpus" "$1" apply "$corpus" --kubeconfig "$kc" --cache-dir "$cache" >/dev/null 2>&1 ||
    { echo "bench/ab.sh: $1 apply failed" >&2; exit 1; }
  end=${EPOCHREALTIME/./}
  printf -v elapsed '%d.%d' $(((end - start) / 1000)) $((((end - start) % 1000) / 100))
}

if [[ $scenario == reapply ]]; then
  start_emulator
  "$a" apply "$corpus" --kubeconfig "$kc" --cache-dir "$work/cache-a" >/dev/null 2>&1
  "$b" apply "$corpus" --kubeconfig "$kc" --cache-dir "$work/cache-b" >/dev/null 2>&1
fi

echo "bench/ab.sh: $scenario, $pairs pairs, $objects objects; kstate on CPU $client_cpus, the emulator on CPU $server_cpu$( ((pinned)) || echo " (unpinned)")"
echo "A: $a"
echo "B: $b"
results="$work/pairs"
for ((pair = 0; pair < pairs; pair++)); do
  if ((pair % 2 == 0)); then
    run_once "$a" a && time_a=$elapsed
    run_once "$b" b && time_b=$elapsed
  else
    run_once "$b" b && time_b=$elapsed
    run_once "$a" a && time_a=$elapsed
  fi
  echo "$time_a $time_b" | tee -a "$results"
done
summary() {  # column label
  awk -v column="$1" '{ print $column }' "$results" | sort -n | awk -v label="$2" '
    { value[NR] = $1 }
    END { printf "%s: median %s ms, quartiles %s-%s ms\n", label, value[int((NR + 1) / 2)], value[int((NR + 3) / 4)], value[int((3 * NR + 1) / 4)] }'
}
summary 1 A
summary 2 B
awk '{ if ($2 < $1) b++; else if ($1 < $2) a++ } END { printf "B faster in %d of %d pairs, A faster in %d\n", b, NR, a }' "$results"
