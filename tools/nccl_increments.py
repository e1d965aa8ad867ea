#!/usr/bin/env python3
"""Size-to-size increments of a real nccl-tests run beside the model's.

For each pair of consecutive sizes >= --min-bytes it prints the bus bandwidth of the extra bytes
alone, d(bytes x factor) / d(time) (factor: busbw / algbw, nccl-tests' bus factor of the
collective), and the time the run spends beyond that rate at the larger size (its fixed term,
time - bytes x factor / increment), for the measured run (its out-of-place time, from its busbw)
and for the model. A collective that runs at one rate after a fixed start has one increment at
every size; a change of increment between two sizes is a change in what the run does there.
docs/validation.md, "All_gather across nodes: the NICs' rate from one NCCL ring loop on, a
shrinking chunk below it".

    python3 tools/nccl_increments.py [--placesim build/placesim] [--min-bytes 64M] \
        -- --cluster C -g G --compare FILE [--devices ...] [--run N]

Everything after `--` goes to `placesim collective` (which reads the file and predicts it); a
file placesim refuses is its one-line error, exit 2.
"""
import argparse
import json
import subprocess
import sys

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_bytes(text):
    unit = text[-1:].upper() if text[-1:].isalpha() else ""
    if unit not in UNITS or not text[: len(text) - len(unit)].isdigit():
        raise argparse.ArgumentTypeError(f"expected a byte count such as 64M, got {text!r}")
    return int(text[: len(text) - len(unit)]) * UNITS[unit]


def increments(rows, busbw_key):
    """[(bytes0, bytes1, increment GB/s, fixed us at bytes1)] of consecutive rows."""
    out = []
    for a, b in zip(rows, rows[1:]):
        factor = b["busbw_gbps"] / b["algbw_gbps"]
        t0 = a["bytes"] * factor / (a[busbw_key] * 1e9)
        t1 = b["bytes"] * factor / (b[busbw_key] * 1e9)
        if t1 <= t0:
            out.append((a["bytes"], b["bytes"], None, None))
            continue
        inc = (b["bytes"] - a["bytes"]) * factor / (t1 - t0) / 1e9
        out.append((a["bytes"], b["bytes"], inc, (t1 - b["bytes"] * factor / (inc * 1e9)) * 1e6))
    return out


def size(b):
    for unit in ("G", "M", "K"):
        if b % UNITS[unit] == 0:
            return f"{b // UNITS[unit]}{unit}"
    return str(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--placesim", default="build/placesim")
    ap.add_argument("--min-bytes", type=parse_bytes, default=64 << 20)
    ap.add_argument("collective_args", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    rest = args.collective_args[1:] if args.collective_args[:1] == ["--"] else args.collective_args
    if "--compare" not in rest:
        print("nccl_increments: expected `-- --cluster C --compare FILE ...` (placesim collective's arguments)",
              file=sys.stderr)
        sys.exit(2)
    p = subprocess.run([args.placesim, "collective", *rest, "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        print("nccl_increments: " + (p.stderr.strip().splitlines() or ["placesim failed"])[-1], file=sys.stderr)
        sys.exit(2)
    runs = {}
    for row in json.loads(p.stdout):
        if row.get("measured_busbw_gbps", 0) > 0 and row["bytes"] >= args.min_bytes:
            runs.setdefault(row.get("run", 1), []).append(row)
    print(f"{'sizes':>14} {'measured: increment':>20} {'fixed':>9} {'model: increment':>17} {'fixed':>9}")
    print(f"{'':>14} {'(GB/s busbw)':>20} {'(us)':>9} {'(GB/s busbw)':>17} {'(us)':>9}")
    for run, rows in sorted(runs.items()):
        if len(runs) > 1:
            print(f"# run {run}")
        rows.sort(key=lambda r: r["bytes"])
        for m, s in zip(increments(rows, "measured_busbw_gbps"), increments(rows, "busbw_gbps")):
            pair = f"{size(m[0])}->{size(m[1])}"
            meas = f"{m[2]:20.1f} {m[3]:9.0f}" if m[2] is not None else f"{'stall':>20} {'':>9}"
            model = f"{s[2]:17.1f} {s[3]:9.0f}" if s[2] is not None else f"{'-':>17} {'':>9}"
            print(f"{pair:>14} {meas} {model}")


if __name__ == "__main__":
    main()
