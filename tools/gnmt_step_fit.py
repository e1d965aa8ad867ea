#!/usr/bin/env python3
"""Per-iteration step time of Lambda's GNMT v2 runs against the iteration's tokens, on 1 and 2 GPUs
(docs/validation.md, "Lambda's 1-to-2-GPU GNMT scaling: what the harness measures").

    tools/gnmt_step_fit.py [--data tests/data/lambda_gnmt_iterations.csv] [--placesim build/placesim]

The data are the `TRAIN [epoch][i/n]  Time t  ...  Tok/s r` lines (rank 0, every 10th iteration,
iteration 0 left out as train.py's AverageMeter leaves it out) of Lambda's own result logs, so
tokens = t x r. Per run it fits t = a x tokens + c (least squares) and prints a (us per token) and
c (ms per step). Per system: the extra fixed time per step on 2 GPUs (c2 - c1), the slope ratio
a2 / a1, and the gradient exchange's bus bandwidth that extra bounds from above (2 ranks: a ring
all-reduce moves the buffer once each way per rank, busbw = bytes / time; bytes = the AMP logs'
"Number of parameters" in F16, below); then the published epoch figure against the harness's rule
applied to the fit: train.py's epoch figure is the mean of per-iteration rates (summed over the
ranks), over the length buckets of Lambda's WMT16 subset (BUCKETS).

With --placesim, the model's step (`simulate`, the table's own graph options of that row with the
bucket's padded lengths) at each bucket gives the model's a and c the same way.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# Gradient bytes of one all-reduce: 159,605,817 parameters ("Number of parameters", vocabulary
# padded to 31,800 under --math fp16) in F16 (apex AMP O2: F16 model and gradients), as the 2-GPU
# A100 log prints them (lambdal/deeplearning-benchmark @ 494e74ce :
# pytorch/results/2xA100_80GB_SXM4_v1/PyTorch_gnmt_FP16/19-11-2022_20-58-06.txt).
GRAD_BYTES = 159_605_817 * 2
# Lambda's WMT16 subset per length bucket (share of iterations, tokens per pair, padded source
# length / decoder steps): the 111 logged iterations of lambdal/deeplearning-benchmark @ e167f02c :
# pytorch/results/1080Ti/PyTorch_gnmt_FP32/03-03-2020_09-05-39.txt (docs/validation.md, "GNMT v2: a
# recurrent network", "Sequence lengths").
BUCKETS = [(0.054, 13.6, 9, 8), (0.216, 27.1, 19, 18), (0.315, 45.0, 29, 28),
           (0.306, 62.9, 39, 38), (0.108, 81.9, 50, 49)]


def fit(points):
    """Least squares of t = a x k + c over (k, t); returns (a, c)."""
    n = len(points)
    mk = sum(k for k, _ in points) / n
    mt = sum(t for _, t in points) / n
    skk = sum((k - mk) ** 2 for k, _ in points)
    if skk == 0:
        raise SystemExit(f"cannot fit a step time to {n} iteration(s) of one token count")
    a = sum((k - mk) * (t - mt) for k, t in points) / skk
    return a, mt - a * mk


def mean_of_rates(a, c, batch):
    """train.py's epoch figure per rank: the iteration-weighted mean of tokens / time."""
    return sum(s * (tpp * batch) / (a * tpp * batch + c) for s, tpp, _, _ in BUCKETS)


def load(path):
    runs = defaultdict(lambda: {"points": []})
    if not os.path.isfile(path):
        raise SystemExit(f"{path}: no such file")
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            run = runs[(r["system"], int(r["gpus"]))]
            run["batch"] = int(r["batch"])
            run["published"] = float(r["published_tok_s"])
            t = float(r["time_s"])
            run["points"].append((t * float(r["tok_s"]), t))
    return runs


def table_row(system, gpus):
    """The published table's AMP row of Lambda's GNMT on this system and GPU count."""
    path = os.path.join(ROOT, "tests", "data", "published_throughput.csv")
    with open(path, newline="") as f:
        lines = [l for l in f if not l.startswith("#")]
    for r in csv.DictReader(lines):
        if (r["model"], r["system"], r["gpus"], r["precision"]) == (
                "gnmt-v2-lambda", system, str(gpus), "AMP"):
            return r
    raise SystemExit(f"no gnmt-v2-lambda AMP row for {system} on {gpus} GPUs")


def model_fit(placesim, system, gpus):
    """The model's (a, c) over the buckets' padded lengths, from the table row's options."""
    r = table_row(system, gpus)
    base = [kv for kv in r["graph_opt"].split(",") if not kv.startswith(("src_len=", "tgt_len="))]
    par = f"dp={gpus}," + r["parallel"] if gpus > 1 else None
    points = []
    for _, tpp, src, tgt in BUCKETS:
        opt = ",".join(base + [f"src_len={src}", f"tgt_len={tgt}"])
        cmd = [placesim, "simulate", "--graph", "nmt", "--graph-opt", opt, "--cluster",
               r["cluster"], "--quiet", "--json"]
        cmd += ["--parallel", par] if par else ["--placement", "single-gpu"]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)}: {out.stderr.strip()}")
        points.append((tpp * int(r["batch"]), json.loads(out.stdout)["step_time_s"]))
    return fit(points)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.path.join(ROOT, "tests", "data",
                                                   "lambda_gnmt_iterations.csv"))
    ap.add_argument("--placesim", help="also fit the model's step (built placesim)")
    args = ap.parse_args()
    runs = load(args.data)
    print("system                 GPUs  n  us/token  fixed ms  epoch tok/s: published  "
          "fit+harness  err")
    fits = {}
    for (system, gpus), run in sorted(runs.items()):
        a, c = fit(run["points"])
        fits[system, gpus] = (a, c)
        est = gpus * mean_of_rates(a, c, run["batch"])
        print(f"{system:22s} {gpus:4d} {len(run['points']):2d}  {a * 1e6:8.3f}  {c * 1e3:8.1f}"
              f"  {run['published']:22,.0f}  {est:11,.0f}  {est / run['published'] - 1:+.1%}")
    print("\nsystem                 extra fixed ms (2 vs 1 GPU)  slope 2/1  busbw bound GB/s"
          + ("  model: extra fixed ms  slope 2/1" if args.placesim else ""))
    for system in sorted({s for s, _ in fits}):
        if (system, 1) not in fits or (system, 2) not in fits:
            raise SystemExit(f"{system}: the data need a 1-GPU and a 2-GPU run")
        (a1, c1), (a2, c2) = fits[system, 1], fits[system, 2]
        extra = c2 - c1
        bound = f"{GRAD_BYTES / extra / 1e9:16.2f}" if extra > 0.005 else f"{'(hidden)':>16s}"
        line = f"{system:22s} {extra * 1e3:27.1f}  {a2 / a1:9.3f}  {bound}"
        if args.placesim:
            (m1, k1), (m2, k2) = (model_fit(args.placesim, system, g) for g in (1, 2))
            line += f"  {(k2 - k1) * 1e3:21.1f}  {m2 / m1:9.3f}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
