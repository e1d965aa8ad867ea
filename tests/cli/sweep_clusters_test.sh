#!/usr/bin/env bash
# `placesim sweep SPEC --write-clusters DIR [--sample N --seed S]`: one YAML per distinct grid
# point (not per workload or method), in expansion order, evaluating nothing; each file loads
# back and gives the sweep's own step time for that point; --sample draws the same points for the
# same seed, a subset of the full list under the same names; bad input is one line, exit 2,
# nothing written.
set -u
PLACESIM=${1:?usage: sweep_clusters_test.sh PATH_TO_placesim}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$T/spec.yaml" <<'YAML'
name: cli-clusters
base: {template: pcie-tree, gpu_model: V100-SXM2-16GB}
axes:
  interconnect: [pcie, nvlink]
  gpus: [2, 3, 4]
  gpu_model: [V100-SXM2-16GB, K80]
workloads:
  - {graph: rnnlm, options: "layers=2,steps=4"}
  - {graph: rnnlm, options: "layers=1,steps=4"}
methods: [m-etf, single-gpu]
YAML

"$PLACESIM" sweep "$T/spec.yaml" --write-clusters "$T/all" >"$T/out" 2>"$T/err" ||
  { cat "$T/err"; fail "--write-clusters"; }
[ "$(ls "$T/all" | wc -l)" -eq 12 ] || fail "expected 12 cluster files, got: $(ls "$T/all")"
[ "$(wc -l <"$T/out")" -eq 12 ] || fail "expected the 12 paths on stdout, got: $(cat "$T/out")"
[ "$(head -1 "$T/out")" = "$T/all/000_interconnect-pcie_gpus-2_gpu_model-V100-SXM2-16GB.yaml" ] ||
  fail "first file: $(head -1 "$T/out")"
[ "$(tail -1 "$T/out")" = "$T/all/011_interconnect-nvlink_gpus-4_gpu_model-K80.yaml" ] ||
  fail "last file: $(tail -1 "$T/out")"
ls "$T"/*.csv >/dev/null 2>&1 && fail "--write-clusters evaluated the sweep"

# Each file is the point's cluster: simulating m-ETF's placement of rnnlm on it gives the
# sweep's step time for that point.
"$PLACESIM" sweep "$T/spec.yaml" -o "$T/s.csv" --threads 1 -q >/dev/null 2>"$T/err" ||
  { cat "$T/err"; fail "sweep"; }
for f in "$T"/all/003_* "$T"/all/010_*; do
  "$PLACESIM" compare --graph rnnlm --graph-opt layers=2,steps=4 --cluster "$f" --methods m-etf \
    --json >"$T/c.json" 2>"$T/err" || { cat "$T/err"; fail "compare on $f"; }
  /usr/bin/python3 - "$T/c.json" "$T/s.csv" "$(basename "$f")" <<'PY' || fail "step time of $f"
import csv, json, sys
c = json.load(open(sys.argv[1]))[0]["step_time_s"]
i = int(sys.argv[3][:3])
rows = [r for r in csv.DictReader(open(sys.argv[2])) if r["method"] == "m-etf"
        and r["workload"] == "rnnlm(layers=2,steps=4)"]
s = float(rows[i]["step_time_s"])
if abs(c - s) > 1e-9:
    sys.exit(f"compare {c} != sweep {s} ({sys.argv[3]})")
PY
done

# --sample: same seed, same draw; a subset of the full list with the same names.
for run in a b; do
  "$PLACESIM" sweep "$T/spec.yaml" --write-clusters "$T/s$run" --sample 5 --seed 7 >"$T/$run" ||
    fail "--sample run $run"
done
[ "$(wc -l <"$T/a")" -eq 5 ] || fail "--sample 5 wrote $(wc -l <"$T/a")"
diff -r "$T/sa" "$T/sb" >/dev/null || fail "same seed, different draws"
for f in "$T"/sa/*; do cmp -s "$f" "$T/all/$(basename "$f")" || fail "sampled $f differs"; done
"$PLACESIM" sweep "$T/spec.yaml" --write-clusters "$T/sc" --sample 5 --seed 8 >/dev/null ||
  fail "--seed 8"
"$PLACESIM" sweep "$T/spec.yaml" --write-clusters "$T/sd" --sample 50 >/dev/null || fail "--sample 50"
[ "$(ls "$T/sd" | wc -l)" -eq 12 ] || fail "--sample above the grid size did not write all 12"

# Bad input: one line, exit 2, nothing written.
bad() {  # expected-text args...
  local want=$1
  shift
  "$PLACESIM" sweep "$@" >"$T/out" 2>"$T/err"
  rc=$?
  [ $rc -eq 2 ] || fail "$*: exit $rc, expected 2"
  [ "$(wc -l <"$T/err")" -eq 1 ] || fail "$*: expected one line, got: $(cat "$T/err")"
  grep -q -- "$want" "$T/err" || fail "$*: message lacks '$want': $(cat "$T/err")"
}
sed 's/K80\]/K80, Z99]/' "$T/spec.yaml" >"$T/badmodel.yaml"
bad "gpu_model" "$T/badmodel.yaml" --write-clusters "$T/nothing"
[ ! -e "$T/nothing" ] || fail "a spec with a bad value wrote clusters"
bad "write-clusters" "$T/spec.yaml" --sample 2
bad "sample" "$T/spec.yaml" --write-clusters "$T/nothing" --sample 0
touch "$T/afile"
bad "folder" "$T/spec.yaml" --write-clusters "$T/afile"
echo "sweep_clusters_test: ok"
