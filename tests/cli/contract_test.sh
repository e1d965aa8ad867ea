#!/usr/bin/env bash
# The command-line contract (docs/formats.md "Command line"), over every subcommand: a usage or
# input error (unknown flag, missing value, wrong type, a directory or a missing, empty, garbage
# or unreadable file where a file is expected) exits 2, prints exactly one line on stderr and
# nothing on stdout. Then the positive side: --version, completion, notes on stderr, --quiet,
# --json on every reporting command.
# Usage: bash contract_test.sh PATH_TO_placesim
set -u
BIN=${1:?usage: contract_test.sh PATH_TO_placesim}
HERE=$(cd "$(dirname "$0")" && pwd)
DATA="$HERE/../data"
CAL="$DATA/calibration"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1

mkdir dir
: > empty.json
: > empty.et
printf 'garbage {{{ not json\n' > garbage.json
printf '\x08\x01\xff\xff\xff\xff\x0fjunkjunk' > garbage.et
printf 'key: [unclosed\n' > garbage.yaml
printf 'not an onnx model' > garbage.onnx
printf 'QDSTRM junk' > run.nsys-rep
printf '{"traceEvents": []}' > no_events.json
printf 'not a chakra trace' > notes.txt
M=missing-file
SPEC="$HERE/../../scenarios/sweeps/nmt_nvlink_vs_pcie.yaml"
G=(--graph rnnlm --graph-opt layers=1,steps=2,batch=8,hidden=64,vocab=100)
C=(--cluster paper-2gpu)

# One invocation per line: the arguments after `placesim` (word-split; no spaces in paths here).
CASES="
--bogus
nosuchcommand
simulate
simulate --graph
simulate ${G[*]} ${C[*]} --placement single-gpu --bogus
simulate ${G[*]} ${C[*]} --placement
simulate --graph dir ${C[*]} --placement single-gpu
simulate ${G[*]} --cluster dir --placement single-gpu
simulate ${G[*]} ${C[*]} --placement dir
simulate ${G[*]} ${C[*]} --placement single-gpu --calibration dir
simulate ${G[*]} ${C[*]} --placement single-gpu --calibration $M.yaml
simulate ${G[*]} ${C[*]} --placement single-gpu --calibration garbage.yaml
simulate --graph $M.json ${C[*]} --placement single-gpu
simulate --graph garbage.json ${C[*]} --placement single-gpu
simulate --graph empty.json ${C[*]} --placement single-gpu
simulate --graph garbage.et ${C[*]} --placement single-gpu
simulate --graph empty.et ${C[*]} --placement single-gpu
simulate --graph garbage.onnx ${C[*]} --placement single-gpu
simulate ${G[*]} --cluster garbage.yaml --placement single-gpu
simulate ${G[*]} --cluster $M.yaml --placement single-gpu
simulate ${G[*]} ${C[*]} --placement nosuchmethod
simulate ${G[*]} ${C[*]} --placement garbage.json
simulate --graph rnnlm --graph-opt layers=abc ${C[*]} --placement single-gpu
simulate ${G[*]} ${C[*]} --placement single-gpu --trace dir
simulate ${G[*]} ${C[*]} --placement single-gpu --report dir
describe
describe --bogus
describe --cluster dir
describe --cluster garbage.yaml
describe --graph $M.onnx
describe --graph dir --json
describe --cluster paper-2gpu --json extra-positional
build-graph --graph rnnlm
build-graph --graph rnnlm -o
build-graph --graph dir -o out.json
build-graph ${G[*]} -o dir
build-graph --graph rnnlm --graph-opt batch=-1 -o out.json
build-graph --graph rnnlm --graph-opt nosuchkey=1 -o out.json
import
import nosuch
import onnx
import onnx dir -o out.json
import onnx $M.onnx -o out.json
import onnx garbage.onnx -o out.json
import onnx garbage.onnx -o out.json --batch abc
import onnx garbage.onnx -o out.json --optimizer nosuch
import topo -o out.yaml
import topo --nvidia-smi dir -o out.yaml
import topo --nvidia-smi $M.txt -o out.yaml
import topo --nvidia-smi garbage.json -o out.yaml
import topo --nccl-xml garbage.json -o out.yaml
import chakra
import chakra dir -o out.json
import chakra $M.et -o out.json
import chakra garbage.et -o out.json
import chakra empty.et -o out.json
import chakra notes.txt -o out.json
import chakra garbage.et
import et
import et dir -o out.json
import et $M.json -o out.json
import et garbage.json -o out.json
import et empty.json -o out.json
import et no_events.json -o out.json
import et garbage.json
export
export chakra ${G[*]} ${C[*]} --placement single-gpu
export chakra ${G[*]} ${C[*]} --placement nosuchmethod -o et
export chakra ${G[*]} ${C[*]} --placement single-gpu -o garbage.json
export chakra --graph dir ${C[*]} --placement single-gpu -o et
place ${G[*]} ${C[*]} --method nosuch -o out.json
place ${G[*]} ${C[*]} --method expert
place ${G[*]} ${C[*]} --method expert -o out.json --seed abc
place --graph dir ${C[*]} --method expert -o out.json
place ${G[*]} ${C[*]} --method random:x -o out.json
compare ${G[*]} ${C[*]} --methods nosuch
compare ${G[*]} ${C[*]} --methods expert,nosuch
compare ${G[*]} ${C[*]} --methods expert,dir
compare ${G[*]} ${C[*]} --methods ,
compare ${G[*]} ${C[*]} --methods expert,garbage.json
compare ${G[*]} ${C[*]} --calibration dir
compare ${G[*]} ${C[*]} --json --bogus
calibrate -o out.yaml
calibrate --profile dir -o out.yaml
calibrate --profile $M.json -o out.yaml
calibrate --profile garbage.json -o out.yaml
calibrate --profile no_events.json -o out.yaml
calibrate --profile run.nsys-rep -o out.yaml
calibrate --profile $CAL/a100_alexnet.json
calibrate --profile $CAL/a100_alexnet.json --profile garbage.json -o out.yaml
calibrate-links ${C[*]} -o out.yaml
calibrate-links --p2p dir ${C[*]} -o out.yaml
calibrate-links --p2p $M.txt ${C[*]} -o out.yaml
calibrate-links --p2p garbage.json ${C[*]} -o out.yaml
calibrate-links --nccl-tests garbage.json ${C[*]} -o out.yaml
calibrate-links --p2p $CAL/a100pcie-4x-nvlink-pairs_p2pBandwidthLatencyTest.txt --cluster dir -o out.yaml
validate
validate --profile dir
validate --profile $M.json
validate --profile garbage.json
validate --profile empty.json
validate --profile no_events.json
validate --profile run.nsys-rep
validate --profile $CAL/a100_alexnet.json --max-steps abc
validate --profile $CAL/a100_alexnet.json --max-steps -1
sweep $SPEC --write-clusters dir --sample 0
validate --profile $CAL/a100_alexnet.json --calibration dir
validate --profile $CAL/a100_alexnet.json --calibration garbage.yaml
sweep
sweep dir
sweep $M.yaml
sweep garbage.yaml
sweep empty.json
sweep $SPEC --threads -1
sweep $SPEC --threads abc
train --graph dir
train --samples abc
completion
completion fish
completion bash extra
"
if [ "$(id -u)" -ne 0 ]; then
  printf '{}' > unreadable.json && chmod 000 unreadable.json
  CASES+="
validate --profile unreadable.json
calibrate --profile unreadable.json -o out.yaml
simulate --graph unreadable.json ${C[*]} --placement single-gpu
"
fi

pass=0
fail=0
while IFS= read -r line; do
  [ -z "$line" ] && continue
  read -r -a words <<< "$line"
  rm -rf out.json out.yaml et
  timeout 60 "$BIN" "${words[@]}" > stdout 2> stderr
  rc=$?
  lines=$(wc -l < stderr)
  why=""
  if [ "$rc" -ne 2 ]; then why="exit status $rc, expected 2"; fi
  if [ -z "$why" ] && [ "$lines" -ne 1 ]; then why="$lines lines on stderr, expected 1"; fi
  if [ -z "$why" ] && [ -s stdout ]; then why="stdout not empty: $(head -c 200 stdout)"; fi
  if [ -z "$why" ] && { [ -e out.json ] || [ -e out.yaml ]; }; then why="an output file was written"; fi
  if [ -z "$why" ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL placesim $line: $why"
    echo "     stderr: $(head -c 400 stderr)"
  fi
done <<< "$CASES"

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# A number out of range names the flag and the value in one short line (CLI11's own checks printed
# "Value 0 not in range 0.000000 to 1797...": a 300-digit bound, and 0 "not in" a range from 0).
"$BIN" collective --cluster dgx-a100 --run 0 > stdout 2> stderr
[ "$(cat stderr)" = 'placesim collective: --run: expected a number above 0, got "0" (run `placesim collective --help`)' ] &&
  ok || bad "collective --run 0: $(head -c 200 stderr)"
"$BIN" validate --profile "$CAL/a100_alexnet.json" --max-steps -1 > stdout 2> stderr
[ "$(cat stderr)" = 'placesim validate: --max-steps: expected a number of 0 or more, got "-1" (run `placesim validate --help`)' ] &&
  ok || bad "validate --max-steps -1: $(head -c 200 stderr)"

# --version and --help: status 0, on stdout.
v=$("$BIN" --version 2>/dev/null) && [[ "$v" == placesim* ]] && ok || bad "--version: $v"
"$BIN" simulate --help > stdout 2> stderr && grep -q -- '--quiet' stdout && [ ! -s stderr ] && ok || bad "simulate --help"

# Completion from the parser: bash completes subcommands and a subcommand's flags.
"$BIN" completion bash > completion.bash || bad "completion bash exited $?"
got=$(bash -c 'source ./completion.bash; COMP_WORDS=(placesim sim); COMP_CWORD=1; _placesim; echo "${COMPREPLY[*]}"')
[[ "$got" == *simulate* ]] && ok || bad "completion of 'sim': $got"
got=$(bash -c 'source ./completion.bash; COMP_WORDS=(placesim import chakra --pl); COMP_CWORD=3; _placesim; echo "${COMPREPLY[*]}"')
[[ "$got" == "--placement-out" ]] && ok || bad "completion of 'import chakra --pl': $got"

# Notes go to stderr, results to stdout; --quiet silences the notes.
"$BIN" calibrate --profile "$CAL/a100_alexnet.json" -o out.yaml > stdout 2> stderr || bad "calibrate exited $?"
grep -q 'note:' stdout && bad "calibrate printed a note on stdout"
grep -q 'wrote out.yaml' stdout && ok || bad "calibrate: no result line on stdout"
"$BIN" calibrate --profile "$CAL/a100_alexnet.json" -o out.yaml --quiet > stdout 2> stderr || bad "calibrate --quiet exited $?"
[ ! -s stderr ] && ok || bad "calibrate --quiet wrote to stderr: $(head -c 200 stderr)"

# validate --trace: measured and predicted side by side, two process groups, kernels in both.
"$BIN" validate --profile "$CAL/a100_alexnet.json" --trace vt.json > stdout 2> stderr || bad "validate --trace exited $?"
grep -q 'note:' stdout && bad "validate printed a note on stdout"
/usr/bin/python3 - <<'PY' && ok || bad "validate --trace: not measured + predicted"
import json
ev = json.load(open("vt.json"))["traceEvents"]
proc = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"}
groups = {proc[e["pid"]].split(":")[0] for e in ev if e.get("ph") == "X" and e["cat"] == "kernel"}
assert groups == {"measured", "predicted"}, groups
PY

# compare takes placement files beside methods: a place'd file gives the step time place predicted.
"$BIN" place "${G[@]}" "${C[@]}" --method heft -o best.json --json > place.json 2> stderr || bad "place heft exited $?"
"$BIN" compare "${G[@]}" "${C[@]}" --methods expert,best.json --json > stdout 2> stderr || bad "compare with a file exited $?"
/usr/bin/python3 - <<'PY' && ok || bad "compare --methods expert,best.json: $(head -c 300 stdout)"
import json
placed = json.load(open("place.json"))["predicted_step_time_s"]
rows = {r["method"]: r for r in json.load(open("stdout"))}
assert set(rows) >= {"expert", "best.json"}, rows.keys()
assert abs(rows["best.json"]["step_time_s"] - placed) <= 1e-12 * placed, (rows["best.json"], placed)
PY

# --json on every command that reports: stdout parses as JSON.
json_ok() {
  /usr/bin/python3 -c 'import json,sys; json.load(open("stdout"))' 2>/dev/null && ok || bad "--json of: $*"
}
# The p2p measurement is of a 4x A100 PCIe box: calibrate its own imported topology (a PCIe 3
# cluster cannot carry what it measured, which calibrate-links refuses).
"$BIN" import topo --nvidia-smi "$CAL/a100pcie-4x-nvlink-pairs_nvidia-smi-topo.txt" --gpu-model A100-PCIe-80GB \
  -o a100.yaml > /dev/null 2>&1 || bad "import topo of the A100 PCIe box"
for cmd in \
  "describe --cluster paper-2gpu --json" \
  "simulate ${G[*]} ${C[*]} --placement single-gpu --json" \
  "build-graph ${G[*]} -o g.json --json" \
  "place ${G[*]} ${C[*]} --method expert -o p.json --json" \
  "compare ${G[*]} ${C[*]} --methods expert,single-gpu --json" \
  "calibrate --profile $CAL/a100_alexnet.json -o c.yaml --json" \
  "calibrate-links --p2p $CAL/a100pcie-4x-nvlink-pairs_p2pBandwidthLatencyTest.txt --cluster a100.yaml -o l.yaml --json" \
  "validate --profile $CAL/a100_alexnet.json --json" \
  "import topo --nvidia-smi $CAL/h200_nvidia-smi-topo.txt --gpu-model H200-SXM-141GB -o t.yaml --json" \
  "export chakra ${G[*]} ${C[*]} --placement expert -o et --json" \
  "import et $DATA/et/param_linear_et.json.gz -o e.json --json"; do
  read -r -a words <<< "$cmd"
  "$BIN" "${words[@]}" > stdout 2> stderr || { bad "$cmd exited $?: $(head -c 300 stderr)"; continue; }
  json_ok "$cmd"
done

# train (a build with LibTorch): --json too.
if "$BIN" train --help 2>/dev/null | grep -q -- '--json'; then
  "$BIN" train "${G[@]}" "${C[@]}" --iterations 1 --samples 2 --hidden 8 --groups 4 --no-plot --no-table \
    -o tr.json --json > stdout 2> stderr || bad "train --json exited $?: $(head -c 300 stderr)"
  json_ok "train --json"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
