#!/usr/bin/env bash
# `placesim sweep` end to end: a small sweep on 1 and 2 threads gives identical CSVs; a run
# interrupted (rows missing from the CSV, a cut line in its journal) resumes to the same file
# evaluating only what was missing; 2 MPI ranks, and 3 resuming, give the same CSV; bad specs exit 2 with one line;
# a workload's p2p=off matches simulate's; a sweep with `rl:` methods gives the same CSV on 1 and 2 threads and on 2 ranks.
set -u
PLACESIM=${1:?usage: sweep_test.sh PATH_TO_placesim}
SRC=${PLACESIM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$T/spec.yaml" <<'YAML'
name: cli-small
question: Does NVLink help RNNLM on 2 and 4 V100s?
base: {template: pcie-tree, gpu_model: V100-SXM2-16GB}
axes:
  interconnect: [pcie, nvlink]
  gpus: [2, 4]
  peer_access: [on, off]
workloads:
  - {graph: rnnlm, options: "layers=2,steps=4"}
methods: [single-gpu, round-robin, {best_of: [single-gpu, round-robin]}]
YAML

"$PLACESIM" sweep "$T/spec.yaml" -o "$T/a.csv" --threads 1 -q >/dev/null 2>"$T/err" || { cat "$T/err"; fail "1-thread sweep"; }
rows=$(($(wc -l < "$T/a.csv") - 1))
[ "$rows" -eq 24 ] || fail "expected 24 rows, got $rows"
head -1 "$T/a.csv" | grep -q '^interconnect,gpus,peer_access,workload,method,step_time_s,oom' || fail "header: $(head -1 "$T/a.csv")"
grep -q ',,,,,,,,,,[^,]' "$T/a.csv" && fail "a point failed: $(grep ',,,,,,,,,,[^,]' "$T/a.csv" | head -1)"
[ ! -e "$T/a.csv.partial" ] || fail "journal left behind after a complete run"

"$PLACESIM" sweep "$T/spec.yaml" -o "$T/b.csv" --threads 2 -q >/dev/null 2>&1 || fail "2-thread sweep"
cmp -s "$T/a.csv" "$T/b.csv" || fail "1 and 2 threads differ: $(diff "$T/a.csv" "$T/b.csv" | head -4)"

# Interrupted run: the first 9 rows made it to the journal, the 10th was cut mid-line.
head -10 "$T/a.csv" > "$T/c.csv.partial"
sed -n 11p "$T/a.csv" | cut -c1-20 | tr -d '\n' >> "$T/c.csv.partial"
"$PLACESIM" sweep "$T/spec.yaml" -o "$T/c.csv" --threads 2 -q >/dev/null 2>"$T/err" || { cat "$T/err"; fail "resume"; }
grep -q "24 points (9 already in" "$T/err" || fail "resume did not skip 9 points: $(cat "$T/err")"
cmp -s "$T/a.csv" "$T/c.csv" || fail "resumed CSV differs"
"$PLACESIM" sweep "$T/spec.yaml" -o "$T/c.csv" -q >/dev/null 2>"$T/err" || fail "re-run of a finished sweep"
grep -q "24 already in" "$T/err" || fail "finished sweep re-evaluated points: $(cat "$T/err")"
cmp -s "$T/a.csv" "$T/c.csv" || fail "re-run changed the CSV"

# Two MPI ranks, when this build has MPI and mpirun is installed.
if command -v mpirun >/dev/null 2>&1; then
  if ! mpirun --allow-run-as-root --oversubscribe -np 2 "$PLACESIM" sweep "$T/spec.yaml" -o "$T/m.csv" --threads 1 -q \
    >/dev/null 2>"$T/err"; then
    grep -q "PLACESIM_WITH_MPI=ON" "$T/err" || { cat "$T/err"; fail "2-rank sweep"; }
    [ ! -e "$T/m.csv" ] || fail "a build without MPI wrote a CSV under mpirun"
    echo "SKIP: placesim built without MPI" >&2
  elif grep -q "on 2 rank(s)" "$T/err"; then
    cmp -s "$T/a.csv" "$T/m.csv" || fail "2 MPI ranks differ from 1 process: $(diff "$T/a.csv" "$T/m.csv" | head -4)"
    # The work queue resumes an interrupted sweep too, on 3 ranks with 2 threads each.
    head -10 "$T/a.csv" > "$T/n.csv.partial"
    mpirun --allow-run-as-root --oversubscribe -np 3 "$PLACESIM" sweep "$T/spec.yaml" -o "$T/n.csv" --threads 2 -q \
      >/dev/null 2>"$T/err" || { cat "$T/err"; fail "3-rank resume"; }
    grep -q "24 points (9 already in" "$T/err" || fail "3-rank resume did not skip 9 points: $(cat "$T/err")"
    grep -q "15 evaluated on 3 rank(s)" "$T/err" || fail "3-rank resume did not evaluate 15 points: $(cat "$T/err")"
    cmp -s "$T/a.csv" "$T/n.csv" || fail "3 MPI ranks after resume differ from 1 process: $(diff "$T/a.csv" "$T/n.csv" | head -4)"
  else
    fail "mpirun -np 2 did not run on 2 ranks: $(cat "$T/err")"
  fi
fi

# Plots.
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  "$PLACESIM" sweep "$T/spec.yaml" -o "$T/a.csv" --plot "$T/plots" -q >/dev/null 2>&1 || fail "--plot"
  ls "$T/plots"/lines_*.png >/dev/null 2>&1 || fail "no line chart"
  ls "$T/plots"/heatmap_*.png >/dev/null 2>&1 || fail "no heatmap"
fi

# The example specs follow the published schema.
if /usr/bin/python3 -c 'import jsonschema, yaml' 2>/dev/null; then
  /usr/bin/python3 - "$SRC" <<'PY' || fail "scenarios/sweeps/*.yaml do not match docs/schemas/sweep.schema.json"
import glob, json, sys
import jsonschema, yaml
src = sys.argv[1]
schema = json.load(open(f"{src}/docs/schemas/sweep.schema.json"))
specs = sorted(glob.glob(f"{src}/scenarios/sweeps/*.yaml"))
assert specs, "no example specs"
for f in specs:
    jsonschema.validate(yaml.safe_load(open(f)), schema)
PY
fi

# Bad input: exit 2, one line naming the file and key, no CSV written.
bad() {
  printf '%s\n' "$1" > "$T/bad.yaml"
  "$PLACESIM" sweep "$T/bad.yaml" -o "$T/bad.csv" -q >"$T/out" 2>"$T/err"
  rc=$?
  [ $rc -eq 2 ] || fail "bad spec ($2): exit $rc, expected 2"
  [ "$(wc -l < "$T/err")" -eq 1 ] || fail "bad spec ($2): expected one line, got: $(cat "$T/err")"
  grep -q "$2" "$T/err" || fail "bad spec: message lacks '$2': $(cat "$T/err")"
  [ ! -e "$T/bad.csv" ] || fail "bad spec ($2) wrote a CSV"
}
bad 'base: paper-4gpu
axes: {warp: [1]}
workloads: [nmt]
methods: [single-gpu]' 'axes.warp'
bad 'base: paper-4gpu
axes: {gpus: [2, -1]}
workloads: [nmt]
methods: [single-gpu]' 'axes.gpus\[1\]'
bad 'base: {template: pcie-tree, gpu_model: V99}
workloads: [nmt]
methods: [single-gpu]' 'base.gpu_model'
bad 'base: paper-4gpu
workloads: [no-such-workload]
methods: [single-gpu]' 'no-such-workload'
bad 'base: paper-4gpu
workloads: [rnnlm]
methods: [rl:zero]' 'methods\[0\]'
"$PLACESIM" sweep "$T/missing.yaml" -q >/dev/null 2>&1; [ $? -eq 2 ] || fail "missing spec file"
bad 'base: dgx-a100
workloads: [{graph: resnet50, parallel: "dp=all,p2p=maybe"}]
methods: [single-gpu]' 'bad.yaml: workloads\[0\].parallel: p2p: expected on or off'
bad 'base: dgx-a100
workloads: [{graph: resnet50, parallel: "p2p=off"}]
methods: [single-gpu]' 'workloads\[0\].parallel'

# p2p=off in a workload's parallel (NCCL_P2P_DISABLE=1): that workload's points run on a copy of
# the cluster without peer access, slower than with NVLink on dgx-a100 and the same step time as
# simulate's --parallel dp=8,p2p=off; 1 and 2 threads give the same CSV.
cat > "$T/p2p.yaml" <<'YAML'
base: dgx-a100
workloads:
  - {graph: resnet50, options: "batch=256", parallel: dp=all}
  - {graph: resnet50, options: "batch=256", parallel: "dp=all,p2p=off"}
methods: [single-gpu]
YAML
"$PLACESIM" sweep "$T/p2p.yaml" -o "$T/p2p1.csv" --threads 1 -q >/dev/null 2>"$T/err" || { cat "$T/err"; fail "p2p sweep"; }
"$PLACESIM" sweep "$T/p2p.yaml" -o "$T/p2p2.csv" --threads 2 -q >/dev/null 2>&1 || fail "p2p sweep, 2 threads"
cmp -s "$T/p2p1.csv" "$T/p2p2.csv" || fail "p2p sweep: 1 and 2 threads differ"
"$PLACESIM" simulate --graph resnet50 --graph-opt batch=256 --cluster dgx-a100 --parallel dp=8,p2p=off \
  --json >"$T/p2p-sim.json" 2>/dev/null || fail "simulate --parallel dp=8,p2p=off"
/usr/bin/python3 - "$T/p2p1.csv" "$T/p2p-sim.json" <<'PY' || fail "p2p sweep against simulate"
import csv, json, sys
rows = {r["workload"]: float(r["step_time_s"]) for r in csv.DictReader(open(sys.argv[1]))}
on, off = rows["resnet50(batch=256)[dp=all]"], rows["resnet50(batch=256)[dp=all,p2p=off]"]
sim = json.load(open(sys.argv[2]))["step_time_s"]
assert off > on, (off, on)
assert abs(off - sim) < 1e-9, (off, sim)
PY

# `rl:` methods (builds with LibTorch): points train their policies side by side on oneTBB
# threads, and each seeds LibTorch's one global generator for its initial weights; the CSV must
# not depend on which points trained together, nor on the thread or rank count.
if [ -x "$(dirname "$PLACESIM")/placesim-torch" ]; then
  cat > "$T/rl.yaml" <<'YAML'
name: cli-rl
question: Does a short RL run beat round-robin on a small RNNLM with 2 and 4 GPUs?
base: {template: pcie-tree, gpu_model: V100-SXM2-16GB}
axes:
  gpus: [2, 4]
  interconnect: [pcie, nvlink]
workloads:
  - {graph: rnnlm, options: "layers=2,steps=4"}
methods: [rl:4:1, rl:4:2, {best_of: [round-robin, rl:3:3]}]
YAML
  "$PLACESIM" sweep "$T/rl.yaml" -o "$T/r1.csv" --threads 1 -q >/dev/null 2>"$T/err" || { cat "$T/err"; fail "rl sweep, 1 thread"; }
  for run in 2 3; do
    "$PLACESIM" sweep "$T/rl.yaml" -o "$T/r$run.csv" --threads 2 -q >/dev/null 2>"$T/err" || { cat "$T/err"; fail "rl sweep, 2 threads"; }
    cmp -s "$T/r1.csv" "$T/r$run.csv" || fail "rl sweep: 1 and 2 threads differ: $(diff "$T/r1.csv" "$T/r$run.csv" | head -4)"
  done
  if command -v mpirun >/dev/null 2>&1 && [ -e "$T/m.csv" ]; then
    mpirun --allow-run-as-root --oversubscribe -np 2 "$PLACESIM" sweep "$T/rl.yaml" -o "$T/r4.csv" --threads 1 -q \
      >/dev/null 2>"$T/err" || { cat "$T/err"; fail "rl sweep, 2 ranks"; }
    cmp -s "$T/r1.csv" "$T/r4.csv" || fail "rl sweep: 1 process and 2 ranks differ: $(diff "$T/r1.csv" "$T/r4.csv" | head -4)"
  fi
fi
echo "sweep_test: ok"
