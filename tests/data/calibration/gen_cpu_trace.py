# Multi-step CPU training traces with Debian's torch 1.13 (torch.profiler, record_shapes=True,
# export_chrome_trace: the bare-list dialect).
# Usage: /usr/bin/python3 gen_cpu_trace.py {cnn,lstm} OUT.json [BATCH]   (BATCH: cpu_models' default)
import os, sys, torch, torch.nn as nn
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_models
from torch.profiler import profile, schedule, ProfilerActivity
torch.manual_seed(0)
torch.set_num_threads(1)
kind, out = (sys.argv[1], sys.argv[2]) if len(sys.argv) > 2 else ("cnn", sys.argv[1])
model = cpu_models.cnn() if kind == "cnn" else cpu_models.Lm()
fwd = cpu_models.batch_and_loss(kind, model, int(sys.argv[3]) if len(sys.argv) > 3 else None)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
             schedule=schedule(wait=1, warmup=2, active=6),
             on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
    for _ in range(9):
        opt.zero_grad()
        fwd().backward()
        opt.step()
        prof.step()
print(torch.__version__)
