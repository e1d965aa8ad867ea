#!/usr/bin/env bash
# The include graph between folders and policy/'s sub-libraries (docs/architecture.md, "Layers"):
# prints one "from -> to (N includes)" line per edge and fails (exit 1) on
#   - a cycle between them (folders: sim, models, calibration, policy/comm, policy/place,
#     policy/sweep, policy/rl, tools, tests, fuzz's harnesses under tests/);
#   - an include of a sub-library's internal/ header from outside that sub-library (tests/ may:
#     they test internals);
#   - a source file directly in policy/ (each belongs to a sub-library).
#   bash tools/include_graph.sh          # from anywhere in the checkout; ctest runs it (cli label)
set -euo pipefail
cd "$(dirname "$0")/.."
unit_of() {  # path -> the unit it belongs to
  case "$1" in
    policy/*/*) echo "$1" | cut -d/ -f1-2 ;;
    tests/*) echo tests ;;
    *) echo "${1%%/*}" ;;
  esac
}
fail=0
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
while IFS= read -r file; do
  from=$(unit_of "$file")
  while IFS= read -r inc; do
    [ -n "$inc" ] || continue
    to=$(unit_of "$inc")
    case "$inc" in
      policy/*/internal/*)
        if [ "$from" != "$to" ] && [ "$from" != tests ]; then
          echo "include_graph: $file includes $inc, internal to $to" >&2
          fail=1
        fi ;;
    esac
    [ "$from" = "$to" ] || echo "$from $to" >>"$edges"
  done < <(sed -n 's/^#include "\([a-z_]*\/[^"]*\)".*/\1/p' "$file")
done < <(git ls-files 'sim/*.[ch]pp' 'models/*.[ch]pp' 'calibration/*.[ch]pp' 'policy/*.[ch]pp' \
  'tools/*.[ch]pp' 'tests/*.[ch]pp')
for f in $(git ls-files 'policy/*.[ch]pp'); do
  if [ "$(dirname "$f")" = policy ]; then
    echo "include_graph: $f is directly in policy/; put it in a sub-library" >&2
    fail=1
  fi
done
sort "$edges" | uniq -c | awk '{ printf "%s -> %s (%d includes)\n", $2, $3, $1 }'
# tsort reports a loop on stderr and exits non-zero when the graph has a cycle.
if ! sort -u "$edges" | tsort >/dev/null 2>"$edges.err"; then
  echo "include_graph: include cycle between folders:" >&2
  cat "$edges.err" >&2
  fail=1
fi
rm -f "$edges.err"
[ "$fail" = 0 ] && echo "include_graph: no cycle, no internal header included from outside"
exit "$fail"
