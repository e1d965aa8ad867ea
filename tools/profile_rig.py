#!/usr/bin/python3
"""Profile this machine for placesim: microbenchmarks and a real model's training steps under
torch.profiler, on every device that exists (the CPU always, each CUDA GPU when there is one).

Writes into --out:
  traces/<device>_<bench>.json     Chrome traces from torch.profiler (Kineto on CUDA builds; the
                                    bare-list dialect on Debian's CPU-only torch 1.13)
  model.onnx                        the real model (for `placesim import onnx` / models::load_graph)
  manifest.json                     {"format": "placesim-rig-manifest", "ops": [...], "model": {...}}

The manifest's "ops" rows come from prof.key_averages(group_by_input_shape=True), because the
1.13 export carries no shapes: name, input_shapes, dtype, count, mean_us (CUDA time on a GPU; on
the CPU the median of the individual calls' times). `placesim calibrate --profile manifest.json --device-model cpu0 -o cal.yaml`
fits a device from them; "model" holds the measured step times to compare the prediction with.

Usage:  /usr/bin/python3 tools/profile_rig.py --out rig/ [--quick] [--steps 5] [--batch 8]
                                             [--model resnet18|lenet5|transformer] [--threads N] [--image PX]
                                             [--devices cpu,cuda:0] [--host-batch B] [--hot]
"""
import argparse
import json
import os
import platform
import sys
import time

import torch

DTYPE_NAMES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64"}


def devices():
    out = ["cpu"]
    if torch.cuda.is_available():
        out += ["cuda:%d" % i for i in range(torch.cuda.device_count())]
    return out


def sync(dev):
    if dev.startswith("cuda"):
        torch.cuda.synchronize(dev)


# CPU convolutions (batch, C in, C out, H=W, kernel; stride 1, same padding, so the calibration's
# stride-1 FLOP count is exact) outside the square 16-256-channel set: few input channels (LeNet's
# 1 and 6, an RGB stem's 3), where oneDNN's direct kernels fill few of a vector's lanes and a call
# runs at a fraction of the large-channel rate; and 512 channels on 2x2, where the 9.4 MB of
# weights, not the FLOPs, set the time (ResNet-18's last stage at 64 px).
# Input channels of an image (grey, RGB): a convolution on them is a network's first layer.
IMAGE_CHANNELS = (1, 3)
CPU_CONVS = [(32, 1, 6, 28, 5), (32, 6, 16, 14, 5), (8, 3, 64, 32, 7), (8, 512, 512, 2, 3),
             (8, 256, 512, 4, 3)]


def benches(dev, quick):
    """(name, callable) pairs; each callable runs one op on tensors made once."""
    sizes = [64, 128, 256, 384, 512] if quick else [32, 64, 96, 128, 192, 256, 384, 512, 768, 1024]
    out = []
    for n in sizes:
        a = torch.randn(n, n, device=dev)
        b = torch.randn(n, n, device=dev)
        out.append(("gemm_%d" % n, lambda a=a, b=b: torch.mm(a, b)))
    for m, k, n in ([(32, 512, 512), (128, 1024, 256), (8, 2048, 2048)] if quick else
                    [(32, 512, 512), (128, 1024, 256), (8, 2048, 2048), (256, 256, 1024), (64, 4096, 1024)]):
        a = torch.randn(m, k, device=dev)
        b = torch.randn(k, n, device=dev)
        out.append(("gemm_%dx%dx%d" % (m, k, n), lambda a=a, b=b: torch.mm(a, b)))
    if not dev.startswith("cuda"):
        # A CPU GEMM's rate depends on its shape, not only its FLOPs: OpenBLAS packs A and B and
        # writes C once per K-panel, so small K (an attention head's 16, a d-64 linear layer) or
        # small M/N spend most of the call moving operands. A grid over M, K and N lets the fit
        # separate the FLOP term from the per-element terms (calibration/kernel_fit.cpp).
        for m in (64, 512, 2048):
            for k in (16, 64, 256):
                for n in (64, 256):
                    a = torch.randn(m, k, device=dev)
                    b = torch.randn(k, n, device=dev)
                    out.append(("gemm_%dx%dx%d" % (m, k, n), lambda a=a, b=b: torch.mm(a, b)))
    convs = [(4, 16, 32, 3), (4, 32, 16, 3), (8, 64, 16, 3), (8, 128, 8, 3), (8, 64, 16, 1), (8, 256, 4, 3)]
    if not quick:
        convs += [(8, 64, 32, 3), (8, 128, 16, 3), (8, 256, 8, 3), (8, 512, 4, 3), (16, 64, 16, 1)]
    if dev.startswith("cuda"):
        # ResNet stage shapes at batch 64, 224 px: a GPU's convolution rate keeps rising far past the
        # small shapes above (H200: 35 TFLOP/s fitted on them, ~110 TFLOP/s measured in ResNet-18's
        # training step), and a per-class fit does not extrapolate that.
        convs += [(64, 64, 56, 3), (64, 128, 28, 3), (64, 256, 14, 3), (64, 512, 7, 3), (64, 256, 14, 1)]
    convs = [(b, c, c, hw, k) for b, c, hw, k in convs]
    if not dev.startswith("cuda"):
        convs += CPU_CONVS
    for batch, c, cout, hw, k in convs:
        x = torch.randn(batch, c, hw, hw, device=dev)
        conv = torch.nn.Conv2d(c, cout, k, padding=k // 2).to(dev)
        out.append(("conv_%d_%d_%d_%d_%d" % (batch, c, cout, hw, k), lambda x=x, conv=conv: conv(x)))
    for hidden in ([128, 256] if quick else [128, 256, 512]):
        cell = torch.nn.LSTMCell(hidden, hidden).to(dev)
        x = torch.randn(16, hidden, device=dev)
        h = (torch.randn(16, hidden, device=dev), torch.randn(16, hidden, device=dev))
        out.append(("lstm_cell_%d" % hidden, lambda cell=cell, x=x, h=h: cell(x, h)))
    for n in ([1 << 14, 1 << 18, 1 << 20] if quick else [1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22]):
        x = torch.randn(n, device=dev)
        y = torch.randn(n, device=dev)
        out.append(("add_%d" % n, lambda x=x, y=y: torch.add(x, y)))
        out.append(("mul_%d" % n, lambda x=x, y=y: torch.mul(x, y)))
        out.append(("relu_%d" % n, lambda x=x: torch.relu(x)))
        out.append(("sum_%d" % n, lambda x=x: torch.sum(x)))
        xs = x.view(-1, 1024) if n >= 1024 else x.view(1, -1)
        out.append(("softmax_%d" % n, lambda xs=xs: torch.softmax(xs, dim=-1)))
    # Training-mode batch norm and max pooling: every ResNet block runs them, and without a sample
    # the calibration falls back to the roofline for their class.
    for batch, c, hw in ([(8, 64, 16), (8, 128, 8), (8, 64, 32)] if quick else
                         [(8, 64, 16), (8, 128, 8), (8, 64, 32), (8, 256, 8), (16, 64, 32)]):
        x = torch.randn(batch, c, hw, hw, device=dev)
        bn = torch.nn.BatchNorm2d(c).to(dev).train()
        out.append(("batch_norm_%d_%d_%d" % (batch, c, hw), lambda x=x, bn=bn: bn(x)))
        out.append(("max_pool_%d_%d_%d" % (batch, c, hw), max_pool(x, 3, 2, 1)))
    # 2x2 windows (LeNet's, VGG's) on shapes of their own: the profiler records no kernel size,
    # so a row is told apart by its input shape (POOL_WINDOWS), and a fit on 3x3 windows alone
    # cannot tell the window's comparisons from the bytes.
    for batch, c, hw in POOL2_SHAPES:
        x = torch.randn(batch, c, hw, hw, device=dev)
        out.append(("max_pool2_%d_%d_%d" % (batch, c, hw), max_pool(x, 2, 2, 0)))
    out += transformer_benches(dev)
    if dev.startswith("cuda"):
        for n in [1 << 16, 1 << 20, 1 << 24]:
            host = torch.randn(n).pin_memory()
            d = torch.randn(n, device=dev)
            out.append(("h2d_%d" % n, lambda host=host, dev=dev: host.to(dev, non_blocking=True)))
            out.append(("d2h_%d" % n, lambda d=d: d.to("cpu")))
            if torch.cuda.device_count() > 1:
                other = "cuda:1" if dev != "cuda:1" else "cuda:0"
                out.append(("peer_%d" % n, lambda d=d, other=other: d.to(other)))
    return out


# Max-pool windows by input shape: (kernel, stride, padding) of each pooling microbenchmark,
# written into its manifest rows (collect), since torch's shape record leaves the int arguments
# empty. Every shape has one window.
POOL_WINDOWS = {}
# Inputs of the 2x2/2 pools (LeNet-5's two at batch 32, one 64-channel map): none is a 3x3 one's.
POOL2_SHAPES = [(32, 6, 28), (32, 16, 10), (16, 64, 16)]


def max_pool(x, k, s, p):
    """A max pool of x with a k x k window, stride s, padding p, its window in POOL_WINDOWS."""
    key = tuple(x.shape)
    if POOL_WINDOWS.setdefault(key, (k, s, p)) != (k, s, p):
        raise SystemExit("profile_rig.py: two pool windows on input %s" % (list(key),))
    return lambda: torch.nn.functional.max_pool2d(x, k, s, p)


# Token counts (batch x sequence) and widths of a small transformer encoder (d 64, 4 heads, feed-forward
# 256, vocabulary 500, as TransformerEncoderLM): the ops it runs that the CNN shapes above lack.
TOKENS = [128, 512, 2048]


def transformer_benches(dev):
    """Forward ops of an encoder layer: linear layers with bias (addmm), attention's batched matmuls,
    layer norm, dropout (training mode: a Bernoulli mask and a multiply), embedding, log-softmax."""
    out = []
    F = torch.nn.functional
    for n in TOKENS:
        for k, m in [(64, 192), (64, 256), (256, 64), (64, 500)]:
            x = torch.randn(n, k, device=dev)
            lin = torch.nn.Linear(k, m).to(dev)
            out.append(("linear_%d_%d_%d" % (n, k, m), lambda x=x, lin=lin: lin(x)))
        seqs = n // 64 * 4   # (batch x heads) sequences of 64 tokens, head dim 16
        q = torch.randn(seqs, 64, 16, device=dev)
        kt = torch.randn(seqs, 16, 64, device=dev)
        p = torch.randn(seqs, 64, 64, device=dev)
        out.append(("bmm_qk_%d" % n, lambda q=q, kt=kt: torch.bmm(q, kt)))
        out.append(("bmm_pv_%d" % n, lambda p=p, q=q: torch.bmm(p, q)))
        h = torch.randn(n, 64, device=dev)
        ln = torch.nn.LayerNorm(64).to(dev)
        out.append(("layer_norm_%d" % n, lambda h=h, ln=ln: ln(h)))
        for width in (64, 256):
            z = torch.randn(n, width, device=dev)
            out.append(("dropout_%d_%d" % (n, width), lambda z=z: F.dropout(z, 0.1, training=True)))
        emb = torch.nn.Embedding(500, 64).to(dev)
        ids = torch.randint(0, 500, (n,), device=dev)
        out.append(("embedding_%d" % n, lambda emb=emb, ids=ids: emb(ids)))
        logits = torch.randn(n, 500, device=dev)
        out.append(("log_softmax_%d" % n, lambda logits=logits: F.log_softmax(logits, dim=-1)))
    return out


def transformer_train_benches(dev):
    """Backward passes of the same ops (autograd on), as the encoder's training step runs them."""
    out = []
    F = torch.nn.functional
    for n in TOKENS:
        for k, m in [(64, 192), (64, 256), (256, 64), (64, 500)]:
            x = torch.randn(n, k, device=dev, requires_grad=True)
            lin = torch.nn.Linear(k, m).to(dev)
            gy = torch.ones(n, m, device=dev)
            out.append(lambda x=x, lin=lin, gy=gy: lin(x).backward(gy))
        seqs = n // 64 * 4
        q = torch.randn(seqs, 64, 16, device=dev, requires_grad=True)
        kt = torch.randn(seqs, 16, 64, device=dev, requires_grad=True)
        out.append(lambda q=q, kt=kt: torch.softmax(torch.bmm(q, kt), dim=-1).sum().backward())
        h = torch.randn(n, 64, device=dev, requires_grad=True)
        ln = torch.nn.LayerNorm(64).to(dev)
        out.append(lambda h=h, ln=ln: ln(h).sum().backward())
        out.append(lambda h=h: F.dropout(h, 0.1, training=True).sum().backward())
        emb = torch.nn.Embedding(500, 64).to(dev)
        ids = torch.randint(0, 500, (n,), device=dev)
        out.append(lambda emb=emb, ids=ids: emb(ids).sum().backward())
        logits = torch.randn(n, 500, device=dev, requires_grad=True)
        tgt = torch.randint(0, 500, (n,), device=dev)
        out.append(lambda logits=logits, tgt=tgt: F.cross_entropy(logits, tgt).backward())
    return out


def profile_benches(dev, quick, out_dir, reps, cold=True):
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.startswith("cuda") else [])
    rows, traces = [], []
    tag = dev.replace(":", "")
    with torch.no_grad():
        bs = benches(dev, quick)
        for _, fn in bs:  # warm-up: first calls allocate and pick kernels
            fn()
        sync(dev)
        shares = {}
        evict = ColdCache(cpu_caches()) if cold and not dev.startswith("cuda") else None
        with profile(activities=acts, record_shapes=True) as prof:
            for name, fn in bs:
                for _ in range(reps):
                    timed_call(dev, fn, shares, evict if cold_bench(name) else None)
                sync(dev)
    # Export before the next profiler session starts: with torch 2.11 (CUDA 13) a trace exported
    # after a later session had every GPU activity and runtime call at ts 0, dur 0 (H200 rig,
    # 2026-11-30), while key_averages() kept the right times.
    path = os.path.join(out_dir, "traces", "%s_micro.json" % tag)
    prof.export_chrome_trace(path)
    traces.append(path)
    collect(prof, dev, rows, shares)
    # Backward passes of convolutions and linear layers (autograd on), as a training step runs them.
    train = []
    bwd_convs = ([(4, 16, 32, 3), (8, 64, 16, 3), (8, 128, 8, 3), (8, 64, 16, 1)] if quick else
                 [(4, 16, 32, 3), (8, 64, 16, 3), (8, 128, 8, 3), (8, 64, 16, 1), (8, 64, 32, 3),
                  (8, 256, 8, 3), (16, 32, 32, 3)])
    if dev.startswith("cuda"):
        bwd_convs += [(64, 64, 56, 3), (64, 128, 28, 3), (64, 256, 14, 3), (64, 512, 7, 3)]
    bwd_convs = [(b, c, c, hw, k) for b, c, hw, k in bwd_convs]
    if not dev.startswith("cuda"):
        bwd_convs += CPU_CONVS + [(8, 64, 64, 32, 3)]
    first_layer = set()  # input shapes of the convolutions whose backward skips the input gradient
    for batch, c, cout, hw, k in bwd_convs:
        conv = torch.nn.Conv2d(c, cout, k, padding=k // 2).to(dev)
        x = torch.randn(batch, c, hw, hw, device=dev, requires_grad=True)
        gy = torch.ones(batch, cout, hw, hw, device=dev)
        # A network's first convolution reads the image, which needs no gradient: torch computes
        # the weight's alone (output_mask [False, True, True]; LeNet-5's conv1 backward took
        # 1.13 ms in its step where a row with the input gradient took 3.4-4.0 ms). The row is
        # measured as the step runs it and marked input_grad false.
        xc = x.detach() if c in IMAGE_CHANNELS else x
        if c in IMAGE_CHANNELS:
            first_layer.add((batch, c, hw, hw))
        train.append(lambda conv=conv, xc=xc, gy=gy: conv(xc).backward(gy))
        # ReLU's backward (threshold_backward) on the convolution's output: its grad-output and
        # saved output read, a fresh input gradient written, evicted like every backward row (in
        # the step the saved output is a pass old). ResNet-18's took 17-337 us a call in its steps
        # where the forward ReLU rows it was priced from said 3.75-108.
        yr = torch.relu(torch.randn(batch, cout, hw, hw, device=dev, requires_grad=True))
        train.append(lambda yr=yr, gy=gy: yr.backward(gy, retain_graph=True))
        bn = torch.nn.BatchNorm2d(c).to(dev).train()
        gx = torch.ones(batch, c, hw, hw, device=dev)
        # Forward and backward in calls of their own, each after an eviction: in a step the
        # backward finds its saved input and grad-output a pass old, not where the forward just
        # left them (timed in one call, BatchNorm read -26/-33 % in ResNet-18's steps).
        held = {}
        train.append(lambda bn=bn, x=x, held=held: held.__setitem__("y", bn(x)))
        train.append(lambda gx=gx, held=held: held["y"].backward(gx, retain_graph=True))
        pool = max_pool(x, 3, 2, 1)
        train.append(lambda pool=pool: pool().sum().backward())
    for batch, c, hw in POOL2_SHAPES:
        x = torch.randn(batch, c, hw, hw, device=dev, requires_grad=True)
        pool = max_pool(x, 2, 2, 0)
        train.append(lambda pool=pool: pool().sum().backward())
    train += transformer_train_benches(dev)
    for _ in range(2):
        for fn in train:
            fn()
    sync(dev)
    shares = {}
    with profile(activities=acts, record_shapes=True) as prof_bwd:
        for fn in train:
            for _ in range(reps):
                timed_call(dev, fn, shares, evict)
            sync(dev)
    path = os.path.join(out_dir, "traces", "%s_micro_bwd.json" % tag)
    prof_bwd.export_chrome_trace(path)
    traces.append(path)
    collect(prof_bwd, dev, rows, shares, first_layer)
    return rows, traces


class ColdCache:
    """Evicts this CPU's caches before a microbenchmark call: in a training step an op's weights and
    saved activations were last touched a whole forward or backward pass earlier, so they come from
    DRAM, while a microbenchmark that repeats one op on the same tensors finds them in L2/L3 (the
    encoder's [512,64]x[64,256] linear layer: ~300 us hot, ~650 us after an eviction, 380-410 us in
    the step). Streams over twice the last-level cache with numpy, which torch.profiler does not
    record, outside the call's timed range."""

    def __init__(self, caches):
        import numpy
        llc = max([c["bytes"] for c in caches] + [32 << 20])
        self.buf = numpy.ones(2 * llc // 4, dtype=numpy.float32)
        self.np = numpy

    def __call__(self):
        self.np.add(self.buf, 1.0, out=self.buf)


def cold_bench(name):
    """Microbenchmarks whose operands a step holds cold: the GEMMs and convolutions (their weights
    were last read a pass earlier), as every backward pass (its saved activations)."""
    return name.split("_", 1)[0] in ("gemm", "conv", "linear", "bmm", "lstm")


def timed_call(dev, fn, shares, evict=None):
    """One call of a microbenchmark; on the CPU inside a "rigcall#N" range, with the CPU time its
    thread got during the call in shares[N] (us): the profiler's times are wall-clock, and on a
    shared machine a call longer than a scheduler slice is mostly preempted (ResNet-size
    convolutions read 1.3-1.5x slow at load 8), one shorter mostly not (call_median)."""
    if dev.startswith("cuda"):
        fn()
        return
    from torch.profiler import record_function
    if evict is not None:
        evict()
    n = len(shares)
    with record_function("rigcall#%d" % n):
        c0 = time.thread_time()
        fn()
        c = time.thread_time() - c0
    shares[n] = c * 1e6


def cpu_medians(prof, shares=None):
    """(name, shapes) -> median CPU time in us of the individual calls. On a shared machine an op that
    the scheduler preempted takes a whole time slice longer; the median of the calls drops those,
    where key_averages()' mean (what 1.13 reports) carries them (a 2-core machine at load 7 moved
    the fitted rates by up to 5x between runs)."""
    calls = {}
    for ev in prof.events():
        if not ev.name.startswith("aten::"):
            continue
        shapes = tuple(tuple(s) for s in (ev.input_shapes or []))
        # In CPU time: bounded by its call's CPU time (timed_call, call_median).
        cpu, par = float("inf"), ev.cpu_parent
        while par is not None and not par.name.startswith("rigcall#"):
            par = par.cpu_parent
        if par is not None and shares:
            cpu = shares.get(int(par.name.split("#", 1)[1]), cpu)
        calls.setdefault((ev.name, shapes), []).append((ev.cpu_time_total, cpu))
    return {k: call_median(v) for k, v in calls.items()}


def call_median(calls):
    """An op's time from its calls [(wall us, CPU us of the whole call)]: the median of min(wall,
    call CPU). An op takes no longer than its wall time nor than all the CPU time its call got, and
    the bound is exact both for an op the scheduler preempted (the call's CPU time is the op's) and
    for one it left alone (its wall time is). Scaling the wall time by the call's share of the core
    assumed an even slowdown: at load 10, with the call preempted outside the op (profiler exit),
    a 128x128x128 mm read 4.6 us for ~150 us of work."""
    est = sorted(min(w, c) for w, c in calls)
    return est[len(est) // 2]


def collect(prof, dev, rows, shares=None, first_layer=()):
    """One row per (op, input shapes); a convolution backward whose input (second tensor) is one
    of `first_layer`'s shapes is marked input_grad false (the weight's gradient alone)."""
    medians = None if dev.startswith("cuda") else cpu_medians(prof, shares)
    for ev in prof.key_averages(group_by_input_shape=True):
        if ev.count == 0 or not ev.key.startswith("aten::"):
            continue
        shapes = [list(s) for s in (ev.input_shapes or [])]
        if not any(shapes):
            continue
        if medians is not None:
            mean_us = medians.get((ev.key, tuple(tuple(s) for s in shapes)), ev.cpu_time_total / ev.count)
        else:
            # torch >= 2.4 names it device_time_total; 1.13 has only cuda_time_total.
            gpu = getattr(ev, "device_time_total", 0) or getattr(ev, "cuda_time_total", 0)
            mean_us = (gpu if gpu > 0 else ev.cpu_time_total) / ev.count
        if mean_us <= 0:
            continue
        row = {"name": ev.key, "input_shapes": shapes, "dtype": "f32", "count": int(ev.count),
               "mean_us": float(mean_us), "device": dev, "device_model": device_model(dev)}
        # A max pool's window (its backward's input is the second tensor): the calibration counts
        # its comparisons, kernel area x outputs, as the ONNX importer counts a MaxPool's.
        if "max_pool" in ev.key:
            x = shapes[1] if "backward" in ev.key and len(shapes) > 1 else shapes[0]
            if tuple(x) in POOL_WINDOWS:
                k, st, p = POOL_WINDOWS[tuple(x)]
                row.update({"kernel_shape": [k, k], "strides": [st, st], "pads": [p, p]})
        if "convolution_backward" in ev.key and len(shapes) > 1 and tuple(shapes[1]) in first_layer:
            row["input_grad"] = False
        rows.append(row)


def measured_rates(rows):
    """The best rates one of this device's microbenchmarks reached: the largest GEMM FLOP/s and the
    largest bytes/s of a 1-D add/mul/relu/sum. A cluster for the closed loop must not give the device
    a peak below what it was seen to do: the cost model holds every prediction to the peak, and a
    10 GB/s guess priced a transformer's cache-resident adds at 5x their measured time."""
    flops = bw = 0.0
    for r in rows:
        s, t = r["input_shapes"], r["mean_us"] * 1e-6
        if r["mean_us"] < 20:   # the profiler's clock ticks in us: a 2 us call is +-50 %
            continue
        if r["name"] == "aten::mm" and len(s) >= 2 and len(s[0]) == 2 and len(s[1]) == 2:
            flops = max(flops, 2.0 * s[0][0] * s[0][1] * s[1][1] / t)
        elif r["name"] in ("aten::add", "aten::mul", "aten::relu", "aten::sum") and s and len(s[0]) == 1:
            n = s[0][0]
            tensors = (2 if r["name"] in ("aten::add", "aten::mul") else 1) + (0 if r["name"] == "aten::sum" else 1)
            bw = max(bw, 4.0 * n * tensors / t)
    return {"f32_flop_s": flops, "byte_s": bw}


def cpu_caches():
    """This CPU's data caches as the kernel reports them (/sys/devices/system/cpu/cpu0/cache):
    [{"level": 2, "bytes": 524288, "shared_cpus": "0"}, ...], L1 data and unified levels only."""
    out = []
    base = "/sys/devices/system/cpu/cpu0/cache"
    for entry in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        d = os.path.join(base, entry)
        try:
            with open(os.path.join(d, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(d, "level")) as f:
                level = int(f.read())
            with open(os.path.join(d, "size")) as f:
                size = f.read().strip()
            with open(os.path.join(d, "shared_cpu_list")) as f:
                shared = f.read().strip()
        except (OSError, ValueError):
            continue
        if kind == "Instruction":
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
        out.append({"level": level, "bytes": int(size.rstrip("KMG")) * mult, "shared_cpus": shared})
    return out or sysconf_caches()


def vector_lanes(flags=None):
    """This CPU's SIMD width in float32 lanes, from /proc/cpuinfo's flags (or `flags`): 16 with
    AVX-512 (avx512f), 8 with AVX/AVX2, 4 otherwise (SSE, NEON). oneDNN's direct convolutions
    vectorise over the channels they write, that many at a time, so a layer with fewer channels
    (LeNet-5's 6, an RGB input's 3) leaves lanes idle (sim::lane_padded_flops). None when the
    flags cannot be read."""
    if flags is None:
        try:
            with open("/proc/cpuinfo") as f:
                line = next((l for l in f if l.startswith(("flags", "Features"))), None)
        except OSError:
            return None
        if line is None:
            return None
        flags = line.split(":", 1)[1].split()
    flags = set(flags)
    if "avx512f" in flags:
        return 16
    if "avx2" in flags or "avx" in flags:
        return 8
    return 4


def cpuinfo():
    """/proc/cpuinfo's first processor as a dict (key -> text), {} where it cannot be read."""
    out = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break
                k, _, v = line.partition(":")
                out[k.strip()] = v.strip()
    except OSError:
        pass
    return out


def fma_units(info):
    """Vector FMA pipes of one core, from /proc/cpuinfo's vendor, family, model and flags (`info`,
    as cpuinfo() gives it): the factor of the f32 peak = lanes x FMA pipes x 2 x clock. x86 with
    the fma flag: 2 (Intel since Haswell, ports 0 and 1; AMD Zen 2 and later, two 256-bit FMA
    pipes), except AMD family 23 below model 0x30 (Zen, Zen+: 128-bit pipes, a 256-bit FMA takes
    both, so 1 at 8 lanes). Without fma (SSE/AVX only): 1 (a multiply and an add a cycle, counted
    as one FMA's 2 FLOPs). arm64 with asimd: 2 (Neoverse N1/V1, Apple cores have 2 or more 128-bit
    FMA pipes; 2 is the lower bound). Sources: Agner Fog, "The microarchitecture of Intel, AMD and
    VIA CPUs" (Haswell, Zen, Zen 2 chapters); AMD Software Optimization Guide for family 17h."""
    flags = set(info.get("flags", info.get("Features", "")).split())
    if "asimd" in flags:
        return 2
    if "fma" not in flags:
        return 1
    try:
        family, model = int(info.get("cpu family", "0")), int(info.get("model", "0"))
    except ValueError:
        family, model = 0, 0
    if info.get("vendor_id") == "AuthenticAMD" and family == 23 and model < 0x30:
        return 1
    return 2


CLOCK_C = r"""
#include <stdio.h>
#include <time.h>
int main(void) {
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    struct timespec a, b;
    unsigned long x = 0;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    for (long i = 0; i < 20000000; ++i)
#if defined(__x86_64__)
      __asm__ volatile("add $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\t"
                       "add $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\t"
                       "add $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\t"
                       "add $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0" : "+r"(x));
#elif defined(__aarch64__)
      __asm__ volatile("add %0,%0,#1\n\tadd %0,%0,#1\n\tadd %0,%0,#1\n\tadd %0,%0,#1\n\t"
                       "add %0,%0,#1\n\tadd %0,%0,#1\n\tadd %0,%0,#1\n\tadd %0,%0,#1\n\t"
                       "add %0,%0,#1\n\tadd %0,%0,#1\n\tadd %0,%0,#1\n\tadd %0,%0,#1\n\t"
                       "add %0,%0,#1\n\tadd %0,%0,#1\n\tadd %0,%0,#1\n\tadd %0,%0,#1" : "+r"(x));
#else
#error "no dependent-add chain for this architecture"
#endif
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
    if (16.0 * 20000000 / s > best) best = 16.0 * 20000000 / s;
  }
  printf("%.6g\n", best);
  return 0;
}
"""


def cpu_clock(info=None):
    """The clock the core runs at, (Hz, source). Measured: a chain of dependent integer adds (one
    cycle each on every x86-64 and arm64 core) compiled with the system's cc and timed in thread
    CPU time, the best of 5 runs of 320 M adds: the boost clock a busy core holds, which a VM's
    /proc/cpuinfo does not show (this project's EPYC VM: cpuinfo 2246 MHz, the TSC's rate; the
    chain 3.33 GHz, and the rig's best GEMM, 72.6 GFLOP/s, is above 8 x 2 x 2 x 2.246 GHz). Without
    a compiler: cpuinfo's "cpu MHz", which can be below the clock that ran the rows. (None, reason)
    when neither is there."""
    import shutil
    import subprocess
    import tempfile
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc:
        with tempfile.TemporaryDirectory() as d:
            src, exe = os.path.join(d, "clock.c"), os.path.join(d, "clock")
            with open(src, "w") as f:
                f.write(CLOCK_C)
            try:
                subprocess.run([cc, "-O2", "-o", exe, src], check=True, capture_output=True)
                hz = float(subprocess.run([exe], check=True, capture_output=True, text=True).stdout)
                return hz, "dependent-add chain (%s -O2, 16 adds an iteration, best of 5)" % os.path.basename(cc)
            except (subprocess.CalledProcessError, OSError, ValueError):
                pass
    info = cpuinfo() if info is None else info
    try:
        return float(info["cpu MHz"]) * 1e6, "/proc/cpuinfo cpu MHz (nominal: no compiler for the chain)"
    except (KeyError, ValueError):
        return None, "no compiler and no cpu MHz in /proc/cpuinfo"


def sysconf_caches():
    """L1d and L2 as glibc's getconf reads them (cpuid), where /sys has no cache directory (the 2-vCPU
    EPYC VM of 2026-12-02: L1d 48 KiB, L2 1 MiB). Its L3 is left out: the VM reports 508 MiB, a
    socket's worth, where the sweep's rate falls to DRAM's past 25 MB; sweep_llc places it."""
    import subprocess
    out = []
    for level, name in ((1, "LEVEL1_DCACHE_SIZE"), (2, "LEVEL2_CACHE_SIZE")):
        try:
            size = int(subprocess.run(["getconf", name], capture_output=True, text=True).stdout)
        except (ValueError, OSError):
            continue
        if size > 0:
            out.append({"level": level, "bytes": size, "shared_cpus": "", "source": "getconf"})
    return out


def sweep_llc(points, above):
    """The last-level cache's size where the kernel does not report it: the working set before the
    first sweep point past `above` (the L2) whose rate is below the midpoint of the first such
    point's and the slower of the two largest (DRAM's). None with fewer than four points."""
    past = [p for p in points if p["bytes"] > 1.25 * above]
    if len(past) < 4:
        return None
    mid = (past[0]["byte_s"] + min(p["byte_s"] for p in past[-2:])) / 2
    last = None
    for p in past:
        if p["byte_s"] < mid:
            return last
        last = p["bytes"]
    return None


def memory_levels(points, caches):
    """Per level (each cache from L2, then DRAM) the lower median rate of the sweep points whose
    working set fits it but not the level below (a point within 25 % of a boundary is left out: a
    cache holds other data too). Without an L3 from the kernel, the sweep's knee (sweep_llc)."""
    caches = [c for c in caches if c["level"] >= 2]
    if caches and not any(c["level"] >= 3 for c in caches):
        llc = sweep_llc(points, max(c["bytes"] for c in caches))
        if llc:
            caches.append({"level": 3, "bytes": llc, "shared_cpus": "", "source": "sweep"})
    levels = []
    lo = 0
    # L1 is left out: an op whose operands fit 32 KB is all fixed cost.
    for c in sorted(caches, key=lambda c: c["level"]) + [{"level": 0, "bytes": 0}]:
        hi = c["bytes"]
        inside = [p["byte_s"] for p in points
                  if p["bytes"] > 1.25 * lo and (hi == 0 or p["bytes"] < 0.75 * hi)]
        if inside:
            levels.append({"level": "DRAM" if hi == 0 else "L%d" % c["level"], "bytes": hi,
                           # The lower median: L2 has two points, and one whose few-us call the
                           # scheduler or the fixed-cost subtraction distorted read 728 GB/s
                           # (next to 74; every cache-level curve is stretched by it).
                           "byte_s": sorted(inside)[(len(inside) - 1) // 2], "points": len(inside)})
        lo = hi
    return levels


def memory_sweep(caches):
    """Streaming rate by working set: torch.add(x, y, out=z) on 1-D float tensors (12 bytes an
    element), timed in CPU time of this process over enough calls to move ~200 MB, median of 5
    rounds, less the fixed cost of a call. Working sets from 96 KB to 192 MB cross L2, the
    last-level cache and DRAM.
    Returns the points and, per level (each cache, then DRAM), the median rate of the points whose
    working set fits it but not the level below (a point within 25 % of a boundary is left out: a
    cache holds other data too)."""
    def per_call_s(n, calls):
        x, y, z = torch.randn(n), torch.randn(n), torch.empty(n)
        times = []
        for _ in range(5):
            torch.add(x, y, out=z)
            t0 = time.process_time()
            for _ in range(calls):
                torch.add(x, y, out=z)
            times.append((time.process_time() - t0) / calls)
        return sorted(times)[len(times) // 2]

    # The fixed cost of a call (dispatch, a few us) is no bandwidth: taken off every point, or the
    # cache-sized points read slower than the cache is.
    fixed = per_call_s(16, 20000)
    points = []
    for n in (1 << 13, 1 << 14, 1 << 15, 1 << 16, 1 << 17, 1 << 18, 1 << 19, 1 << 20, 1 << 21,
              1 << 22, 1 << 23, 1 << 24):
        ws = 12 * n
        t = per_call_s(n, max(3, int(1e9 / ws / 5))) - fixed
        if t > 0:
            points.append({"bytes": ws, "byte_s": ws / t})
    return points, memory_levels(points, caches)


def optimizer_overhead_us(dev, params=64, rounds=50):
    """Host cost per parameter of the training loop's per-parameter work, on 1-element parameters
    (no bytes to move, so what is left is Python and dispatch): SGD's step (torch 1.13 on a CPU
    loops over the parameters) and zero_grad, in CPU time."""
    ps = [torch.zeros(1, device=dev, requires_grad=True) for _ in range(params)]
    for p in ps:
        p.grad = torch.zeros(1, device=dev)
    opt = torch.optim.SGD(ps, lr=0.01)
    for _ in range(5):
        opt.step()
        opt.zero_grad()
    t0 = time.process_time()
    for _ in range(rounds):
        opt.step()
        opt.zero_grad()
    return (time.process_time() - t0) / rounds / params * 1e6


def step_host_side(prof, parameters, cpu_share=1.0):
    """The host side of the profiled steps from the trace (medians over steps, us): the time in
    each step that no top-level op covers (Python between ops, the autograd engine between nodes),
    zero_grad and AccumulateGrad (no graph op stands for them) and the optimizer's step less the
    aten ops inside it (the graph's update ops price those)."""
    steps = {}
    events = list(prof.events())
    for ev in events:
        if ev.name.startswith("ProfilerStep"):  # 1.13 renames "ProfilerStep#N" to "ProfilerStep*"
            steps[id(ev)] = {"ev": ev, "kids": []}
    for ev in events:
        par = ev.cpu_parent
        if par is not None and id(par) in steps:
            steps[id(par)]["kids"].append(ev)
    rows, by_name = [], {}
    for s in steps.values():
        ev = s["ev"]
        for k in s["kids"]:
            by_name[k.name] = by_name.get(k.name, 0.0) + k.time_range.elapsed_us() / len(steps)
        spans = sorted((k.time_range.start, k.time_range.end) for k in s["kids"])
        covered, end = 0.0, ev.time_range.start
        for a, b in spans:   # union: 1.13 parents some AccumulateGrad nodes twice
            a = max(a, end)
            if b > a:
                covered += b - a
                end = b
        zero = sum(k.time_range.elapsed_us() for k in s["kids"] if k.name.startswith("Optimizer.zero_grad"))
        acc = sum(k.time_range.elapsed_us() for k in s["kids"]
                  if k.name.startswith("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"))
        opt = [k for k in s["kids"] if k.name.startswith("Optimizer.step")]
        opt_total = sum(k.time_range.elapsed_us() for k in opt)
        opt_kernels = sum(c.time_range.elapsed_us() for k in opt for c in k.cpu_children)
        rows.append({"step_us": ev.time_range.elapsed_us(), "gap_us": ev.time_range.elapsed_us() - covered,
                     "top_level_ops": len(s["kids"]), "zero_grad_us": zero, "accumulate_grad_us": acc,
                     "optimizer_overhead_us": max(0.0, opt_total - opt_kernels)})
    if not rows:
        return {}
    med = lambda k: sorted(r[k] for r in rows)[len(rows) // 2]
    out = {k: med(k) for k in rows[0]}
    # The trace's times are wall-clock: on a shared machine the step's thread got only a share
    # of the core (its CPU time / wall time), and the gaps stretch with it like everything else.
    # In CPU time, as the step is compared.
    out["cpu_share"] = cpu_share
    for k in ("gap_us", "zero_grad_us", "accumulate_grad_us", "optimizer_overhead_us"):
        out[k + "_wall"] = out[k]
        out[k] = out[k] * cpu_share
    out["parameters"] = parameters
    out["steps"] = len(rows)
    out["top_level_us_per_step"] = by_name  # mean per step, for per-class comparisons
    return out


def device_model(dev):
    """Calibration key of a device: "cpu0", or the GPU's name as `placesim calibrate` derives it from a
    trace ("NVIDIA H200" -> "H200"); pass --device-model to calibrate to use a catalog name instead."""
    if not dev.startswith("cuda"):
        return "cpu0"
    name = torch.cuda.get_device_name(torch.device(dev))
    for prefix in ("NVIDIA ", "Tesla "):
        if name.startswith(prefix):
            name = name[len(prefix):]
    return name.replace(" ", "-")


class TransformerEncoderLM(torch.nn.Module):
    """Token ids -> embedding -> 2 encoder layers (4 heads, d 64, feed-forward 256) -> vocab logits,
    as tests/data/onnx/generate.py's transformer_encoder; logits flattened for the loss."""

    def __init__(self, vocab=500, d=64, heads=4, ff=256, layers=2):
        super().__init__()
        self.vocab = vocab
        self.emb = torch.nn.Embedding(vocab, d)
        layer = torch.nn.TransformerEncoderLayer(d, heads, ff, dropout=0.1, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, ids):
        return self.head(self.encoder(self.emb(ids))).reshape(-1, self.vocab)


TRANSFORMER_SEQ = 64


def real_model(name, batch, image=64):
    if name == "transformer":
        m = TransformerEncoderLM()
        ids = torch.randint(0, m.vocab, (batch, TRANSFORMER_SEQ))
        return ("transformer-enc2-seq%d" % TRANSFORMER_SEQ, m, ids,
                torch.randint(0, m.vocab, (batch * TRANSFORMER_SEQ,)))
    if name == "lenet5":
        # LeCun et al. 1998, with ReLU and max pooling: small enough for a test on two cores.
        m = torch.nn.Sequential(
            torch.nn.Conv2d(1, 6, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(6, 16, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
            torch.nn.Linear(16 * 5 * 5, 120), torch.nn.ReLU(), torch.nn.Linear(120, 84), torch.nn.ReLU(),
            torch.nn.Linear(84, 10))
        return "lenet5-28px", m, torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,))
    import torchvision
    m = torchvision.models.resnet18(num_classes=10)
    return "resnet18-%dpx" % image, m, torch.randn(batch, 3, image, image), torch.randint(0, 10, (batch,))


def dispatch_overhead_us(dev, calls=2000):
    """Per-op host cost of the framework (Python call, dispatcher, autograd recording) measured on a
    one-element add with autograd on, as in a training step: the engine's launch_overhead."""
    x = torch.ones(1, device=dev, requires_grad=True)
    y = torch.ones(1, device=dev)
    for _ in range(100):
        torch.add(x, y)
    sync(dev)
    # CPU time on the CPU (robust to other processes on a shared machine); wall time on a GPU,
    # where the host thread is what is measured anyway.
    clock = time.perf_counter if dev.startswith("cuda") else time.process_time
    t0 = clock()
    for _ in range(calls):
        torch.add(x, y)
    sync(dev)
    return (clock() - t0) / calls * 1e6


def profile_model(dev, model, steps, batch, out_dir, image=64, export=True):
    from torch.profiler import ProfilerActivity, profile, record_function
    name, m, x, y = real_model(model, batch, image)
    m = m.to(dev)
    x, y = x.to(dev), y.to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(m(x), y)
        loss.backward()
        opt.step()
        sync(dev)

    for _ in range(2):
        step()
    times, cpu_times = [], []
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.startswith("cuda") else [])
    # Steps are annotated by hand: with a schedule, 1.13 drops every step after the first from the
    # export when no on_trace_ready handler is set.
    with profile(activities=acts, record_shapes=True) as prof:
        for i in range(steps):
            t0, c0 = time.perf_counter(), time.process_time()
            with record_function("ProfilerStep#%d" % (i + 1)):
                step()
            times.append(time.perf_counter() - t0)
            cpu_times.append(time.process_time() - c0)
    tag = dev.replace(":", "")
    path = os.path.join(out_dir, "traces", "%s_%s_b%d_train.json" % (tag, name, batch))
    prof.export_chrome_trace(path)
    share = sorted(c / w for c, w in zip(cpu_times, times) if w > 0)
    host = (step_host_side(prof, sum(1 for _ in m.parameters()), min(1.0, share[len(share) // 2]))
            if not dev.startswith("cuda") and share else {})
    onnx_path = os.path.join(out_dir, "model.onnx")
    if export and not os.path.exists(onnx_path):
        m_cpu = m.to("cpu")
        # Training mode keeps BatchNormalization nodes; eval mode folds them into the convolutions
        # and the imported step then lacks the normalisation (32% of ResNet-18's GPU time on the H200).
        # opset 14 for the transformer, as tests/data/onnx/generate.py exports it.
        kw = dict(opset_version=14 if model == "transformer" else 13, training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
        try:  # torch >= 2.5 defaults to the dynamo exporter; the TorchScript one matches 1.13's output
            torch.onnx.export(m_cpu, x.to("cpu"), onnx_path, dynamo=False, **kw)
        except TypeError:
            torch.onnx.export(m_cpu, x.to("cpu"), onnx_path, **kw)
        m.to(dev).train()
    return {"name": name, "device": dev, "batch": batch, "input": list(x.shape), "optimizer": "sgd",
            "onnx": onnx_path, "trace": path, "measured_step_s": times,
            "median_step_s": sorted(times)[len(times) // 2],
            # CPU time of this process per step: on a shared machine, the step as an unshared core runs it.
            "measured_step_cpu_s": cpu_times, "median_step_cpu_s": sorted(cpu_times)[len(cpu_times) // 2],
            "host_side": host}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="fewer shapes (a minute on two cores)")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--model", choices=["resnet18", "lenet5", "transformer"], default="resnet18")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--host-batch", type=int, default=0,
                    help="also profile the model at this batch and take the host side (Python gap, "
                         "zero_grad, AccumulateGrad, optimizer overhead) from it, not from --batch")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0 = leave)")
    ap.add_argument("--image", type=int, default=64, help="ResNet-18 input height and width")
    ap.add_argument("--hot", action="store_true",
                    help="CPU: leave operands in cache between microbenchmark calls (default: evict "
                         "the caches before each GEMM/convolution/backward call, as a step does)")
    ap.add_argument("--devices", default="all", help="comma-separated subset of cpu,cuda:0,... (default all)")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    os.makedirs(os.path.join(args.out, "traces"), exist_ok=True)
    manifest = {"format": "placesim-rig-manifest", "device_model": "cpu0", "host": platform.node(),
                "machine": platform.machine(), "torch": torch.__version__, "threads": torch.get_num_threads(),
                "devices": devices(), "ops": [], "traces": [], "models": [],
                "gpu_names": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
                if torch.cuda.is_available() else []}
    devs = devices() if args.devices == "all" else [d for d in args.devices.split(",") if d in devices()]
    if not devs:
        sys.exit("profile_rig.py: --devices %s: none of these exists here (have %s)" % (args.devices, ",".join(devices())))
    manifest["cold_operands"] = not args.hot
    manifest["load_average_start"] = os.getloadavg()[0]
    for dev in devs:
        rows, traces = profile_benches(dev, args.quick, args.out, args.reps, cold=not args.hot)
        manifest["ops"] += rows
        manifest["traces"] += traces
        manifest.setdefault("dispatch_overhead_us", {})[dev] = dispatch_overhead_us(dev)
        manifest.setdefault("measured_rates", {})[dev] = measured_rates(rows)
        manifest["models"].append(profile_model(dev, args.model, args.steps, args.batch, args.out, args.image))
        if not dev.startswith("cuda"):
            caches = cpu_caches()
            points, levels = memory_sweep(caches)
            manifest["cpu_caches"] = caches
            manifest["memory_sweep"] = points
            manifest["memory_levels"] = levels
            lanes = vector_lanes()
            if lanes:
                manifest["vector_lanes"] = lanes
            # The core's f32 peak, lanes x fma_units x 2 x clock_hz (placesim calibrate bounds
            # the CPU's fits by it).
            info = cpuinfo()
            manifest["fma_units"] = fma_units(info)
            hz, source = cpu_clock(info)
            if hz:
                manifest["clock_hz"] = hz
            manifest["clock_source"] = source
            try:
                manifest["cpuinfo_mhz"] = float(info["cpu MHz"])
            except (KeyError, ValueError):
                pass
            source = manifest["models"][-1]
            if args.host_batch > 0:
                source = profile_model(dev, args.model, args.steps, args.host_batch, args.out, args.image,
                                       export=False)
                manifest["host_models"] = [source]
            host = dict(source["host_side"])
            host["batch"] = source["batch"]
            host["dispatch_us"] = manifest["dispatch_overhead_us"][dev]
            host["optimizer_per_parameter_us"] = optimizer_overhead_us(dev)
            manifest.setdefault("host_side", {})[dev] = host
        print("%s: %d op rows, model step %.4f s" % (dev, len(rows), manifest["models"][-1]["median_step_s"]))
    manifest["load_average_end"] = os.getloadavg()[0]
    tmp = os.path.join(args.out, "manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(tmp, os.path.join(args.out, "manifest.json"))
    print("wrote %s" % os.path.join(args.out, "manifest.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
