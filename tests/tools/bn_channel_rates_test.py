#!/usr/bin/env python3
"""tools/bn_channel_rates.py on the real traces whose figures sim/cost_model.cpp's BatchNorm rule
and tests/sim/cost_model_test.cpp (BatchNormChannelRateFollowsTheGeneration) quote."""
import os
import subprocess
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "bn_channel_rates.py")
DATA = os.path.join(ROOT, "tests", "data", "calibration")


def run(trace, *args):
    out = subprocess.run([sys.executable, TOOL, os.path.join(DATA, trace), *args],
                         capture_output=True, text=True, check=False)
    rows = {}
    for line in out.stdout.splitlines():
        c = [x.strip() for x in line.split("|")[1:-1]]
        if len(c) == 7 and c[0] not in ("op", "---"):
            rows[(c[0], c[1], c[2])] = c
    return out, rows


class BnChannelRates(unittest.TestCase):
    def test_a100_resnet50_batch32(self):
        out, rows = run("a100_2rank_nccl_rank0.json.gz", "32", "resnet50")
        self.assertEqual(out.returncode, 0, out.stderr)
        # 3 steps x 53 BatchNorms, each kernel's grid one block per channel.
        self.assertEqual(rows[("bn_fwd", "64", "112x112")][3:], ["3", "386.1", "798", "12.47"])
        self.assertEqual(rows[("bn_fwd", "64", "56x56")][6], "12.13")
        self.assertEqual(rows[("bn_fwd", "128", "28x28")][6], "12.92")
        self.assertEqual(rows[("bn_bwd", "64", "112x112")][6], "9.99")
        self.assertEqual(rows[("bn_bwd", "64", "56x56")][6], "9.71")
        self.assertEqual(rows[("relu", "256", "56x56")][5], "1371")
        # The elementwise medians CostModel.ElementwiseOpsStreamAsTheTracesMeasured quotes.
        self.assertEqual(rows[("relu", "64", "112x112")][4], "145.3")
        self.assertEqual(rows[("relu_bwd", "64", "112x112")][4], "227.4")
        self.assertEqual(rows[("residual_add", "256", "56x56")][4], "226.6")
        calls = sum(int(c[3]) for k, c in rows.items() if k[0] == "bn_fwd")
        self.assertEqual(calls, 3 * 53)

    def test_h200_resnet18_batch64(self):
        out, rows = run("h200_resnet18-224px-b64_train.json.gz", "64", "resnet18")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(rows[("bn_fwd", "64", "112x112")][6], "20.93")
        self.assertEqual(rows[("bn_fwd", "64", "56x56")][6], "20.46")
        self.assertEqual(rows[("bn_fwd", "128", "28x28")][6], "22.06")
        self.assertEqual(rows[("bn_bwd", "64", "112x112")][6], "13.78")
        self.assertEqual(rows[("bn_bwd", "64", "56x56")][6], "13.55")
        self.assertEqual(rows[("relu", "64", "112x112")][4], "96.7")
        self.assertEqual(rows[("relu_bwd", "64", "112x112")][4], "141.5")

    def test_wrong_model_matches_no_step(self):
        out, rows = run("h200_resnet18-224px-b64_train.json.gz", "64", "resnet50")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(rows, {})
        self.assertEqual(out.stdout.count("20/20 BatchNorms, 53 expected: skipped"), 5)

    def test_unknown_model_is_an_error(self):
        out, _ = run("h200_resnet18-224px-b64_train.json.gz", "64", "vgg16")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("unknown model 'vgg16'", out.stderr)


if __name__ == "__main__":
    unittest.main()
