#!/usr/bin/env bash
# Side by side: two race_dag binaries (tests/bench/race_dag.cpp, placesim's engine on the race's
# DAG), each run as a whole process, in turns, so that both see the same minutes of a shared
# machine. docs/performance.md, [race-ab].
#   tools/race_ab.sh OLD NEW [RUNS] [SIZES]
# RUNS alternated runs per binary and size (default 9); SIZES activities (default "16000 100000").
# Per size: each binary's median process CPU time in ms (user + sys: perf's task-clock where perf
# can count it, else bash's `time` to the ms), the new/old ratio of the medians, every run's
# figure, and the load average before and after. Exit 1 when the two print different makespans
# (an optimisation must leave the simulation as it is).
set -eu
OLD=${1:?usage: race_ab.sh OLD NEW [RUNS] [SIZES]}
NEW=${2:?usage: race_ab.sh OLD NEW [RUNS] [SIZES]}
RUNS=${3:-9}
SIZES=${4:-"16000 100000"}
for b in "$OLD" "$NEW"; do
  [ -x "$b" ] || { echo "race_ab.sh: $b is not an executable" >&2; exit 2; }
done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
PERF=0
perf stat -x, -e task-clock true 2>/dev/null >/dev/null && PERF=1

cpu_ms() {  # binary size -> prints "cpu_ms makespan"
  local out
  if [ "$PERF" = 1 ]; then
    out=$(perf stat -x, -e task-clock "$1" --sim placesim --activities "$2" 2>"$T/perf")
    echo "$(grep task-clock "$T/perf" | cut -d, -f1) $(sed -E 's/.* makespan_s=([^ ]+).*/\1/' <<<"$out")"
  else
    local TIMEFORMAT='%3U %3S'
    { time "$1" --sim placesim --activities "$2" >"$T/out"; } 2>"$T/time"
    read -r u s <"$T/time"
    echo "$(awk "BEGIN { print ($u + $s) * 1000 }") $(sed -E 's/.* makespan_s=([^ ]+).*/\1/' "$T/out")"
  fi
}
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); CPU time from $([ "$PERF" = 1 ] && echo "perf task-clock" || echo "bash time")"
echo "| activities | old median ms | new median ms | new / old | old runs | new runs | makespan s |"
echo "|---|---|---|---|---|---|---|"
status=0
for n in $SIZES; do
  : >"$T/old"
  : >"$T/new"
  for _ in $(seq "$RUNS"); do
    read -r c mo < <(cpu_ms "$OLD" "$n")
    echo "$c" >>"$T/old"
    read -r c mn < <(cpu_ms "$NEW" "$n")
    echo "$c" >>"$T/new"
    if [ "$mo" != "$mn" ]; then
      echo "race_ab.sh: makespans differ at $n activities: old $mo, new $mn" >&2
      status=1
    fi
  done
  o=$(median <"$T/old")
  w=$(median <"$T/new")
  echo "| $n | $o | $w | $(awk "BEGIN { printf \"%.3f\", $w / $o }") | $(paste -sd' ' "$T/old") |" \
    "$(paste -sd' ' "$T/new") | $mn |"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
