#!/usr/bin/env python3
"""The nccl-tests scoreboard: every stored real nccl-tests output through the built cluster model.

For each run listed in tests/data/collectives/nccl_scoreboard.csv it runs

    placesim collective --cluster C -g G [--devices D] [--algo A] [--p2p off] --compare FILE --json

(the collective, rank count and NCCL version the file states; `--p2p off` where the run exported
NCCL_P2P_DISABLE=1, the manifest's optional seventh column; `--nccl-version V` where the output
prints no `NCCL version` line and its source names the version, the optional eighth) and prints, per file and run, the
largest |model / measured - 1| of the out-of-place bus bandwidth in the issue's two judged bands,
8 KiB..1 MiB (bound 25 %) and >= 64 MiB (bound 10 %), with how many sizes are inside / outside.
Every row counts; a row slower than the next larger size (a stall: a healthy run never moves more
bytes in less time, and CollectiveValidation skips such rows) is judged like any other, and the
`stalls` column counts the judged rows that are.
docs/validation.md, "The nccl-tests scoreboard".

    python3 tools/nccl_scoreboard.py [--placesim build/placesim] [--set held_out|fit]
    python3 tools/nccl_scoreboard.py --min-inside SMALL,LARGE   # exit 1 if fewer sizes inside
    python3 tools/nccl_scoreboard.py --sizes 8xA100             # every judged size of those runs

`--sizes TEXT` adds, under each run whose file name contains TEXT, one line per judged size: the
band, measured and model out-of-place busbw, the error, the algorithm/protocol the model's tuner
chose, and `out` / `stall` marks (the same rows the counts are made of).

Bad input (a manifest line without its fields, a file placesim refuses) is one line naming the
file and line, exit 2.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

COLUMNS = ["file", "cluster", "g", "devices", "algo", "set", "p2p", "nccl"]
BANDS = (("8K-1M", lambda b: 8192 <= b <= 1 << 20, 0.25), (">=64M", lambda b: b >= 64 << 20, 0.10))


def fail(msg):
    print("nccl_scoreboard: " + msg, file=sys.stderr)
    sys.exit(2)


def read_manifest(path):
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            lines = [(i + 1, l) for i, l in enumerate(f) if l.strip() and not l.startswith("#")]
    except (OSError, UnicodeDecodeError) as err:
        fail(f"{path}: expected a readable UTF-8 manifest: {err}")
    header = None
    for lineno, fields in zip([n for n, _ in lines], csv.reader(l for _, l in lines)):
        if header is None:
            header = fields
            if header not in (COLUMNS[:6], COLUMNS[:7], COLUMNS):
                fail(f"{path}:{lineno}: expected the header file,cluster,g,devices,algo,set[,p2p[,nccl]]")
            continue
        if (not 6 <= len(fields) <= len(header) or not fields[0] or not fields[1]
                or not fields[2].isdigit()):
            fail(f"{path}:{lineno}: expected file,cluster,g (a number),devices,algo,set[,p2p[,nccl]]")
        if fields[5] not in ("fit", "held_out"):
            fail(f"{path}:{lineno}: set: expected fit or held_out, got {fields[5]!r}")
        row = dict(zip(COLUMNS, fields), line=lineno)
        row.setdefault("p2p", "")
        row.setdefault("nccl", "")
        if row["p2p"] not in ("", "on", "off"):
            fail(f"{path}:{lineno}: p2p: expected on, off or empty, got {row['p2p']!r}")
        rows.append(row)
    return rows


def score(placesim, data, entry, manifest):
    f = os.path.join(data, entry["file"])
    cluster = entry["cluster"]
    if os.path.exists(os.path.join(data, cluster)):
        cluster = os.path.join(data, cluster)
    cmd = [placesim, "collective", "--cluster", cluster, "-g", entry["g"], "--compare", f, "--json"]
    if entry["devices"]:
        cmd[4:4] = ["--devices", entry["devices"]]
    if entry["algo"]:
        cmd[4:4] = ["--algo", entry["algo"]]
    if entry["p2p"] == "off":
        cmd[4:4] = ["--p2p", "off"]
    if entry["nccl"]:
        cmd[4:4] = ["--nccl-version", entry["nccl"]]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"{manifest}:{entry['line']}: placesim exited {p.returncode}: "
             + (p.stderr.strip().splitlines() or ["?"])[-1])
    runs = {}
    for row in json.loads(p.stdout):
        runs.setdefault(row.get("run", 1), []).append(row)
    out = []
    for run, rows in sorted(runs.items()):
        rows = sorted((r for r in rows if r.get("measured_busbw_gbps", 0) > 0), key=lambda r: r["bytes"])
        slow = lambda r: r["bytes"] / r["measured_busbw_gbps"]
        stalled = {a["bytes"] for a, b in zip(rows, rows[1:]) if slow(a) > slow(b)}
        judged = [r for r in rows if any(f(r["bytes"]) for _, f, _ in BANDS)]
        stalls = sum(r["bytes"] in stalled for r in judged)
        bands = []
        for _, inside_band, bound in BANDS:
            errs = [abs(r["busbw_error"]) for r in rows if inside_band(r["bytes"])]
            n_in = sum(e <= bound for e in errs)
            bands.append((max(errs) if errs else None, n_in, len(errs) - n_in))
        out.append((run, len(runs), bands, stalls, [(r, r["bytes"] in stalled) for r in judged]))
    return out


def size_lines(judged):
    """One line per judged size: band, measured and model busbw, error, the tuner's choice, marks."""
    lines = []
    for r, stalled in judged:
        name, bound = next((n, b) for n, f, b in BANDS if f(r["bytes"]))
        err = r["busbw_error"]
        marks = ("out" if abs(err) > bound else "") + (" stall" if stalled else "")
        lines.append(f"    {r['bytes']:>13} {name:<6} measured {r['measured_busbw_gbps']:8.2f} "
                     f"model {r['busbw_gbps']:8.2f} GB/s {100 * err:+7.1f} %  "
                     f"{r.get('algo', '?')}/{r.get('proto', '?'):<7} {marks.strip()}".rstrip())
    return lines


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--placesim", default=os.path.join(root, "build", "placesim"))
    ap.add_argument("--manifest",
                    default=os.path.join(root, "tests", "data", "collectives", "nccl_scoreboard.csv"))
    ap.add_argument("--set", choices=("fit", "held_out"), help="only the runs of this set")
    ap.add_argument("--min-inside", metavar="SMALL,LARGE",
                    help="exit 1 unless at least SMALL sizes of 8K-1M and LARGE of >=64M are inside")
    ap.add_argument("--sizes", metavar="TEXT",
                    help="under each run whose file name contains TEXT, print every judged size "
                         "(measured and model busbw, error, the model's algorithm/protocol)")
    a = ap.parse_args()
    want = None
    if a.min_inside:
        parts = a.min_inside.split(",")
        if len(parts) != 2 or not all(x.isdigit() for x in parts):
            fail(f"--min-inside: expected SMALL,LARGE (two counts), got {a.min_inside!r}")
        want = [int(x) for x in parts]
    data = os.path.dirname(os.path.dirname(a.manifest))  # tests/data
    entries = [e for e in read_manifest(a.manifest) if not a.set or e["set"] == a.set]
    print(f"{'file':<72} {'cluster':<14} {'set':<8} {'8K-1M worst':>11} {'in/out':>6}  {'>=64M worst':>11} {'in/out':>6} stalls")
    tot = [[0, 0], [0, 0]]
    files_ok = 0
    for e in entries:
        for run, nruns, bands, stalls, judged in score(a.placesim, data, e, a.manifest):
            name = os.path.basename(e["file"]) + (f" r{run}" if nruns > 1 else "")
            cl = os.path.basename(e["cluster"]).removesuffix(".yaml")[:14]
            cells = []
            ok = True
            for i, (worst, n_in, n_out) in enumerate(bands):
                tot[i][0] += n_in
                tot[i][1] += n_out
                ok = ok and n_out == 0
                cells.append(f"{'—' if worst is None else f'{100 * worst:.1f} %':>11} {n_in:>3}/{n_out:<2}")
            files_ok += ok
            print(f"{name:<72} {cl:<14} {e['set']:<8} {cells[0]}  {cells[1]} {stalls:>3}")
            if a.sizes and a.sizes in os.path.basename(e["file"]):
                print("\n".join(size_lines(judged)))
    print(f"sizes inside: 8K-1M {tot[0][0]} of {sum(tot[0])}, >=64M {tot[1][0]} of {sum(tot[1])}; "
          f"runs with every judged size inside: {files_ok}")
    if want:
        if tot[0][0] < want[0] or tot[1][0] < want[1]:
            print(f"nccl_scoreboard: fewer sizes inside than {want[0]},{want[1]}", file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    main()
