#!/usr/bin/env python3
"""tools/torch_host_fit.py --phases on the H200 ResNet-50 AMP NHWC traces: the forward and backward
host a step that docs/validation.md ("Deep CNNs on the H200 held-out set", session 31) compares
across leases (session 24's fit at b64, the evening heldout2 lease at b128)."""
import os
import re
import statistics
import subprocess
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "torch_host_fit.py")
DATA = os.path.join(ROOT, "tests", "data", "calibration")
ROW = re.compile(r"^(ProfilerStep#\d+) ([\d.]+) \| ([\d.]+) \((\d+)\) \| ([\d.]+) \((\d+)\)$")


def phases(trace):
    out = subprocess.run([sys.executable, TOOL, os.path.join(DATA, trace), "--phases"],
                         capture_output=True, text=True, check=False)
    rows = [ROW.match(l) for l in out.stdout.splitlines()[1:]]
    return out, [m.groups() for m in rows if m]


class TorchHostPhases(unittest.TestCase):
    def test_fit_trace_b64(self):
        out, rows = phases("h200_resnet50_amp_nhwc_b64_train.json.gz")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(len(rows), 5)
        # 229 top-level forward ops up to the loss and 397 autograd nodes a step, every step.
        self.assertTrue(all(r[3] == "229" and r[5] == "397" for r in rows), rows)
        self.assertEqual([r[2] for r in rows], ["7.14", "8.51", "7.00", "7.61", "16.90"])
        self.assertEqual(rows[3][4], "9.07")

    def test_evening_trace_b128_forward_twice_the_fit(self):
        _, fit = phases("h200_resnet50_amp_nhwc_b64_train.json.gz")
        out, rows = phases("h200_resnet50_amp_nhwc_b128_train.json.gz")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual([(r[2], r[4]) for r in rows], [("17.72", "14.33"), ("18.44", "14.15")])
        fwd = statistics.median(float(r[2]) for r in rows) / statistics.median(float(r[2]) for r in fit)
        bwd = statistics.median(float(r[4]) for r in rows) / statistics.median(float(r[4]) for r in fit)
        self.assertAlmostEqual(fwd, 2.38, places=2)
        self.assertAlmostEqual(bwd, 1.57, places=2)

    def test_default_output_unchanged(self):
        out = subprocess.run([sys.executable, TOOL, os.path.join(DATA, "h200_resnet50_amp_nhwc_b64_train.json.gz")],
                             capture_output=True, text=True, check=False)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("aten::conv2d                                               44.0", out.stdout)


if __name__ == "__main__":
    unittest.main()
