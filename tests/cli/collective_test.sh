#!/usr/bin/env bash
# `placesim collective` and `simulate --parallel` end to end: nccl-tests' columns, --json rows with
# nccl-tests' bus bandwidth, every collective kind, and bad input (exit 2, one line).
# Usage: bash collective_test.sh PATH_TO_placesim
set -u
BIN=${1:?usage: collective_test.sh PATH_TO_placesim}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The table: one row per size from 8 B to 128 MiB by x2, columns as nccl-tests prints them.
out=$("$BIN" collective --cluster dgx-a100 --op all-reduce -b 8 -e 128M -f 2) || fail "table run exited $?"
grep -q 'size .*count .*type .*redop .*root .*time .*algbw .*busbw' <<<"$out" || fail "no header: $out"
[ "$(grep -c '^ ' <<<"$out")" -eq 25 ] || fail "expected 25 rows (8 B .. 128 MiB): $out"
grep -q ' 134217728 .* float .* sum .* -1 ' <<<"$out" || fail "no 128 MiB row"

# --json: busbw = algbw x 2(n-1)/n for all-reduce on 8 GPUs, (n-1)/n for all-gather on 4.
"$BIN" collective --cluster hgx-h100 -b 1M -e 1G -f 4 --json > "$TMP/ar.json" || fail "json exited $?"
"$BIN" collective --cluster hgx-h100 --op all_gather --devices gpu0,gpu1,gpu2,gpu3 -b 1M -e 1G -f 4 --dtype bf16 \
  --json > "$TMP/ag.json" || fail "all-gather json exited $?"
python3 - "$TMP/ar.json" "$TMP/ag.json" <<'PY' || fail "json checks"
import json, sys
ar, ag = (json.load(open(p)) for p in sys.argv[1:3])
assert len(ar) == 6, ar
for rows, factor in ((ar, 14 / 8), (ag, 3 / 4)):
    for r in rows:
        for k in ("bytes", "time_s", "algbw_gbps", "busbw_gbps"):
            assert k in r, (k, r)
        assert abs(r["algbw_gbps"] - r["bytes"] / r["time_s"] / 1e9) < 1e-6 * r["algbw_gbps"], r
        assert abs(r["busbw_gbps"] - r["algbw_gbps"] * factor) < 1e-9 * r["busbw_gbps"] + 1e-12, r
    assert all(a["time_s"] < b["time_s"] for a, b in zip(rows, rows[1:])), "time grows with size"
assert ar[-1]["algo"] == "nvls", ar[-1]
assert ag[0]["type"] == "bfloat16" and ag[0]["bytes"] % (2 * 4) == 0, ag[0]
PY

for op in reduce-scatter broadcast reduce all-to-all; do
  "$BIN" collective --cluster 2x-dgx-a100 --op $op -b 1M -e 1M > /dev/null || fail "$op exited $?"
done
"$BIN" collective --cluster dgx-a100 --op send-recv --devices gpu0,gpu5 -b 1G -e 1G | grep -q 'direct/Simple' \
  || fail "send-recv"

# simulate --parallel: throughput counts every replica.
out=$("$BIN" simulate --graph resnet50 --graph-opt batch=16 --cluster dgx-a100 --parallel dp=4) || fail "dp exited $?"
grep -q '^throughput: .* (4 replicas x batch 16 / step)' <<<"$out" || fail "no throughput line: $out"

# A call in a step shares links: the 2-node all-reduce beside a host copy into n0-gpu0 ends later
# than the same call alone (the ring's flow into n0-gpu0 and the copy share its PCIe link).
D=$(dirname "$0")/../data/collectives
"$BIN" simulate --graph "$D/allreduce_beside_h2d.json" --cluster 2x-dgx-a100 \
  --placement "$D/allreduce_beside_h2d_placement.json" --json > "$TMP/step.json" || fail "contention exited $?"
"$BIN" collective --cluster 2x-dgx-a100 -b 1G -e 1G --json > "$TMP/alone.json" || fail "alone exited $?"
python3 - "$TMP/step.json" "$TMP/alone.json" <<'PY' || fail "a copy beside the call does not slow it"
import json, sys
step, alone = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert step["step_time_s"] > 1.3 * alone[0]["time_s"], (step["step_time_s"], alone[0]["time_s"])
PY

# Bad input: exit 2, one line naming the flag.
expect_error() {
  local want=$1; shift
  "$BIN" "$@" > "$TMP/o" 2> "$TMP/e"; local rc=$?
  [ $rc -eq 2 ] || fail "exit $rc (want 2) for: $* ($(cat "$TMP/e"))"
  [ "$(wc -l < "$TMP/e")" -eq 1 ] || fail "not one line for: $*: $(cat "$TMP/e")"
  grep -q -- "$want" "$TMP/e" || fail "no '$want' in: $(cat "$TMP/e")"
}
expect_error '--op' collective --cluster dgx-a100 --op gather
expect_error '--devices' collective --cluster dgx-a100 --devices gpu0,gpu9
expect_error 'devices' collective --cluster dgx-a100 --devices gpu0,cpu0
expect_error '--max-bytes' collective --cluster dgx-a100 -b 1G -e 1M
expect_error '--min-bytes' collective --cluster dgx-a100 -b lots
expect_error 'algo' collective --cluster dgx-a100 --algo nvls
expect_error 'send-recv' collective --cluster dgx-a100 --op send-recv
expect_error '--nccl-version' collective --cluster dgx-a100 --nccl-version 3.1
expect_error 'algo' collective --cluster 2x-dgx-a100 --op all-gather --algo pat   # PAT: 2.23+
# PAT with one GPU per node from NCCL 2.23 on (docs/collectives.md, "NCCL versions").
out=$("$BIN" collective --cluster 2x-dgx-a100 --devices n0-gpu0,n1-gpu0 --op all-gather --algo pat \
  --nccl-version 2.23.4 -b 1M -e 1M) || fail "pat exited $?"
echo "$out" | grep -q 'pat/Simple' || fail "no pat/Simple in: $out"
expect_error 'tp' simulate --graph resnet50 --cluster dgx-a100 --parallel dp=2,tp=2
expect_error 'dp' simulate --graph resnet50 --cluster dgx-a100 --parallel dp=9
expect_error '--placement' simulate --graph resnet50 --cluster dgx-a100 --parallel dp=2 --placement heft
expect_error '--placement' simulate --graph resnet50 --cluster dgx-a100
echo "collective_test: ok"
