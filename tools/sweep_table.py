#!/usr/bin/python3
"""Prints a `placesim sweep` CSV as a Markdown pivot table of step times (ms).

    /usr/bin/python3 tools/sweep_table.py results.csv [--columns AXIS] [--method M]

Rows: every other key column (axes, workload, method) that varies; columns: the values of
--columns (default: the last varying axis). A cell is the step time in ms, "OOM" when the
placement does not fit, "err" when the point failed.
"""
import argparse
import csv


def md(text):
    return text.replace("|", "\\|")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--columns")
    ap.add_argument("--method", help="only rows of this method")
    a = ap.parse_args()
    with open(a.csv, newline="") as f:
        r = csv.reader(f)
        header = next(r)
        rows = [dict(zip(header, x)) for x in r if len(x) == len(header)]
    if a.method:
        rows = [x for x in rows if x["method"] == a.method]
    keys = header[: header.index("method") + 1]
    varying = [k for k in keys if len({x[k] for x in rows}) > 1]
    axes = header[: header.index("workload")]
    col = a.columns or [k for k in varying if k in axes][-1]
    row_keys = [k for k in varying if k != col]
    cols = list(dict.fromkeys(x[col] for x in rows))  # spec order: the CSV is in point order
    table = {}
    order = []
    for x in rows:
        rk = tuple(x[k] for k in row_keys)
        if rk not in table:
            table[rk] = {}
            order.append(rk)
        if x["error"]:
            cell = "err"
        elif x["oom"] == "1":
            cell = "OOM"
        else:
            cell = f"{float(x['step_time_s']) * 1e3:.1f}"
        table[rk][x[col]] = cell
    print("| " + " | ".join(md(k) for k in row_keys + [f"{col}={c}" for c in cols]) + " |")
    print("|" + "---|" * (len(row_keys) + len(cols)))
    for rk in order:
        print("| " + " | ".join(md(v) for v in list(rk) + [table[rk].get(c, "") for c in cols]) + " |")


if __name__ == "__main__":
    main()
