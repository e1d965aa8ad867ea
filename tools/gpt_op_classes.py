#!/usr/bin/python3
"""GPU time per training step and op class for a transformer: a Kineto trace vs `placesim simulate --trace`.

Usage:  tools/gpt_op_classes.py TRAINING_TRACE.json[.gz] SIMULATED_TRACE.json [--vocab-min N]

Measured: every kernel, memcpy and memset of the trace, classed by its kernel name (and, for GEMMs,
by the launching aten op's input dimensions: a GEMM with a dimension of at least --vocab-min,
default 30000, is the output head `lm_head`), summed and divided by the number of
`ProfilerStep#N` annotations. Kernels launched inside an `Optimizer.*` annotation are `update`.
Predicted: the kernels of the simulated trace (cat "kernel"), classed by graph op type and name.

Classes: gemm, lm_head, attention (fused SDPA / FlashAttention kernels, or the eager attention's
batched matmuls and softmax), layernorm, softmax_loss (the output head's softmax / cross-entropy
and its gradient, the fill of the logits' gradient, nll), dropout, gelu, elementwise, reduction
(bias gradients and other reductions), copy (cat, split, transposes, contiguous copies), update,
embedding, other. docs/validation.md, "GPT-2 per op class" (2026-12-04).
"""
import argparse, collections, gzip, json, sys

CLASSES = ['gemm', 'lm_head', 'attention', 'layernorm', 'softmax_loss', 'dropout', 'gelu',
           'elementwise', 'reduction', 'copy', 'update', 'embedding', 'other']


def load(p):
    try:
        d = json.load(gzip.open(p) if p.endswith('.gz') else open(p))
    except (OSError, ValueError) as e:
        sys.exit('%s: not a readable Chrome/Kineto JSON trace (%s)' % (p, e))
    ev = d.get('traceEvents') if isinstance(d, dict) else d
    if not isinstance(ev, list):
        sys.exit('%s: expected a Chrome trace (a list of events, or an object with "traceEvents")' % p)
    return ev


def kernel_class(name, op, dims, vocab_min):
    """Class of a measured kernel from its name; op, dims: the launching aten op and its inputs."""
    n = name
    flat = [x for d in (dims or []) if isinstance(d, list) for x in d if isinstance(x, int)]
    head = any(x >= vocab_min for x in flat)
    if any(k in n for k in ('sdpa', 'flash_fwd', 'flash_bwd', 'fmha', 'compute_dot_do_o',
                            'convert_dq', 'philox::unpack')):
        return 'attention'
    if any(k in n for k in ('gemm', 'nvjet', 'cutlass', 'sm90_xmma', 'cublas')):
        if head:
            return 'lm_head'
        return 'attention' if op in ('aten::bmm', 'aten::baddbmm') else 'gemm'  # eager q k^T, p v
    if 'layer_norm' in n or 'GammaBeta' in n:
        return 'layernorm'
    if 'nll_loss' in n or (('SoftMax' in n or 'softmax' in n) and head):
        return 'softmax_loss'
    if 'SoftMax' in n or 'softmax' in n:
        return 'attention'  # the eager attention's softmax over [b, h, s, s]
    if 'FillFunctor' in n and head:
        return 'softmax_loss'  # zeroing the logits' gradient
    if 'dropout' in n or 'masked_scale' in n:
        return 'dropout'
    if 'Gelu' in n:
        return 'gelu'
    if 'FusedOptimizer' in n or 'Adam' in n or 'multi_tensor_apply' in n:
        return 'update'
    if 'reduce_kernel' in n:
        return 'reduction'
    if 'CatArray' in n or 'copy' in n or 'Memcpy' in n:
        return 'copy'
    if 'embedding' in n or 'radix_sort' in n or 'scatter' in n or 'compute_grad_weight' in n or \
            'unique_by_key' in n or 'DeviceScan' in n or 'partial' in n or 'gather' in n:
        return 'embedding'
    if 'elementwise' in n or 'Memset' in n:
        return 'elementwise'
    return 'other'


def measured(trace, vocab_min):
    ev = load(trace)
    steps = [e for e in ev if e.get('cat') == 'user_annotation' and e['name'].startswith('ProfilerStep#')]
    if not steps:
        sys.exit('%s: no ProfilerStep#N annotation (record the trace with a torch.profiler schedule)' % trace)
    opt = [e for e in ev if e.get('cat') == 'user_annotation' and e['name'].startswith('Optimizer.')]
    # The embedding gradient's own kernels, its zero fill of [V, E] included (at::zeros inside
    # aten::embedding_dense_backward, which the fill's dims would class as softmax_loss).
    emb = [e for e in ev if e.get('cat') == 'cpu_op' and e['name'] == 'aten::embedding_dense_backward']
    ops = sorted([e for e in ev if e.get('cat') == 'cpu_op'], key=lambda e: (e['ts'], -e['dur']))
    inner = {}  # external id -> innermost op (nested ops start later and overwrite)
    for o in ops:
        inner[o['args'].get('External id')] = o
    rt = {e['args']['correlation']: e for e in ev if e.get('cat') in ('cuda_runtime', 'cuda_driver')}
    out = collections.Counter()
    for k in ev:
        if k.get('cat') not in ('kernel', 'gpu_memcpy', 'gpu_memset'):
            continue
        r = rt.get(k['args'].get('correlation'))
        o = inner.get(k['args'].get('External id'))
        dims = o['args'].get('Input Dims') if o else None
        c = kernel_class(k['name'], o['name'] if o else '', dims, vocab_min)
        if r is not None and any(a['ts'] <= r['ts'] <= a['ts'] + a['dur'] and a['tid'] == r['tid'] for a in opt):
            c = 'update'
        elif r is not None and any(a['ts'] <= r['ts'] <= a['ts'] + a['dur'] and a['tid'] == r['tid'] for a in emb):
            c = 'embedding'
        out[c] += k['dur']
    return {c: v / len(steps) for c, v in out.items()}


def op_class(t, name):
    if t in ('Placeholder', 'VariableV2', 'Const'):
        return None
    if t in ('MatMul', 'Gemm'):
        return 'lm_head' if 'lm_head' in name else 'gemm'
    if t in ('BatchMatMul', 'BatchMatMulV2'):
        return 'attention'  # the eager attention's q k^T and p v
    if t.startswith('FlashAttention') or t.startswith('ScaleMaskSoftmax'):
        return 'attention'
    if 'LayerNorm' in t:
        return 'layernorm'
    if 'SoftmaxCrossEntropy' in t or (t == 'Mul' and 'xent' in name) or t in ('Mean', 'MeanGrad'):
        return 'softmax_loss'
    if t.startswith('Softmax'):
        return 'attention'
    if t.startswith('Dropout'):
        return 'dropout'
    if t.startswith('Gelu'):
        return 'gelu'
    if t.startswith('ApplyGradient') or 'adam' in t.lower() or 'sgd' in t.lower():
        return 'update'
    if t in ('BiasAddGrad', 'Sum') or 'Reduce' in t:
        return 'reduction'
    if t in ('Transpose', 'Split', 'ConcatV2', 'Reshape', 'Identity', 'Stack', 'View', 'Cast'):
        return 'copy'
    if t.startswith('Gather'):
        return 'embedding'
    return 'elementwise'


def predicted(simtrace):
    out = collections.Counter()
    for e in load(simtrace):
        if e.get('ph') != 'X' or e.get('cat') != 'kernel':
            continue
        c = op_class(e['args'].get('op type', ''), e['args'].get('op', e.get('name', '')))
        if c:
            out[c] += e['dur']
    if not out:
        sys.exit('%s: no kernel events (write it with `placesim simulate --trace`)' % simtrace)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('measured')
    ap.add_argument('predicted')
    ap.add_argument('--vocab-min', type=int, default=30000)
    a = ap.parse_args()
    m = measured(a.measured, a.vocab_min)
    p = predicted(a.predicted)
    print('%-13s %12s %12s %8s' % ('class', 'measured us', 'predicted us', 'error'))
    for c in CLASSES:
        if c not in m and c not in p:
            continue
        mv, pv = m.get(c, 0.0), p.get(c, 0.0)
        err = '%+.0f%%' % ((pv - mv) / mv * 100) if mv > 0 else 'n/a'
        print('%-13s %12.1f %12.1f %8s' % (c, mv, pv, err))
    tm, tp = sum(m.values()), sum(p.values())
    print('%-13s %12.1f %12.1f %+7.0f%%' % ('total', tm, tp, (tp - tm) / tm * 100))


if __name__ == '__main__':
    main()
