#!/usr/bin/env bash
# placesim place / compare end to end: files written, JSON and CSV well formed, bad input exits 2.
set -euo pipefail
placesim="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
opts="steps=3,hidden=128,vocab=500,batch=8"

"$placesim" place --method m-etf --graph rnnlm --graph-opt "$opts" --cluster paper-2gpu -o "$tmp/p.json" > "$tmp/out.txt"
grep -q "predicted step time" "$tmp/out.txt"
python3 - "$tmp/p.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
text = json.dumps(p)
assert "m-etf" in text, text[:200]
assert "predicted_step_time_s" in text, text[:200]
PY
# The placement file feeds simulate.
"$placesim" simulate --graph rnnlm --graph-opt "$opts" --cluster paper-2gpu --placement "$tmp/p.json" > /dev/null

"$placesim" compare --graph rnnlm --graph-opt "$opts" --cluster paper-4gpu --methods single-gpu,expert,metis,heft \
  --json --csv "$tmp/c.csv" > "$tmp/c.json"
python3 - "$tmp/c.json" "$tmp/c.csv" <<'PY'
import csv, json, sys
rows = json.load(open(sys.argv[1]))
assert [r["method"] for r in rows] == ["single-gpu", "expert", "metis", "heft"], rows
assert all(r["step_time_s"] > 0 for r in rows)
assert rows[0]["speedup_vs_single_gpu"] == 1.0
lines = list(csv.DictReader(open(sys.argv[2])))
assert len(lines) == 4 and lines[1]["method"] == "expert", lines
PY
"$placesim" compare --graph rnnlm --graph-opt "$opts" --cluster paper-2gpu | grep -q "m-sct"

set +e
"$placesim" place --method annealing --graph rnnlm --graph-opt "$opts" --cluster paper-2gpu -o "$tmp/x.json" 2> "$tmp/err.txt"
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "expected exit 2 for an unknown method, got $rc"; exit 1; }
[ "$(wc -l < "$tmp/err.txt")" -eq 1 ] || { echo "expected one line on stderr"; cat "$tmp/err.txt"; exit 1; }
[ ! -e "$tmp/x.json" ] || { echo "no file must be written on bad input"; exit 1; }
echo ok
