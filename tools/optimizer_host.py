#!/usr/bin/python3
"""The host side of each traced Optimizer.step (docs/validation.md, "The host side of the
optimizer step").

Usage:  tools/optimizer_host.py TRACE.json[.gz] ... [--profiler-us US|auto]

For every `Optimizer.step#...` span of a Kineto trace (tools/train_rig.py --trace) on its thread:
its host time; the Python before its first recorded op (the parameter loop of _init_group and
the grouping of tensors by device and dtype: the profiler records nothing there, so it costs the
profiler nothing); its top-level ops (the foreach or fused calls) with the ops recorded inside
each and the kernels each launched; the Python between them; the number of parameter tensors
(the longest tensor list an op's recorded input shapes show, else --params). Then the step
without the profiler: the host time less US per recorded op (auto: 5.2 us with input shapes,
2.3 without: docs/calibration.md, "The profiler's own cost", measured on the same rig), and the
same per parameter tensor, and that less --launch-us per kernel launched (what placesim's
engine charges apart, the GPU's launch_overhead). Last line: the median over every span given.
"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cnn_trace_report import RUNTIME, load  # noqa: E402


def tensors_in(e):
    """The longest tensor list among an op's recorded inputs (0 without shapes)."""
    dims = e.get("args", {}).get("Input Dims") or []
    return max((len(d) for d in dims if isinstance(d, list) and d and isinstance(d[0], list)),
               default=0)


def report(path, profiler_us, params_default, launch_us):
    ev = load(path)
    spans = sorted((e for e in ev if e.get("ph") == "X" and
                    e.get("cat") in ("cpu_op", "user_annotation") and
                    e.get("name", "").startswith("Optimizer.step#")), key=lambda e: e["ts"])
    shapes = any("Input Dims" in e.get("args", {}) for e in ev if e.get("cat") == "cpu_op")
    per_op = profiler_us if profiler_us is not None else (5.2 if shapes else 2.3)
    print(f"== {os.path.basename(path)}: {len(spans)} Optimizer.step spans, "
          f"{'with' if shapes else 'without'} shapes, {per_op} us per recorded op taken out")
    rows = []
    for o in spans:
        t0, t1, tid = o["ts"], o["ts"] + o["dur"], o["tid"]
        inner = [e for e in ev if e.get("ph") == "X" and e.get("tid") == tid and e is not o and
                 t0 <= e["ts"] and e["ts"] + e.get("dur", 0) <= t1]
        ops = sorted((e for e in inner if e.get("cat") == "cpu_op"), key=lambda e: (e["ts"], -e["dur"]))
        rt = [e for e in inner if e.get("cat") in RUNTIME and "aunch" in e["name"]]
        top, end = [], -1.0
        for e in ops:
            if e["ts"] >= end:
                top.append(e)
                end = e["ts"] + e["dur"]
        n = max((tensors_in(e) for e in top), default=0) or params_default
        prelude = (top[0]["ts"] - t0) if top else o["dur"]
        print(f"  {o['name']}: {o['dur'] / 1e3:.3f} ms host, {len(ops)} ops recorded, "
              f"{len(rt)} launches, {n} parameter tensors; Python before the first op "
              f"{prelude / 1e3:.3f} ms")
        gaps = 0.0
        for i, e in enumerate(top):
            sub = [x for x in ops if e["ts"] <= x["ts"] and x["ts"] + x["dur"] <= e["ts"] + e["dur"]]
            ln = [r for r in rt if e["ts"] <= r["ts"] <= e["ts"] + e["dur"]]
            kinds = collections.Counter(x["name"] for x in sub if x is not e)
            if i:
                gaps += e["ts"] - (top[i - 1]["ts"] + top[i - 1]["dur"])
            print(f"    +{(e['ts'] - t0) / 1e3:6.3f} ms {e['dur']:8.1f} us {e['name']:28s} "
                  f"{tensors_in(e):4d} tensors {len(ln):3d} launches  {dict(kinds)}")
        tail = t1 - (top[-1]["ts"] + top[-1]["dur"]) if top else 0.0
        unprof = o["dur"] - per_op * len(ops)
        print(f"    Python between ops {gaps:.1f} us, after the last {tail:.1f} us; without the "
              f"profiler {unprof / 1e3:.3f} ms = {unprof / n:.1f} us per parameter tensor, "
              f"Python before the first op {prelude / n:.1f} us per tensor")
        rest = (unprof - launch_us * len(rt)) / n
        print(f"    less {len(rt)} launches x {launch_us} us (the engine's launch_overhead): "
              f"{rest:.2f} us per parameter tensor")
        rows.append(rest)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--profiler-us", default="auto")
    ap.add_argument("--launch-us", type=float, default=6.0,
                    help="host time per launch placesim charges apart (H200: 6 us)")
    ap.add_argument("--params", type=int, default=0,
                    help="parameter tensors when the trace has no shapes")
    a = ap.parse_args()
    us = None if a.profiler_us == "auto" else float(a.profiler_us)
    rows = []
    for p in a.traces:
        rows += report(p, us, a.params, a.launch_us)
    rows.sort()
    if rows:
        print(f"all spans: {len(rows)}, per parameter tensor less launches: median "
              f"{rows[len(rows) // 2] if len(rows) % 2 else (rows[len(rows) // 2 - 1] + rows[len(rows) // 2]) / 2:.2f} us, "
              f"range {rows[0]:.2f}-{rows[-1]:.2f}")


if __name__ == "__main__":
    main()
