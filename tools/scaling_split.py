#!/usr/bin/python3
"""Split every multi-GPU row of the published-throughput table into its 1-GPU error and its
scaling, and give the scaling loss as extra time per step (docs/validation.md, "DGX A100 8-GPU
AMP CNN rows: what the 1 -> 8 GPU loss is not").

Usage:  bash tests/cli/published_throughput_test.sh build/placesim --table > T.md
        tools/scaling_split.py T.md [--system SUBSTR] [--model SUBSTR]

For each N-GPU row with a 1-GPU row of the same model, system and precision (rows in samples per
second: images/s or sequences/s; tokens/s rows have no fixed samples per step and are skipped):

  scaling      N-GPU throughput / 1-GPU throughput, published and predicted
  scal. err    predicted scaling / published scaling - 1
  extra        per-GPU batch x N / N-GPU throughput - per-GPU batch / 1-GPU throughput, in ms:
               how much longer one step of one rank is at N GPUs than alone (published and
               predicted; each row's own per-GPU batch)

Standard library only; reads the markdown table `--table` prints (columns model, system, GPUs,
precision, batch/GPU, published, predicted, unit, ...).
"""

import argparse
import sys

SAMPLE_UNITS = ("images/s", "sequences/s")


def number(text):
    """A table cell such as '16,621' or '2,619.5' as a float."""
    return float(text.replace(",", ""))


def read_rows(lines):
    """(model, system, precision) -> {gpus: (batch, published, predicted)} of the table's rows
    in samples per second; a repeated row keeps its first occurrence."""
    rows = {}
    for line in lines:
        if not line.startswith("| "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 8 or cells[7] not in SAMPLE_UNITS or not cells[2].isdigit():
            continue
        key = (cells[0], cells[1], cells[3])
        per_gpus = rows.setdefault(key, {})
        per_gpus.setdefault(int(cells[2]), (int(cells[4]), number(cells[5]), number(cells[6])))
    return rows


def split(rows):
    """One record per multi-GPU row that has a 1-GPU row: scaling and extra time per step."""
    out = []
    for (model, system, precision), per_gpus in rows.items():
        if 1 not in per_gpus:
            continue
        b1, pub1, pred1 = per_gpus[1]
        for gpus in sorted(g for g in per_gpus if g > 1):
            b, pub, pred = per_gpus[gpus]
            scale_pub, scale_pred = pub / pub1, pred / pred1
            out.append({
                "model": model, "system": system, "precision": precision, "gpus": gpus,
                "err1": pred1 / pub1 - 1, "errn": pred / pub - 1,
                "scale_pub": scale_pub, "scale_pred": scale_pred,
                "scale_err": scale_pred / scale_pub - 1,
                "extra_pub_ms": 1e3 * (b * gpus / pub - b1 / pub1),
                "extra_pred_ms": 1e3 * (b * gpus / pred - b1 / pred1),
                "step1_pub_ms": 1e3 * b1 / pub1,
            })
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", help="output of published_throughput_test.sh --table ('-': stdin)")
    ap.add_argument("--system", default="", help="keep rows whose system contains this")
    ap.add_argument("--model", default="", help="keep rows whose model contains this")
    args = ap.parse_args(argv)
    lines = sys.stdin if args.table == "-" else open(args.table, encoding="utf-8")
    records = [r for r in split(read_rows(lines))
               if args.system in r["system"] and args.model in r["model"]]
    print("| model | system | GPUs | precision | 1-GPU error | N-GPU error | scaling published | "
          "predicted | scaling error | 1-GPU step (published) | extra per step published | "
          "predicted |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in records:
        print(f"| {r['model']} | {r['system']} | {r['gpus']} | {r['precision']} | "
              f"{100 * r['err1']:+.1f} % | {100 * r['errn']:+.1f} % | {r['scale_pub']:.2f}x | "
              f"{r['scale_pred']:.2f}x | {100 * r['scale_err']:+.1f} % | "
              f"{r['step1_pub_ms']:.1f} ms | {r['extra_pub_ms']:+.1f} ms | "
              f"{r['extra_pred_ms']:+.1f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
