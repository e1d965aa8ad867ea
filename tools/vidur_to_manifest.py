#!/usr/bin/python3
"""Turn Vidur's measured per-operator GPU times (data/profiling/compute/<gpu>/<model>/mlp.csv) into a
placesim rig manifest, so `placesim calibrate` can fit and cross-validate GEMM times measured on a
real GPU. Each projection is a GEMM [tokens, k] x [k, n] with k, n from the model width and the
tensor-parallel degree (gated MLP: the up projection is 2 x n_expanded wide).

Usage: /usr/bin/python3 tools/vidur_to_manifest.py mlp.csv DEVICE_MODEL > manifest.json
"""
import csv
import json
import sys


def main():
    path, device = sys.argv[1], sys.argv[2]
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            t = int(r["num_tokens"])
            tp = int(r["num_tensor_parallel_workers"])
            e = int(r["n_embd"])
            x = int(r["n_expanded_embd"])
            gated = r["use_gated_mlp"] == "True"
            heads, kv = int(r["n_head"]), int(r["n_kv_head"])
            qkv = (e + 2 * e * kv // heads) // tp
            gemms = {
                "attn_pre_proj": (e, qkv),
                "attn_post_proj": (e // tp, e),
                "mlp_up_proj": (e, (2 if gated else 1) * x // tp),
                "mlp_down_proj": (x // tp, e),
            }
            for op, (k, n) in gemms.items():
                mean_ms = float(r["time_stats.%s.mean" % op])
                rows.append({"name": "aten::mm", "input_shapes": [[t, k], [k, n]], "dtype": "f16", "count": 1,
                             "mean_us": mean_ms * 1e3, "source_op": op})
    json.dump({"format": "placesim-rig-manifest", "device_model": device, "source": path, "ops": rows}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
