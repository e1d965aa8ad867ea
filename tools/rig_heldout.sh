#!/usr/bin/env bash
# A lent GPU machine's second set of measurements (docs/validation.md, "Held-out rig run,
# 2026-12-04 evening"): kernels at shapes no rule was fitted on (tools/kernel_rig.py --heldout:
# embedding gradients, linear layers with and without bias, bias sums, streaming kernels,
# short-sequence and head-dim-128 attention) and training steps of workloads placesim was never
# tuned on (GPT-2 medium and large shapes, other sequence lengths, ResNet-50 in NCHW and FP32).
#   tools/rig_heldout.sh OUT
# OUT gets at most 8 files (what the device tool brings back): log.txt, nvidia-smi.txt,
# kernels.jsonl, kernels.json.gz, results.jsonl and two Kineto traces.
# Every step is independent (a failed one does not stop the rest) and bounded by `timeout`.
set -u
OUT=${1:?usage: rig_heldout.sh OUT}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
export PYTHONUNBUFFERED=1
echo "== $(date -u +%FT%TZ) $(uname -m) $(nproc) cores"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit,memory.total \
  --format=csv >"$OUT/nvidia-smi.txt" 2>&1 && cat "$OUT/nvidia-smi.txt"
t0=$SECONDS
timeout 200 python3 tools/kernel_rig.py --out "$OUT" --heldout
echo "== kernels: $((SECONDS - t0)) s"
R="timeout 120 python3 tools/train_rig.py --out $OUT"
$R --model gpt2 --attention sdpa --precision bf16 --batch 8 --hidden 1024 --heads 16 --layers 24 \
   --trace gpt2-medium_sdpa_bf16_b8 --trace-steps 2
$R --model gpt2 --attention eager --precision bf16 --batch 4 --hidden 1024 --heads 16 --layers 24
$R --model gpt2 --attention sdpa --precision bf16 --batch 16 --seq 512
$R --model gpt2 --attention sdpa --precision bf16 --batch 4 --seq 2048
$R --model gpt2 --attention sdpa --precision bf16 --batch 4 --hidden 1280 --heads 20 --layers 36
$R --model resnet50 --precision amp --batch 128 --trace resnet50_amp_nchw_b128 --trace-steps 2
$R --model resnet50 --precision amp --batch 128 --channels-last
$R --model resnet50 --precision fp32 --batch 64
echo "== done at $(date -u +%FT%TZ), $SECONDS s"
