#!/usr/bin/python3
"""Where the GPU is idle inside a traced training step, and whether the host was behind
(docs/validation.md, "The GPT-2 step's non-kernel time").

Usage:  tools/step_gaps.py TRACE.json[.gz] [--step N] [--top K] [--replay US|auto]

For each ProfilerStep#N of a Kineto trace (tools/train_rig.py --trace), the GPU activities
(kernels, memcpy, memset) launched inside the step are put in time order and every idle interval
of the GPU between the step's start and its last activity's end is charged to the phase whose
launch ended it:

  zero_grad   Optimizer.zero_grad on the main thread
  h2d         aten::to / aten::copy_ at the top of the main thread (the batch's copies and their
              cudaStreamSynchronize)
  forward     the other main-thread ops before the loss's backward (model forward, loss)
  backward    launches from the autograd engine's thread, per autograd node
  optimizer   Optimizer.step on the main thread
A gap is "host-bound" when the launch call of the activity after it began after the GPU had gone
idle (the GPU waited for the host), else "device" (launched in time; launch latency, dependencies).
The step's tail (last activity's end to the step's end: the profiling loop's synchronize and
prof.step) is printed apart: the unprofiled loop (tools/train_rig.py time_steps) has no such
synchronize between steps.

Per step: wall, GPU busy, head (step start to first activity), idle per phase (host-bound /
device), tail. Then, for --step (default: the last), the --top (default 12) longest gaps with the
host op (or autograd node) that launched the activity after them, and the host time of the phases
(main thread's top-level ops; autograd thread's nodes), with the optimizer's launches and runtime
calls counted.

--replay: each step replayed without the profiler's host cost. The host clock loses US
microseconds per framework op recorded before each launch (auto: 5.2 with input shapes, 2.3
without; docs/calibration.md, "The profiler's own cost", measured on the H200 rig's batch-1 GPT-2
steps), and every GPU activity, in its traced order and with its traced duration, starts at the
later of the previous activity's end and its launch call's (replayed) start plus the launch
latency (the median, over the activities that waited for the host, of kernel start minus launch
call start). Zero_grad is left out (in the unprofiled loop it runs while the GPU finishes the step
before) and the step starts at the batch's first H2D copy call, which waits for an idle GPU
(tools/train_rig.py copies pinned batches with non_blocking=False: cudaMemcpyAsync then
cudaStreamSynchronize, twice a step). Printed: the replayed step, GPU busy, idle host-bound per
phase. Replay 0 reproduces the traced step (less zero_grad and the tail).
"""
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cnn_trace_report import GPU, RUNTIME, load, steps_of  # noqa: E402

PHASES = ("zero_grad", "h2d", "forward", "backward", "optimizer", "other")


def top_level(ev, tid, s):
    """Top-level host events (cpu_op / user_annotation) of thread tid inside step s, in order."""
    ops = sorted((e for e in ev if e.get("cat") in ("cpu_op", "user_annotation") and
                  e.get("tid") == tid and s["ts"] < e["ts"] <= s["ts"] + s["dur"]),
                 key=lambda e: (e["ts"], -e["dur"]))
    top, end = [], -1.0
    for e in ops:
        if e["ts"] >= end:
            top.append(e)
            end = e["ts"] + e["dur"]
    return top


def containing(tops, ts):
    """The top-level event whose span holds ts (tops sorted, disjoint), else None."""
    lo, hi = 0, len(tops)
    while lo < hi:
        mid = (lo + hi) // 2
        if tops[mid]["ts"] <= ts:
            lo = mid + 1
        else:
            hi = mid
    if lo and ts <= tops[lo - 1]["ts"] + tops[lo - 1]["dur"]:
        return tops[lo - 1]
    return None


def phase_of(main_tid, e, top):
    if e.get("tid") != main_tid:
        return "backward"
    if top is None:
        return "other"
    n = top["name"]
    if n.startswith("Optimizer.zero_grad"):
        return "zero_grad"
    if n.startswith("Optimizer.step"):
        return "optimizer"
    if n in ("aten::to", "aten::copy_", "aten::_to_copy"):
        return "h2d"
    return "forward"


def analyse(ev, s, main_tid, threads):
    """(gaps, tops): gaps = [(idle us, phase, host-bound?, launcher name, at us into the step)]."""
    rt = {e["args"]["correlation"]: e for e in ev if e.get("cat") in RUNTIME and
          s["ts"] <= e["ts"] <= s["ts"] + s["dur"]}
    tops = {t: top_level(ev, t, s) for t in threads}
    acts = []
    for k in ev:
        if k.get("cat") in GPU:
            r = rt.get(k["args"].get("correlation"))
            if r is not None:
                acts.append((k, r))
    acts.sort(key=lambda a: a[0]["ts"])
    gaps = []
    prev_end = s["ts"]
    for k, r in acts:
        idle = k["ts"] - prev_end
        if idle > 0:
            top = containing(tops[r["tid"]], r["ts"]) if r["tid"] in tops else None
            name = top["name"] if top else r["name"]
            gaps.append((idle, phase_of(main_tid, r, top), r["ts"] >= prev_end, name,
                         prev_end - s["ts"]))
        prev_end = max(prev_end, k["ts"] + k["dur"])
    busy = sum(k["dur"] for k, _ in acts)
    tail = s["ts"] + s["dur"] - prev_end
    return gaps, tops, busy, tail, acts


def replay(ev, s, main_tid, threads, overhead_us):
    """(replayed step us, busy us, {phase: host-bound idle us}, latency us) of step s."""
    gaps, tops, busy, tail, acts = analyse(ev, s, main_tid, threads)
    ops = sorted(e["ts"] for e in ev if e.get("cat") == "cpu_op" and
                 s["ts"] <= e["ts"] <= s["ts"] + s["dur"])
    import bisect

    def host(t):  # replayed host clock of a traced time t
        return t - overhead_us * bisect.bisect_right(ops, t)
    lat, prev_end = [], s["ts"]
    for k, r in acts:
        if r["ts"] >= prev_end:
            lat.append(k["ts"] - r["ts"])
        prev_end = max(prev_end, k["ts"] + k["dur"])
    lat = sorted(lat)[len(lat) // 2] if lat else 0.0
    start = None
    end, idle = None, collections.defaultdict(float)
    for k, r in acts:
        top = containing(tops[r["tid"]], r["ts"]) if r["tid"] in tops else None
        ph = phase_of(main_tid, r, top)
        if ph == "zero_grad":
            continue
        go = host(r["ts"])
        if start is None:
            start = go
            end = go
        t = max(end, go + lat)
        if go + lat > end:
            idle[ph] += go + lat - end
        end = t + k["dur"]
    return end - start, busy, idle, lat


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__.split("\n\n")[1])
    path, step_sel, top_n, rep = args[0], None, 12, None
    i = 1
    while i < len(args):
        if args[i] == "--step" and i + 1 < len(args):
            step_sel = int(args[i + 1])
        elif args[i] == "--top" and i + 1 < len(args):
            top_n = int(args[i + 1])
        elif args[i] == "--replay" and i + 1 < len(args):
            rep = args[i + 1]
        else:
            sys.exit("%s: unknown argument %r (expected --step N, --top K or --replay US|auto)" %
                     (path, args[i]))
        i += 2
    ev = load(path)
    steps = steps_of(ev)
    if not steps:
        sys.exit("%s: no ProfilerStep#N annotations (record with tools/train_rig.py --trace)" % path)
    main_tid = steps[0]["tid"]
    threads = sorted({e.get("tid") for e in ev if e.get("cat") == "cpu_op"})
    if rep is not None:
        if rep == "auto":
            shapes = any("Input Dims" in e.get("args", {}) for e in ev if e.get("cat") == "cpu_op")
            ovh = 5.2 if shapes else 2.3
        else:
            try:
                ovh = float(rep)
            except ValueError:
                sys.exit("%s: --replay %r: expected microseconds per recorded op or auto" % (path, rep))
        print("replayed with %.1f us per recorded op taken out (ms):" % ovh)
        print("%-15s %7s %8s %7s %6s | %s" % ("step", "traced", "replayed", "busy", "lat us",
                                           " ".join("%9s" % p for p in PHASES if p != "zero_grad")))
        for s in steps:
            t, busy, idle, lat = replay(ev, s, main_tid, threads, ovh)
            print("%-15s %7.2f %8.2f %7.2f %6.1f | %s" % (
                s["name"], s["dur"] / 1e3, t / 1e3, busy / 1e3, lat,
                " ".join("%9.2f" % (idle[p] / 1e3) for p in PHASES if p != "zero_grad")))
        return
    print("%-15s %7s %7s %6s | %s | %6s %6s" % (
        "step (ms)", "wall", "busy", "head",
        " ".join("%-13s" % p for p in PHASES if p != "other"), "other", "tail"))
    print("%-15s %7s %7s %6s | %s |" % ("", "", "", "", " ".join(
        "%-13s" % "host/device" for p in PHASES if p != "other")))
    last = None
    for s in steps:
        gaps, tops, busy, tail, acts = analyse(ev, s, main_tid, threads)
        per = collections.defaultdict(float)
        head = gaps[0][0] if gaps and gaps[0][4] == 0 else 0.0
        for g in (gaps[1:] if head else gaps):
            per[(g[1], g[2])] += g[0]
        cells = " ".join("%6.2f/%-6.2f" % (per[(p, True)] / 1e3, per[(p, False)] / 1e3)
                         for p in PHASES if p != "other")
        print("%-15s %7.2f %7.2f %6.2f | %s | %6.2f %6.2f" % (
            s["name"], s["dur"] / 1e3, busy / 1e3, head / 1e3, cells,
            (per[("other", True)] + per[("other", False)]) / 1e3, tail / 1e3))
        if step_sel is None or s["name"] == "ProfilerStep#%d" % step_sel:
            last = (s, gaps, tops, acts)
    s, gaps, tops, acts = last
    print("\n%s: the %d longest GPU idle intervals (ms into the step, idle us, phase, "
          "host-bound?, launcher)" % (s["name"], top_n))
    for g in sorted(gaps, reverse=True)[:top_n]:
        print("  %8.2f %8.1f  %-9s %-5s %s" % (g[4] / 1e3, g[0], g[1], "host" if g[2] else "dev",
                                               g[3][:80]))
    print("\n%s: host time of the main thread's phases (ms) and the autograd thread's" % s["name"])
    ph = collections.defaultdict(lambda: [0.0, 0])
    for e in tops[main_tid]:
        p = phase_of(main_tid, e, e)
        ph[p][0] += e["dur"]
        ph[p][1] += 1
    for p in PHASES:
        if p in ph:
            print("  %-10s %8.2f ms in %d top-level ops" % (p, ph[p][0] / 1e3, ph[p][1]))
    for t in threads:
        if t != main_tid and tops[t]:
            b = tops[t]
            print("  autograd thread %s: %d nodes, %.2f ms busy, from %.2f to %.2f ms" % (
                t, len(b), sum(e["dur"] for e in b) / 1e3, (b[0]["ts"] - s["ts"]) / 1e3,
                (b[-1]["ts"] + b[-1]["dur"] - s["ts"]) / 1e3))
    opt = [e for e in tops[main_tid] if e["name"].startswith("Optimizer.step")]
    for o in opt:
        inside = [e for e in ev if e.get("tid") == main_tid and o["ts"] <= e["ts"] <= o["ts"] + o["dur"]]
        rts = collections.Counter(e["name"] for e in inside if e.get("cat") in RUNTIME)
        ops = collections.Counter(e["name"] for e in inside if e.get("cat") == "cpu_op")
        launched = [k for k, r in acts if o["ts"] <= r["ts"] <= o["ts"] + o["dur"] and r["tid"] == main_tid]
        first = min((k["ts"] for k in launched), default=o["ts"])
        print("  %s: %.2f ms host, first kernel %.2f ms after it began, %d GPU activities "
              "(%.2f ms); runtime calls %s; ops %s" % (
                  o["name"], o["dur"] / 1e3, (first - o["ts"]) / 1e3, len(launched),
                  sum(k["dur"] for k in launched) / 1e3,
                  ", ".join("%s %d" % kv for kv in rts.most_common(4)),
                  ", ".join("%s %d" % kv for kv in ops.most_common(5))))


if __name__ == "__main__":
    main()
