#!/usr/bin/env bash
# The zero-shot / fine-tuning / from-scratch table of docs/rl.md ("Transfer to held-out graphs and
# clusters", issue 21) on the four held-out pairs, from a LibTorch build:
#
#   tools/rl_transfer_table.sh OUT                      # everything, then OUT/table.md
#   KINDS=scratch tools/rl_transfer_table.sh OUT        # only the from-scratch runs (resumable)
#
# Per pair: one `compare` of every baseline and `rl:POLICY` (zero-shot with the test-time search),
# then `train --policy gnn` for each budget in MINUTES, fine-tuned from POLICY ("ft") and from
# scratch ("scratch"), seed 1, one thread each, JOBS runs at a time, longest first. Every run
# writes OUT/<pair>.<kind>.<minutes>.json and a .load file (UTC start/end and /proc/loadavg at
# both ends: the machine is shared, and a budget in minutes buys fewer iterations under load).
# A run whose JSON exists is skipped, so the script resumes (and, once all exist, only remakes
# the table). A cell: the run's result (after its searches), its percentage against the best
# baseline, iterations of 16 samples, training's own best sample ("trained", before the final
# search) and train_gnn's wall seconds (the budget; loading LibTorch and the graph are outside). Environment: BUILD (default build),
# POLICY (default scenarios/policies/gnn.ckpt), JOBS (2), MINUTES ("1 5"), KINDS ("ft scratch").
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: tools/rl_transfer_table.sh OUTDIR}
BUILD=${BUILD:-build}
POLICY=${POLICY:-scenarios/policies/gnn.ckpt}
JOBS=${JOBS:-2}
MINUTES=${MINUTES:-1 5}
KINDS=${KINDS:-ft scratch}
P="$BUILD/placesim"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
mkdir -p "$OUT"

# The held-out cluster: 4 A100-PCIe with NVLink pairs, from a real `nvidia-smi topo -m`.
A100="$OUT/a100pcie4.yaml"
[[ -f $A100 ]] || "$P" import topo --nvidia-smi \
  tests/data/calibration/a100pcie-4x-nvlink-pairs_nvidia-smi-topo.txt \
  --gpu-model A100-PCIe-80GB -o "$A100" >/dev/null
ONNX="training=true,batch=64"
# name|graph|graph options|cluster
PAIRS=(
  "inception_v3-paper4|inception_v3||paper-4gpu"
  "inception_v3-a100pcie4|inception_v3||$A100"
  "mobilenet_v2-a100pcie4|tests/data/onnx/mobilenet_v2.onnx|$ONNX|$A100"
  "transformer_encoder-paper4|tests/data/onnx/transformer_encoder.onnx|$ONNX|paper-4gpu"
)
BASELINES=single-gpu,round-robin,expert,scotch,metis,heft,m-topo,m-etf,m-sct

stamp() { echo "$(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"; }

args_of() {  # graph options cluster -> the --graph/--graph-opt/--cluster arguments
  local a=(--graph "$1")
  [[ -n $2 ]] && a+=(--graph-opt "$2")
  a+=(--cluster "$3")
  echo "${a[@]}"
}

for pair in "${PAIRS[@]}"; do
  IFS='|' read -r name graph opt cluster <<<"$pair"
  f="$OUT/$name.compare.json"
  [[ -s $f ]] && continue
  { echo "start $(stamp)"; } >"$OUT/$name.compare.load"
  # shellcheck disable=SC2046
  "$P" compare $(args_of "$graph" "$opt" "$cluster") --methods "$BASELINES,rl:$POLICY" \
    --json >"$f.tmp"
  mv "$f.tmp" "$f"
  echo "end $(stamp)" >>"$OUT/$name.compare.load"
done

run_one() {  # name graph opt cluster kind minutes
  local name=$1 graph=$2 opt=$3 cluster=$4 kind=$5 min=$6
  local f="$OUT/$name.$kind.$min.json"
  [[ -s $f ]] && return 0
  local pre=()
  [[ $kind == ft ]] && pre=(--pretrained "$POLICY")
  echo "start $(stamp)" >"$OUT/$name.$kind.$min.load"
  # shellcheck disable=SC2046
  "$P" train --policy gnn "${pre[@]}" $(args_of "$graph" "$opt" "$cluster") --minutes "$min" \
    --seed 1 --threads 1 --no-table --no-plot --json -o "$OUT/$name.$kind.$min.placement.json" \
    --checkpoint "$OUT/$name.$kind.$min.ckpt" >"$f.tmp" 2>"$OUT/$name.$kind.$min.log"
  mv "$f.tmp" "$f"
  echo "end $(stamp)" >>"$OUT/$name.$kind.$min.load"
}

# Longest first, JOBS at a time.
queue=()
for min in $(tr ' ' '\n' <<<"$MINUTES" | sort -rn); do
  for kind in $KINDS; do
    for pair in "${PAIRS[@]}"; do
      IFS='|' read -r name graph opt cluster <<<"$pair"
      queue+=("$name|$graph|$opt|$cluster|$kind|$min")
    done
  done
done
running=0
for job in "${queue[@]}"; do
  IFS='|' read -r name graph opt cluster kind min <<<"$job"
  if ((running >= JOBS)); then
    wait -n
    running=$((running - 1))
  fi
  run_one "$name" "$graph" "$opt" "$cluster" "$kind" "$min" &
  running=$((running + 1))
done
wait

/usr/bin/python3 - "$OUT" "$MINUTES" "${PAIRS[@]}" <<'PY' >"$OUT/table.md"
import json, os, sys
out, minutes, pairs = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
def load(path):
    return json.load(open(path)) if os.path.exists(path) else None
def loadavg(path):
    if not os.path.exists(path): return ""
    return "; ".join(l.split(" ", 1)[1].strip() for l in open(path))
def cell(r, best):
    if r is None: return "not run"
    s, t = r["best_step_s"], r.get("trained_step_s", r["best_step_s"])
    return (f"{s:.5f} ({100 * (s / best - 1):+.1f}%); {r['iterations']} it, trained {t:.5f}, "
            f"{r['wall_s']:.0f} s")
head = ["graph × cluster", "best baseline (s)", "zero-shot `rl`"]
for m in minutes: head += [f"fine-tuned {m} min", f"from scratch {m} min"]
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
notes = []
for p in pairs:
    name = p.split("|")[0]
    rows = load(f"{out}/{name}.compare.json")
    rows = rows.get("rows", rows) if isinstance(rows, dict) else rows
    base = [r for r in rows if not r["method"].startswith("rl") and not r.get("error")
            and not r.get("oom")]
    b = min(base, key=lambda r: r["step_time_s"])
    rl = [r for r in rows if r["method"].startswith("rl")][0]
    line = [name, f"{b['method']} {b['step_time_s']:.5f}",
            f"{rl['step_time_s']:.5f} ({100 * (rl['step_time_s'] / b['step_time_s'] - 1):+.1f}%)"]
    for m in minutes:
        for kind in ("ft", "scratch"):
            line.append(cell(load(f"{out}/{name}.{kind}.{m}.json"), b["step_time_s"]))
            notes.append(f"{name} {kind} {m} min: {loadavg(f'{out}/{name}.{kind}.{m}.load')}")
    print("| " + " | ".join(line) + " |")
    notes.append(name + " baselines: " + ", ".join(
        f"{r['method']} {r['step_time_s']:.5f}" for r in sorted(base, key=lambda r: r["step_time_s"])))
print()
for n in notes: print("- " + n)
PY
echo "$OUT/table.md"
