#!/usr/bin/env bash
# Malformed inputs, data-driven: each case must end with exit status 2 (never a signal), print
# exactly one line on stderr naming the file and the key path or line, and write no output file.
# Usage: bash errors_test.sh PATH_TO_placesim
set -u
BIN=${1:?usage: errors_test.sh PATH_TO_placesim}
HERE=$(cd "$(dirname "$0")" && pwd)
BAD="$HERE/../data/bad"
GOOD="$HERE/../data/good"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# kind | file in tests/data/bad | text the one-line message must contain (key path or line)
CASES='
cluster|cluster-unknown-unit.yaml|links[0].bandwidth (line 6): expected a bandwidth
cluster|cluster-zero-bandwidth.yaml|links[0].bandwidth (line 6): expected a positive bandwidth
cluster|cluster-negative-bandwidth.yaml|links[0].bandwidth (line 6)
cluster|cluster-missing-unit.yaml|missing unit
cluster|cluster-zero-capacity.yaml|devices[1].memory_capacity (line 3)
cluster|cluster-negative-capacity.yaml|devices[1].memory_capacity (line 3)
cluster|cluster-unknown-endpoint.yaml|links[1].between[1] (line 7)
cluster|cluster-duplicate-device.yaml|devices[1].name (line 3): expected a unique name
cluster|cluster-no-route.yaml|expected a route to every other device
cluster|cluster-unknown-model.yaml|devices[1].model (line 3)
cluster|cluster-nan-latency.yaml|links[0].latency (line 6)
cluster|cluster-bad-sharing.yaml|links[0].sharing (line 6)
cluster|cluster-misspelled-key.yaml|links[0].bandwith (line 6): expected a known key
cluster|cluster-peer-cpu.yaml|peer_access.pairs[0][0] (line 9)
cluster|cluster-broken-route.yaml|routes[0].links[0] (line 9)
cluster|cluster-explicit-missing-specs.yaml|devices[1].peak_flops
cluster|cluster-wrong-type-int.yaml|devices[1].compute_streams (line 3): expected an integer
cluster|cluster-wrong-type.yaml|devices (line 1): expected a non-empty list
cluster|cluster-unparsable.yaml|line 3:
cluster|cluster-empty.yaml|empty document
cluster|cluster-comment-only.yaml|empty document
cluster|cluster-top-level-list.yaml|line 1: expected a mapping
cluster|cluster-gpu-without-host.yaml|devices[0] (line 2): expected a CPU device in node node0
cluster|cluster-no-links.yaml|expected a route to every other device
cluster|cluster-no-devices.yaml|devices (line 1): expected a non-empty list
cluster|cluster-deep-nesting.yaml|line 1
cluster|cluster-bad-alias.yaml|line 5
cluster|cluster-overflow-rate.yaml|devices[1].peak_flops.f32 (line 3)
cluster|cluster-bad-dtype.yaml|devices[1].peak_flops (line 3): expected a dtype key
cluster|cluster-garbage.yaml|expected
cluster|cluster-tiny-bandwidth.yaml|links[1].bandwidth (line 7): expected a bandwidth between
cluster|cluster-huge-latency.yaml|links[1].latency (line 7): expected a duration up to 1000 s
graph|graph-unparsable.json|line 3:
graph|graph-empty.json|empty file
graph|graph-cycle.json|expected an acyclic graph, got a cycle
graph|graph-missing-producer.json|ops[1] ("b").inputs[0]: expected the name of a producer op
graph|graph-duplicate-op.json|ops[1] ("a").name: expected a unique op name
graph|graph-wrong-type.json|ops[0] ("a").flops: expected a non-negative number
graph|graph-negative-bytes.json|ops[0] ("a").outputs[0]
graph|graph-bad-output-index.json|ops[1] ("b").inputs[0]: expected an output index
graph|graph-bad-dtype.json|ops[0] ("a").dtype
graph|graph-top-level-list.json|expected an object
graph|graph-ops-not-list.json|ops: expected a list of ops
graph|graph-unknown-unit.json|ops[0] ("a").outputs[0].bytes: expected a size
graph|graph-missing-unit.json|ops[0] ("a").measured
graph|graph-number-overflow.json|expected valid JSON
graph|graph-bad-device-kind.json|ops[0] ("a").device_kind
graph|graph-missing-name.json|ops[0].name
graph|graph-unknown-key.json|ops[0].colour: expected a known key
graph|graph-deep-nesting.json|line 1:264: expected JSON nested at most 256 levels deep
graph|graph-garbage.json|line 1:
graph|graph-huge-flops.json|ops[0] ("a").flops: expected a number up to 1e18
graph|graph-huge-tensor.json|ops[0] ("a").outputs[0]: expected a size up to 1 PiB
graph|graph-negative-leading-dim.json|ops[0] ("mm").leading_dims[1]: expected an integer from 1
graph|graph-dropout-out-of-range.json|ops[0] ("attn").dropout: expected a dropout probability from 0 to 1, got 1.5
placement|placement-missing-op.json|ops.l3/mm: expected an op of graph tiny
placement|placement-missing-device.json|groups.l2: expected a device of cluster paper-2gpu
placement|placement-missing-group.json|groups.l9
placement|placement-wrong-type.json|groups.l2: expected a device name
placement|placement-unparsable.json|line 2:
placement|placement-empty.json|empty file
placement|placement-split-group.json|co-location group "l1"
placement|placement-cpu-only-on-gpu.json|ops.input: expected a cpu device
placement|placement-unplaced-op.json|"default_device"
placement|placement-unknown-key.json|groupz: expected a known key
simgraph|graph-fp8-on-volta.json|op "mm": expected an fp8 MatMul on a GPU with FP8 tensor cores
placement|placement-garbage.json|line 1:
calibration|calibration-bad-host.yaml|devices.V100-SXM2-16GB.host.launch_overhead: expected a duration
flag|--cluster no-such-cluster|--cluster: no-such-cluster: expected a built-in cluster name
flag|--graph no-such-graph.json|no-such-graph.json: expected a readable file
flag|--cluster /|/: expected a file, got a directory
onnx|onnx-conv-weight-no-shape.onnx|expected
onnx|onnx-conv-zero-stride.onnx|strides: expected positive values up to 2^40, got 0
onnx|onnx-huge-dim.onnx|expected a tensor of at most 64 dimensions up to 2^40
onnx|onnx-petabyte-tensor.onnx|and at most 1 PiB
onnx|onnx-matmul-one-input.onnx|expected
onnx|onnx-garbage-12-bytes.onnx|expected
import-onnx|onnx-petabyte-tensor.onnx|and at most 1 PiB
et|et-truncated.json|byte 64: expected PyTorch Execution Trace JSON
et|et-nodes-not-list.json|nodes: expected a list of nodes, got object
et|et-duplicate-id.json|nodes[1].id: expected a node id used once
et|et-negative-dim.json|nodes[0].inputs[0]: expected dimensions from 0 to 2^40, got -4
et|et-petabyte-tensor.json|nodes[0].inputs[0]: expected a tensor of at most 1 PiB
et|et-parent-cycle.json|nodes[1].parent: expected a parent chain that ends at the process node
et|et-no-operators.json|nodes: expected at least one operator node
et|et-attr-wrong-type.json|nodes[0].attrs[0].value: expected an integer, got string
et-kineto|kineto-type-error.json|traceEvents: expected Chrome-trace events of the usual JSON types
et-kineto|../calibration/a100pcie80x8_zoology_launches-without-kernels_excerpt.json|runtime calls that enqueue GPU work (cudaLaunchKernel x8
calibrate-et|et-duplicate-id.json|nodes[1].id: expected a node id used once
vidur|vidur-missing-columns.csv|line 3: expected 5 fields, got 3
vidur|vidur-inf-workers.csv|line 2: expected a time in (0, 1e6] ms, num_workers a whole number
vidur|vidur-nan-time.csv|line 2: expected a time in (0, 1e6] ms
nccl|nccl-tests-inf-time.txt|line 5: expected a positive time and an algbw in GB/s, got "inf"
nccl|nccl-tests-huge-nthread.txt|line 1: expected nThread and nGpus up to 4096
nccl|nccl-tests-markdown-short-row.txt|all_reduce on 0 GPUs: expected measurements whose fitted bus bandwidth is from 0.001 to 1e9 GB/s
nccl|nccl-tests-same-rank-two-hosts.txt|line 3: expected each rank once (one job), got Rank 0 on ip-172-31-20-228 and on ip-172-31-22-230
nccl-ar|nccl-tests-allgather-rows.txt|line 3: expected rows of all_reduce (redop sum, prod, ...), got redop "none"
nccl-ar|nccl-tests-other-collective.txt|expected results of all_reduce (pass --collective to name another), got the sections broadcast_perf
nccl|../calibration/nccl-tests_issue355_alltoall_2x8xH800_failure-row.txt|failure report "Test CUDA failure common.cu:389
nccl-cat|nccl-tests_issue290_all_reduce_2x8xH100_srun-l.txt+nccl-tests_all_reduce_2x8xH100_issue309.txt|line 58: expected runs of all_reduce on 16 GPUs / 2 machine(s) that agree
nccl-run|blog_nccl-tests_all_reduce_8xA100-80GB_g8.txt|--run 2: expected a run the file holds (1 run(s) of all_reduce)
p2p|p2p-huge-device-index.txt|line 1: expected a device index below 4096
p2p|p2p-out-of-range-bandwidth.txt|line 3: expected a bandwidth from 0.001 to 1e9 GB/s
profile|kineto-number-overflow.json|expected Chrome-trace JSON with numbers a double holds
profile|kineto-type-error.json|traceEvents: expected Chrome-trace events of the usual JSON types
profile|kineto-huge-duration.json|traceEvents[0].dur: expected a duration from 0 to 1e12
profile|kineto-huge-device.json|traceEvents[0].args.device: expected a GPU index below 4096
profile|kineto-gzip-bomb.json.gz|expected gzip data that inflates to at most
profile|kineto-truncated.json|byte 4001: expected Chrome-trace JSON (an object with traceEvents, or a list of events), got the end of the file inside it: a truncated file
profile|../calibration/l20_rlinsight_readme_excerpt.json|l20_rlinsight_readme_excerpt.json: traceEvents: expected a framework op, kernel or copy with a measured time, got none (1 runtime calls: cudaMemGetInfo x1)
profile|../calibration/rtx3090x2_flow-matching_runtime-only.json|traceEvents: expected a framework op, kernel or copy with a measured time, got none (5 runtime calls
replay|../calibration/a100pcie40_particle-transformer_runtime-only.json|traceEvents: expected a framework op, kernel or copy with a measured time, got none (7 runtime calls
replay|../calibration/rtx3090x2_flow-matching_runtime-only.json|got none (5 runtime calls: cudaGetDeviceCount x2
profile|../calibration/a100pcie80x8_zoology_launches-without-kernels_excerpt.json|traceEvents: expected the GPU activities (kernels, copies) of its 11 runtime calls that enqueue GPU work
replay|../calibration/a100pcie80x8_zoology_launches-without-kernels_excerpt.json|got none: the profiler recorded the launches but not the GPU work
profile|nsys-end-int64-max.sqlite|CUPTI_ACTIVITY_KIND_KERNEL row 0: expected 0 <= start <= end
profile|nsys-end-before-start.sqlite|CUPTI_ACTIVITY_KIND_KERNEL row 0: expected 0 <= start <= end
profile|manifest-number-overflow.json|expected a profile_rig.py manifest
profile|manifest-type-error.json|ops: expected manifest fields of the JSON types
smi|topo-nv0.txt|GPU0/GPU1: expected a relation X, NV#
smi|ppu-smi_topo-mp-po_8xPPU.txt|got none (its header names devices PPU0, PPU1, ...: another vendor
xml|topo-duplicate-nic.xml|expected distinct device, switch and NIC names, got "mlx5_0" twice
xml|topo-huge-link.xml|expected a link bandwidth from 0.001 to 1e9 GB/s
xml|topo-deep-nesting.xml|expected elements nested at most 64 deep
sweep|sweep-list-as-key.yaml|expected a well-formed sweep spec
sweep|sweep-unknown-cluster.yaml|base.cluster: expected a built-in cluster name
sweep|sweep-bad-graph-option.yaml|workloads[0].options: expected a workload placesim can build
sweep|sweep-huge-grid.yaml|axes: expected at most 1000000 points
sweep|sweep-huge-gpu-count.yaml|axes.gpus[0]: expected an integer from 1 to 1024
sweepcsv|sweep-journal-abc.csv|line 2, column step_time_s: expected a finite non-negative number
sweepcsv|sweep-journal-nan.csv|line 2, column step_time_s: expected a finite non-negative number
cpuonly|cluster-cpu-only.yaml|devices: expected a GPU for placement method single-gpu
cluster|cluster-crlf-key.yaml|expected a known key
cluster|cluster-long-control-key.yaml|expected a known key
graph|graph-50kb-value.json|dtype: expected a dtype
graphopt|--graph-opt batch=99999999999|expected options
gptopt|--graph-opt hidden=2147483648|expected
graphopt|--graph-opt batch=8,input=dali|input: expected one of synthetic, pil
graphopt|--graph-opt batch=8,input=pil|input_workers: expected input_workers=W beside input=pil
missing|no-such-placement.json|no-such-placement.json: expected a readable placement JSON file
dir|/|/: expected a file, got a directory
'

pass=0
fail=0
while IFS='|' read -r kind file expect; do
  [ -z "$kind" ] && continue
  rm -rf "$TMP/out" "$TMP/out.json" "$TMP/trace.json" "$TMP/s.csv"
  mkdir -p "$TMP/out"
  shown="$BAD/$file"
  case "$kind" in
    cluster) cmd=("$BIN" describe --cluster "$BAD/$file") ;;
    graph|onnx) cmd=("$BIN" describe --graph "$BAD/$file") ;;
    import-onnx) cmd=("$BIN" import onnx "$BAD/$file" -o "$TMP/out/g.json") ;;
    et) cmd=("$BIN" import et "$BAD/$file" -o "$TMP/out/g.json") ;;
    calibrate-et)
      cmd=("$BIN" calibrate --profile "$HERE/../data/et/cpu_torch113_cnn_kineto.json.gz" --et "$BAD/$file"
           -o "$TMP/out/cal.yaml") ;;
    et-kineto)
      cmd=("$BIN" import et "$HERE/../data/et/cpu_torch113_cnn_et.json.gz" --kineto "$BAD/$file"
           -o "$TMP/out/g.json") ;;
    placement)
      cmd=("$BIN" simulate --graph "$GOOD/tiny-graph.json" --cluster paper-2gpu --placement "$BAD/$file"
           --report "$TMP/out.json" --trace "$TMP/trace.json") ;;
    vidur) cmd=("$BIN" calibrate-links --vidur-csv "$BAD/$file" --cluster paper-4gpu -o "$TMP/out/c.yaml") ;;
    nccl) cmd=("$BIN" calibrate-links --nccl-tests "$BAD/$file" --cluster paper-4gpu -o "$TMP/out/c.yaml") ;;
    nccl-cat)
      # Two real runs pasted into one file (tests/data/calibration), as logs of several runs are.
      cat "$HERE/../data/calibration/${file%%+*}" "$HERE/../data/calibration/${file#*+}" > "$TMP/runs.txt"
      shown="$TMP/runs.txt"
      cmd=("$BIN" calibrate-links --nccl-tests "$TMP/runs.txt" --cluster "$HERE/../data/calibration/2x-hgx-h100.yaml" -o "$TMP/out/c.yaml") ;;
    nccl-run)
      shown="$HERE/../data/calibration/$file"
      cmd=("$BIN" calibrate-links --nccl-tests "$shown" --run 2 --cluster paper-4gpu -o "$TMP/out/c.yaml") ;;
    nccl-ar) cmd=("$BIN" calibrate-links --nccl-tests "$BAD/$file" --collective all_reduce --cluster paper-4gpu -o "$TMP/out/c.yaml") ;;
    p2p) cmd=("$BIN" calibrate-links --p2p "$BAD/$file" --cluster paper-4gpu -o "$TMP/out/c.yaml") ;;
    profile) cmd=("$BIN" calibrate --profile "$BAD/$file" -o "$TMP/out/cal.yaml") ;;
    replay) cmd=("$BIN" validate --profile "$BAD/$file") ;;
    smi) cmd=("$BIN" import topo --nvidia-smi "$BAD/$file" --gpu-model A100-PCIe-80GB -o "$TMP/out/c.yaml") ;;
    xml) cmd=("$BIN" import topo --nccl-xml "$BAD/$file" --gpu-model A100-SXM4-40GB -o "$TMP/out/c.yaml") ;;
    sweep) cmd=("$BIN" sweep "$BAD/$file" -q -o "$TMP/out/s.csv") ;;
    sweepcsv)
      # A damaged CSV of a finished sweep: refused, and left as it was.
      cp "$BAD/$file" "$TMP/s.csv"
      shown="$TMP/s.csv"
      cmd=("$BIN" sweep "$BAD/sweep-journal-abc.yaml" -q -o "$TMP/s.csv") ;;
    simgraph)
      # A graph the framework refuses on the cluster's GPU (an fp8 matmul on a V100).
      cmd=("$BIN" simulate --graph "$BAD/$file" --cluster dgx1-v100 --placement single-gpu
           --report "$TMP/out.json" --trace "$TMP/trace.json") ;;
    cpuonly)
      cmd=("$BIN" simulate --graph "$GOOD/tiny-graph.json" --cluster "$BAD/$file" --placement single-gpu
           --report "$TMP/out/r.json") ;;
    calibration)
      shown="$BAD/$file"
      cmd=("$BIN" simulate --graph "$GOOD/tiny-graph.json" --cluster paper-2gpu --placement single-gpu
           --calibration "$BAD/$file" --report "$TMP/out.json" --trace "$TMP/trace.json") ;;
    flag) read -r -a words <<< "$file"; shown="${words[1]}"; cmd=("$BIN" describe "${words[@]}") ;;
    graphopt) read -r -a words <<< "$file"; shown="${words[0]}"; cmd=("$BIN" describe --graph rnnlm "${words[@]}") ;;
    gptopt) read -r -a words <<< "$file"; shown="${words[0]}"; cmd=("$BIN" describe --graph gpt "${words[@]}") ;;
    missing)
      shown="$file"
      cmd=("$BIN" simulate --graph "$GOOD/tiny-graph.json" --cluster paper-2gpu --placement "$file"
           --report "$TMP/out/r.json") ;;
    dir) shown="$file"; cmd=("$BIN" calibrate --profile "$file" -o "$TMP/out/cal.yaml") ;;
  esac
  timeout 20 "${cmd[@]}" > "$TMP/stdout" 2> "$TMP/stderr"
  rc=$?
  lines=$(wc -l < "$TMP/stderr")
  msg=$(head -c 2000 "$TMP/stderr")   # a message is at most ~1,250 characters (sim/error.hpp); the checks must not depend on how long the checkout path is
  why=""
  if [ "$rc" -ne 2 ]; then why="exit status $rc, expected 2"; fi
  if [ -z "$why" ] && [ "$lines" -ne 1 ]; then why="$lines lines on stderr, expected 1"; fi
  if [ -z "$why" ] && [[ "$msg" != *"$shown"* ]]; then why="message does not name $shown"; fi
  if [ -z "$why" ] && [[ "$msg" != *"$expect"* ]]; then why="message lacks: $expect"; fi
  if [ -z "$why" ] && { [ -e "$TMP/out.json" ] || [ -e "$TMP/trace.json" ] || [ -n "$(ls -A "$TMP/out")" ]; }; then
    why="an output file was written: $(ls -A "$TMP/out")"
  fi
  if [ -z "$why" ] && [ "$kind" = sweepcsv ] && ! cmp -s "$BAD/$file" "$TMP/s.csv"; then why="the CSV was changed"; fi
  if [ -z "$why" ] && [ "$kind" = sweepcsv ] && [ -e "$TMP/s.csv.partial" ]; then why="a journal was written"; fi
  if [ -z "$why" ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $kind $file: $why"
    echo "     stderr: $msg"
  fi
done <<< "$CASES"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
