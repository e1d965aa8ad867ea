#!/usr/bin/env bash
# The race: the same random DAG with link contention (tests/bench/race_dag.cpp) through SimGrid
# 3.32 and through placesim's engine, each as a whole process (wall and CPU time to the ms, max RSS).
#   tools/race_simgrid.sh BUILD_DIR [SIZES] [SIMGRID_MAX]
# SIZES: activities per run (default "16000 32000 64000 128000 256000 1000000"); SimGrid runs
# only sizes <= SIMGRID_MAX (default 128000: it is quadratic here, about a minute at 128k).
# Prints a Markdown table: process wall seconds of each, the simulation phase alone, their ratio,
# max RSS, and the makespans' relative difference: "exact" when <= 1e-6 (placesim rounds every
# completion up to a whole ns, SimGrid keeps doubles). This DAG's makespan is chaotic (one byte
# more per transfer moves it by ~1% at 4k activities in either simulator; race_dag
# --extra-bytes 1), so beyond a few thousand activities the two differ by up to ~1% without
# either being wrong (race_dag --extra-flops 1e-8, 1e-20 s more per task, moves SimGrid's own
# makespan by 0.9% at 16k); the exact cross-check of the sharing model is
# tests/sim/simgrid_crosscheck.
# race_dag --chain 1 --quantize 1 (nothing concurrent, whole-ns durations) makes the two agree to
# 12 digits (docs/performance.md, "The race against SimGrid").
set -eu
BUILD=$(realpath "${1:?usage: race_simgrid.sh BUILD_DIR [SIZES] [SIMGRID_MAX]}")
SIZES=${2:-"16000 32000 64000 128000 256000 1000000"}
SGMAX=${3:-128000}
for b in race_dag race_dag_simgrid; do
  [ -x "$BUILD/tests/$b" ] || { echo "no $BUILD/tests/$b (configure with SimGrid installed; ninja $b)" >&2; exit 2; }
done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
calc() { awk "BEGIN { print $* }"; }
field() { sed -E "s/.* $1=([^ ]+).*/\1/" "$2"; }

one() {  # sim size -> $T/$1.out, $T/$1.time (wall s, max RSS kB, CPU s = user + sys)
  local exe=$BUILD/tests/race_dag
  [ "$1" = simgrid ] && exe=$BUILD/tests/race_dag_simgrid
  # bash's `time` to the ms (/usr/bin/time's 10 ms is a third of placesim's run at 16k) of the
  # process alone: it reports its own max RSS (max_rss_kb=), so no /usr/bin/time wrapper's fork
  # and start-up is counted. CPU time, unlike wall time, does not count the minutes other jobs
  # hold the core.
  local TIMEFORMAT='%3R %3U %3S'
  { time "$exe" --sim "$1" --activities "$2" --seed 1 >"$T/$1.out"; } 2>"$T/$1.bash"
  read -r w u s < "$T/$1.bash"
  echo "$w $(field max_rss_kb "$T/$1.out") $(calc "$u + $s")" > "$T/$1.time"
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| activities | placesim process s (CPU s) | run s | RSS MB | SimGrid process s (CPU s) | run s | RSS MB | process ratio wall (CPU) | run ratio | makespan placesim / SimGrid s | makespans |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for n in $SIZES; do
  one placesim "$n"
  read -r pw prss pc < "$T/placesim.time"
  pa=$(field activities "$T/placesim.out")
  pm=$(field makespan_s "$T/placesim.out")
  pr=$(field run_s "$T/placesim.out")
  if [ "$n" -le "$SGMAX" ]; then
    one simgrid "$n"
    read -r sw srss sc < "$T/simgrid.time"
    sm=$(field makespan_s "$T/simgrid.out")
    sr=$(field run_s "$T/simgrid.out")
    rel=$(calc "($pm - $sm) / $sm")
    agree=$(calc "($rel <= 1e-6 && $rel >= -1e-6) ? \"exact ($rel)\" : \"differ by $rel\"")
    echo "| $pa | $pw ($pc) | $pr | $(calc "$prss / 1024") | $sw ($sc) | $sr | $(calc "$srss / 1024") |" \
      "$(calc "$sw / $pw")× ($(calc "$sc / $pc")×) | $(calc "$sr / $pr")× | $pm / $sm | $agree |"
  else
    echo "| $pa | $pw ($pc) | $pr | $(calc "$prss / 1024") | not run | | | | | $pm / - | |"
  fi
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
