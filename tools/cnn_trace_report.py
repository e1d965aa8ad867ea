#!/usr/bin/python3
"""What a CNN training step's Kineto trace says per step, per kernel family and per conv/BN call
(docs/validation.md, "ResNet-50 on the H200, held out").

Usage:  tools/cnn_trace_report.py TRACE.json[.gz] steps|families|convs|bn|pools|fwd-csv|spatial

steps     per ProfilerStep#N: wall time, kernels launched in it and their summed time (GPU busy),
          aten ops, runtime calls, the longest GPU idle gap between them (where, how long) and
          the host-device syncs (cudaStreamSynchronize and friends).
families  GPU time per step of the convolution and BatchNorm kernel families cuDNN chose
          (legacy dgrad/wgrad engines, sm80 FFMA implicit GEMM, sm90 tensor-core implicit GEMM,
          FFT, Winograd, layout transposes, NCHW / NHWC BatchNorm), then totals of the forward and
          backward convolution calls: FLOPs, time and TFLOP/s.
convs     one line per aten::cudnn_convolution / aten::convolution_backward call of the last step:
          input and weight shape, stride, FLOPs (both gradients where the output mask asks for
          them), the summed time of its kernels and the rate.
bn        one line per cudnn_batch_norm(_backward) / native_batch_norm(_backward) call of the last
          step: input shape, dtype, time, and elements a microsecond counting the passes (forward:
          two reads and a write; backward: x and dy twice, dx once).
pools     one line per aten max/avg pooling call (forward and backward) of the last step: input
          shape, dtype, time, and the elements its kernel's threads cover a microsecond (ATen's
          kernels run a thread per output forward and a thread per input-gradient element
          backward: outputs forward, the gradient's elements backward), then the kernel's name.
fwd-csv   the last step's forward convolutions, one row per distinct shape (time: the mean of its
          calls, every kernel of the call), in tools/conv_rate_check.py's CSV columns, to stdout.
spatial   GPU time per step by the spatial size (H of [N, C, H, W]) of the first 4-D input of the
          innermost aten op that launched each kernel (forward and autograd ops alike; kernels of
          the Optimizer.* annotations apart, `update`; no 4-D input: `other`): what a CNN's stages
          cost, e.g. one ResNet layer3 block (14x14) to extrapolate to deeper nets (docs/validation.md,
          "Deep CNNs on the H200 held-out set").
The trace needs `record_shapes=True` for convs, bn, pools, fwd-csv and spatial (shapes, strides, dtypes).
"""
import collections
import gzip
import json
import sys

CONV_OPS = ("aten::cudnn_convolution", "aten::convolution_backward")
BN_OPS = ("aten::cudnn_batch_norm", "aten::cudnn_batch_norm_backward", "aten::native_batch_norm",
          "aten::native_batch_norm_backward")
POOL_OPS = ("aten::max_pool2d_with_indices", "aten::max_pool2d_with_indices_backward",
            "aten::avg_pool2d", "aten::avg_pool2d_backward")
GPU = ("kernel", "gpu_memcpy", "gpu_memset")
RUNTIME = ("cuda_runtime", "cuda_driver")

FAMILIES = (  # first match wins
    ("legacy dgrad engine", ("dgrad_engine", "dgrad_alg")),
    ("legacy wgrad engine", ("wgrad_alg0_engine", "wgrad_alg1_engine")),
    ("FFT", ("fft2d_", "gemm_cf32cf32", "flip_filter", "regular_fft")),
    ("Winograd", ("winograd",)),
    ("sm80 FFMA implicit GEMM", ("_ffma_",)),
    ("tensor-core implicit GEMM (sm80/sm90 xmma, CUTLASS)",
     ("xmma_fprop", "xmma_dgrad", "xmma_wgrad", "ImplicitGemmConvolution", "fprop", "s16816")),
    ("other legacy conv (implicit_convolve_sgemm)", ("implicit_convolve_sgemm", "scudnn")),
    ("layout transposes", ("nchwToNhwc", "nhwcToNchw", "nhwcAddPadding")),
    ("scale / workspace", ("scalePackedTensor", "init_device_workspace")),
    ("BatchNorm NCHW (one block per channel)", ("bn_fw_tr_1C11", "bn_bw_1C11")),
    ("BatchNorm NHWC", ("batchnorm_fwtr_nhwc", "batchnorm_bwtr_nhwc", "nhwc_batch_norm")),
)


def load(path):
    d = json.load(gzip.open(path) if path.endswith(".gz") else open(path))
    return d["traceEvents"] if isinstance(d, dict) else d


def steps_of(ev):
    return sorted((e for e in ev if e.get("cat") == "user_annotation" and
                   e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])


def inside(s, e):
    return s["ts"] <= e["ts"] <= s["ts"] + s["dur"]


def kernels_by_step(ev, steps):
    """{step index: [GPU activities whose launch lies in the step]}."""
    rt = {e["args"]["correlation"]: e for e in ev if e.get("cat") in RUNTIME}
    out = collections.defaultdict(list)
    for k in ev:
        if k.get("cat") not in GPU:
            continue
        r = rt.get(k["args"].get("correlation"))
        if r is None:
            continue
        for i, s in enumerate(steps):
            if inside(s, r):
                out[i].append((k, r))
                break
    return out


def report_steps(ev, steps, per):
    print("%-16s %9s %8s %10s %8s %8s %14s  %s" % (
        "step", "wall ms", "kernels", "GPU busy ms", "aten ops", "runtime", "max gap at/ms",
        "syncs (ms into step, waited ms)"))
    for i, s in enumerate(steps):
        ks = per.get(i, [])
        order = sorted((k for k, _ in ks), key=lambda k: k["ts"])
        gap = max(((b["ts"] - a["ts"] - a["dur"], a["ts"] + a["dur"] - s["ts"])
                   for a, b in zip(order, order[1:])), default=(0.0, 0.0))
        ops = sum(1 for e in ev if e.get("cat") == "cpu_op" and inside(s, e))
        rts = [e for e in ev if e.get("cat") in RUNTIME and inside(s, e)]
        syncs = ["%s %.2f %.2f" % (e["name"], (e["ts"] - s["ts"]) / 1e3, e["dur"] / 1e3)
                 for e in rts if "Synchronize" in e["name"]]
        print("%-16s %9.2f %8d %10.2f %8d %8d %7.2f/%-6.2f  %s" % (
            s["name"], s["dur"] / 1e3, len(ks), sum(k["dur"] for k, _ in ks) / 1e3, ops, len(rts),
            gap[1] / 1e3, gap[0] / 1e3, "; ".join(syncs) or "none"))


def family(name):
    for fam, keys in FAMILIES:
        if any(k in name for k in keys):
            return fam
    return None


def enclosing_op(ops_by_tid, r, names):
    """The innermost op named in `names` on the launching thread around runtime call r."""
    best = None
    for o in ops_by_tid.get(r["tid"], ()):
        if o["ts"] > r["ts"]:
            break
        if o["name"] in names and o["ts"] + o["dur"] >= r["ts"]:
            best = o
    return best


def last_step_calls(ev, steps, per, names):
    s = steps[-1]
    ops_by_tid = collections.defaultdict(list)
    for o in ev:
        if o.get("cat") == "cpu_op" and inside(s, o):
            ops_by_tid[o["tid"]].append(o)
    for t in ops_by_tid:
        ops_by_tid[t].sort(key=lambda o: (o["ts"], -o["dur"]))
    calls = collections.OrderedDict()
    for k, r in sorted(per.get(len(steps) - 1, []), key=lambda kr: kr[0]["ts"]):
        o = enclosing_op(ops_by_tid, r, names)
        if o is not None:
            calls.setdefault(id(o), (o, []))[1].append(k)
    return list(calls.values())


def literal(text):
    return json.loads(text.replace("True", "true").replace("False", "false"))


def conv_flops(o):
    """FLOPs of a conv call from its recorded shapes and concrete inputs (stride, padding)."""
    a = o["args"]
    dims, ci = a["Input Dims"], a["Concrete Inputs"]
    if o["name"] == "aten::cudnn_convolution":
        x, w = dims[0], dims[1]
        pad, stride, mult = literal(ci[2]), literal(ci[3]), 1
    else:
        x, w = dims[1], dims[2]
        stride, pad = literal(ci[4]), literal(ci[5])
        mask = literal(ci[-1])
        mult = int(mask[0]) + int(mask[1])
    n, c, h, wd = x
    k, cg, r, s = w
    p = (h + 2 * pad[0] - r) // stride[0] + 1
    q = (wd + 2 * pad[1] - s) // stride[1] + 1
    return 2.0 * n * k * p * q * cg * r * s * mult, x, w, stride


def report_families(ev, steps, per):
    n = len(per) or 1
    fam = collections.Counter()
    for i in per:
        for k, _ in per[i]:
            f = family(k["name"])
            if f:
                fam[f] += k["dur"] / n
    print("%-55s %10s" % ("kernel family", "us / step"))
    for f, t in fam.most_common():
        print("%-55s %10.1f" % (f, t))
    tot = {"forward": [0.0, 0.0], "backward": [0.0, 0.0]}
    for o, ks in last_step_calls(ev, steps, per, CONV_OPS):
        fl = conv_flops(o)[0]
        side = tot["forward" if o["name"] == "aten::cudnn_convolution" else "backward"]
        side[0] += fl
        side[1] += sum(k["dur"] for k in ks)
    for side, (fl, us) in tot.items():
        if us > 0:
            print("%-9s convolutions: %.0f GFLOP in %.1f us = %.1f TFLOP/s" % (
                side, fl / 1e9, us, fl / us / 1e6))


def report_convs(ev, steps, per):
    print("%-20s %-22s %-20s %-7s %8s %9s %8s" % ("op", "input", "weight", "stride", "GFLOP", "us",
                                                 "TFLOP/s"))
    for o, ks in last_step_calls(ev, steps, per, CONV_OPS):
        fl, x, w, stride = conv_flops(o)
        us = sum(k["dur"] for k in ks)
        print("%-20s %-22s %-20s %-7s %8.2f %9.1f %8.1f  %s" % (
            o["name"][6:], x, w, "%dx%d" % tuple(stride), fl / 1e9, us, fl / us / 1e6,
            max(ks, key=lambda k: k["dur"])["name"][:70]))


def report_bn(ev, steps, per):
    print("%-28s %-22s %-6s %9s %12s" % ("op", "input", "dtype", "us", "elem/us"))
    for o, ks in last_step_calls(ev, steps, per, BN_OPS):
        x = o["args"]["Input Dims"][0]
        dtype = o["args"]["Input type"][0]
        elems = 1
        for d in x:
            elems *= d
        passes = 5 if o["name"].endswith("_backward") else 3
        us = sum(k["dur"] for k in ks)
        print("%-28s %-22s %-6s %9.1f %12.0f  %s" % (o["name"][6:], x, dtype, us,
                                                      elems * passes / us,
                                                      max(ks, key=lambda k: k["dur"])["name"][:60]))


def report_pools(ev, steps, per):
    print("%-38s %-22s %-6s %9s %12s" % ("op", "input", "dtype", "us", "thread elem/us"))
    for o, ks in last_step_calls(ev, steps, per, POOL_OPS):
        dims = o["args"]["Input Dims"]
        backward = o["name"].endswith("_backward")
        # Backward (grad_output, input, ...): a thread per input element. Forward (input, kernel,
        # stride, ...): a thread per output, the input's elements over the stride's area.
        n = lambda s: 1 if not s else s[0] * n(s[1:])
        if backward:
            elems = n(dims[1])
        else:
            stride = literal(o["args"]["Concrete Inputs"][2])
            elems = n(dims[0]) // (stride[0] * stride[-1])
        us = sum(k["dur"] for k in ks)
        print("%-38s %-22s %-6s %9.1f %12.0f  %s" % (
            o["name"][6:], dims[1] if backward else dims[0], o["args"]["Input type"][0], us,
            elems / us, max(ks, key=lambda k: k["dur"])["name"].replace(
                "(anonymous namespace)::", "").split("(")[0][:70]))


def report_fwd_csv(ev, steps, per):
    rows = collections.OrderedDict()
    for o, ks in last_step_calls(ev, steps, per, ("aten::cudnn_convolution",)):
        fl, x, w, stride = conv_flops(o)
        pad = literal(o["args"]["Concrete Inputs"][2])
        r = rows.setdefault((tuple(x), tuple(w), tuple(stride), tuple(pad)),
                            [fl, 0.0, 0, max(ks, key=lambda k: k["dur"])["name"]])
        r[1] += sum(k["dur"] for k in ks)
        r[2] += 1
    print("op,input_shape,weight_shape,stride,padding,gflop,data_moved_mib,kernel,kernel_us,calls")
    for (x, w, st, pad), (fl, us, calls, kernel) in rows.items():
        out = [x[0], w[0]] + [(x[2 + d] + 2 * pad[d] - w[2 + d]) // st[d] + 1 for d in range(2)]
        n = lambda s: 1 if not s else s[0] * n(s[1:])
        moved = 2 * (n(x) + n(w) + n(out))
        print("conv2d,%s,%s,%s,%s,%r,%r,%s,%r,%d" % (
            "x".join(map(str, x)), "x".join(map(str, w)), "x".join(map(str, st)),
            "x".join(map(str, pad)), fl / 1e9, moved / 2**20,
            kernel.split("(")[0].replace(",", " ")[:100], us / calls, calls))


def report_spatial(ev, steps, per):
    inner = {}  # External id -> innermost op (nested ops start later and overwrite)
    for o in sorted((e for e in ev if e.get("cat") == "cpu_op"), key=lambda e: (e["ts"], -e["dur"])):
        inner[o["args"].get("External id")] = o
    opt = [e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("Optimizer.")]
    out = collections.Counter()
    for i in range(len(steps)):
        for k, r in per.get(i, []):
            if any(inside(a, r) and a["tid"] == r["tid"] for a in opt):
                out["update"] += k["dur"]
                continue
            o = inner.get(k["args"].get("External id"))
            dims = [d for d in ((o or {}).get("args", {}).get("Input Dims") or [])
                    if isinstance(d, list) and len(d) == 4]
            out["%dx%d" % (dims[0][2], dims[0][3]) if dims else "other"] += k["dur"]
    print("%-10s %12s" % ("input H x W", "GPU ms/step"))
    key = lambda kv: (not kv[0][0].isdigit(), -int(kv[0].split("x")[0]) if kv[0][0].isdigit() else 0)
    for name, us in sorted(out.items(), key=key):
        print("%-10s %12.2f" % (name, us / len(steps) / 1e3))
    print("%-10s %12.2f" % ("total", sum(out.values()) / len(steps) / 1e3))


def main():
    modes = ("steps", "families", "convs", "bn", "pools", "fwd-csv", "spatial")
    if len(sys.argv) != 3 or sys.argv[2] not in modes:
        sys.exit("usage: tools/cnn_trace_report.py TRACE.json[.gz] " + "|".join(modes))
    ev = load(sys.argv[1])
    steps = steps_of(ev)
    if not steps:
        sys.exit("%s: no ProfilerStep#N annotation: expected a torch.profiler trace of training "
                 "steps" % sys.argv[1])
    per = kernels_by_step(ev, steps)
    {"steps": report_steps, "families": report_families, "convs": report_convs,
     "bn": report_bn, "pools": report_pools, "fwd-csv": report_fwd_csv,
     "spatial": report_spatial}[sys.argv[2]](ev, steps, per)


if __name__ == "__main__":
    main()
