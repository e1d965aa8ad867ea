# Multi-step CPU training trace with Debian's torch 1.13 (torch.profiler, record_shapes=True).
import sys, torch, torch.nn as nn
from torch.profiler import profile, schedule, ProfilerActivity
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 3, 32, 32); y = torch.randint(0, 10, (16,))
out = sys.argv[1]
with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
             schedule=schedule(wait=1, warmup=2, active=6),
             on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
    for _ in range(9):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        prof.step()
print(torch.__version__)
