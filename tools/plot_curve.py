#!/usr/bin/python3
"""Plot a `placesim train` training curve: step time (best so far, iteration mean and best) and
the OOM share per iteration.

    /usr/bin/python3 tools/plot_curve.py curve.csv curve.png "nmt on paper-4gpu" [--ref NAME=SECONDS ...]

Needs Debian's python3-matplotlib. Exits 3 with one line on stderr if it is missing.
"""
import csv
import os
import sys


def main(argv):
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
    for name, sec in refs:
        ax.axhline(sec * 1e3, linestyle="--", linewidth=1, label=name)
    ax.set_ylabel("step time (ms)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax2.plot(it, oom, color="tab:red")
    ax2.set_ylabel("OOM share")
    ax2.set_xlabel("iteration")
    ax2.set_ylim(-0.05, 1.05)
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    tmp = png_path + ".tmp.png"
    fig.savefig(tmp, dpi=100)
    os.replace(tmp, png_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
