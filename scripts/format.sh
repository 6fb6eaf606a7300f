#!/usr/bin/env bash
# clang-format over the project's C++ sources. `--check` fails (listing the files)
# when anything is not formatted; without it, files are rewritten in place.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.cpp' '*.hpp' | while read -r f; do [[ -f $f ]] && echo "$f"; done)
if ((${#files[@]} == 0)); then exit 0; fi
if [[ ${1:-} == "--check" ]]; then
  bad=()
  for f in "${files[@]}"; do
    if ! clang-format --style=file "$f" | cmp -s - "$f"; then bad+=("$f"); fi
  done
  if ((${#bad[@]})); then
    echo "format: not clang-formatted (run scripts/format.sh): ${bad[*]}" >&2
    exit 1
  fi
  echo "format: ${#files[@]} files clang-formatted"
else
  clang-format --style=file -i "${files[@]}"
fi
