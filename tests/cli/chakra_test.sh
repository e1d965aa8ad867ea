#!/usr/bin/env bash
# Chakra execution traces end to end: the public sample from Chakra's own tests imported and
# simulated (import chakra, and --graph FILE.et directly), and export -> import round trips that
# give back the same simulated step time (multi-device with send/recv pairs, and the sample).
# Usage: bash chakra_test.sh PATH_TO_placesim
set -u
BIN=${1:?usage: chakra_test.sh PATH_TO_placesim}
HERE=$(cd "$(dirname "$0")" && pwd)
ET="$HERE/../data/chakra/chakra.0.et.gz"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
step() { /usr/bin/python3 -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))["step_time_s"]))' "$1"; }

# The public sample: 3664 nodes (3643 compute, 21 collective), rank 0 of a PyTorch run.
"$BIN" import chakra "$ET" -o "$TMP/g.json" --json > "$TMP/imp.json" 2> "$TMP/imp.err" || fail "import exited $?: $(cat "$TMP/imp.err")"
/usr/bin/python3 - "$TMP/imp.json" <<'PY' || fail "import statistics"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["ops"] == 3664, j
assert j["comm_nodes"] == 21, j
assert j["data_edges"] > 0 and j["control_edges"] > 0, j
PY
"$BIN" simulate --graph "$TMP/g.json" --cluster paper-2gpu --placement single-gpu --json > "$TMP/a.json" \
  || fail "simulate of the imported graph exited $?"
"$BIN" simulate --graph "$ET" --cluster paper-2gpu --placement single-gpu --json > "$TMP/b.json" \
  || fail "simulate --graph FILE.et exited $?"
[ "$(step "$TMP/a.json")" = "$(step "$TMP/b.json")" ] || fail "import then simulate != simulate --graph .et"
/usr/bin/python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["step_time_s"]; assert 0 < t < 100, t' "$TMP/a.json" \
  || fail "step time of the sample out of range"

# Round trip of the sample: export the placed step, import it back, same step time.
"$BIN" export chakra --graph "$TMP/g.json" --cluster paper-2gpu --placement single-gpu -o "$TMP/et1" > /dev/null \
  || fail "export of the sample exited $?"
"$BIN" import chakra "$TMP"/et1/*.et -o "$TMP/g1.json" --placement-out "$TMP/p1.json" > /dev/null 2>&1 \
  || fail "re-import of the sample exited $?"
"$BIN" simulate --graph "$TMP/g1.json" --cluster paper-2gpu --placement "$TMP/p1.json" --json > "$TMP/c.json" \
  || fail "simulate of the re-imported sample exited $?"
[ "$(step "$TMP/a.json")" = "$(step "$TMP/c.json")" ] || fail "sample round trip: $(step "$TMP/a.json") != $(step "$TMP/c.json")"

# Round trip across devices: nmt placed by expert on 4 GPUs, tensors crossing devices as
# send/recv pairs, one file per device.
G=(--graph nmt --graph-opt layers=2,src_len=8,tgt_len=8,batch=32,hidden=256,vocab=1000)
"$BIN" simulate "${G[@]}" --cluster paper-4gpu --placement expert --json --chakra-out "$TMP/et2" > "$TMP/d.json" \
  || fail "simulate --chakra-out exited $?"
n=$(ls "$TMP"/et2/*.et | wc -l)
[ "$n" -eq 5 ] || fail "expected one ET per device of paper-4gpu (5), got $n"
"$BIN" import chakra "$TMP"/et2/*.et -o "$TMP/g2.json" --placement-out "$TMP/p2.json" --json > "$TMP/imp2.json" \
  || fail "import of the 4-GPU export exited $?"
/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["matched_send_recv"] > 0, j' "$TMP/imp2.json" \
  || fail "no send/recv pair joined"
"$BIN" simulate --graph "$TMP/g2.json" --cluster paper-4gpu --placement "$TMP/p2.json" --json > "$TMP/e.json" \
  || fail "simulate of the re-imported 4-GPU graph exited $?"
[ "$(step "$TMP/d.json")" = "$(step "$TMP/e.json")" ] || fail "4-GPU round trip: $(step "$TMP/d.json") != $(step "$TMP/e.json")"

# Round trips of parallel steps: their collective rank ops (DDP all-reduces, Megatron's
# all-reduces, pipeline send/recv) leave as Chakra communication nodes (COMM_COLL_NODE with
# comm_type/comm_size, COMM_SEND/RECV_NODE) and come back as the same collective calls, priced by
# the collective model: the same step time to the nanosecond (before, exported as compute nodes
# with a roofline time: -2.1 %, -7.0 % and -21.3 %).
G=(--graph gpt --graph-opt layers=2,hidden=256,heads=4,seq=128,vocab=1000,positions=128,batch=4)
for par in dp=2 dp=2,tp=2 pp=2,mb=4; do
  d="$TMP/par-${par//[=,]/_}"
  "$BIN" simulate "${G[@]}" --cluster dgx-a100 --parallel "$par" --json --quiet --chakra-out "$d" > "$d.a.json" \
    || fail "simulate --parallel $par --chakra-out exited $?"
  "$BIN" import chakra "$d"/*.et -o "$d.g.json" --placement-out "$d.p.json" --json > "$d.imp.json" \
    || fail "import of the $par export exited $?"
  /usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["collectives"] > 0 and j["comm_nodes"] == 0 and j["matched_send_recv"] == 0, j' "$d.imp.json" \
    || fail "$par: collective rank ops not re-imported as collectives"
  "$BIN" simulate --graph "$d.g.json" --cluster dgx-a100 --placement "$d.p.json" --json --quiet > "$d.b.json" \
    || fail "simulate of the re-imported $par graph exited $?"
  [ "$(step "$d.a.json")" = "$(step "$d.b.json")" ] || fail "$par round trip: $(step "$d.a.json") != $(step "$d.b.json")"
done

echo "chakra: sample $(step "$TMP/a.json") s; round trips equal; 4-GPU $(step "$TMP/d.json") s"
