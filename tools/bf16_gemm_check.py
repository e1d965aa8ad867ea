"""Square torch.mm GEMMs through `placesim simulate`, against zzc0721/torch-performance-test-data's
measured TFLOP/s (the best of 1024..10240, as its test.py reports) on parts without bf16 tensor
cores (docs/validation.md, "bf16 on parts without bf16 tensor cores").

Usage: python3 tools/bf16_gemm_check.py build/placesim

For each GPU model and dtype it writes a one-op graph (a MatMul of 2 N^3 FLOPs, N in 1024 ... 10240,
reading two N x N matrices and writing one), a one-GPU cluster (scenarios/clusters/lambdacloud-a10.yaml
with the GPU's model replaced), runs `simulate --placement single-gpu --json` and prints the best
rate the model gives beside the measured one.
"""
import json, os, subprocess, sys, tempfile

P = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
A10 = os.path.join(HERE, "..", "scenarios", "clusters", "lambdacloud-a10.yaml")
SIZE = {"f32": 4, "f16": 2, "bf16": 2}
# (catalog model, what the table measured on that part: fp32, fp16, bf16 TFLOP/s, the row)
ROWS = [
    ("T4-16GB", (4.17, 41.91, 2.46), "Tesla T4, Colab, torch 2.8"),
    ("T4-16GB", (4.43, 42.71, 2.27), "Tesla T4, Kaggle, torch 2.6 / CUDA 12.4"),
    ("V100-SXM2-16GB", (None, None, 9.6), "V100, cuBLAS at m=2048 (lablup/mlxcel#1654; f32 14.0)"),
]
tmp = tempfile.mkdtemp()


def gpu_seconds(model, dtype, n):
    b = SIZE[dtype]
    g = {"format": "placesim-graph", "version": 1, "name": "mm",
         "ops": [{"name": "mm", "type": "MatMul", "flops": 2.0 * n ** 3, "dtype": dtype,
                  "bytes_read": 2 * n * n * b, "bytes_written": n * n * b,
                  "signature": {"op_type": "aten::mm", "input_shapes": [[n, n], [n, n]], "dtype": dtype},
                  "outputs": [{"bytes": n * n * b, "shape": [n, n], "dtype": dtype}]}]}
    gp = os.path.join(tmp, "g.json")
    json.dump(g, open(gp, "w"))
    cp = os.path.join(tmp, "c.yaml")
    open(cp, "w").write(open(A10).read().replace("model: A10-24GB", "model: " + model))
    r = subprocess.run([P, "simulate", "--graph", gp, "--cluster", cp, "--placement", "single-gpu",
                        "--pricing", os.path.join(tmp, "p.json"), "--quiet"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    pr = json.load(open(os.path.join(tmp, "p.json")))
    op = [o for o in pr["ops"] if o["op"] == "mm"][0]
    return op["time_ns"] * 1e-9, op["rule"]


for model, meas, row in ROWS:
    for dtype, m in zip(("f32", "f16", "bf16"), meas):
        if m is None:
            continue
        best, rule = 0.0, ""
        for n in (1024, 2048, 4096, 8192, 10240):
            t, r = gpu_seconds(model, dtype, n)
            if t is None:
                print(f"{model} {dtype}: {r}")
                break
            if 2.0 * n ** 3 / t / 1e12 > best:
                best, rule = 2.0 * n ** 3 / t / 1e12, r
        else:
            print(f"{model:15s} {dtype:4s} measured {m:6.2f}  model {best:7.2f} TFLOP/s "
                  f"({100 * (best / m - 1):+.1f} %, {rule})  [{row}]")
