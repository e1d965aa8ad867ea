#!/usr/bin/python3
"""GPU time per op class and step: measured in a Kineto training trace vs predicted by placesim.

Usage:  tools/op_class_times.py TRAINING_TRACE.json[.gz] SIMULATED_TRACE.json

Measured: every kernel/memcpy/memset launched inside a ProfilerStep#N annotation, attributed to the
innermost framework op that launched it (its "External id") and to `update` when launched inside an
Optimizer.* annotation; the mean over the steps. Predicted: the ops of `placesim simulate --trace`,
classed by graph op type. Classes: conv, conv_bwd, norm, gemm, reduction (incl. pooling and loss),
copy, elementwise, update (docs/validation.md, "Run on a lent H200").
"""
import collections, gzip, json, sys

def load(p):
    d = json.load(gzip.open(p) if p.endswith('.gz') else open(p))
    return d['traceEvents'] if isinstance(d, dict) else d

def mclass(name, in_opt):
    if in_opt: return 'update'
    n = name.replace('aten::', '')
    if 'convolution_backward' in n: return 'conv_bwd'
    if 'conv' in n: return 'conv'
    if 'batch_norm' in n: return 'norm'
    if n in ('mm', 'addmm', 'bmm', 'matmul', 'linear'): return 'gemm'
    if any(k in n for k in ('pool', 'mean', 'sum', 'softmax', 'nll', 'loss')): return 'reduction'
    if n in ('copy_', 'to', '_to_copy'): return 'copy'
    return 'elementwise'

def pclass(t):
    if t.startswith('ConvBackprop') or t.startswith('Conv2DBackprop'): return 'conv_bwd'
    if t in ('Conv', 'Conv2D'): return 'conv'
    if 'BatchNorm' in t: return 'norm'
    if t in ('Gemm', 'MatMul'): return 'gemm'
    if t.startswith('ApplyGradient') or t.startswith('aten::_foreach'): return 'update'
    if any(k in t for k in ('Pool', 'Mean', 'Sum', 'Softmax', 'Reduce')): return 'reduction'
    if t in ('Placeholder', 'VariableV2', 'Const'): return 'input'
    return 'elementwise'

def measured(trace):
    ev = load(trace)
    steps = sorted([e for e in ev if e.get('cat') == 'user_annotation' and e['name'].startswith('ProfilerStep#')], key=lambda e: e['ts'])
    opt = [e for e in ev if e.get('cat') == 'user_annotation' and e['name'].startswith('Optimizer.')]
    ops = sorted([e for e in ev if e.get('cat') == 'cpu_op'], key=lambda e: (e['ts'], -e['dur']))
    inner = {}  # external id -> innermost op name (later ops with the same id overwrite: nested ones start later)
    for o in ops:
        inner[o['args'].get('External id')] = o
    rt = {e['args']['correlation']: e for e in ev if e.get('cat') in ('cuda_runtime', 'cuda_driver')}
    out = collections.Counter()
    for k in ev:
        if k.get('cat') not in ('kernel', 'gpu_memcpy', 'gpu_memset'): continue
        r = rt.get(k['args'].get('correlation'))
        if r is None: continue
        if not any(s['ts'] <= r['ts'] <= s['ts'] + s['dur'] for s in steps): continue
        o = inner.get(k['args'].get('External id'))
        name = o['name'] if o else k['name']
        in_opt = any(a['ts'] <= r['ts'] <= a['ts'] + a['dur'] and a['tid'] == r['tid'] for a in opt)
        out[mclass(name, in_opt)] += k['dur'] / len(steps)
    return out

def predicted(simtrace):
    out = collections.Counter()
    for e in load(simtrace):
        if e.get('ph') != 'X':
            continue
        if e.get('cat') == 'kernel':  # Kineto-style trace: GPU kernels carry their op type
            out[pclass(e['args'].get('op type', ''))] += e['dur']
        elif e.get('cat') not in ('launch', 'cpu_op', 'cuda_runtime') and e.get('tid', 0) != 0:
            out[pclass(e['cat'])] += e['dur']  # older simulate --trace: cat = op type
    return out

def main():
    m = measured(sys.argv[1])
    p = predicted(sys.argv[2])
    print('%-12s %12s %12s %8s' % ('class', 'measured us', 'predicted us', 'error'))
    for c in sorted(set(m) | set(p)):
        err = '%+.0f%%' % ((p[c] - m[c]) / m[c] * 100) if m[c] > 0 else 'n/a'
        print('%-12s %12.1f %12.1f %8s' % (c, m[c], p[c], err))
    print('%-12s %12.1f %12.1f %+7.0f%%' % ('total', sum(m.values()), sum(p.values()), (sum(p.values()) - sum(m.values())) / sum(m.values()) * 100))


if __name__ == '__main__':
    main()
