#!/usr/bin/env python3
"""A GB200 or GB300 NVL72 rack as a cluster YAML on stdout (scenarios/clusters/gb200-nvl72.yaml and
gb300-nvl72.yaml are its output; tests/cli/collective_test.sh checks that they still are).

    python3 tools/nvl72_cluster.py gb200 > scenarios/clusters/gb200-nvl72.yaml
    python3 tools/nvl72_cluster.py gb300 > scenarios/clusters/gb300-nvl72.yaml

Sources of every number are in the header this writes into the YAML.
"""
import sys

TRAYS = 18  # compute trays of an NVL72 rack, 4 GPUs and 2 Grace CPUs each

SYSTEMS = {
    "gb200": {
        "gpu": "GB200-186GB",
        "title": "a GB200 NVL72 rack",
        "nic_gb_s": 50,  # ConnectX-7 400 Gb/s
        "nics_per_tray": 4,
        "nic_kind": "ib-ndr",
        "nic_pcie": "63 GB/s, latency: 1 us, kind: pcie5",
        "nic_source": "4x ConnectX-7 400 Gb/s per compute tray for the cluster network (NVIDIA DGX "
        "GB200 user guide, Hardware; the catalog's DGX GB200 NIC)",
    },
    "gb300": {
        "gpu": "GB300-288GB",
        "title": "a GB300 NVL72 rack",
        "nic_gb_s": 100,  # ConnectX-8 800 Gb/s
        "nics_per_tray": 4,
        "nic_kind": "ib-xdr",
        "nic_pcie": "128 GB/s, latency: 1 us, kind: pcie6",
        "nic_source": "one ConnectX-8 SuperNIC of 800 Gb/s per GPU, 72 a rack (glennklockwood.com "
        "B300 page; the catalog's GB300 NIC)",
    },
}


def header(name, s):
    return f"""# {name}: {s['title']}: 18 compute trays of 4 {s['gpu']} GPUs and 2 Grace CPUs, all 72 GPUs in
# one NVLink domain (multi-node NVLink, MNNVL) through 9 NVLink switch trays.
# Made by tools/nvl72_cluster.py {name.split('-')[0]}; edit that, not this file.
# Sources:
#  - GPUs: {s['gpu']} (catalog), 18 NVLink 5 links each = 1.8 TB/s bidirectional, 900 GB/s per
#    direction, into the NVLink switch trays; "72-GPU NVLink domain", "130 TB/s" of NVLink per
#    rack (NVIDIA GB200/GB300 NVL72 pages as quoted by glennklockwood.com and verda.com). The
#    switch trays act as one non-blocking crossbar: one `nvswitch` vertex, one 900 GB/s link per
#    GPU, as the 8-GPU NVSwitch boards are modelled (hgx-h100.yaml).
#  - One node: NCCL with MNNVL fuses the topologies of all ranks of the NVLink clique into one
#    system as it does a single node's (NVIDIA/nccl src/graph/topo.cc, "XML topo fusion ... MNNVL
#    clique support"; src/transport/nvls.cc sizes NVLS "for single node/MNNVL domain" alike), so
#    every device here is in node `rack0`: the collectives see one NVLink node of 72 GPUs.
#  - CPUs: 2 Grace (catalog) per tray, each joined to its 2 GPUs by NVLink-C2C, 900 GB/s
#    bidirectional = 450 GB/s per direction per Grace (NVIDIA Grace CPU Superchip architecture
#    blog: "NVLink-C2C ... 900 GB/s bidirectional bandwidth"), one 450 GB/s link per GPU from
#    the Grace's root complex (`rcN`, whose link to the Grace is its LPDDR5X: 500 GB/s, the
#    catalog's Grace). Grace-to-Grace within a tray: NVLink-C2C too, 450 GB/s per direction
#    assumed as above.
#  - NICs: {s['nic_source']}; each on PCIe
#    x16 of a Grace (Gen5 63 GB/s per direction for ConnectX-7; Gen6 for ConnectX-8, 64 GT/s x 16
#    = 128 GB/s per direction, PCI-SIG 6.0), one leaf switch for the rack's NICs (idealised).
#  - Latency 500 ns per NVLink hop, 1 us per C2C, PCIe or network hop (assumed, as the other
#    built-in clusters; docs/routing.md): two GPUs of one Grace must talk over the NVLink switch,
#    not through their Grace (the lower-latency route wins). Peer access between all GPUs.
"""


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1] not in SYSTEMS:
        print("usage: nvl72_cluster.py gb200|gb300", file=sys.stderr)
        return 2
    key = sys.argv[1]
    s = SYSTEMS[key]
    name = f"{key}-nvl72"
    out = [header(name, s).rstrip("\n"), f"name: {name}", "devices:"]
    for t in range(TRAYS):
        for c in range(2):
            out.append(f"  - {{name: t{t}-cpu{c}, model: Grace, node: rack0}}")
        for g in range(4):
            out.append(f"  - {{name: t{t}-gpu{g}, model: {s['gpu']}, host: t{t}-cpu{g // 2}, "
                       f"node: rack0}}")
    out.append("host_bridges:")
    for t in range(TRAYS):
        for c in range(2):
            out.append(f"  - {{name: t{t}-rc{c}, node: rack0}}")
    out.append("switches:")
    out.append("  - {name: nvswitch, node: rack0}")
    out.append("  - {name: ib-leaf, node: rack0}")
    out.append("nics:")
    for t in range(TRAYS):
        for k in range(s["nics_per_tray"]):
            out.append(f"  - {{name: t{t}-nic{k}, node: rack0}}")
    out.append("links:")
    for t in range(TRAYS):
        for c in range(2):
            out.append(f"  - {{between: [t{t}-cpu{c}, t{t}-rc{c}], bandwidth: 500 GB/s, "
                       "latency: 100 ns, sharing: shared, kind: membus}")
        out.append(f"  - {{between: [t{t}-rc0, t{t}-rc1], bandwidth: 450 GB/s, latency: 1 us, "
                   "kind: c2c}")
        for g in range(4):
            out.append(f"  - {{between: [t{t}-rc{g // 2}, t{t}-gpu{g}], bandwidth: 450 GB/s, "
                       "latency: 1 us, kind: c2c}")
        for k in range(s["nics_per_tray"]):
            cpu = k * 2 // s["nics_per_tray"]
            out.append(f"  - {{between: [t{t}-rc{cpu}, t{t}-nic{k}], "
                       f"bandwidth: {s['nic_pcie']}}}")
            out.append(f"  - {{between: [t{t}-nic{k}, ib-leaf], bandwidth: {s['nic_gb_s']} GB/s, "
                       f"latency: 1 us, kind: {s['nic_kind']}}}")
    for t in range(TRAYS):
        for g in range(4):
            out.append(f"  - {{between: [t{t}-gpu{g}, nvswitch], bandwidth: 900 GB/s, "
                       "latency: 500 ns, kind: nvlink5}")
    out.append("peer_access: all")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
