#!/usr/bin/python3
"""Host time of torch.optim's step on this machine's torch, CPU tensors of one element, so that
the step's time is its Python and dispatcher alone (docs/validation.md, "The host side of the
optimizer step").

Usage:  /usr/bin/python3 tools/optim_host_rig.py [--params 50,100,200,400] [--reps 300] [--rounds 5]

For each optimizer (SGD with momentum 0.9, with and without weight decay; Adam), foreach=False
and foreach=True, and each parameter count N: the step's thread CPU time (time.thread_time_ns,
so that other processes on the machine do not count), the median of --reps steps, the least of
--rounds such medians. Then per optimizer a least-squares line over N: the fixed part (us) and
the part per parameter tensor (us). Beside them the pieces a step is made of, timed the same way:
one in-place op dispatched from Python (`p.add_(g)`), the per-parameter Python of the optimizer's
gathering loop (`for p in params: if p.grad is not None: ...append...; state lookup`), and one
foreach op over N tensors (torch._foreach_add_, whose CPU kernel loops over the tensors in C++).
Prints one JSON line per measurement and the fits; the figures depend on this CPU and torch.
"""
import argparse
import json
import statistics
import time

import torch


def timed(fn, reps, rounds):
    best = None
    for _ in range(rounds):
        ts = []
        for _ in range(reps):
            t0 = time.thread_time_ns()
            fn()
            ts.append(time.thread_time_ns() - t0)
        m = statistics.median(ts)
        best = m if best is None else min(best, m)
    return best / 1e3  # us


def make_params(n, numel=1):
    ps = [torch.nn.Parameter(torch.zeros(numel)) for _ in range(n)]
    for p in ps:
        p.grad = torch.ones(numel)
    return ps


OPTIMIZERS = {
    "sgd_momentum": lambda ps, fe: torch.optim.SGD(ps, lr=0.1, momentum=0.9, foreach=fe),
    "sgd_momentum_wd": lambda ps, fe: torch.optim.SGD(ps, lr=0.1, momentum=0.9,
                                                      weight_decay=5e-5, foreach=fe),
    "adam": lambda ps, fe: torch.optim.Adam(ps, lr=1e-3, foreach=fe),
}


def fit(xs, ys):
    mx, my = statistics.mean(xs), statistics.mean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--params", default="50,100,200,400")
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    ns = [int(x) for x in a.params.split(",")]
    torch.set_num_threads(1)
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads()}))
    fits = {}
    for name, make in OPTIMIZERS.items():
        for fe in (False, True):
            ys = []
            for n in ns:
                ps = make_params(n)
                opt = make(ps, fe)
                opt.step()  # the state (momentum buffers, Adam's moments) exists from here on
                us = timed(opt.step, a.reps, a.rounds)
                ys.append(us)
                print(json.dumps({"optimizer": name, "foreach": fe, "params": n, "step_us": round(us, 1)}))
            fits[f"{name} foreach={fe}"] = fit(ns, ys)
    for n in ns:
        ps = make_params(n)
        gs = [p.grad for p in ps]
        state = {p: {"momentum_buffer": torch.zeros(1)} for p in ps}

        def gather():
            params, grads, bufs = [], [], []
            for p in ps:
                if p.grad is not None:
                    params.append(p)
                    grads.append(p.grad)
                    bufs.append(state[p].get("momentum_buffer"))

        def per_op():
            for p, g in zip(ps, gs):
                p.data.add_(g)

        def foreach_op():
            torch._foreach_add_(gs, gs)

        with torch.no_grad():
            row = {"params": n, "gather_us": round(timed(gather, a.reps, a.rounds), 1),
                   "add_per_tensor_us": round(timed(per_op, a.reps, a.rounds), 1),
                   "foreach_add_us": round(timed(foreach_op, a.reps, a.rounds), 1)}
        print(json.dumps(row))
    one = make_params(1)[0]
    with torch.no_grad():
        d = timed(lambda: one.add_(one.grad), 20 * a.reps, a.rounds)
    print(json.dumps({"one_add_from_python_us": round(d, 2)}))
    for k, (a0, b) in fits.items():
        print(f"{k:32s} fixed {a0:7.1f} us   per parameter {b:6.2f} us")


if __name__ == "__main__":
    main()
