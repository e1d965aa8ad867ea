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
graph|graph-deep-nesting.json|ops
graph|graph-garbage.json|line 1:
graph|graph-huge-flops.json|ops[0] ("a").flops: expected a number up to 1e18
graph|graph-huge-tensor.json|ops[0] ("a").outputs[0]: expected a size up to 1 PiB
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
placement|placement-garbage.json|line 1:
calibration|calibration-bad-host.yaml|devices.V100-SXM2-16GB.host.launch_overhead: expected a duration
flag|--cluster no-such-cluster|--cluster: no-such-cluster: expected a built-in cluster name
flag|--graph no-such-graph.json|no-such-graph.json: expected a readable file
flag|--cluster /|/: expected a file, got a directory
'

pass=0
fail=0
while IFS='|' read -r kind file expect; do
  [ -z "$kind" ] && continue
  rm -f "$TMP/out.json" "$TMP/trace.json"
  case "$kind" in
    cluster) shown="$BAD/$file"; cmd=("$BIN" describe --cluster "$BAD/$file") ;;
    graph) shown="$BAD/$file"; cmd=("$BIN" describe --graph "$BAD/$file") ;;
    placement)
      shown="$BAD/$file"
      cmd=("$BIN" simulate --graph "$GOOD/tiny-graph.json" --cluster paper-2gpu --placement "$BAD/$file"
           --report "$TMP/out.json" --trace "$TMP/trace.json") ;;
    calibration)
      shown="$BAD/$file"
      cmd=("$BIN" simulate --graph "$GOOD/tiny-graph.json" --cluster paper-2gpu --placement single-gpu
           --calibration "$BAD/$file" --report "$TMP/out.json" --trace "$TMP/trace.json") ;;
    flag) read -r -a words <<< "$file"; shown="${words[1]}"; cmd=("$BIN" describe "${words[@]}") ;;
  esac
  timeout 20 "${cmd[@]}" > "$TMP/stdout" 2> "$TMP/stderr"
  rc=$?
  lines=$(wc -l < "$TMP/stderr")
  msg=$(head -c 400 "$TMP/stderr")
  why=""
  if [ "$rc" -ne 2 ]; then why="exit status $rc, expected 2"; fi
  if [ -z "$why" ] && [ "$lines" -ne 1 ]; then why="$lines lines on stderr, expected 1"; fi
  if [ -z "$why" ] && [[ "$msg" != *"$shown"* ]]; then why="message does not name $shown"; fi
  if [ -z "$why" ] && [[ "$msg" != *"$expect"* ]]; then why="message lacks: $expect"; fi
  if [ -z "$why" ] && { [ -e "$TMP/out.json" ] || [ -e "$TMP/trace.json" ]; }; then why="an output file was written"; fi
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
