#!/usr/bin/env bash
# Builds kstate and runs its main job: `kstate daemon` watching examples/ and
# reconciling it into a local API server (build/kstate-emulator), then shows what was
# created and stops both. Only the two programs it runs are built (a few minutes on 2
# cores; scripts/test.sh builds and runs the tests). Everything lives in a temporary
# folder; nothing is installed besides the Debian build dependencies. Non-interactive,
# safe to run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/install-deps.sh --build
cmake --preset default >/dev/null
cmake --build --preset default --target kstate kstate-emulator

work=$(mktemp -d /tmp/kstate-demo.XXXXXX)
emulator_pid=""
daemon_pid=""
cleanup() {
  # Stop what this script started, by process id, then remove its folder.
  if [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; then kill -TERM "$daemon_pid" && wait "$daemon_pid" || true; fi
  if [[ -n $emulator_pid ]] && kill -0 "$emulator_pid" 2>/dev/null; then kill -TERM "$emulator_pid" && wait "$emulator_pid" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# Waits up to $2 seconds for the command $1 to succeed.
wait_for() {
  local deadline=$((SECONDS + $2))
  until eval "$1" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then echo "demo: timed out waiting for: $1" >&2; return 1; fi
    sleep 0.2
  done
}

echo "== starting the API server emulator"
build/kstate-emulator --listen 127.0.0.1:0 --kubeconfig-out "$work/kubeconfig" --data-dir "$work/emulator" \
  >"$work/emulator.out" 2>"$work/emulator.log" &
emulator_pid=$!
wait_for "grep -q 'listening on' '$work/emulator.out' && test -s '$work/kubeconfig'" 20
sed -n 's/^listening on /   API server: /p' "$work/emulator.out"

cat >"$work/config.yaml" <<CONFIG
manifests-dir: $root/examples
kubeconfig: $work/kubeconfig
listen-address: 127.0.0.1:0
cache-dir: $work/cache
state-dir: $work/state
debounce: 100ms
CONFIG

echo "== starting: kstate daemon --config $work/config.yaml  (manifests: examples/)"
build/kstate daemon --config "$work/config.yaml" 2>"$work/daemon.log" &
daemon_pid=$!
wait_for "grep -q 'serving /healthz' '$work/daemon.log'" 20
port=$(sed -n 's/.*serving \/healthz, \/readyz and \/metrics on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/daemon.log" | head -n1)
# curl is not on a fresh machine: bash's /dev/tcp is enough for a GET.
http_get() {
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$1" >&3
  cat <&3
  exec 3<&-
}
wait_for "http_get /readyz | head -n1 | grep -q ' 200 '" 40
echo "== /readyz answers 200 on 127.0.0.1:$port; the daemon's log:"
sed 's/^/   /' "$work/daemon.log"

echo "== what was created"
if command -v kubectl >/dev/null; then
  kubectl --kubeconfig "$work/kubeconfig" get all,cm,secret -n kstate-demo || echo "   (kubectl could not list them)"
else
  echo "   (kubectl not installed: asking kstate test whether anything is pending instead)"
  build/kstate test examples/ --kubeconfig "$work/kubeconfig" --cache-dir "$work/cache" || true
fi
echo "== metrics (excerpt)"
http_get /metrics | grep -E '^kstate_(managed_objects|reconciles_total|ready|api_requests_total)' | sed 's/^/   /'

echo "== stopping (SIGTERM)"
kill -TERM "$daemon_pid"
wait "$daemon_pid" && echo "   kstate daemon exited 0"
daemon_pid=""
kill -TERM "$emulator_pid"
wait "$emulator_pid" || true
emulator_pid=""
echo "== done"
