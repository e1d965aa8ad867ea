#!/usr/bin/env bash
# Hopper f16/bf16 convolutions are priced at their measured rate (issue 15, h-rn50amp): the 26
# forward convolution shapes of an H100 SXM PyTorch profile (TraceLens, Wan2.1's VAE, bf16; the
# kernel alone) take 2555 us, and `simulate` on hgx-h100 must price their sum within 5 %
# (tools/conv_rate_check.py; the fraction of the peak before, 0.70, gave 1539 us: 0.60).
set -u
P="$1"
ROOT="${PLACESIM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
fail() { echo "FAIL: $*"; exit 1; }
out="$(python3 "$ROOT/tools/conv_rate_check.py" "$P" \
  "$ROOT/tests/data/calibration/h100_tracelens_wan21_bf16_conv_fwd.csv" hgx-h100 --tolerance 0.05)" ||
  fail "Hopper bf16 convolutions: $(echo "$out" | tail -1)"
echo "$out" | tail -1
# A malformed row (FLOPs that do not match the shapes) is refused with the row named.
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
sed 's/^conv2d,2x384x64x64,192x384x3x3,1,1,10.871635968/conv2d,2x384x64x64,192x384x3x3,1,1,99/' \
  "$ROOT/tests/data/calibration/h100_tracelens_wan21_bf16_conv_fwd.csv" >"$T/bad.csv"
if err="$(python3 "$ROOT/tools/conv_rate_check.py" "$P" "$T/bad.csv" hgx-h100 2>&1)"; then
  fail "a row whose FLOPs do not match its shapes was accepted"
fi
echo "$err" | grep -q "row 10: FLOPs" || fail "unexpected message: $err"
echo "PASS"
