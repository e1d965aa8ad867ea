#!/usr/bin/env bash
# The LibTorch-free front binary (tools/CMakeLists.txt): where build/placesim-torch exists,
# build/placesim must not load LibTorch, and `train` (which only placesim-torch can run) must
# still work through it, handed over with the same arguments.
set -u
PLACESIM=${1:?usage: front_test.sh PATH_TO_placesim}
FULL="$(dirname "$PLACESIM")/placesim-torch"
fail() { echo "FAIL: $*" >&2; exit 1; }
if [ ! -x "$FULL" ]; then
  echo "front_test: ok (no placesim-torch: a build without LibTorch)"
  exit 0
fi
ldd "$PLACESIM" | grep -q libtorch && fail "$PLACESIM links LibTorch"
ldd "$FULL" | grep -q libtorch || fail "$FULL does not link LibTorch"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$PLACESIM" train --graph rnnlm --graph-opt layers=1,steps=2 --cluster paper-2gpu --iterations 1 \
  --samples 2 --groups 4 --hidden 16 --no-plot --no-table -o "$T/p.json" >"$T/out" 2>"$T/err" \
  || { cat "$T/err"; fail "train through the front binary"; }
[ -s "$T/p.json" ] || fail "train through the front binary wrote no placement"
# A bad flag is still one line from the binary that owns the command.
"$PLACESIM" train --samples 0 >/dev/null 2>"$T/err" && fail "--samples 0 accepted"
[ "$(wc -l < "$T/err")" -eq 1 ] || fail "bad flag: expected one line, got: $(cat "$T/err")"
echo "front_test: ok"
