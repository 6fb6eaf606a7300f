#!/usr/bin/env bash
# Builds kstate's Debian package from the default preset: only kstate and its generated
# man page and completions are built (not the tests), then `cpack -G DEB` writes
# build/package/kstate_<version>_<arch>.deb, whose path is the last line printed.
# Install it with `sudo apt install ./build/package/kstate_*.deb` (systemd/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset default >/dev/null
cmake --build --preset default --target kstate kstate_docs
rm -f build/package/kstate_*.deb
(cd build && cpack -G DEB -B "$PWD/package" >/dev/null)
ls build/package/kstate_*.deb
