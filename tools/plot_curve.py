#!/usr/bin/python3
"""Plot a `placesim train` training curve: step time (best so far, iteration mean and best) and
the OOM share per iteration.

    /usr/bin/python3 tools/plot_curve.py curve.csv curve.png "nmt on paper-4gpu" [--ref NAME=SECONDS ...]
    /usr/bin/python3 tools/plot_curve.py --seeds out.png "nmt, 3 seeds" a.csv b.csv c.csv [--ref NAME=SECONDS ...]

The second form overlays several runs (best so far and iteration mean against wall time, and the
policy's entropy), so seeds or settings can be compared on one figure. A curve of a multi-graph
run (`train --graphs`, with a `graph` column) gets one colour per graph: its iteration mean and its
best sample so far.

Needs Debian's python3-matplotlib. Exits 3 with one line on stderr if it is missing.
"""
import csv
import os
import sys


def save(fig, png_path):
    """Writes the figure under a temporary name, then renames it: never a half-written PNG."""
    fig.tight_layout()
    tmp = png_path + ".tmp.png"
    fig.savefig(tmp, dpi=100)
    os.replace(tmp, png_path)


def finish_oom_axes(ax, ax2, title, refs, legend_size):
    """Step-time axes (reference lines, title, legend) over an OOM-share axes, by iteration."""
    for name, sec in refs:
        ax.axhline(sec * 1e3, linestyle="--", linewidth=1, label=name)
    ax.set_ylabel("step time (ms)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=legend_size)
    ax2.set_ylabel("OOM share")
    ax2.set_xlabel("iteration")
    ax2.set_ylim(-0.05, 1.05)
    ax2.grid(alpha=0.3)


def read_curve(path):
    rows = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            rows.append({k: (v if k == "graph" else float(v)) for k, v in row.items()})
    return rows


def parse_refs(args):
    refs = []
    for i, a in enumerate(args):
        if a == "--ref" and i + 1 < len(args):
            name, _, sec = args[i + 1].partition("=")
            refs.append((name, float(sec)))
    return refs


def overlay(argv, plt):
    png_path, title = argv[2], argv[3]
    paths, refs = [], parse_refs(argv[4:])
    skip = False
    for a in argv[4:]:
        if skip:
            skip = False
        elif a == "--ref":
            skip = True
        else:
            paths.append(a)
    nan = float("nan")
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True,
                                  gridspec_kw={"height_ratios": [3, 1]})
    for n, path in enumerate(paths):
        rows = read_curve(path)
        wall, t = [], 0.0
        for r in rows:
            t += r["sample_s"] + r["reward_s"] + r["grad_s"]
            wall.append(t)
        color = "C%d" % n
        label = os.path.basename(path).replace(".curve.csv", "")
        ax.plot(wall, [r["best_step_s"] * 1e3 if r["best_step_s"] > 0 else nan for r in rows],
                color=color, linewidth=2, label=label + " best so far")
        ax.plot(wall, [r["mean_step_s"] * 1e3 if r["mean_step_s"] > 0 else nan for r in rows],
                color=color, alpha=0.4, linewidth=0.8, label=label + " iteration mean")
        ax2.plot(wall, [r["entropy"] for r in rows], color=color)
    for name, sec in refs:
        ax.axhline(sec * 1e3, linestyle="--", linewidth=1, color="gray")
        ax.annotate(name, (0, sec * 1e3), fontsize=7, color="gray", va="bottom")
    ax.set_ylabel("step time (ms)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax2.set_ylabel("entropy (nats/group)")
    ax2.set_xlabel("training wall time (s)")
    ax2.grid(alpha=0.3)
    save(fig, png_path)
    return 0


def per_graph(csv_path, png_path, title, refs, plt):
    """Multi-graph curve: each graph's iteration mean and best sample so far, and the OOM share."""
    nan = float("nan")
    series = {}
    with open(csv_path, newline="") as f:
        for row in csv.DictReader(f):
            s = series.setdefault(row["graph"], {"it": [], "mean": [], "best": [], "oom": [], "low": nan})
            m, lo = float(row["mean_step_s"]), float(row["min_step_s"])
            if lo > 0 and not lo >= s["low"]:
                s["low"] = lo
            s["it"].append(int(row["iteration"]))
            s["mean"].append(m * 1e3 if m > 0 else nan)
            s["best"].append(s["low"] * 1e3)
            s["oom"].append(float(row["oom_fraction"]))
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True,
                                  gridspec_kw={"height_ratios": [3, 1]})
    for n, (g, s) in enumerate(series.items()):
        color = "C%d" % n
        ax.plot(s["it"], s["mean"], color=color, alpha=0.4, linewidth=0.8, label=g + " iteration mean")
        ax.plot(s["it"], s["best"], color=color, linewidth=2, label=g + " best so far")
        ax2.plot(s["it"], s["oom"], color=color)
    ax.set_yscale("log")
    finish_oom_axes(ax, ax2, title, refs, 7)
    save(fig, png_path)
    return 0


def main(argv):
    if len(argv) >= 2 and argv[1] == "--seeds":
        if len(argv) < 5:
            print("usage: plot_curve.py --seeds OUT.png TITLE A.csv [B.csv ...] [--ref NAME=SECONDS ...]", file=sys.stderr)
            return 2
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("plot_curve.py: matplotlib missing (apt-get install python3-matplotlib); no PNG written", file=sys.stderr)
            return 3
        return overlay(argv, plt)
    if len(argv) < 3:
        print("usage: plot_curve.py CURVE.csv OUT.png [TITLE] [--ref NAME=SECONDS ...]", file=sys.stderr)
        return 2
    csv_path, png_path = argv[1], argv[2]
    title = argv[3] if len(argv) > 3 and not argv[3].startswith("--") else ""
    refs = []
    rest = argv[3:]
    for i, a in enumerate(rest):
        if a == "--ref" and i + 1 < len(rest):
            name, _, sec = rest[i + 1].partition("=")
            refs.append((name, float(sec)))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_curve.py: matplotlib missing (apt-get install python3-matplotlib); no PNG written", file=sys.stderr)
        return 3
    with open(csv_path, newline="") as f:
        header = next(csv.reader(f), [])
    if "graph" in header:
        return per_graph(csv_path, png_path, title, refs, plt)
    it, best, mean, low, oom = [], [], [], [], []
    with open(csv_path, newline="") as f:
        for row in csv.DictReader(f):
            it.append(int(row["iteration"]))
            nan = float("nan")
            b, m, lo = (float(row[k]) for k in ("best_step_s", "mean_step_s", "min_step_s"))
            best.append(b * 1e3 if b > 0 else nan)
            mean.append(m * 1e3 if m > 0 else nan)
            low.append(lo * 1e3 if lo > 0 else nan)
            oom.append(float(row["oom_fraction"]))
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True,
                                  gridspec_kw={"height_ratios": [3, 1]})
    ax.plot(it, mean, label="iteration mean (fitting samples)", color="tab:blue", alpha=0.6)
    ax.plot(it, low, label="iteration best", color="tab:green", alpha=0.6, linewidth=0.8)
    ax.plot(it, best, label="best so far", color="black", linewidth=2)
    ax2.plot(it, oom, color="tab:red")
    finish_oom_axes(ax, ax2, title, refs, 8)
    save(fig, png_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
