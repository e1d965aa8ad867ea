#!/usr/bin/python3
"""Capture one training step of a small model as a PyTorch Execution Trace (ET) and, from the same
step, a profiler (Kineto / Chrome) trace, for `placesim import et TRACE --kineto KINETO`.

torch 1.13 (Debian's /usr/bin/python3 here) writes the ET with
torch.profiler.ExecutionGraphObserver (schema 1.0.1); torch >= 2.0 with ExecutionTraceObserver.
The step runs inside a `ProfilerStep#1` annotation, so both files bracket the same step, and
`--warmup` steps run first (allocator, oneDNN primitive caches) so that the step is a steady one.

Usage:  /usr/bin/python3 tools/et_capture.py --model cnn|transformer --out DIR [--batch N]
                                             [--threads 1] [--warmup 3] [--device cpu|cuda:0]
                                             [--repeat N]
Writes DIR/<model>_et.json and DIR/<model>_kineto.json, and prints the step's wall time.
"""
import argparse
import os
import time

import torch
import torch.nn as nn


class SmallCnn(nn.Module):
    """Two conv/batch-norm/ReLU/max-pool stages and a linear classifier (CIFAR-sized input)."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d(2))
        self.fc = nn.Linear(32 * 4 * 4, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


class SmallTransformer(nn.Module):
    """Token embedding, one post-norm encoder layer (4 heads), mean pooling, linear classifier."""

    def __init__(self, vocab=1000, d=64, heads=4, ff=128, classes=10):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.enc = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.1, batch_first=True)
        self.head = nn.Linear(d, classes)

    def forward(self, tokens):
        return self.head(self.enc(self.emb(tokens)).mean(dim=1))


def build(model, batch, device):
    torch.manual_seed(0)
    if model == "cnn":
        m = SmallCnn().to(device)
        x = torch.randn(batch, 3, 32, 32, device=device)
        opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    else:
        m = SmallTransformer().to(device)
        x = torch.randint(0, 1000, (batch, 16), device=device)
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    y = torch.randint(0, 10, (batch,), device=device)
    return m, opt, x, y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=["cnn", "transformer"], required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch", type=int, default=0, help="default: 16 (cnn), 4 (transformer)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=0,
                    help="also time N unprofiled steps: median wall and CPU (thread) time")
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    batch = a.batch or (16 if a.model == "cnn" else 4)
    m, opt, x, y = build(a.model, batch, a.device)
    m.train()

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    os.makedirs(a.out, exist_ok=True)
    et_path = os.path.join(a.out, "%s_et.json" % a.model)
    kineto_path = os.path.join(a.out, "%s_kineto.json" % a.model)
    Observer = getattr(torch.profiler, "ExecutionTraceObserver", None) or \
        torch.profiler.ExecutionGraphObserver
    et = Observer()
    et.register_callback(et_path)
    acts = [torch.profiler.ProfilerActivity.CPU]
    if a.device.startswith("cuda"):
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=acts, record_shapes=True) as prof:
        et.start()
        t0, c0 = time.perf_counter(), time.thread_time()
        with torch.profiler.record_function("ProfilerStep#1"):
            step()
            if a.device.startswith("cuda"):
                torch.cuda.synchronize()
        t1, c1 = time.perf_counter(), time.thread_time()
        et.stop()
    et.unregister_callback()
    prof.export_chrome_trace(kineto_path)
    print("%s: torch %s, batch %d, %d thread(s), step %.3f ms (CPU %.3f ms) -> %s, %s" %
          (a.model, torch.__version__, batch, a.threads, (t1 - t0) * 1e3, (c1 - c0) * 1e3,
           et_path, kineto_path))
    if a.repeat > 0:
        # On a shared machine the wall time of a step includes the time other processes held the
        # core; the thread's CPU time does not (with one intra-op thread, it is the step's work).
        wall, cpu = [], []
        for _ in range(a.repeat):
            w0, k0 = time.perf_counter(), time.thread_time()
            step()
            wall.append(time.perf_counter() - w0)
            cpu.append(time.thread_time() - k0)
        wall.sort()
        cpu.sort()
        print("%d unprofiled steps: median wall %.3f ms, median CPU %.3f ms, min wall %.3f ms" %
              (a.repeat, wall[a.repeat // 2] * 1e3, cpu[a.repeat // 2] * 1e3, wall[0] * 1e3))


if __name__ == "__main__":
    main()
