#!/usr/bin/env bash
# PyTorch Execution Traces end to end (`placesim import et`): real torch 1.13 CPU training steps
# of a small CNN and a small transformer, imported with their Kineto traces, simulated and placed;
# a real torch 2.x trace (schema 1.0.2-chakra.0.0.4) without one; a real torch 2.11 CUDA step
# whose backward ran on the autograd engine's thread; the same import twice gives the same bytes.
# Usage: bash et_test.sh PATH_TO_placesim
set -u
BIN=${1:?usage: et_test.sh PATH_TO_placesim}
HERE=$(cd "$(dirname "$0")" && pwd)
D="$HERE/../data/et"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
field() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# The CNN step: 88 ops, each tied to its profiler event; simulated on one CPU it takes the ops'
# measured time, which is the measured step less the Python between the framework calls.
"$BIN" import et "$D/cpu_torch113_cnn_et.json.gz" --kineto "$D/cpu_torch113_cnn_kineto.json.gz" \
  -o "$TMP/cnn.json" --json > "$TMP/imp.json" 2> "$TMP/imp.err" || fail "import exited $?: $(cat "$TMP/imp.err")"
/usr/bin/python3 - "$TMP/imp.json" <<'PY' || fail "import statistics: $(cat "$TMP/imp.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["ops"] == 88 and j["linked_ops"] == 88 and j["kineto_link"] == "order", j
assert (j["forward_ops"], j["backward_ops"], j["update_ops"]) == (17, 29, 42), j
assert j["data_edges"] > 80 and j["measured_step_ns"] == 11901000, j
PY
"$BIN" simulate --graph "$TMP/cnn.json" --cluster paper-2gpu --placement single-gpu --json > "$TMP/sim.json" \
  || fail "simulate of the imported CNN exited $?"
/usr/bin/python3 - "$TMP/sim.json" "$(field "$TMP/imp.json" measured_step_ns)" <<'PY' || fail "CNN step out of range"
import json, sys
t = json.load(open(sys.argv[1]))["step_time_ns"]
measured = int(sys.argv[2])
assert 0.85 * measured < t <= measured, (t, measured)
PY
"$BIN" place --method heft --graph "$TMP/cnn.json" --cluster paper-2gpu -o "$TMP/p.json" > /dev/null \
  || fail "place of the imported CNN exited $?"
"$BIN" simulate --graph "$TMP/cnn.json" --cluster paper-2gpu --placement "$TMP/p.json" > /dev/null \
  || fail "simulate with the placement exited $?"

# Without the Kineto trace the cost model prices every op, and the graph places on GPUs.
"$BIN" import et "$D/cpu_torch113_cnn_et.json.gz" -o "$TMP/cnn_roofline.json" > /dev/null 2>&1 \
  || fail "import without --kineto exited $?"
"$BIN" place --method heft --graph "$TMP/cnn_roofline.json" --cluster paper-4gpu -o "$TMP/p4.json" > /dev/null \
  || fail "place of the roofline graph exited $?"

# Calibration from the ET's ops timed by the Kineto trace (`calibrate --et`): the graph imported
# without --kineto, priced by it on one CPU, takes the ops' measured time again.
"$BIN" calibrate --profile "$D/cpu_torch113_cnn_kineto.json.gz" --et "$D/cpu_torch113_cnn_et.json.gz" \
  --device-model cpu0 -o "$TMP/cal.yaml" > "$TMP/cal.txt" 2>&1 || fail "calibrate --et exited $?: $(tail -3 "$TMP/cal.txt")"
grep -q "op samples from the execution trace" "$TMP/cal.txt" || fail "calibrate --et: $(cat "$TMP/cal.txt")"
printf 'name: this-cpu\ndevices:\n  - {name: cpu0, kind: cpu, peak_flops: {f32: 50 GFLOP/s}, memory_bandwidth: 10 GB/s, memory_capacity: 16 GiB, worker_threads: 1, launch_overhead: 0 us}\nlinks: []\n' > "$TMP/cpu.yaml"
"$BIN" simulate --graph "$TMP/cnn_roofline.json" --cluster "$TMP/cpu.yaml" --placement single-cpu \
  --calibration "$TMP/cal.yaml" --json > "$TMP/cal_sim.json" 2> /dev/null || fail "simulate with the ET calibration exited $?"
/usr/bin/python3 - "$TMP/cal_sim.json" "$(field "$TMP/imp.json" measured_ops_ns)" <<'PY' || fail "calibrated CNN step out of range"
import json, sys
t = json.load(open(sys.argv[1]))["step_time_ns"]
ops = int(sys.argv[2])
assert 0.95 * ops < t < 1.05 * ops, (t, ops)
PY

# The transformer step (Adam) and the torch 2.x trace.
"$BIN" import et "$D/cpu_torch113_transformer_et.json.gz" --kineto "$D/cpu_torch113_transformer_kineto.json.gz" \
  -o "$TMP/tr.json" --json > "$TMP/tr_imp.json" 2> /dev/null || fail "transformer import exited $?"
[ "$(field "$TMP/tr_imp.json" ops)" = 308 ] || fail "transformer: $(cat "$TMP/tr_imp.json")"
"$BIN" simulate --graph "$TMP/tr.json" --cluster paper-2gpu --placement single-gpu > /dev/null \
  || fail "simulate of the transformer exited $?"
# A real torch 2.x CUDA trace (param's linear_et.json): 21 Linear+ReLU layers, backward, SGD.
"$BIN" import et "$D/param_linear_et.json.gz" -o "$TMP/lin.json" --json > "$TMP/lin_imp.json" \
  2> /dev/null || fail "torch 2.x CUDA import exited $?"
[ "$(field "$TMP/lin_imp.json" ops)" = 320 ] && [ "$(field "$TMP/lin_imp.json" schema)" = 1.0.1 ] \
  || fail "torch 2.x CUDA: $(cat "$TMP/lin_imp.json")"
/usr/bin/python3 - "$TMP/lin.json" <<'PY' || fail "torch 2.x CUDA graph content"
import json, sys
ops = json.load(open(sys.argv[1]))["ops"]
lin = [o for o in ops if o["type"] == "aten::linear"]
assert len(lin) == 21, len(lin)
assert all(o["flops"] == 2 * 512 * 1024 * 1024 for o in lin), lin[0]
assert sum(o["type"] == "aten::mm" for o in ops) == 41
assert not any(o.get("device_kind") == "cpu" for o in ops)  # every tensor is on cuda:0
relu = [o["name"] for o in ops if o["type"] == "aten::relu"]
assert [o.get("inputs") for o in lin[1:]] == [[r] for r in relu[:-1]], lin[1]
PY
"$BIN" simulate --graph "$TMP/lin.json" --cluster paper-2gpu --placement single-gpu --json \
  > "$TMP/lin_sim.json" 2> /dev/null || fail "simulate of the torch 2.x CUDA graph exited $?"
/usr/bin/python3 - "$TMP/lin_sim.json" <<'PY' || fail "torch 2.x CUDA simulation: $(head -c 300 "$TMP/lin_sim.json")"
import json, sys
r = json.load(open(sys.argv[1]))
gpu0 = [d for d in r["devices"] if d["name"] == "gpu0"][0]
assert gpu0["ops"] == 320 and not r["oom"] and r["step_time_ns"] > 0, (gpu0, r["step_time_ns"])
PY

# A real torch 2.11 CUDA step (GPT-2 124M, bf16, SDPA, fused AdamW on one H200): the autograd
# engine ran the backward on its own thread, outside the main thread's ProfilerStep#1; its ops
# join the step by their Kineto times. Replayed from the ops' measured GPU times on one H200 the
# step is the rig's timed step (35.09 ms median of 20 steps without the profiler,
# tests/data/calibration/h200_rig_2026-12-04_results.jsonl) within 10 % (13 ms when the backward
# was dropped).
"$BIN" import et "$D/h200_torch211_gpt2-124m_sdpa_bf16_b8_et.json.gz" \
  --kineto "$D/h200_torch211_gpt2-124m_sdpa_bf16_b8_kineto.json.gz" -o "$TMP/gpt2.json" --json \
  > "$TMP/gpt2_imp.json" 2> /dev/null || fail "torch 2.11 CUDA import exited $?"
/usr/bin/python3 - "$TMP/gpt2_imp.json" <<'PY' || fail "torch 2.11 CUDA import: $(cat "$TMP/gpt2_imp.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert (j["forward_ops"], j["backward_ops"], j["update_ops"]) == (217, 766, 2), j
assert j["other_thread_ops"] == 766 and j["outside_step"] == 0 and j["linked_ops"] == 985, j
PY
"$BIN" import topo --nvidia-smi "$HERE/../data/calibration/h200_nvidia-smi-topo.txt" --gpu-model H200-SXM-141GB \
  -o "$TMP/h200.yaml" > /dev/null 2>&1 || fail "import topo of the H200 exited $?"
"$BIN" simulate --graph "$TMP/gpt2.json" --cluster "$TMP/h200.yaml" --placement single-gpu --json \
  > "$TMP/gpt2_sim.json" 2> /dev/null || fail "simulate of the GPT-2 step exited $?"
/usr/bin/python3 - "$TMP/gpt2_sim.json" <<'PY' || fail "GPT-2 step out of range"
import json, sys
t = json.load(open(sys.argv[1]))["step_time_ns"]
assert 0.9 * 35.09e6 < t < 1.1 * 35.09e6, t
PY
# The same ET without its Kineto trace: every op priced by the cost model, nothing replayed. The
# output head's three GEMMs (vocabulary 50257) are misaligned: the ET's strides give their
# operands' leading dimensions (a transposed view's is its first), so they take the align1 rate
# (docs/cost-model.md, "Misaligned GEMMs"); predicted within 10 % of the timed step.
"$BIN" import et "$D/h200_torch211_gpt2-124m_sdpa_bf16_b8_et.json.gz" -o "$TMP/gpt2_nok.json" \
  > /dev/null 2>&1 || fail "torch 2.11 CUDA import without Kineto exited $?"
"$BIN" simulate --graph "$TMP/gpt2_nok.json" --cluster "$TMP/h200.yaml" --placement single-gpu --json \
  --pricing "$TMP/gpt2_pricing.json" > "$TMP/gpt2_nok_sim.json" 2> /dev/null \
  || fail "simulate of the unreplayed GPT-2 step exited $?"
/usr/bin/python3 - "$TMP/gpt2_nok_sim.json" "$TMP/gpt2_pricing.json" <<'PY' || fail "GPT-2 step from the cost model out of range"
import json, sys
t = json.load(open(sys.argv[1]))["step_time_ns"]
assert 0.9 * 35.09e6 < t < 1.1 * 35.09e6, t
p = json.load(open(sys.argv[2]))
assert sorted(o["op"] for o in p["ops"] if o["rule"] == "misaligned-gemm") == [
    "aten::linear #2053", "aten::mm #2124", "aten::mm #2134"], p["rules"]
PY

# The torch 2.x "chakra" dialect (hand-written pair): linked by record-function id.
"$BIN" import et "$D/chakra_handwritten_et.json" --kineto "$D/chakra_handwritten_kineto.json" \
  -o "$TMP/ch.json" --json > "$TMP/ch_imp.json" 2> /dev/null || fail "chakra-dialect import exited $?"
[ "$(field "$TMP/ch_imp.json" ops)" = 3 ] && [ "$(field "$TMP/ch_imp.json" kineto_link)" = record-function-id ] \
  && [ "$(field "$TMP/ch_imp.json" gpu_timed_ops)" = 3 ] || fail "chakra dialect: $(cat "$TMP/ch_imp.json")"
"$BIN" describe --graph "$TMP/ch.json" > /dev/null || fail "describe of the chakra-dialect graph exited $?"

# Deterministic: the same import writes the same bytes.
"$BIN" import et "$D/cpu_torch113_cnn_et.json.gz" --kineto "$D/cpu_torch113_cnn_kineto.json.gz" \
  -o "$TMP/cnn2.json" > /dev/null 2>&1 || fail "second import exited $?"
cmp -s "$TMP/cnn.json" "$TMP/cnn2.json" || fail "two imports of the same trace differ"

echo "et: CNN $(field "$TMP/sim.json" step_time_ns) ns simulated vs $(field "$TMP/imp.json" measured_step_ns) ns measured; transformer, torch 2.x CUDA ($(field "$TMP/lin_sim.json" step_time_ns) ns simulated), torch 2.11 GPT-2 on H200 ($(field "$TMP/gpt2_sim.json" step_time_ns) ns replayed, $(field "$TMP/gpt2_nok_sim.json" step_time_ns) ns from the cost model, vs 35.09 ms timed) and chakra dialect imported"
