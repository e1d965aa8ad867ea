#!/usr/bin/env python3
"""tools/shm_implied_rates.py: the pairing of p2p=off rows with their 1-GPU rows, and the missing
time and factor of docs/validation.md ("NCCL's SHM receive as latency-bound host reads") on
Lambda's BERT-large TF32 rows of its A100 SXM4 server (published 75 and 105 sequences/s, 64 a GPU)."""
import math
import os
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import shm_implied_rates as sir  # noqa: E402

TABLE = """\
| model | system | GPUs | precision | batch/GPU | published | predicted | unit | error | command |
|---|---|---|---|---|---|---|---|---|---|
| bert-large-squad-lambda | Lambda A100 80GB SXM4 | 1 | TF32 | 64 | 75 | 73.2 | sequences/s | -2.5 % | `placesim simulate --cluster dgx-a100 --placement single-gpu` |
| bert-large-squad-lambda | Lambda A100 80GB SXM4 | 2 | TF32 | 64 | 105 | 142.7 | sequences/s | +35.9 % | `placesim simulate --cluster dgx-a100 --parallel 'dp=2,p2p=off'` |
| bert-large-squad-lambda | Lambda A100 80GB SXM4 | 2 | AMP | 112 | 211 | 250.0 | sequences/s | +18.5 % | `placesim simulate --cluster dgx-a100 --parallel 'dp=2,p2p=off'` |
| bert-large-squad-lambda | Lambda H100 80GB SXM5 | 2 | TF32 | 64 | 300 | 310.0 | sequences/s | +3.3 % | `placesim simulate --cluster hgx-h100 --parallel 'dp=2'` |
| resnet50 | DGX A100 80GB | 1 | TF32 | 256 | 1,938 | 1,003.7 | images/s | +7.0 % | x |
"""


class ShmImpliedRates(unittest.TestCase):
    def setUp(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(TABLE)
            self.path = f.name

    def tearDown(self):
        os.unlink(self.path)

    def test_pairs_only_p2p_off_rows_with_a_one_gpu_row(self):
        rows = sir.parse_table(self.path)
        self.assertEqual(len(rows), 4)  # the row without a backticked command is not read
        got = list(sir.pairs(rows))
        # the AMP row has no 1-GPU AMP row, the H100 row runs with P2P: one pair
        self.assertEqual(len(got), 1)
        one, r = got[0]
        self.assertEqual((one["gpus"], r["gpus"], r["pub"], r["pred"]), (1, 2, 105.0, 142.7))
        self.assertEqual(sir.cluster_of(r["cmd"]), "dgx-a100")
        self.assertEqual(list(sir.pairs(rows, "gnmt")), [])

    def test_missing_time_and_factor(self):
        one, r = next(sir.pairs(sir.parse_table(self.path)))
        # the model's steps of main @ f049d8e: 866.2 ms on one GPU, 888.4 ms on two, 148.4 ms exchange
        x = sir.implied(one, r, 0.8662, 0.8884, 0.1484)
        self.assertAlmostEqual(x["p1"], 0.8662 * 73.2 / 75, places=12)  # 845.4 ms
        self.assertAlmostEqual(x["pn"], 0.8884 * 142.7 / 105, places=12)  # 1,207.4 ms
        self.assertAlmostEqual(x["missing"], (x["pn"] - x["p1"]) - (0.8884 - 0.8662), places=12)
        self.assertAlmostEqual(x["missing"], 0.3398, places=3)
        self.assertAlmostEqual(x["factor"], 0.1484 / (0.1484 + x["missing"]), places=12)
        self.assertAlmostEqual(x["factor"], 0.30, places=2)
        # a row the model prices slower than published has no factor
        fast = dict(r, pub=150.0)  # published faster than the model scales: nothing missing
        self.assertLess(sir.implied(one, fast, 0.8662, 0.8884, 0.1484)["missing"], 0)
        self.assertTrue(math.isnan(sir.implied(one, fast, 0.8662, 0.8884, 0.1484)["factor"]))

    def test_host_links(self):
        for name in ("cpu0-rc0", "rc0-rc1", "rc0-pcie0", "pcie0-gpu1", "rc1-gpu7"):
            self.assertTrue(sir.HOST_LINK.match(name), name)
        for name in ("gpu0-nvswitch", "pcie0-ib0", "nic0-ib"):
            self.assertFalse(sir.HOST_LINK.match(name), name)


if __name__ == "__main__":
    unittest.main()
