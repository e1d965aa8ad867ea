#!/usr/bin/env bash
# The GNN policy end to end (issue 21): pre-training on a small corpus writes a policy file;
# `place --method rl:FILE` places a graph and a cluster the policy never saw, the same bits twice;
# `compare` lists it; `train --policy gnn --pretrained` fine-tunes; a seed reproduces a run; damaged
# or foreign policy files are one-line input errors (exit 2) and leave no output.
set -euo pipefail
PLACESIM=${1:?usage: train_gnn_test.sh PATH_TO_placesim}
if ! "$PLACESIM" train --help >/dev/null 2>&1 || "$PLACESIM" train --help | grep -q "needs a build with LibTorch"; then
  echo "train_gnn_test: built without LibTorch, nothing to test"; exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
small=steps=3+hidden=128+vocab=500+batch=8
held=(--graph inception_v3 --graph-opt batch=8 --cluster dgx1-v100)

# Pre-training: 2 graphs x 2 clusters, 8 iterations.
"$PLACESIM" train --policy gnn --graphs "rnnlm@$small,nmt@batch=8+hidden=128+src_len=4+tgt_len=4+src_vocab=500+tgt_vocab=500" --clusters paper-2gpu,paper-4gpu \
  --iterations 8 --samples 4 --hidden 16 --seed 2 --checkpoint "$tmp/pre" >"$tmp/pre.out" 2>"$tmp/pre.err" \
  || { echo "pre-training failed"; cat "$tmp/pre.err"; exit 1; }
test -s "$tmp/pre/gnn.ckpt" || { echo "no policy written"; cat "$tmp/pre.out"; exit 1; }
head -c 20 "$tmp/pre/gnn.ckpt" | grep -q "^placesim-checkpoint" || { echo "policy lacks the checkpoint header"; exit 1; }
[ "$(wc -l <"$tmp/pre/gnn.curve.csv")" -eq 9 ] || { echo "curve should have 8 rows"; cat "$tmp/pre/gnn.curve.csv"; exit 1; }
grep -q "rnnlm@$small/paper-4gpu" "$tmp/pre/gnn.curve.csv" || { echo "curve lacks the corpus item names"; exit 1; }

# Zero-shot on a graph and a cluster outside the corpus; deterministic.
"$PLACESIM" place --method "rl:$tmp/pre/gnn.ckpt" "${held[@]}" -o "$tmp/z1.json" >"$tmp/z1.out"
"$PLACESIM" place --method "rl:$tmp/pre/gnn.ckpt" "${held[@]}" -o "$tmp/z2.json" >/dev/null
grep -q "predicted step time" "$tmp/z1.out" || { echo "place printed no step time"; cat "$tmp/z1.out"; exit 1; }
diff <(grep -v method_wall_s "$tmp/z1.json") <(grep -v method_wall_s "$tmp/z2.json") >/dev/null \
  || { echo "zero-shot placement differs between two runs"; exit 1; }
"$PLACESIM" simulate "${held[@]}" --placement "$tmp/z1.json" >/dev/null

# compare lists rl:FILE beside the baselines.
"$PLACESIM" compare --graph rnnlm --graph-opt steps=3,hidden=128,vocab=500,batch=8 --cluster paper-4gpu \
  --methods "expert,rl:$tmp/pre/gnn.ckpt" --json >"$tmp/c.json"
/usr/bin/python3 - "$tmp/c.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
names = [r["method"] for r in rows]
assert names[0] == "expert" and names[1].startswith("rl:"), names
assert rows[1]["step_time_s"] > 0 and "error" not in rows[1], rows[1]
PY

# The shipped policy (scenarios/policies/gnn.ckpt) is `rl`, and compare's default rows end with it.
"$PLACESIM" place --method rl --graph rnnlm --graph-opt steps=3,hidden=128,vocab=500,batch=8 --cluster paper-2gpu \
  -o "$tmp/d.json" >/dev/null || { echo "place --method rl with the shipped policy failed"; exit 1; }
grep -q '"policy": *"default"' "$tmp/d.json" || { echo "placement lacks policy default"; exit 1; }
"$PLACESIM" compare --graph rnnlm --graph-opt steps=3,hidden=128,vocab=500,batch=8 --cluster paper-2gpu --json >"$tmp/all.json"
/usr/bin/python3 - "$tmp/all.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
assert rows[-1]["method"] == "rl" and "error" not in rows[-1] and rows[-1]["step_time_s"] > 0, rows[-1]
PY

# Fine-tuning from the policy; the same seed gives the same placement and curve on 1 or 2 threads.
ft=(--policy gnn --graph rnnlm --graph-opt steps=3,hidden=128,vocab=500,batch=8 --cluster paper-4gpu
    --pretrained "$tmp/pre/gnn.ckpt" --iterations 4 --samples 4 --seed 7 --no-plot --no-table)
"$PLACESIM" train "${ft[@]}" -o "$tmp/f1.json" --checkpoint "$tmp/f1" >/dev/null 2>&1
"$PLACESIM" train "${ft[@]}" --threads 2 -o "$tmp/f2.json" >/dev/null 2>&1   # any thread count
cmp "$tmp/f1.json" "$tmp/f2.json" || { echo "fine-tuned placements differ"; exit 1; }
diff <(cut -d, -f1-8 "$tmp/f1.curve.csv") <(cut -d, -f1-8 "$tmp/f2.curve.csv") || { echo "curves differ"; exit 1; }
test -s "$tmp/f1/gnn.ckpt" || { echo "fine-tuning wrote no policy"; exit 1; }
grep -q '"update": *"ppo"' "$tmp/f1.json" || { echo "placement lacks the update rule"; exit 1; }
# REINFORCE runs too.
"$PLACESIM" train "${ft[@]}" --update reinforce -o "$tmp/r.json" >/dev/null 2>&1

# Training ends with the test-time search (--search, sized by counts): never worse than training's
# best, which --search off returns alone; a malformed --search, or one for seq2seq, is exit 2.
"$PLACESIM" train "${ft[@]}" --search 4,20,1,20 --json -o "$tmp/s.json" >"$tmp/s.out" 2>/dev/null
"$PLACESIM" train "${ft[@]}" --search off --json -o "$tmp/o.json" >"$tmp/o.out" 2>/dev/null
/usr/bin/python3 - "$tmp/s.out" "$tmp/o.out" <<'PY'
import json, sys
s, o = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert "trained_step_s" not in o and "search_simulations" not in o, o
assert s["trained_step_s"] == o["best_step_s"], (s, o)
assert 0 < s["best_step_s"] <= s["trained_step_s"], s
# before training place --method rl's search (at most 1 + 2 + 32 + 3 x 512 + 1024), after it
# greedy + 2 hints + training's best + the first search's result + 4 samples + 20 + 20 moves
assert 0 < s["search_simulations"] <= 2595 + 49, s
assert s["simulations"] == o["simulations"] + s["search_simulations"], (s, o)
PY
for bad in "1,2,3" "1,2,0,4" "x"; do
  set +e
  "$PLACESIM" train "${ft[@]}" --search "$bad" -o "$tmp/bad.json" >/dev/null 2>"$tmp/bad.err"
  rc=$?
  set -e
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/bad.err")" -eq 1 ] && grep -q -- "--search" "$tmp/bad.err" && [ ! -e "$tmp/bad.json" ] \
    || { echo "--search $bad: exit $rc"; cat "$tmp/bad.err"; exit 1; }
done
set +e
"$PLACESIM" train --graph rnnlm --graph-opt steps=3,hidden=128,vocab=500,batch=8 --cluster paper-2gpu \
  --iterations 1 --search off -o "$tmp/bad.json" >/dev/null 2>"$tmp/bad.err"
rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q -- "--search" "$tmp/bad.err" || { echo "--search with seq2seq: exit $rc"; cat "$tmp/bad.err"; exit 1; }

# Damaged, foreign and missing policy files: one line, exit 2, no placement written.
bytes=$(stat -c %s "$tmp/pre/gnn.ckpt")
head -c $((bytes / 2)) "$tmp/pre/gnn.ckpt" >"$tmp/cut.ckpt"
printf 'placesim-checkpoint 2 bytes=5 fnv1a64=0000000000000000\nhello' >"$tmp/forged.ckpt"
"$PLACESIM" train --graph rnnlm --graph-opt steps=3,hidden=128,vocab=500,batch=8 --cluster paper-2gpu \
  --samples 4 --hidden 16 --iterations 1 --no-plot --no-table --checkpoint "$tmp/s2s" -o "$tmp/s2s.json" >/dev/null 2>&1
for bad in "$tmp/cut.ckpt" "$tmp/forged.ckpt" "$tmp/s2s/checkpoint.pt" "$tmp/none.ckpt"; do
  set +e
  "$PLACESIM" place --method "rl:$bad" "${held[@]}" -o "$tmp/bad.json" >/dev/null 2>"$tmp/bad.err"
  rc=$?
  set -e
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/bad.err")" -eq 1 ] && grep -q "$bad" "$tmp/bad.err" && [ ! -e "$tmp/bad.json" ] \
    || { echo "bad policy $bad: exit $rc"; cat "$tmp/bad.err"; exit 1; }
done
set +e
"$PLACESIM" train --policy transformer --iterations 1 -o "$tmp/x.json" >/dev/null 2>"$tmp/x.err"
rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q -- "--policy" "$tmp/x.err" || { echo "bad --policy: exit $rc"; cat "$tmp/x.err"; exit 1; }
# Corpus entries may be files beside built-in names: an ONNX import with its options and a cluster
# YAML path (the shipped policy's corpus has both, scenarios/policies/README.md). A missing file or
# an ONNX model whose batch cannot change is one line, exit 2, and no policy written.
onnx="$(cd "$(dirname "$0")/../data/onnx" && pwd)"
yaml="$(cd "$(dirname "$0")/../../scenarios/clusters" && pwd)/paper-2gpu.yaml"
"$PLACESIM" train --policy gnn --graphs "rnnlm@$small,$onnx/squeezenet1_0.onnx@training=true+batch=2" \
  --clusters "paper-4gpu,$yaml" --iterations 4 --samples 4 --hidden 16 --seed 2 --search off \
  --checkpoint "$tmp/files" >"$tmp/files.out" 2>"$tmp/files.err" \
  || { echo "pre-training on files failed"; cat "$tmp/files.err"; exit 1; }
grep -q "squeezenet1_0.onnx@training=true+batch=2/paper-2gpu" "$tmp/files/gnn.curve.csv" \
  || { echo "curve lacks the file entries"; cat "$tmp/files/gnn.curve.csv"; exit 1; }
for bad in "--graphs rnnlm@$small,$tmp/none.onnx --clusters paper-2gpu" \
           "--graphs rnnlm@$small --clusters paper-2gpu,$tmp/none.yaml" \
           "--graphs $onnx/gpt_separate_qkv.onnx@training=true+batch=64 --clusters paper-2gpu"; do
  set +e
  # shellcheck disable=SC2086
  "$PLACESIM" train --policy gnn $bad --iterations 1 --samples 4 --hidden 16 \
    --checkpoint "$tmp/badc" >/dev/null 2>"$tmp/bad.err"
  rc=$?
  set -e
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/bad.err")" -eq 1 ] && [ ! -e "$tmp/badc/gnn.ckpt" ] \
    || { echo "bad corpus entry ($bad): exit $rc"; cat "$tmp/bad.err"; exit 1; }
done
echo ok
