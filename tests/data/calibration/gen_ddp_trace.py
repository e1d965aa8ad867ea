# A DDP job (gloo backend, CPU, one thread per rank) with Debian's torch 1.13: one profiler trace per
# rank (bare-list dialect), 4 annotated steps (ProfilerStep#2..5).
# Usage: /usr/bin/python3 gen_ddp_trace.py OUT [cnn|lstm] [RANKS] [BUCKET_MB]
#   writes OUT_rank0.json ... ; cnn (default): gen_cpu_trace.py's CNN at batch 16 per rank, 2 ranks,
#   DDP's default 25 MB buckets (one all-reduce per step); lstm: its LSTM language model at batch 8.
import os, sys, torch, torch.nn as nn, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.profiler import profile, schedule, ProfilerActivity
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_models
def run(rank, world, out, kind, bucket_mb):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = "29517"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    net = cpu_models.cnn() if kind == "cnn" else cpu_models.Lm()
    model = DDP(net, bucket_cap_mb=bucket_mb)
    torch.manual_seed(1 + rank)
    loss = cpu_models.batch_and_loss(kind, model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=1, warmup=2, active=4),
                 on_trace_ready=lambda p: p.export_chrome_trace(f"{out}_rank{rank}.json")) as prof:
        for _ in range(7):
            opt.zero_grad()
            loss().backward()
            opt.step()
            prof.step()
    dist.destroy_process_group()
if __name__ == "__main__":
    a = sys.argv[1:] + [None] * 3
    kind, world, bucket = a[1] or "cnn", int(a[2] or 2), float(a[3] or 25)
    mp.spawn(run, args=(world, a[0], kind, bucket), nprocs=world)
