#!/usr/bin/env python3
"""GPU time per training step of a Kineto trace's convolution kernels and cuDNN layout transforms.

Usage: conv_kernel_times.py TRACE.json[.gz]

Steps are the `ProfilerStep#N` annotations (each from its start to the next one's; the last to its
own end + 50 ms). Every kernel that starts in a step is counted in one class by its name:
`transform` (cuDNN nchwToNhwc / nhwcToNchw), `conv` (cuDNN/CUTLASS/xmma implicit-GEMM, GEMM,
FFT and Winograd kernels and cuDNN's wgrad reduction: ResNet's 1x1 convolutions run as CUTLASS
GEMMs) or `other`. Prints one row per step and the median, in us (the all-in TF32 convolution
time docs/cost-model.md quotes for tf32_eff_max).
"""
import collections
import gzip
import json
import statistics
import sys

CONV = ("xmma", "cutlass", "scudnn", "reduce_wgrad", "implicit_convolve", "conv2d", "dgrad",
        "wgrad", "fprop", "gemm", "convolve", "splitK", "inograd", "fft")


def kind(name):
    if "nchwToNhwc" in name or "nhwcToNchw" in name:
        return "transform"
    return "conv" if any(s in name for s in CONV) else "other"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    try:
        with (gzip.open(path) if path.endswith(".gz") else open(path)) as f:
            events = json.load(f)["traceEvents"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"conv_kernel_times.py: {path}: {e}")
    steps = sorted((e for e in events if e.get("name", "").startswith("ProfilerStep#")
                    and e.get("cat") == "user_annotation"), key=lambda e: e["ts"])
    if not steps:
        sys.exit(f"conv_kernel_times.py: {path}: no ProfilerStep#N annotation")
    kernels = [e for e in events if e.get("cat") in ("kernel", "Kernel")]
    rows = []
    print("| step | conv us | transform us | conv + transform us |")
    print("|---|---|---|---|")
    for i, s in enumerate(steps):
        end = steps[i + 1]["ts"] if i + 1 < len(steps) else s["ts"] + s["dur"] + 50000
        t = collections.Counter()
        for k in kernels:
            if s["ts"] <= k["ts"] < end:
                t[kind(k["name"])] += k["dur"]
        rows.append((t["conv"], t["transform"]))
        print(f"| {s['name']} | {t['conv']:.1f} | {t['transform']:.1f} | "
              f"{t['conv'] + t['transform']:.1f} |")
    med = [statistics.median(r[j] for r in rows) for j in range(2)]
    print(f"| median | {med[0]:.1f} | {med[1]:.1f} | "
          f"{statistics.median(a + b for a, b in rows):.1f} |")


if __name__ == "__main__":
    main()
