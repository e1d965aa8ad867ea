#!/usr/bin/python3
"""Close the loop on this machine's CPU from a tools/profile_rig.py output folder: calibrate from
the rig's microbenchmarks (and its host side, taken at --host-batch), import the model's ONNX
graph at the profiled batch, simulate it on a one-thread CPU, and compare with the measured step
in CPU time, in total and per op class.

Usage:  /usr/bin/python3 tools/cpu_closed_loop.py --rig RIG --placesim build/placesim [--json OUT]
                                                  [--rows OTHER_RIG]

--rows prices the step with another rig folder's microbenchmark rows (its manifest's "ops", e.g.
the `--hot` run of the same configuration beside a cold one); the run's own memory levels, peaks
and host side are kept, so one measured step is predicted from either end of operand temperature.

The cluster (RIG/cpu.yaml) is one CPU `cpu0` with worker_threads 1, its f32 peak the core's
(vector_lanes x fma_units x 2 x clock_hz of the manifest, as calibrate bounds the fits; the best
GEMM rate the rig measured where an older manifest lacks them) and its memory bandwidth the DRAM
rate of the rig's streaming sweep: the calibration's cache levels and class curves price the ops;
the peaks only bound them.
Prints one line per op class: measured (the top-level ops of the profiled steps, mean per step,
scaled to CPU time by the step's CPU time / wall time; "Python between ops" is the time no top-level
op covers) and predicted (simulate --pricing's kernel time per graph op; the host model's dispatch
per op (none since session 15: it is in the gap and the rows), optimizer per parameter, and per step the Python gap + zero_grad + AccumulateGrad measured
at --host-batch).
"""
import argparse
import json
import os
import re
import subprocess
import sys

# torch top-level op (forward call or autograd node) -> class
TORCH_CLASSES = [
    ("zero_grad + AccumulateGrad", ("Optimizer.zero_grad", "torch::autograd::AccumulateGrad")),
    ("optimizer", ("Optimizer.step",)),
    # Batched products (attention's bmm: one BLAS call per matrix) apart from the 2-D ones (linear
    # layers): the two miss in opposite directions on the transformer (docs/validation.md).
    ("gemm: batched", ("aten::bmm", "BmmBackward")),
    ("gemm", ("aten::linear", "aten::mm", "aten::addmm", "aten::matmul", "AddmmBackward",
              "MmBackward", "aten::_transformer_encoder_layer_fwd")),
    ("conv", ("aten::conv", "aten::_convolution", "ConvolutionBackward")),
    ("norm", ("aten::batch_norm", "aten::layer_norm", "NativeBatchNormBackward", "NativeLayerNormBackward")),
    ("dropout", ("aten::dropout", "aten::feature_dropout", "NativeDropoutBackward", "MulBackward")),
    ("softmax/loss", ("aten::softmax", "aten::log_softmax", "aten::cross_entropy", "aten::nll",
                      "SoftmaxBackward", "LogSoftmaxBackward", "NllLossBackward")),
    ("pool", ("aten::max_pool", "aten::adaptive_avg_pool", "MaxPool2DWithIndicesBackward", "AdaptiveAvgPool2DBackward")),
    ("embedding", ("aten::embedding", "EmbeddingBackward")),
]
# graph op type (ONNX import) -> class
GRAPH_CLASSES = [
    ("optimizer", ("Apply", "SparseApply")),
    ("gemm", ("MatMul", "Gemm", "BatchMatMul")),
    ("conv", ("Conv",)),
    ("norm", ("BatchNormalization", "LayerNorm", "FusedBatchNorm")),
    ("dropout", ("Dropout",)),
    ("softmax/loss", ("Softmax", "LogSoftmax", "SoftmaxCrossEntropy", "NegativeLogLikelihood", "SparseSoftmax")),
    ("pool", ("MaxPool", "AveragePool", "GlobalAveragePool")),
    ("embedding", ("Gather",)),
]


def classify(name, table):
    key = name.split(": ", 1)[-1]
    for cls, prefixes in table:
        if any(key.startswith(p) or p in key for p in prefixes):
            return cls
    return "other"


def graph_class(op):
    """The class of a graph op; a GEMM whose operands and output all carry a batch dimension is a
    batched product, as sim::gemm_matrices counts it (a linear layer's weight gradient,
    [b, s, d] x [b, s, m] -> [d, m], is one GEMM)."""
    c = classify(op["type"], GRAPH_CLASSES)
    shapes = op.get("signature", {}).get("input_shapes", [])
    outs = op.get("outputs", [])
    if (c == "gemm" and len(shapes) >= 2 and all(len(sh) > 2 for sh in shapes)
            and outs and len(outs[0].get("shape", [])) > 2):
        return "gemm: batched"
    return c


def rows_manifest(m, other):
    """Manifest `m` (its step, host side, memory levels, peaks) with `other`'s microbenchmark rows
    and their temperature; None unless both were measured on the same device model and SIMD width."""
    if other.get("device_model") != m.get("device_model") or other.get("vector_lanes") != m.get("vector_lanes"):
        return None
    return dict(m, ops=other["ops"], cold_operands=other.get("cold_operands"))


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("cpu_closed_loop.py: %s failed (%d):\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r.stdout + r.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rig", required=True)
    ap.add_argument("--placesim", required=True)
    ap.add_argument("--json", help="write the figures here too")
    ap.add_argument("--rows", help="another rig folder whose microbenchmark rows price the step")
    args = ap.parse_args()
    rig, bin_ = args.rig, args.placesim
    m = json.load(open(os.path.join(rig, "manifest.json")))
    manifest = os.path.join(rig, "manifest.json")
    if args.rows:
        other_path = os.path.join(args.rows, "manifest.json")
        merged = rows_manifest(m, json.load(open(other_path)))
        if merged is None:
            sys.exit("cpu_closed_loop.py: %s: device_model and vector_lanes: expected %s's (%s, %s)"
                     % (other_path, rig, m.get("device_model"), m.get("vector_lanes")))
        manifest = os.path.join(rig, "manifest_rows.json")
        with open(manifest, "w") as f:
            json.dump(merged, f)
    model = m["models"][0]
    rates = m["measured_rates"]["cpu"]
    dram = [l["byte_s"] for l in m.get("memory_levels", []) if l["level"] == "DRAM"]
    peak = rates["f32_flop_s"]
    if all(k in m for k in ("vector_lanes", "fma_units", "clock_hz")):
        peak = m["vector_lanes"] * m["fma_units"] * 2 * m["clock_hz"]
    with open(os.path.join(rig, "cpu.yaml"), "w") as f:
        f.write("name: this-cpu\ndevices:\n  - {name: cpu0, kind: cpu, peak_flops: {f32: %.6g GFLOP/s}, "
                "memory_bandwidth: %.6g GB/s, memory_capacity: 16 GiB, worker_threads: 1, "
                "launch_overhead: %.3f us}\nlinks: []\n"
                % (peak * 1e-9, (dram[0] if dram else rates["byte_s"]) * 1e-9,
                   m["dispatch_overhead_us"]["cpu"]))
    cal_log = run([bin_, "calibrate", "--profile", manifest, "--device-model", "cpu0",
                   "-o", os.path.join(rig, "cal.yaml")])
    run([bin_, "import", "onnx", model["onnx"], "--training", "--batch", str(model["batch"]),
         "-o", os.path.join(rig, "g.json")])
    sim = run([bin_, "simulate", "--graph", os.path.join(rig, "g.json"), "--cluster", os.path.join(rig, "cpu.yaml"),
               "--placement", "single-cpu", "--calibration", os.path.join(rig, "cal.yaml"), "--json",
               "--pricing", os.path.join(rig, "pricing.json")])
    predicted = json.loads(sim[sim.index("{"):])["step_time_s"] if "{" in sim else None
    measured = model["median_step_cpu_s"]
    # Per class.
    host = model.get("host_side", {})
    share = host.get("cpu_share", 1.0)
    meas = {}
    for name, us in host.get("top_level_us_per_step", {}).items():
        c = classify(name, TORCH_CLASSES)
        meas[c] = meas.get(c, 0.0) + us * share * 1e-6
    meas["host: Python between ops"] = host.get("gap_us", 0.0) * 1e-6
    g = json.load(open(os.path.join(rig, "g.json")))
    ops = {o["name"]: o for o in g["ops"]}
    pricing = json.load(open(os.path.join(rig, "pricing.json")))
    pred = {}
    for o in pricing["ops"]:
        c = graph_class(ops[o["op"]])
        pred[c] = pred.get(c, 0.0) + o["time_ns"] * 1e-9
    # The host model's share (KernelCostModel::host_time): dispatch per framework op, the
    # optimizer's Python per update, and once per step what no graph op stands for.
    text = open(os.path.join(rig, "cal.yaml")).read()
    def ns(key):
        mt = re.search(r"^      %s: \"(\d+) ns\"" % key, text, re.M)
        return int(mt.group(1)) * 1e-9 if mt else 0.0
    storage = {"Placeholder", "VariableV2", "Variable", "VarHandleOp", "Const", "Constant", "RunningStatistic"}
    dispatched = [o for o in g["ops"] if o.get("phase") != "other" and o["type"] not in storage]
    updates = [o for o in dispatched if o.get("phase") == "update"]
    pred["host: dispatch per op"] = len(dispatched) * ns("launch_overhead")
    pred["optimizer"] = pred.get("optimizer", 0.0) + len(updates) * ns("per_parameter")
    # per_step is the host batch's Python gap + zero_grad + AccumulateGrad (manifest host_side).
    hs = m.get("host_side", {}).get("cpu", {})
    pred["zero_grad + AccumulateGrad"] = (hs.get("zero_grad_us", 0) + hs.get("accumulate_grad_us", 0)) * 1e-6
    pred["host: Python between ops"] = ns("per_step") - pred["zero_grad + AccumulateGrad"]
    print(cal_log)
    print("measured step (median CPU time) %.2f ms, wall %.2f ms; predicted %.2f ms; predicted/measured %.3f"
          % (measured * 1e3, model["median_step_s"] * 1e3, predicted * 1e3, predicted / measured))
    print("%-26s %10s %10s" % ("class", "measured", "predicted"))
    for c in sorted(set(meas) | set(pred)):
        print("%-26s %8.2f ms %8.2f ms" % (c, meas.get(c, 0) * 1e3, pred.get(c, 0) * 1e3))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"measured_cpu_s": measured, "measured_wall_s": model["median_step_s"], "predicted_s": predicted,
                       "ratio": predicted / measured, "measured_by_class_s": meas, "kernels_by_class_s": pred,
                       "graph_ops": len(g["ops"]), "rows_from": args.rows or rig}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
