#!/usr/bin/env python3
"""tools/sdpa_kernels.py on the H200 kernel rig's trace: the per-kernel SDPA times docs/validation.md
("Dropout inside fused attention") quotes, and the fitted instructions per kept pair that
sim/cost_model.cpp's kCudnnSdpaDropout and kFlashAttention2Dropout hold (to their rounding)."""
import json
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "sdpa_kernels.py")
TRACE = os.path.join(ROOT, "tests", "data", "calibration", "h200_kernels_2026-12-04.json.gz")


def run(*args):
    return subprocess.run([sys.executable, TOOL, TRACE, *args], check=True, capture_output=True,
                          text=True).stdout


class SdpaKernels(unittest.TestCase):
    def test_kernel_times(self):
        rows = {(r["backend"], r["seq"], r["dropout"]): r
                for r in map(json.loads, run("--json").splitlines())}
        self.assertEqual(len(rows), 12)
        for r in rows.values():
            self.assertEqual(r["reps"], 5)
        self.assertAlmostEqual(rows[("default", 1024, 0.0)]["fwd_us"], 46.7, delta=0.05)
        self.assertAlmostEqual(rows[("default", 1024, 0.1)]["fwd_us"], 102.8, delta=0.05)
        self.assertAlmostEqual(rows[("default", 1024, 0.0)]["bwd_us"], 122.5, delta=0.05)
        self.assertAlmostEqual(rows[("default", 1024, 0.1)]["bwd_us"], 151.9, delta=0.05)
        self.assertEqual(rows[("flash", 1024, 0.0)]["fwd_tile"], "128x128")
        self.assertEqual(rows[("flash", 1024, 0.1)]["fwd_tile"], "128x64")

    def test_fit_matches_the_cost_model_constants(self):
        fitted = {}
        for line in run("--fit").splitlines()[1:]:
            m = re.match(r"(\w+)\s+(fwd|bwd) I = +([\d.]+)", line)
            fitted[(m.group(1), m.group(2))] = float(m.group(3))
        src = open(os.path.join(ROOT, "sim", "cost_model.cpp")).read()
        for name, backend in (("kCudnnSdpaDropout", "default"),
                              ("kFlashAttention2Dropout", "flash")):
            m = re.search(name + r"\{([\d.]+), ([\d.]+)\}", src)
            self.assertIsNotNone(m, name)
            self.assertAlmostEqual(float(m.group(1)), fitted[(backend, "fwd")], delta=0.05)
            self.assertAlmostEqual(float(m.group(2)), fitted[(backend, "bwd")], delta=0.05)


if __name__ == "__main__":
    unittest.main()
