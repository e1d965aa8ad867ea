#!/usr/bin/env python3
"""tools/op_class_times.py: the graph's op types in the predicted classes, and the H200 FP32
ResNet-50 trace's measured classes that docs/validation.md ("ResNet-50 on the H200, held out")
quotes."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "op_class_times.py")
DATA = os.path.join(ROOT, "tests", "data", "calibration")


def kernel(op, op_type, dur):
    return {"ph": "X", "cat": "kernel", "name": op, "dur": dur, "ts": 0, "pid": 1, "tid": 1,
            "args": {"op": op, "op type": op_type}}


# `simulate --graph resnet50 --trace`'s op types, one kernel each.
SIM = {"traceEvents": [
    kernel("resnet50/conv1/Conv2D", "Conv2D", 100.0),
    kernel("gradients/resnet50/conv1/Conv2D_grad/Conv2DBackpropInput", "Conv2DBackpropInput", 20.0),
    kernel("gradients/resnet50/conv1/Conv2D_grad/Conv2DBackpropFilter", "Conv2DBackpropFilter", 30.0),
    kernel("resnet50/conv1/BatchNorm", "FusedBatchNorm", 40.0),
    kernel("gradients/resnet50/conv1/BatchNorm_grad/FusedBatchNormGrad", "FusedBatchNormGrad", 5.0),
    kernel("sgd/foreach_mul", "aten::_foreach_mul_", 6.0),
    kernel("sgd/foreach_add", "aten::_foreach_add_", 7.0),
    kernel("resnet50/fc/MatMul", "MatMul", 8.0),
    kernel("resnet50/conv1/Relu", "Relu", 9.0),
    kernel("resnet50/conv1/weights", "VariableV2", 0.0),
]}


class OpClassTimes(unittest.TestCase):
    def test_graph_op_types(self):
        with tempfile.TemporaryDirectory() as d:
            sim = os.path.join(d, "sim.json")
            with open(sim, "w") as f:
                json.dump(SIM, f)
            out = subprocess.run(
                [sys.executable, TOOL,
                 os.path.join(DATA, "h200_resnet50_fp32_nchw_b64_train.json.gz"), sim],
                capture_output=True, text=True, check=False)
        self.assertEqual(out.returncode, 0, out.stderr)
        rows = {}
        for line in out.stdout.splitlines():
            c = line.split()
            if len(c) == 4 and c[0] != "class":
                rows[c[0]] = (float(c[1]), float(c[2]))
        predicted = {k: v[1] for k, v in rows.items()}
        self.assertEqual(predicted["conv"], 100.0)
        self.assertEqual(predicted["conv_bwd"], 50.0)
        self.assertEqual(predicted["norm"], 45.0)
        self.assertEqual(predicted["update"], 13.0)
        self.assertEqual(predicted["gemm"], 8.0)
        self.assertEqual(predicted["elementwise"], 9.0)
        # The measured side: GPU time per step of the FP32 (TF32 off) NCHW batch-64 step.
        self.assertAlmostEqual(rows["conv"][0], 15231.4, delta=0.1)
        self.assertAlmostEqual(rows["conv_bwd"][0], 43580.4, delta=0.1)
        self.assertAlmostEqual(rows["norm"][0], 10777.7, delta=0.1)


if __name__ == "__main__":
    unittest.main()
