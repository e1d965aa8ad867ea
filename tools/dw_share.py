#!/usr/bin/python3
"""How much slower the depthwise convolutions of each channels-last depthwise network would have to
run to close that row alone, from placesim's own per-op prices (docs/validation.md, "Channels-last
depthwise convolutions: what runs, what was found", h-dwconv).

Usage:
  tools/dw_share.py [PLACESIM]        (default build/placesim; run from the repository root)

Rows: the H200 zoo's AMP NHWC b512 MobileNetV2, MobileNetV3-Large and EfficientNet-B0
(tests/data/calibration/h200_zoo_2026-12-04_results.jsonl, with tools/h200_heldout.py's options)
and the published table's timm RTX 3090 rows of the same networks and MNASNet (NCHW and NHWC) and
NVIDIA's EfficientNet-B0 AMP on one A100 (tests/data/published_throughput.csv). For each row:
measured and predicted step (ms), the step's GPU time per class from `simulate --pricing` (the
depthwise convolutions are the graph's Conv nodes with group > 1, with their ConvBackpropInput and
ConvBackpropFilter; batch norm; the other convolutions; the rest), and the factor f by which the
depthwise passes (all three) would have to be slower for the row to match: f = 1 + (measured -
predicted) / depthwise. Nothing here changes the model; it is arithmetic on its output.
"""
import csv, json, os, re, subprocess, sys, tempfile

import onnx

D = "tests/data/calibration"
ZOO = [("mobilenet_v2", ""), ("mobilenet_v3_large", ""), ("efficientnet_b0", ",silu=inplace")]
TABLE = ["mobilenet_v2-timm-nchw", "mobilenet_v2-timm-nhwc", "mobilenet_v3_large-timm-nchw",
         "mobilenet_v3_large-timm-nhwc", "mnasnet1_0-timm-nchw", "mnasnet1_0-timm-nhwc",
         "efficientnet_b0-timm-nchw", "efficientnet_b0-timm-nhwc"]


# The ops the channel-wise element-rate bound prices (sim/cost_model.cpp, channelwise_time): the
# squeeze-and-excitation scale (Mul of a map by [N, C, 1, 1]) and its gradients, global average
# pooling and its gradient, the gradients' per-channel sums.
CHANNEL_MAP = ("MulGrad", "GlobalAveragePool", "GlobalAveragePoolGrad", "ReduceSum")


def grouped_convs(graph):
    m = onnx.load(graph, load_external_data=False)
    return {n.name for n in m.graph.node if n.op_type == "Conv" and
            next((a.i for a in n.attribute if a.name == "group"), 1) > 1}


def classify(op, dw):
    if "BatchNormalization" in op:
        return "bn"
    base = op[len("gradients/"):].split("_grad/")[0] if op.startswith("gradients/") else op
    if base in dw and ("/Cast" not in op and "autocast" not in op):
        return "dw"
    if "/Conv" in op and "autocast" not in op and not op.endswith("/Cast"):
        return "conv"
    if re.sub(r"[_0-9]+$", "", op.split("/")[-1]) in CHANNEL_MAP:
        return "se"
    return "rest"


def simulate(placesim, graph, opt, cluster, tmp):
    pricing = os.path.join(tmp, "p.json")
    r = subprocess.run([placesim, "simulate", "--graph", graph, "--graph-opt", opt, "--cluster",
                        cluster, "--placement", "single-gpu", "--json", "--quiet", "--pricing",
                        pricing], capture_output=True, text=True)
    if r.returncode:
        sys.exit("dw_share: placesim failed on %s %s: %s" % (graph, opt, r.stderr.strip()))
    step = json.loads(r.stdout)["step_time_s"] * 1e3
    with open(pricing, encoding="utf-8") as f:
        return step, json.load(f)["ops"]


def main():
    placesim = sys.argv[1] if len(sys.argv) > 1 else "build/placesim"
    tmp = tempfile.mkdtemp()
    h200 = os.path.join(tmp, "h200.yaml")
    subprocess.run([placesim, "import", "topo", "--nvidia-smi", os.path.join(D, "h200_nvidia-smi-topo.txt"),
                    "--gpu-model", "H200-SXM-141GB", "-o", h200, "--quiet"], check=True,
                   capture_output=True)
    rows = []
    with open(os.path.join(D, "h200_zoo_2026-12-04_results.jsonl"), encoding="utf-8") as f:
        zoo = {r["model"]: r for r in map(json.loads, filter(str.strip, f))}
    for m, extra in ZOO:
        r = zoo[m]
        opt = ("training,optimizer=momentum,batch=%d,precision=f16,grads=f32,optimizer_impl=foreach,"
               "grad_scaler=torch,layout=nhwc%s,autocast=torch" % (r["batch"], extra))
        rows.append(("H200 zoo %s NHWC b%d" % (m, r["batch"]), "tests/data/onnx/%s.onnx" % m, opt,
                     h200, r["step_s_interval"] * 1e3))
    with open("tests/data/published_throughput.csv", encoding="utf-8") as f:
        table = list(csv.DictReader(l for l in f if not l.startswith("#")))
    pick = [t for t in table if t["model"] in TABLE] + [
        t for t in table if t["model"] == "efficientnet-b0" and t["gpus"] == "1" and
        t["precision"] == "AMP" and t["cluster"] == "dgx-a100"]
    for t in pick:
        b = int(t["batch"])
        rows.append(("%s %s %s b%d" % (t["model"], t["system"].split(" (")[0], t["precision"], b),
                     "tests/data/" + t["graph"], t["graph_opt"], t["cluster"],
                     b / float(t["published"]) * 1e3))
    print("| row | measured ms | predicted ms | error (time) | depthwise fwd / dgrad / wgrad ms |"
          " batch norm | other conv | SE, pooling | rest | f |\n|---|---|---|---|---|---|---|---|---|---|")
    for name, graph, opt, cluster, meas in rows:
        step, ops = simulate(placesim, graph, opt, cluster, tmp)
        dw = grouped_convs(graph)
        cls, passes = {}, {"fwd": 0.0, "dgrad": 0.0, "wgrad": 0.0}
        for o in ops:
            c = classify(o["op"], dw)
            cls[c] = cls.get(c, 0.0) + o["time_ns"] / 1e6
            if c == "dw":
                k = ("dgrad" if "ConvBackpropInput" in o["op"] else
                     "wgrad" if "ConvBackpropFilter" in o["op"] else "fwd")
                passes[k] += o["time_ns"] / 1e6
        f = 1.0 + (meas - step) / cls["dw"]
        print("| %s | %.1f | %.1f | %+.1f %% | %.2f / %.2f / %.2f | %.1f | %.1f | %.1f | %.1f | %.2f |" % (
            name, meas, step, (step / meas - 1) * 100, passes["fwd"], passes["dgrad"],
            passes["wgrad"], cls.get("bn", 0.0), cls.get("conv", 0.0), cls.get("se", 0.0),
            cls.get("rest", 0.0), f))


if __name__ == "__main__":
    main()
