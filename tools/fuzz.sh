#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz/, clang, -fsanitize=fuzzer,address,undefined, asserts
# live) in build-fuzz/ and runs each for SECONDS, seeded from tests/data/ and tests/fuzz/seeds/,
# with the format's dictionary. A finding (crash, sanitizer report, leak, an allocation over
# 1 GiB, RSS over 2 GiB, an input slower than 10 s, an escaped exception, a message that is not
# one line saying what was expected) is saved as build-fuzz/fuzz-work/findings/TARGET-*; the
# script exits 1 when any target found one.
#
#   tools/fuzz.sh 60                        # every target, 60 s each
#   FUZZ_TARGETS="kineto onnx" tools/fuzz.sh 600
#   FUZZ_JOBS=2 tools/fuzz.sh 3600          # the long campaign (docs/reliability.md)
#   FUZZ_NO_BUILD=1 FUZZ_TARGETS=graph tools/fuzz.sh 60   # without rebuilding
#   FUZZ_SEED=1 FUZZ_RUNS=3000 tools/fuzz.sh 120          # reproducible: fixed seed and input count (CI)
# Corpora grow across runs in build-fuzz/fuzz-work/corpus/TARGET (delete to start afresh).
set -uo pipefail
secs=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD:-$root/build-fuzz}
work=$build/fuzz-work
data=$root/tests/data
all="graph cluster placement calibration sweep_spec sweep_csv onnx kineto kineto_gz manifest nsys smi_topo nccl_xml p2p nccl_tests vidur checkpoint et et_kineto"
targets=${FUZZ_TARGETS:-$all}
jobs=${FUZZ_JOBS:-1}

export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPLACESIM_FUZZ=ON -DPLACESIM_WITH_TORCH=OFF -DPLACESIM_WITH_MPI=OFF \
    -DPLACESIM_BUILD_TESTS=OFF -DPLACESIM_BUILD_BENCHMARKS=OFF >/dev/null || exit 1
fi
if [ -z "${FUZZ_NO_BUILD:-}" ]; then   # FUZZ_NO_BUILD=1: run the harnesses already built
  ninja -C "$build" -j "${FUZZ_BUILD_JOBS:-2}" $(for t in $targets; do echo "fuzz_$t"; done) >/dev/null || {
    echo "fuzz.sh: build failed (ninja -C $build)"; exit 1; }
fi

# Seeds: the project's own test data, small files whole, large ones cut to their head (mutations
# of a 10 MB trace are slow; the head keeps its structure).
seed_dir() { echo "$work/seeds/$1"; }
add() {  # add TARGET FILE...
  local d; d=$(seed_dir "$1"); shift
  mkdir -p "$d"
  for f in "$@"; do [ -f "$f" ] && head -c 65536 "$f" > "$d/$(basename "$f")"; done
}
make_seeds() {
  rm -rf "$work/seeds"
  add graph "$data"/good/tiny-graph.json "$data"/golden/*/graph.json "$data"/bad/graph-*.json
  add cluster "$root"/scenarios/clusters/paper-2gpu.yaml "$root"/scenarios/clusters/dgx1-v100.yaml \
    "$data"/golden/*/cluster.yaml "$data"/bad/cluster-*.yaml
  add placement "$data"/good/tiny-placement.json "$data"/bad/placement-*.json
  add calibration "$root"/tests/fuzz/seeds/calibration/*
  add sweep_spec "$root"/scenarios/sweeps/*.yaml
  add sweep_csv "$root"/tests/fuzz/seeds/sweep_csv/*
  mkdir -p "$(seed_dir onnx)"; cp "$data"/onnx/squeezenet1_0.onnx "$data"/onnx/resnet18.onnx "$(seed_dir onnx)/"
  add kineto "$data"/calibration/a100_event_sync.json "$data"/calibration/a100_triton.json \
    "$data"/calibration/mi250_rocm_minitoy.json "$data"/calibration/v100_torch181_tbplugin_excerpt.json \
    "$data"/calibration/h100_libkineto_cuda-sync_test-output.json \
    "$data"/calibration/rocm-gfx942_tracelens_bf16-gemm_excerpt.json
  mkdir -p "$(seed_dir kineto_gz)"
  gzip -c "$data"/calibration/a100_event_sync.json > "$(seed_dir kineto_gz)/event_sync.json.gz"
  gzip -c "$data"/calibration/a100_triton.json > "$(seed_dir kineto_gz)/triton.json.gz"
  add manifest "$root"/tests/fuzz/seeds/manifest/*
  mkdir -p "$(seed_dir nsys)"; cp "$data"/calibration/a100_saxpy.sqlite "$(seed_dir nsys)/"
  add smi_topo "$data"/calibration/*nvidia-smi-topo.txt
  add nccl_xml "$data"/calibration/azhpc_*.xml
  add p2p "$data"/calibration/*p2pBandwidthLatencyTest.txt
  add nccl_tests "$data"/calibration/*nccl-tests*
  add et "$data"/et/chakra_handwritten_et.json "$data"/et/cpu_torch2-2024_matmul1024_et.json \
    "$data"/et/param_resnet_et_excerpt.json
  gzip -dc "$data"/et/cpu_torch113_cnn_et.json.gz > "$(seed_dir et)/cnn_et.json"
  add et_kineto "$data"/et/chakra_handwritten_kineto.json "$data"/et/cpu_torch2-2024_matmul1024_kineto.json
  mkdir -p "$(seed_dir vidur)"
  for f in "$data"/calibration/a100_dgx_all_reduce.csv "$data"/calibration/a100_llama2-7b_mlp.csv; do
    head -n 40 "$f" > "$(seed_dir vidur)/$(basename "$f")"
  done
  # A checkpoint envelope around a few bytes, checksum included, so mutations reach every check.
  mkdir -p "$(seed_dir checkpoint)"
  python3 - "$(seed_dir checkpoint)/small.pt" <<'PY'
import sys
payload = b"PK\x03\x04" + bytes(range(60))
h = 1469598103934665603
for b in payload:
    h = ((h ^ b) * 1099511628211) % (1 << 64)
open(sys.argv[1], "wb").write(b"placesim-checkpoint 2 bytes=%d fnv1a64=%016x\n" % (len(payload), h) + payload)
PY
}
dict_of() {
  case "$1" in
    graph) echo graph ;; placement) echo placement ;; kineto) echo kineto ;; manifest) echo manifest ;;
    cluster) echo cluster ;; calibration) echo calibration ;; sweep_spec) echo sweep ;; sweep_csv) echo sweep_csv ;;
    smi_topo) echo smi_topo ;; nccl_xml) echo nccl_xml ;; p2p) echo p2p ;; nccl_tests) echo nccl_tests ;;
    vidur) echo vidur ;; et|et_kineto) echo kineto ;; *) echo "" ;;
  esac
}

make_seeds
cd "$work" || exit 1
mkdir -p "$work/findings"
failed=""
for t in $targets; do
  corpus="$work/corpus/$t"
  mkdir -p "$corpus"
  d=$(dict_of "$t")
  jobs_arg=()   # -jobs forks workers that log to fuzz-N.log; one job stays in this process
  [ "$jobs" -gt 1 ] && jobs_arg=(-jobs="$jobs" -workers="$jobs")
  dict_arg=()
  [ -n "$d" ] && dict_arg=(-dict="$root/tests/fuzz/dicts/$d.dict")
  # FUZZ_SEED and FUZZ_RUNS make a run reproducible (CI): the same seed and number of inputs
  # whatever the machine's speed, SECONDS only as a cap.
  runs_arg=(-seed="${FUZZ_SEED:-0}")
  [ -n "${FUZZ_RUNS:-}" ] && runs_arg+=(-runs="$FUZZ_RUNS")
  # Leaks are findings; -malloc_limit_mb: no single allocation larger than 1 GiB.
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/tests/fuzz/fuzz_$t" "${dict_arg[@]}" -max_total_time="$secs" "${runs_arg[@]}" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=1024 -max_len=65536 "${jobs_arg[@]}" -print_final_stats=1 \
    -artifact_prefix="$work/findings/$t-" "$corpus" "$(seed_dir "$t")" > "$work/$t.log" 2>&1
  rc=$?
  execs=$(grep -ho 'stat::number_of_executed_units: *[0-9]*' "$work/$t.log" "$work"/fuzz-*.log 2>/dev/null | awk '{s+=$2} END {print s+0}')
  if [ "$rc" -ne 0 ]; then
    failed="$failed $t"
    echo "FINDING $t (exit $rc): $(grep -m1 -E 'ERROR|SUMMARY|fuzz:' "$work/$t.log")"
    echo "   log: $work/$t.log; input: $(ls -t "$work"/findings/"$t"-* 2>/dev/null | head -1)"
  else
    echo "ok      $t: $execs executions in ${secs} s, corpus $(ls "$corpus" | wc -l) files"
  fi
done
[ -z "$failed" ] || { echo "fuzz.sh: findings in:$failed"; exit 1; }
