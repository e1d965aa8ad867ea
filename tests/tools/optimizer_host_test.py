#!/usr/bin/env python3
"""tools/optimizer_host.py on the session-24 H200 traces that set the optimizer step's host time
per parameter tensor (models/optimizer_impl.cpp kHostPerTensor, docs/cost-model.md "The optimizer
step's host time"): the median of their 10 Optimizer.step spans is 6.5 us."""
import os
import subprocess
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "optimizer_host.py")
DATA = os.path.join(ROOT, "tests", "data", "calibration")


def run(traces, *args):
    return subprocess.run([sys.executable, TOOL] + [os.path.join(DATA, t) for t in traces] +
                          list(args), capture_output=True, text=True, check=False)


def per_tensor(out):
    return [float(l.split(": ")[1].split()[0]) for l in out.stdout.splitlines()
            if "less" in l and "launches x" in l]


class OptimizerHost(unittest.TestCase):
    def test_resnet50_foreach_sgd(self):
        out = run(["h200_resnet50_amp_nhwc_b256_train.json.gz"], "--params", "161")
        self.assertEqual(out.returncode, 0, out.stderr)
        # 161 empty_strided of the weight decay's out-of-place _foreach_add, then three list ops
        self.assertIn("Optimizer.step#SGD.step: 1.958 ms host, 165 ops recorded, 13 launches",
                      out.stdout)
        self.assertIn("aten::_foreach_add ", out.stdout)
        self.assertEqual(per_tensor(out), [6.35, 6.84])

    def test_the_source_median(self):
        sgd = per_tensor(run(["h200_resnet50_amp_nhwc_b256_train.json.gz",
                              "h200_resnet50_amp_nhwc_b64_train.json.gz"], "--params", "161"))
        adamw = per_tensor(run(["h200_gpt2-124m_sdpa_bf16_b8_train.json.gz"], "--params", "137"))
        self.assertEqual(len(sgd), 7)
        self.assertEqual(adamw, [6.78, 6.47, 6.54])
        both = sorted(sgd + adamw)
        self.assertAlmostEqual((both[4] + both[5]) / 2, 6.505, places=3)


if __name__ == "__main__":
    unittest.main()
