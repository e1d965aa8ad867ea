#!/usr/bin/env bash
# `mpirun -np 2 placesim train` is synchronous data-parallel REINFORCE: with the same seed, K and
# shards it must give the single process's result bit for bit (best placement, training curve),
# rank 0 alone writes, a 2-rank run resumes from its checkpoint exactly, and a rank count that
# does not divide --shards is a one-line input error.
set -euo pipefail
PLACESIM=${1:?usage: train_mpi_test.sh PATH_TO_placesim}
if ! "$PLACESIM" train --help >/dev/null 2>&1 || "$PLACESIM" train --help | grep -q "needs a build with LibTorch"; then
  echo "train_mpi_test: built without LibTorch, nothing to test"; exit 0
fi
if ! command -v mpirun >/dev/null; then
  echo "train_mpi_test: no mpirun, nothing to test"; exit 0
fi
MPI=(mpirun --allow-run-as-root --oversubscribe)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
common=(--graph rnnlm --graph-opt steps=3,layers=2,hidden=256,batch=16 --cluster paper-2gpu
        --samples 6 --hidden 64 --groups 24 --seed 7 --no-plot --no-table --threads 1)

"$PLACESIM" train "${common[@]}" --shards 2 --iterations 5 -o single.json >single.out 2>single.err
set +e
"${MPI[@]}" -np 2 "$PLACESIM" train "${common[@]}" --shards 2 --iterations 5 -o mpi.json >mpi.out 2>mpi.err
rc=$?
set -e
if grep -q "built with PLACESIM_WITH_MPI=ON" mpi.err; then
  echo "train_mpi_test: built without MPI, nothing to test"; exit 0
fi
[ "$rc" -eq 0 ] || { echo "2-rank train failed (exit $rc)"; cat mpi.err; exit 1; }
# Columns 1-8 are deterministic; 9-11 are wall times.
diff <(cut -d, -f1-8 single.curve.csv) <(cut -d, -f1-8 mpi.curve.csv) \
  || { echo "2-rank curve differs from the single process's"; exit 1; }
[ "$(wc -l <mpi.curve.csv)" -eq 6 ] || { echo "curve should have 5 rows"; cat mpi.curve.csv; exit 1; }
diff single.json mpi.json || { echo "2-rank placement differs from the single process's"; exit 1; }
grep -q "2 MPI ranks" mpi.err || { echo "rank 0 did not report 2 ranks"; cat mpi.err; exit 1; }
[ "$(grep -c '^rl: best step time' mpi.out)" -eq 1 ] || { echo "expected one summary, from rank 0"; cat mpi.out; exit 1; }

# Interrupted after 2 iterations (by the budget), resumed on 2 ranks: equals the whole run.
"${MPI[@]}" -np 2 "$PLACESIM" train "${common[@]}" --shards 2 --iterations 2 --checkpoint ck -o part1.json >/dev/null 2>&1
"${MPI[@]}" -np 2 "$PLACESIM" train "${common[@]}" --shards 2 --iterations 5 --checkpoint ck --resume -o part.json >/dev/null 2>part.err
grep -q "resumed" part.err || { echo "2-rank run did not resume"; cat part.err; exit 1; }
diff <(cut -d, -f1-8 single.curve.csv) <(cut -d, -f1-8 part.curve.csv) \
  || { echo "resumed 2-rank curve differs from the uninterrupted run"; exit 1; }
diff single.json part.json || { echo "resumed 2-rank placement differs"; exit 1; }

# 2 ranks cannot split 3 shards evenly: one line from rank 0, exit 2.
set +e
"${MPI[@]}" -np 2 "$PLACESIM" train "${common[@]}" --shards 3 --iterations 1 -o bad.json >bad.out 2>bad.err
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "--shards 3 on 2 ranks: exit $rc, expected 2"; cat bad.err; exit 1; }
[ "$(grep -c 'shards' bad.err)" -eq 1 ] || { echo "--shards 3 on 2 ranks: expected one error line"; cat bad.err; exit 1; }
echo "train_mpi_test: ok"
