#!/usr/bin/env bash
# PyTorch eager's host work per framework op (--graph-opt host=torch, issue 15, h-hostcnn): session
# 24's ResNet-50 AMP NHWC b64 step on the H200 is host-bound (12.3 ms of kernels, 19.51 and 23.22
# ms a step unprofiled in two leases, mean 21.37). With host=torch `simulate` must put it within
# 10 % of the mean and host-bound (over 1.4x its kernels); without it (6 us a graph op) it was
# 12.56 ms, GPU-bound. At b256 (44.64 ms, GPU-bound) the host must stay hidden: within 5 % of the
# figure without it. A bad value is refused with the key named.
set -u
P="$1"
ROOT="${PLACESIM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
fail() { echo "FAIL: $*"; exit 1; }
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
"$P" import topo --nvidia-smi "$ROOT/tests/data/calibration/h200_nvidia-smi-topo.txt" \
  --gpu-model H200-SXM-141GB -o "$T/h200.yaml" --quiet || fail "import topo"
step() {  # step BATCH HOST -> ms
  "$P" simulate --graph resnet50 --placement single-gpu --cluster "$T/h200.yaml" --json --quiet \
    --graph-opt "batch=$1,precision=f16,grads=f32,optimizer_impl=foreach,grad_scaler=torch,host=$2" |
    python3 -c 'import json, sys; print("%.3f" % (json.load(sys.stdin)["step_time_s"] * 1e3))'
}
b64="$(step 64 torch)" || fail "simulate b64 host=torch"
b64_none="$(step 64 none)" || fail "simulate b64 host=none"
b256="$(step 256 torch)" || fail "simulate b256 host=torch"
b256_none="$(step 256 none)" || fail "simulate b256 host=none"
echo "b64: $b64 ms (host=none $b64_none, measured 21.37); b256: $b256 ms (host=none $b256_none)"
python3 - "$b64" "$b64_none" "$b256" "$b256_none" <<'PY' || fail "host=torch figures"
import sys
b64, b64_none, b256, b256_none = map(float, sys.argv[1:])
assert abs(b64 / 21.37 - 1) <= 0.10, "b64 %.2f ms not within 10 %% of 21.37" % b64
assert b64 > 1.4 * 12.3, "b64 %.2f ms is not host-bound" % b64
assert b64_none < 15.0, "host=none b64 %.2f ms: the default host side changed" % b64_none
assert abs(b256 / b256_none - 1) <= 0.05, "b256 %.2f vs %.2f ms: the host is not hidden" % (b256, b256_none)
PY
if err="$("$P" simulate --graph resnet50 --placement single-gpu --cluster "$T/h200.yaml" \
  --graph-opt "batch=8,host=tf" 2>&1)"; then
  fail "host=tf was accepted"
fi
echo "$err" | grep -q 'host.*one of none, torch, got "tf"' || fail "unexpected message: $err"
echo "PASS"
