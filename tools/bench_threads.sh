#!/usr/bin/env bash
# One huge step on 1 thread and on N threads, side by side in one run: the streamed gpt-huge
# generator (models/huge_step.hpp) through `placesim simulate --threads`, each as a whole process.
#   tools/bench_threads.sh BUILD_DIR [THREADS] [GRAPH_OPT] [PARALLEL] [CLUSTER]
# Defaults: THREADS=2, a 10.2 M-op step of a GPT-3 13B-shaped model (40 layers, hidden 5,120,
# seq 2,048) on 2x-dgx-a100 (16 GPUs: dp=2 tp=4 pp=2, 700 micro-batches of 1 sequence): see
# docs/performance.md, "Huge steps".
# Prints the machine's load before and after, per run the wall and CPU seconds (bash `time`),
# max RSS, the build and simulation seconds placesim reports, the step time, and the wall-time
# ratio 1-thread / N-thread; the build, simulate and build + simulate ratios too unless the
# N-thread run overlapped them (placesim prints "(overlapped: simulated while built)"), where
# they are meaningless and the script says so instead. The two runs' JSON outcomes (sim_wall_s aside) must be identical:
# the script says "bit-identical: yes" or fails.
set -eu
BUILD=$(realpath "${1:?usage: bench_threads.sh BUILD_DIR [THREADS] [GRAPH_OPT] [PARALLEL] [CLUSTER]}")
N=${2:-2}
GOPT=${3:-"layers=40,hidden=5120,seq=2048,batch=1,vocab=51200"}
PAR=${4:-"dp=2,tp=4,pp=2,mb=700"}
CLUSTER=${5:-2x-dgx-a100}
EXE=$BUILD/placesim
[ -x "$EXE" ] || { echo "no $EXE (ninja -C $BUILD placesim)" >&2; exit 2; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
calc() { awk "BEGIN { printf \"%.3f\", $* }"; }

one() {  # threads -> $T/$1.{txt,json,time}
  local TIMEFORMAT='%3R %3U %3S'
  { time /usr/bin/time -o "$T/$1.rss" -f "%M" "$EXE" simulate --graph gpt-huge \
    --graph-opt "$GOPT" --parallel "$PAR" --cluster "$CLUSTER" --threads "$1" \
    --report "$T/$1.json" >"$T/$1.txt"; } 2>"$T/$1.bash"
  read -r w u s < "$T/$1.bash"
  echo "$w $(calc "$u + $s") $(cat "$T/$1.rss")" > "$T/$1.time"
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)  cores: $(nproc)"
echo "step: --graph-opt $GOPT --parallel $PAR --cluster $CLUSTER"
one 1
one "$N"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
for t in 1 "$N"; do
  read -r w c rss < "$T/$t.time"
  echo "threads=$t wall_s=$w cpu_s=$c max_rss_MB=$((rss / 1024)) $(grep '^gpt-huge:' "$T/$t.txt")"
done
grep '^step time' "$T/1.txt"
strip() { sed -E 's/"sim_wall_s": *[0-9.e+-]+//' "$1" > "$1.cmp"; }
strip "$T/1.json"
strip "$T/$N.json"
echo "report: $(($(stat -c %s "$T/1.json") / 1048576)) MB of JSON per run (the critical path)"
if cmp -s "$T/1.json.cmp" "$T/$N.json.cmp"; then
  echo "bit-identical: yes"
else
  echo "bit-identical: NO" >&2
  exit 1
fi
read -r w1 _ _ < "$T/1.time"
read -r wn _ _ < "$T/$N.time"
# placesim's own build + simulate seconds, without start-up and the JSON report.
inner() { grep '^gpt-huge:' "$T/$1.txt" | sed -E 's/.*built in ([0-9.]+) s, simulated in ([0-9.]+) s.*/\1 \2/'; }
read -r b1 s1 <<<"$(inner 1)"
read -r bn sn <<<"$(inner "$N")"
if grep -q '(overlapped: simulated while built)' "$T/$N.txt"; then
  # The loop ran beside the build: both seconds span the same wall interval, so their ratios to
  # the 1-thread run's (sequential: build, then simulate) compare nothing.
  echo "speed-up 1 -> $N threads: process wall $(calc "$w1 / $wn")x; build and simulate" \
    "overlapped on $N threads (simulated while built): their per-phase ratios are not comparable"
else
  echo "speed-up 1 -> $N threads: process wall $(calc "$w1 / $wn")x; build $(calc "$b1 / $bn")x;" \
    "simulate $(calc "$s1 / $sn")x; build + simulate $(calc "($b1 + $s1) / ($bn + $sn)")x"
fi
