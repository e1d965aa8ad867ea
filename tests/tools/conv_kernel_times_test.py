#!/usr/bin/env python3
"""tools/conv_kernel_times.py on the real A100 and H200 ResNet traces (the all-in TF32 convolution
times docs/cost-model.md and docs/validation.md quote)."""
import os
import subprocess
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "conv_kernel_times.py")
DATA = os.path.join(ROOT, "tests", "data", "calibration")


def run(path):
    out = subprocess.run([sys.executable, TOOL, path], capture_output=True, text=True, check=False)
    rows = {}
    for line in out.stdout.splitlines():
        c = [x.strip() for x in line.split("|")[1:-1]]
        if len(c) == 4 and c[0] not in ("step", "---"):
            rows[c[0]] = c[1:]
    return out, rows


class ConvKernelTimes(unittest.TestCase):
    def test_a100_resnet50_batch32(self):
        out, rows = run(os.path.join(DATA, "a100_2rank_nccl_rank0.json.gz"))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(len(rows), 4)  # 3 steps and the median
        self.assertEqual(rows["median"], ["13691.8", "5027.1", "18718.9"])

    def test_h200_resnet18_batch64(self):
        out, rows = run(os.path.join(DATA, "h200_resnet18-224px-b64_train.json.gz"))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(rows["median"], ["4416.9", "2319.9", "6736.9"])

    def test_missing_file_is_one_line_error(self):
        out, _ = run(os.path.join(DATA, "no_such_trace.json"))
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("no_such_trace.json", out.stderr)
        self.assertEqual(len(out.stderr.strip().splitlines()), 1)


if __name__ == "__main__":
    unittest.main()
