#!/usr/bin/env bash
# Installs the Debian packages kstate needs to build and test, and nothing else.
# Idempotent: packages already installed are skipped, and apt-get runs only when
# something is missing, so a second run costs a few dpkg queries.
#   scripts/install-deps.sh           everything the tests, fuzzing and benchmarks use
#   scripts/install-deps.sh --build   only what building kstate and its Debian package
#                                     needs (compiler, CMake, the -dev packages; no
#                                     clang, lld or test tools)
set -euo pipefail

build_packages=(
  build-essential cmake ninja-build pkg-config git
  libboost-dev libboost-system-dev
  libssl-dev openssl
  rapidjson-dev libyaml-cpp-dev libyaml-dev libspdlog-dev libfmt-dev
  catch2 libcli11-dev libsystemd-dev libdtl-dev
)
packages=("${build_packages[@]}"
  clang clang-format clang-tidy libclang-rt-14-dev lld
  python3
  jq curl time  # bench/run.sh (time: peak memory), whose quick mode CI runs as a smoke check
)
# Optional tools: tests that use them skip when absent (kubectl is not in Debian 12;
# zsh and fish check the completion scripts).
optional=(systemd prometheus zsh fish)
if [[ ${1:-} == --build ]]; then
  packages=("${build_packages[@]}")
  optional=()
fi

missing=()
for p in "${packages[@]}" "${optional[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} required packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# Required packages must install; optional ones may fail without failing the build.
req_missing=()
for p in "${missing[@]}"; do
  for r in "${packages[@]}"; do [[ $p == "$r" ]] && req_missing+=("$p"); done
done
if ((${#req_missing[@]})); then
  $SUDO apt-get install -y -qq --no-install-recommends "${req_missing[@]}"
fi
for p in "${optional[@]}"; do
  if [[ " ${missing[*]} " == *" $p "* ]]; then
    $SUDO apt-get install -y -qq --no-install-recommends "$p" || echo "install-deps: optional $p not installed"
  fi
done
