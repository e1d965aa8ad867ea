# Measures, on a real GPU, the numbers the engine's fixed costs use (docs/catalog.md):
#  - memory lost before the first tensor (CUDA context, cuBLAS/cuDNN handles and workspaces);
#  - the host-side duration of a cudaMemcpyAsync call (Kineto cuda_runtime events) and the
#    device-side duration of small and large pinned copies (CUDA events).
# Run: OUT=/tmp python3 tests/sim/h200_copy_probe.py   (writes $OUT/h200_copy_probe.json)
import json, os, statistics, subprocess, time

import torch

out_dir = os.environ.get("OUT", ".")
res = {}


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60).stdout
    except Exception as e:  # a probe: record what failed and go on
        return "error: " + str(e)


res["nvidia_smi"] = sh("nvidia-smi --query-gpu=name,memory.total,memory.reserved,memory.used,"
                       "driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv")
res["torch"] = torch.__version__
res["cuda"] = torch.version.cuda
free, total = torch.cuda.mem_get_info()
res["after_context"] = {"free": free, "total": total, "torch_reserved": torch.cuda.memory_reserved()}
a = torch.randn(2048, 2048, device="cuda")
b = a @ a
torch.cuda.synchronize()
free, total = torch.cuda.mem_get_info()
res["after_cublas"] = {"free": free, "total": total, "torch_reserved": torch.cuda.memory_reserved()}
conv = torch.nn.Conv2d(64, 64, 3, padding=1).cuda()
x = torch.randn(16, 64, 56, 56, device="cuda", requires_grad=True)
conv(x).sum().backward()
torch.cuda.synchronize()
free, total = torch.cuda.mem_get_info()
res["after_cudnn"] = {"free": free, "total": total, "torch_reserved": torch.cuda.memory_reserved()}
del a, b, x, conv
torch.cuda.empty_cache()


def ev_time(fn, reps):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e-3)
    return statistics.median(times)


sizes = [4, 4096, 256 << 10, 4 << 20, 64 << 20, 1 << 30]
copies = {}
for n in sizes:
    h = torch.empty(n, dtype=torch.uint8).pin_memory()
    d = torch.empty(n, dtype=torch.uint8, device="cuda")
    reps = 50 if n <= (4 << 20) else 10
    t_h2d = ev_time(lambda: d.copy_(h, non_blocking=True), reps)
    t_d2h = ev_time(lambda: h.copy_(d, non_blocking=True), reps)
    # Host-side cost of issuing: wall time of many back-to-back async calls (torch dispatch included).
    k = 200 if n <= (256 << 10) else 20
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(k):
        d.copy_(h, non_blocking=True)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    copies[str(n)] = {"h2d_s": t_h2d, "d2h_s": t_d2h, "h2d_GBps": n / t_h2d / 1e9, "d2h_GBps": n / t_d2h / 1e9,
                      "issue_wall_per_call_s": (t1 - t0) / k}
    del h, d
res["copies"] = copies

# Kineto: cudaMemcpyAsync runtime durations and memcpy device durations.
try:
    from torch.profiler import profile, ProfilerActivity
    h = torch.empty(256 << 10, dtype=torch.uint8).pin_memory()
    d = torch.empty(256 << 10, dtype=torch.uint8, device="cuda")
    h2 = torch.empty(4, dtype=torch.uint8).pin_memory()
    d2 = torch.empty(4, dtype=torch.uint8, device="cuda")
    for _ in range(5):
        d.copy_(h, non_blocking=True)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(100):
            d.copy_(h, non_blocking=True)
            h.copy_(d, non_blocking=True)
            d2.copy_(h2, non_blocking=True)
            torch.cuda.synchronize()
    path = os.path.join(out_dir, "h200_copy_trace.json")
    prof.export_chrome_trace(path)
    ev = json.load(open(path))["traceEvents"]
    rt = [e["dur"] for e in ev if e.get("name") == "cudaMemcpyAsync"]
    mc = {}
    for e in ev:
        if e.get("cat") == "gpu_memcpy":
            key = e["name"] + " bytes=" + str(e.get("args", {}).get("bytes"))
            mc.setdefault(key, []).append(e["dur"])
    res["kineto"] = {"cudaMemcpyAsync_us": {"n": len(rt), "median": statistics.median(rt) if rt else None,
                                             "p10": sorted(rt)[len(rt) // 10] if rt else None,
                                             "p90": sorted(rt)[9 * len(rt) // 10] if rt else None},
                     "gpu_memcpy_us": {k: {"n": len(v), "median": statistics.median(v)} for k, v in mc.items()}}
    os.remove(path)
except Exception as e:
    res["kineto_error"] = str(e)

with open(os.path.join(out_dir, "h200_copy_probe.json"), "w") as f:
    json.dump(res, f, indent=1)
print(json.dumps(res, indent=1))
