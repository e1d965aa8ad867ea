#!/usr/bin/env python3
"""tools/batch_scaling.py: the per-class lines through the H200 ResNet-50 AMP NHWC traces at batch
64 and 256 that docs/validation.md ("ResNet-50 on the H200: what grows with the batch") quotes,
against a stand-in `placesim` whose simulated trace grows by a known amount per image."""
import os
import stat
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "batch_scaling.py")
DATA = os.path.join(ROOT, "tests", "data", "calibration")

# Writes `--trace` with one Conv2D kernel of 10 + 2 x batch us and one FusedBatchNorm of 5 x batch.
FAKE = r'''#!/usr/bin/env python3
import json, re, sys
a = sys.argv
b = int(re.search(r"batch=(\d+)", a[a.index("--graph-opt") + 1]).group(1))
k = lambda t, d: {"ph": "X", "cat": "kernel", "name": t, "dur": d, "ts": 0, "pid": 1, "tid": 1,
                  "args": {"op type": t}}
json.dump({"traceEvents": [k("Conv2D", 10.0 + 2.0 * b), k("FusedBatchNorm", 5.0 * b)]},
          open(a[a.index("--trace") + 1], "w"))
print(json.dumps({"step_time_s": 1e-6 * (10.0 + 7.0 * b)}))
'''


def rows(text):
    out = {}
    for line in text.splitlines():
        c = [x.strip() for x in line.strip("|").split("|")]
        if len(c) > 3 and c[0] in ("conv", "conv_bwd", "norm", "total"):
            out[c[0]] = c[1:]
    return out


class BatchScaling(unittest.TestCase):
    def test_resnet50_h200_lines(self):
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "placesim")
            with open(fake, "w") as f:
                f.write(FAKE)
            os.chmod(fake, os.stat(fake).st_mode | stat.S_IEXEC)
            out = subprocess.run(
                [sys.executable, TOOL, fake, "cluster.yaml", "resnet50", "precision=f16",
                 "64=" + os.path.join(DATA, "h200_resnet50_amp_nhwc_b64_train.json.gz"),
                 "256=" + os.path.join(DATA, "h200_resnet50_amp_nhwc_b256_train.json.gz"),
                 "--at", "512"], capture_output=True, text=True, check=False)
        self.assertEqual(out.returncode, 0, out.stderr)
        r = rows(out.stdout)
        # Measured: the f16 convolutions' time per step, 1388 us at b64 and 4775 at b256: a line of
        # 259 us + 17.64 us a image, i.e. a smaller time per image at the larger batch.
        self.assertEqual(r["conv"][0], "1388 / 138")
        self.assertEqual(r["conv"][1], "4775 / 522")
        fixed, per = (float(x) for x in r["conv"][2].split(" + "))
        self.assertAlmostEqual(per, 17.64, delta=0.01)
        self.assertAlmostEqual(fixed, 259.0, delta=1.0)
        # The stand-in's line is recovered exactly: 10 us + 2 us a image.
        self.assertEqual(r["conv"][3], "10 + 2.00")
        self.assertEqual(r["norm"][3], "0 + 5.00")
        # The backward convolutions amortise most: 3067 -> 9252 us, 47.9 -> 36.1 us a image.
        fixed_b, per_b = (float(x) for x in r["conv_bwd"][2].split(" + "))
        self.assertAlmostEqual(per_b, 32.21, delta=0.02)
        self.assertGreater(fixed_b, 1000.0)
        # The whole step's kernels: 12318 and 41490 us, 151.9 us a image; at b512 80.4 ms measured, 3594 us from the stand-in.
        per_t = float(r["total"][2].split(" + ")[1])
        self.assertAlmostEqual(per_t, 151.94, delta=0.05)
        self.assertEqual(r["total"][4].split(" / ")[1], "3594")
        self.assertIn("b64 0.46 ms, b256 1.80 ms", out.stdout)


if __name__ == "__main__":
    unittest.main()
