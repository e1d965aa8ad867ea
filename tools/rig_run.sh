#!/usr/bin/env bash
# One lent GPU machine's measurements in one command (docs/validation.md, "Run on a lent H200,
# 2026-12-04"; docs/performance.md, "16 cores"): real training steps timed and recorded on its GPU
# (tools/train_rig.py), then placesim's parallel engine and sweep on all its cores.
#   tools/rig_run.sh OUT [CARRY]
# OUT: where results go (at most 8 files: the device tool brings back 8).
# CARRY: a folder with a placesim binary built here and the shared libraries it needs (lib/),
#   made by `tools/rig_run.sh --pack CARRY` on the build machine; the GPU machine has neither
#   Debian's libraries nor a compiler for this project.
# Every step is independent (a failed one does not stop the rest) and bounded by `timeout`.
set -u
if [ "${1:-}" = "--pack" ]; then
  C=${2:?usage: rig_run.sh --pack CARRY}
  rm -rf "$C" && mkdir -p "$C/lib"
  cp build/placesim "$C/"
  strip "$C/placesim"
  ldd build/placesim | awk '$3 ~ /^\// {print $3}' | grep -v -E '/(libc|libm|libpthread|libdl)\.so' |
    xargs -I{} cp -L {} "$C/lib/"
  du -sh "$C"
  exit 0
fi
OUT=${1:?usage: rig_run.sh OUT [CARRY]}
CARRY=${2:-.devcarry}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
export PYTHONUNBUFFERED=1
echo "== $(date -u +%FT%TZ) $(uname -m) $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit,memory.total \
  --format=csv >"$OUT/nvidia-smi.txt" 2>&1 && cat "$OUT/nvidia-smi.txt"

# --- GPU: GPT-2 124M (rasbt's eager steps 6 and 7, and variations) and ResNet-50 ---------------
R="timeout 150 python3 tools/train_rig.py --out $OUT"
t0=$SECONDS
$R --model gpt2 --attention eager --precision bf16 --batch 8 --trace gpt2-124m_eager_bf16_b8
$R --model gpt2 --attention sdpa --precision bf16 --batch 8 --trace gpt2-124m_sdpa_bf16_b8 \
   --et gpt2-124m_sdpa_bf16_b8
$R --model gpt2 --attention sdpa --precision bf16 --batch 8 --vocab 50304
$R --model gpt2 --attention eager --precision bf16 --batch 8 --vocab 50304
$R --model gpt2 --attention sdpa --precision bf16 --batch 32
$R --model gpt2 --attention sdpa --precision bf16 --batch 1 --steps 40
$R --model gpt2 --attention sdpa --precision tf32 --batch 8
$R --model resnet50 --precision amp --batch 256 --channels-last --trace resnet50_amp_nhwc_b256 \
   --trace-steps 2
$R --model resnet50 --precision amp --batch 64 --channels-last
$R --model resnet50 --precision tf32 --batch 128
echo "== GPU part: $((SECONDS - t0)) s"

# --- CPU: the parallel engine on one huge step, and the sweep's oneTBB scaling ----------------
P=$CARRY/placesim
export LD_LIBRARY_PATH=$CARRY/lib
if ! "$P" --version; then echo "== placesim does not run here"; exit 0; fi
T=$(mktemp -d)
TIMEFORMAT='%3R %3U %3S'
HUGE=(simulate --graph gpt-huge --graph-opt layers=40,hidden=5120,seq=2048,batch=1,vocab=51200
      --parallel dp=2,tp=4,pp=2,mb=700 --cluster 2x-dgx-a100)
for round in 1 2; do
  for n in 1 2 4 8 16; do
    w=$( { time timeout 120 "$P" "${HUGE[@]}" --threads $n >"$T/h$n.txt"; } 2>&1 | tail -1)
    echo "huge round=$round threads=$n wall/user/sys_s=$w load=$(cut -d' ' -f1 /proc/loadavg)" \
         "$(grep '^gpt-huge:' "$T/h$n.txt" | sed 's/.*step graph/step graph/')"
    grep -v '^gpt-huge:\|simulated in' "$T/h$n.txt" | sha256sum | sed "s/ .*/ summary sha256 threads=$n/"
  done
done
grep '^step time\|^makespan' "$T/h1.txt" | head -3
for n in 1 16; do
  timeout 150 "$P" "${HUGE[@]}" --threads $n --json | grep -v '"sim_wall_s"' | sha256sum |
    sed "s/ .*/ json sha256 threads=$n/"
done
SW=scenarios/sweeps/bench_throughput_large.yaml
for n in 1 2 4 8 16; do
  w=$( { time timeout 120 "$P" sweep "$SW" --threads $n -o "$T/s$n.csv" -q 2>"$T/s$n.err"; } 2>&1 | tail -1)
  echo "sweep threads=$n wall/user/sys_s=$w $(grep '^sweep:' "$T/s$n.err") csv sha256 $(sha256sum <"$T/s$n.csv" | cut -c1-16)"
done
rm -rf "$T"
echo "== done at $(date -u +%FT%TZ), $SECONDS s"
