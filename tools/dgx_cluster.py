#!/usr/bin/env python3
"""N DGX A100 nodes on one non-blocking InfiniBand HDR leaf, as a cluster YAML on stdout.

Every node is the node of scenarios/clusters/2x-dgx-a100.yaml (whose comments cite each number:
8 A100-SXM4-80GB on one NVSwitch, 4 PCIe 4.0 switches, 8 HDR NICs, 2 EPYC 7742); node k's
devices are named nk-..., exactly as n0-/n1- there. A single leaf for 128 nodes is an idealised
fabric (a real SuperPOD has leaf and spine switches, rail-optimised): say so when you use it.

    python3 tools/dgx_cluster.py 128 > /tmp/128x-dgx-a100.yaml    # 1,024 GPUs
    build/placesim simulate --graph gpt-huge --parallel dp=8,tp=8,pp=16,mb=22 \\
        --cluster /tmp/128x-dgx-a100.yaml
"""
import pathlib
import sys


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        print("usage: dgx_cluster.py NODES (an integer >= 1)", file=sys.stderr)
        return 2
    nodes = int(sys.argv[1])
    src = pathlib.Path(__file__).resolve().parent.parent / "scenarios/clusters/2x-dgx-a100.yaml"
    out = [f"# {nodes} DGX A100 nodes on one IB leaf, made by tools/dgx_cluster.py from {src.name}"]
    # Node 0's lines of the current run, repeated node by node: node k's GPUs are consecutive,
    # as make_parallel and gpt-huge expect of a tensor-parallel group.
    block = []

    def flush():
        for k in range(nodes):
            out.extend(x.replace("n0-", f"n{k}-").replace("node: node0", f"node: node{k}")
                       for x in block)
        block.clear()

    for line in src.read_text().splitlines():
        if line.startswith("#") or (line.startswith("  - ") and "n1-" in line):
            continue
        if line.startswith("  - ") and "n0-" in line:
            block.append(line)
            continue
        flush()
        out.append(f"name: {nodes}x-dgx-a100" if line.startswith("name:") else line)
    flush()
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
