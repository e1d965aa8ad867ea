#!/usr/bin/env python3
"""NVIDIA's one-GPU BERT-large SQuAD rows against the same README's other tables on the same stack
(docs/validation.md, "NVIDIA's SQuAD rows against the same README's inference and pre-training
tables", session 32, h-squadnv).

    tools/squad_stack_check.py [--placesim build/placesim]

Three tables, all from tests/data (nothing fitted):
1. SQuAD inference (seq 384, forward only): the sum of the predicted forward kernels of a training
   step at the inference row's batch, dropout kernels left out (run_squad.py's predict loop runs model.eval()),
   against the README's inference sequences/s. Host time and the predict loop's per-example
   `.cpu().tolist()` are not in the prediction (a few ms a batch).
2. Pre-training on 20.06, one GPU (tests/data/dle_bert_same_stack.csv): the README's micro-batch with
   accumulate=64 (the runs accumulated 1,024-16,384: the optimizer is amortized in both).
3. The one-GPU `bert-large-squad` rows of tests/data/published_throughput.csv with an inference row
   of their container, system and precision, split: the predicted step into the forward + backward
   kernels and the rest (optimizer, clipper, host gaps), the forward + backward scaled by table 1's
   ratio (published / predicted inference throughput: run_squad.py's own forward on that stack),
   and what the published step leaves over.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

SAME_STACK = "tests/data/dle_bert_same_stack.csv"
PUBLISHED = "tests/data/published_throughput.csv"
SQUAD = "layers=24,hidden=1024,heads=16,vocab=30522,positions=512,seq=384,masked=1,qkv=separate"
PRETRAIN = "layers=24,hidden=1024,heads=16,vocab=30528,positions=512,optimizer=lamb,optimizer_impl=fused"
PRECISION = {"FP32": "precision=f32", "TF32": "math_mode=tf32", "AMP": "precision=f16"}
SQUAD_OPT = {"FP32": "optimizer_impl=per_param,optimizer=bertadam,grad_clip=apex",
             "TF32": "optimizer_impl=per_param,optimizer=bertadam,grad_clip=apex",
             "AMP": "optimizer_impl=fused,grad_clip=apex,master_weights=apex"}
ACCUMULATE = 64


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def simulate(placesim, opts, cluster, parallel=None, trace=None):
    cmd = [placesim, "simulate", "--graph", "gpt", "--graph-opt", opts, "--cluster", cluster,
           "--quiet", "--json"]
    cmd += ["--parallel", parallel] if parallel else ["--placement", "single-gpu"]
    cmd += ["--trace", trace] if trace else []
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("placesim failed: %s\n%s" % (" ".join(cmd), out.stderr))
    return json.loads(out.stdout)["step_time_s"]


def kernel_split(placesim, opts, cluster):
    """(step ms, forward ms, forward dropout ms, backward ms) of one simulated step."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        step = simulate(placesim, opts, cluster, trace=path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    fwd = drop = bwd = 0.0
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "kernel":
            continue
        ms = e["dur"] / 1000.0
        if e["name"].startswith("gradients/"):
            bwd += ms
        elif e["name"].startswith("gpt/"):
            fwd += ms
            drop += ms if "dropout" in e["name"] else 0.0
    return step * 1e3, fwd, drop, bwd


def pct(pred, pub):
    return "%+.1f %%" % (100.0 * (pred / pub - 1.0))


def inference_table(placesim, same):
    print("1. SQuAD inference, seq 384 (forward kernels, no dropout)")
    ratio = {}
    for r in (r for r in same if r["kind"] == "inference"):
        b = int(r["micro_batch"])
        opts = "%s,batch=%d,%s,%s" % (SQUAD, b, PRECISION[r["precision"]], SQUAD_OPT[r["precision"]])
        _, fwd, drop, _ = kernel_split(placesim, opts, r["cluster"])
        pred = b * 1e3 / (fwd - drop)
        pub = float(r["published_seq_per_s"])
        ratio[(r["container"], r["system"], r["precision"])] = pub / pred
        print("  %-5s %-14s %-4s b%-2d published %6.1f seq/s  predicted %6.1f  %s" %
              (r["container"], r["system"], r["precision"], b, pub, pred, pct(pred, pub)))
    return ratio


def pretrain_table(placesim, same):
    print("2. Pre-training on 20.06, one GPU, optimizer amortized (accumulate=%d)" % ACCUMULATE)
    for r in (r for r in same if r["kind"] == "pretrain"):
        b = int(r["micro_batch"])
        opts = "%s,seq=%s,masked=%s,batch=%d,%s" % (PRETRAIN, r["seq"], r["masked"], b, PRECISION[r["precision"]])
        step = simulate(placesim, opts, r["cluster"], parallel="dp=1,accumulate=%d" % ACCUMULATE)
        pred = b * ACCUMULATE / step
        pub = float(r["published_seq_per_s"])
        print("  %-14s %-4s seq %-3s b%-3d published %6.1f seq/s  predicted %6.1f  %s" %
              (r["system"], r["precision"], r["seq"], b, pub, pred, pct(pred, pub)))


def squad_table(placesim, ratio):
    print("3. One-GPU SQuAD rows: published step against forward+backward scaled by table 1")
    for r in rows(PUBLISHED):
        if r["model"] != "bert-large-squad" or r["gpus"] != "1":
            continue
        container = "20.06" if "20.06" in r["system"] else "21.11"
        system = r["system"].replace(" (pytorch-20.06)", "")
        k = ratio.get((container, system, r["precision"]))
        if k is None:
            continue
        b = int(r["batch"])
        step, fwd, _, bwd = kernel_split(placesim, r["graph_opt"], r["cluster"])
        pub_step = b * 1e3 / float(r["published"])
        rest = step - fwd - bwd
        scaled = (fwd + bwd) / k
        print("  %-5s %-14s %-4s b%-2d published %5.0f ms  predicted %5.0f (fwd+bwd %5.0f, rest %4.0f)  "
              "fwd+bwd / %.2f = %5.0f  left %+5.0f ms" %
              (container, system, r["precision"], b, pub_step, step, fwd + bwd, rest, k, scaled, pub_step - scaled - rest))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--placesim", default="build/placesim")
    a = ap.parse_args()
    same = rows(SAME_STACK)
    ratio = inference_table(a.placesim, same)
    pretrain_table(a.placesim, same)
    squad_table(a.placesim, ratio)


if __name__ == "__main__":
    main()
