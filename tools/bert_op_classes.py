#!/usr/bin/python3
"""Where a BERT-large step's time goes in placesim, per op class, and what the attention-score
passes PyTorch runs and the built-in `gpt` graph does not would add (docs/validation.md, "Where a
BERT-large layer's time goes").

Usage:
  tools/bert_op_classes.py PLACESIM classes CLUSTER GRAPH_OPTS   per-class ms: one layer, one step
  tools/bert_op_classes.py PLACESIM whatif [--hidden]            every BERT row of
                                                                 tests/data/published_throughput.csv

classes: `simulate --pricing` prices every op; the layer is gpt/h3 (forward and gradients).
whatif: per attention-score element (s bytes), NVIDIA DeepLearningExamples' BertSelfAttention runs
div 2s + mask add 2s + softmax 2s + dropout 2s+1 (bool mask) + dropout grad 2s+1 + softmax grad 3s
+ div grad 2s = 15s+2 bytes; the graph prices MaskedScale 2s + Softmax 2s + SoftmaxGrad 3s +
MaskedScaleGrad 2s = 9s. The missing 6s+2 bytes per element and layer are priced at the rate the
graph's own MaskedScale op streams at and added to the step (for dp=N rows too: no overlap).
--hidden adds the two hidden-state dropouts per layer ([tokens, hidden], 4s+2 bytes each).
"""
import collections, csv, json, os, subprocess, sys, tempfile

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')


def op_class(name):
    if name.startswith('update/'): return 'update'
    if any(k in name for k in ('MatMul', '/scores', '/context', 'lm_head')): return 'gemm'
    if 'scale_mask' in name or ('softmax' in name and '/attn/' in name):
        return 'attention scores: scale+mask, softmax'
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
    score, dropouts = missing_ms(opts, ops)
    print(f'missing per layer: score passes {score:.3f} ms, hidden dropouts {dropouts:.3f} ms '
          f'(layer with both: {lt + score + dropouts:.3f} ms)')


def missing_ms(opts, ops):
    """ms per layer of the score passes and hidden dropouts the graph lacks (module doc)."""
    o = dict(kv.split('=') for kv in opts.split(','))
    b, seq, s = int(o['batch']), int(o['seq']), 2 if o.get('precision') == 'f16' else 4
    elems = b * int(o['heads']) * seq * seq
    t = next(x['time_ns'] for x in ops if x['op'].endswith('/h0/attn/scale_mask')) * 1e-9
    rate = 2 * s * elems / t  # B/s
    return ((6 * s + 2) * elems / rate * 1e3,
            2 * (4 * s + 2) * b * seq * int(o['hidden']) / rate * 1e3)


def whatif(binary, hidden):
    rows = [r for r in csv.DictReader(l for l in open(f'{SRC}/tests/data/published_throughput.csv')
                                      if not l.startswith('#')) if r['model'].startswith('bert')]
    print('| model | system | GPUs | precision | batch | published | error now | error with '
          'the missing passes | bound |')
    print('|---|---|---|---|---|---|---|---|---|')
    for r in rows:
        o = dict(kv.split('=') for kv in r['graph_opt'].split(','))
        gpus, b, layers = int(r['gpus']), int(o['batch']), int(o['layers'])
        step, ops = simulate(binary, r['cluster'], r['graph_opt'], gpus)
        score, dropouts = missing_ms(r['graph_opt'], ops)
        extra = layers * (score + (dropouts if hidden else 0.0)) / 1e3
        pub, bound = float(r['published']), float(r['bound_pct'])
        e0 = 100 * (b * gpus / step - pub) / pub
        e1 = 100 * (b * gpus / (step + extra) - pub) / pub
        out = ' (outside)' if abs(e1) > bound else ''
        print(f"| {r['model']} | {r['system']} | {gpus} | {r['precision']} | {b} | {pub:g} | "
              f"{e0:+.1f} % | {e1:+.1f} %{out} | {bound:g} % |")


if __name__ == '__main__':
    if len(sys.argv) == 5 and sys.argv[2] == 'classes':
        classes(sys.argv[1], sys.argv[3], sys.argv[4])
    elif len(sys.argv) in (3, 4) and sys.argv[2] == 'whatif':
        whatif(sys.argv[1], sys.argv[3:] == ['--hidden'])
    else:
        sys.exit(__doc__)
