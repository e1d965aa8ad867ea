#!/usr/bin/env bash
# build-graph and import onnx end to end: every built-in workload writes a graph file that
# describe reads back; bad options and bad models give one line, exit 2, and no output file.
# Usage: bash workloads_test.sh PATH_TO_placesim
set -u
BIN=${1:?usage: workloads_test.sh PATH_TO_placesim}
HERE=$(cd "$(dirname "$0")" && pwd)
ONNX="$HERE/../data/onnx"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
die() { echo "FAIL: $*"; fail=1; }

for spec in "rnnlm|steps=3,hidden=64,vocab=100" "nmt|src_len=3,tgt_len=3,hidden=64,vocab=100,layers=4" \
            "inception_v3|batch=2" "resnet50|batch=2" "gpt|layers=2,seq=32,batch=1"; do
  g=${spec%%|*}; o=${spec#*|}
  out="$TMP/$g.json"
  "$BIN" build-graph --graph "$g" --graph-opt "$o" -o "$out" > "$TMP/log" 2>&1 || die "build-graph $g: $(cat "$TMP/log")"
  grep -q "parameters -> $out" "$TMP/log" || die "build-graph $g printed: $(cat "$TMP/log")"
  [ -s "$out" ] || die "build-graph $g wrote nothing"
  "$BIN" describe --graph "$out" > "$TMP/desc" 2>&1 || die "describe $g: $(cat "$TMP/desc")"
  grep -q "^ops:" "$TMP/desc" || die "describe $g printed: $(head -3 "$TMP/desc")"
done
grep -q '"builder": *"gpt"' "$TMP/gpt.json" || die "gpt.json lacks its builder metadata"

"$BIN" import onnx "$ONNX/resnet18.onnx" -o "$TMP/r18.json" --training --batch 4 > "$TMP/log" 2>&1 \
  || die "import onnx: $(cat "$TMP/log")"
grep -q "11689512 parameters" "$TMP/log" || die "import onnx printed: $(cat "$TMP/log")"
"$BIN" describe --graph "$TMP/r18.json" > /dev/null 2>&1 || die "describe of the imported graph"

# Bad input: exit 2, one line on stderr, no file.
expect_error() {  # text-to-find, then the command
  local want=$1; shift
  "$@" > "$TMP/out" 2> "$TMP/err"
  local rc=$?
  [ $rc -eq 2 ] || die "rc=$rc for: $*"
  [ "$(wc -l < "$TMP/err")" -eq 1 ] || die "not one line for: $* -> $(cat "$TMP/err")"
  grep -qF -- "$want" "$TMP/err" || die "message lacks '$want': $(cat "$TMP/err")"
  [ ! -e "$TMP/bad.json" ] || die "wrote an output file for: $*"
}
expect_error "bogus" "$BIN" build-graph --graph nmt --graph-opt bogus=1 -o "$TMP/bad.json"
expect_error "tgt_len" "$BIN" build-graph --graph nmt --graph-opt bogus=1 -o "$TMP/bad.json"
expect_error "batch" "$BIN" build-graph --graph rnnlm --graph-opt batch=-3 -o "$TMP/bad.json"
expect_error "no_such_model" "$BIN" build-graph --graph no_such_model -o "$TMP/bad.json"
printf 'not an onnx model' > "$TMP/junk.onnx"
expect_error "junk.onnx" "$BIN" import onnx "$TMP/junk.onnx" -o "$TMP/bad.json"
expect_error "missing.onnx" "$BIN" import onnx "$TMP/missing.onnx" -o "$TMP/bad.json"
expect_error "optimizer" "$BIN" import onnx "$ONNX/resnet18.onnx" --optimizer lion -o "$TMP/bad.json"

[ $fail -eq 0 ] && echo "workloads_test: ok"
exit $fail
