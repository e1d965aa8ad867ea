#!/usr/bin/env python3
"""Steady-state step time of Lambda's one-GPU SQuAD runs from their own logs, against the rows of
tests/data/published_throughput.csv (docs/validation.md, "Lambda's one-GPU SQuAD runs step by step").

    tools/squad_steps.py [--data tests/data/lambda_squad_steps.csv]
                         [--published tests/data/published_throughput.csv] [--placesim build/placesim]

The data are run_squad.py's lines in each log (lambdal/deeplearning-benchmark): `train_batch_size`,
`e2e_train_time` and `training_sequences_per_second` (under `--max_steps=100` the script reports
max_steps x batch / e2e_train_time, so the batch is checked against that product), and the DLL time
stamps of training iterations 1, 51 and 101 (log_freq 50). Per run it prints the steady-state step
((t101 - t1) / 100) and its two halves, and how much faster the steady state is than the published
figure (the first iteration's one-off costs sit inside e2e_train_time). It refuses a run whose
published row states another batch than the run's log: the row would model a step the run never
took. With --placesim, the model's step at the row's own options and its error against the steady
state.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def fail(msg):
    sys.exit(f"squad_steps: {msg}")


def seconds(stamp):
    """HH:MM:SS.ffffff -> seconds of the day."""
    h, m, s = stamp.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


def load_runs(path):
    if not os.path.exists(path):
        fail(f"{path}: no such file")
    runs = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            batch, steps = int(r["train_batch_size"]), int(r["max_steps"])
            e2e, rate = float(r["e2e_train_time_s"]), float(r["training_sequences_per_second"])
            # run_squad.py under max_steps: rate = max_steps x batch / e2e_train_time.
            if abs(rate * e2e / steps - batch) > 0.005 * batch:
                fail(f"{r['system']} {r['precision']} {r['family']}: "
                     f"{rate:.3f} seq/s x {e2e:.3f} s / {steps} steps is not batch {batch}")
            t = [seconds(r[k]) for k in ("iteration_1", "iteration_51", "iteration_101")]
            runs.append(dict(r, batch=batch, steps=steps, e2e=e2e, rate=rate, t=t))
    return runs


def load_rows(path):
    rows = {}
    with open(path, newline="") as f:
        lines = [l for l in f if not l.startswith("#")]
    for r in csv.DictReader(lines):
        if r["gpus"] == "1":
            rows[(r["model"], r["system"], r["precision"])] = r
    return rows


def model_step_ms(binary, row):
    cmd = [binary, "simulate", "--graph", row["graph"], "--graph-opt", row["graph_opt"],
           "--cluster", row["cluster"], "--quiet", "--json", "--placement", "single-gpu"]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    if out.returncode != 0:
        fail(f"{' '.join(cmd)}: exited {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)["step_time_s"] * 1e3


def report(runs, rows, binary):
    print("%-24s %-24s %-5s %5s %9s %9s %9s %8s %9s %9s" %
          ("family", "system", "prec", "batch", "step ms", "1st half", "2nd half", "one-off",
           "model ms", "model"))
    for run in runs:
        key = (run["family"], run["system"], run["precision"])
        row = rows.get(key)
        if row is None:
            fail(f"{' '.join(key)}: no one-GPU row in the published table")
        if int(row["batch"]) != run["batch"]:
            fail(f"{' '.join(key)}: the row states batch {row['batch']}, the run's log "
                 f"{run['batch']} ({run['source']})")
        t1, t51, t101 = run["t"]
        step = (t101 - t1) / 100 * 1e3
        halves = ((t51 - t1) / 50 * 1e3, (t101 - t51) / 50 * 1e3)
        # The share of e2e_train_time that the steady state does not explain: the first
        # iteration's one-off costs, inside the published figure.
        once = 100.0 * (1.0 - run["steps"] * step / 1e3 / run["e2e"])
        line = "%-24s %-24s %-5s %5d %9.1f %9.1f %9.1f %7.1f%%" % (
            run["family"], run["system"], run["precision"], run["batch"], step, halves[0],
            halves[1], once)
        if binary:
            m = model_step_ms(binary, row)
            line += " %9.1f %+8.1f%%" % (m, 100.0 * (step / m - 1.0))
        print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.path.join(ROOT, "tests", "data", "lambda_squad_steps.csv"))
    ap.add_argument("--published",
                    default=os.path.join(ROOT, "tests", "data", "published_throughput.csv"))
    ap.add_argument("--placesim", help="placesim binary: the model's step at each row's options")
    a = ap.parse_args()
    if not os.path.exists(a.published):
        fail(f"{a.published}: no such file")
    report(load_runs(a.data), load_rows(a.published), a.placesim)


if __name__ == "__main__":
    main()
