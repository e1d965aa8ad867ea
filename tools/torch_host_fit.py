#!/usr/bin/env python3
"""The host half of a PyTorch training step's Kineto trace, per framework op (models/torch_host.cpp,
docs/cost-model.md "PyTorch eager's host work per framework op").

Usage:  tools/torch_host_fit.py TRACE.json[.gz] [--profiler-us 1.93] [--phases]

Per annotated step (ProfilerStep#N): every top-level aten op of the main thread and autograd node
of the autograd thread, its span less --profiler-us per recorded op inside it (the profiler's own
cost); then per name the median over the steps of the cost a call. Also per step: the wall time,
the summed op costs, the forward's Python between top-level ops (up to the loss) per op, the
autograd engine's time between nodes per node, the autocast weight cast nested in aten::conv2d,
and the Optimizer.step span. The profiler's cost is fitted as (median traced step - unprofiled
step) / recorded ops a step; 1.93 us for session 24's ResNet-50 AMP NHWC b64 trace (27.79 ms,
21.37 ms, 3333 ops).

--phases: per step only the host time of each pass, to compare two traces of the same graph (two
leases, two batches): forward = the main thread's top-level ops up to the loss, their costs plus
the Python between them; backward = the autograd thread's nodes, their costs plus the engine's
time between them (docs/validation.md, "Deep CNNs on the H200 held-out set").
"""
import argparse
import collections
import gzip
import json
import statistics


def load(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rt", encoding="utf-8") as f:
        return json.load(f)["traceEvents"]


def top_level(es):
    es = sorted(es, key=lambda e: (e["ts"], -e["dur"]))
    top, end = [], -1
    for e in es:
        if e["ts"] >= end:
            top.append(e)
            end = e["ts"] + e["dur"]
    return es, top


def inside(es, a, b):
    return [x for x in es if a <= x["ts"] < b]


def step_report(ev, s, prof, per_name):
    t0, t1 = s["ts"], s["ts"] + s["dur"]
    cpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "cpu_op" and t0 <= e["ts"] < t1]
    by_tid = collections.defaultdict(list)
    for e in cpu:
        by_tid[e["tid"]].append(e)
    total, fwd_gap, bwd_gap, casts = 0.0, None, None, []
    for tid, es in by_tid.items():
        es, top = top_level(es)
        calls = collections.defaultdict(list)
        for e in top:
            cost = e["dur"] - len(inside(es, e["ts"], e["ts"] + e["dur"])) * prof
            calls[e["name"].replace("autograd::engine::evaluate_function: ", "bwd:")].append(cost)
            total += cost
            if e["name"] == "aten::conv2d":
                kids = [k for k in inside(es, e["ts"], e["ts"] + e["dur"]) if k["name"] == "aten::to"]
                casts.append(sum(k["dur"] - len(inside(es, k["ts"], k["ts"] + k["dur"])) * prof
                                 for k in kids))
        for name, c in calls.items():
            per_name[name].append(sum(c) / len(c))
        span = lambda ops: ops[-1]["ts"] + ops[-1]["dur"] - ops[0]["ts"]
        loss = next((i for i, e in enumerate(top) if "cross_entropy" in e["name"]), None)
        if tid == s["tid"] and loss is not None:
            fw = top[:loss + 1]
            fwd_gap = (span(fw) - sum(e["dur"] for e in fw)) / len(fw), len(fw)
        elif tid != s["tid"] and top:
            bwd_gap = (span(top) - sum(e["dur"] for e in top)) / len(top), len(top)
    opt = [e for e in ev if e.get("ph") == "X" and e.get("name", "").startswith("Optimizer.step")
           and t0 <= e["ts"] < t1]
    return s["dur"] / 1e3, total / 1e3, fwd_gap, bwd_gap, casts, sum(e["dur"] for e in opt) / 1e3


def pass_host(es, prof, upto_loss):
    """(host ms, top-level ops) of one thread's ops: their costs plus the time between them."""
    es, top = top_level(es)
    if upto_loss:
        loss = next((i for i, e in enumerate(top) if "cross_entropy" in e["name"]), None)
        top = top[:loss + 1] if loss is not None else []
    if not top:
        return 0.0, 0
    span = top[-1]["ts"] + top[-1]["dur"] - top[0]["ts"]
    cost = sum(e["dur"] - len(inside(es, e["ts"], e["ts"] + e["dur"])) * prof for e in top)
    return (cost + span - sum(e["dur"] for e in top)) / 1e3, len(top)


def phases(ev, steps, prof):
    print("step wall ms | forward host ms (ops) | backward host ms (nodes)")
    for s in steps:
        t0, t1 = s["ts"], s["ts"] + s["dur"]
        cpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "cpu_op" and t0 <= e["ts"] < t1]
        fwd = pass_host([e for e in cpu if e["tid"] == s["tid"]], prof, True)
        bwd = pass_host([e for e in cpu if e["tid"] != s["tid"]], prof, False)
        print("%s %.2f | %.2f (%d) | %.2f (%d)" % ((s["name"], s["dur"] / 1e3) + fwd + bwd))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--profiler-us", type=float, default=1.93)
    ap.add_argument("--phases", action="store_true", help="forward and backward host a step only")
    a = ap.parse_args()
    ev = load(a.trace)
    steps = sorted([e for e in ev if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                    and e.get("name", "").startswith("ProfilerStep#")], key=lambda e: e["ts"])
    if a.phases:
        return phases(ev, steps, a.profiler_us)
    per_name = collections.defaultdict(list)
    print("step wall ms | op costs ms | fwd Python us/op (ops) | bwd engine us/node (nodes) | "
          "conv2d weight cast us | Optimizer.step ms")
    for s in steps:
        wall, tot, fg, bg, casts, opt = step_report(ev, s, a.profiler_us, per_name)
        print("%s %.2f | %.2f | %s | %s | %s | %.2f" % (
            s["name"], wall, tot, "%.1f (%d)" % fg if fg else "-", "%.1f (%d)" % bg if bg else "-",
            "%.1f" % statistics.mean(casts) if casts else "-", opt))
    print("per call, median over the steps (us): name, median, each step")
    for name, v in sorted(per_name.items(), key=lambda x: -statistics.median(x[1])):
        print("  %-55s %7.1f  (%s)" % (name[:55], statistics.median(v), " ".join("%.1f" % x for x in v)))


if __name__ == "__main__":
    main()
