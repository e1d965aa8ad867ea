#!/usr/bin/env bash
# No calibration output carries a rate above the peak of the unit that runs it (issue 15): every
# real GPU profile in tests/data/calibration is fitted through `placesim calibrate` and each op
# type's flop_rate / byte_rate in the written YAML is held against the catalog peaks (`describe`
# is not needed: the peaks are the datasheet numbers in docs/catalog.md). A fit a peak decided
# says so on stderr and in the file ("clamped"). Then `simulate --json` names the rule that priced
# each op.
set -u
P="$1"
ROOT="${PLACESIM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
D="$ROOT/tests/data/calibration"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# check FILE MAX_FLOP_RATE MAX_BYTE_RATE: every rate in the calibration YAML within the bounds.
check() {
  python3 - "$@" <<'PY' || fail "a rate above the peak in $1"
import re, sys
path, fmax, bmax = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
bad = []
for line in open(path):
    m = re.match(r'\s+(flop_rate|byte_rate): "([0-9.eE+-]+) (FLOP/s|B/s)"', line)
    if m:
        v = float(m.group(2))
        if v > (fmax if m.group(1) == "flop_rate" else bmax) * (1 + 1e-9):
            bad.append(line.strip())
print("\n".join(bad[:5]))
sys.exit(1 if bad else 0)
PY
}

# H200: TF32 tensor cores 494.5 TFLOP/s are the highest F32 peak (cuDNN convolutions), 4.8 TB/s.
"$P" calibrate --profile "$D/h200_micro.json.gz" --profile "$D/h200_micro_bwd.json.gz" \
  --device-model H200-SXM-141GB -o "$T/h200-micro.yaml" >/dev/null 2>"$T/h200-micro.err" || fail "calibrate H200 micro"
check "$T/h200-micro.yaml" 494.5e12 4.8e12
for f in h200_resnet18-224px-b64_train.json.gz h200_resnet18-64px-b8_train.json.gz; do
  "$P" calibrate --profile "$D/$f" --device-model H200-SXM-141GB -o "$T/h200.yaml" >/dev/null 2>"$T/h200.err" || fail "calibrate $f"
  check "$T/h200.yaml" 494.5e12 4.8e12
done
# The same traces under strict F32 math (NVIDIA_TF32_OVERRIDE=0): convolutions bounded by 67 TFLOP/s.
"$P" calibrate --profile "$D/h200_resnet18-224px-b64_train.json.gz" --device-model H200-SXM-141GB \
  --math-mode f32 -o "$T/h200-f32.yaml" >/dev/null 2>"$T/h200-f32.err" || fail "calibrate --math-mode f32"
check "$T/h200-f32.yaml" 67e12 4.8e12
grep -q "clamped:" "$T/h200-f32.yaml" || fail "a fit held at the F32 peak is not marked clamped in the file"
grep -q "held at the H200-SXM-141GB f32 peak" "$T/h200-f32.err" || fail "the clamp is not reported on stderr"

# A100 (HolisticTraceAnalysis traces, A100-PG509-200 taken as A100-SXM4-40GB): 156 TF32, 1555 GB/s.
for f in a100_alexnet.json a100_2rank_nccl_rank0.json.gz a100_simple_add.json; do
  "$P" calibrate --profile "$D/$f" --device-model A100-SXM4-40GB -o "$T/a100.yaml" >/dev/null 2>&1 || fail "calibrate $f"
  check "$T/a100.yaml" 156e12 1555e9
done
# Vidur's measured A100 GEMMs (f16, 312 TFLOP/s dense; A100-SXM4-80GB 2039 GB/s).
if [ -x /usr/bin/python3 ]; then
  /usr/bin/python3 "$ROOT/tools/vidur_to_manifest.py" "$D/a100_llama2-7b_mlp.csv" A100-SXM4-80GB >"$T/vidur.json" || fail "vidur_to_manifest"
  "$P" calibrate --profile "$T/vidur.json" -o "$T/vidur.yaml" >/dev/null 2>&1 || fail "calibrate vidur"
  check "$T/vidur.yaml" 312e12 2039e9
fi

# This VM's CPU (a rig manifest's GEMM and convolution rows, session 15): no catalog peak, but the
# core's make-up in the manifest, 8 lanes x 2 FMA pipes x 2 x 3.338 GHz = 106.8 GFLOP/s and two
# 32-byte loads a cycle = 213.7 GB/s, bound every fit; calibrate says so, and no longer notes
# "no catalog peak".
"$P" calibrate --profile "$D/cpu_rig_peak_2026-12-02.json" --device-model cpu0 -o "$T/cpu.yaml" \
  >"$T/cpu.out" 2>"$T/cpu.err" || fail "calibrate the CPU rig manifest"
check "$T/cpu.yaml" 106.83e9 213.67e9
grep -q "peak of cpu0: 106.8 GFLOP/s = cpu0 f32 (8 lanes x 2 FMA x 2 x 3.34 GHz)" "$T/cpu.out" \
  || fail "calibrate does not report the CPU's peak: $(grep peak "$T/cpu.out")"
grep -q "no catalog peak" "$T/cpu.err" && fail "a CPU with a manifest peak is reported unbounded"

# simulate --pricing names the rule of the fall-back chain that priced each op: ResNet-18 (ONNX,
# training) on the imported 1-GPU H200 with the microbenchmark calibration; its variables, inputs
# and running statistics launch nothing ("storage", 0 ns).
"$P" import topo --nvidia-smi "$D/h200_nvidia-smi-topo.txt" --gpu-model H200-SXM-141GB -o "$T/h200c.yaml" >/dev/null || fail "import topo"
"$P" simulate --graph "$ROOT/tests/data/onnx/resnet18.onnx" --graph-opt training,batch=8 --cluster "$T/h200c.yaml" \
  --placement single-gpu --calibration "$T/h200-micro.yaml" --pricing "$T/pricing.json" >/dev/null || fail "simulate --pricing"
python3 - "$T/pricing.json" <<'PY' || fail "simulate --pricing: no pricing rule per op"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["ops"] and all(o["rule"] in ("measured", "exact", "class-curve", "roofline", "storage", "view", "nchw-transforms", "exact-name") for o in p["ops"]), p["rules"]
assert p["rules"].get("storage", 0) > 0 and all(o["time_ns"] == 0 for o in p["ops"] if o["rule"] == "storage"), p["rules"]
assert sum(p["rules"].values()) == len(p["ops"]), p["rules"]
assert p["rules"].get("class-curve", 0) > 0, p["rules"]
PY
# GPT-2's untied lm_head at vocab 50257 (bf16, one A100) is a misaligned tensor-core GEMM: it and
# its two gradients are priced by `misaligned-gemm` (docs/cost-model.md, "Misaligned GEMMs");
# padded to 50264 none is.
for v in 50257 50264; do
  "$P" simulate --graph gpt --graph-opt "layers=2,hidden=768,heads=12,seq=1024,vocab=$v,positions=1024,batch=8,precision=bf16" \
    --cluster lambdacloud-a100-40gb-pcie --placement single-gpu --quiet --pricing "$T/gpt$v.json" >/dev/null || fail "simulate --pricing gpt vocab=$v"
done
python3 - "$T/gpt50257.json" "$T/gpt50264.json" <<'PY' || fail "simulate --pricing: the lm_head at vocab 50257 is not misaligned-gemm"
import json, sys
odd, padded = (json.load(open(f)) for f in sys.argv[1:3])
assert sorted(o["op"] for o in odd["ops"] if o["rule"] == "misaligned-gemm") == [
    "gpt/head/lm_head", "gradients/gpt/head/lm_head_grad/MatMul_0", "gradients/gpt/head/lm_head_grad/MatMul_1"], odd["rules"]
assert "misaligned-gemm" not in padded["rules"], padded["rules"]
PY
# Math modes: ResNet-50 v1.5 training, batch 256, one A100 80GB. NVIDIA DeepLearningExamples
# (PyTorch/Classification/ConvNets/resnet50v1.5/README.md @ 291f0d02) publishes 938 img/s in TF32
# (PyTorch's default: cuDNN convolutions on TF32 tensor cores), NCHW (ConvNets/configs.yml sets
# memory_format: nhwc only for AMP; main.py defaults to nchw); within 15 %. With math_mode=f32
# the same step must run at the CUDA-core peak, about half as fast.
ips() { python3 -c "import json,sys; print(int($1 / json.load(open(sys.argv[1]))['step_time_s']))" "$2"; }
"$P" simulate --graph resnet50 --graph-opt batch=256,image_size=224,layout=nchw --cluster dgx-a100 --placement single-gpu --json >"$T/r50.json" || fail "resnet50 on dgx-a100"
tf32=$(ips 256 "$T/r50.json")
[ "$tf32" -gt 797 ] && [ "$tf32" -lt 1079 ] || fail "A100 TF32 ResNet-50: $tf32 img/s, published 938"
"$P" simulate --graph resnet50 --graph-opt batch=256,image_size=224,layout=nchw,math_mode=f32 --cluster dgx-a100 --placement single-gpu --json >"$T/r50f.json" || fail "math_mode=f32"
f32=$(ips 256 "$T/r50f.json")
[ "$f32" -lt $((tf32 * 2 / 3)) ] || fail "math_mode=f32 should be much slower than TF32: $f32 vs $tf32 img/s"
out=$("$P" simulate --graph resnet50 --graph-opt math_mode=fast --cluster dgx-a100 --placement single-gpu 2>&1); rc=$?
[ "$rc" = 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "a bad math_mode should give one line and exit 2: $out"
# V100 (no TF32 units): 367 img/s published in FP32 at batch 112, NCHW; within 15 %.
"$P" simulate --graph resnet50 --graph-opt batch=112,image_size=224,layout=nchw --cluster dgx1-v100 --placement single-gpu --json >"$T/r50v.json" || fail "resnet50 on dgx1-v100"
v=$(ips 112 "$T/r50v.json")
[ "$v" -gt 312 ] && [ "$v" -lt 422 ] || fail "V100 FP32 ResNet-50: $v img/s, published 367"
# sm_count per GPU in a cluster YAML (the written cluster carries the catalog's 132): half the SMs
# change the quantised convolutions' time, so the roofline step of a batch-8 ResNet-18 moves; a bad
# value stops the load with one line naming the key (exit 2).
grep -q "sm_count: 132" "$T/h200c.yaml" || fail "import topo should write the H200's 132 SMs"
sed 's/sm_count: 132/sm_count: 66/' "$T/h200c.yaml" >"$T/h200c66.yaml"
gpu() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['step_time_s'])" "$1"; }
"$P" simulate --graph "$ROOT/tests/data/onnx/resnet18.onnx" --graph-opt training,batch=8 --cluster "$T/h200c.yaml" \
  --placement single-gpu --json >"$T/s132.json" || fail "simulate 132 SMs"
"$P" simulate --graph "$ROOT/tests/data/onnx/resnet18.onnx" --graph-opt training,batch=8 --cluster "$T/h200c66.yaml" \
  --placement single-gpu --json >"$T/s66.json" || fail "simulate 66 SMs"
[ "$(gpu "$T/s132.json")" != "$(gpu "$T/s66.json")" ] || fail "sm_count from the cluster file did not reach the cost model"
sed 's/sm_count: 132/sm_count: 0/' "$T/h200c.yaml" >"$T/h200c0.yaml"
out=$("$P" simulate --graph resnet18 --cluster "$T/h200c0.yaml" --placement single-gpu 2>&1); rc=$?
[ "$rc" = 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && printf '%s' "$out" | grep -q "sm_count" ||
  fail "sm_count: 0 should give one line naming the key and exit 2: $out"
echo "ok"
