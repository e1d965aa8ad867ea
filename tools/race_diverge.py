#!/usr/bin/env python3
"""Where do placesim and SimGrid part on the race's DAG? Reads two `race_dag --ends` files (the
same DAG through each simulator) and prints, in placesim's completion order, how the difference
of each activity's end time (placesim - SimGrid, ns) grows: the first activity past each
threshold, the first pair of activities the two finish in opposite orders, and percentiles.

  build/tests/race_dag --sim placesim --activities 16000 --ends /tmp/p.txt
  build/tests/race_dag_simgrid --sim simgrid --activities 16000 --ends /tmp/s.txt
  tools/race_diverge.py /tmp/p.txt /tmp/s.txt
"""
import sys


def read(path):
    ends = {}
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            parts = line.split()
            if len(parts) != 2:
                sys.exit(f"{path}:{line_no}: expected 'NAME SECONDS', got {line.strip()!r}")
            ends[parts[0]] = float(parts[1])
    return ends


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    p, s = read(sys.argv[1]), read(sys.argv[2])
    if p.keys() != s.keys():
        sys.exit("the two files list different activities (not the same DAG?)")
    order = sorted(p, key=lambda k: (p[k], k))
    diffs = [(p[k] - s[k]) * 1e9 for k in order]
    print(f"{len(order)} activities; makespans {max(p.values()):.12f} / {max(s.values()):.12f} s")
    for th in (1, 2, 10, 100, 1000, 10000):
        i = next((i for i, d in enumerate(diffs) if abs(d) > th), None)
        if i is None:
            print(f"|diff| > {th} ns: never")
        else:
            k = order[i]
            print(f"|diff| > {th} ns first at #{i} ({100.0 * i / len(order):.1f} % of the run) "
                  f"{k}: placesim {p[k]:.12f} SimGrid {s[k]:.12f} ({diffs[i]:+.3f} ns)")
    # First inversion: an activity SimGrid finishes before one placesim finishes earlier.
    prev = None
    for i, k in enumerate(order):
        if prev is not None and s[k] < s[prev] and p[k] > p[prev]:
            print(f"first opposite order at #{i}: {prev} then {k} in placesim "
                  f"({p[prev]:.12f}, {p[k]:.12f}); SimGrid {s[prev]:.12f}, {s[k]:.12f}")
            break
        prev = k
    else:
        print("no two consecutive activities finish in opposite orders")
    for q in (10, 50, 90, 100):
        i = min(len(order) - 1, len(order) * q // 100)
        print(f"at {q} % of the run: diff {diffs[i]:+.3f} ns")


if __name__ == "__main__":
    main()
