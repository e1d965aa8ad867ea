#!/usr/bin/env bash
# `placesim simulate --graph gpt-huge`: the streamed dp x tp x pp GPT step end to end, the same
# JSON outcome on --threads 1, 2 and 4, and bad input (exit 2, one line, no report written).
# Usage: bash huge_step_test.sh PATH_TO_placesim
set -u
BIN=${1:?usage: huge_step_test.sh PATH_TO_placesim}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
SMALL=(--graph gpt-huge --graph-opt layers=4,hidden=1024,seq=512,vocab=8192
       --parallel dp=2,tp=4,pp=2,mb=4 --cluster 2x-dgx-a100)

out=$("$BIN" simulate "${SMALL[@]}") || fail "summary run exited $?"
grep -q '^step time: ' <<<"$out" || fail "no step time: $out"
grep -qE '^gpt-huge: 6432 ops \(3952 in all-reduce rings\), [0-9]+ input edges on 16 GPUs' <<<"$out" \
  || fail "no gpt-huge line: $out"

for t in 1 2 4; do
  "$BIN" simulate "${SMALL[@]}" --threads "$t" --report "$TMP/$t.json" > /dev/null 2>&1 \
    || fail "--threads $t exited $?"
  sed -E 's/"sim_wall_s": *[0-9.e+-]+//' "$TMP/$t.json" > "$TMP/$t.cmp"
done
cmp -s "$TMP/1.cmp" "$TMP/2.cmp" || fail "--threads 2 differs from 1"
cmp -s "$TMP/1.cmp" "$TMP/4.cmp" || fail "--threads 4 differs from 1"
grep -q '"step_time_ns"' "$TMP/1.json" || fail "no step_time_ns in the report"

bad() {  # expected-substring, args...: exit 2 with one line naming it, no report
  local want=$1; shift
  rm -f "$TMP/bad.json"
  err=$("$BIN" simulate "$@" --report "$TMP/bad.json" 2>&1 >/dev/null)
  local rc=$?
  [ "$rc" -eq 2 ] || fail "exit $rc (want 2) for $*: $err"
  [ "$(wc -l <<<"$err")" -eq 1 ] || fail "more than one line for $*: $err"
  grep -q -- "$want" <<<"$err" || fail "no '$want' in: $err"
  [ ! -e "$TMP/bad.json" ] || fail "a report was written for $*"
}
bad "--parallel" --graph gpt-huge --cluster 2x-dgx-a100
bad "heads" --graph gpt-huge --graph-opt heads=8 --parallel dp=2 --cluster 2x-dgx-a100
bad "GPUs" --graph gpt-huge --graph-opt layers=4 --parallel dp=4,tp=8 --cluster 2x-dgx-a100
bad "--placement" --graph gpt-huge --graph-opt layers=4 --parallel dp=2 --cluster 2x-dgx-a100 \
  --placement single-gpu
echo "huge_step_test: ok"
