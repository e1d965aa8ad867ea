#!/usr/bin/env bash
# End to end: import topo, calibrate, calibrate-links, validate through the placesim binary, on the
# real files of tests/data/calibration; malformed inputs give one line and exit 2.
set -u
P="$1"
D="$(cd "$(dirname "$0")/../data/calibration" && pwd)"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# `import topo` is registered under engineer C's `import`; skip when that is not there yet.
if "$P" import topo --help >/dev/null 2>&1; then
  "$P" import topo --nvidia-smi "$D/a100pcie-4x-nvlink-pairs_nvidia-smi-topo.txt" --gpu-model A100-PCIe-80GB -o "$T/a100.yaml" >/dev/null || fail "import topo nvidia-smi"
  grep -q "nvlink3" "$T/a100.yaml" || fail "no nvlink3 link in the imported cluster"
  "$P" import topo --nccl-xml "$D/azhpc_ndv4-topo.xml" --gpu-model A100-SXM4-40GB -o "$T/ndv4.yaml" >/dev/null || fail "import topo nccl-xml"
  out=$("$P" import topo --nvidia-smi "$D/dgx1v_nvidia-smi-topo.txt" -o "$T/x.yaml" 2>&1); rc=$?
  [ "$rc" = 2 ] || fail "missing --gpu-model should exit 2, got $rc"
  [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "error should be one line: $out"
  "$P" calibrate-links --p2p "$D/a100pcie-4x-nvlink-pairs_p2pBandwidthLatencyTest.txt" --cluster "$T/a100.yaml" -o "$T/a100-cal.yaml" >"$T/links.txt" || fail "calibrate-links --p2p"
  grep -q "nvlink3" "$T/links.txt" || fail "calibrate-links report lacks the nvlink3 class"
  # An HGX H100 matrix (NV18 everywhere) with the GPU named as nvidia-smi prints it: one NVSwitch,
  # what was assumed on stderr and as comments in the YAML.
  "$P" import topo --nvidia-smi "$D/h100x8_ml-engineering_nvidia-smi-topo.txt" --gpu-model "NVIDIA H100 80GB HBM3" \
    -o "$T/h100.yaml" >/dev/null 2>"$T/h100.err" || fail "import topo of the HGX H100 matrix"
  grep -q "nvswitch" "$T/h100.yaml" || fail "no nvswitch in the imported HGX H100"
  grep -q "^# note: .*NVSwitch" "$T/h100.yaml" || fail "the YAML does not say NVSwitch was inferred"
  grep -q "NVSwitch" "$T/h100.err" || fail "stderr does not say NVSwitch was inferred"
  # An 8x H20 node (issue 16) with the GPU as nvidia-smi prints it: the catalog's H20 entry, one
  # NVSwitch with 18 x 25 = 450 GB/s ports; `describe` shows the entry and its source.
  "$P" import topo --nvidia-smi "$D/h20x8_sglang14092_nvidia-smi-topo.txt" --gpu-model "NVIDIA H20" \
    -o "$T/h20.yaml" >/dev/null 2>&1 || fail "import topo of the 8x H20 matrix"
  [ "$(grep -c "nvswitch" "$T/h20.yaml")" -ge 9 ] || fail "no nvswitch with 8 ports in the imported H20"
  "$P" describe --cluster "$T/h20.yaml" --json >"$T/h20.json" || fail "describe the imported H20"
  python3 - "$T/h20.json" <<'PY' || fail "describe of the H20 cluster: $(head -c 400 "$T/h20.json")"
import json, sys
d = json.load(open(sys.argv[1]))["cluster"]
text = json.dumps(d)
assert "H20-SXM-96GB" in text and "zangshuxian" in text, "entry or source missing"
ports = [l for l in d["links"] if "nvswitch" in (l.get("a"), l.get("b"))]
assert len(ports) == 8, ports
assert all(abs(l["bandwidth_bytes_per_s"] - 450e9) < 1 for l in ports), ports
PY
  # A GH200 (session 33, issues 15/16) named as nvidia-smi prints it: the catalog's GH200 (96 GB
  # HBM3, 4 TB/s; it was imported as an H100 SXM5 before), joined to Grace by NVLink-C2C, and
  # `describe --cluster` shows both. The 4x A30 box imports as A30s.
  "$P" import topo --nvidia-smi "$D/gh200_cubb-system-checks_nvidia-smi-topo_gpu-numa-id.txt" \
    --gpu-model "NVIDIA GH200 480GB" -o "$T/gh200.yaml" >/dev/null 2>&1 || fail "import topo of the GH200 matrix"
  "$P" describe --cluster "$T/gh200.yaml" --json >"$T/gh200.json" || fail "describe the imported GH200"
  python3 - "$T/gh200.json" <<'PY' || fail "describe of the GH200 cluster: $(head -c 400 "$T/gh200.json")"
import json, sys
d = json.load(open(sys.argv[1]))["cluster"]
text = json.dumps(d)
assert "GH200-96GB" in text and "H100-SXM5-80GB" not in text, "GH200 entry missing"
assert "Grace" in text, "no Grace host"
c2c = [l for l in d["links"] if l.get("kind") == "c2c"]
assert len(c2c) == 1 and abs(c2c[0]["bandwidth_bytes_per_s"] - 450e9) < 1, c2c
PY
  "$P" import topo --nvidia-smi "$D/a30x4_vllm-collect-env_nvidia-smi-topo_nv4-pairs.txt" \
    --gpu-model "NVIDIA A30" -o "$T/a30.yaml" >/dev/null 2>&1 || fail "import topo of the 4x A30 matrix"
  "$P" describe --cluster "$T/a30.yaml" --json >"$T/a30.json" || fail "describe the imported 4x A30"
  grep -q "A30-24GB" "$T/a30.json" || fail "the 4x A30 box is not A30s"
  # P2P=Disabled numbers calibrate the host path, never NVLink.
  "$P" calibrate-links --p2p "$D/a100pcie-4x-nvlink-pairs_p2pBandwidthLatencyTest_p2p-disabled-only.txt" --cluster "$T/a100.yaml" \
    -o "$T/off.yaml" >"$T/off.txt" || fail "calibrate-links --p2p (P2P=Disabled only)"
  grep -q "^changed 4 pcie4" "$T/off.txt" || fail "P2P=Disabled did not fit pcie4: $(cat "$T/off.txt")"
  ! grep -q "^changed .* nvlink" "$T/off.txt" || fail "P2P=Disabled changed NVLink"
  # Two nodes of nccl-tests fit the NICs; a measurement that crosses nothing of the cluster is
  # one line and exit 2, and writes nothing.
  "$P" calibrate-links --nccl-tests "$D/nccl-tests_all_reduce_2x8xH100_issue309.txt" --cluster "$D/2x-hgx-h100.yaml" \
    -o "$T/2n.yaml" >"$T/2n.txt" || fail "calibrate-links on the 2-node H100 output"
  grep -q "^changed 16 ib-ndr" "$T/2n.txt" || fail "2-node nccl-tests did not fit the NICs: $(cat "$T/2n.txt")"
  # Session 28: 2 RTX 6000 Ada peers over PCIe Gen4 (p2pBandwidthLatencyTest as posted) fit the
  # Lambda workstation's pcie4 links to the measured 26.32 GB/s.
  "$P" calibrate-links --p2p "$D/rtx6000ada-x2_p2pBandwidthLatencyTest.txt" --cluster lambda-6000ada-ws \
    -o "$T/ada.yaml" >"$T/ada.txt" || fail "calibrate-links --p2p on 2 RTX 6000 Ada"
  grep -q "^changed 2 pcie4 link(s): 31.50 -> 26.32 GB/s" "$T/ada.txt" || fail "RTX 6000 Ada: $(cat "$T/ada.txt")"
  # 2 T4 over EFA: the collective is read from the rows (in-place checked, 2 ranks), not assumed.
  "$P" collective --cluster hgx-h100 --devices gpu0,gpu1 \
    --compare "$D/aws-eks-efa_nccl-tests_all_reduce_2xT4_zero-byte-rows_nccl2127.txt" >"$T/t4.txt" 2>&1 ||
    fail "collective --compare on the 2 x T4 EFA log"
  grep -q "^# its collective: all_reduce (redop sum, root -1, busbw = algbw x 2(n-1)/n over 2 ranks, in-place results checked)" \
    "$T/t4.txt" || fail "2 x T4 EFA: $(head -3 "$T/t4.txt")"
  out=$("$P" calibrate-links --nccl-tests "$D/perfkit_nccl-tests_all_reduce_2nodes_K80.txt" --cluster dgx-a100 -o "$T/none.yaml" 2>&1 >/dev/null); rc=$?
  [ "$rc" = 2 ] || fail "nothing to fit should exit 2, got $rc"
  [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "nothing-to-fit error should be one line: $out"
  [ ! -e "$T/none.yaml" ] || fail "nothing fitted but the cluster was written"
fi

"$P" calibrate --profile "$D/mi250_rocm_minitoy.json" --device-model MI250 -o "$T/cal.yaml" >/dev/null || fail "calibrate"
[ -s "$T/cal.yaml" ] || fail "calibration YAML not written"
"$P" validate --profile "$D/a100_event_sync.json" --json -o "$T/v.json" >/dev/null || fail "validate"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); e=d['steps'][0]['error']; sys.exit(0 if abs(e) < 0.05 else 1)" "$T/v.json" || fail "replay error over 5%"

# A trace without input shapes (HTA's simple_add AlexNet benchmark): an op name whose calls spread
# widely (copy_: a 3.5 ms input copy and 2 us copies) is not written, and says so; calibrated on
# it, the AlexNet trace's GPU busy time holds (before: every kernel took its name's mean, -24.8 %).
"$P" calibrate --profile "$D/a100_simple_add.json" --device-model A100-PG509-200 -o "$T/sa.yaml" >"$T/sa.txt" 2>"$T/sa.err" \
  || fail "calibrate the shapeless simple_add trace"
grep -q "9 op names without input shapes: kept 1 .*dropped 6 with a wider spread and 2 with fewer calls" "$T/sa.txt" \
  || fail "calibrate does not count the op names kept and dropped: $(cat "$T/sa.txt")"
grep -q "op-name entries not written.*aten::copy_:f32 (CV 2" "$T/sa.err" || fail "no note naming the dropped copy_: $(cat "$T/sa.err")"
! grep -q '"aten::copy_:f32"' "$T/sa.yaml" || fail "the wide-spread copy_ was written"
grep -q '"aten::native_dropout:f32"' "$T/sa.yaml" || fail "the consistent native_dropout was not written"
"$P" validate --profile "$D/a100_alexnet.json" --calibration "$T/sa.yaml" --device-model A100-PG509-200 --json -o "$T/sa-v.json" \
  >/dev/null 2>&1 || fail "validate AlexNet with the simple_add calibration"
python3 - "$T/sa-v.json" <<'PY' || fail "AlexNet from the simple_add op-name table: $(head -c 600 "$T/sa-v.json")"
import json, sys
s = json.load(open(sys.argv[1]))["steps"]
cal, by_name = sum(x["calibrated_ops"] for x in s), sum(x["name_ops"] for x in s)
m = sum(d["measured_busy_s"] for x in s for d in x["devices"].values())
p = sum(d["predicted_busy_s"] for x in s for d in x["devices"].values())
assert 0 < cal == by_name < 98, (cal, by_name)
assert abs(p / m - 1) < 0.05, (m, p)
PY

# The lent H200 (2026-11-30): its 1-GPU topology, a kernel fit from its microbenchmark traces that
# simulate finds for an ONNX-style graph op, and every batch-8 ResNet-18 step replayed within 5 %.
"$P" import topo --nvidia-smi "$D/h200_nvidia-smi-topo.txt" --gpu-model H200-SXM-141GB -o "$T/h200.yaml" >/dev/null || fail "import topo on the H200 file"
grep -q "pcie5" "$T/h200.yaml" || fail "no PCIe Gen5 link in the imported H200 cluster"
"$P" calibrate --profile "$D/h200_micro.json.gz" --profile "$D/h200_micro_bwd.json.gz" --device-model H200-SXM-141GB -o "$T/h200-cal.yaml" >"$T/h200-cal.txt" || fail "calibrate on the H200 traces"
grep -q "^H200-SXM-141GB   gemm" "$T/h200-cal.txt" || fail "no H200 gemm fit"
grep -q "\"Gemm\":" "$T/h200-cal.yaml" || fail "the gemm fit is not written under the ONNX name Gemm"
# No ProfilerStep#N: no host model unless asked for; --host-from-ops reads the ops' host spans and
# says on stderr what such a trace cannot show (per-step Python, the optimizer: written as 0).
! grep -q "^    host:" "$T/h200-cal.yaml" || fail "a host block from traces without steps, not asked for"
"$P" calibrate --profile "$D/h200_micro.json.gz" --profile "$D/h200_micro_bwd.json.gz" --device-model H200-SXM-141GB \
  --host-from-ops -o "$T/h200-ops.yaml" >/dev/null 2>"$T/h200-ops.err" || fail "calibrate --host-from-ops"
grep -q '"backward:ConvBackpropFilter":' "$T/h200-ops.yaml" || fail "no backward convolution host cost"
grep -q 'per_step: "0 ns"' "$T/h200-ops.yaml" || fail "per_step should be 0 from traces without steps"
grep -q "optimizer.step .* not in it" "$T/h200-ops.err" || fail "stderr does not say what the op-level host model lacks"
"$P" validate --profile "$D/h200_resnet18-64px-b8_train.json.gz" --json -o "$T/h200-v.json" >/dev/null || fail "validate the H200 trace"
python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['steps']; sys.exit(0 if len(s) == 5 and all(abs(x['error']) < 0.05 for x in s) else 1)" "$T/h200-v.json" || fail "H200 replay: not 5 steps within 5%"

out=$("$P" validate --profile "$D/does-not-exist.json" 2>&1); rc=$?
[ "$rc" = 2 ] || fail "missing profile should exit 2, got $rc"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "error should be one line: $out"
# Issue 14: what was linked is printed, an empty file is not compared, a calibration that matches
# nothing says so on stderr.
"$P" calibrate --profile "$D/a100_alexnet.json" -o "$T/a.yaml" >"$T/a.txt" || fail "calibrate alexnet"
grep -q "links: 98 of 98 GPU activities (100.0%)" "$T/a.txt" || fail "calibrate does not print the links"
printf '{"traceEvents": []}' >"$T/empty.json"
out=$("$P" validate --profile "$T/empty.json" 2>&1); rc=$?
[ "$rc" = 2 ] || fail "validate of an event-less file should exit 2, got $rc"
case "$out" in *%*) fail "validate printed a percentage for no comparison: $out" ;; esac
"$P" validate --profile "$D/h200_resnet18-64px-b8_train.json.gz" --calibration "$T/a.yaml" --device-model A100-PG509-200 \
  --max-steps 1 >/dev/null 2>"$T/w.txt" || fail "validate with a foreign calibration"
grep -q "took a calibrated time" "$T/w.txt" || fail "0 calibrated kernels not noted on stderr"
# Issue 15: the host cost per launch goes into the calibration and --calibration applies it to the
# GPUs it matches; a launch_overhead the cluster file chose itself wins. ResNet-18 at batch 64
# (the ONNX graph) predicted from the batch-8 trace's host side: measured median 18.875 ms.
"$P" calibrate --profile "$D/h200_resnet18-64px-b8_train.json.gz" --device-model H200-SXM-141GB \
  -o "$T/h200-b8.yaml" >/dev/null || fail "calibrate on the H200 batch-8 trace"
grep -q 'launch_overhead: "54799 ns"' "$T/h200-b8.yaml" || fail "the host cost per launch is not in the calibration"
# The per-framework-op host model: torch 2.11's foreach SGD, per-op costs under the ONNX names.
grep -q 'optimizer: foreach' "$T/h200-b8.yaml" || fail "the foreach optimizer is not in the host model"
grep -q '"forward:Conv":' "$T/h200-b8.yaml" || fail "no per-op host cost for forward Conv"
grep -q '"backward:ConvBackpropFilter":' "$T/h200-b8.yaml" || fail "no per-op host cost for the filter gradient"
"$P" import onnx "$D/../onnx/resnet18.onnx" --training --batch 64 -o "$T/r18.json" >/dev/null || fail "import resnet18.onnx"
"$P" simulate --graph "$T/r18.json" --cluster "$T/h200.yaml" --placement single-gpu --calibration "$T/h200-b8.yaml" \
  --json >"$T/r18-sim.json" 2>"$T/r18-notes.txt" || fail "simulate with the host calibration"
grep -q "gpu0: launch_overhead 6 us -> 54.8 us" "$T/r18-notes.txt" || fail "the applied host cost is not noted: $(cat "$T/r18-notes.txt")"
python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['step_time_s']; sys.exit(0 if abs(t / 18.875e-3 - 1) < 0.10 else 1)" \
  "$T/r18-sim.json" || fail "ResNet-18 b64 step from the b8 host cost not within 10 % of the measured 18.875 ms"
sed '0,/launch_overhead: 6 us/s//launch_overhead: 20 us/' "$T/h200.yaml" >"$T/h200-own.yaml"
"$P" simulate --graph "$T/r18.json" --cluster "$T/h200-own.yaml" --placement single-gpu --calibration "$T/h200-b8.yaml" \
  >/dev/null 2>"$T/own-notes.txt" || fail "simulate with a cluster's own launch_overhead"
grep -q "gpu0: launch_overhead 20 us kept" "$T/own-notes.txt" || fail "a cluster's own launch_overhead did not win"
# Dialects of other torch versions: torch 1.8.1 names its GPUs `computeProperties`; its kernel times
# go under the GPU, never "cpu". A trace with kernels but no GPU name at all (the HTA excerpt) is
# refused in one line unless --device-model names the GPU.
"$P" calibrate --profile "$D/v100_torch181_tbplugin_excerpt.json" -o "$T/v100.yaml" >/dev/null 2>&1 \
  || fail "calibrate on the torch 1.8.1 tb_plugin excerpt"
grep -q '^  "V100-DGXS-32GB":' "$T/v100.yaml" || fail "torch 1.8.1 kernels not under the V100: $(grep '^  "' "$T/v100.yaml")"
! grep -q '^  "cpu":' "$T/v100.yaml" || fail "torch 1.8.1 GPU kernels filed under cpu"
out=$("$P" calibrate --profile "$D/hta_backward_thread_excerpt.json" -o "$T/noname.yaml" 2>&1); rc=$?
[ "$rc" = 2 ] || fail "a GPU trace without a GPU name should exit 2, got $rc: $out"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "unnamed-GPU error should be one line: $out"
case "$out" in *hta_backward_thread_excerpt.json*deviceProperties*--device-model*) ;; *) fail "unnamed-GPU error names no file/key/flag: $out" ;; esac
[ ! -e "$T/noname.yaml" ] || fail "no output file on the unnamed-GPU error"
"$P" calibrate --profile "$D/hta_backward_thread_excerpt.json" --device-model A100-SXM4-40GB -o "$T/named.yaml" >/dev/null 2>&1 \
  || fail "the unnamed-GPU trace with --device-model"
grep -q '^  "A100-SXM4-40GB":' "$T/named.yaml" || fail "--device-model did not key the unnamed-GPU trace"
# ROCm: HTA's MI250 trace calls its GPUs "AMD Radeon Graphics", ROCm's name for any part without a
# marketing name: refused like a trace without a name (the line says what the file had), keyed by
# --device-model; the TraceLens gfx942 excerpt (no deviceProperties, kernels linked by ac2g flow
# only) gives its bf16 GEMM under the model given.
out=$("$P" calibrate --profile "$D/mi250_rocm_minitoy.json" -o "$T/radeon.yaml" 2>&1); rc=$?
[ "$rc" = 2 ] || fail "ROCm's generic GPU name should exit 2, got $rc: $out"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "generic-name error should be one line: $out"
case "$out" in *mi250_rocm_minitoy.json*deviceProperties*"AMD Radeon Graphics"*--device-model*) ;; *) fail "generic-name error: $out" ;; esac
out=$("$P" calibrate --profile "$D/rocm-gfx942_tracelens_bf16-gemm_excerpt.json" -o "$T/gfx942.yaml" 2>&1); rc=$?
[ "$rc" = 2 ] || fail "the unnamed ROCm excerpt should exit 2, got $rc: $out"
"$P" calibrate --profile "$D/rocm-gfx942_tracelens_bf16-gemm_excerpt.json" --device-model gfx942 -o "$T/gfx942.yaml" >"$T/gfx942.txt" 2>&1 \
  || fail "calibrate the ROCm excerpt with --device-model"
grep -q '"aten::mm\[256,131072\]\[131072,512\]:bf16": "1088500 ns"' "$T/gfx942.yaml" || fail "ROCm bf16 GEMM: $(cat "$T/gfx942.yaml")"
grep -q "4 of 4 GPU activities (100.0%) .* (4 by ac2g flow)" "$T/gfx942.txt" || fail "ROCm excerpt links: $(cat "$T/gfx942.txt")"
"$P" validate --profile "$D/rocm-gfx942_tracelens_bf16-gemm_excerpt.json" --calibration "$T/gfx942.yaml" --device-model gfx942 >"$T/gfx942-v.txt" 2>&1 \
  || fail "validate the ROCm excerpt"
grep -q "calibrated times 4 (0 by op name), measured (no match) 0" "$T/gfx942-v.txt" || fail "ROCm validate: $(cat "$T/gfx942-v.txt")"
# validate does not price that trace's kernels with a CPU calibration either.
"$P" calibrate --profile "$D/cpu_torch113_cnn_6steps.json.gz" -o "$T/cpu.yaml" >/dev/null 2>&1 || fail "calibrate on the CPU trace"
grep -q '^  "cpu":' "$T/cpu.yaml" || fail "the CPU trace's calibration has no cpu device"
"$P" validate --profile "$D/hta_backward_thread_excerpt.json" --calibration "$T/cpu.yaml" >/dev/null 2>"$T/nn.txt" \
  || fail "validate of the unnamed-GPU trace with a CPU calibration"
grep -q "names no GPU" "$T/nn.txt" || fail "a CPU calibration priced GPU kernels: $(cat "$T/nn.txt")"
# The profiler's own host cost (--profiler-overhead): GPT-2 batch 1 on the H200 rig, recorded
# without shapes, fits a ~20.7 ms host step as recorded and ~12-13 ms with the measured 2.3 us per
# recorded op taken out (unprofiled: 12.1-16.5 ms); a value that is neither none, auto nor a
# duration is refused in one line.
"$P" calibrate --profile "$D/h200_gpt2-124m_sdpa_bf16_b1_train.json.gz" --device-model H200-SXM-141GB \
  --profiler-overhead auto -o "$T/b1.yaml" >"$T/b1.txt" 2>"$T/b1.err" || fail "calibrate --profiler-overhead auto"
grep -q "2300 ns of profiler cost taken out per recorded framework op" "$T/b1.err" \
  || fail "the profiler correction is not noted: $(cat "$T/b1.err")"
out=$("$P" calibrate --profile "$D/h200_gpt2-124m_sdpa_bf16_b1_train.json.gz" --profiler-overhead fast \
  -o "$T/b1bad.yaml" 2>&1); rc=$?
[ "$rc" = 2 ] && [ ! -e "$T/b1bad.yaml" ] || fail "--profiler-overhead fast: exit $rc, $out"
echo "$out" | grep -q -- '--profiler-overhead: expected none, auto or a duration' || fail "bad --profiler-overhead: $out"
# --host-only: the same host model without the kernel tables, so that the cost model's rules price
# the kernels and the measured host (torch 2.11 on the rig's Xeon) the launches. On GPT-2 124M SDPA
# b8 it adds the host-bound start of the step: 0.4-1.2 ms (the trace replayed without the profiler,
# tools/step_gaps.py --replay auto, leaves the GPU idle 0.5-1.0 ms of the 35.16 ms step).
"$P" calibrate --profile "$D/h200_gpt2-124m_sdpa_bf16_b1_train.json.gz" --device-model H200-SXM-141GB \
  --profiler-overhead auto --host-only -o "$T/b1host.yaml" >"$T/b1host.txt" 2>/dev/null || fail "calibrate --host-only"
grep -q 'launch_overhead: "22414 ns"' "$T/b1host.yaml" || fail "--host-only lost the host model: $(head -12 "$T/b1host.yaml")"
grep -q 'exact: {}' "$T/b1host.yaml" && ! grep -q 'min_kernel' "$T/b1host.yaml" \
  || fail "--host-only wrote kernel tables or a floor"
"$P" import topo --nvidia-smi "$D/h200_nvidia-smi-topo.txt" --gpu-model H200-SXM-141GB -o "$T/h200.yaml" --quiet \
  || fail "import topo for --host-only"
G=layers=12,hidden=768,heads=12,seq=1024,positions=1024,dropout=0.1,optimizer=adam,optimizer_impl=fused,vocab=50257,precision=bf16,qkv_bias=false,bias_epilogue=true,batch=8,attention=flash
step() { "$P" simulate --graph gpt --graph-opt "$G" --cluster "$T/h200.yaml" --placement single-gpu --json --quiet "$@" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"] * 1e3)'; }
bare=$(step) && host=$(step --calibration "$T/b1host.yaml") || fail "simulate with the host model"
python3 -c "import sys; d=$host-$bare; sys.exit(0 if 0.4 < d < 1.2 else 1)" \
  || fail "the host model should add 0.4-1.2 ms to GPT-2 124M SDPA b8: $bare -> $host ms"
out=$("$P" calibrate --profile "$D/h200_micro.json.gz" --host-only -o "$T/nohost.yaml" 2>&1); rc=$?
[ "$rc" = 2 ] && [ ! -e "$T/nohost.yaml" ] || fail "--host-only without a host model: exit $rc, $out"
echo "$out" | grep -q -- 'expected --host-only: a host model' || fail "--host-only without a host model: $out"
printf '{"traceEvents": [' >"$T/bad.json"
out=$("$P" calibrate --profile "$T/bad.json" -o "$T/bad.yaml" 2>&1); rc=$?
[ "$rc" = 2 ] || fail "truncated JSON should exit 2, got $rc"
[ ! -e "$T/bad.yaml" ] || fail "no output file on error"
echo "ok"
