#!/usr/bin/env python3
"""What each multi-GPU p2p=off row of the published table implies for NCCL's SHM exchange, against
what placesim prices (docs/validation.md, "NCCL's SHM receive as latency-bound host reads: the
implied rates, and why no read-latency law is set"). Analysis only: nothing is fitted.

    bash tests/cli/published_throughput_test.sh build/placesim --table > /tmp/table.txt
    python3 tools/shm_implied_rates.py --table /tmp/table.txt [--placesim build/placesim]

For every row whose command runs `--parallel 'dp=N,...p2p=off'` (N > 1) and that has a 1-GPU row of
the same model, system, precision and per-GPU batch, it runs both rows' commands with `--json` and
prints:
  - the published and the modelled step (ms): the model's `step_time_s`, and the published one as
    model step x predicted / published throughput (both count the same work per step);
  - missing = (published n-GPU step - published 1-GPU step) - (model n-GPU - model 1-GPU): the time
    per step the model does not price;
  - exch = the model's exchange time: the busiest host-path link's `busy_s` (PCIe, root complex,
    CPU link) of the n-GPU run, i.e. how long the SHM all-reduces keep their bottleneck busy;
  - factor = exch / (exch + missing): the SHM rate, as a share of the model's, at which the
    exchange alone would absorb the missing time were none of the extra hidden (an upper bound:
    hiding any of it needs a still slower exchange).
Rows are grouped by cluster (host CPU and switches) and rank count, to see whether one host gives
one factor across models (what a host-keyed rate law would need).
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
HOST_LINK = re.compile(r"^(cpu\d+-rc\d+|rc\d+-rc\d+|rc\d+-pcie\d+|pcie\d+-gpu\d+|rc\d+-gpu\d+)$")


def parse_table(path):
    rows = []
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 10 or not cells[9].startswith("`placesim"):
                continue
            try:
                gpus = int(cells[2])
                pub = float(cells[5].replace(",", ""))
                pred = float(cells[6].replace(",", ""))
            except ValueError:
                continue
            rows.append({"model": cells[0], "system": cells[1], "gpus": gpus, "prec": cells[3],
                         "batch": cells[4], "pub": pub, "pred": pred,
                         "cmd": cells[9].strip("`")})
    return rows


def run(binary, cmd):
    argv = shlex.split(cmd)
    argv[0] = binary
    out = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=True).stdout
    d = json.loads(out)
    exch = max((l["busy_s"] for l in d["links"] if HOST_LINK.match(l["name"])), default=0.0)
    return d["step_time_s"], exch


def cluster_of(cmd):
    m = re.search(r"--cluster (\S+)", cmd)
    return m.group(1) if m else "?"


def pairs(rows, models=".*"):
    """(1-GPU row, n-GPU p2p=off row) of the same model, system, precision and per-GPU batch."""
    ones = {(r["model"], r["system"], r["prec"], r["batch"]): r for r in rows if r["gpus"] == 1}
    for r in rows:
        if r["gpus"] < 2 or "p2p=off" not in r["cmd"] or not re.search(models, r["model"]):
            continue
        one = ones.get((r["model"], r["system"], r["prec"], r["batch"]))
        if one is not None:
            yield one, r


def implied(one, row, m1, mn, exch):
    """Published steps from the model's (same work a step), the missing time, and the factor."""
    p1 = m1 * one["pred"] / one["pub"]
    pn = mn * row["pred"] / row["pub"]
    missing = (pn - p1) - (mn - m1)
    factor = exch / (exch + missing) if exch > 0 and missing > 0 else float("nan")
    return {"p1": p1, "pn": pn, "missing": missing, "factor": factor}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--table", required=True, help="output of published_throughput_test.sh --table")
    ap.add_argument("--placesim", default=os.path.join(ROOT, "build", "placesim"))
    ap.add_argument("--models", default="bert|gnmt|resnet", help="regex on the model column")
    args = ap.parse_args()
    groups = defaultdict(list)
    print("| model | system | cluster | GPUs | prec | pub step 1 -> n (ms) | model step 1 -> n (ms)"
          " | missing (ms) | exch (ms) | factor |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for one, r in pairs(parse_table(args.table), args.models):
        m1, _ = run(args.placesim, one["cmd"])
        mn, exch = run(args.placesim, r["cmd"])
        x = implied(one, r, m1, mn, exch)
        cl = cluster_of(r["cmd"])
        groups[(cl, r["gpus"])].append(x["factor"])
        print(f"| {r['model']} | {r['system']} | {cl} | {r['gpus']} | {r['prec']} | "
              f"{x['p1']*1e3:,.1f} -> {x['pn']*1e3:,.1f} | {m1*1e3:,.1f} -> {mn*1e3:,.1f} | "
              f"{x['missing']*1e3:+,.1f} | {exch*1e3:,.1f} | {x['factor']:.2f} |")
    print("\nper cluster and rank count: factor range over the rows whose missing time > 0")
    for (cl, n), factors in sorted(groups.items()):
        fs = [f for f in factors if f == f]
        if fs:
            print(f"  {cl} x{n}: {min(fs):.2f} .. {max(fs):.2f} ({len(fs)} of {len(factors)} rows)")
        else:
            print(f"  {cl} x{n}: none missing ({len(factors)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
