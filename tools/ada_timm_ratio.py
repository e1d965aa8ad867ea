#!/usr/bin/python3
"""RTX 4090 over RTX 3090, forward only: timm's measured images/s ratio against the model's, one
software build on both cards (docs/validation.md, "GA102 against AD102 forward-only", h-adacnn).
Nothing here changes the model; it is arithmetic on its output.

Usage:
  tools/ada_timm_ratio.py [PLACESIM]        (default build/placesim; run from the repository root)

Data: tests/data/kernels/timm_rtx3090_rtx4090_infer_pt240.csv (huggingface/pytorch-image-models
results/benchmark-infer-amp-{nchw,nhwc}-pt240-cu124-rtx{3090,4090}.csv; no judged row). Each
network is priced forward only (the graph without `training`) at the file's batch, f16 with
torch's autocast, in its layout, on `pcie-3090` and `lambda-4090` (one GPU). What the ONNX
exports misprice on both cards alike (their training-mode batch norm, the software's absolute
speed) divides out of the ratio to first order; what is left is how the model scales AD102
against GA102.
"""
import csv, json, math, subprocess, sys

DATA = "tests/data/kernels/timm_rtx3090_rtx4090_infer_pt240.csv"
CLUSTER = {"rtx3090": "pcie-3090", "rtx4090": "lambda-4090"}


def rows():
    with open(DATA, encoding="utf-8") as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))


def per_image(placesim, graph, layout, batch, cluster):
    opt = "batch=%d,precision=f16,autocast=torch%s" % (batch, ",layout=nhwc" if layout == "nhwc" else "")
    r = subprocess.run([placesim, "simulate", "--graph", "tests/data/onnx/%s.onnx" % graph, "--graph-opt",
                        opt, "--cluster", cluster, "--placement", "single-gpu", "--quiet", "--json"],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit("ada_timm_ratio: placesim failed on %s %s: %s" % (graph, opt, r.stderr.strip()))
    return json.loads(r.stdout)["step_time_s"] / batch


def main():
    placesim = sys.argv[1] if len(sys.argv) > 1 else "build/placesim"
    pairs = {}
    for r in rows():
        pairs.setdefault((r["graph"], r["layout"]), {})[r["gpu"]] = r
    print("| network | layout | RTX 4090 / RTX 3090 measured | predicted | predicted / measured |")
    print("|---|---|---|---|---|")
    logs = []
    for (graph, layout), g in pairs.items():
        if set(g) != set(CLUSTER):
            continue
        meas = float(g["rtx4090"]["infer_samples_per_sec"]) / float(g["rtx3090"]["infer_samples_per_sec"])
        t = {gpu: per_image(placesim, graph, layout, int(g[gpu]["infer_batch_size"]), c)
             for gpu, c in CLUSTER.items()}
        pred = t["rtx3090"] / t["rtx4090"]
        logs.append(math.log(pred / meas))
        print("| %s | %s | %.3f | %.3f | %.3f |" % (graph, layout, meas, pred, pred / meas))
    print("geometric mean of predicted / measured: %.3f over %d pairs" % (math.exp(sum(logs) / len(logs)), len(logs)))


if __name__ == "__main__":
    main()
