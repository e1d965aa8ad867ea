#!/usr/bin/python3
"""Forward-only check of the channels-last depthwise gap on the RTX 3090, from timm's published
inference benchmarks (docs/validation.md, "Channels-last depthwise networks forward-only: timm's
inference CSVs", h-dwtimm). Nothing here changes the model; it is arithmetic on its output.

Usage:
  tools/dw_timm_infer.py [PLACESIM]        (default build/placesim; run from the repository root)

Data: tests/data/kernels/timm_rtx3090_infer_pt112.csv (no judged row: the published table holds
timm's *training* CSVs of the same run; these are its forward-only runs, eval mode,
torch.cuda.amp.autocast, cudnn.benchmark, batch 1024, 224 x 224), from
huggingface/pytorch-image-models @ 5e7d47ca105a59a39778102d3276291d6db5dd32,
results/benchmark-infer-amp-{nchw,nhwc}-pt112-cu113-rtx3090.csv, column infer_step_time.

For each network: measured and predicted forward step in NCHW and NHWC (the graph without
`training`, batch=1024, precision=f16, autocast=torch, on pcie-3090), the predicted time per class
(depthwise convolutions = Conv with group == input channels; other convolutions; batch norm;
activations; rest), the speedup NCHW / NHWC measured and predicted, and f: the factor by which the
NHWC depthwise forwards alone would have to be slower for the predicted speedup to equal the
measured one, f = 1 + (pred_nchw / speedup_measured - pred_nhwc) / depthwise_nhwc, and again with
the measured speedup times the baseline, the geometric mean of predicted over measured speedup of
the networks without depthwise layers (they over-gain from channels-last too). The ratio of the
two speedups compares the layouts on one network, so what the non-training path misprices in both
layouts alike (the exports' training-mode batch norm, activations) divides out to first order.
"""
import collections, csv, json, os, subprocess, sys, tempfile

import onnx

DATA = "tests/data/kernels/timm_rtx3090_infer_pt112.csv"


def measured():
    """{graph: (NCHW ms, NHWC ms)} a batch of 1024, in the file's order."""
    out = {}
    with open(DATA, encoding="utf-8") as f:
        for r in csv.DictReader(l for l in f if not l.startswith("#")):
            ms = float(r["infer_step_time_ms"])
            nchw, nhwc = out.get(r["graph"], (None, None))
            out[r["graph"]] = (ms, nhwc) if r["layout"] == "nchw" else (nchw, ms)
    return out


# Networks with squeeze-and-excitation blocks: their channels-last SE kernels were never timed on
# the RTX 3090 (the model keeps the NCHW constants there; sim/cost_model.cpp, channelwise_time), so
# their f depends on an unmeasured rate and they are left out of the fit.
SE = {"mobilenet_v3_large", "efficientnet_b0"}
ACT = {"Clip", "Relu", "HardSigmoid", "HardSwish", "Sigmoid", "Mul", "Silu"}


def depthwise(model):
    # The exports keep weights as graph inputs: [C_out, C_in / group, kh, kw].
    dims = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input}
    out = set()
    for n in model.graph.node:
        g = next((a.i for a in n.attribute if a.name == "group"), 1)
        w = dims.get(n.input[1]) if n.op_type == "Conv" and len(n.input) > 1 else None
        if g > 1 and w and w[1] == 1:
            out.add(n.name)
    return out


def price(placesim, graph, opt, tmp):
    pricing = os.path.join(tmp, "p.json")
    r = subprocess.run([placesim, "simulate", "--graph", graph, "--graph-opt", opt, "--cluster",
                        "pcie-3090", "--placement", "single-gpu", "--json", "--quiet", "--pricing",
                        pricing], capture_output=True, text=True)
    if r.returncode:
        sys.exit("dw_timm_infer: placesim failed on %s %s: %s" % (graph, opt, r.stderr.strip()))
    with open(pricing, encoding="utf-8") as f:
        return json.loads(r.stdout)["step_time_s"] * 1e3, json.load(f)["ops"]


def classes(ops, types, dw):
    c = collections.Counter()
    for o in ops:
        t = types.get(o["op"], "")
        k = ("dw" if o["op"] in dw else "bn" if "BatchNorm" in t else "conv" if t == "Conv" else
             "act" if t in ACT else "rest")
        c[k] += o["time_ns"] / 1e6
    return c


def main():
    placesim = sys.argv[1] if len(sys.argv) > 1 else "build/placesim"
    tmp = tempfile.mkdtemp()
    print("| network | layout | measured ms | predicted ms | error | depthwise | other conv | batch norm |"
          " activations | rest | speedup measured / predicted | f (NHWC depthwise forward), no baseline / baseline kept |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    res = {}
    for m, (m_nchw, m_nhwc) in measured().items():
        graph = "tests/data/onnx/%s.onnx" % m
        model = onnx.load(graph, load_external_data=False)
        dw, types = depthwise(model), {n.name: n.op_type for n in model.graph.node}
        extra = ",silu=inplace" if m == "efficientnet_b0" else ""
        rows = []
        for layout, meas in (("", m_nchw), (",layout=nhwc", m_nhwc)):
            step, ops = price(placesim, graph, "batch=1024,precision=f16,autocast=torch" + extra + layout, tmp)
            rows.append((layout.split("=")[-1] or "nchw", meas, step, classes(ops, types, dw)))
        res[m] = rows
    # Networks without depthwise layers over-gain from channels-last too: their geometric mean of
    # predicted over measured speedup is the baseline a depthwise network's target speedup keeps.
    plain = [r[0][2] / r[1][2] / (r[0][1] / r[1][1]) for r in res.values() if not r[1][3]["dw"]]
    base = 1.0
    for x in plain:
        base *= x ** (1.0 / len(plain))
    fs = []
    for m, rows in res.items():
        s_meas, s_pred = rows[0][1] / rows[1][1], rows[0][2] / rows[1][2]
        dwt = rows[1][3]["dw"]
        f = ((1 + (rows[0][2] / s_meas - rows[1][2]) / dwt,
              1 + (rows[0][2] / (s_meas * base) - rows[1][2]) / dwt) if dwt else None)
        if f and m not in SE:
            fs.append((f, dwt))
        for i, (layout, meas, step, c) in enumerate(rows):
            tail = (" %.3f / %.3f | %s |" % (s_meas, s_pred, "%.2f / %.2f" % f if f else "-")
                    if i else " | |")
            print("| %s | %s | %.1f | %.1f | %+.1f %% | %.1f | %.1f | %.1f | %.1f | %.1f |%s" % (
                m, layout, meas, step, (step / meas - 1) * 100, c["dw"], c["conv"], c["bn"], c["act"],
                c["rest"], tail))
    w = sum(d for _, d in fs)
    print("baseline (networks without depthwise layers, predicted / measured speedup): %.3f" % base)
    print("f weighted by depthwise time, networks without SE blocks: %.2f (no baseline) / %.2f "
          "(baseline kept: the fit)" % (
        sum(f[0] * d for f, d in fs) / w, sum(f[1] * d for f, d in fs) / w))


if __name__ == "__main__":
    main()
