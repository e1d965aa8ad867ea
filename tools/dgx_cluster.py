#!/usr/bin/env python3
"""N DGX A100 nodes on one non-blocking InfiniBand HDR leaf, as a cluster YAML on stdout.

With a second argument, N copies of the node of that two-node cluster YAML instead (its node-0
devices named n0-..., node-1 devices n1-..., shared fabric vertices in neither), named after it
with "2x-" replaced by "Nx-" (tests/data/collectives/{4,8}x-abci-anode.yaml were made so).

Every node is the node of scenarios/clusters/2x-dgx-a100.yaml (whose comments cite each number:
8 A100-SXM4-80GB on one NVSwitch, 4 PCIe 4.0 switches, 8 HDR NICs, 2 EPYC 7742); node k's
devices are named nk-..., exactly as n0-/n1- there. A single leaf for 128 nodes is an idealised
fabric (a real SuperPOD has leaf and spine switches, rail-optimised): say so when you use it.

    python3 tools/dgx_cluster.py 128 > /tmp/128x-dgx-a100.yaml    # 1,024 GPUs
    build/placesim simulate --graph gpt-huge --parallel dp=8,tp=8,pp=16,mb=22 \\
        --cluster /tmp/128x-dgx-a100.yaml
    python3 tools/dgx_cluster.py 4 tests/data/collectives/2x-abci-anode.yaml
"""
import pathlib
import sys


def main() -> int:
    if len(sys.argv) not in (2, 3) or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        print("usage: dgx_cluster.py NODES [TWO_NODE_CLUSTER.yaml] (NODES an integer >= 1)",
              file=sys.stderr)
        return 2
    nodes = int(sys.argv[1])
    root = pathlib.Path(__file__).resolve().parent.parent
    src = root / "scenarios/clusters/2x-dgx-a100.yaml"
    if len(sys.argv) == 3:
        src = pathlib.Path(sys.argv[2])
    if not src.is_file():
        print(f"dgx_cluster.py: {src}: no such file", file=sys.stderr)
        return 2
    what = "DGX A100 nodes" if len(sys.argv) == 2 else "nodes"
    out = [f"# {nodes} {what} on one IB leaf, made by tools/dgx_cluster.py from {src.name}"]
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
        if line.startswith("name:"):
            line = f"name: {nodes}x-" + line.split(":", 1)[1].strip().removeprefix("2x-")
        out.append(line)
    flush()
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
