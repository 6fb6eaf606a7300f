#!/usr/bin/env bash
# Builds kstate and runs its main job. Until the daemon exists this shows the
# version and the command line; later it runs the daemon against the emulator on
# examples/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default
build/kstate version
build/kstate --help
