#!/usr/bin/env bash
# Sweep throughput: points per second of `placesim sweep` on 1 and 2 oneTBB threads and on 1 and
# 2 MPI ranks (one thread each), best of REPEAT runs, and the parallel efficiency 1 -> 2.
#   tools/bench_sweep.sh build/placesim [SPEC] [REPEAT]
# Prints a Markdown table (docs/performance.md):
#   sweep s    the evaluation phase that run_sweep times (points in parallel), best run;
#   efficiency T(1) / (2 T(2)) on sweep s;
#   CPU s      user + sys of the whole process tree in that run (includes start-up: graph
#              building on every rank, MPI start); CPU(1)/CPU(2) bounds the efficiency a
#              machine with two idle cores would show, since it is what the second worker adds.
#   process s  wall time of the whole command.
set -eu
calc() { awk "BEGIN { print $* }"; }   # arithmetic without bc
PLACESIM=$(realpath "${1:?usage: bench_sweep.sh PATH_TO_placesim [SPEC] [REPEAT]}")
SRC=$(cd "$(dirname "$0")/.." && pwd)
SPEC=${2:-$SRC/scenarios/sweeps/bench_throughput.yaml}
REPEAT=${3:-3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# Unbound: mpirun pins each rank to one core by default, which on a machine shared with other
# work keeps a rank on a busy core while the other core idles; threads are not pinned either.
MPI="mpirun --allow-run-as-root --oversubscribe --bind-to none"

run() {  # command prefix; prints "sweep_s cpu_s process_s points" of the best run
  local best=""
  for _ in $(seq "$REPEAT"); do
    rm -f "$T/o.csv" "$T/o.csv.partial"
    /usr/bin/time -o "$T/time" -f "%e %U %S" "$@" "$SPEC" -o "$T/o.csv" -q >/dev/null 2>"$T/err"
    local line pts s wall user sys
    line=$(grep '^sweep:' "$T/err")
    pts=$(echo "$line" | sed -E 's/^sweep: ([0-9]+) points.*/\1/')
    s=$(echo "$line" | sed -E 's/.* in ([0-9.e+-]+) s$/\1/')
    read -r wall user sys < "$T/time"
    # Every configuration must write the same bytes.
    if [ -e "$T/first.csv" ]; then
      cmp -s "$T/first.csv" "$T/o.csv" || { echo "CSV differs from the first run: $*" >&2; exit 1; }
    else
      cp "$T/o.csv" "$T/first.csv"
    fi
    if [ -z "$best" ] || [ "$(calc "($s < ${best%% *}) ? 1 : 0")" = 1 ]; then
      best="$s $(calc "$user + $sys") $wall $pts"
    fi
  done
  echo "$best"
}

read -r s1 c1 p1 n <<<"$(run "$PLACESIM" sweep --threads 1)"
read -r s2 c2 p2 _ <<<"$(run "$PLACESIM" sweep --threads 2)"
read -r r1 d1 q1 _ <<<"$(run $MPI -np 1 "$PLACESIM" sweep --threads 1)"
read -r r2 d2 q2 _ <<<"$(run $MPI -np 2 "$PLACESIM" sweep --threads 1)"
echo "$(basename "$SPEC"): $n points, best of $REPEAT, CSVs of all runs byte-identical; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| configuration | sweep s | points/s | efficiency 1->2 | CPU s | CPU(1)/CPU(2) | process s |"
echo "|---|---|---|---|---|---|---|"
pct() { printf '%.0f%%' "$(calc "100 * $1 / ($2)")"; }
row() { printf '| %s | %.3f | %.1f | %s | %.2f | %s | %.2f |\n' "$1" "$2" "$(calc "$n / $2")" "$3" "$4" "$5" "$6"; }
row "1 thread" "$s1" "" "$c1" "" "$p1"
row "2 threads" "$s2" "$(pct "$s1" "2 * $s2")" "$c2" "$(pct "$c1" "$c2")" "$p2"
row "1 MPI rank x 1 thread" "$r1" "" "$d1" "" "$q1"
row "2 MPI ranks x 1 thread" "$r2" "$(pct "$r1" "2 * $r2")" "$d2" "$(pct "$d1" "$d2")" "$q2"
