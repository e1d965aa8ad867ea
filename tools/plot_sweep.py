#!/usr/bin/python3
"""Plots a `placesim sweep` CSV as PNG: line charts along one axis and heatmaps over two.

    /usr/bin/python3 tools/plot_sweep.py results.csv plots/ [--x AXIS] [--title TEXT]

Columns before `workload` are the sweep's axes. Axes with a single value are ignored. Line
charts (lines_<workload>.png): step time along --x (default: the last varying axis), one panel
per method, one line per combination of the other varying axes; OOM points are drawn as crosses.
Lines with identical values are drawn once, with every label they stand for in the legend (so
none hides under another), and lines differ in marker and dash too, not only in colour.
Heatmaps (heatmap_<workload>_<method>[_<rest>].png), when two or more axes vary: step time over
the first two varying axes, one file per combination of the remaining axes (at most 12). Out of
memory cells are red with "OOM" and take no part in the colour scale of the step times.
Uses Debian's python3-matplotlib (Agg backend, no display needed).
"""
import argparse
import csv
import itertools
import math
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.patches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402


def slug(text):
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text).strip("_")[:80] or "x"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("outdir")
    ap.add_argument("--x", help="axis along the line charts")
    ap.add_argument("--title", default="")
    a = ap.parse_args()

    with open(a.csv, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = [dict(zip(header, r)) for r in reader if len(r) == len(header)]
    if "workload" not in header:
        sys.exit(f"{a.csv}: not a placesim sweep CSV (no workload column)")
    axes = header[: header.index("workload")]
    # Spec order: the CSV lists points in expansion order.
    values = {ax: list(dict.fromkeys(r[ax] for r in rows)) for ax in axes}
    varying = [ax for ax in axes if len(values[ax]) > 1]
    os.makedirs(a.outdir, exist_ok=True)
    written = []

    def step(r):
        try:
            return float(r["step_time_s"])
        except ValueError:
            return math.nan

    x_axis = a.x or (varying[-1] if varying else None)
    if x_axis is not None and x_axis not in axes:
        sys.exit(f"--x {x_axis}: not an axis of {a.csv} (axes: {', '.join(axes)})")
    workloads = sorted({r["workload"] for r in rows})
    methods = list(dict.fromkeys(r["method"] for r in rows))
    for w in workloads:
        wr = [r for r in rows if r["workload"] == w]
        # One panel per method, one line per combination of the other varying axes.
        wmethods = list(dict.fromkeys(r["method"] for r in wr))
        fig, axs = plt.subplots(1, len(wmethods), figsize=(4.2 * len(wmethods) + 1.5, 4.5),
                                sharey=True, squeeze=False)
        others = [x for x in varying if x != x_axis]
        xs = values[x_axis] if x_axis else [""]
        for ax, m in zip(axs[0], wmethods):
            series = {}
            for r in wr:
                if r["method"] != m:
                    continue
                label = ", ".join(f"{o}={r[o]}" for o in others) or m
                series.setdefault(label, []).append(r)
            # Identical series (same x, step time and OOM at every point) become one line.
            merged = {}
            for label, rs in series.items():
                by_x = {(r[x_axis] if x_axis else ""): r for r in rs}
                pts = tuple((i, step(by_x[x]), by_x[x]["oom"] == "1") for i, x in enumerate(xs) if x in by_x)
                key = tuple((i, "nan" if math.isnan(v) else v, o) for i, v, o in pts)
                merged.setdefault(key, [pts, []])[1].append(label)
            styles = itertools.cycle(itertools.product(["-", "--", ":", "-."], ["o", "s", "^", "D", "v"]))
            for pts, labels in merged.values():
                dash, marker = next(styles)
                label = " = ".join(labels) if len(labels) <= 3 else f"{labels[0]} (= {len(labels) - 1} more)"
                line = ax.plot([p[0] for p in pts], [p[1] * 1e3 for p in pts], marker=marker, linestyle=dash,
                               label=label)
                oom = [p for p in pts if p[2]]
                if oom:
                    ax.plot([p[0] for p in oom], [p[1] * 1e3 for p in oom], "x", markersize=12,
                            color=line[0].get_color())
            ax.set_xticks(range(len(xs)))
            ax.set_xticklabels(xs, fontsize=8, rotation=30 if max(len(x) for x in xs) > 6 else 0)
            ax.set_xlabel(x_axis or "")
            ax.set_title(m, fontsize=9)
            ax.grid(True, alpha=0.3)
            if len(merged) <= 18 and len(series) > 1:
                ax.legend(fontsize=6)
        axs[0][0].set_ylabel("step time (ms)")
        fig.suptitle(f"{a.title}\n{w} (x: OOM)" if a.title else f"{w} (x: OOM)", fontsize=10)
        fig.tight_layout()
        path = os.path.join(a.outdir, f"lines_{slug(w)}.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)

        if len(varying) < 2:
            continue
        ya, xa = varying[0], varying[1]
        rest = varying[2:]
        combos = list(itertools.product(*[values[r] for r in rest]))[:12]
        for m in methods:
            for combo in combos:
                fixed = dict(zip(rest, combo))
                cell = {}
                for r in wr:
                    if r["method"] == m and all(r[k] == v for k, v in fixed.items()):
                        cell[(r[ya], r[xa])] = r
                if not cell:
                    continue
                def fits(r):
                    return r is not None and r["oom"] != "1"
                # OOM cells are masked out of the step-time colours and painted red below.
                grid = [[step(cell[(y, x)]) * 1e3 if fits(cell.get((y, x))) else math.nan
                         for x in values[xa]] for y in values[ya]]
                fig, ax = plt.subplots(figsize=(1.2 * len(values[xa]) + 3, 0.6 * len(values[ya]) + 2.5))
                cmap = matplotlib.colormaps["viridis_r"].copy()
                cmap.set_bad("white")
                im = ax.imshow(grid, cmap=cmap, aspect="auto")
                finite = [v for row in grid for v in row if not math.isnan(v)]
                lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
                for i, y in enumerate(values[ya]):
                    for j, x in enumerate(values[xa]):
                        r = cell.get((y, x))
                        if r is None:
                            continue
                        if r["oom"] == "1":
                            ax.add_patch(matplotlib.patches.Rectangle((j - 0.5, i - 0.5), 1, 1, color="#d62728"))
                            ax.text(j, i, "OOM", ha="center", va="center", fontsize=7, color="w",
                                    fontweight="bold")
                            continue
                        text = f"{step(r) * 1e3:.3g}"
                        # Dark text on the light (fast, yellow) end of viridis_r.
                        light = hi == lo or (step(r) * 1e3 - lo) / (hi - lo) < 0.5
                        ax.text(j, i, text, ha="center", va="center", fontsize=7,
                                color="k" if light else "w")
                ax.set_xticks(range(len(values[xa])))
                ax.set_xticklabels(values[xa], fontsize=8)
                ax.set_yticks(range(len(values[ya])))
                ax.set_yticklabels(values[ya], fontsize=8)
                ax.set_xlabel(xa)
                ax.set_ylabel(ya)
                sub = ", ".join(f"{k}={v}" for k, v in fixed.items())
                ax.set_title(f"{w}, {m}" + (f", {sub}" if sub else "") + "\nstep time (ms); red: out of memory",
                             fontsize=9)
                fig.colorbar(im, ax=ax)
                fig.tight_layout()
                name = "_".join([slug(w), slug(m)] + [slug(f"{k}={v}") for k, v in fixed.items()])
                path = os.path.join(a.outdir, f"heatmap_{name}.png")
                fig.savefig(path, dpi=110)
                plt.close(fig)
                written.append(path)
    for p in written:
        print(p)


if __name__ == "__main__":
    main()
