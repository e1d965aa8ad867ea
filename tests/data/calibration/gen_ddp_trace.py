# A 2-rank DDP job (gloo backend, CPU, one thread per rank) with Debian's torch 1.13: one profiler
# trace per rank (bare-list dialect), 4 annotated steps of gen_cpu_trace.py's CNN at batch 16 per rank.
# Usage: /usr/bin/python3 gen_ddp_trace.py OUT  (writes OUT_rank0.json, OUT_rank1.json)
import os, sys, torch, torch.nn as nn, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.profiler import profile, schedule, ProfilerActivity
def run(rank, world, out):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = "29517"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(32 * 8 * 8, 10)))
    torch.manual_seed(1 + rank)
    x = torch.randn(16, 3, 32, 32); y = torch.randint(0, 10, (16,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=1, warmup=2, active=4),
                 on_trace_ready=lambda p: p.export_chrome_trace(f"{out}_rank{rank}.json")) as prof:
        for _ in range(7):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            prof.step()
    dist.destroy_process_group()
if __name__ == "__main__":
    mp.spawn(run, args=(2, sys.argv[1]), nprocs=2)
