#!/usr/bin/python3
"""Where a BERT-large step's time goes in placesim, per op class (docs/validation.md, "Where a
BERT-large layer's time goes").

Usage:
  tools/bert_op_classes.py PLACESIM classes CLUSTER GRAPH_OPTS   per-class ms: one layer, one step
  tools/bert_op_classes.py PLACESIM ratio CLUSTER_A CLUSTER_B GRAPH_OPTS
                                      per-class step ms on two GPUs and their ratio A / B (the
                                      Hopper decomposition, docs/validation.md, session 15)
  tools/bert_op_classes.py PLACESIM pair CLUSTER GRAPH_OPTS_A GRAPH_OPTS_B
                                      per-class ms per sequence of two option sets on one GPU
                                      (e.g. a TF32 row's and its AMP twin's micro-batches) and
                                      their ratio A / B (docs/validation.md, session 33, h-tf32pass)

`simulate --pricing` prices every op; the layer is gpt/h3 (forward and gradients). Since session
14 the `gpt` graph runs the attention passes of NVIDIA DeepLearningExamples' BertSelfAttention
(scale and mask add as two kernels, dropout on the probabilities and on both residual branches;
docs/workloads.md), so the session-13 `whatif` estimate of those passes is gone: the graph prices
them (`dropout=0` in GRAPH_OPTS shows the graph without dropout).
"""
import collections, json, subprocess, sys, tempfile


def op_class(name):
    if name.startswith('update/'): return 'update'
    if '/flash_attention' in name: return 'flash attention'
    if any(k in name for k in ('MatMul', '/scores', '/context', 'lm_head')): return 'gemm'
    if '/attn/' in name and any(k in name for k in ('/scale', 'mask_add', 'softmax',
                                                     'dropout_probs')):
        return 'scores: scale, mask, softmax, dropout'
    if '/dropout' in name and '/h' in name: return 'hidden dropout'
    if '/ln_' in name: return 'layer norm'
    if 'gelu' in name: return 'gelu'
    if 'BiasAdd' in name or 'residual' in name: return 'bias add, residual'
    if '_heads' in name or 'split_qkv' in name: return 'head transposes, qkv split'
    return 'other (embedding, head, loss)'


def simulate(binary, cluster, opts, gpus=1):
    cmd = [binary, 'simulate', '--graph', 'gpt', '--graph-opt', opts, '--cluster', cluster,
           '--quiet', '--json']
    cmd += ['--parallel', f'dp={gpus}'] if gpus > 1 else ['--placement', 'single-gpu']
    with tempfile.NamedTemporaryFile(suffix='.json') as f:
        out = subprocess.run(cmd + ['--pricing', f.name], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"{' '.join(cmd)}: exited {out.returncode}: {out.stderr.strip()}")
        return json.loads(out.stdout)['step_time_s'], json.load(open(f.name))['ops']


def classes(binary, cluster, opts):
    step, ops = simulate(binary, cluster, opts)
    layer, total = collections.Counter(), collections.Counter()
    for o in ops:
        c, ms = op_class(o['op']), o['time_ns'] / 1e6
        total[c] += ms
        if '/h3/' in o['op'] and not o['op'].startswith('update/'): layer[c] += ms
    print(f'{cluster} {opts}: step {step * 1e3:.1f} ms')
    print('%-38s %9s %6s %9s %6s' % ('class', 'layer ms', '', 'step ms', ''))
    lt, st = sum(layer.values()), sum(total.values())
    for c in sorted(total, key=lambda c: -total[c]):
        print('%-38s %9.3f %5.1f%% %9.1f %5.1f%%' %
              (c, layer[c], 100 * layer[c] / lt, total[c], 100 * total[c] / st))
    print('%-38s %9.3f %6s %9.1f' % ('total', lt, '', st))


def ratio(binary, cluster_a, cluster_b, opts):
    (sa, oa), (sb, ob) = simulate(binary, cluster_a, opts), simulate(binary, cluster_b, opts)
    ca, cb = collections.Counter(), collections.Counter()
    for ops, c in ((oa, ca), (ob, cb)):
        for o in ops: c[op_class(o['op'])] += o['time_ns'] / 1e6
    print(f'{opts}: step {cluster_a} {sa * 1e3:.1f} ms, {cluster_b} {sb * 1e3:.1f} ms, '
          f'ratio {sa / sb:.2f}')
    print('%-38s %9s %6s %9s %6s %6s' % ('class', 'A ms', '', 'B ms', '', 'A / B'))
    for c in sorted(ca, key=lambda c: -ca[c]):
        print('%-38s %9.1f %5.1f%% %9.1f %5.1f%% %6.2f' % (c, ca[c], 100 * ca[c] / (sa * 1e3),
              cb[c], 100 * cb[c] / (sb * 1e3), ca[c] / cb[c] if cb[c] else 0))
    # The engine's step minus the ops' sum: launch and host gaps the kernels do not hide.
    print('%-38s %9.1f %6s %9.1f' % ('step - sum of ops (host gaps)', sa * 1e3 - sum(ca.values()),
                                      '', sb * 1e3 - sum(cb.values())))


def batch_of(opts):
    return next(int(kv.split('=')[1]) for kv in opts.split(',') if kv.startswith('batch='))


def pair(binary, cluster, opts_a, opts_b):
    (sa, oa), (sb, ob) = simulate(binary, cluster, opts_a), simulate(binary, cluster, opts_b)
    na, nb = batch_of(opts_a), batch_of(opts_b)
    ca, cb = collections.Counter(), collections.Counter()
    for ops, c, n in ((oa, ca, na), (ob, cb, nb)):
        for o in ops: c[op_class(o['op'])] += o['time_ns'] / 1e6 / n
    print(f'{cluster}: A {sa * 1e3 / na:.3f} ms a sequence (batch {na}), '
          f'B {sb * 1e3 / nb:.3f} (batch {nb}), ratio {sa / na / (sb / nb):.3f}')
    print('%-38s %9s %9s %6s' % ('class (ms a sequence)', 'A', 'B', 'A / B'))
    for c in sorted(ca, key=lambda c: -ca[c]):
        print('%-38s %9.3f %9.3f %6.2f' % (c, ca[c], cb[c], ca[c] / cb[c] if cb[c] else 0))
    ga, gb = ca['gemm'], cb['gemm']
    ra, rb = sum(ca.values()) - ga, sum(cb.values()) - gb
    print('%-38s %9.3f %9.3f %6.2f' % ('all but gemm', ra, rb, ra / rb if rb else 0))


if __name__ == '__main__':
    if len(sys.argv) == 5 and sys.argv[2] == 'classes':
        classes(sys.argv[1], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 6 and sys.argv[2] == 'ratio':
        ratio(sys.argv[1], sys.argv[3], sys.argv[4], sys.argv[5])
    elif len(sys.argv) == 6 and sys.argv[2] == 'pair':
        pair(sys.argv[1], sys.argv[3], sys.argv[4], sys.argv[5])
    else:
        sys.exit(__doc__)
