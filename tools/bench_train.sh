#!/usr/bin/env bash
# Training iterations per second of `placesim train` on 1 process and on 2 MPI ranks, with the
# same seed, samples and shards (so the same result, checked), best of REPEAT interleaved rounds each.
#   tools/bench_train.sh build/placesim [ITERATIONS] [REPEAT] [-- extra train flags]
# WARMUP=N (environment, default 2) leaves the first N iterations out of the per-iteration mean.
# Default workload: the main job's (nmt on paper-4gpu, its 63 Scotch-refined groups, hidden 256), K = 32 samples in
# 2 shards. Prints a Markdown table (docs/performance.md, "Training across ranks"):
#   s/iteration   mean of sampling + simulation + gradient (the curve CSV's wall columns, rank 0)
#                 over the iterations after the first WARMUP: the training loop as a long run
#                 sees it. The first iterations pay for first-touching the memory that autograd
#                 and the allocator then keep (~0.15-0.2 s per process, once, on this VM's slow
#                 page faults), which would weigh 2-3% of a whole run per 10 iterations;
#   with warm-up  the same mean over every iteration;
#   iterations/s  its inverse; efficiency = rate(2 ranks) / (2 rate(1 process));
#   process s     the whole command (LibTorch loading, graph building, greedy decode);
#   CPU s         user + sys of the whole process tree;
#   2 independent processes: two copies of the 1-process command at once, their combined rate
#                 against twice one copy's: the machine's own 1 -> 2 core scaling at that moment, the
#                 ceiling for the ranks' efficiency (a VM's two vCPUs slow each other down, and by how
#                 much varies from minute to minute: docs/performance.md).
set -eu
calc() { awk "BEGIN { print $* }"; }
PLACESIM=$(realpath "${1:?usage: bench_train.sh PATH_TO_placesim [ITERATIONS] [REPEAT] [-- flags]}")
ITER=${2:-30}
WARMUP=${WARMUP:-2}
REPEAT=${3:-2}
shift $(( $# < 3 ? $# : 3 ))
[ "${1:-}" = "--" ] && shift
EXTRA=("$@")
[ ${#EXTRA[@]} -gt 0 ] || EXTRA=(--graph nmt --cluster paper-4gpu --samples 32 --shards 2)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# Unbound: mpirun pins each rank to one core by default, which on a machine shared with other
# work keeps a rank on a busy core while the other core idles; threads are not pinned either.
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none"
COMMON=(train "${EXTRA[@]}" --iterations "$ITER" --seed 1 --threads 1 --no-plot --no-table)

per_of() {  # curve CSV -> mean s/iteration after the warm-up
  awk -F, -v w="$WARMUP" 'NR > 1 + w { s += $9 + $10 + $11; n++ } END { printf "%.4f", s / n }' "$1"
}

check_same() {  # placement JSON [curve CSV]: fails unless they equal the first run's
  cmp -s "$T/first.json" "$1" || { echo "placement differs from the first run: $1" >&2; exit 1; }
  [ -z "${2:-}" ] || cmp -s <(cut -d, -f1-8 "$T/first.curve.csv") <(cut -d, -f1-8 "$2") \
    || { echo "training curve differs from the first run: $2" >&2; exit 1; }
}

run() {  # command prefix; prints "s_per_iteration cpu_s process_s split all" of one run
  rm -f "$T/o.json" "$T/o.curve.csv"
  /usr/bin/time -o "$T/time" -f "%e %U %S" "$@" "${COMMON[@]}" -o "$T/o.json" >/dev/null 2>"$T/err" \
    || { cat "$T/err" >&2; exit 1; }
  if [ -e "$T/first.json" ]; then
    check_same "$T/o.json" "$T/o.curve.csv"
  else
    cp "$T/o.curve.csv" "$T/first.curve.csv"
    cp "$T/o.json" "$T/first.json"
  fi
  local wall user sys all split
  all=$(awk -F, 'NR > 1 { s += $9 + $10 + $11; n++ } END { printf "%.4f", s / n }' "$T/o.curve.csv")
  split=$(awk -F, -v w="$WARMUP" 'NR > 1 + w { a += $9; b += $10; c += $11; n++ } END { printf "%.3f/%.3f/%.3f", a / n, b / n, c / n }' "$T/o.curve.csv")
  read -r wall user sys < "$T/time"
  echo "$(per_of "$T/o.curve.csv") $(calc "$user + $sys") $wall $split $all"
}

pair() {  # prints "a b": the s/iteration of two copies of the 1-process command run at once
  local pids=() i
  for i in 1 2; do
    rm -f "$T/p$i.json" "$T/p$i.curve.csv"
    "$PLACESIM" "${COMMON[@]}" -o "$T/p$i.json" >/dev/null 2>"$T/perr$i" &
    pids+=($!)
  done
  for i in 1 2; do
    wait "${pids[$((i - 1))]}" || { cat "$T/perr$i" >&2; exit 1; }
    check_same "$T/p$i.json" "$T/p$i.curve.csv"
  done
  echo "$(per_of "$T/p1.curve.csv") $(per_of "$T/p2.curve.csv")"
}

(( ITER > WARMUP )) || { echo "bench_train.sh: ITERATIONS ($ITER) must exceed WARMUP ($WARMUP)" >&2; exit 2; }
# The three configurations take turns, REPEAT rounds, and each keeps its best round: this VM's
# speed drifts by 20-30% over minutes, and interleaving gives every configuration the same
# chances at the fast minutes.
best1="" best2="" bestq=""
for _ in $(seq "$REPEAT"); do
  r1=$(run "$PLACESIM")
  [ -z "$best1" ] || [ "$(calc "(${r1%% *} < ${best1%% *}) ? 1 : 0")" = 1 ] && best1=$r1
  r2=$(run $MPI -np 2 "$PLACESIM")
  [ -z "$best2" ] || [ "$(calc "(${r2%% *} < ${best2%% *}) ? 1 : 0")" = 1 ] && best2=$r2
  rq=$(pair)
  [ -z "$bestq" ] || [ "$(calc "(1 / ${rq%% *} + 1 / ${rq##* } > 1 / ${bestq%% *} + 1 / ${bestq##* }) ? 1 : 0")" = 1 ] && bestq=$rq
done
read -r p1 c1 w1 s1 a1 <<<"$best1"
read -r p2 c2 w2 s2 a2 <<<"$best2"
read -r q1 q2 <<<"$bestq"
echo "placesim ${COMMON[*]}: best of $REPEAT interleaved rounds, curves and placements of all runs identical; s/iteration over iterations $((WARMUP + 1))-$ITER; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| configuration | s/iteration | sample/sim/grad s | iterations/s | efficiency 1->2 | with warm-up: s/iteration, efficiency | CPU s | process s |"
echo "|---|---|---|---|---|---|---|---|"
printf '| 1 process | %.3f | %s | %.2f |  | %.3f | %.1f | %.1f |\n' "$p1" "$s1" "$(calc "1 / $p1")" "$a1" "$c1" "$w1"
printf '| 2 MPI ranks | %.3f | %s | %.2f | %.0f%% | %.3f, %.0f%% | %.1f | %.1f |\n' "$p2" "$s2" "$(calc "1 / $p2")" "$(calc "100 * $p1 / (2 * $p2)")" "$a2" "$(calc "100 * $a1 / (2 * $a2)")" "$c2" "$w2"
printf '| 2 independent processes (ceiling) | %.3f, %.3f |  | %.2f together | %.0f%% |  |  |  |\n' "$q1" "$q2" "$(calc "1 / $q1 + 1 / $q2")" "$(calc "100 * $p1 * (1 / $q1 + 1 / $q2) / 2")"
