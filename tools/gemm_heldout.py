"""Held-out token counts: fit placesim's GEMM class curve on some token counts of Vidur's measured
A100 Llama-2-7B GEMMs and predict the others (docs/validation.md, "Predictions").

Usage: /usr/bin/python3 tools/vidur_to_manifest.py tests/data/calibration/a100_llama2-7b_mlp.csv \
           A100-SXM4-80GB > v.json
       python3 tools/gemm_heldout.py build/placesim v.json

Each split runs `placesim calibrate` on the fitted rows and prices the held-out ones with the
cost model's rules for a MatMul op on an A100-SXM4-80GB (docs/cost-model.md): the class curve
within twice the fitted work, never faster than 312 TFLOP/s (f16) or 2039 GB/s; else the
default roofline (efficiency 0.70, F_half 2e8, memory 0.80, B_half 2e5, 2 us floor).
"""
import json, re, subprocess, sys, tempfile, os
P = sys.argv[1]
d = json.load(open(sys.argv[2]))
tmp = tempfile.mkdtemp()
def work(r):
    (m,k),(k2,n)=r['input_shapes']; return 2.0*m*k*n, (m*k+k*n+m*n)*2.0
def model(yaml):
    txt=open(yaml).read()
    blk=txt[txt.index('"aten::mm":'):]
    g=lambda key: re.search(key+r': "?([-0-9.e+]+)',blk).group(1)
    return dict(a=float(g('intercept'))*1e-9, rf=float(g('flop_rate')), rb=float(g('byte_rate')),
                mf=float(g('max_flops')), mb=float(g('max_bytes')))
def predict(M,F,B):
    if F<=2*M['mf'] and B<=2*M['mb']:
        t=M['a']+(F/M['rf'] if M['rf'] else 0)+(B/M['rb'] if M['rb'] else 0)
        return max(t,F/312e12,B/2039e9,2e-6),'class-curve'
    return max((F+2e8)/(312e12*0.7),(B+2e5)/(2039e9*0.8),2e-6),'roofline'
toks=sorted(set(r['input_shapes'][0][0] for r in d['ops']))
splits={'interleaved (fit every other token count)':set(toks[0::2]), 'fit <= 1024 tokens':{t for t in toks if t<=1024}, 'fit <= 2048 tokens':{t for t in toks if t<=2048}}
for name,fitset in splits.items():
    tr=dict(d); tr['ops']=[r for r in d['ops'] if r['input_shapes'][0][0] in fitset]
    json.dump(tr,open(os.path.join(tmp, 'train.json'),'w'))
    subprocess.run([P,'calibrate','--profile',os.path.join(tmp, 'train.json'),'-o',os.path.join(tmp, 'cal.yaml')],check=True,capture_output=True)
    M=model(os.path.join(tmp, 'cal.yaml'))
    errs=[]; rules={}; tp=tm=0
    for r in d['ops']:
        if r['input_shapes'][0][0] in fitset: continue
        F,B=work(r); t,rule=predict(M,F,B); meas=r['mean_us']*1e-6
        errs.append(abs(t-meas)/meas); rules[rule]=rules.get(rule,0)+1; tp+=t; tm+=meas
    errs.sort()
    print(f"{name}: held-out GEMMs {len(errs)}, mean |error| {100*sum(errs)/len(errs):.1f} %, median {100*errs[len(errs)//2]:.1f} %, total time {100*(tp/tm-1):+.1f} %, rules {rules}; fit a={M['a']*1e6:.2f} us R_f={M['rf']/1e12:.0f} TFLOP/s R_b={M['rb']/1e12:.2f} TB/s")
