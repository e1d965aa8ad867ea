#!/usr/bin/env bash
# The held-out rig's second lease (docs/validation.md, "Held-out rig run, 2026-12-04 evening"):
# Kineto traces of the held-out workloads that missed or need a per-class look, and FP32 GEMMs on
# the CUDA cores (tools/kernel_rig.py --fp32).
#   tools/rig_heldout2.sh OUT
set -u
OUT=${1:?usage: rig_heldout2.sh OUT}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
export PYTHONUNBUFFERED=1
echo "== $(date -u +%FT%TZ) $(uname -m) $(nproc) cores"
timeout 120 python3 tools/kernel_rig.py --out "$OUT" --fp32
R="timeout 120 python3 tools/train_rig.py --out $OUT --trace-steps 2"
$R --model resnet50 --precision fp32 --batch 64 --trace resnet50_fp32_nchw_b64
$R --model resnet50 --precision amp --batch 128 --channels-last --trace resnet50_amp_nhwc_b128
$R --model gpt2 --attention eager --precision bf16 --batch 4 --hidden 1024 --heads 16 --layers 24 \
   --trace gpt2-medium_eager_bf16_b4
$R --model gpt2 --attention sdpa --precision bf16 --batch 16 --seq 512 --trace gpt2-124m_sdpa_bf16_s512_b16
echo "== done at $(date -u +%FT%TZ), $SECONDS s"
