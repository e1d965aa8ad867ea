#!/usr/bin/env bash
# `placesim train` end to end on a small graph: writes placement, curve; a run stopped and resumed
# from its checkpoint equals an uninterrupted one; bad flags are one-line input errors (exit 2).
set -euo pipefail
PLACESIM=${1:?usage: train_test.sh PATH_TO_placesim}
if ! "$PLACESIM" train --help >/dev/null 2>&1 || "$PLACESIM" train --help | grep -q "needs a build with LibTorch"; then
  echo "train_test: built without LibTorch, nothing to test"; exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--graph rnnlm --graph-opt steps=3,layers=2,hidden=256,batch=16 --cluster paper-2gpu
        --samples 4 --hidden 16 --groups 24 --seed 5 --no-plot --no-table --checkpoint-every 2)

"$PLACESIM" train "${common[@]}" --iterations 6 --checkpoint "$tmp/whole" -o "$tmp/whole.json" >"$tmp/whole.out" 2>"$tmp/whole.err"
test -s "$tmp/whole.json" || { echo "no placement written"; exit 1; }
test -s "$tmp/whole.curve.csv" || { echo "no curve written"; exit 1; }
test -s "$tmp/whole/checkpoint.pt" || { echo "no checkpoint written"; exit 1; }
[ "$(wc -l <"$tmp/whole.curve.csv")" -eq 7 ] || { echo "curve should have 6 rows"; cat "$tmp/whole.curve.csv"; exit 1; }
grep -q '"method": *"rl"' "$tmp/whole.json" || { echo "placement lacks method rl"; cat "$tmp/whole.json"; exit 1; }
# The best placement so far is a placement file beside every checkpoint (issue #18).
"$PLACESIM" simulate --graph rnnlm --graph-opt steps=3,layers=2,hidden=256,batch=16 --cluster paper-2gpu \
  --placement "$tmp/whole/best.json" >/dev/null || { echo "checkpoint's best.json does not simulate"; exit 1; }
ls "$tmp"/whole/*.tmp* "$tmp"/*.tmp* >/dev/null 2>&1 && { echo "temporary files left behind"; ls "$tmp" "$tmp/whole"; exit 1; }
# A truncated or damaged checkpoint is one line, exit 2, naming it (issue #18: it used to crash).
cp -r "$tmp/whole" "$tmp/cut"
head -c 100000 "$tmp/whole/checkpoint.pt" >"$tmp/cut/checkpoint.pt"
set +e
"$PLACESIM" train "${common[@]}" --iterations 8 --checkpoint "$tmp/cut" --resume -o "$tmp/cut.json" >/dev/null 2>"$tmp/cut.err"
rc=$?
set -e
# (train's first stderr line is its banner; the error is the one line after it)
[ "$rc" -eq 2 ] && tail -1 "$tmp/cut.err" | grep -q "^placesim: .*cut/checkpoint.pt: expected a checkpoint" &&
  [ "$(grep -c '^placesim: ' "$tmp/cut.err")" -eq 1 ] && [ ! -e "$tmp/cut.json" ] \
  || { echo "truncated checkpoint: exit $rc"; cat "$tmp/cut.err"; exit 1; }

"$PLACESIM" train "${common[@]}" --iterations 3 --checkpoint "$tmp/part" -o "$tmp/part1.json" >/dev/null 2>&1
"$PLACESIM" train "${common[@]}" --iterations 6 --checkpoint "$tmp/part" --resume -o "$tmp/part.json" >/dev/null 2>"$tmp/part.err"
grep -q "resumed" "$tmp/part.err" || { echo "second run did not resume"; cat "$tmp/part.err"; exit 1; }
# Columns 1-8 are deterministic; 9-11 are wall times.
diff <(cut -d, -f1-8 "$tmp/whole.curve.csv") <(cut -d, -f1-8 "$tmp/part.curve.csv") \
  || { echo "resumed curve differs from the uninterrupted one"; exit 1; }
diff "$tmp/whole.json" "$tmp/part.json" || { echo "resumed placement differs"; exit 1; }

# Resuming with other training options: one line naming the flag, exit 2.
set +e
"$PLACESIM" train "${common[@]}" --iterations 8 --lr 0.01 --checkpoint "$tmp/part" --resume -o "$tmp/lr.json" >/dev/null 2>"$tmp/lr.err"
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "resume with another --lr: exit $rc, expected 2"; cat "$tmp/lr.err"; exit 1; }
# (after the banner line that every run prints)
[ "$(grep -c '^placesim:' "$tmp/lr.err")" -eq 1 ] && grep '^placesim:' "$tmp/lr.err" | grep -q -- "--lr" \
  || { echo "resume with another --lr: expected one error line naming --lr"; cat "$tmp/lr.err"; exit 1; }

# Resuming with another grouping (same sizes or not): one line, exit 2.
set +e
"$PLACESIM" train "${common[@]}" --iterations 8 --grouper colocation --checkpoint "$tmp/part" --resume -o "$tmp/gr.json" >/dev/null 2>"$tmp/gr.err"
rc=$?
set -e
[ "$rc" -eq 2 ] && [ "$(grep -c '^placesim:' "$tmp/gr.err")" -eq 1 ] \
  || { echo "resume with another --grouper: exit $rc, expected 2 and one error line"; cat "$tmp/gr.err"; exit 1; }

# The default grouping (Scotch-refined) expresses Scotch's placement exactly; the plain one of
# this size need not. --project-baselines trains nothing.
"$PLACESIM" train --graph rnnlm --graph-opt steps=3,layers=2,hidden=256,batch=16 --cluster paper-2gpu --groups 24 \
  --project-baselines -o "$tmp/proj.json" >"$tmp/proj.out" 2>&1 || { echo "--project-baselines failed"; cat "$tmp/proj.out"; exit 1; }
awk '$1 == "scotch" { found = 1; if ($2 != $3) bad = 1 } END { exit !(found && !bad) }' "$tmp/proj.out" \
  || { echo "Scotch's projection onto the default grouping differs from Scotch"; cat "$tmp/proj.out"; exit 1; }
[ "$(grep -c 'projected' "$tmp/proj.out")" -eq 1 ] && [ ! -e "$tmp/proj.json" ] \
  || { echo "--project-baselines: expected one table and no training"; cat "$tmp/proj.out"; exit 1; }

# One policy trained on two graphs places a third without retraining (--iterations 0).
for layers in 1 2 3; do
  "$PLACESIM" build-graph --graph rnnlm --graph-opt steps=3,layers=$layers,hidden=256,batch=16 -o "$tmp/rnnlm$layers.json" >/dev/null
done
multi=(--cluster paper-2gpu --samples 4 --hidden 16 --groups 24 --seed 5 --no-plot --no-table)
"$PLACESIM" train "${multi[@]}" --graphs "$tmp/rnnlm1.json,$tmp/rnnlm2.json" --iterations 4 --checkpoint "$tmp/multi" -o "$tmp/multi.json" >"$tmp/multi.out" 2>/dev/null
test -s "$tmp/multi/checkpoint.pt" || { echo "--graphs wrote no checkpoint"; cat "$tmp/multi.out"; exit 1; }
[ "$(wc -l <"$tmp/multi.curve.csv")" -eq 5 ] || { echo "--graphs curve should have 4 rows"; cat "$tmp/multi.curve.csv"; exit 1; }
head -1 "$tmp/multi.curve.csv" | grep -q '^iteration,graph,' || { echo "--graphs curve has no graph column"; head -2 "$tmp/multi.curve.csv"; exit 1; }
"$PLACESIM" train "${multi[@]}" --graph "$tmp/rnnlm3.json" --pretrained "$tmp/multi/checkpoint.pt" --iterations 0 -o "$tmp/unseen.json" >"$tmp/unseen.out" 2>/dev/null
grep -q '"pretrained"' "$tmp/unseen.json" || { echo "placement lacks its pretrained source"; cat "$tmp/unseen.json"; exit 1; }
"$PLACESIM" simulate --graph "$tmp/rnnlm3.json" --cluster paper-2gpu --placement "$tmp/unseen.json" >/dev/null \
  || { echo "the pretrained policy's placement does not simulate"; exit 1; }

# The Hierarchical Planner's learned grouper end to end: a placement of every op that simulates.
"$PLACESIM" train --cluster paper-2gpu --samples 4 --hidden 16 --groups 8 --seed 5 --no-plot --no-table \
  --graph "$tmp/rnnlm1.json" --grouper learned --iterations 2 -o "$tmp/learned.json" >"$tmp/learned.out" 2>&1 \
  || { echo "train --grouper learned failed"; cat "$tmp/learned.out"; exit 1; }
"$PLACESIM" simulate --graph "$tmp/rnnlm1.json" --cluster paper-2gpu --placement "$tmp/learned.json" >/dev/null \
  || { echo "the learned grouper's placement does not simulate"; exit 1; }

# Bad input: one line, exit 2.
for bad in "--samples 0" "--resume" "--attention cosine" "--iterations 0" "--graphs rnnlm --iterations 1" \
           "--pretrained /nonexistent.pt --iterations 0" "--grouper nope" "--grouper learned --project-baselines"; do
  set +e
  # shellcheck disable=SC2086
  "$PLACESIM" train --graph rnnlm --cluster paper-2gpu $bad >"$tmp/bad.out" 2>"$tmp/bad.err"
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || { echo "train $bad: exit $rc, expected 2"; cat "$tmp/bad.err"; exit 1; }
  [ "$(wc -l <"$tmp/bad.err")" -eq 1 ] || { echo "train $bad: expected one line"; cat "$tmp/bad.err"; exit 1; }
done
echo "train_test: ok"
