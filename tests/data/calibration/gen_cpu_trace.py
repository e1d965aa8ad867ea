# Multi-step CPU training traces with Debian's torch 1.13 (torch.profiler, record_shapes=True,
# export_chrome_trace: the bare-list dialect). Usage: /usr/bin/python3 gen_cpu_trace.py {cnn,lstm} OUT.json
import sys, torch, torch.nn as nn
from torch.profiler import profile, schedule, ProfilerActivity
torch.manual_seed(0)
torch.set_num_threads(1)
kind, out = (sys.argv[1], sys.argv[2]) if len(sys.argv) > 2 else ("cnn", sys.argv[1])
if kind == "cnn":
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
    x = torch.randn(16, 3, 32, 32); y = torch.randint(0, 10, (16,))
    fwd = lambda: nn.functional.cross_entropy(model(x), y)
else:
    class Lm(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(1000, 64); self.lstm = nn.LSTM(64, 128, batch_first=True)
            self.out = nn.Linear(128, 1000)
        def forward(self, t):
            h, _ = self.lstm(self.emb(t)); return self.out(h)
    model = Lm()
    x = torch.randint(0, 1000, (8, 20)); y = torch.randint(0, 1000, (8, 20))
    fwd = lambda: nn.functional.cross_entropy(model(x).reshape(-1, 1000), y.reshape(-1))
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
