#!/usr/bin/env python3
"""Time real training steps on this machine's GPU (or CPU) and, optionally, record them: a
Kineto trace of a few annotated steps and a PyTorch Execution Trace (ET) of one step with the
Kineto trace of that same step, for `placesim calibrate`, `validate`, `import et --kineto` and
for holding `placesim simulate` predictions of the same workload against a measured step.

Workloads (written here from their published descriptions, not copied):
  gpt2      GPT-2 124M as trained in eager PyTorch by rasbt/LLMs-from-scratch
            ch05/10_llm-training-speed (its README's steps 6 and 7): token + position
            embeddings, dropout 0.1, 12 pre-norm blocks (nn.LayerNorm, multi-head attention,
            nn.GELU(approximate="tanh") MLP of 4x width, dropout on both residual branches), final
            LayerNorm, an untied bias-free output head; loss = cross-entropy over all tokens;
            AdamW(fused=True, weight_decay=0.1). --attention eager: separate bias-free Q/K/V
            linears, the causal mask built on every forward, masked_fill_, softmax of the scores
            over sqrt(head_dim), dropout, @ V (step 6); --attention sdpa: one bias-free QKV linear
            and F.scaled_dot_product_attention(is_causal=True, dropout_p) (step 7).
            --precision bf16 casts the model to bfloat16 (the book's `model.to(torch.bfloat16)`).
  resnet50  torchvision's ResNet-50 (or any torchvision classification model by name, or timm:NAME
            for timm's definition; inception_v3 without its auxiliary head), synthetic images, SGD with momentum 0.9 (weight decay 5e-5),
            --precision amp: torch.autocast(float16) + GradScaler; tf32 / fp32: float32 with
            cuDNN/cuBLAS TF32 on / off. --channels-last for NHWC.

  hf:bert-base / hf:bert-large  Hugging Face transformers' BertForMaskedLM (its default SDPA
            attention) at --seq, one in 7 positions labelled, AdamW (foreach); --precision amp:
            torch.autocast(float16) + GradScaler.

Timing: --warmup steps, then --steps steps between two CUDA events (as the book's loop does:
one interval, synchronised at its end), and per-step events for the median. Prints one JSON line
per run (also appended to OUT/results.jsonl).

Usage:  tools/train_rig.py --model gpt2 --attention sdpa --precision bf16 --batch 8 \
            [--seq 1024] [--vocab 50257] [--steps 20] [--warmup 5] [--device cuda:0] \
            [--out DIR --trace NAME [--trace-steps 3]] [--et NAME] [--threads N]
"""
import argparse
import gzip
import json
import math
import os
import shutil
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class EagerAttention(nn.Module):
    """The book's multi-head attention (chapter 3), causal mask made per forward."""

    def __init__(self, d, heads, drop):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.out = nn.Linear(d, d)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        b, t, d = x.shape
        q = self.q(x).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k(x).view(b, t, self.heads, self.hd).transpose(1, 2)
        v = self.v(x).view(b, t, self.heads, self.hd).transpose(1, 2)
        scores = q @ k.transpose(2, 3)
        mask = torch.triu(torch.ones(t, t, device=x.device, dtype=torch.bool), diagonal=1)
        scores.masked_fill_(mask, -torch.inf)
        w = self.drop(torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1))
        ctx = (w @ v).transpose(1, 2).contiguous().view(b, t, d)
        return self.out(ctx)


class SdpaAttention(nn.Module):
    """One QKV projection and PyTorch's fused scaled-dot-product attention."""

    def __init__(self, d, heads, drop):
        super().__init__()
        self.heads, self.hd, self.p = heads, d // heads, drop
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        ctx = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0.0,
                                             is_causal=True)
        return self.out(ctx.transpose(1, 2).contiguous().view(b, t, d))


class Block(nn.Module):
    def __init__(self, d, heads, drop, attention):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.att = (EagerAttention if attention == "eager" else SdpaAttention)(d, heads, drop)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        x = x + self.drop(self.att(self.n1(x)))
        return x + self.drop(self.mlp(self.n2(x)))


class Gpt(nn.Module):
    def __init__(self, vocab, ctx, d, heads, layers, drop, attention):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.drop = nn.Dropout(drop)
        self.blocks = nn.Sequential(*[Block(d, heads, drop, attention) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.drop(self.tok(idx) + self.pos(torch.arange(t, device=idx.device)))
        return self.head(self.norm(self.blocks(x)))


def build(a, dev):
    """(step function, samples per step, description) for the chosen workload."""
    torch.manual_seed(123)
    if a.precision == "tf32":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    elif a.precision == "fp32":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    if a.model == "gpt2":
        m = Gpt(a.vocab, a.seq, a.hidden, a.heads, a.layers, 0.1, a.attention).to(dev)
        if a.precision == "bf16":
            m = m.to(torch.bfloat16)
        fused = dev.type == "cuda"
        opt = torch.optim.AdamW(m.parameters(), lr=4e-4, weight_decay=0.1,
                                **({"fused": True} if fused else {}))
        g = torch.Generator().manual_seed(0)
        x = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g)
        y = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g)
        if dev.type == "cuda":
            x, y = x.pin_memory(), y.pin_memory()

        def step():
            opt.zero_grad()
            xb, yb = x.to(dev), y.to(dev)   # the book's loop copies each batch in the step
            loss = F.cross_entropy(m(xb).flatten(0, 1), yb.flatten())
            loss.backward()
            opt.step()
        params = sum(p.numel() for p in m.parameters())
        return step, a.batch * a.seq, "tokens", params
    if a.model.startswith("hf:"):            # Hugging Face BERT masked-LM pre-training
        import transformers
        big = a.model == "hf:bert-large"
        cfg = transformers.BertConfig(hidden_size=1024 if big else 768,
                                      num_hidden_layers=24 if big else 12,
                                      num_attention_heads=16 if big else 12,
                                      intermediate_size=4096 if big else 3072)
        m = transformers.BertForMaskedLM(cfg).to(dev)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-4, weight_decay=0.01)
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(0, cfg.vocab_size, (a.batch, a.seq), generator=g).to(dev)
        labels = torch.full_like(ids, -100)
        labels[:, ::7] = ids[:, ::7]            # ~15 % of the positions predicted
        step = amp_step(opt, lambda: m(input_ids=ids, labels=labels).loss, dev, a.precision == "amp")
        return step, a.batch * a.seq, "tokens", sum(p.numel() for p in m.parameters())
    import torchvision
    if a.model.startswith("timm:"):       # timm's own definition (its benchmark's ViTs, Mixer)
        import timm
        m = timm.create_model(a.model[5:], num_classes=1000).to(dev)
    else:                                 # torchvision's, as tests/data/onnx/generate.py exports them
        kw = dict(aux_logits=False, init_weights=False) if a.model in ("inception_v3", "googlenet") else {}
        m = getattr(torchvision.models, a.model)(**kw).to(dev)
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    m = m.to(memory_format=fmt)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5)
    x = torch.randn(a.batch, 3, a.image, a.image, device=dev).to(memory_format=fmt)
    y = torch.randint(0, 1000, (a.batch,), device=dev)
    step = amp_step(opt, lambda: F.cross_entropy(m(x), y), dev, a.precision == "amp")
    return step, a.batch, "images", sum(p.numel() for p in m.parameters())


def amp_step(opt, loss_fn, dev, amp):
    """One training step: zero_grad, loss_fn() (under autocast f16 with GradScaler when amp),
    backward, optimizer step."""
    scaler = torch.amp.GradScaler("cuda") if amp else None

    def step():
        opt.zero_grad(set_to_none=True)
        if amp:
            with torch.autocast(dev.type, dtype=torch.float16):
                loss = loss_fn()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss = loss_fn()
            loss.backward()
            opt.step()
    return step


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def time_steps(step, dev, n):
    """Interval time of n steps and the median of their per-step times, in seconds."""
    if dev.type == "cuda":
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
        sync(dev)
        ev[0].record()
        for i in range(n):
            step()
            ev[i + 1].record()
        sync(dev)
        per = sorted(ev[i].elapsed_time(ev[i + 1]) / 1e3 for i in range(n))
        return ev[0].elapsed_time(ev[n]) / 1e3, per[n // 2]
    per = []
    t0 = time.perf_counter()
    for _ in range(n):
        s = time.perf_counter()
        step()
        per.append(time.perf_counter() - s)
    total = time.perf_counter() - t0
    per.sort()
    return total, per[n // 2]


def gzip_file(path):
    with open(path, "rb") as f, gzip.open(path + ".gz", "wb", compresslevel=6) as g:
        shutil.copyfileobj(f, g)
    os.remove(path)
    return path + ".gz"


def record(step, dev, a):
    """Kineto trace of a.trace_steps annotated steps (ProfilerStep#N), gzipped."""
    acts = [torch.profiler.ProfilerActivity.CPU]
    if dev.type == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    path = os.path.join(a.out, a.trace + ".json")
    with torch.profiler.profile(activities=acts, record_shapes=not a.no_shapes,
                                schedule=torch.profiler.schedule(wait=0, warmup=1, active=a.trace_steps),
                                on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(1 + a.trace_steps):
            step()
            sync(dev)
            prof.step()
    return gzip_file(path)


def execution_trace(step, dev, a):
    """ET of one step and the Kineto trace of the same step (`import et --kineto`), gzipped."""
    et_path = os.path.join(a.out, a.et + "_et.json")
    k_path = os.path.join(a.out, a.et + "_kineto.json")
    Observer = getattr(torch.profiler, "ExecutionTraceObserver", None) or \
        torch.profiler.ExecutionGraphObserver
    et = Observer()
    et.register_callback(et_path)
    acts = [torch.profiler.ProfilerActivity.CPU]
    if dev.type == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=acts, record_shapes=True) as prof:
        et.start()
        with torch.profiler.record_function("ProfilerStep#1"):
            step()
            sync(dev)
        et.stop()
    et.unregister_callback()
    prof.export_chrome_trace(k_path)
    return gzip_file(et_path), gzip_file(k_path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True,
                    help="gpt2, hf:bert-base, hf:bert-large, a torchvision classification model "
                         "(resnet50, densenet121, ...) or timm:NAME")
    ap.add_argument("--attention", choices=["eager", "sdpa"], default="sdpa")
    ap.add_argument("--precision", choices=["bf16", "amp", "tf32", "fp32"], default="bf16")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--image", type=int, default=0, help="image size (0: 299 for inception_v3, else 224)")
    ap.add_argument("--cudnn-benchmark", action="store_true",
                    help="torch.backends.cudnn.benchmark = True (timm's benchmark.py sets it)")
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    ap.add_argument("--out", default="")
    ap.add_argument("--trace", default="", help="NAME: write OUT/NAME.json.gz (Kineto)")
    ap.add_argument("--trace-steps", type=int, default=3)
    ap.add_argument("--no-shapes", action="store_true",
                    help="record the trace without input shapes (less profiler overhead per op)")
    ap.add_argument("--et", default="", help="NAME: write OUT/NAME_et.json.gz and NAME_kineto.json.gz")
    a = ap.parse_args()
    if (a.trace or a.et) and not a.out:
        ap.error("--trace and --et need --out")
    if a.threads:
        torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    if not a.image:
        a.image = 299 if a.model == "inception_v3" else 224
    if a.model not in ("gpt2", "hf:bert-base", "hf:bert-large") and not a.model.startswith("timm:"):
        import torchvision
        if not callable(getattr(torchvision.models, a.model, None)):
            ap.error("--model: expected gpt2, hf:bert-base, hf:bert-large, a torchvision model name or timm:NAME, got " + a.model)
    torch.backends.cudnn.benchmark = a.cudnn_benchmark
    if a.out:
        os.makedirs(a.out, exist_ok=True)
    step, samples, unit, params = build(a, dev)
    for _ in range(a.warmup):
        step()
    sync(dev)
    interval, median = time_steps(step, dev, a.steps)
    res = {"model": a.model, "precision": a.precision, "batch": a.batch, "steps": a.steps,
           "step_s_interval": interval / a.steps, "step_s_median": median,
           unit + "_per_s": samples * a.steps / interval, "parameters": params,
           "torch": torch.__version__, "device": str(dev)}
    if a.model.startswith("hf:"):
        res.update(seq=a.seq)
    elif a.model == "gpt2":
        res.update(attention=a.attention, seq=a.seq, vocab=a.vocab, layers=a.layers, hidden=a.hidden)
    else:
        res.update(image=a.image, channels_last=a.channels_last)
        if a.cudnn_benchmark:
            res["cudnn_benchmark"] = True
    if dev.type == "cuda":
        res["gpu"] = torch.cuda.get_device_name(dev)
        res["cuda"] = torch.version.cuda
        res["cudnn"] = torch.backends.cudnn.version()
        res["max_allocated_gb"] = torch.cuda.max_memory_allocated(dev) / 2**30
    if a.trace:
        t0 = time.perf_counter()
        res["trace"] = os.path.basename(record(step, dev, a))
        res["trace_record_shapes"] = not a.no_shapes
        res["trace_wall_s"] = time.perf_counter() - t0
    if a.et:
        res["et"] = [os.path.basename(p) for p in execution_trace(step, dev, a)]
    line = json.dumps(res, sort_keys=True)
    print(line, flush=True)
    if a.out:
        with open(os.path.join(a.out, "results.jsonl"), "a") as f:
            f.write(line + "\n")
    assert math.isfinite(interval)


if __name__ == "__main__":
    main()
