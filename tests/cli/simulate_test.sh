#!/usr/bin/env bash
# `placesim simulate` end to end: the summary, --json keys, --report and --trace files (written
# whole), a placement file, a calibration file, --stop-at-oom, and bad input (exit 2, one line,
# no half-written output).
# Usage: bash simulate_test.sh PATH_TO_placesim
set -u
BIN=${1:?usage: simulate_test.sh PATH_TO_placesim}
HERE=$(cd "$(dirname "$0")" && pwd)
GOLDEN="$HERE/../data/golden"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Summary.
out=$("$BIN" simulate --graph rnnlm --graph-opt layers=2,steps=4,batch=32,hidden=256,vocab=1000 \
      --cluster paper-2gpu --placement single-gpu) || fail "summary run exited $?"
grep -q '^step time: ' <<<"$out" || fail "no step time in summary: $out"
grep -q '^gpu0 ' <<<"$out" || fail "no per-device line in summary"

# --json with the documented keys, plus report and trace files.
"$BIN" simulate --graph "$GOLDEN/tiny_staged_streams/graph.json" --cluster "$GOLDEN/tiny_staged_streams/cluster.yaml" \
  --placement "$GOLDEN/tiny_staged_streams/placement.json" --json --report "$TMP/r.json" --trace "$TMP/t.json" \
  > "$TMP/stdout.json" || fail "json run exited $?"
python3 - "$TMP/stdout.json" "$TMP/r.json" "$TMP/t.json" "$GOLDEN/tiny_staged_streams/expected.json" <<'PY' || fail "json checks"
import json, sys
out, rep, trace, expected = (json.load(open(p)) for p in sys.argv[1:5])
for k in ["step_time_s", "oom", "devices", "links", "transfers", "events", "critical_path", "sim_wall_s"]:
    assert k in out, k
for k in ["name", "busy_s", "utilization", "peak_memory_bytes", "memory_capacity_bytes", "oom"]:
    assert k in out["devices"][0], k
for k in ["name", "bytes", "busy_s"]:
    assert k in out["links"][0], k
out.pop("sim_wall_s"); rep.pop("sim_wall_s")
assert out == rep, "report differs from stdout"
assert out == expected, "CLI outcome differs from the golden case"
names = {e["args"]["name"] for e in trace["traceEvents"] if e.get("ph") == "M" and e["name"] == "thread_name"}
for n in ["host launch thread", "stream 0", "stream 1", "D2H copy engine 0", "H2D copy engine 0", "worker 0"]:
    assert n in names, (n, names)
evs = trace["traceEvents"]
# One counter track per link (no async track per transfer), memory counters, arrows, args.
assert not any(e.get("ph") in ("b", "e") for e in evs)
assert any(e.get("ph") == "C" and e["name"] == "sw0-gpu0" for e in evs)
assert any(e.get("ph") == "C" and e["name"] == "memory" for e in evs)
assert any(e.get("ph") == "f" and e["cat"] == "ac2g" and e.get("bp") == "e" for e in evs)
assert any(e.get("ph") == "s" and e["cat"] == "dep" for e in evs)
assert all("args" in e for e in evs if e.get("ph") == "X")
kern = [e for e in evs if e.get("ph") == "X" and e["cat"] == "kernel"]
assert kern and all({"op", "op type", "flops", "priced by", "stream", "device"} <= set(e["args"]) for e in kern)
PY

# What Perfetto needs of the trace: slices on one track nest properly, every flow end (s, f) lies
# inside a slice of its track, flow ids are unique; on a multi-GPU step with copies and links.
"$BIN" simulate --graph nmt --graph-opt layers=2,src_len=8,tgt_len=8,batch=32,hidden=256,vocab=1000 \
  --cluster paper-4gpu --placement expert --trace "$TMP/nmt.json" > /dev/null || fail "nmt trace run exited $?"
python3 - "$TMP/nmt.json" <<'PY' || fail "trace structure"
import bisect, collections, json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
tracks = collections.defaultdict(list)
for e in ev:
    if e.get("ph") == "X":
        tracks[(e["pid"], e["tid"])].append((e["ts"], -e["dur"], e["ts"] + e["dur"]))
for k, v in tracks.items():
    v.sort()
    stack = []
    for ts, _, end in v:
        while stack and stack[-1] <= ts + 1e-9:
            stack.pop()
        assert not stack or end <= stack[-1] + 1e-6, ("slices overlap without nesting", k, ts)
        stack.append(end)
def inside(pid, tid, ts):
    v = tracks.get((pid, tid), [])
    i = bisect.bisect_right(v, (ts + 1e-9, 1, 0))
    return any(v[j][0] <= ts + 1e-9 and v[j][2] >= ts - 1e-9 for j in range(i - 1, max(-1, i - 50), -1))
flows = [e for e in ev if e.get("ph") in ("s", "f")]
assert flows and all(inside(e["pid"], e["tid"], e["ts"]) for e in flows), "a flow end outside every slice"
ids = collections.Counter((e["cat"], e["id"], e["ph"]) for e in flows)
assert max(ids.values()) == 1, "duplicate flow ids"
assert sum(1 for e in ev if e.get("ph") == "M" and e["name"] == "thread_name") < 40, "too many tracks"
PY

# Calibration file and --stop-at-oom.
"$BIN" simulate --graph "$GOLDEN/gpt_paper4gpu_calibrated/graph.json" --cluster "$GOLDEN/gpt_paper4gpu_calibrated/cluster.yaml" \
  --placement "$GOLDEN/gpt_paper4gpu_calibrated/placement.json" --calibration "$GOLDEN/gpt_paper4gpu_calibrated/calibration.yaml" \
  --json > "$TMP/cal.json" || fail "calibrated run exited $?"
python3 -c "import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); a.pop('sim_wall_s'); assert a==b" \
  "$TMP/cal.json" "$GOLDEN/gpt_paper4gpu_calibrated/expected.json" || fail "calibrated outcome differs from golden"
"$BIN" simulate --graph "$GOLDEN/rnnlm_oom/graph.json" --cluster "$GOLDEN/rnnlm_oom/cluster.yaml" \
  --placement "$GOLDEN/rnnlm_oom/placement.json" --stop-at-oom > "$TMP/oom.txt" || fail "oom run exited $?"
grep -q 'OUT OF MEMORY' "$TMP/oom.txt" || fail "no OOM in summary"
grep -q 'OOM on gpu0' "$TMP/oom.txt" || fail "no OOM device line"

# Bad input: exit 2, one line on stderr, no report written.
check_bad() {
  local want=$1; shift
  rm -f "$TMP/bad.json"
  "$BIN" simulate "$@" --report "$TMP/bad.json" > /dev/null 2> "$TMP/err.txt"
  local rc=$?
  [ $rc -eq 2 ] || fail "expected exit 2, got $rc for: $*"
  [ "$(wc -l < "$TMP/err.txt")" -eq 1 ] || fail "expected one line on stderr for: $* ($(cat "$TMP/err.txt"))"
  grep -q -- "$want" "$TMP/err.txt" || fail "message lacks '$want': $(cat "$TMP/err.txt")"
  [ ! -e "$TMP/bad.json" ] || fail "report written despite bad input: $*"
}
printf 'format: placesim-calibration/1\ndevices:\n  K80-GK210:\n    exact: {"x": "fast"}\n' > "$TMP/bad-cal.yaml"
check_bad 'exact' --graph "$GOLDEN/tiny_staged_streams/graph.json" --cluster "$GOLDEN/tiny_staged_streams/cluster.yaml" \
  --placement "$GOLDEN/tiny_staged_streams/placement.json" --calibration "$TMP/bad-cal.yaml"
check_bad 'nosuch' --graph "$GOLDEN/tiny_staged_streams/graph.json" --cluster "$GOLDEN/tiny_staged_streams/cluster.yaml" \
  --placement nosuch-method
check_bad 'cal.yaml' --graph "$GOLDEN/tiny_staged_streams/graph.json" --cluster "$GOLDEN/tiny_staged_streams/cluster.yaml" \
  --placement "$GOLDEN/tiny_staged_streams/placement.json" --calibration "$TMP/missing-cal.yaml"
# seq_dist (a binned loader's padded lengths, models/seq_dist.hpp): the step is the weighted mean
# of the steps at each padded length, each as a plain run at that seq and masked reports it.
printf 'length,count\n10,3\n20,1\n60,2\n64,2\n' > "$TMP/lens.csv"
G="layers=2,hidden=64,heads=4,vocab=100,positions=64,optimizer=sgd,seq=64,masked=16,batch=2"
"$BIN" simulate --graph gpt --graph-opt "$G,seq_dist=$TMP/lens.csv,seq_bin=32" --cluster paper-2gpu \
  --parallel dp=2 --json > "$TMP/sd.json" || fail "seq_dist run exited $?"
python3 - "$BIN" "$TMP/sd.json" <<'PY2' || fail "seq_dist checks"
import json, subprocess, sys
bin_, out = sys.argv[1], json.load(open(sys.argv[2]))
sd = out["seq_dist"]
assert sd["draws"] == 4 and sd["seq_bin"] == 32 and sd["seq_align"] == 8, sd
# Bin (0, 32]: 4 sequences, 3 of 10 tokens (padded to 16), 1 of 20 (to 24); 4 draws (2 x dp=2).
# Bin (32, 64]: to 64. Shares: 0.5 x (3/4)^4, 0.5 x (1 - (3/4)^4), 0.5.
want = {16: 0.5 * 0.75**4, 24: 0.5 * (1 - 0.75**4), 64: 0.5}
got = {r["seq"]: r["weight"] for r in sd["lengths"]}
assert got.keys() == want.keys() and all(abs(got[k] - want[k]) < 1e-12 for k in want), got
total = 0.0
for r in sd["lengths"]:
    assert r["graph_opt"].endswith(f"seq={r['seq']},masked={max(1, round(16 * r['seq'] / 64))}"), r
    one = subprocess.run([bin_, "simulate", "--graph", "gpt", "--graph-opt", r["graph_opt"], "--cluster",
                          "paper-2gpu", "--parallel", "dp=2", "--json"], capture_output=True, text=True)
    step = json.loads(one.stdout)["step_time_s"]
    assert step == r["step_time_s"], (step, r)
    total += r["weight"] * step
assert abs(total - out["step_time_s"]) < 1e-12 * total, (total, out["step_time_s"])
assert sd["lengths"][0]["step_time_s"] < sd["lengths"][-1]["step_time_s"]
PY2
printf 'length,count\n10,3\n99,1\n' > "$TMP/long.csv"
check_bad 'long.csv: line 3: expected a length from 1 to' --graph gpt --graph-opt "$G,seq_dist=$TMP/long.csv" \
  --cluster paper-2gpu --placement single-gpu
check_bad 'batch: expected an explicit batch=' --graph gpt --graph-opt "seq=64,seq_dist=$TMP/lens.csv" \
  --cluster paper-2gpu --placement single-gpu
check_bad 'seq_dist: expected --graph gpt' --graph rnnlm --graph-opt "seq=64,batch=2,seq_dist=$TMP/lens.csv" \
  --cluster paper-2gpu --placement single-gpu
check_bad 'seq_bin: expected an integer' --graph gpt --graph-opt "$G,seq_dist=$TMP/lens.csv,seq_bin=0" \
  --cluster paper-2gpu --placement single-gpu
check_bad 'expected pp=1 and mb=1 with seq_dist' --graph gpt --graph-opt "$G,seq_dist=$TMP/lens.csv" \
  --cluster paper-2gpu --parallel dp=1,pp=2,mb=2
echo "simulate_test: ok"
