#!/usr/bin/env python3
"""GPU time per op class as a function of batch size: measured in Kineto training traces of one
network at several batch sizes against `placesim simulate` of its graph at the same sizes.

Usage: batch_scaling.py PLACESIM CLUSTER GRAPH OPTS B=TRACE [B=TRACE ...] [--at B ...]

OPTS are the graph options without the batch (`,batch=B` is appended for each size). Classes are
tools/op_class_times.py's (measured kernels by the aten op that launched them, predicted ops by
graph op type). Per class it prints the time per step at each size, measured / predicted, then a
least-squares line through the sizes, time = fixed + per_image x batch, for both: the per-image
slope is what a larger batch adds, the fixed part what it amortises. `--at B` extrapolates both
lines to batch B (e.g. a batch no trace holds). docs/validation.md, "ResNet-50 on the H200: what
grows with the batch".
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op_class_times  # noqa: E402  (tools/op_class_times.py: the classes and both readers)

CLASSES = ["conv", "conv_bwd", "norm", "elementwise", "reduction", "copy", "update", "gemm"]


def line_fit(xs, ys):
    """Least-squares (fixed, per_image) of ys = fixed + per_image * xs; two or more sizes."""
    n = float(len(xs))
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx <= 0:
        raise ValueError("batch_scaling: need two different batch sizes")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - slope * mx, slope


def simulate(placesim, cluster, graph, opts, batch, path):
    r = subprocess.run([placesim, "simulate", "--graph", graph, "--graph-opt",
                        "%s,batch=%d" % (opts, batch), "--cluster", cluster, "--placement",
                        "single-gpu", "--quiet", "--json", "--trace", path],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit("batch_scaling: placesim failed at batch %d: %s" % (batch, r.stderr.strip()))
    return json.loads(r.stdout)["step_time_s"] * 1e6


def table(batches, meas, pred, at):
    """Markdown rows: per class the times at each size, both lines and the extrapolations."""
    out = ["| class | %s | measured fixed + per image | predicted fixed + per image%s |" % (
        " | ".join("b%d meas / pred us" % b for b in batches),
        "".join(" | b%d meas / pred (line)" % a for a in at))]
    out.append("|---" * (3 + len(batches) + len(at)) + "|")
    for c in CLASSES + ["total"]:
        m = [sum(x.values()) if c == "total" else x.get(c, 0.0) for x in meas]
        p = [sum(x.values()) if c == "total" else x.get(c, 0.0) for x in pred]
        if not any(m) and not any(p):
            continue
        fm, sm = line_fit(batches, m)
        fp, sp = line_fit(batches, p)
        cells = ["%.0f / %.0f" % (a, b) for a, b in zip(m, p)]
        cells += ["%.0f + %.2f" % (fm, sm), "%.0f + %.2f" % (fp, sp)]
        cells += ["%.0f / %.0f" % (fm + sm * a, fp + sp * a) for a in at]
        out.append("| %s | %s |" % (c, " | ".join(cells)))
    return out


def main(argv):
    at = []
    while "--at" in argv:
        i = argv.index("--at")
        at.append(int(argv[i + 1]))
        del argv[i:i + 2]
    if len(argv) < 6 or not all("=" in a for a in argv[4:]):
        sys.exit(__doc__)
    placesim, cluster, graph, opts = argv[:4]
    pairs = sorted((int(a.split("=", 1)[0]), a.split("=", 1)[1]) for a in argv[4:])
    batches = [b for b, _ in pairs]
    meas, pred, steps = [], [], []
    with tempfile.TemporaryDirectory() as d:
        for b, trace in pairs:
            path = os.path.join(d, "sim_b%d.json" % b)
            steps.append(simulate(placesim, cluster, graph, opts, b, path))
            meas.append(op_class_times.measured(trace))
            pred.append(op_class_times.predicted(path))
    for row in table(batches, meas, pred, at):
        print(row)
    print("predicted step: " + ", ".join("b%d %.2f ms" % (b, s / 1e3) for b, s in zip(batches, steps)))


if __name__ == "__main__":
    main(sys.argv[1:])
