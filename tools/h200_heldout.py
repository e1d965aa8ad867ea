#!/usr/bin/env python3
"""The held-out H200 steps (docs/validation.md, "Held-out rig run, 2026-12-04 evening"): every
training step the lent H200 timed in tools/rig_heldout.sh and tools/rig_zoo.sh, predicted from its
graph by `placesim simulate` on the imported one-H200 cluster, against the measured 20-step (12 in
the zoo) interval between CUDA events.

    tools/h200_heldout.py [--placesim build/placesim] [--set steps|zoo|gpt24|all]
                          [--calibration CAL.yaml] [--host torch|none]

--set gpt24 adds nothing held out: session 24's GPT-2 124M steps on the same machine and torch
(h200_rig_2026-12-04_results.jsonl), which docs/validation.md's GPT sections check. --calibration
is passed to every simulate (e.g. a host model alone, `calibrate --host-only`).

Prints one line per workload (measured ms, predicted ms, error) and a count inside 10 / 15 %.
The cluster is made from the rig's own `nvidia-smi topo -m` (import topo --nvidia-smi). Exit 1 if
placesim fails on a row.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

D = "tests/data/calibration"
# tools/train_rig.py's GPT-2: bias-free Q/K/V and head, nn.Linear's bias in the GEMM epilogue (torch 2.11).
# Its eager attention (EagerAttention) has three nn.Linear for Q, K and V: qkv=separate; the SDPA
# one a fused projection (SdpaAttention.qkv).
GPT = ("dropout=0.1,optimizer=adam,optimizer_impl=fused,vocab=50257,precision=bf16,"
       "qkv_bias=false,bias_epilogue=true")
# (name, results file, key of the results line, graph, graph options)
STEPS = [
    ("GPT-2 medium shape SDPA b8", "h200_heldout_2026-12-04_results.jsonl",
     dict(model="gpt2", attention="sdpa", hidden=1024, batch=8), "gpt",
     "layers=24,hidden=1024,heads=16,seq=1024,positions=1024,%s,batch=8,attention=flash" % GPT),
    ("GPT-2 medium shape eager b4", "h200_heldout_2026-12-04_results.jsonl",
     dict(model="gpt2", attention="eager", hidden=1024, batch=4), "gpt",
     "layers=24,hidden=1024,heads=16,seq=1024,positions=1024,%s,batch=4,attention=eager,qkv=separate" % GPT),
    ("GPT-2 124M SDPA seq 512 b16", "h200_heldout_2026-12-04_results.jsonl",
     dict(model="gpt2", seq=512, batch=16), "gpt",
     "layers=12,hidden=768,heads=12,seq=512,positions=512,%s,batch=16,attention=flash" % GPT),
    ("GPT-2 124M SDPA seq 2048 b4", "h200_heldout_2026-12-04_results.jsonl",
     dict(model="gpt2", seq=2048, batch=4), "gpt",
     "layers=12,hidden=768,heads=12,seq=2048,positions=2048,%s,batch=4,attention=flash" % GPT),
    ("GPT-2 large shape SDPA b4", "h200_heldout_2026-12-04_results.jsonl",
     dict(model="gpt2", hidden=1280, batch=4), "gpt",
     "layers=36,hidden=1280,heads=20,seq=1024,positions=1024,%s,batch=4,attention=flash" % GPT),
    ("ResNet-50 AMP NCHW b128", "h200_heldout_2026-12-04_results.jsonl",
     dict(model="resnet50", precision="amp", batch=128, channels_last=False), "resnet50",
     "batch=128,precision=f16,grads=f32,layout=nchw,optimizer_impl=foreach,grad_scaler=torch"),
    # channels_last=True: PyTorch's channels-last tensors, layout=nhwc as for the zoo's ONNX graphs
    # (the builders' FusedBatchNorm then runs cuDNN's NHWC kernels; with no layout it is the
    # TensorFlow/MXNet op, docs/cost-model.md).
    ("ResNet-50 AMP NHWC b128", "h200_heldout_2026-12-04_results.jsonl",
     dict(model="resnet50", precision="amp", batch=128, channels_last=True), "resnet50",
     "batch=128,precision=f16,grads=f32,layout=nhwc,optimizer_impl=foreach,grad_scaler=torch"),
    ("ResNet-50 FP32 NCHW b64", "h200_heldout_2026-12-04_results.jsonl",
     dict(model="resnet50", precision="fp32", batch=64), "resnet50",
     "batch=64,layout=nchw,math_mode=f32,optimizer_impl=foreach"),
]
G124 = "layers=12,hidden=768,heads=12,seq=1024,positions=1024"
GPT24 = [
    ("GPT-2 124M SDPA b8 (session 24)", dict(attention="sdpa", batch=8, vocab=50257, precision="bf16"),
     "%s,%s,batch=8,attention=flash" % (G124, GPT)),
    ("GPT-2 124M eager b8 (session 24)", dict(attention="eager", batch=8, vocab=50257),
     "%s,%s,batch=8,attention=eager,qkv=separate" % (G124, GPT)),
    ("GPT-2 124M SDPA b32 (session 24)", dict(attention="sdpa", batch=32),
     "%s,%s,batch=32,attention=flash" % (G124, GPT)),
    ("GPT-2 124M SDPA b8 vocab 50304 (session 24)", dict(attention="sdpa", batch=8, vocab=50304),
     "%s,%s,batch=8,attention=flash" % (G124, GPT.replace("vocab=50257", "vocab=50304"))),
    ("GPT-2 124M eager b8 vocab 50304 (session 24)", dict(attention="eager", batch=8, vocab=50304),
     "%s,%s,batch=8,attention=eager,qkv=separate" % (G124, GPT.replace("vocab=50257", "vocab=50304"))),
]
# tools/train_rig.py's AMP steps run torch.amp.GradScaler("cuda"): scaler.scale(loss).backward(),
# scaler.step(opt), scaler.update() (grad_scaler=torch, docs/workloads.md).
# timm's ViT under torch 2.11 / CUDA 13.0: nn.Linear is addmm on W.t() (a view) with the bias in
# cuBLASLt's epilogue (nvjet_sm90_*_bias_* in the rig's trace), and its fused_attn calls
# F.scaled_dot_product_attention (cuDNN's sdpa kernels in the trace); docs/workloads.md, "ONNX import".
# nn.GELU (timm's ViT Mlp, torchvision's CNBlock) runs one gelu kernel each way (the ViT trace's
# GeluCUDAKernelImpl and GeluBackwardCUDAKernelImpl, 12 each a step): gelu=fused.
ZOO_EXTRA = {"efficientnet_b0": ",silu=inplace",
             "vit_base_patch16_224": ",weight_view=true,bias_epilogue=true,attention=sdpa,gelu=fused",
             "convnext_tiny": ",gelu=fused"}
ZOO_NO_LAYOUT = {"vit_base_patch16_224", "convnext_tiny"}   # no BatchNorm/convolution layout
# train_rig.py runs every zoo model's forward and loss under torch.autocast(dtype=float16):
# autocast=torch types the imported graph as autocast runs it (F32 parameters and the ops off
# autocast's lists, a Cast before each F16 convolution/matmul input; docs/workloads.md).


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]


# Every row ran torch 2.11 eager (no torch.compile) on the rig's Xeon: host=torch charges each
# framework op its host work (models/torch_host.hpp; fitted on session 24's ResNet-50 AMP NHWC b64
# step, not a row here), on the convolutional rows only: its table is a CNN's (convolution,
# BatchNorm, activations), and on the GPT rows its catch-all class overshoots (GPT-2 medium eager
# b4 +25.6 %; docs/validation.md, "The host side of op-dense CNNs"). --host none: no row has it.
HOST_OFF = {"gpt", "vit_base_patch16_224"}
def predict(placesim, cluster, graph, opt, cal=None, host="torch"):
    opt = "%s,host=%s" % (opt, "none" if os.path.basename(graph).replace(".onnx", "") in HOST_OFF else host)
    r = subprocess.run([placesim, "simulate", "--graph", graph, "--graph-opt", opt, "--cluster",
                        cluster, "--placement", "single-gpu", "--json", "--quiet"] +
                       (["--calibration", cal] if cal else []),
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit("h200_heldout: placesim failed on %s %s: %s" % (graph, opt, r.stderr.strip()))
    return json.loads(r.stdout)["step_time_s"] * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--placesim", default="build/placesim")
    ap.add_argument("--set", choices=["steps", "zoo", "gpt24", "all"], default="all")
    ap.add_argument("--calibration", help="calibration YAML passed to every simulate")
    ap.add_argument("--host", choices=["torch", "none"], default="torch",
                    help="--graph-opt host= of every row (default torch: the rig's torch eager)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    cluster = os.path.join(tmp, "h200.yaml")
    subprocess.run([a.placesim, "import", "topo", "--nvidia-smi", os.path.join(D, "h200_nvidia-smi-topo.txt"),
                    "--gpu-model", "H200-SXM-141GB", "-o", cluster, "--quiet"], check=True,
                   capture_output=True)
    rows = []
    if a.set in ("steps", "all"):
        for name, f, key, graph, opt in STEPS:
            hits = [r for r in load(os.path.join(D, f)) if all(r.get(k) == v for k, v in key.items())]
            if len(hits) != 1:
                sys.exit("h200_heldout: %s: expected one line matching %s, found %d" % (f, key, len(hits)))
            rows.append((name, hits[0]["step_s_interval"] * 1e3,
                         predict(a.placesim, cluster, graph, opt, a.calibration, a.host)))
    if a.set == "gpt24":
        f = "h200_rig_2026-12-04_results.jsonl"
        for name, key, opt in GPT24:
            key = dict(key, model="gpt2", hidden=768, seq=1024, precision="bf16")
            key.setdefault("vocab", 50257)
            hits = [r for r in load(os.path.join(D, f)) if all(r.get(k) == v for k, v in key.items())]
            if len(hits) != 1:
                sys.exit("h200_heldout: %s: expected one line matching %s, found %d" % (f, key, len(hits)))
            rows.append((name, hits[0]["step_s_interval"] * 1e3,
                         predict(a.placesim, cluster, "gpt", opt, a.calibration, a.host)))
    if a.set in ("zoo", "all"):
        for r in load(os.path.join(D, "h200_zoo_2026-12-04_results.jsonl")):
            m = r["model"].replace("timm:", "")
            opt = ("training,optimizer=momentum,batch=%d,precision=f16,grads=f32,optimizer_impl=foreach,"
                   "grad_scaler=torch" % r["batch"])
            if m not in ZOO_NO_LAYOUT:
                opt += ",layout=nhwc"
            opt += ZOO_EXTRA.get(m, "") + ",autocast=torch"
            label = "%s AMP%s b%d" % (m, "" if m in ZOO_NO_LAYOUT else " NHWC", r["batch"])
            rows.append((label, r["step_s_interval"] * 1e3,
                         predict(a.placesim, cluster, "tests/data/onnx/%s.onnx" % m, opt, a.calibration, a.host)))
    errs = []
    print("| workload | measured ms | predicted ms | error |\n|---|---|---|---|")
    for name, meas, pred in rows:
        e = (pred / meas - 1) * 100
        errs.append(e)
        print("| %s | %.2f | %.2f | %+.1f %% |" % (name, meas, pred, e))
    print("inside 10 %%: %d of %d; inside 15 %%: %d of %d; mean |error| %.1f %%" % (
        sum(abs(e) <= 10 for e in errs), len(errs), sum(abs(e) <= 15 for e in errs), len(errs),
        sum(map(abs, errs)) / len(errs)))


if __name__ == "__main__":
    main()
