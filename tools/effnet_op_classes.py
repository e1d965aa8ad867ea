#!/usr/bin/python3
"""Where an EfficientNet-B0 training step's time goes in placesim, per op class, on the four
single-GPU rows of tests/data/published_throughput.csv (docs/validation.md, "EfficientNet-B0 per
op class", session 15).

Usage:
  tools/effnet_op_classes.py PLACESIM [EXTRA]
        per-class ms per step on DGX A100 (TF32, AMP), DGX-1 (FP32, AMP) and the RTX 3090 (timm,
        AMP NCHW b384 and NHWC b512), and V100 / A100 per image; EXTRA is appended to every row's
        --graph-opt (e.g. ",silu=ops" for the ONNX op form of SiLU; the rows run silu=inplace)

`build-graph` gives each op's type and shapes, `simulate --pricing` its time. Classes: depthwise
convolutions (weight [M, 1, k, k]) and their gradients, the other (1x1) convolutions, squeeze-
excitation (pool, fc1/fc2, sigmoid, scale and their gradients), SiLU (sigmoid and multiply),
batch norm, residual adds and gradient sums, the stem (features.0) and the head (features.8,
pool, classifier, loss), and the optimizer updates.
"""
import collections, json, subprocess, sys, tempfile

GRAPH = 'tests/data/onnx/efficientnet_b0.onnx'
ROWS = [('A100 TF32 b256', 'dgx-a100', 'training,optimizer=rmsprop,batch=256,silu=inplace', 256),
        ('A100 AMP b256', 'dgx-a100',
         'training,optimizer=rmsprop,batch=256,precision=f16,grads=f32,layout=nhwc,silu=inplace',
         256),
        ('V100 FP32 b64', 'dgx1-v100', 'training,optimizer=rmsprop,batch=64,silu=inplace', 64),
        ('V100 AMP b128', 'dgx1-v100',
         'training,optimizer=rmsprop,batch=128,precision=f16,grads=f32,layout=nhwc,silu=inplace',
         128),
        ('3090 NCHW b384', 'pcie-3090',
         'training,optimizer=momentum,batch=384,precision=f16,grads=f32,silu=inplace', 384),
        ('3090 NHWC b512', 'pcie-3090',
         'training,optimizer=momentum,batch=512,precision=f16,grads=f32,layout=nhwc,silu=inplace',
         512)]


def weight_shape(o):
    """The weight [M, C/groups, k, k] of an ONNX-import convolution or gradient."""
    ins = o.get('signature', {}).get('input_shapes', [])
    if o['type'] in ('Conv', 'ConvBackpropInput') and len(ins) > 1: return ins[1]
    if o['type'] == 'ConvBackpropFilter': return o['outputs'][0]['shape']
    return None


def op_class(o):
    n, t = o['name'], o['type']
    if t.startswith('Apply'): return 'update'
    if t in ('VariableV2', 'RunningStatistic', 'Placeholder', 'Constant'): return 'storage'
    if '/features.0/' in n: return 'stem (conv 3x3 s2, bn, silu)'
    if ('/features.8/' in n or '/classifier' in n or t.startswith('SparseSoftmax') or
            t in ('Mean', 'MeanGrad', 'Flatten', 'FlattenGrad', 'Dropout', 'DropoutGrad') or
            ('GlobalAveragePool' in t and '/block' not in n)):
        return 'head (conv 1x1, pool, fc, loss)'
    if '/fc1' in n or '/fc2' in n or 'GlobalAveragePool' in t or '/block.2/' in n:
        return 'squeeze-excitation'
    if t.startswith('Conv'):
        w = weight_shape(o)
        return 'conv depthwise' if w and w[1] == 1 else 'conv pointwise 1x1'
    if t.startswith('BatchNorm'): return 'batch norm'
    if t.startswith('Sigmoid') or t.startswith('Mul') or t.startswith('Silu') or t == 'Copy':
        return 'silu (sigmoid, mul; silu, copy)'
    if t.startswith('Add'): return 'residual add, grad sums'
    return 'other ' + t


def run(binary, cluster, opts):
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([binary, 'build-graph', '--graph', GRAPH, '--graph-opt', opts, '-o',
                        f'{d}/g.json', '--quiet'], check=True, capture_output=True)
        ops = {o['name']: o for o in json.load(open(f'{d}/g.json'))['ops']}
        cmd = [binary, 'simulate', '--graph', GRAPH, '--graph-opt', opts, '--cluster', cluster,
               '--quiet', '--json', '--placement', 'single-gpu', '--pricing', f'{d}/p.json']
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"{' '.join(cmd)}: exited {out.returncode}: {out.stderr.strip()}")
        step = json.loads(out.stdout)['step_time_s']
        priced = json.load(open(f'{d}/p.json'))['ops']
    c = collections.Counter()
    for p in priced:
        c[op_class(ops[p['op']])] += p['time_ns'] / 1e6
    return step * 1e3, c


def main(binary, extra=''):
    # EXTRA's silu= replaces the rows' silu=inplace (build-graph refuses a key given twice).
    strip = ',silu=inplace' if 'silu=' in extra else ''
    res = [run(binary, cluster, opts.replace(strip, '') + extra) for _, cluster, opts, _ in ROWS]
    # Last column: V100 FP32 ms per image over A100 TF32 ms per image (the update is per step).
    print('%-34s' % 'ms per step' + ''.join('%15s' % r[0] for r in ROWS) + '%9s' % 'V/A img')
    a, v = res[0][1], res[2][1]
    for k in sorted(a, key=lambda k: -a[k]):
        ratio = (v[k] / ROWS[2][3]) / (a[k] / ROWS[0][3]) if a[k] else 0
        print('%-34s' % k + ''.join('%15.2f' % r[1][k] for r in res) + '%9.2f' % ratio)
    print('%-34s' % 'step' + ''.join('%15.2f' % r[0] for r in res) + '%9.2f' %
          ((res[2][0] / ROWS[2][3]) / (res[0][0] / ROWS[0][3])))


if __name__ == '__main__':
    if len(sys.argv) not in (2, 3): sys.exit(__doc__)
    main(*sys.argv[1:])
