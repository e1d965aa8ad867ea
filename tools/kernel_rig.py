#!/usr/bin/env python3
"""Time single kernels of a transformer step at many shapes on this machine's GPU, for checking the
cost model's rules on shapes no rule was derived from (docs/validation.md, "Run on a lent H200,
2026-12-04"): GEMMs with aligned and misaligned leading dimensions in bf16 / f16 / TF32 in the
three roles of a linear layer, LayerNorm forward + backward, cross-entropy over a vocabulary, and
scaled-dot-product attention (the default backend and FlashAttention forced).

Each case runs under `record_function(CASE)` in one Kineto trace (OUT/kernels.json.gz: the kernel
names cuBLAS/cuDNN chose and their times) and is timed with CUDA events (median of --reps after
--warmup); one JSON line per case goes to OUT/kernels.jsonl.
Usage:  tools/kernel_rig.py --out DIR [--quick | --heldout | --fp32] [--device cuda:0]
"""
import argparse
import gzip
import json
import os
import shutil

import torch
import torch.nn.functional as F

DT = {"bf16": torch.bfloat16, "f16": torch.float16, "tf32": torch.float32, "f32": torch.float32}


def gemm_cases(quick):
    shapes = [(8192, 768, 50257), (8192, 768, 50304), (4096, 1024, 30522), (4096, 1024, 30528),
              (16384, 1024, 32317), (16384, 1024, 32320), (2048, 4096, 4097), (2048, 4096, 4096),
              (8192, 770, 3072), (8192, 768, 3072)]
    if quick:
        shapes = [(64, 24, 101), (64, 24, 104)]
    for dt in ("bf16", "f16", "tf32"):
        for m, k, n in shapes:
            for role in ("fwd", "dgrad", "wgrad"):
                yield {"kind": "gemm", "dtype": dt, "m": m, "k": k, "n": n, "role": role}


def make(case, dev):
    """A zero-argument callable running the case once, and its FLOPs (0: not counted)."""
    g = torch.Generator(device=dev).manual_seed(0)
    if case["kind"] == "gemm":
        dt = DT[case["dtype"]]
        m, k, n = case["m"], case["k"], case["n"]
        r = lambda *s: torch.randn(*s, device=dev, dtype=dt, generator=g)  # noqa: E731
        if case["role"] == "fwd":      # y[M,N] = x[M,K] W[N,K]^T
            x, w = r(m, k), r(n, k)
            return (lambda: x @ w.t()), 2.0 * m * n * k
        if case["role"] == "dgrad":    # dx[M,K] = dy[M,N] W[N,K]
            dy, w = r(m, n), r(n, k)
            return (lambda: dy @ w), 2.0 * m * n * k
        dy, x = r(m, n), r(m, k)       # dW[N,K] = dy^T x
        return (lambda: dy.t() @ x), 2.0 * m * n * k
    if case["kind"] == "layernorm":
        rows, cols = case["rows"], case["cols"]
        x = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16, requires_grad=True)
        ln = torch.nn.LayerNorm(cols, device=dev, dtype=torch.bfloat16)
        dy = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16)
        return (lambda: ln(x).backward(dy)), 0.0
    if case["kind"] == "xent":
        rows, v = case["rows"], case["vocab"]
        z = torch.randn(rows, v, device=dev, dtype=torch.bfloat16, requires_grad=True)
        y = torch.randint(0, v, (rows,), device=dev)
        return (lambda: F.cross_entropy(z, y).backward()), 0.0
    if case["kind"] == "embedding":   # token lookup and its dense gradient (sort + scatter-add)
        dt = DT[case["dtype"]]
        w = torch.randn(case["vocab"], case["hidden"], device=dev, dtype=dt, requires_grad=True)
        idx = torch.randint(0, case["vocab"], (case["tokens"],), device=dev, generator=g)
        dy = torch.randn(case["tokens"], case["hidden"], device=dev, dtype=dt)

        def emb():
            w.grad = None
            F.embedding(idx, w).backward(dy)
        return emb, 0.0
    if case["kind"] == "linear":      # nn.Linear on [rows, k]: bias epilogue and bias gradient
        dt = DT[case["dtype"]]
        m, k, n = case["m"], case["k"], case["n"]
        lin = torch.nn.Linear(k, n, bias=case["bias"], device=dev, dtype=dt)
        x = torch.randn(8, m // 8, k, device=dev, dtype=dt, requires_grad=True)
        dy = torch.randn(8, m // 8, n, device=dev, dtype=dt)

        def linear():
            x.grad = None
            for p_ in lin.parameters():
                p_.grad = None
            lin(x).backward(dy)
        return linear, 6.0 * m * n * k
    if case["kind"] == "reduce":      # a bias gradient's column sum over rows
        x = torch.randn(case["rows"], case["cols"], device=dev, dtype=DT[case["dtype"]])
        return (lambda: x.sum(0)), 0.0
    if case["kind"] == "eltwise":     # streaming kernels at sizes from launch-bound to HBM-bound
        n_, dt = case["numel"], DT[case["dtype"]]
        x = torch.randn(n_, device=dev, dtype=dt, requires_grad=case["op"] == "gelu_fwd_bwd")
        y = torch.randn(n_, device=dev, dtype=dt)
        if case["op"] == "add":
            return (lambda: x.detach() + y), 0.0
        if case["op"] == "dropout":
            return (lambda: F.dropout(y, 0.1, training=True)), 0.0
        if case["op"] == "copy_t":      # a transposing copy: [a, b] -> [b, a] contiguous
            y2 = y.view(1024, -1)
            return (lambda: y2.t().contiguous()), 0.0

        def gelu():
            x.grad = None
            F.gelu(x, approximate="tanh").backward(y)
        return gelu, 0.0
    b, h, s, d = case["batch"], case["heads"], case["seq"], case["head_dim"]
    q, k_, v = (torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
                for _ in range(3))
    do = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16)

    def run():
        o = F.scaled_dot_product_attention(q, k_, v, is_causal=case.get("causal", True),
                                           dropout_p=case["dropout"])
        o.backward(do)
    if case["backend"] == "flash":
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def flash():
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                run()
        return flash, 0.0
    return run, 0.0


def heldout_cases():
    """The second set (2026-12-04, session 26): shapes no rule was fitted on."""
    for dt in ("bf16", "f32"):
        for v in (30522, 50257, 128256):
            for hid in (768, 1024, 4096):
                for tok in (2048, 8192, 32768):
                    yield {"kind": "embedding", "dtype": dt, "vocab": v, "hidden": hid, "tokens": tok}
    for m, k, n in ((8192, 768, 2304), (8192, 768, 3072), (8192, 3072, 768), (4096, 1024, 4096),
                    (16384, 4096, 11008), (2048, 1024, 1024)):
        for bias in (True, False):
            yield {"kind": "linear", "dtype": "bf16", "m": m, "k": k, "n": n, "bias": bias}
    for rows in (2048, 8192, 32768):
        for cols in (768, 3072, 50257):
            for dt in ("bf16", "f32"):
                yield {"kind": "reduce", "dtype": dt, "rows": rows, "cols": cols}
    for numel in (1 << 16, 1 << 20, 1 << 23, 1 << 26, 1 << 28):
        for op in ("add", "dropout", "gelu_fwd_bwd", "copy_t"):
            yield {"kind": "eltwise", "dtype": "bf16", "op": op, "numel": numel}
    for causal, seqs, b, h, d in ((True, (128, 256, 512, 1024), 16, 12, 64),
                                  (True, (256, 512, 1024, 2048), 4, 32, 128),
                                  (False, (128, 512), 32, 16, 64)):
        for seq in seqs:
            for backend in ("default", "flash"):
                yield {"kind": "sdpa", "batch": b, "heads": h, "seq": seq, "head_dim": d,
                       "dropout": 0.0, "backend": backend, "causal": causal}


def fp32_cases():
    """FP32 GEMMs on the CUDA cores (TF32 off), the shapes of the first set."""
    for c in gemm_cases(False):
        if c["dtype"] == "tf32":
            c["dtype"] = "f32"
            yield c


def cases(quick, heldout=False, fp32=False):
    if heldout:
        yield from heldout_cases()
        return
    if fp32:
        yield from fp32_cases()
        return
    yield from gemm_cases(quick)
    for rows in ((64,) if quick else (2048, 8192, 32768)):
        for cols in ((32,) if quick else (768, 1024, 2048, 4096)):
            yield {"kind": "layernorm", "rows": rows, "cols": cols}
    for rows in ((64,) if quick else (2048, 8192)):
        for v in ((101,) if quick else (30522, 50257, 50304)):
            yield {"kind": "xent", "rows": rows, "vocab": v}
    if quick:
        return
    for seq in (512, 1024, 2048):
        for backend in ("default", "flash"):
            for p in (0.0, 0.1):
                yield {"kind": "sdpa", "batch": 8, "heads": 12, "seq": seq, "head_dim": 64,
                       "dropout": p, "backend": backend}


def name(c):
    return ",".join("%s=%s" % (k, c[k]) for k in c)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--heldout", action="store_true",
                    help="the second set instead: embedding gradients, linear layers with and "
                         "without bias, bias sums, streaming kernels, short-sequence attention")
    ap.add_argument("--fp32", action="store_true", help="the first set's GEMMs in FP32, TF32 off")
    ap.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    a = ap.parse_args()
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    os.makedirs(a.out, exist_ok=True)
    acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
    lines = []
    path = os.path.join(a.out, "kernels.json")
    with torch.profiler.profile(activities=acts) as prof:
        for c in cases(a.quick, a.heldout, a.fp32):
            tf32 = c.get("dtype") == "tf32"
            torch.backends.cuda.matmul.allow_tf32 = tf32
            try:
                fn, flops = make(c, dev)
                for _ in range(a.warmup):
                    fn()
                times = []
                with torch.profiler.record_function(name(c)):
                    for _ in range(a.reps):
                        if cuda:
                            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                            e0.record()
                            fn()
                            e1.record()
                            torch.cuda.synchronize(dev)
                            times.append(e0.elapsed_time(e1) * 1e-3)
                        else:
                            import time
                            t0 = time.perf_counter()
                            fn()
                            times.append(time.perf_counter() - t0)
                times.sort()
                c["median_s"] = times[len(times) // 2]
                if flops:
                    c["tflops"] = flops / c["median_s"] / 1e12
            except Exception as e:  # one failing case (an unsupported backend) must not stop the rest
                c["error"] = str(e).split("\n")[0][:200]
            lines.append(json.dumps(c, sort_keys=True))
            print(lines[-1], flush=True)
            if cuda:
                torch.cuda.empty_cache()
    prof.export_chrome_trace(path)
    with open(path, "rb") as f, gzip.open(path + ".gz", "wb", compresslevel=6) as g:
        shutil.copyfileobj(f, g)
    os.remove(path)
    with open(os.path.join(a.out, "kernels.jsonl"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
