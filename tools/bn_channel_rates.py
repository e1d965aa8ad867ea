#!/usr/bin/env python3
"""Achieved bandwidth of BatchNorm and the memory-bound ops of a ResNet training trace (Kineto).

Usage: bn_channel_rates.py TRACE.json[.gz] BATCH resnet50|resnet18 [IMAGE_PX]

The trace must hold `ProfilerStep#N` annotations with every forward and backward BatchNorm of
the model in each step (PyTorch eager, NCHW: aten::cudnn_batch_norm and its backward). Kernels
are tied to their framework op by External id -> runtime correlation. Shapes come from the
model's structure (torchvision's ResNet, the BatchNorms in forward order), checked against the
BatchNorm kernels' grid (one thread block per channel: grid.x == C).

Prints one row per distinct op and shape: the median kernel time over the steps, the bytes the
cost model counts (BatchNorm: two reads and one write forward, two reads of x and dy and one
write of dx backward; ReLU in place one read and one write; its backward and the residual add
two reads and one write; 4 bytes per element), the achieved GB/s, and for BatchNorm the GB/s per
channel (sim/cost_model.cpp, batch_norm_channel_rate).
"""
import collections
import gzip
import json
import statistics
import sys


def batch_norms(model, px):
    """[(C, H)] of every BatchNorm of torchvision's model, in forward order."""
    if model == "resnet50":
        bn = [(64, px // 2)]
        stages = [(64, 256, px // 4, px // 4, 3), (128, 512, px // 4, px // 8, 4),
                  (256, 1024, px // 8, px // 16, 6), (512, 2048, px // 16, px // 32, 3)]
        for width, out, hw_in, hw, blocks in stages:
            for b in range(blocks):
                # conv1 (1x1) keeps the block's input size; conv2 strides (v1.5); downsample.
                bn += [(width, hw_in if b == 0 else hw), (width, hw), (out, hw)]
                if b == 0:
                    bn.append((out, hw))
        return bn
    if model == "resnet18":
        bn = [(64, px // 2)]
        for width, hw, ds in [(64, px // 4, False), (128, px // 8, True), (256, px // 16, True),
                              (512, px // 32, True)]:
            bn += [(width, hw), (width, hw)] + ([(width, hw)] if ds else []) + [(width, hw)] * 2
        return bn
    sys.exit(f"bn_channel_rates.py: unknown model {model!r} (resnet50, resnet18)")


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    path, batch, model = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    px = int(sys.argv[4]) if len(sys.argv) > 4 else 224
    with (gzip.open(path) if path.endswith(".gz") else open(path)) as f:
        events = json.load(f)["traceEvents"]
    kernels, launches = collections.defaultdict(list), collections.defaultdict(list)
    for e in events:
        if e.get("cat") in ("kernel", "Kernel"):
            kernels[e["args"].get("correlation")].append(e)
        elif e.get("cat") in ("cuda_runtime", "Runtime"):
            launches[e["args"].get("External id")].append(e["args"].get("correlation"))
    ops = [e for e in events if e.get("cat") in ("cpu_op", "Operator")]
    steps = sorted((e for e in events if e.get("name", "").startswith("ProfilerStep#")
                    and e.get("cat") == "user_annotation"), key=lambda e: e["ts"])
    bns = batch_norms(model, px)

    def launched(op):
        return [k for c in launches.get(op["args"].get("External id"), []) for k in kernels[c]]

    rows = collections.defaultdict(list)  # (kind, C, H) -> [us]
    for s in steps:
        inside = [e for e in ops if s["ts"] <= e["ts"] <= s["ts"] + s["dur"]]
        inside.sort(key=lambda e: e["ts"])
        fwd = [e for e in inside if e["name"] == "aten::cudnn_batch_norm"]
        bwd = [e for e in inside if e["name"] == "aten::cudnn_batch_norm_backward"]
        if len(fwd) != len(bns) or len(bwd) != len(bns):
            print(f"{s['name']}: {len(fwd)}/{len(bwd)} BatchNorms, {len(bns)} expected: skipped")
            continue
        for kind, seq in (("bn_fwd", fwd), ("bn_bwd", list(reversed(bwd)))):
            for (c, h), op in zip(bns, seq):
                ks = [k for k in launched(op) if "bn_" in k["name"]]
                if not ks or ks[0]["args"].get("grid", [c])[0] != c:
                    sys.exit(f"bn_channel_rates.py: {path}: {op['name']} at ts {op['ts']}: "
                             f"expected one block per channel ({c}), got {ks[:1]}")
                rows[(kind, c, h)].append(sum(k["dur"] for k in ks))
        # ReLU (in place) after each BatchNorm or residual add: the shape of the tensor before it.
        shape, relus = None, []
        it = iter(bns)
        for e in inside:
            ks = launched(e)
            if e["name"] == "aten::cudnn_batch_norm":
                shape = next(it)
            elif e["name"] in ("aten::clamp_min_", "aten::clamp_min") and ks:
                relus.append(shape)
                rows[("relu", *shape)].append(sum(k["dur"] for k in ks))
            elif e["name"] == "aten::threshold_backward" and ks and relus:
                rows[("relu_bwd", *relus.pop())].append(sum(k["dur"] for k in ks))
            elif e["name"] == "aten::add_" and ks and relus and shape:
                if ks[0]["dur"] < 4 and "long" in ks[0]["name"]:
                    rows[("counter_add", 1, 1)].append(ks[0]["dur"])
                elif not bwd or e["ts"] < bwd[0]["ts"]:
                    rows[("residual_add", *shape)].append(sum(k["dur"] for k in ks))
            elif e["name"] in ("aten::max_pool2d_with_indices",
                               "aten::max_pool2d_with_indices_backward") and ks:
                rows[(e["name"].split("::")[1], 64, px // 4)].append(sum(k["dur"] for k in ks))
    passes = {"bn_fwd": 3, "bn_bwd": 5, "relu": 2, "relu_bwd": 3, "residual_add": 3}
    print("| op | C | HxW | calls | median us | GB/s | GB/s per channel |")
    print("|---|---|---|---|---|---|---|")
    for (kind, c, h), us in sorted(rows.items()):
        t = statistics.median(us)
        line = f"| {kind} | {c} | {h}x{h} | {len(us)} | {t:.1f} |"
        if kind in passes:
            gbs = passes[kind] * 4 * batch * c * h * h / t / 1e3
            line += f" {gbs:.0f} |" + (f" {gbs / c:.2f} |" if kind.startswith("bn") else " |")
        else:
            line += " | |"
        print(line)


if __name__ == "__main__":
    main()
