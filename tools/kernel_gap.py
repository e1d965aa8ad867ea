#!/usr/bin/python3
"""The GPU's own idle between two dependent kernels on one stream, from Kineto traces
(docs/validation.md, "The device-side gap between queued kernels on one stream").

Usage:  tools/kernel_gap.py [--margin US] TRACE.json[.gz] ...

For every pair of consecutive GPU activities (kernel, memset, memcpy) on one CUDA stream where the
second's launch call (cudaLaunchKernel / cuLaunchKernelEx / cudaMemsetAsync ..., matched by the
Kineto correlation id) *ended* at least MARGIN us (default 5) before the first activity ended, the
second was already queued on the device when the first finished: the host cannot have caused the
idle between them. gap = second's start − first's end. Printed per trace: pairs, the gap's
quantiles, and the same split by the first kernel's duration (short < 10 us <= medium < 100 us <=
long) and by kind of the pair (kernel→kernel, any memset/memcpy). Standard library only.
"""
import collections
import gzip
import json
import sys

GPU = ("kernel", "gpu_memcpy", "gpu_memset")
RUNTIME = ("cuda_runtime", "cuda_driver")


def load(path):
    """(trace events, GPU name from Kineto's deviceProperties or '?')."""
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        d = json.load(f)
    if not isinstance(d, dict):
        return d, "?"
    props = d.get("deviceProperties") or [{}]
    return d["traceEvents"], str(props[0].get("name", "?"))


def pairs(events, margin):
    """(gap us, first duration us, pair kind, first name) for every queued consecutive pair."""
    launch_end = {}
    for e in events:
        if e.get("cat") in RUNTIME and e.get("ph") == "X" and "correlation" in e.get("args", {}):
            launch_end[e["args"]["correlation"]] = e["ts"] + e.get("dur", 0)
    streams = collections.defaultdict(list)
    for e in events:
        if e.get("cat") in GPU and e.get("ph") == "X":
            a = e.get("args", {})
            streams[(a.get("device"), a.get("stream"))].append(e)
    out = []
    for acts in streams.values():
        acts.sort(key=lambda e: e["ts"])
        for p, n in zip(acts, acts[1:]):
            pend = p["ts"] + p["dur"]
            le = launch_end.get(n["args"].get("correlation"))
            if le is None or le > pend - margin:
                continue
            kind = "kernel>kernel" if p["cat"] == n["cat"] == "kernel" else "with memset/memcpy"
            out.append((n["ts"] - pend, p["dur"], kind, p["name"]))
    return out


def q(xs, f):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(f * len(xs)))]


def line(label, gs):
    if not gs:
        return "  %-22s %6d" % (label, 0)
    return "  %-22s %6d  p10 %5.2f  p25 %5.2f  median %5.2f  p75 %5.2f  p90 %5.2f  mean %5.2f us" % (
        label, len(gs), q(gs, .1), q(gs, .25), q(gs, .5), q(gs, .75), q(gs, .9), sum(gs) / len(gs))


def report(path, margin):
    ev, gpu = load(path)
    ps = pairs(ev, margin)
    print("%s (%s): queued consecutive pairs (launch ended >= %.1f us before the previous end)" %
          (path.split("/")[-1], gpu, margin))
    print(line("all", [g for g, _, _, _ in ps]))
    for k in ("kernel>kernel", "with memset/memcpy"):
        print(line(k, [g for g, _, kk, _ in ps if kk == k]))
    kk = [(g, d) for g, d, k, _ in ps if k == "kernel>kernel"]
    print(line("k>k, first < 10 us", [g for g, d in kk if d < 10]))
    print(line("k>k, first 10-100 us", [g for g, d in kk if 10 <= d < 100]))
    print(line("k>k, first >= 100 us", [g for g, d in kk if d >= 100]))


def main(argv):
    margin = 5.0
    if len(argv) > 2 and argv[1] == "--margin":
        margin = float(argv[2])
        argv = argv[2:]
    if len(argv) < 2:
        print(__doc__)
        return 2
    for p in argv[1:]:
        report(p, margin)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
