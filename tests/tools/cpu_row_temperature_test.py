#!/usr/bin/env python3
"""tools/cpu_row_temperature.py on real cold and hot rig rows (tests/data/calibration/
cpu_rows_cold_hot_2026-12-03, see tests/data/README.md) and on rows made to follow a byte rate."""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import cpu_row_temperature as T  # noqa: E402

DATA = os.path.join(HERE, "..", "data", "calibration", "cpu_rows_cold_hot_2026-12-03")


def fam(res, name):
    return next(r for r in res if r["family"].startswith(name))


class RealRows(unittest.TestCase):
    def test_the_cold_cost_is_per_call_not_per_byte(self):
        tc, _ = T.load_rows(os.path.join(DATA, "transformer_b8_cold.json"))
        th, _ = T.load_rows(os.path.join(DATA, "transformer_b8_hot.json"))
        rc, _ = T.load_rows(os.path.join(DATA, "resnet18_b8_cold.json"))
        rh, _ = T.load_rows(os.path.join(DATA, "resnet18_b8_hot.json"))
        t, r = T.compare(tc, th), T.compare(rc, rh)
        g = fam(t, "gemm")
        self.assertEqual(g["shapes"], 73)
        self.assertAlmostEqual(g["median_d_s"], 76e-6, places=9)
        # The transformer's run: d grows with the bytes at about DRAM's rate (20.4 GB/s) ...
        self.assertAlmostEqual(g["fit_byte_s"] / 1e9, 22.8, places=1)
        self.assertAlmostEqual(g["corr_bytes_d"], 0.77, places=2)
        # ... the ResNet run two minutes later, same shapes: d falls with the bytes; a per-call
        # cost of tens of us is what both share.
        g = fam(r, "gemm")
        self.assertEqual(g["shapes"], 73)
        self.assertIsNone(g["fit_byte_s"])
        self.assertLess(g["corr_bytes_d"], -0.7)
        self.assertAlmostEqual(g["median_d_s"], 39e-6, places=9)
        self.assertGreater(fam(t, "convolution forward")["median_d_s"], 100e-6)

    def test_the_command(self):
        out = subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "tools", "cpu_row_temperature.py"),
                              os.path.join(DATA, "transformer_b8_cold.json"),
                              os.path.join(DATA, "transformer_b8_hot.json")], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("DRAM rate of the cold run's sweep: 20.4 GB/s", out.stdout)
        self.assertIn("gemm (mm, addmm, linear)       73    76.0 us", out.stdout)
        bad = subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "tools", "cpu_row_temperature.py"),
                              os.path.join(DATA, "transformer_b8_cold.json"), HERE], capture_output=True, text=True)
        self.assertNotEqual(bad.returncode, 0)
        self.assertEqual(len(bad.stderr.strip().splitlines()), 1, bad.stderr)
        self.assertIn("manifest.json", bad.stderr)


class MadeRows(unittest.TestCase):
    def test_bytes_at_a_rate_are_recovered(self):
        # Cold = hot + B / 20 GB/s exactly: the fit must give a = 0, R = 20 GB/s, correlation 1.
        hot, cold = {}, {}
        for m, k, n in [(64, 16, 64), (512, 64, 256), (2048, 256, 64), (128, 128, 128)]:
            key = ("aten::mm", json.dumps([[m, k], [k, n]]))
            hot[key] = 1e-4
            cold[key] = 1e-4 + T.operand_bytes("aten::mm", [[m, k], [k, n]]) / 20e9
        g = fam(T.compare(cold, hot), "gemm")
        self.assertAlmostEqual(g["fit_byte_s"] / 1e9, 20.0, places=6)
        self.assertAlmostEqual(g["fit_a_s"], 0.0, places=12)
        self.assertAlmostEqual(g["corr_bytes_d"], 1.0, places=9)
        self.assertEqual(T.operand_bytes("aten::addmm", [[256], [16, 128], [128, 256]]),
                         4 * (16 * 128 + 128 * 256 + 16 * 256 + 256))


if __name__ == "__main__":
    unittest.main()
