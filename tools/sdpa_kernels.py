#!/usr/bin/env python3
"""Per-kernel times of the kernel rig's scaled-dot-product-attention cases (tools/kernel_rig.py,
kind=sdpa): for each case (backend, sequence length, dropout) the median GPU time of each of its
kernels over the timed repetitions, grouped as forward (the fused forward kernel), backward (the
fused backward kernel), and aux (dO.O row sums, dQ conversion, Philox seed unpacking).

A kernel belongs to a case when it runs inside that case's GPU-side annotation (Kineto's
gpu_user_annotation, the record_function the rig wraps the timed repetitions in; warm-up calls
run outside it and are not counted).

With --fit, the dropout's extra time per kept pair as thread-instructions at the GPU's issue rate
(--issue-rate, thread-instructions/s: 33.5e12 for the H200, F32 67 TFLOP/s / 2), fitted on one
sequence length (--fit-seq, 1024) and checked on the others: the cost model's kCudnnSdpaDropout
and kFlashAttention2Dropout (docs/cost-model.md, "Dropout inside a fused attention kernel").

Usage:  tools/sdpa_kernels.py [TRACE.json.gz] [--json] [--fit [--fit-seq N] [--issue-rate R]]
        (default trace: tests/data/calibration/h200_kernels_2026-12-04.json.gz)
"""
import gzip
import json
import re
import statistics
import sys

DEFAULT = "tests/data/calibration/h200_kernels_2026-12-04.json.gz"


def role(name):
    if "sdpa_sm90_flash_fprop" in name or "flash_fwd_kernel" in name:
        return "fwd"
    if "sdpa_sm90_flash_bprop" in name or "flash_bwd_dq_dk_dv" in name:
        return "bwd"
    return "aux"


def cases(trace):
    ev = trace["traceEvents"]
    ann = [e for e in ev if e.get("cat") == "gpu_user_annotation" and "kind=sdpa" in e["name"]]
    kern = sorted((e for e in ev if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    out = []
    for a in sorted(ann, key=lambda e: e["ts"]):
        c = dict(kv.split("=") for kv in a["name"].split(","))
        t0, t1 = a["ts"], a["ts"] + a["dur"]
        ks = [k for k in kern if k["ts"] >= t0 and k["ts"] + k["dur"] <= t1 + 1e-3]
        per = {}
        for k in ks:
            per.setdefault(role(k["name"]), []).append(k["dur"])
        reps = len(per.get("fwd", []))
        row = {"backend": c["backend"], "seq": int(c["seq"]), "dropout": float(c["dropout"]),
               "batch": int(c["batch"]), "heads": int(c["heads"]), "head_dim": int(c["head_dim"]),
               "reps": reps}
        for r in ("fwd", "bwd"):
            row[r + "_us"] = round(statistics.median(per[r]), 2)
        row["aux_us"] = round(sum(per.get("aux", [])) / max(reps, 1), 2)
        fwd_names = {k["name"] for k in ks if role(k["name"]) == "fwd"}
        tile = re.search(r"Flash_fwd_kernel_traits<(\d+), (\d+), (\d+)", " ".join(fwd_names))
        row["fwd_tile"] = "%sx%s" % (tile.group(2), tile.group(3)) if tile else \
            re.search(r"knob_\d+_(\d+x\d+)x\d+", " ".join(fwd_names)).group(1)
        out.append(row)
    return out


def fit(rows, seq, issue):
    key = {(r["backend"], r["seq"], r["dropout"]): r for r in rows}
    kept = lambda r: r["batch"] * r["heads"] * r["seq"] * (r["seq"] + 1) / 2  # noqa: E731
    print("fitted at seq %d, issue rate %.4g/s; other lengths held out" % (seq, issue))
    for b in ("default", "flash"):
        for part in ("fwd", "bwd"):
            r0, r1 = key[(b, seq, 0.0)], key[(b, seq, 0.1)]
            instr = (r1[part + "_us"] - r0[part + "_us"]) * 1e-6 * issue / kept(r0)
            out = []
            for s in sorted({r["seq"] for r in rows} - {seq}):
                q0, q1 = key[(b, s, 0.0)], key[(b, s, 0.1)]
                extra = instr * kept(q0) / issue * 1e6
                meas = q1[part + "_us"] - q0[part + "_us"]
                pred = q0[part + "_us"] + extra
                out.append("seq %d: extra %.1f vs %.1f us (%+.0f %%), kernel %.1f vs %.1f (%+.1f %%)" % (
                    s, extra, meas, 100 * (extra / meas - 1), pred, q1[part + "_us"],
                    100 * (pred / q1[part + "_us"] - 1)))
            print("%-7s %s I = %5.2f | %s" % (b, part, instr, " | ".join(out)))


def main():
    argv = sys.argv[1:]
    opt = lambda name, d: float(argv[argv.index(name) + 1]) if name in argv else d  # noqa: E731
    args = [a for i, a in enumerate(argv)
            if not a.startswith("--") and (i == 0 or argv[i - 1] not in ("--fit-seq", "--issue-rate"))]
    rows = cases(json.load(gzip.open(args[0] if args else DEFAULT)))
    if "--fit" in argv:
        fit(rows, int(opt("--fit-seq", 1024)), opt("--issue-rate", 33.5e12))
        return
    if "--json" in argv:
        for r in rows:
            print(json.dumps(r))
        return
    key = {(r["backend"], r["seq"], r["dropout"]): r for r in rows}
    print("backend  seq  fwd_tile | fwd p=0  fwd p=0.1  extra | bwd p=0  bwd p=0.1  extra | "
          "extra per kept pair fwd/bwd (ps, b*h*s(s+1)/2)")
    for b in ("default", "flash"):
        for s in (512, 1024, 2048):
            r0, r1 = key[(b, s, 0.0)], key[(b, s, 0.1)]
            pairs = r0["batch"] * r0["heads"] * s * (s + 1) / 2
            df, db = r1["fwd_us"] - r0["fwd_us"], r1["bwd_us"] - r0["bwd_us"]
            print("%-7s %5d %s/%s | %7.1f %9.1f %6.1f | %7.1f %9.1f %6.1f | %6.2f / %6.2f" % (
                b, s, r0["fwd_tile"], r1["fwd_tile"], r0["fwd_us"], r1["fwd_us"], df,
                r0["bwd_us"], r1["bwd_us"], db, df * 1e6 / pairs, db * 1e6 / pairs))


if __name__ == "__main__":
    main()
