#!/usr/bin/env bash
# Sweep throughput: points per second of `placesim sweep` on 1 and 2 oneTBB threads and on 1 and
# 2 MPI ranks (one thread each), best of REPEAT runs, and the parallel efficiency 1 -> 2.
#   tools/bench_sweep.sh build/placesim [SPEC] [REPEAT]
# Prints a Markdown table (docs/performance.md). "sweep s" is the evaluation phase that
# run_sweep times (points in parallel); "process s" adds start-up (graph building, MPI start).
set -eu
PLACESIM=${1:?usage: bench_sweep.sh PATH_TO_placesim [SPEC] [REPEAT]}
SRC=$(cd "$(dirname "$0")/.." && pwd)
SPEC=${2:-$SRC/scenarios/sweeps/bench_throughput.yaml}
REPEAT=${3:-3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

run() {  # label, then the command prefix; prints "sweep_s process_s points"
  local best_s="" best_p="" pts=""
  for _ in $(seq "$REPEAT"); do
    rm -f "$T/o.csv" "$T/o.csv.partial"
    local t0 t1
    t0=$(date +%s.%N)
    "$@" sweep "$SPEC" -o "$T/o.csv" -q >/dev/null 2>"$T/err"
    t1=$(date +%s.%N)
    local line s
    line=$(grep '^sweep:' "$T/err")
    pts=$(echo "$line" | sed -E 's/^sweep: ([0-9]+) points.*/\1/')
    s=$(echo "$line" | sed -E 's/.* in ([0-9.e+-]+) s$/\1/')
    local p
    p=$(echo "$t1 - $t0" | bc -l)
    if [ -z "$best_s" ] || [ "$(echo "$s < $best_s" | bc -l)" = 1 ]; then best_s=$s; best_p=$p; fi
  done
  echo "$best_s $best_p $pts"
}

MPI="mpirun --allow-run-as-root --oversubscribe"
cat > "$T/ps1" <<SH
#!/usr/bin/env bash
sub=\$1; shift; exec "$PLACESIM" "\$sub" "\$@" --threads 1
SH
cat > "$T/ps2" <<SH
#!/usr/bin/env bash
sub=\$1; shift; exec "$PLACESIM" "\$sub" "\$@" --threads 2
SH
chmod +x "$T/ps1" "$T/ps2"
read -r s1 p1 n <<<"$(run "$T/ps1")"
read -r s2 p2 _ <<<"$(run "$T/ps2")"
read -r r1 q1 _ <<<"$(run $MPI -np 1 "$T/ps1")"
read -r r2 q2 _ <<<"$(run $MPI -np 2 "$T/ps1")"
echo "load average before/after: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $n points, best of $REPEAT"
echo
echo "| configuration | sweep s | points/s | efficiency 1->2 | process s |"
echo "|---|---|---|---|---|"
row() { printf '| %s | %.3f | %.1f | %s | %.3f |\n' "$1" "$2" "$(echo "$n / $2" | bc -l)" "$3" "$4"; }
row "1 thread" "$s1" "" "$p1"
row "2 threads" "$s2" "$(printf '%.0f%%' "$(echo "100 * $s1 / (2 * $s2)" | bc -l)")" "$p2"
row "1 MPI rank x 1 thread" "$r1" "" "$q1"
row "2 MPI ranks x 1 thread" "$r2" "$(printf '%.0f%%' "$(echo "100 * $r1 / (2 * $r2)" | bc -l)")" "$q2"
