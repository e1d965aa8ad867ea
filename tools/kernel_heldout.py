#!/usr/bin/env python3
"""Price the held-out kernel cases of the H200 rig (tools/kernel_rig.py --heldout) with placesim's
own rules, through the command line, and print measured against predicted per case and per family
(docs/validation.md, "Held-out rig run, 2026-12-04 evening").

Measured: the GPU time of every kernel (and memset) a case launched, per call. A kernel belongs
to a case when its launch (the cuda_runtime event with the same correlation id) lies inside the
case's record_function range on the host, which holds the 5 timed calls (warm-ups run before it);
the sum is divided by 5. In the SDPA cases the three `CUDAFunctor_add` kernels a call are the
harness's gradient accumulation into q.grad, k.grad, v.grad (never reset), not attention, and are
left out. The CUDA-event median of the rig (`median_s`, host gaps under the profiler included) is
printed beside it for reference.

Predicted: each case becomes the ops the built-in graphs make for it (models/builder.cpp, the
`gpt` builder), all in one graph of independent ops: an embedding case is `Gather` (reading the
rows it gathers; `--gather-reads-table`: the whole table, as the builder wrote it before session 26)
+ `GatherGrad` (signature [[N, E], [N], [V, E]]: the gradient, the indices and the table), a column sum
`BiasAddGrad`, the streaming cases `Add`, `Dropout`, `Gelu` + `GeluGrad`, `Transpose`, an SDPA case
`FlashAttention` + `FlashAttentionGrad`; then `placesim simulate --pricing` on the one-H200 cluster
that `import topo` makes of the rig's nvidia-smi output, and each op's `time_ns`.

Usage:  tools/kernel_heldout.py PLACESIM [--cases JSONL] [--trace JSON.GZ] [--family F] [--json]
        (defaults: tests/data/calibration/h200_heldout_kernels_2026-12-04.{jsonl,json.gz})
"""
import argparse
import bisect
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile

D = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "calibration")
DS = {"bf16": 2, "f16": 2, "f32": 4}
FAMILIES = ("embedding", "reduce", "eltwise", "sdpa")


def case_key(c):
    """A case's identity: its keys and values as the rig's record_function name prints them."""
    return frozenset((k, str(v)) for k, v in c.items() if k not in ("median_s", "tflops", "error"))


def name_key(name):
    return frozenset(tuple(kv.split("=", 1)) for kv in name.split(","))


def measured_kernels(trace, keys):
    """{case name: (GPU us per call, {kernel role: us per call})} from the rig's Kineto trace."""
    ev = trace["traceEvents"]
    launch = {}
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
            launch[e["args"]["correlation"]] = e["ts"]
    gpu = sorted(((launch[e["args"]["correlation"]], e) for e in ev
                  if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")
                  and e.get("args", {}).get("correlation") in launch), key=lambda p: p[0])
    ts = [p[0] for p in gpu]
    out = {}
    for a in ev:
        if a.get("cat") != "user_annotation" or "kind=" not in a["name"] or \
                name_key(a["name"]) not in keys:
            continue
        lo, hi = bisect.bisect_left(ts, a["ts"]), bisect.bisect_right(ts, a["ts"] + a["dur"])
        per = {}
        for _, k in gpu[lo:hi]:
            if "kind=sdpa" in a["name"] and "CUDAFunctor_add" in k["name"]:
                continue
            per[k["name"]] = per.get(k["name"], 0.0) + k["dur"]
        reps = 5
        out[name_key(a["name"])] = (sum(per.values()) / reps, {n: v / reps for n, v in per.items()})
    return out


def op(name, typ, dtype, flops, rd, wr, shapes, outs, phase="forward"):
    return {"name": name, "type": typ, "phase": phase, "flops": flops, "bytes_read": rd,
            "bytes_written": wr, "dtype": dtype,
            "signature": {"op_type": typ, "input_shapes": shapes, "dtype": dtype},
            "outputs": [{"bytes": b, "shape": s, "dtype": t} for b, s, t in outs]}


def ops_of(c, key, gather_table):
    """The ops the built-in graphs make for one case (models/builder.cpp, models/gpt_model.cpp)."""
    k = c["kind"]
    if k == "embedding":
        dt, v, e, n = c["dtype"], c["vocab"], c["hidden"], c["tokens"]
        s = DS[dt]
        rd = (v if gather_table else n) * e * s + 4 * n  # the table, or the rows it gathers
        return [op(key + "#fwd", "Gather", dt, 0, rd, n * e * s, [[v, e], [n]],
                   [(n * e * s, [n, e], dt)]),
                op(key + "#bwd", "GatherGrad", dt, 0, n * e * s + 4 * n, n * e * s,
                   [[n, e], [n], [v, e]], [(n * e * s, [n, e], dt)], "backward")]
    if k == "reduce":
        dt, r, cols = c["dtype"], c["rows"], c["cols"]
        s = DS[dt]
        return [op(key + "#bwd", "BiasAddGrad", dt, r * cols, r * cols * s, cols * s, [[r, cols]],
                   [(cols * s, [cols], dt)], "backward")]
    if k == "eltwise":
        n, dt = c["numel"], c["dtype"]
        s = DS[dt]
        if c["op"] == "add":
            return [op(key + "#fwd", "Add", dt, n, 2 * n * s, n * s, [[n], [n]], [(n * s, [n], dt)])]
        if c["op"] == "dropout":
            return [op(key + "#fwd", "Dropout", dt, 2 * n, n * s, n * s + n, [[n]],
                       [(n * s, [n], dt), (n, [n], "bool")])]
        if c["op"] == "copy_t":
            return [op(key + "#fwd", "Transpose", dt, 0, n * s, n * s, [[1024, n // 1024]],
                       [(n * s, [n // 1024, 1024], dt)])]
        return [op(key + "#fwd", "Gelu", dt, 8 * n, n * s, n * s, [[n]], [(n * s, [n], dt)]),
                op(key + "#bwd", "GeluGrad", dt, 8 * n, 2 * n * s, n * s, [[n], [n]],
                   [(n * s, [n], dt)], "backward")]
    b, h, sq, d = c["batch"], c["heads"], c["seq"], c["head_dim"]
    pairs = sq * (sq + 1) // 2 if c.get("causal", True) else sq * sq
    f = 4.0 * d * b * h * pairs
    t = b * h * sq * d * 2
    lse = b * h * sq * 2
    shp = [b, h, sq, d]
    return [op(key + "#fwd", "FlashAttention", "bf16", f, 3 * t, t + lse, [shp] * 3,
               [(t, shp, "bf16"), (lse, [b, h, sq], "bf16")]),
            op(key + "#bwd", "FlashAttentionGrad", "bf16", 2.5 * f, 5 * t + lse, 3 * t,
               [shp] * 5 + [[b, h, sq]], [(t, shp, "bf16")] * 3, "backward")]


def predict(placesim, cases, cluster, gather_table):
    tmp = tempfile.mkdtemp(prefix="kheld")
    ops = []
    for i, c in enumerate(cases):
        ops += ops_of(c, "c%d" % i, gather_table)
    g = os.path.join(tmp, "g.json")
    with open(g, "w") as f:
        json.dump({"format": "placesim-graph", "version": 1, "name": "kernel-heldout",
                   "ops": ops}, f)
    p = os.path.join(tmp, "p.json")
    subprocess.run([placesim, "--quiet", "simulate", "--graph", g, "--cluster", cluster,
                    "--placement", "single-gpu", "--pricing", p], check=True,
                   stdout=subprocess.DEVNULL)
    pr = json.load(open(p))
    out = {}
    for o in pr["ops"]:
        key, part = o["op"].split("#")
        out.setdefault(key, {})[part] = (o["time_ns"] * 1e-3, o["rule"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("placesim")
    ap.add_argument("--cases", default=os.path.join(D, "h200_heldout_kernels_2026-12-04.jsonl"))
    ap.add_argument("--trace", default=os.path.join(D, "h200_heldout_kernels_2026-12-04.json.gz"))
    ap.add_argument("--cluster", help="cluster YAML (default: import topo of the rig's nvidia-smi)")
    ap.add_argument("--family", choices=FAMILIES)
    ap.add_argument("--json", action="store_true", help="one JSON object per case")
    ap.add_argument("--gather-reads-table", action="store_true",
                    help="the look-up reads the whole table, as the gpt builder wrote it before "
                         "session 26 (h-kheld): main's first result")
    a = ap.parse_args()
    cases = [json.loads(l) for l in open(a.cases) if l.strip()]
    cases = [c for c in cases if c["kind"] in FAMILIES and (not a.family or c["kind"] == a.family)]
    cluster = a.cluster
    if not cluster:
        cluster = os.path.join(tempfile.mkdtemp(prefix="kheld"), "h200.yaml")
        subprocess.run([a.placesim, "--quiet", "import", "topo", "--nvidia-smi",
                        os.path.join(D, "h200_nvidia-smi-topo.txt"), "--gpu-model",
                        "H200-SXM-141GB", "-o", cluster], check=True, stdout=subprocess.DEVNULL)
    with gzip.open(a.trace) as f:
        trace = json.load(f)
    meas = measured_kernels(trace, {case_key(c) for c in cases})
    pred = predict(a.placesim, cases, cluster, a.gather_reads_table)
    fam = {}
    for i, c in enumerate(cases):
        name = ",".join("%s=%s" % kv for kv in sorted(case_key(c)))
        if case_key(c) not in meas:
            sys.exit("kernel_heldout: %s: case %s has no record_function range" % (a.trace, name))
        m, kern = meas[case_key(c)]
        parts = pred["c%d" % i]
        p = sum(t for t, _ in parts.values())
        rules = "+".join(sorted({r for _, r in parts.values()}))
        err = 100.0 * (p / m - 1.0)
        fam.setdefault(c["kind"], []).append((err, m, p))
        if c["kind"] == "sdpa":  # the default backend (cuDNN here) is what the graphs model
            fam.setdefault("sdpa:" + c["backend"], []).append((err, m, p))
        elif c["kind"] == "eltwise":
            fam.setdefault("eltwise:" + c["op"], []).append((err, m, p))
        label = name.replace("kind=%s," % c["kind"], "")
        if a.json:
            print(json.dumps({"case": name, "measured_us": round(m, 2), "predicted_us": round(p, 2),
                              "error_pct": round(err, 1), "event_us": round(c["median_s"] * 1e6, 1),
                              "rules": rules}))
        else:
            print("%-9s %-62s meas %8.1f us  pred %8.1f us  %+7.1f %%  (event %7.1f)  %s" % (
                c["kind"], label, m, p, err, c["median_s"] * 1e6, rules))
    if a.json:
        return
    print()
    print("%-20s %5s %10s %10s %9s %9s %9s" % ("family", "cases", "meas us", "pred us", "total",
                                              "mean|e|", "median e"))
    for k in sorted(fam, key=lambda k: (FAMILIES.index(k.split(":")[0]), k)):
        r = fam[k]
        tm, tp = sum(x[1] for x in r), sum(x[2] for x in r)
        print("%-20s %5d %10.1f %10.1f %+8.1f%% %8.1f%% %+8.1f%%" % (
            k, len(r), tm, tp, 100 * (tp / tm - 1), statistics.mean(abs(x[0]) for x in r),
            statistics.median(x[0] for x in r)))


if __name__ == "__main__":
    main()
