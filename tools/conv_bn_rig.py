#!/usr/bin/env python3
"""Time convolutions and BatchNorms the way PyTorch eager runs them on this machine's GPU, at shapes
that are not ResNet-50's (docs/validation.md, "Held-out rig run, 2026-12-04 evening", h-r50h200):

- F32 convolutions with TF32 off (cuDNN's CUDA-core kernels), and f16 ones in NCHW and NHWC:
  forward, input gradient and weight gradient separately (aten::convolution_backward with one
  output mask bit), cudnn.benchmark off as in tools/train_rig.py;
- depthwise and grouped convolutions (--set depthwise): MobileNetV2's, MobileNetV3-Large's and
  EfficientNet-B0's depthwise shapes at the zoo's batch 512 (3x3 and 5x5, stride 1 and 2) and
  ResNeXt-50 32x4d's first grouped 3x3, f16 NHWC (cuDNN always: use_cudnn_depthwise), f16 NCHW
  and F32 NCHW (ATen's conv_depthwise2d), each role apart (docs/validation.md, "Channels-last
  depthwise convolutions: what runs, what was found", h-dwconv);
- BatchNorm training forward and backward: F32 NCHW, f16 NCHW, f16 NHWC (channels_last);
- the host's dispatch cost of small ops (a one-element add, relu, a small conv, a batch_norm)
  called back to back from Python, per call.

Each GPU case is timed with CUDA events (median of --reps after --warmup, whole op: every kernel
it launches) and runs once more under record_function(CASE) in a Kineto trace (OUT/convbn.json.gz)
that names the kernels cuDNN chose. One JSON line per case: OUT/convbn.jsonl.
Usage:  tools/conv_bn_rig.py --out DIR [--quick] [--set all|depthwise] [--list]
"""
import argparse
import gzip
import json
import os
import shutil
import time

import torch
import torch.nn.functional as F

# (batch, C, H, W, K, R, stride): VGG/ResNet-18/34-like and off-grid channel counts; none is a
# ResNet-50 layer at the batch sizes the rig's ResNet-50 steps ran.
CONVS = [(32, 64, 56, 56, 64, 3, 1), (32, 128, 28, 28, 128, 3, 1), (32, 256, 14, 14, 256, 3, 1),
         (32, 512, 7, 7, 512, 3, 1), (16, 128, 112, 112, 128, 3, 1), (32, 128, 56, 56, 128, 3, 2),
         (32, 96, 56, 56, 192, 1, 1), (96, 384, 28, 28, 96, 1, 1), (48, 768, 14, 14, 1536, 1, 1),
         (32, 3, 224, 224, 64, 7, 2)]
# (batch, C, H, W, R, stride, groups) with K = C: the depthwise layers (groups = C) of the H200 zoo's
# channels-last networks at its batch 512 (torchvision mobilenet_v2 features.1-17, mobilenet_v3_large,
# efficientnet_b0: input of the depthwise convolution, 224 px images) and ResNeXt-50 32x4d's
# layer1 grouped 3x3 (32 groups of 4 channels).
GROUPED = [(512, 32, 112, 112, 3, 1, 32), (512, 96, 112, 112, 3, 2, 96), (512, 144, 56, 56, 3, 1, 144),
           (512, 144, 56, 56, 3, 2, 144), (512, 192, 28, 28, 3, 1, 192), (512, 384, 14, 14, 3, 1, 384),
           (512, 576, 14, 14, 3, 2, 576), (512, 960, 7, 7, 3, 1, 960), (512, 72, 56, 56, 5, 2, 72),
           (512, 120, 28, 28, 5, 1, 120), (512, 672, 14, 14, 5, 1, 672), (512, 1152, 7, 7, 5, 1, 1152),
           (384, 128, 56, 56, 3, 1, 32)]
BNS = [(32, 64, 112, 112), (96, 96, 56, 56), (48, 512, 28, 28), (160, 1024, 14, 14),
       (100, 1536, 7, 7)]


def conv_cases(quick):
    shapes = CONVS[:2] if quick else CONVS
    for dt, cl in (("f32", False), ("f16", False), ("f16", True)):
        for n, c, h, w, k, r, s in shapes:
            for role in ("fwd", "dgrad", "wgrad"):
                yield {"kind": "conv", "dtype": dt, "channels_last": cl, "n": n, "c": c, "h": h,
                       "w": w, "k": k, "r": r, "stride": s, "role": role}


def grouped_cases(quick):
    shapes = GROUPED[:2] if quick else GROUPED
    for dt, cl in (("f16", True), ("f16", False), ("f32", False)):
        for n, c, h, w, r, s, g in shapes:
            for role in ("fwd", "dgrad", "wgrad"):
                yield {"kind": "conv", "dtype": dt, "channels_last": cl, "n": n, "c": c, "h": h,
                       "w": w, "k": c, "r": r, "stride": s, "groups": g, "role": role}


def bn_cases(quick):
    shapes = BNS[:1] if quick else BNS
    for dt, cl in (("f32", False), ("f16", False), ("f16", True)):
        for shp in shapes:
            for role in ("fwd", "bwd"):
                yield {"kind": "bn", "dtype": dt, "channels_last": cl, "shape": list(shp),
                       "role": role}


def make(case, dev):
    dt = torch.float32 if case["dtype"] == "f32" else torch.float16
    fmt = torch.channels_last if case["channels_last"] else torch.contiguous_format
    if case["kind"] == "conv":
        n, c, h, w, k, r, s = (case[x] for x in ("n", "c", "h", "w", "k", "r", "stride"))
        g = case.get("groups", 1)
        pad = (r - 1) // 2
        x = torch.randn(n, c, h, w, device=dev, dtype=dt).to(memory_format=fmt)
        wt = torch.randn(k, c // g, r, r, device=dev, dtype=dt).to(memory_format=fmt) * 0.05
        y = F.conv2d(x, wt, stride=s, padding=pad, groups=g)
        gy = torch.randn_like(y)
        p, q = y.shape[2], y.shape[3]
        flops = 2.0 * n * k * p * q * (c // g) * r * r
        role = case["role"]
        if role == "fwd":
            return (lambda: F.conv2d(x, wt, stride=s, padding=pad, groups=g)), flops, 0
        mask = [role == "dgrad", role == "wgrad", False]
        return (lambda: torch.ops.aten.convolution_backward(
            gy, x, wt, None, [s, s], [pad, pad], [1, 1], False, [0, 0], g, mask)), flops, 0
    shp = case["shape"]
    x = torch.randn(*shp, device=dev, dtype=dt).to(memory_format=fmt)
    wb = torch.ones(shp[1], device=dev), torch.zeros(shp[1], device=dev)
    rm, rv = torch.zeros(shp[1], device=dev), torch.ones(shp[1], device=dev)
    elems = x.numel()
    if case["role"] == "fwd":
        return (lambda: F.batch_norm(x, rm, rv, wb[0], wb[1], True, 0.1, 1e-5)), 0, elems
    xg = x.detach().requires_grad_(True)
    yy = F.batch_norm(xg, rm, rv, wb[0], wb[1], True, 0.1, 1e-5)
    gy = torch.randn_like(yy)
    return (lambda: torch.autograd.grad(yy, xg, gy, retain_graph=True)), 0, elems


def time_case(fn, reps, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
    ev[0].record()
    for i in range(reps):
        fn()
        ev[i + 1].record()
    torch.cuda.synchronize()
    t = sorted(ev[i].elapsed_time(ev[i + 1]) / 1e3 for i in range(reps))
    return t[reps // 2]


def host_cases(dev, n):
    """Per-call host time of small ops called back to back (GPU work negligible)."""
    a = torch.ones(1, device=dev)
    xs = torch.randn(1, 8, 8, 8, device=dev)
    ws = torch.randn(8, 8, 3, 3, device=dev)
    rm, rv = torch.zeros(8, device=dev), torch.ones(8, device=dev)
    out = []
    for name, fn in (("add_", lambda: a.add_(1.0)), ("relu", lambda: F.relu(a)),
                     ("conv2d_small", lambda: F.conv2d(xs, ws, padding=1)),
                     ("batch_norm_small",
                      lambda: F.batch_norm(xs, rm, rv, None, None, True, 0.1, 1e-5))):
        for _ in range(200):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        out.append({"kind": "host", "op": name, "calls": n, "us_per_call": (t1 - t0) / n * 1e6})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="output folder (required unless --list)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--set", choices=["all", "depthwise"], default="all",
                    help="depthwise: only the depthwise/grouped cases (no host or BatchNorm cases)")
    ap.add_argument("--list", action="store_true", help="print the cases, one JSON line each; no GPU")
    a = ap.parse_args()
    if a.set == "depthwise":
        cases = list(grouped_cases(a.quick))
    else:
        cases = list(conv_cases(a.quick)) + list(grouped_cases(a.quick)) + list(bn_cases(a.quick))
    if a.list:
        for c in cases:
            print(json.dumps(c, sort_keys=True))
        return
    if not a.out:
        ap.error("--out is required unless --list")
    os.makedirs(a.out, exist_ok=True)
    dev = torch.device("cuda:0")
    # The zoo's steps ran under cudnn.benchmark (h200_zoo_2026-12-04_results.jsonl:
    # "cudnn_benchmark": true): the depthwise set takes the algorithms it would take.
    torch.backends.cudnn.benchmark = a.set == "depthwise"
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    meta = {"torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "gpu": torch.cuda.get_device_name(dev),
            "cudnn_benchmark": torch.backends.cudnn.benchmark}
    rows = []
    with open(os.path.join(a.out, "convbn.jsonl"), "w") as f:
        for r in host_cases(dev, 2000 if a.quick else 20000) if a.set == "all" else []:
            r.update(meta)
            f.write(json.dumps(r, sort_keys=True) + "\n")
            print(r, flush=True)
        for c in cases:
            fn, flops, elems = make(c, dev)
            t = time_case(fn, a.reps, a.warmup)
            c.update(meta, median_s=t)
            if flops:
                c["tflops"] = flops / t / 1e12
                c["flops"] = flops
            if elems:
                c["elements"] = elems
                c["gb_per_s_per_elem_byte"] = elems * (4 if c["dtype"] == "f32" else 2) / t / 1e9
            rows.append((c, fn))
            f.write(json.dumps(c, sort_keys=True) + "\n")
            print(json.dumps(c, sort_keys=True), flush=True)
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for c, fn in rows:
            name = "%s_%s_%s_%s" % (c["kind"], c["dtype"], "nhwc" if c["channels_last"] else "nchw",
                                   c["role"])
            shp = c.get("shape") or [c["n"], c["c"], c["h"], c["w"], c["k"], c["r"], c["stride"],
                                     c.get("groups", 1)]
            with torch.profiler.record_function(name + "_" + "x".join(map(str, shp))):
                fn()
            torch.cuda.synchronize()
    path = os.path.join(a.out, "convbn.json")
    prof.export_chrome_trace(path)
    with open(path, "rb") as fi, gzip.open(path + ".gz", "wb", compresslevel=6) as g:
        shutil.copyfileobj(fi, g)
    os.remove(path)


if __name__ == "__main__":
    main()
