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

# The cluster's NCCL (`nccl_version`, docs/collectives.md "NCCL versions"): a copy of 2x-dgx-a100
# with `nccl_version: 2.26.2` gives the rows of `--nccl-version 2.26.2` (which differ from the
# default's), the flag overrides the file, and the copy validates against the schema.
SRC=$(cd "$(dirname "$0")/../.." && pwd)
V226="$TMP/2x-dgx-a100-nccl226.yaml"
{ cat "$SRC/scenarios/clusters/2x-dgx-a100.yaml"; echo "nccl_version: 2.26.2"; } > "$V226"
"$BIN" collective --cluster "$V226" -b 8 -e 8G -f 4 --json > "$TMP/file.json" || fail "file version exited $?"
"$BIN" collective --cluster 2x-dgx-a100 -b 8 -e 8G -f 4 --nccl-version 2.26.2 --json > "$TMP/flag.json" \
  || fail "flag version exited $?"
"$BIN" collective --cluster 2x-dgx-a100 -b 8 -e 8G -f 4 --json > "$TMP/default.json" || fail "default exited $?"
"$BIN" collective --cluster "$V226" -b 8 -e 8G -f 4 --nccl-version 2.19 --json > "$TMP/over.json" \
  || fail "override exited $?"
cmp -s "$TMP/file.json" "$TMP/flag.json" || fail "nccl_version: 2.26.2 rows differ from --nccl-version 2.26.2"
cmp -s "$TMP/file.json" "$TMP/default.json" && fail "2.26.2 rows equal the default's: the case tests nothing"
cmp -s "$TMP/over.json" "$TMP/default.json" || fail "--nccl-version 2.19 does not override the file's 2.26.2"
python3 - "$SRC" "$V226" <<'PY' || fail "the 2.26.2 copy does not validate against cluster.schema.json"
import json, sys, jsonschema, yaml
schema = json.load(open(f"{sys.argv[1]}/docs/schemas/cluster.schema.json"))
jsonschema.Draft202012Validator(schema).validate(yaml.safe_load(open(sys.argv[2])))
PY
# A graph's all-reduce (16 rank ops, 32 MiB) on the copy takes 2.26's tables: its step moves by what
# the call's prediction moves between the versions (the launch before it is the same).
python3 - "$TMP" <<'PY' || fail "writing the graph"
import json, sys
gpus = [f"n{n}-gpu{g}" for n in range(2) for g in range(8)]
def graph(kind, size, ranks, algo=None):
    ops = []
    for k, _ in enumerate(ranks):
        c = {"kind": kind, "bytes": size, "id": "c0"}
        if algo: c["algo"] = algo
        ops.append({"name": f"r{k}", "type": "Collective", "outputs": [64], "collective": c})
    return {"name": "call", "ops": ops}
def placement(ranks):
    return {"format": "placesim-placement", "version": 1,
            "ops": {f"r{k}": d for k, d in enumerate(ranks)}}
t = sys.argv[1]
json.dump(graph("all-reduce", "32 MiB", gpus), open(f"{t}/ar.json", "w"))
json.dump(placement(gpus), open(f"{t}/ar_p.json", "w"))
pair = ["n0-gpu0", "n1-gpu0"]
json.dump(graph("all-gather", "1 MiB", pair, "pat"), open(f"{t}/pat.json", "w"))
json.dump(placement(pair), open(f"{t}/pat_p.json", "w"))
PY
for c in default:2x-dgx-a100 v226:$V226; do
  "$BIN" simulate --graph "$TMP/ar.json" --cluster "${c#*:}" --placement "$TMP/ar_p.json" --json \
    > "$TMP/step_${c%%:*}.json" || fail "graph all-reduce on ${c%%:*} exited $?"
done
"$BIN" collective --cluster 2x-dgx-a100 -b 32M -e 32M --json > "$TMP/ar19.json" || fail "32M default"
"$BIN" collective --cluster 2x-dgx-a100 -b 32M -e 32M --nccl-version 2.26.2 --json > "$TMP/ar26.json" \
  || fail "32M 2.26.2"
python3 - "$TMP" <<'PY' || fail "the graph's all-reduce does not take the cluster's NCCL version"
import json, sys
t = sys.argv[1]
s19, s26 = (json.load(open(f"{t}/step_{v}.json"))["step_time_s"] for v in ("default", "v226"))
c19, c26 = (json.load(open(f"{t}/ar{v}.json"))[0]["time_s"] for v in ("19", "26"))
assert abs(c26 - c19) > 1e-6, (c19, c26)  # ring network steps: 2 (nNodes - 1) from 2.23, 2 nNodes before
assert abs((s26 - s19) - (c26 - c19)) < 1e-8, (s19, s26, c19, c26)
PY
# PAT in a graph: refused under the default 2.19 tables, taken on the 2.26 copy.
"$BIN" simulate --graph "$TMP/pat.json" --cluster 2x-dgx-a100 --placement "$TMP/pat_p.json" \
  > /dev/null 2>&1; [ $? -eq 2 ] || fail "a pat all-gather on 2.19 tables is not refused"
"$BIN" simulate --graph "$TMP/pat.json" --cluster "$V226" --placement "$TMP/pat_p.json" > /dev/null \
  || fail "a pat all-gather on the 2.26 copy exited $?"

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
expect_error '--p2p.*on or off' collective --cluster dgx-a100 --p2p no
expect_error 'p2p.*on or off' simulate --graph mlp --cluster dgx-a100 --parallel dp=2,p2p=0
# --p2p off (NCCL_P2P_DISABLE=1): the 8-GPU all-reduce through host memory, far below NVLink, at
# the SHM rate of the fitted stored figures (docs/collectives.md, "P2P disabled").
on=$("$BIN" collective --cluster dgx-a100 -b 1G -e 1G --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["busbw_gbps"])')
off=$("$BIN" collective --cluster dgx-a100 -b 1G -e 1G --p2p off --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["busbw_gbps"])')
python3 -c "import sys; on, off = $on, $off; sys.exit(0 if off < on / 10 and 5 < off < 12 else 1)" \
  || fail "--p2p off busbw $off against $on with P2P"
expect_error 'algo' collective --cluster 2x-dgx-a100 --op all-gather --algo pat   # PAT: 2.23+
# PAT with one GPU per node from NCCL 2.23 on (docs/collectives.md, "NCCL versions").
out=$("$BIN" collective --cluster 2x-dgx-a100 --devices n0-gpu0,n1-gpu0 --op all-gather --algo pat \
  --nccl-version 2.23.4 -b 1M -e 1M) || fail "pat exited $?"
echo "$out" | grep -q 'pat/Simple' || fail "no pat/Simple in: $out"
# A bad nccl_version in the cluster: the file and key named, for collective and simulate alike.
sed 's/^nccl_version: .*/nccl_version: 3.1/' "$V226" > "$TMP/bad-nccl.yaml"
expect_error 'bad-nccl.yaml: nccl_version (line [0-9]*): expected an NCCL 2.x version' \
  collective --cluster "$TMP/bad-nccl.yaml"
expect_error 'nccl_version' simulate --graph resnet50 --cluster "$TMP/bad-nccl.yaml" --parallel dp=2
expect_error 'tp' simulate --graph resnet50 --cluster dgx-a100 --parallel dp=2,tp=2
expect_error 'dp' simulate --graph resnet50 --cluster dgx-a100 --parallel dp=9
expect_error '--placement' simulate --graph resnet50 --cluster dgx-a100 --parallel dp=2 --placement heft
expect_error '--placement' simulate --graph resnet50 --cluster dgx-a100
# --compare: a real nccl-tests output beside the model (its sizes, its busbw, the band maxima).
CAL="$(cd "$(dirname "$0")/../data/calibration" && pwd)"
out=$("$BIN" collective --cluster "$CAL/2x-hgx-h100.yaml" -g 8 \
  --compare "$CAL/redhat_spectrumx_nccl-tests_all_reduce_2x8xH200.txt") || fail "--compare exited $?"
[ "$(echo "$out" | grep -c ' %$')" = 25 ] || fail "--compare: expected 25 rows with an error"
echo "$out" | grep -q '^# largest |busbw error|' || fail "--compare: no band line"
expect_error 'GPUs predicted' collective --cluster hgx-h100 \
  --compare "$CAL/redhat_spectrumx_nccl-tests_all_reduce_2x8xH200.txt"
grep -q '^# its rows with wrong' <<<"$out" && fail "--compare: a clean run's rows said wrong: $out"
# Rows whose results nccl-tests found wrong are compared as measured and named (NVIDIA/nccl-tests
# #369: 96 wrong elements at 1 MiB, "4 FAILED").
out=$("$BIN" collective --cluster 2x-dgx-a100 --devices n0-gpu0,n1-gpu0 \
  --compare "$CAL/nccl-tests_issue369_all_reduce_2xGH200_wrong-rows_nccl2292.txt") \
  || fail "#wrong --compare exited $?"
grep -qx '# its rows with wrong elements (#wrong), compared as measured: 1048576 B (96)' <<<"$out" \
  || fail "#wrong rows not named: $out"
[ "$(echo "$out" | grep -c ' %$')" = 25 ] || fail "#wrong: expected 25 rows with an error"
# The count column is nccl-tests' elements per rank for reduce-scatter, the gathers and all-to-all:
# beside a real reduce_scatter_perf_mpi log its rows print its counts (1048576 B on 2 ranks:
# 131072 floats; before, 262144), all-to-all on 4 GPUs 536870912 for 8 GiB.
out=$("$BIN" collective --cluster pcie-4090x8 --op reduce-scatter --devices gpu0,gpu1 \
  --compare "$CAL/rtx5090_nccl-tests_reduce_scatter_mpi_2ranks_nccl2297.txt") || fail "rs --compare exited $?"
grep -q '^ *1048576 *131072 *float *sum' <<<"$out" || fail "reduce-scatter count per rank: $out"
out=$("$BIN" collective --cluster hgx-h100 --op all-to-all --devices gpu0,gpu1,gpu2,gpu3 \
  --compare "$CAL/oci_gb300_nccl-tests_alltoall_4xGB300_nccl2287.txt") || fail "a2a --compare exited $?"
grep -q '^ *8589934592 *536870912 *float *none' <<<"$out" || fail "all-to-all count per rank: $out"
# Issue 16: --compare without --op compares the collective the file shows it ran (a real
# sendrecv_perf -g 8 without a "Collective test starting" line: before, read as all_reduce); with
# --op all-reduce it is refused in one line.
out=$("$BIN" collective --cluster dgx-a100 --devices gpu0,gpu1 \
  --compare "$CAL/li-plus_nccl-tests_sendrecv_8xA100_g8.txt") || fail "sendrecv --compare exited $?"
grep -q '^# placesim collective: send-recv on dgx-a100, 2 GPUs' <<<"$out" || fail "sendrecv op: $out"
grep -q '^# its collective: sendrecv (its command line names sendrecv_perf)' <<<"$out" \
  || fail "sendrecv note: $out"
[ "$(grep -c ' %$' <<<"$out")" = 4 ] || fail "sendrecv: expected 4 rows: $out"
expect_error 'got one of sendrecv' collective --cluster dgx-a100 --op all-reduce \
  --compare "$CAL/li-plus_nccl-tests_sendrecv_8xA100_g8.txt"
# A file of two runs (two real 16-rank H100 logs pasted together) is compared run by run, each
# with its own band line; --run 2 compares the second alone. Before: one table, one band line.
cat "$CAL/nccl-tests_issue290_all_reduce_2x8xH100_srun-l.txt" \
  "$CAL/nccl-tests_all_reduce_2x8xH100_issue309.txt" > "$TMP/two-runs.txt"
out=$("$BIN" collective --cluster "$CAL/2x-hgx-h100.yaml" --compare "$TMP/two-runs.txt") \
  || fail "two-run --compare exited $?"
grep -q '^# run 2 of 2 (from line ' <<<"$out" || fail "no run 2 header: $out"
[ "$(grep -c '^# largest |busbw error|' <<<"$out")" = 2 ] || fail "two runs, not two band lines"
out=$("$BIN" collective --cluster "$CAL/2x-hgx-h100.yaml" --run 2 \
  --compare "$TMP/two-runs.txt") || fail "--run 2 exited $?"
[ "$(grep -c '^# largest |busbw error|' <<<"$out")" = 1 ] || fail "--run 2: one band line"
grep -q '^# run ' <<<"$out" && fail "--run 2 printed run headers"
# GB200 / GB300 NVL72 racks: 72 GPUs in one NVLink domain, beside CoreWeave's real 72-rank run;
# the YAMLs are what tools/nvl72_cluster.py writes.
out=$("$BIN" collective --cluster gb200-nvl72 --nccl-version 2.26.2 \
  --compare "$CAL/coreweave_nccl-tests_all_reduce_72xGB200_nvl72_nccl2262.txt") \
  || fail "gb200 --compare exited $?"
[ "$(grep -c ' %$' <<<"$out")" = 5 ] || fail "gb200: expected 5 rows: $out"
SCN="$(cd "$(dirname "$0")/../../scenarios/clusters" && pwd)"
for s in gb200 gb300; do
  python3 "$(dirname "$0")/../../tools/nvl72_cluster.py" $s | cmp -s - "$SCN/$s-nvl72.yaml" \
    || fail "nvl72_cluster.py $s does not reproduce $s-nvl72.yaml"
done
"$BIN" collective --cluster gb300-nvl72 -b 1G -e 1G > /dev/null || fail "gb300-nvl72 exited $?"
# The ABCI test clusters are what tools/dgx_cluster.py makes of the two-node one (tests/data/README.md);
# a missing source is refused with exit 2.
COL="$(cd "$(dirname "$0")/../data/collectives" && pwd)"
DGX="$(dirname "$0")/../../tools/dgx_cluster.py"
for n in 4 8; do
  python3 "$DGX" $n "$COL/2x-abci-anode.yaml" | cmp -s - "$COL/${n}x-abci-anode.yaml" \
    || fail "dgx_cluster.py $n does not reproduce ${n}x-abci-anode.yaml"
done
# So are the N-node DGX A100 clusters of the multi-node rows of published_throughput.csv.
CLU="$(cd "$(dirname "$0")/../data/clusters" && pwd)"
for n in 4 8 16 32; do
  python3 "$DGX" $n | cmp -s - "$CLU/${n}x-dgx-a100.yaml" \
    || fail "dgx_cluster.py $n does not reproduce clusters/${n}x-dgx-a100.yaml"
done
python3 "$DGX" 4 "$TMP/none.yaml" 2>"$TMP/err"; rc=$?
[ "$rc" = 2 ] && grep -q 'none.yaml' "$TMP/err" || fail "dgx_cluster.py: missing source gave $rc"
# tools/nccl_scoreboard.py refuses a bad manifest in one line naming file and line, exit 2, and
# scores a one-run manifest (the CLI's --compare through it).
SB="$(dirname "$0")/../../tools/nccl_scoreboard.py"
printf 'file,cluster,g,devices,algo,set\ncalibration/x.txt,dgx-a100,eight,,,fit\n' > "$TMP/sb.csv"
python3 "$SB" --placesim "$BIN" --manifest "$TMP/sb.csv" 2>"$TMP/err" >/dev/null; rc=$?
[ "$rc" = 2 ] && grep -q 'sb.csv:2: expected file,cluster,g (a number)' "$TMP/err" \
  || fail "nccl_scoreboard: bad g gave $rc: $(cat "$TMP/err")"
mkdir -p "$TMP/sbdata/collectives" "$TMP/sbdata/calibration"
cp "$CAL/superbench_nccl-tests_all_reduce_8xA100.log" "$TMP/sbdata/calibration/"
printf 'file,cluster,g,devices,algo,set\ncalibration/superbench_nccl-tests_all_reduce_8xA100.log,dgx-a100,8,,,fit\n' \
  > "$TMP/sbdata/collectives/sb.csv"
out=$(python3 "$SB" --placesim "$BIN" --manifest "$TMP/sbdata/collectives/sb.csv" --min-inside 8,8) \
  || fail "nccl_scoreboard: superbench below 8,8 inside: $out"
grep -q 'sizes inside: 8K-1M 8 of 8, >=64M 8 of 8' <<<"$out" || fail "nccl_scoreboard: $out"
# --sizes TEXT prints every judged size of the runs whose file name holds TEXT (SuperBench: 8 + 8
# sizes, the model's ring Simple at 64 MiB) and nothing for a name that matches no run.
out=$(python3 "$SB" --placesim "$BIN" --manifest "$TMP/sbdata/collectives/sb.csv" --sizes superbench) \
  || fail "nccl_scoreboard --sizes failed: $out"
[ "$(grep -c ' GB/s ' <<<"$out")" = 16 ] || fail "nccl_scoreboard --sizes: not 16 size lines: $out"
grep -Eq '^ +67108864 >=64M +measured +200\.91 model .* ring/Simple' <<<"$out" \
  || fail "nccl_scoreboard --sizes: no 64 MiB ring/Simple line: $out"
out=$(python3 "$SB" --placesim "$BIN" --manifest "$TMP/sbdata/collectives/sb.csv" --sizes nomatch)
grep -q ' GB/s ' <<<"$out" && fail "nccl_scoreboard --sizes nomatch printed sizes: $out"
# The manifest's optional p2p column: `off` runs the model with --p2p off (NCCL_P2P_DISABLE=1). The
# DGX A100 run with P2P disabled is then priced over SHM (8.99 GB/s busbw, 73 % above its 5.20), not
# over NVLink (hundreds of GB/s); a value other than on, off or empty is refused.
LLM=llminsights_nccl-tests_all_reduce_4xA100-80GB_dgx_nop2p_nccl2162.txt
cp "$CAL/$LLM" "$TMP/sbdata/calibration/"
for p2p in off ""; do
  printf 'file,cluster,g,devices,algo,set,p2p
calibration/%s,dgx-a100,4,"gpu4,gpu5,gpu6,gpu7",,held_out,%s
' \
    "$LLM" "$p2p" > "$TMP/sbdata/collectives/sb.csv"
  out=$(python3 "$SB" --placesim "$BIN" --manifest "$TMP/sbdata/collectives/sb.csv") \
    || fail "nccl_scoreboard: p2p '$p2p' failed: $out"
  case "$p2p" in
    off) grep -q ' 73\.0 %   0/4 ' <<<"$out" || fail "nccl_scoreboard: p2p off not over SHM: $out" ;;
    *) grep -q ' 73\.0 %' <<<"$out" && fail "nccl_scoreboard: empty p2p ran with P2P off: $out" ;;
  esac
done
printf 'file,cluster,g,devices,algo,set,p2p
calibration/%s,dgx-a100,4,,,held_out,no\n' "$LLM" \
  > "$TMP/sbdata/collectives/sb.csv"
python3 "$SB" --placesim "$BIN" --manifest "$TMP/sbdata/collectives/sb.csv" 2>"$TMP/err" >/dev/null; rc=$?
[ "$rc" = 2 ] && grep -q "sb.csv:2: p2p: expected on, off or empty, got 'no'" "$TMP/err" \
  || fail "nccl_scoreboard: bad p2p gave $rc: $(cat "$TMP/err")"
# The manifest's optional nccl column: `--nccl-version` for an output that prints no NCCL version.
# SkyPilot's a3-ultra all_gather (no version line) under 2.26.6 takes the Hopper ring cap of NCCL
# 2.20+ (8 of 8 sizes >= 64 MiB inside); empty, it runs as 2.19 at the NICs' rate (0 of 8).
SKY=skypilot_gke-a3ultra_nccl-tests_all_gather_2x8xH200_ray-mpirun-tags.txt
cp "$CAL/$SKY" "$CAL/2x-hgx-h100.yaml" "$TMP/sbdata/calibration/"
for v in 2.26.6 ""; do
  printf 'file,cluster,g,devices,algo,set,p2p,nccl\ncalibration/%s,calibration/2x-hgx-h100.yaml,1,,,held_out,,%s\n' \
    "$SKY" "$v" > "$TMP/sbdata/collectives/sb.csv"
  out=$(python3 "$SB" --placesim "$BIN" --manifest "$TMP/sbdata/collectives/sb.csv") \
    || fail "nccl_scoreboard: nccl '$v' failed: $out"
  case "$v" in
    "") want='>=64M 0 of 8' ;;
    *) want='>=64M 8 of 8' ;;
  esac
  grep -q "$want" <<<"$out" || fail "nccl_scoreboard: nccl '$v' wanted '$want': $out"
done
echo "collective_test: ok"
