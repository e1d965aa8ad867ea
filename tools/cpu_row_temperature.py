#!/usr/bin/python3
"""Cold against hot microbenchmark rows of one CPU: is the cost of an evicted cache per operand byte?

Usage:  /usr/bin/python3 tools/cpu_row_temperature.py COLD HOT [--json OUT]

COLD and HOT are tools/profile_rig.py output folders (or their manifest.json) of the same machine
and configuration, the first run as by default (caches evicted before each GEMM, convolution,
LSTM and BatchNorm call: `ColdCache`), the second with `--hot` (the call repeated, its operands
left in cache). For each kernel family and each shape measured in both, the difference
d = t_cold - t_hot; per family the median d, the median d / t_hot, and the least-squares fit
d = a + B / R on the operand bytes B (inputs and output, f32). If the cost of a cold cache were
its operands' bytes at DRAM's rate, d would follow B (correlation near 1, R near the rig's DRAM
rate, a near 0); a per-call cost (code, TLB and allocator state evicted with the data) shows as
a > 0 with d unrelated to B.
"""
import argparse
import json
import os
import sys
from math import prod

FAMILIES = [
    ("gemm (mm, addmm, linear)", ("aten::mm", "aten::addmm", "aten::linear")),
    ("batched gemm (bmm)", ("aten::bmm",)),
    ("convolution forward", ("aten::mkldnn_convolution",)),
    ("convolution backward", ("aten::convolution_backward",)),
]


def operand_bytes(name, shapes):
    """f32 bytes of a GEMM's A, B and C (and bias), or of every listed tensor for other kernels."""
    if name == "aten::bmm":
        b, m, k = shapes[0]
        n = shapes[1][2]
        return 4 * b * (m * k + k * n + m * n)
    if name == "aten::mm":
        (m, k), n = shapes[0], shapes[1][1]
        return 4 * (m * k + k * n + m * n)
    if name == "aten::addmm":
        (m, k), n = shapes[1], shapes[2][1]
        return 4 * (m * k + k * n + m * n + n)
    if name == "aten::linear":
        (m, k), n = shapes[0], shapes[1][0]
        return 4 * (m * k + k * n + m * n + n)
    return 4 * sum(prod(s) for s in shapes if s)


def load_rows(path):
    if os.path.isdir(path):
        path = os.path.join(path, "manifest.json")
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as e:
        sys.exit("cpu_row_temperature.py: %s: %s" % (path, e))
    if not isinstance(doc, dict) or not isinstance(doc.get("ops"), list):
        sys.exit("cpu_row_temperature.py: %s: ops: expected a list of microbenchmark rows" % path)
    rows = {}
    for i, r in enumerate(doc["ops"]):
        try:
            rows[(r["name"], json.dumps(r["input_shapes"]))] = float(r["mean_us"]) * 1e-6
        except (KeyError, TypeError, ValueError):
            sys.exit("cpu_row_temperature.py: %s: ops[%d]: expected name, input_shapes and mean_us"
                     % (path, i))
    return rows, doc.get("memory_levels", [])


def fit_line(x, y):
    """Least squares y = a + b x; (a, b), or (mean y, 0) when x does not vary."""
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxx = sum((v - mx) ** 2 for v in x)
    if sxx == 0:
        return my, 0.0
    b = sum((u - mx) * (v - my) for u, v in zip(x, y)) / sxx
    return my - b * mx, b


def correlation(x, y):
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((u - mx) * (v - my) for u, v in zip(x, y))
    sxx = sum((u - mx) ** 2 for u in x)
    syy = sum((v - my) ** 2 for v in y)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else 0.0


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def compare(cold, hot):
    """Per family: shapes, median d (s), median d / t_hot, fit (a s, R B/s or None), correlation."""
    out = []
    for family, names in FAMILIES:
        b, d, rel = [], [], []
        for key, tc in sorted(cold.items()):
            if key[0] in names and key in hot:
                b.append(operand_bytes(key[0], json.loads(key[1])))
                d.append(tc - hot[key])
                rel.append((tc - hot[key]) / hot[key] if hot[key] > 0 else 0.0)
        if len(b) < 3:
            continue
        a, slope = fit_line(b, d)
        out.append({"family": family, "shapes": len(b), "median_d_s": median(d),
                    "median_d_over_hot": median(rel), "fit_a_s": a,
                    "fit_byte_s": 1.0 / slope if slope > 0 else None, "corr_bytes_d": correlation(b, d)})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cold")
    ap.add_argument("hot")
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    cold, levels = load_rows(args.cold)
    hot, _ = load_rows(args.hot)
    res = compare(cold, hot)
    if not res:
        sys.exit("cpu_row_temperature.py: %s and %s: no kernel family with 3 shapes in both" % (args.cold, args.hot))
    dram = [l["byte_s"] for l in levels if l.get("level") == "DRAM"]
    if dram:
        print("DRAM rate of the cold run's sweep: %.1f GB/s" % (dram[0] * 1e-9))
    print("%-26s %6s %10s %8s %10s %12s %8s" % ("family", "shapes", "median d", "d/hot", "fit a",
                                                  "fit B/s", "corr"))
    for r in res:
        print("%-26s %6d %7.1f us %7.2f %7.1f us %12s %8.2f"
              % (r["family"], r["shapes"], r["median_d_s"] * 1e6, r["median_d_over_hot"], r["fit_a_s"] * 1e6,
                 "%.1f GB/s" % (r["fit_byte_s"] * 1e-9) if r["fit_byte_s"] else "none (<= 0)",
                 r["corr_bytes_d"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
