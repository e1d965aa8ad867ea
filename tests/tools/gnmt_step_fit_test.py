#!/usr/bin/env python3
"""tools/gnmt_step_fit.py on Lambda's GNMT v2 iteration lines (tests/data/lambda_gnmt_iterations.csv):
the figures docs/validation.md ("Lambda's 1-to-2-GPU GNMT and SQuAD scaling") quotes."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "gnmt_step_fit.py")
DATA = os.path.join(ROOT, "tests", "data", "lambda_gnmt_iterations.csv")


def run(*args):
    return subprocess.run([sys.executable, TOOL] + list(args), capture_output=True, text=True,
                          check=False)


def lines(out, prefix):
    return [l.split() for l in out.stdout.splitlines() if l.startswith(prefix)]


class GnmtStepFit(unittest.TestCase):
    def test_runs_and_harness_rule(self):
        out = run()
        self.assertEqual(out.returncode, 0, out.stderr)
        rows = {(" ".join(r[:4]), r[4]): r for r in lines(out, "Lambda A100") + lines(
            out, "Lambda H100")}
        # per run: slope (us/token), fixed ms; the published epoch figure within 2 % of the fit
        self.assertEqual(rows["Lambda A100 80GB SXM4", "1"][6:8], ["3.947", "12.1"])
        self.assertEqual(rows["Lambda A100 80GB SXM4", "2"][6:8], ["3.969", "123.5"])
        self.assertEqual(rows["Lambda H100 80GB SXM5", "2"][6:8], ["2.075", "8.4"])
        for r in lines(out, "Lambda"):
            if len(r) > 9 and r[-1].endswith("%"):
                self.assertLess(abs(float(r[-1].rstrip("%"))), 2.0, r)

    def test_extra_fixed_time_and_bound(self):
        out = run()
        self.assertEqual(out.returncode, 0, out.stderr)
        # extra fixed ms a step on 2 GPUs, slope ratio, the busbw bound of 319.2 MB of gradients
        self.assertIn("111.4      1.006              2.87", out.stdout)
        self.assertIn("73.8      0.944              4.33", out.stdout)
        self.assertIn("-3.1      1.046          (hidden)", out.stdout)
        self.assertIn("91.0      0.986              3.51", out.stdout)
        self.assertIn("62.1      1.026              5.14", out.stdout)

    def test_bad_input(self):
        out = run("--data", os.path.join(ROOT, "no_such.csv"))
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("no_such.csv: no such file", out.stderr)
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            with open(DATA) as src:
                f.writelines(l for l in src if not l.startswith("Lambda A100 80GB SXM4,2,"))
        try:
            out = run("--data", f.name)
        finally:
            os.unlink(f.name)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("Lambda A100 80GB SXM4: the data need a 1-GPU and a 2-GPU run", out.stderr)


if __name__ == "__main__":
    unittest.main()
