#!/usr/bin/env python3
"""tools/cnn_trace_report.py on the H200 ResNet-50 traces whose figures docs/validation.md
("ResNet-50 on the H200, held out") quotes."""
import os
import subprocess
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "cnn_trace_report.py")
DATA = os.path.join(ROOT, "tests", "data", "calibration")


def run(trace, mode):
    out = subprocess.run([sys.executable, TOOL, os.path.join(DATA, trace), mode],
                         capture_output=True, text=True, check=False)
    return out


class CnnTraceReport(unittest.TestCase):
    def test_fp32_families(self):
        out = run("h200_resnet50_fp32_nchw_b64_train.json.gz", "families")
        self.assertEqual(out.returncode, 0, out.stderr)
        fam = {}
        for line in out.stdout.splitlines()[1:]:
            head, _, tail = line.rpartition(" ")
            if "convolutions:" not in line:
                fam[head.strip()] = float(tail)
        self.assertAlmostEqual(fam["legacy dgrad engine"], 12213.0, delta=0.1)
        self.assertAlmostEqual(fam["legacy wgrad engine"], 13021.5, delta=0.1)
        self.assertAlmostEqual(fam["sm80 FFMA implicit GEMM"], 27316.9, delta=0.1)
        self.assertIn("forward   convolutions: 523 GFLOP in 15210.4 us = 34.4 TFLOP/s", out.stdout)
        self.assertIn("backward  convolutions: 1031 GFLOP in 43523.1 us = 23.7 TFLOP/s", out.stdout)

    def test_steps_show_the_grad_scaler_sync(self):
        out = run("h200_resnet50_amp_nchw_b128_train.json.gz", "steps")
        self.assertEqual(out.returncode, 0, out.stderr)
        last = out.stdout.splitlines()[-1].split()
        self.assertEqual(last[0], "ProfilerStep#2")
        self.assertEqual((last[1], last[2], last[3], last[4], last[5]),
                         ("50.84", "944", "42.74", "3318", "1842"))
        self.assertIn("cudaStreamSynchronize 34.71 12.76", out.stdout)
        self.assertEqual(last[6], "47.46/2.17")  # the GPU idle after the sync, the optimizer's launches

    def test_nchw_batch_norm_elements(self):
        half = run("h200_resnet50_amp_nchw_b128_train.json.gz", "bn").stdout.splitlines()
        f32 = run("h200_resnet50_fp32_nchw_b64_train.json.gz", "bn").stdout.splitlines()
        # [128, 64, 56, 56] f16 and [64, 64, 56, 56] F32: the same bytes, 302 against 117 us.
        self.assertEqual(half[2].split()[6:8], ["302.5", "254780"])
        self.assertEqual(f32[2].split()[6:8], ["117.0", "329383"])

    def test_pools_run_at_an_element_rate(self):
        # ATen's pooling kernels (docs/validation.md, "Channels-last BatchNorm"): the stem's max
        # pool forward covers 61.5-62.7 K outputs a microsecond in f16 channels-last, f16 NCHW and F32
        # NCHW alike; DenseNet-121's 2x2 average pools 39-41 K forward and 55-57 K backward.
        rates = {}
        for trace in ("h200_resnet50_amp_nhwc_b256_train.json.gz",
                      "h200_resnet50_amp_nchw_b128_train.json.gz",
                      "h200_resnet50_fp32_nchw_b64_train.json.gz"):
            out = run(trace, "pools")
            self.assertEqual(out.returncode, 0, out.stderr)
            fwd = [l for l in out.stdout.splitlines() if l.startswith("max_pool2d_with_indices ")]
            rates[trace] = float(fwd[0].split()[7])
        self.assertEqual(sorted(round(r / 1000) for r in rates.values()), [61, 62, 63])
        dense = run("h200_densenet121_amp_nhwc_b256_train.json.gz", "pools").stdout.splitlines()
        avg = [l.split() for l in dense if l.startswith("avg_pool2d ")]
        bwd = [l.split() for l in dense if l.startswith("avg_pool2d_backward ")]
        self.assertEqual([a[7] for a in avg], ["41401", "41263", "39462"])
        self.assertEqual([b[7] for b in bwd], ["57303", "54837", "54701"])

    def test_forward_csv(self):
        out = run("h200_resnet50_amp_nhwc_b256_train.json.gz", "fwd-csv")
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(lines[0], "op,input_shape,weight_shape,stride,padding,gflop,"
                                   "data_moved_mib,kernel,kernel_us,calls")
        self.assertEqual(len(lines), 24)  # ResNet-50's 23 distinct forward shapes
        stem = lines[1].split(",")
        self.assertEqual(stem[1:5], ["256x3x224x224", "64x3x7x7", "2x2", "3x3"])
        self.assertEqual((stem[8], stem[9]), ("546.56", "1"))
        self.assertEqual(sum(int(line.split(",")[-1]) for line in lines[1:]), 53)

    def test_spatial_stages_of_the_b256_step(self):
        # docs/validation.md, "Deep CNNs on the H200 held-out set": layer3's 6 blocks (14x14).
        out = run("h200_resnet50_amp_nhwc_b256_train.json.gz", "spatial")
        self.assertEqual(out.returncode, 0, out.stderr)
        rows = dict(l.split() for l in out.stdout.splitlines()[1:])
        self.assertEqual((rows["14x14"], rows["28x28"], rows["56x56"]), ("8.90", "9.46", "15.98"))
        self.assertEqual((rows["update"], rows["total"]), ("0.40", "41.49"))
        self.assertEqual(list(rows)[:2], ["224x224", "112x112"])

    def test_refuses_a_trace_without_steps(self):
        out = run("h200_heldout_kernels_2026-12-04.json.gz", "steps")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("no ProfilerStep#N annotation", out.stderr)


if __name__ == "__main__":
    unittest.main()
