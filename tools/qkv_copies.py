#!/usr/bin/env python3
"""Every copy kernel of a Kineto training trace with the ops that launched it, per profiled step.

Usage:  tools/qkv_copies.py TRACE.json[.gz]

Copy kernels: names with `copy`, `CatArrayBatchedCopy` or `Memcpy`. Each is joined to the aten op
that launched it (the kernel's `External id`) and that op's enclosing ops on its thread (autograd
node, aten::matmul, ...); prints, most time first, the count and microseconds per
`ProfilerStep#N`, the launcher chain, the input dims and strides, and the kernel. Used for the
fused-QKV question of docs/validation.md, "The fused QKV split is views" (session 29, issue 15).
"""
import collections
import gzip
import json
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    p = sys.argv[1]
    try:
        d = json.load(gzip.open(p) if p.endswith(".gz") else open(p))
    except (OSError, ValueError) as e:
        sys.exit("%s: not a readable Kineto JSON trace (%s)" % (p, e))
    ev = d["traceEvents"] if isinstance(d, dict) else d
    ops = [e for e in ev if e.get("cat") == "cpu_op"]
    by_ext = {}
    for e in ops:
        by_ext.setdefault(e["args"].get("External id"), e)
    by_tid = collections.defaultdict(list)
    for e in ops:
        by_tid[e["tid"]].append(e)
    for t in by_tid:
        by_tid[t].sort(key=lambda e: e["ts"])

    def enclosing(op):
        out = []
        for e in by_tid[op["tid"]]:
            if e["ts"] > op["ts"]:
                break
            if e is not op and e["ts"] + e["dur"] >= op["ts"] + op["dur"]:
                out.append(e["name"])
        return [n for n in out if not n.startswith("ProfilerStep")]

    steps = sum(1 for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    if not steps:
        sys.exit("%s: no ProfilerStep#N annotation" % p)
    agg = collections.defaultdict(lambda: [0, 0.0])
    for k in ev:
        n = k.get("name", "")
        if k.get("cat") not in ("kernel", "gpu_memcpy") or not ("copy" in n or "CatArray" in n or "Memcpy" in n):
            continue
        op = by_ext.get(k["args"].get("External id"))
        if op is None:
            key = ("?", "", "", n[:60])
        else:
            key = (" > ".join(enclosing(op)[-3:] + [op["name"]]), str(op["args"].get("Input Dims")),
                   str(op["args"].get("Input Strides")), n.split("<")[0][-40:])
        agg[key][0] += 1
        agg[key][1] += k["dur"]
    print("steps %d" % steps)
    for key, (c, t) in sorted(agg.items(), key=lambda x: -x[1][1]):
        print("%5.1f/step %8.1f us/step  %s" % (c / steps, t / steps, " | ".join(key)))


if __name__ == "__main__":
    main()
