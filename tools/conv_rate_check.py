#!/usr/bin/env python3
"""Measured convolution kernels against placesim's price for them, one row per call shape.

Usage: conv_rate_check.py PLACESIM CSV CLUSTER [--tolerance F] [--calibration YAML]

CSV: tests/data/calibration/h100_tracelens_wan21_bf16_conv_fwd.csv's columns (input and weight
shapes as AxBx..., stride, padding, gflop, data_moved_mib, kernel, kernel_us, calls). Each row
becomes one bf16 `Conv` op of a graph (output [N, K, spatial...], its FLOPs and its input, weight
and output bytes, layout nhwc: the measured time is the convolution kernel alone, without cuDNN's
layout transforms), which `placesim simulate --placement single-gpu --pricing` prices on the
cluster's first GPU. Prints the rows, the sum of the model's times over the sum of the measured
ones (each shape once), and exits 1 when that ratio is off 1 by more than the tolerance (default
none: report only).
"""
import csv
import json
import os
import subprocess
import sys
import tempfile


def dims(s):
    return [int(x) for x in s.split("x")]


def per_dim(s, n):
    v = dims(s)
    return v * n if len(v) == 1 else v


def main():
    args = sys.argv[1:]
    tol = None
    if "--tolerance" in args:
        i = args.index("--tolerance")
        tol = float(args[i + 1])
        del args[i:i + 2]
    extra = []
    if "--calibration" in args:
        i = args.index("--calibration")
        extra = ["--calibration", args[i + 1]]
        del args[i:i + 2]
    if len(args) != 3:
        sys.exit(__doc__)
    placesim, path, cluster = args
    with open(path) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    ops = []
    for i, r in enumerate(rows):
        x, w = dims(r["input_shape"]), dims(r["weight_shape"])
        sp = len(x) - 2
        st, pad = per_dim(r["stride"], sp), per_dim(r["padding"], sp)
        out = [x[0], w[0]] + [(x[2 + d] + 2 * pad[d] - w[2 + d]) // st[d] + 1 for d in range(sp)]
        n = lambda s: 1 if not s else s[0] * n(s[1:])
        flops = 2.0 * n(out) * n(w[1:])
        if abs(flops / (float(r["gflop"]) * 1e9) - 1) > 1e-6:
            sys.exit(f"conv_rate_check.py: {path}: row {i + 1}: FLOPs {flops:.6g} from the shapes, "
                     f"the report says {r['gflop']} G")
        moved = 2 * (n(x) + n(w) + n(out))
        if abs(moved / (float(r["data_moved_mib"]) * 2**20) - 1) > 0.01:
            sys.exit(f"conv_rate_check.py: {path}: row {i + 1}: {moved} bytes from the shapes, "
                     f"the report says {r['data_moved_mib']} MiB")
        ops.append({"name": f"conv{i}", "type": "Conv", "dtype": "bf16", "layout": "nhwc",
                    "flops": flops, "bytes_read": 2 * (n(x) + n(w)),
                    "bytes_written": 2 * n(out),
                    "outputs": [{"name": "y", "shape": out, "dtype": "bf16",
                                 "bytes": 2 * n(out)}]})
    with tempfile.TemporaryDirectory() as d:
        graph, pricing = os.path.join(d, "g.json"), os.path.join(d, "p.json")
        with open(graph, "w") as f:
            json.dump({"name": "conv-rate-check", "ops": ops}, f)
        subprocess.run([placesim, "simulate", "--graph", graph, "--cluster", cluster,
                        "--placement", "single-gpu", "--quiet", "--pricing", pricing] + extra,
                       check=True, stdout=subprocess.DEVNULL)
        with open(pricing) as f:
            priced = {o["op"]: o["time_ns"] / 1e3 for o in json.load(f)["ops"]}
    print("| input | weight | GFLOP | measured us | model us | model / measured |")
    print("|---|---|---|---|---|---|")
    meas = model = 0.0
    for i, r in enumerate(rows):
        t, m = float(r["kernel_us"]), priced[f"conv{i}"]
        meas, model = meas + t, model + m
        print(f"| {r['input_shape']} | {r['weight_shape']} | {float(r['gflop']):.2f} | {t:.1f} | "
              f"{m:.1f} | {m / t:.2f} |")
    ratio = model / meas
    print(f"sum over {len(rows)} shapes: measured {meas:.1f} us, model {model:.1f} us, "
          f"model / measured {ratio:.3f}")
    if tol is not None and abs(ratio - 1) > tol:
        print(f"conv_rate_check.py: model / measured {ratio:.3f} is off 1 by more than {tol}")
        sys.exit(1)


if __name__ == "__main__":
    main()
