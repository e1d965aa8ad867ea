#!/usr/bin/env bash
# clang-format over the tree (.clang-format: Google style, 100 columns).
#   bash tools/format.sh           # rewrite every tracked C++ file in place
#   bash tools/format.sh --check   # list the files that differ and exit 1 (what .ci/run runs)
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$fmt" ]; then
  echo "format.sh: clang-format not found (apt-get install clang-format; tools/packages.txt)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cc')
if [ "${1:-}" = "--check" ]; then
  bad=0
  for f in "${files[@]}"; do
    if ! "$fmt" --dry-run -Werror "$f" >/dev/null 2>&1; then
      echo "format.sh: $f is not clang-formatted (run: bash tools/format.sh)" >&2
      bad=$((bad + 1))
    fi
  done
  if [ "$bad" -gt 0 ]; then
    echo "format.sh: $bad of ${#files[@]} files need clang-format" >&2
    exit 1
  fi
  echo "format.sh: ${#files[@]} files clang-format clean"
else
  "$fmt" -i "${files[@]}"
fi
