#!/usr/bin/env python3
"""tools/scaling_split.py: the 1 -> 8 GPU split of docs/validation.md ("DGX A100 8-GPU AMP CNN
rows: what the 1 -> 8 GPU loss is not") on three rows of the published table as --table prints
them (ResNet-50 AMP on DGX A100 80GB, published 2,470 and 16,621 images/s at 256 per GPU)."""
import os
import subprocess
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "scaling_split.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import scaling_split  # noqa: E402

TABLE = """\
| model | system | GPUs | precision | batch/GPU | published | predicted | unit | error | command |
|---|---|---|---|---|---|---|---|---|---|
| resnet50 | DGX A100 80GB | 1 | AMP | 256 | 2,470 | 2,619.5 | images/s | +6.1 % | `x` |
| resnet50 | DGX A100 80GB | 8 | AMP | 256 | 16,621 | 20,580.1 | images/s | +23.8 % | `x` |
| resnet50 | DGX A100 80GB | 1 | AMP | 256 | 2,470 | 2,619.5 | images/s | +6.1 % | `x` |
| gnmt-v2 | DGX A100 40GB | 1 | AMP | 128 | 140,909 | 139,595.3 | tokens/s | -0.9 % | `x` |
| gnmt-v2 | DGX A100 40GB | 8 | AMP | 128 | 822,024 | 855,244.1 | tokens/s | +4.0 % | `x` |
| resnet50 | DGX A100 80GB | 8 | TF32 | 256 | 7,248 | 7,888.7 | images/s | +8.8 % | `x` |
"""


class ScalingSplit(unittest.TestCase):
    def test_resnet50_amp_split(self):
        records = scaling_split.split(scaling_split.read_rows(TABLE.splitlines()))
        # tokens/s rows and an 8-GPU row without its 1-GPU row give nothing.
        self.assertEqual(len(records), 1)
        r = records[0]
        self.assertEqual((r["model"], r["gpus"], r["precision"]), ("resnet50", 8, "AMP"))
        self.assertAlmostEqual(r["scale_pub"], 16621 / 2470, places=6)  # 6.73x
        self.assertAlmostEqual(r["scale_pred"], 20580.1 / 2619.5, places=6)  # 7.86x
        # 256 x 8 / 16,621 - 256 / 2,470 = 123.218 - 103.644 ms
        self.assertAlmostEqual(r["extra_pub_ms"], 19.574, places=3)
        self.assertAlmostEqual(r["extra_pred_ms"], 1e3 * (2048 / 20580.1 - 256 / 2619.5), places=6)
        # (1 + N-GPU error) = (1 + 1-GPU error) x (1 + scaling error)
        self.assertAlmostEqual(1 + r["errn"], (1 + r["err1"]) * (1 + r["scale_err"]), places=9)

    def test_command_line_filters(self):
        out = subprocess.run([sys.executable, TOOL, "-", "--system", "DGX A100 80GB"],
                             input=TABLE, capture_output=True, text=True, check=True).stdout
        self.assertIn("| resnet50 | DGX A100 80GB | 8 | AMP | +6.1 % | +23.8 % | 6.73x | 7.86x |",
                      out)
        self.assertIn("+19.6 ms", out)
        none = subprocess.run([sys.executable, TOOL, "-", "--model", "bert"], input=TABLE,
                              capture_output=True, text=True, check=True).stdout
        self.assertEqual(len(none.splitlines()), 2)  # the header only


if __name__ == "__main__":
    unittest.main()
