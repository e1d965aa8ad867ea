#!/bin/bash
# Prints the markdown table of docs/validation.md ("Leave-one-out"). Usage: validate_loo.sh PLACESIM
# Leave-one-out: calibrate on A, validate B with --calibration, for every ordered pair of one GPU kind.
set -u
P="$1"; D="$(cd "$(dirname "$0")/../data/calibration" && pwd)"; T=$(mktemp -d); trap "rm -rf $T" EXIT
run_group() {
  local model=$1; shift
  for a in "$@"; do
    $P calibrate --profile $D/$a --device-model $model -o $T/$a.yaml >/dev/null 2>&1 || { echo "| $a | (calibrate failed) |"; continue; }
    for b in "$@"; do
      [ "$a" = "$b" ] && continue
      $P validate --profile $D/$b --calibration $T/$a.yaml --device-model $model --json -o $T/v.json >/dev/null 2>$T/err.txt
      python3 - "$a" "$b" $T/v.json $T/err.txt <<'PY'
import json,sys
a,b,f,e=sys.argv[1:]
d=json.load(open(f)); st=d['steady_state']
cal=sum(s['calibrated_ops'] for s in d['steps']); fb=sum(s['fallback_ops'] for s in d['steps'])
span_m=sum(s['measured_gpu_span_s'] for s in d['steps'][1:] or d['steps'])/max(1,len(d['steps'][1:] or d['steps']))
span_p=sum(s['predicted_gpu_span_s'] for s in d['steps'][1:] or d['steps'])/max(1,len(d['steps'][1:] or d['steps']))
busy_m=busy_p=0
for s in d['steps']:
  for k,v in s['devices'].items(): busy_m+=v.get('measured_busy_s',0); busy_p+=v.get('predicted_busy_s',0)
err = "%+.2f %%"%(100*st['error']) if st['error'] is not None else "n/a"
busy = "%.3f → %.3f ms (%+.1f %%)"%(busy_m*1e3, busy_p*1e3, 100*(busy_p/busy_m-1)) if busy_m>0 else "— (CPU only)"
print(f"| {a} | {b} | {cal} / {cal+fb} | {st['measured_period_s']*1e3:.3f} | {st['predicted_period_s']*1e3:.3f} | {err} | {busy} |")
PY
    done
  done
}
echo "| calibrated on | validated | kernels calibrated | steady period measured (ms) | predicted (ms) | error | GPU busy (all steps) measured → predicted |"
echo "|---|---|---|---|---|---|---|"
run_group A100-PG509-200 a100_alexnet.json a100_simple_add.json a100_event_sync.json a100_triton.json a100_2rank_nccl_rank0.json.gz
run_group H200 h200_resnet18-224px-b64_train.json.gz h200_resnet18-64px-b8_train.json.gz h200_micro.json.gz h200_micro_bwd.json.gz
run_group cpu cpu_torch113_cnn_6steps.json.gz cpu_torch113_lstm_6steps.json.gz
run_group V100-PCIe-16GB v100pcie_rmsnorm-triton-fused_cuda-only.json v100pcie_rmsnorm-triton-square_cuda-only.json
