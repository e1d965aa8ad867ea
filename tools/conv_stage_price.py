#!/usr/bin/python3
"""Measured against priced, per ResNet convolution shape and stage, on a channels-last CNN
training trace (docs/validation.md, "Late-stage convolutions on the H200 fitting traces").

Usage:  tools/conv_stage_price.py TRACE.json[.gz] PRICING.json [--shapes SHAPED_TRACE.json[.gz]]

TRACE is a Kineto trace of a few training steps of torchvision's ResNet (tools/train_rig.py);
PRICING is `placesim simulate --pricing` of the same graph and batch (built-in resnet50,
layout=nhwc). Each aten::cudnn_convolution / aten::convolution_backward call is timed as the
sum of the kernels it launched, the median over the trace's steps. The forward calls pair in
order with the pricing's `.../Conv2D` ops; a backward call is priced as its layer's
Conv2DBackpropInput + Conv2DBackpropFilter. A trace without `record_shapes` takes the shapes
(and the backward calls' layers) of --shapes, a trace of the same network at another batch,
call by call in order; the batch is scaled.
Prints one line per (direction, input shape, weight shape, stride): calls, measured and priced
us per call, priced / measured, then the same summed per spatial size (H of the input).
"""
import collections
import json
import statistics
import sys

import cnn_trace_report as ctr


def calls_per_step(ev):
    steps = ctr.steps_of(ev)
    per = ctr.kernels_by_step(ev, steps)
    out = []
    for i in range(len(steps)):
        out.append(ctr.last_step_calls(ev, steps[:i + 1], per, ctr.CONV_OPS))
    return out


def shape_of(o):
    if "Input Dims" not in o["args"]:
        return None
    _, x, w, stride = ctr.conv_flops(o)
    return tuple(x), tuple(w), tuple(stride)


def main():
    args = sys.argv[1:]
    shaped = None
    if "--shapes" in args:
        i = args.index("--shapes")
        shaped = args[i + 1]
        args = args[:i] + args[i + 2:]
    if len(args) != 2:
        sys.exit(__doc__)
    steps = calls_per_step(ctr.load(args[0]))
    first = steps[0]
    names = [o["name"] for o, _ in first]
    times = [statistics.median(sum(k["dur"] for k in st[j][1]) for st in steps)
             for j in range(len(first))]
    shapes = [shape_of(o) for o, _ in first]
    if shapes[0] is None:
        if not shaped:
            sys.exit("conv_stage_price: %s has no shapes; give --shapes" % args[0])
        ref = calls_per_step(ctr.load(shaped))[0]
        if [o["name"] for o, _ in ref] != names:
            sys.exit("conv_stage_price: the two traces' convolution calls differ")
        # TRACE's batch is not recorded in it: its file name says it (tools/train_rig.py's _bN_)
        batch = int(args[0].split("_b")[-1].split("_")[0])
        shapes = [((batch,) + x[1:], w, s) for x, w, s in map(shape_of, (o for o, _ in ref))]
    with open(args[1], encoding="utf-8") as f:
        pricing = json.load(f)["ops"]
    fwd = [p for p in pricing if p["op"].endswith("/Conv2D")]
    bwd = collections.defaultdict(float)
    for p in pricing:
        if "/Conv2D_grad/" in p["op"]:
            bwd[p["op"].split("gradients/")[1].split("/Conv2D_grad")[0]] += p["time_ns"] / 1e3
    layer_of_shape = {}
    nf = 0
    priced = []
    for name, sh in zip(names, shapes):
        if name == "aten::cudnn_convolution":
            layer = fwd[nf]["op"][:-len("/Conv2D")]
            layer_of_shape.setdefault(sh, layer)
            priced.append(fwd[nf]["time_ns"] / 1e3)
            nf += 1
        else:
            priced.append(bwd[layer_of_shape[sh]])
    if nf != len(fwd):
        sys.exit("conv_stage_price: %d forward calls, %d priced Conv2D ops" % (nf, len(fwd)))
    rows = collections.OrderedDict()
    for name, sh, t, p in zip(names, shapes, times, priced):
        r = rows.setdefault(("fwd" if name == "aten::cudnn_convolution" else "bwd",) + sh, [0, 0.0, 0.0])
        r[0] += 1
        r[1] += t
        r[2] += p
    print("%-4s %-22s %-20s %-6s %5s %10s %10s %7s" % ("dir", "input", "weight", "stride", "calls",
                                                    "meas us", "priced us", "p/m"))
    stage = collections.OrderedDict()
    for (d, x, w, s), (c, t, p) in rows.items():
        print("%-4s %-22s %-20s %-6s %5d %10.1f %10.1f %7.3f" % (
            d, list(x), list(w), "%dx%d" % s, c, t / c, p / c, p / t))
        st = stage.setdefault((d, x[2]), [0, 0.0, 0.0])
        st[0] += c
        st[1] += t
        st[2] += p
    print("\n%-4s %5s %5s %12s %12s %7s" % ("dir", "H", "calls", "meas us", "priced us", "p/m"))
    for (d, h), (c, t, p) in sorted(stage.items()):
        print("%-4s %5d %5d %12.1f %12.1f %7.3f" % (d, h, c, t, p, p / t))
    tt = sum(v[1] for v in stage.values())
    tp = sum(v[2] for v in stage.values())
    print("all  %5s %5d %12.1f %12.1f %7.3f" % ("", sum(v[0] for v in stage.values()), tt, tp, tp / tt))


if __name__ == "__main__":
    main()
