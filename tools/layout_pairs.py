#!/usr/bin/env python3
"""NCHW against channels-last, per model, from the published-throughput table.

Reads the table `bash tests/cli/published_throughput_test.sh build/placesim --table` prints and
pairs each row named `*-nchw` with its `*-nhwc` twin (same system and batch: timm's RTX 3090
benchmark runs both layouts). For each pair it prints the step time (ms: batch / throughput) of
both layouts, published and predicted, and NCHW minus NHWC: what running NCHW costs the card
(cuDNN's layout transforms, NCHW batch norm) against what the model charges for it
(`nchw-transforms`, the per-channel batch-norm bound). docs/validation.md, "f16 convolutions on
GA102/AD102".

Usage: python3 tools/layout_pairs.py TABLE.txt
"""
import sys


def rows(path):
    out = {}
    for line in open(path):
        c = [x.strip() for x in line.split("|")]
        if len(c) < 11 or not c[1].endswith(("-nchw", "-nhwc")):
            continue
        try:
            batch = float(c[5])
            pub = float(c[6].replace(",", ""))
            pred = float(c[7].replace(",", ""))
        except ValueError:
            continue
        out[(c[1], c[2])] = (batch, pub, pred)
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    r = rows(sys.argv[1])
    print("| model | system | batch NCHW / NHWC | published NCHW / NHWC ms | NCHW - NHWC published"
          " | predicted NCHW / NHWC ms | NCHW - NHWC predicted | predicted / published |")
    print("|---|---|---|---|---|---|---|---|")
    sums = [0.0, 0.0]
    for (name, system), (b1, p1, q1) in sorted(r.items()):
        if not name.endswith("-nchw"):
            continue
        twin = r.get((name[:-5] + "-nhwc", system))
        if not twin:
            continue
        b2, p2, q2 = twin
        pub = (1e3 * b1 / p1, 1e3 * b2 / p2)
        pre = (1e3 * b1 / q1, 1e3 * b2 / q2)
        dp, dq = pub[0] - pub[1], pre[0] - pre[1]
        sums[0] += dp
        sums[1] += dq
        print(f"| {name[:-5]} | {system} | {b1:g} / {b2:g} | {pub[0]:.1f} / {pub[1]:.1f} | {dp:.1f}"
              f" | {pre[0]:.1f} / {pre[1]:.1f} | {dq:.1f} | {dq / dp:.2f} |")
    if sums[0] > 0:
        print(f"\nsum of NCHW - NHWC: published {sums[0]:.1f} ms, predicted {sums[1]:.1f} ms "
              f"({sums[1] / sums[0]:.2f})")


if __name__ == "__main__":
    main()
