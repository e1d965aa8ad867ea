#!/usr/bin/env bash
# A lent GPU machine's model zoo (docs/validation.md, "Held-out rig run, 2026-12-04 evening"):
# training steps of the torchvision/timm models of timm's RTX 3090 training benchmark, at its batch
# sizes, AMP (autocast f16 + GradScaler), channels-last, cudnn.benchmark on (as timm's
# benchmark.py), SGD with momentum; and Hugging Face BERT-base / -large masked-LM steps. None of
# them set a placesim rule: each is predicted from its graph (tests/data/onnx, the `gpt` builder).
#   tools/rig_zoo.sh OUT
set -u
OUT=${1:?usage: rig_zoo.sh OUT}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
export PYTHONUNBUFFERED=1
echo "== $(date -u +%FT%TZ) $(uname -m) $(nproc) cores"
R="timeout 90 python3 tools/train_rig.py --out $OUT --precision amp --steps 12 --warmup 4"
V="$R --channels-last --cudnn-benchmark"
$V --model densenet121 --batch 256 --trace densenet121_amp_nhwc_b256 --trace-steps 2
$V --model timm:vit_base_patch16_224 --batch 192 --trace vit_base_patch16_224_amp_b192 --trace-steps 2
for mb in resnet18:512 resnet34:512 resnet50:512 resnet101:256 resnet152:192 wide_resnet50_2:384 \
          resnext50_32x4d:384 vgg16:384 inception_v3:384 mobilenet_v2:512 \
          mobilenet_v3_large:512 efficientnet_b0:512 convnext_tiny:256 \
          timm:vit_small_patch16_224:384 \
          timm:deit_tiny_patch16_224:512 timm:mixer_b16_224:256; do
  $V --model "${mb%:*}" --batch "${mb##*:}"
done
$R --model hf:bert-base --seq 128 --batch 128
$R --model hf:bert-base --seq 512 --batch 32
$R --model hf:bert-large --seq 128 --batch 64
echo "== done at $(date -u +%FT%TZ), $SECONDS s"
